import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule, { type FormatsPlugin } from 'ajv-formats';
import fc from 'fast-check';
import { startApp } from '../support/app.ts';
import { parseCsv } from '../support/csv-parse.ts';
import { seedEdgeWorld, type EdgeWorld } from '../support/edge-world.ts';

// The standing fuzz suite: requests generated from both OpenAPI documents and from the
// MCP tool lists of both MCP servers, valid and hostile alike (NUL, lone surrogates, controls,
// noncharacters, huge and negative numbers, deep JSON, long strings, malformed percent-encoding,
// overlong UTF-8, `+`, arrays for scalars, wrong types). Every answer must be: no 5xx (nor an
// internal_error tool result); an error body of our shape; a 2xx body valid against the
// documented schema; and a refused write must change nothing. Seeded (FUZZ_SEED replays a run)
// and bounded in time (FUZZ_MS per surface); the seed and the number of cases are printed.

// ajv-formats is CommonJS: its function is the default export's `default` under Node's ESM loader.
const addFormats = ((addFormatsModule as unknown as { default?: FormatsPlugin }).default ?? addFormatsModule) as FormatsPlugin;
// A fixed default keeps CI repeatable; FUZZ_SEED=random explores (and prints the seed to replay).
const SEED = process.env.FUZZ_SEED === 'random' ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.FUZZ_SEED ?? 20_261_124);
// 2.5 s per surface in `npm test`: the same seeded sequence, cut shorter (about 3,000 cases on an
// idle 2-core machine; CPU-bound, so every second here is a second of a core). Longer runs:
// FUZZ_MS=60000 (and FUZZ_SEED=random) by hand.
const BUDGET_MS = Number(process.env.FUZZ_MS ?? 2_500);
const WRITTEN = ['posts', 'post_media', 'post_deliveries', 'idempotency_keys', 'media_assets'];
// Tools that reach outside hubops (fetch a URL) are left out: the fuzzer must not make the app
// wait on the network. POST /media (multipart, declared by hand) has its own hostile tests.
const SKIPPED_OPERATIONS = new Set(['post /media']);

interface Schema {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  format?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  maxLength?: number;
  maxItems?: number;
  items?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  anyOf?: Schema[];
  examples?: unknown[];
}

let world: EdgeWorld;
const counts: Record<string, number> = {};
const ajv = new Ajv({ strict: false, allErrors: false, validateFormats: true });
addFormats(ajv);

before(async () => {
  world = await seedEdgeWorld(await startApp({ listen: true, limiter: 'unlimited' }));
  console.log(`fuzz seed ${SEED} (replay with FUZZ_SEED=${SEED}); ${BUDGET_MS} ms per surface`);
});
after(async () => {
  console.log(
    `fuzz cases: ${Object.entries(counts)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}; total ${Object.values(counts).reduce((a, b) => a + b, 0)}`,
  );
  await world?.close();
});

// ---- values -------------------------------------------------------------------------------

/** Shaped as our cursors are, but not one we issued. */
const CURSOR_LIKE = 'eyJ2MiJ9.AAAAAAAAAAAAAAAAAAAAAA';
const KNOWN_IDS = ['w1', 'w2', 'p1', 'p2', 'o1', 'o2', 'ch_fb', 'ch_x', 'h1'];
const HOSTILE_TEXT = [
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfff',
  '\uffff',
  '\ufdd0',
  '\u0007',
  '\u001b[31m',
  '\u202e',
  '\u007f',
  'é',
  '😀',
  '',
  ' ',
  '+',
  "'; DROP TABLE posts;--",
  '../../etc/passwd',
  '%FF',
  '%00',
  '${x}',
  'x'.repeat(5_000),
  '0000-01-01',
  '0000-01-01T00:00:00Z',
  '0001-01-01',
  '9999-12-31T23:59:59Z',
  '10000-01-01',
  '1969-12-31',
  '-1',
  '1e309',
  '0x10',
  ' 5',
  '05',
  'true',
  'null',
  '[]',
  '{}',
];
const HOSTILE_NUMBERS = [-1, 0, 1.5, -0, 2 ** 31, 2 ** 53 + 2, -(2 ** 63), 1e21, 1e308, Number.MAX_SAFE_INTEGER, 501, 4294967295000];

const hostileValue = (keys: string[]): fc.Arbitrary<unknown> =>
  fc.oneof(
    fc.constantFrom(...HOSTILE_TEXT),
    fc.constantFrom(...HOSTILE_NUMBERS),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.constantFrom(...HOSTILE_TEXT, ...KNOWN_IDS), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom(...keys), fc.constantFrom(...HOSTILE_TEXT), { maxKeys: 2 }),
    fc.string({ maxLength: 40, unit: 'binary' }),
  );
const hostile = hostileValue(['a', '\u0000', '__proto__', 'constructor']);
// Known, left to the MCP transport's owner: a JSON-RPC body holding a "__proto__" key is refused
// as a whole by Fastify's JSON parser (prototype-poisoning guard), so the MCP endpoints answer
// -32700 and the SDK client throws instead of getting a tool error. Tool arguments leave it out.
const hostileForTools = hostileValue(['a', '\u0000', 'constructor']);

function valid(schema: Schema, bad: fc.Arbitrary<unknown> = hostile): fc.Arbitrary<unknown> {
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map((s) => valid(s, bad)));
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if (schema.const !== undefined) return fc.constant(schema.const);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1_000, max: schema.maximum ?? 1_000 });
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true, min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6 });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(valid(schema.items ?? {}, bad), { maxLength: Math.min(schema.maxItems ?? 3, 3) });
    case 'object': {
      const properties = schema.properties ?? {};
      return fc.record(Object.fromEntries(Object.entries(properties).map(([k, s]) => [k, maybeHostile(s, bad)])), {
        requiredKeys: schema.required ?? [],
      });
    }
    default: {
      const day = fc.date({ min: new Date('2026-10-01T00:00:00Z'), max: new Date('2027-01-31T00:00:00Z'), noInvalidDate: true });
      // Time fields and cursors say their shape with a pattern: a sample of each kind tells which.
      const matches = (sample: string) => schema.pattern !== undefined && new RegExp(schema.pattern, 'u').test(sample);
      if (schema.format === 'date') return day.map((d) => d.toISOString().slice(0, 10));
      if (matches('2026-11-01T00:00:00.000Z')) return day.map((d) => d.toISOString());
      if (matches(CURSOR_LIKE)) return fc.constantFrom('', 'abc', CURSOR_LIKE);
      return fc.oneof(
        fc.constantFrom(...KNOWN_IDS, ...((schema.examples as string[] | undefined) ?? [])),
        fc.string({ maxLength: Math.min(schema.maxLength ?? 20, 20) }),
      );
    }
  }
}

const maybeHostile = (schema: Schema, bad: fc.Arbitrary<unknown> = hostile): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 3, arbitrary: valid(schema, bad) }, { weight: 1, arbitrary: bad });

// ---- HTTP encodings ------------------------------------------------------------------------

/** Query or path text for a value: valid encodings, and raw hostile ones no encoder makes. */
const RAW_TEXT = [
  '%FF',
  '%C0%AF',
  '%ED%A0%80',
  '%E0%A4%A',
  '%00',
  '+',
  '%2B5',
  '0x10',
  '1e2',
  '%205',
  '05',
  '5.',
  '%',
  'a'.repeat(150),
  '..',
  '%2F',
];
function asText(value: unknown): fc.Arbitrary<string> {
  const encoded = (() => {
    if (typeof value === 'string') {
      try {
        return encodeURIComponent(value);
      } catch {
        return '%ED%A0%80'; // a lone surrogate, as the UTF-8 bytes a client could send
      }
    }
    return encodeURIComponent(typeof value === 'object' ? JSON.stringify(value) : String(value));
  })();
  return fc.oneof({ weight: 4, arbitrary: fc.constant(encoded) }, { weight: 1, arbitrary: fc.constantFrom(...RAW_TEXT) });
}

/** True when a URL parser rewrites the path (dot segments), so the request is not for the operation it was made for. */
function resolvesElsewhere(url: string): boolean {
  const path = url.split('?')[0]!;
  return new URL(path, 'http://fuzz.test').pathname !== path;
}

interface Param {
  name: string;
  in: 'query' | 'path';
  required?: boolean;
  schema: Schema;
}

function queryOf(params: Param[]): fc.Arbitrary<string> {
  const parts = params
    .filter((p) => p.in === 'query')
    .map((p) =>
      fc.option(
        maybeHostile(p.schema).chain((value) =>
          Array.isArray(value) && value.length > 0
            ? fc.tuple(...value.map(asText)).map((texts) => texts.map((t) => `${p.name}=${t}`).join('&')) // ?a=1&a=2: an array for a scalar
            : asText(value).map((t) => `${p.name}=${t}`),
        ),
        { nil: undefined, freq: 2 },
      ),
    );
  return fc
    .tuple(...parts, fc.option(fc.constantFrom('unknown=1', 'a[b]=1', '%FF=1', 'limit'), { nil: undefined }))
    .map((list) => list.filter(Boolean).join('&'));
}

function pathOf(template: string, params: Param[]): fc.Arbitrary<string> {
  const names = [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
  if (names.length === 0) return fc.constant(template);
  return fc
    .tuple(...names.map((name) => maybeHostile(params.find((p) => p.name === name)?.schema ?? { type: 'string' }).chain(asText)))
    .map((texts) => names.reduce((path, name, i) => path.replace(`{${name}}`, texts[i] || 'x'), template));
}

/** A JSON body: the schema's object (valid or mutated), sometimes with deep nesting spliced in, or junk. */
function bodyOf(schema: Schema): fc.Arbitrary<string | Uint8Array> {
  const object = valid(schema).map((value) => JSON.stringify(value));
  const deep = fc
    .tuple(object, fc.integer({ min: 20, max: 20_000 }))
    .map(([text, depth]) => `${text.slice(0, -1)}${text.length > 2 ? ',' : ''}"extra":${'['.repeat(depth)}${']'.repeat(depth)}}`);
  const junk = fc.constantFrom<string | Uint8Array>(
    '',
    '{',
    '[]',
    '"x"',
    'null',
    '1',
    '{"__proto__":{"a":1}}',
    '{"text":"\\ud800"}',
    new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]),
    '{"text":"\\u0000"}',
  );
  return fc.oneof({ weight: 6, arbitrary: object }, { weight: 1, arbitrary: deep }, { weight: 1, arbitrary: junk });
}

// ---- checks --------------------------------------------------------------------------------

const validators = new Map<unknown, ValidateFunction>();
function validatorFor(schema: object): ValidateFunction {
  let validate = validators.get(schema);
  if (!validate) validators.set(schema, (validate = ajv.compile(schema)));
  return validate;
}

function assertErrorShape(body: any, what: string): void {
  assert.equal(typeof body, 'object', `${what}: error body is not JSON: ${String(body).slice(0, 200)}`);
  assert.equal(typeof body.error, 'string', `${what}: ${JSON.stringify(body).slice(0, 300)}`);
  assert.equal(typeof body.message, 'string', `${what}: ${JSON.stringify(body).slice(0, 300)}`);
  for (const key of Object.keys(body))
    assert.ok(['error', 'message', 'issues', 'requestId'].includes(key), `${what}: unexpected key ${key}`);
  assert.doesNotMatch(
    JSON.stringify(body),
    /FST_|statusCode| {4}at |SELECT |INSERT |violates|invalid input syntax/,
    `${what}: leaks internals`,
  );
}

interface RestCase {
  method: string;
  url: string;
  body?: string | Uint8Array;
}

async function fuzzRest(surface: 'main' | 'hub', documentPath: string): Promise<void> {
  const get = surface === 'main' ? world.main : world.hub;
  const document = (await get(documentPath)).body as { paths: Record<string, Record<string, any>> };
  const operations = new Map<string, any>();
  const cases: fc.Arbitrary<RestCase & { op: string }>[] = [];
  for (const [template, methods] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      if (SKIPPED_OPERATIONS.has(`${method} ${template}`)) continue;
      const op = `${method} ${template}`;
      operations.set(op, operation);
      const params = (operation.parameters ?? []) as Param[];
      const bodySchema = operation.requestBody?.content?.['application/json']?.schema as Schema | undefined;
      cases.push(
        fc
          .record({
            path: pathOf(template, params),
            query: queryOf(params),
            body: bodySchema ? bodyOf(bodySchema) : fc.constant(undefined),
          })
          .map(({ path, query, body }) => ({
            method: method.toUpperCase(),
            url: query ? `${path}?${query}` : path,
            ...(body !== undefined ? { body } : {}),
            op,
          })),
      );
    }
  }
  let runs = 0;
  const counted = fc.assert(
    fc.asyncProperty(fc.oneof(...cases), async ({ method, url, body, op }) => {
      runs++;
      const operation = operations.get(op);
      const what = `${method} ${url}${body !== undefined ? ` ${String(body).slice(0, 120)}` : ''}`;
      const before = method === 'POST' ? await world.counts(WRITTEN) : undefined;
      const response = await get(url, {
        method,
        ...(body !== undefined ? { body, headers: { 'content-type': 'application/json', 'idempotency-key': `fuzz-${runs}` } } : {}),
      });
      assert.ok(response.status < 500, `${what}: ${response.status} ${JSON.stringify(response.body).slice(0, 300)}`);
      if (response.status >= 400) {
        assertErrorShape(response.body, what);
        if (before) assert.deepEqual(await world.counts(WRITTEN), before, `${what}: a refused write changed rows`);
      } else if (resolvesElsewhere(url)) {
        // A `.` or `..` path parameter is resolved away by the client's URL parser (WHATWG URL, as
        // every HTTP client does), so the request reached another route: only "no 5xx" applies.
      } else {
        const content = operation.responses?.[String(response.status)]?.content;
        if (content?.['text/csv']) {
          // A CSV export: its 200 is RFC 4180 text whose records all have the header's width.
          assert.equal(typeof response.body, 'string', `${what}: a CSV body`);
          const [header, ...records] = parseCsv(response.body as string);
          assert.ok(header && records.every((r) => r.length === header.length), `${what}: a ragged CSV`);
          return;
        }
        const documented = content?.['application/json']?.schema;
        assert.ok(documented, `${what}: status ${response.status} is not documented`);
        const validate = validatorFor(documented);
        assert.ok(
          validate(response.body),
          `${what}: the ${response.status} body does not match its schema: ${JSON.stringify(validate.errors).slice(0, 400)}`,
        );
      }
    }),
    {
      seed: SEED,
      numRuns: 1_000_000,
      interruptAfterTimeLimit: BUDGET_MS,
      markInterruptAsFailure: false,
      endOnFailure: true,
      includeErrorInReport: true,
    },
  );
  // Counted whatever the outcome, so a failing run still says how far it got.
  await counted.finally(() => (counts[`${surface} REST`] = runs));
}

async function fuzzMcp(surface: 'main' | 'hub'): Promise<void> {
  const connect = () => (surface === 'main' ? world.mcpMain() : world.mcpHub());
  let client: Client = await connect();
  try {
    // Not add_media: it fetches the URLs it is given (its own tests cover that, with a fake server).
    const tools = (await client.listTools()).tools.filter((t) => t.name !== 'add_media');
    let runs = 0;
    const counted = fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...tools.map((t) => t.name)).chain((name) =>
          fc.record({
            name: fc.constant(name),
            args: fc.oneof(
              { weight: 5, arbitrary: valid(tools.find((t) => t.name === name)!.inputSchema as Schema, hostileForTools) },
              {
                weight: 1,
                arbitrary: fc.dictionary(
                  fc.string({ maxLength: 5 }).filter((k) => k !== '__proto__'),
                  hostileForTools,
                  { maxKeys: 3 },
                ),
              },
            ),
          }),
        ),
        async ({ name, args }) => {
          runs++;
          // The SDK transport hands one AbortSignal to every fetch and Node's fetch lets go of its
          // listener only at garbage collection: a fresh client now and then keeps Node's
          // listener-leak warning (at 1,500) out of the output.
          if (runs % 1_000 === 0) {
            await client.close();
            client = await connect();
          }
          const tool = tools.find((t) => t.name === name)!;
          const what = `${surface} MCP ${tool.name} ${JSON.stringify(args).slice(0, 200)}`;
          const writes = tool.annotations?.readOnlyHint !== true;
          const before = writes ? await world.counts(WRITTEN) : undefined;
          // The SDK client validates structuredContent against the tool's outputSchema itself.
          const result = (await client.callTool({ name: tool.name, arguments: args as Record<string, unknown> })) as CallToolResult;
          if (result.isError) {
            const text = (result.content[0] as { text?: string } | undefined)?.text ?? '';
            assert.match(text, /^[a-z_]+: /, `${what}: ${text}`);
            assert.doesNotMatch(text, /^internal_error/, `${what}: ${text}`);
            if (before) assert.deepEqual(await world.counts(WRITTEN), before, `${what}: a refused write changed rows`);
          } else if (tool.outputSchema) {
            const validate = validatorFor(tool.outputSchema);
            assert.ok(validate(result.structuredContent), `${what}: ${JSON.stringify(validate.errors).slice(0, 400)}`);
          }
        },
      ),
      {
        seed: SEED,
        numRuns: 1_000_000,
        interruptAfterTimeLimit: BUDGET_MS,
        markInterruptAsFailure: false,
        endOnFailure: true,
        includeErrorInReport: true,
      },
    );
    await counted.finally(() => (counts[`${surface} MCP`] = runs));
  } finally {
    await client.close();
  }
}

test('main API REST, from /openapi.json', () => fuzzRest('main', '/openapi.json'));
test('Hub API REST, from /v1/hub/openapi.json', () => fuzzRest('hub', '/openapi.json'));
test('main MCP server, from its tools/list', () => fuzzMcp('main'));
test('Hub API MCP server, from its tools/list', () => fuzzMcp('hub'));
