import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { PLATFORM_FAILURE_KINDS, PlatformError, PlatformThrottled, type PlatformAdAccount } from '../../src/integrations/ad-platform.ts';
import { createMetaClient } from '../../src/integrations/meta/client.ts';
import { startMetaSandbox, type MetaSandbox } from '../../src/integrations/meta/sandbox.ts';

// The standing fuzz suite learns the connectors' platform answers (issue 27 finding 14): a proxy
// in front of the Meta sandbox passes each request through and mutates the sandbox's real answer
// the way a hostile or broken Graph API could (a leaf replaced by a wrong type, a huge number, a
// NUL, an invalid date or time zone; a field removed; the status, a usage header or the whole body
// changed; HTML, truncated JSON). Whatever comes back, the client's every call (listAccounts,
// describeAccount, readSpend through pages and async report runs, the OAuth code exchanges) ends
// in values of the documented types or in a PlatformError of a known kind (or PlatformThrottled):
// never a TypeError, a crash or a hang, and never the token in a message.
// Seeded (FUZZ_SEED) and bounded (FUZZ_MS), as openapi-fuzz.test.ts.

const SEED = process.env.FUZZ_SEED === 'random' ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.FUZZ_SEED ?? 20_261_124);
const BUDGET_MS = Number(process.env.FUZZ_MS ?? 2_500);
const CALL_MS = 15_000;

type Mutation =
  | { kind: 'none' }
  | { kind: 'leaf'; pick: number; value: unknown }
  | { kind: 'rawLeaf'; pick: number; text: string }
  | { kind: 'drop'; pick: number }
  | { kind: 'status'; status: number }
  | { kind: 'body'; text: string; contentType: string }
  | { kind: 'header'; name: string; value: string };

let sandbox: MetaSandbox;
let proxy: http.Server;
let proxyUrl: string;
/** The mutations of the running case, one per answer in turn (the last repeats). */
let plan: Mutation[] = [{ kind: 'none' }];
let answered = 0;

const LEAVES: unknown[] = [
  null,
  '',
  0,
  -1,
  1.5,
  true,
  [],
  {},
  'x'.repeat(10_000),
  '\u0000',
  '\ud800',
  '2026-02-30',
  '9999-99-99',
  'Mars/Olympus_Mons',
  '../../etc',
  'NaN',
  '-12.34',
  '1e400',
  '12.3456789',
  '99999999999999999999999.99',
  'act_',
  { nested: { deeper: [1, 2, 3] } },
  [null],
];
const RAW_NUMBERS = ['1e400', '-1e400', '123456789012345678901234567890', '-0', '0.0000001', '1E+2'];
const BODIES: [string, string][] = [
  ['', 'application/json'],
  ['{', 'application/json'],
  ['{"data":', 'application/json'],
  ['null', 'application/json'],
  ['[]', 'application/json'],
  ['"data"', 'application/json'],
  ['{"data":null}', 'application/json'],
  ['{"data":[null,1,"x"]}', 'application/json'],
  ['{"error":{}}', 'application/json'],
  ['{"error":{"code":"190","message":5}}', 'application/json'],
  ['{"error":{"code":80000,"message":"slow down","error_data":"{\\"estimated_time_to_regain_access\\":-5}"}}', 'application/json'],
  ['{"error":{"code":17,"error_subcode":2446079,"is_transient":"yes"}}', 'application/json'],
  ['<!DOCTYPE html><html><body>Sorry</body></html>', 'text/html'],
  ['\u0000\u0001\u0002', 'application/octet-stream'],
  ['{"report_run_id":null}', 'application/json'],
  ['{"async_status":"Job Running","async_percent_completion":"lots"}', 'application/json'],
  ['{"access_token":5,"expires_in":"soon"}', 'application/json'],
  ['{"access_token":"","expires_in":-1}', 'application/json'],
  ['{"data":[],"paging":{"next":"javascript:alert(1)"}}', 'application/json'],
  ['{"data":[],"paging":{"next":"http://169.254.169.254/latest"}}', 'application/json'],
];
const HEADERS: [string, string[]][] = [
  [
    'x-business-use-case-usage',
    ['', '{', '[]', '{"1":[{"type":"ads_insights","call_count":"x","estimated_time_to_regain_access":1e300}]}', 'null'],
  ],
  ['x-app-usage', ['', '{', '{"call_count":101,"total_time":"a"}']],
  ['x-ad-account-usage', ['{"acc_id_util_pct":9999,"reset_time_duration":-1}', 'garbage']],
  ['retry-after', ['-1', 'soon', '99999999999']],
  ['content-type', ['text/html', 'application/json; charset=latin1', '']],
  ['location', ['http://127.0.0.1:1/', 'javascript:x']],
];

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 4, arbitrary: fc.constant<Mutation>({ kind: 'none' }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('leaf' as const), pick: fc.nat(), value: fc.constantFrom(...LEAVES) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('rawLeaf' as const), pick: fc.nat(), text: fc.constantFrom(...RAW_NUMBERS) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('drop' as const), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('status' as const),
      status: fc.constantFrom(200, 201, 204, 301, 304, 400, 401, 403, 404, 429, 500, 502, 503),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(...BODIES).map(([text, contentType]): Mutation => ({ kind: 'body', text, contentType })),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(...HEADERS)
      .chain(([name, values]) => fc.constantFrom(...values).map((value): Mutation => ({ kind: 'header', name, value }))),
  },
);

/** Every leaf of a JSON value, as [container, key] pairs. */
function leaves(value: unknown, out: [Record<string, unknown> | unknown[], string | number][] = []): typeof out {
  if (value === null || typeof value !== 'object') return out;
  for (const [key, child] of Object.entries(value)) {
    if (child !== null && typeof child === 'object') leaves(child, out);
    else out.push([value as Record<string, unknown>, Array.isArray(value) ? Number(key) : key]);
  }
  return out;
}

function mutate(m: Mutation, status: number, headers: http.OutgoingHttpHeaders, body: string): [number, http.OutgoingHttpHeaders, string] {
  if (m.kind === 'none') return [status, headers, body];
  if (m.kind === 'status') return [m.status, headers, body];
  if (m.kind === 'body') return [status, { ...headers, 'content-type': m.contentType }, m.text];
  if (m.kind === 'header') return [status, { ...headers, [m.name]: m.value }, body];
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return [status, headers, body];
  }
  const all = leaves(value);
  if (all.length === 0) return [status, headers, body];
  const [container, key] = all[m.pick % all.length]!;
  if (m.kind === 'drop') {
    if (Array.isArray(container)) container.splice(key as number, 1);
    else delete container[key];
    return [status, headers, JSON.stringify(value)];
  }
  if (m.kind === 'leaf') {
    (container as Record<string | number, unknown>)[key] = m.value;
    return [status, headers, JSON.stringify(value)];
  }
  // A number JSON can hold but a double cannot: spliced in as text.
  (container as Record<string | number, unknown>)[key] = '\u0001RAW\u0001';
  return [status, headers, JSON.stringify(value).replace('"\\u0001RAW\\u0001"', m.text)];
}

before(async () => {
  sandbox = await startMetaSandbox({ seed: { seed: 3, historyDays: 30 } });
  proxy = http.createServer((req, res) => {
    const target = new URL(req.url!, sandbox.url);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const forward = http.request(target, { method: req.method, headers: { ...req.headers, host: target.host } }, (answer) => {
        const body: Buffer[] = [];
        answer.on('data', (c: Buffer) => body.push(c));
        answer.on('end', () => {
          const m = plan[Math.min(answered++, plan.length - 1)]!;
          const headers: http.OutgoingHttpHeaders = { ...answer.headers };
          delete headers['content-length'];
          delete headers['transfer-encoding'];
          const [status, outHeaders, text] = mutate(m, answer.statusCode ?? 200, headers, Buffer.concat(body).toString('utf8'));
          res.writeHead(status, outHeaders);
          res.end(status === 204 || status === 304 ? undefined : text);
        });
      });
      forward.on('error', () => res.destroy());
      forward.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  console.log(`meta fuzz seed ${SEED} (replay with FUZZ_SEED=${SEED}); ${BUDGET_MS} ms`);
});
after(async () => {
  await new Promise((resolve) => proxy?.close(resolve));
  await sandbox?.close();
});

/** A UTC date `n` days before today, inside the sandbox's history. */
const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10);
const isString = (v: unknown): v is string => typeof v === 'string';

function assertAccount(a: PlatformAdAccount, what: string): void {
  for (const field of ['externalId', 'name', 'currency', 'timeZone', 'status'] as const)
    assert.ok(isString(a[field]), `${what}: ${field} ${JSON.stringify(a[field])}`);
  assert.equal(typeof a.active, 'boolean', `${what}: active`);
  assert.ok(a.accessVia === null || isString(a.accessVia), `${what}: accessVia`);
  assert.match(a.currency, /^[A-Z]{3}$/, `${what}: currency`);
}

/** Runs one call: values of the documented types, or a known failure; never anything else, never a hang. */
async function outcome(what: string, token: string, call: () => Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      call(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what}: no outcome within ${CALL_MS} ms`)), CALL_MS);
      }),
    ]);
  } catch (error) {
    if (error instanceof PlatformError) {
      assert.ok((PLATFORM_FAILURE_KINDS as readonly string[]).includes(error.kind), `${what}: kind ${error.kind}`);
    } else if (error instanceof PlatformThrottled) {
      assert.ok(Number.isFinite(error.retryAfterMs) && error.retryAfterMs >= 0, `${what}: retryAfterMs ${error.retryAfterMs}`);
    } else {
      assert.fail(`${what}: not a platform failure: ${(error as Error)?.stack ?? String(error)}`);
    }
    const message = `${(error as Error).message} ${(error as PlatformError).platformMessage ?? ''}`;
    assert.ok(!message.includes(token), `${what}: the token is in the message`);
  } finally {
    clearTimeout(timer);
  }
}

test('hostile Graph answers through the Meta client: only documented values or PlatformError kinds, never a crash', async () => {
  const token = sandbox.issueToken();
  const client = createMetaClient({
    graphUrl: proxyUrl,
    sleep: async () => {},
    timeoutMs: 2_000,
    maxBodyBytes: 256 * 1024,
    asyncAfterDays: 5,
  });
  const [first] = sandbox.accounts();
  const account: PlatformAdAccount = {
    externalId: first!.id,
    name: first!.name,
    currency: first!.currency,
    timeZone: first!.timezone_name,
    active: true,
    status: 'ACTIVE',
    accessVia: null,
  };
  let runs = 0;
  const calls = ['listAccounts', 'describeAccount', 'readSpend', 'readSpendAsync', 'exchangeCode', 'exchangeForLongLived'] as const;
  try {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...calls), fc.array(mutation, { minLength: 1, maxLength: 6 }), async (call, mutations) => {
        runs++;
        plan = mutations;
        answered = 0;
        const what = `${call} ${JSON.stringify(mutations).slice(0, 400)}`;
        await outcome(what, token, async () => {
          const credential = { secret: token };
          if (call === 'listAccounts') for (const a of await client.listAccounts(credential)) assertAccount(a, what);
          if (call === 'describeAccount')
            assertAccount(await client.describeAccount(credential, { externalId: account.externalId, accessVia: null }), what);
          if (call === 'readSpend' || call === 'readSpendAsync') {
            const range = call === 'readSpend' ? { since: daysAgo(3), until: daysAgo(2) } : { since: daysAgo(20), until: daysAgo(2) };
            for await (const batch of client.readSpend(credential, account, range)) {
              for (const row of batch) {
                assert.match(row.date, /^\d{4}-\d{2}-\d{2}$/, `${what}: date`);
                assert.ok(
                  row.hour === null || (Number.isInteger(row.hour) && row.hour >= 0 && row.hour <= 23),
                  `${what}: hour ${row.hour}`,
                );
                for (const field of ['campaignId', 'campaignName', 'adSetId', 'adSetName'] as const)
                  assert.ok(isString(row[field]), `${what}: ${field}`);
                assert.equal(typeof row.spendMicros, 'bigint', `${what}: spendMicros`);
              }
            }
          }
          if (call === 'exchangeCode' || call === 'exchangeForLongLived') {
            const exchanged =
              call === 'exchangeCode'
                ? await client.exchangeCode({
                    appId: sandbox.appId,
                    appSecret: sandbox.appSecret,
                    redirectUri: 'http://127.0.0.1/cb',
                    code: 'nope',
                  })
                : await client.exchangeForLongLived({ appId: sandbox.appId, appSecret: sandbox.appSecret, accessToken: token });
            assert.ok(isString(exchanged.accessToken) && exchanged.accessToken.length > 0, `${what}: accessToken`);
            assert.ok(exchanged.expiresAt === null || Number.isFinite(exchanged.expiresAt.getTime()), `${what}: expiresAt`);
          }
        });
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
  } finally {
    console.log(`meta fuzz cases: ${runs}`);
  }
});
