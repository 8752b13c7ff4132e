// The Hub MCP endpoint, driven by the real MCP SDK client over Streamable HTTP against the app
// listening on a real port: the tools are the REST operations (same data, same validation, same
// limits, same tenancy), and authentication failures never invite an OAuth dance.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { createKey, revokeKey } from '../../src/domain/api-keys/api-key.service.ts';
import { startApp, type TestApp } from '../support/app.ts';
import * as fx from '../support/world.ts';
import { httpRequest, type HttpResponse } from '../support/http.ts';

const NOW = '2026-11-21T12:00:00.000Z';

let t: TestApp;
let mcpUrl: URL;
const keys = { a: '', b: '', limits: '', batch: '', revoked: '', embed: '' };

/** Records every output validation the SDK client performs, and its outcome. */
class RecordingValidator implements jsonSchemaValidator {
  readonly inner = new AjvJsonSchemaValidator();
  readonly outcomes: { title: unknown; valid: boolean; errorMessage?: string }[] = [];
  /** Lets a test tighten a schema, to prove a mismatch would be caught. */
  tighten: ((schema: JsonSchemaType) => JsonSchemaType) | undefined;
  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    const validate = this.inner.getValidator<T>(this.tighten ? this.tighten(schema) : schema);
    return (input) => {
      const result = validate(input);
      this.outcomes.push({ title: schema.title, valid: result.valid, errorMessage: result.errorMessage });
      return result;
    };
  }
}

async function mcpClient(
  key: string | undefined,
  validator = new RecordingValidator(),
): Promise<{ client: Client; validator: RecordingValidator }> {
  const client = new Client({ name: 'hubops-test', version: '1.0.0' }, { jsonSchemaValidator: validator });
  const transport = new StreamableHTTPClientTransport(mcpUrl, {
    requestInit: { headers: key === undefined ? {} : { Authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  return { client, validator };
}

function text(result: CallToolResult): string {
  const first = result.content[0];
  assert.equal(first?.type, 'text');
  return (first as { text: string }).text;
}

/** Calls a tool and checks the result is a success whose text is its structured content. */
async function callOk(client: Client, name: string, args: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  assert.notEqual(result.isError, true, `${name} failed: ${JSON.stringify(result.content)}`);
  assert.ok(result.structuredContent, `${name} returned no structuredContent`);
  assert.deepEqual(JSON.parse(text(result)), result.structuredContent, 'content[0].text must be the structured content as JSON');
  return result.structuredContent;
}

async function rest(path: string, key: string): Promise<any> {
  const response = await t.hubGet(path, key);
  assert.equal(response.status, 200, `${path}: ${JSON.stringify(response.body)}`);
  return response.body;
}

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

/** A POST with exactly these headers (node:http: no headers added behind our back). */
async function rawPost(headers: Record<string, string>, body: unknown = INITIALIZE): Promise<HttpResponse> {
  return httpRequest(mcpUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
}

before(async () => {
  t = await startApp({ now: NOW });
  await t.app.fastify.listen({ port: 0, host: '127.0.0.1' });
  const { port } = t.app.fastify.server.address() as AddressInfo;
  mcpUrl = new URL(`http://127.0.0.1:${port}/v1/hub/mcp`);

  const db = t.db;
  await fx.account(db);
  await fx.hub(db, 'hub_a');
  await fx.hub(db, 'hub_b');
  await fx.field(db, 'hub_a', 'region');
  await fx.field(db, 'hub_a', 'old', true);
  await fx.workspace(db, 'hub_a', 'ws_a1', { region: 'West', old: 'x' });
  await fx.workspace(db, 'hub_a', 'ws_a2', { region: 'East' });
  await fx.workspace(db, 'hub_a', 'ws_a3');
  await fx.workspace(db, 'hub_b', 'ws_b1');
  await fx.playbook(db, 'hub_a', 'pb_a1', 'Spring Promo ', ['meta']);
  await fx.playbook(db, 'hub_a', 'pb_a2', 'Summer', ['meta', 'google_ads']);
  await fx.playbook(db, 'hub_b', 'pb_b1', 'Hub B only', ['organic_social']);
  await fx.optIns(db, [
    {
      id: 'oi_a1',
      hubId: 'hub_a',
      playbookId: 'pb_a1',
      workspaceId: 'ws_a1',
      optedInAt: '2026-11-21T09:00:00Z',
      variant: { audience: 'Families' },
      responses: [{ question: 'Hours?', answer: '9-5' }],
    },
    {
      id: 'oi_a2',
      hubId: 'hub_a',
      playbookId: 'pb_a1',
      workspaceId: 'ws_a2',
      status: 'in_review',
      optedInAt: '2026-11-20T09:00:00Z',
      updatedAt: '2026-11-21T08:00:00Z',
    },
    {
      id: 'oi_a3',
      hubId: 'hub_a',
      playbookId: 'pb_a2',
      workspaceId: 'ws_a1',
      status: 'questions_only',
      optedInAt: '2026-11-16T00:00:00Z',
      budgetCents: null,
      budgetType: null,
    },
    {
      id: 'oi_a4',
      hubId: 'hub_a',
      playbookId: 'pb_a2',
      workspaceId: 'ws_a3',
      status: 'cancelled',
      optedInAt: '2026-11-01T10:00:00Z',
      budgetType: 'daily',
    },
    { id: 'oi_a5', hubId: 'hub_a', playbookId: 'pb_a2', workspaceId: 'ws_a2', optedInAt: '2026-11-10T10:00:00Z' },
    { id: 'oi_b1', hubId: 'hub_b', playbookId: 'pb_b1', workspaceId: 'ws_b1', optedInAt: '2026-11-21T10:00:00Z' },
    { id: 'oi_b2', hubId: 'hub_b', playbookId: 'pb_b1', workspaceId: 'ws_b1', status: 'paused', optedInAt: '2026-11-19T10:00:00Z' },
  ]);
  await fx.adAccount(db, 'hub_a', 'aa_a', 'idle', '2026-11-21T08:00:00Z');
  await fx.adAccount(db, 'hub_b', 'aa_b', 'idle', '2026-11-21T07:00:00Z');
  await fx.spend(db, [
    { hubId: 'hub_a', adAccountId: 'aa_a', workspaceId: 'ws_a1', date: '2026-11-21', cents: 1200 },
    { hubId: 'hub_a', adAccountId: 'aa_a', workspaceId: 'ws_a1', date: '2026-11-15', cents: 5000 },
    { hubId: 'hub_a', adAccountId: 'aa_a', workspaceId: 'ws_a2', date: '2026-11-20', cents: 777 },
    { hubId: 'hub_a', adAccountId: 'aa_a', workspaceId: null, date: '2026-11-12', cents: 300 },
    { hubId: 'hub_a', adAccountId: 'aa_a', workspaceId: 'ws_a2', date: '2026-10-10', cents: 9000 },
    { hubId: 'hub_b', adAccountId: 'aa_b', workspaceId: 'ws_b1', date: '2026-11-21', cents: 424242 },
  ]);

  keys.a = (await createKey(db, { hubId: 'hub_a', name: 'mcp a' })).key;
  keys.b = (await createKey(db, { hubId: 'hub_b', name: 'mcp b' })).key;
  keys.limits = (await createKey(db, { hubId: 'hub_a', name: 'mcp limits' })).key;
  keys.batch = (await createKey(db, { hubId: 'hub_a', name: 'mcp batch' })).key;
  const revoked = await createKey(db, { hubId: 'hub_a', name: 'mcp revoked' });
  await revokeKey(db, revoked.id);
  keys.revoked = revoked.key;
  keys.embed = (await createKey(db, { hubId: 'hub_a', name: 'mcp embed', scope: 'embed' })).key;
});

after(async () => {
  await t?.close();
});

describe('Hub MCP endpoint (SDK client over Streamable HTTP)', () => {
  test('tools/list gives exactly the three read-only tools, each fully described', async () => {
    const { client } = await mcpClient(keys.a);
    try {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((tool) => tool.name).sort(), ['get_opt_in_summary', 'get_spend_by_workspace', 'list_playbook_opt_ins']);
      for (const tool of tools) {
        assert.equal(tool.inputSchema.type, 'object', `${tool.name} inputSchema`);
        assert.equal(tool.outputSchema?.type, 'object', `${tool.name} outputSchema`);
        assert.ok(
          tool.outputSchema?.properties && Object.keys(tool.outputSchema.properties).length > 0,
          `${tool.name} outputSchema has properties`,
        );
        assert.ok(typeof tool.description === 'string' && tool.description.length > 40, `${tool.name} description`);
        assert.equal(tool.annotations?.readOnlyHint, true, `${tool.name} readOnlyHint`);
      }
      const list = tools.find((tool) => tool.name === 'list_playbook_opt_ins')!;
      assert.deepEqual(Object.keys(list.inputSchema.properties ?? {}).sort(), ['cursor', 'limit', 'playbookId', 'since', 'status']);
      const spend = tools.find((tool) => tool.name === 'get_spend_by_workspace')!;
      assert.deepEqual(Object.keys(spend.inputSchema.properties ?? {}), ['period']);
    } finally {
      await client.close();
    }
  });

  test('each tool returns what the REST endpoint returns for the same input, validated against its outputSchema', async () => {
    const { client, validator } = await mcpClient(keys.a);
    try {
      await client.listTools(); // caches the output validators the client applies to every call
      const cases: { tool: string; args: Record<string, unknown>; path: string }[] = [
        { tool: 'list_playbook_opt_ins', args: {}, path: '/playbook-opt-ins' },
        { tool: 'list_playbook_opt_ins', args: { limit: 2 }, path: '/playbook-opt-ins?limit=2' },
        { tool: 'list_playbook_opt_ins', args: { status: 'active' }, path: '/playbook-opt-ins?status=active' },
        {
          tool: 'list_playbook_opt_ins',
          args: { playbookId: 'pb_a2', since: '2026-11-10' },
          path: '/playbook-opt-ins?playbookId=pb_a2&since=2026-11-10',
        },
        { tool: 'list_playbook_opt_ins', args: { since: '2026-11-21T08:00:00Z' }, path: '/playbook-opt-ins?since=2026-11-21T08:00:00Z' },
        { tool: 'get_opt_in_summary', args: {}, path: '/opt-in-summary' },
        { tool: 'get_spend_by_workspace', args: {}, path: '/spend-by-workspace' },
        { tool: 'get_spend_by_workspace', args: { period: 'today' }, path: '/spend-by-workspace?period=today' },
        { tool: 'get_spend_by_workspace', args: { period: 'yesterday' }, path: '/spend-by-workspace?period=yesterday' },
        { tool: 'get_spend_by_workspace', args: { period: 'last_7_days' }, path: '/spend-by-workspace?period=last_7_days' },
      ];
      for (const c of cases) {
        const viaMcp = await callOk(client, c.tool, c.args);
        const viaRest = await rest(c.path, keys.a);
        assert.deepEqual(viaMcp, viaRest, `${c.tool} ${JSON.stringify(c.args)} vs GET ${c.path}`);
      }
      // Each call went through the SDK's outputSchema validation, and passed it.
      assert.equal(validator.outcomes.length, cases.length, 'the client validated every structured result');
      assert.deepEqual(
        validator.outcomes.filter((o) => !o.valid),
        [],
      );

      // The data behind the comparisons is what the fixtures say (the comparisons are not vacuous).
      const all = await callOk(client, 'list_playbook_opt_ins');
      assert.deepEqual(
        (all.data as { id: string }[]).map((row) => row.id),
        ['oi_a4', 'oi_a5', 'oi_a3', 'oi_a2', 'oi_a1'],
      );
      assert.equal(all.nextCursor, null);
      const first = (all.data as any[]).find((row) => row.id === 'oi_a1');
      assert.equal(first.playbook.name, 'Spring Promo ');
      assert.deepEqual(first.workspace.fields, { region: 'West' });
      assert.deepEqual(first.variant, { audience: 'Families' });
      const summary = await callOk(client, 'get_opt_in_summary');
      // asOf: the instant the figures have been current since (the hub's last counted opt-in change, not before today).
      const changed = await t.db.kysely.selectFrom('hubs').select('opt_ins_changed_at').where('id', '=', 'hub_a').executeTakeFirstOrThrow();
      assert.equal(
        summary.asOf,
        new Date(Math.max(changed.opt_ins_changed_at.getTime(), Date.parse('2026-11-21T00:00:00Z'))).toISOString(),
      );
      assert.equal(summary.activeOptIns, 2);
      const week = (summary.periods as any[]).find((p) => p.period === 'last_7_days');
      assert.deepEqual([week.startDate, week.endDate, week.optIns, week.workspaces], ['2026-11-15', '2026-11-21', 3, 2]);
      const spend = await callOk(client, 'get_spend_by_workspace', { period: 'last_7_days' });
      assert.equal(spend.asOf, '2026-11-21T08:00:00.000Z');
      assert.equal(spend.freshness, 'fresh');
      assert.deepEqual(spend.totals, {
        spendCents: 6977,
        priorSpendCents: 300,
        unattributedSpendCents: 0,
        priorUnattributedSpendCents: 300,
      });
      assert.deepEqual(
        (spend.workspaces as any[]).map((w) => [w.id, w.spendCents]),
        [
          ['ws_a1', 6200],
          ['ws_a2', 777],
          ['ws_a3', 0],
        ],
      );
    } finally {
      await client.close();
    }
  });

  test('paging through the tool follows nextCursor, and REST and MCP cursors are interchangeable', async () => {
    const { client } = await mcpClient(keys.a);
    try {
      const ids: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const page: Record<string, unknown> = await callOk(client, 'list_playbook_opt_ins', { limit: 2, ...(cursor ? { cursor } : {}) });
        ids.push(...(page.data as { id: string }[]).map((row) => row.id));
        cursor = page.nextCursor as string | null;
        pages += 1;
      } while (cursor);
      assert.equal(pages, 3);
      assert.deepEqual(ids, ['oi_a4', 'oi_a5', 'oi_a3', 'oi_a2', 'oi_a1']);

      const restFirst = await rest('/playbook-opt-ins?limit=2', keys.a);
      const mcpSecond = await callOk(client, 'list_playbook_opt_ins', { limit: 2, cursor: restFirst.nextCursor });
      const restSecond = await rest(`/playbook-opt-ins?limit=2&cursor=${encodeURIComponent(restFirst.nextCursor)}`, keys.a);
      assert.deepEqual(mcpSecond, restSecond);
    } finally {
      await client.close();
    }
  });

  test('the client rejects structured content that does not match the outputSchema (validation is live)', async () => {
    // Same server, but the client's copy of each outputSchema also requires a property the
    // server never sends: if callTool did not validate, this call would succeed.
    const validator = new RecordingValidator();
    validator.tighten = (schema) => ({ ...schema, required: [...((schema.required as string[] | undefined) ?? []), 'notAField'] });
    const { client } = await mcpClient(keys.a, validator);
    try {
      await client.listTools();
      await assert.rejects(client.callTool({ name: 'get_opt_in_summary', arguments: {} }), /does not match the tool's output schema/);
      assert.equal(validator.outcomes.length, 1);
      assert.equal(validator.outcomes[0]!.valid, false);
    } finally {
      await client.close();
    }
  });

  test('invalid tool input is an isError result naming the field, not a protocol error', async () => {
    const { client } = await mcpClient(keys.a);
    try {
      await client.listTools();
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ limit: 0 }, /\blimit\b/],
        [{ limit: 501 }, /\blimit\b/],
        [{ limit: 1.5 }, /\blimit\b/],
        [{ status: 'nope' }, /\bstatus\b/],
        [{ since: 'yesterday' }, /\bsince\b/],
        [{ cursor: 'not-a-cursor' }, /\bcursor\b/],
      ];
      for (const [args, field] of cases) {
        const result = (await client.callTool({ name: 'list_playbook_opt_ins', arguments: args })) as CallToolResult;
        assert.equal(result.isError, true, JSON.stringify(args));
        assert.equal(result.structuredContent, undefined);
        assert.match(text(result), /invalid_request/, JSON.stringify(args));
        assert.match(text(result), field, JSON.stringify(args));
      }
      const both = (await client.callTool({ name: 'list_playbook_opt_ins', arguments: { limit: 0, status: 'nope' } })) as CallToolResult;
      assert.equal(both.isError, true);
      assert.match(text(both), /limit/);
      assert.match(text(both), /status/);
      const period = (await client.callTool({ name: 'get_spend_by_workspace', arguments: { period: 'last_year' } })) as CallToolResult;
      assert.equal(period.isError, true);
      assert.match(text(period), /\bperiod\b/);
    } finally {
      await client.close();
    }
  });

  test('a key of hub A never sees hub B rows through MCP, and vice versa', async () => {
    const a = await mcpClient(keys.a);
    const b = await mcpClient(keys.b);
    try {
      const aRows = (await callOk(a.client, 'list_playbook_opt_ins', { limit: 500 })).data as any[];
      assert.ok(aRows.length > 0);
      assert.ok(
        aRows.every((row) => row.id.startsWith('oi_a') && row.workspace.id.startsWith('ws_a') && row.playbook.id.startsWith('pb_a')),
      );
      const foreign = await callOk(a.client, 'list_playbook_opt_ins', { playbookId: 'pb_b1' });
      assert.deepEqual(foreign, { data: [], nextCursor: null });

      const bRows = (await callOk(b.client, 'list_playbook_opt_ins', { limit: 500 })).data as any[];
      assert.deepEqual(bRows.map((row) => row.id).sort(), ['oi_b1', 'oi_b2']);
      assert.deepEqual(await callOk(b.client, 'list_playbook_opt_ins', { playbookId: 'pb_a1' }), { data: [], nextCursor: null });

      const bSummary = await callOk(b.client, 'get_opt_in_summary');
      assert.equal(bSummary.activeOptIns, 1);
      const bMonth = (bSummary.periods as any[]).find((p) => p.period === 'last_30_days');
      assert.equal(bMonth.optIns, 2);

      const aSpend = await callOk(a.client, 'get_spend_by_workspace', { period: 'today' });
      assert.deepEqual(
        (aSpend.workspaces as any[]).map((w) => w.id),
        ['ws_a1', 'ws_a2', 'ws_a3'],
      );
      assert.equal((aSpend.totals as any).spendCents, 1200);
      const bSpend = await callOk(b.client, 'get_spend_by_workspace', { period: 'today' });
      assert.deepEqual(
        (bSpend.workspaces as any[]).map((w) => [w.id, w.spendCents]),
        [['ws_b1', 424242]],
      );
      assert.equal(bSpend.asOf, '2026-11-21T07:00:00.000Z');
    } finally {
      await a.client.close();
      await b.client.close();
    }
  });

  test('missing, revoked and embed keys get 403 invalid_api_key, without an OAuth challenge (a 401 would send MCP clients into OAuth)', async () => {
    const cases: [string, Record<string, string>][] = [
      ['no key', {}],
      ['revoked key', { authorization: `Bearer ${keys.revoked}` }],
      ['embed key', { authorization: `Bearer ${keys.embed}` }],
      ['mistyped key', { authorization: `Bearer ${fx.mistyped(keys.a)}` }],
    ];
    for (const [label, headers] of cases) {
      const response = await rawPost(headers);
      assert.equal(response.status, 403, label);
      assert.equal(response.json?.error, 'invalid_api_key', label);
      assert.ok(typeof response.json.message === 'string' && response.json.message.length > 0);
      assert.equal(response.headers['www-authenticate'], undefined, label);
      assert.match(String(response.headers['ratelimit-policy']), /"failed-auth"/, label);
    }
    // The real SDK client gives up with the 403 and our message (third-party clients:
    // test/mcp/third-party-clients.test.ts).
    for (const key of [undefined, keys.revoked, keys.embed]) {
      await assert.rejects(mcpClient(key), (error: unknown) => {
        assert.ok(error instanceof StreamableHTTPError, String(error));
        assert.equal(error.code, 403);
        assert.match(error.message, /invalid_api_key/);
        return true;
      });
    }
  });

  test('a request with an Origin header is refused with 403 browser_request_rejected and no CORS headers', async () => {
    // Sanity: the same request without the browser's headers is served.
    const server = await rawPost({ authorization: `Bearer ${keys.a}` });
    assert.equal(server.status, 200, server.text);
    assert.equal(server.json?.result?.serverInfo?.name, 'hubops-hub-api');

    const response = await rawPost({ authorization: `Bearer ${keys.a}`, origin: 'https://evil.example' });
    assert.equal(response.status, 403);
    assert.equal(response.json?.error, 'browser_request_rejected');
    assert.equal(response.headers['access-control-allow-origin'], undefined);
    // Fetch metadata a browser sends, even without an Origin header.
    const cors = await rawPost({
      authorization: `Bearer ${keys.a}`,
      'sec-fetch-mode': 'cors',
      'sec-fetch-site': 'cross-site',
      'sec-fetch-dest': 'empty',
    });
    assert.equal(cors.status, 403);
    assert.equal(cors.json?.error, 'browser_request_rejected');
    assert.equal(cors.headers['access-control-allow-origin'], undefined);
    const preflight = await httpRequest(mcpUrl, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    assert.equal(preflight.status, 403);
    assert.equal(preflight.headers['access-control-allow-origin'], undefined);
  });

  test('a body that is not JSON is -32700, one that is not a JSON-RPC message -32600, with the key checked first', async () => {
    const post = (body: string, key = keys.a) =>
      httpRequest(mcpUrl, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body,
      });
    for (const body of ['{"jsonrpc":"2.0","id":1,', '', '{"__proto__":{},"jsonrpc":"2.0","id":1,"method":"tools/list"}']) {
      const response = await post(body);
      assert.equal(response.status, 400, body);
      assert.equal(response.headers['cache-control'], 'no-store');
      assert.deepEqual(
        response.json,
        { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: the body is not valid JSON.' } },
        body,
      );
    }
    for (const [body, id] of [
      ['[]', null],
      ['true', null],
      ['{"jsonrpc":"2.0","id":9,"params":{}}', 9],
      ['[{"jsonrpc":"2.0","id":1,"method":"tools/list"},[]]', null],
    ] as const) {
      const response = await post(body);
      assert.equal(response.status, 400, body);
      assert.equal(response.json.id, id, body);
      assert.equal(response.json.error.code, -32600, body);
    }
    // Nested deeper than any message may: a JSON-RPC error too, not the REST body of the door check.
    const deep = await post(
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_opt_in_summary","arguments":{"x":${'['.repeat(5_000)}${']'.repeat(5_000)}}}}`,
    );
    assert.equal(deep.status, 400);
    assert.deepEqual(deep.json, {
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: 'Invalid Request: the body nests objects and arrays more than 32 levels deep.' },
    });
    const unauthenticated = await post('{bad', keys.revoked);
    assert.equal(unauthenticated.status, 403);
    assert.equal(unauthenticated.json.error, 'invalid_api_key');
  });

  test('an unknown tool is the JSON-RPC error -32602 (raw and through the SDK client)', async () => {
    const raw = await rawPost(
      { authorization: `Bearer ${keys.a}` },
      { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'drop_tables', arguments: {} } },
    );
    assert.equal(raw.status, 200);
    assert.deepEqual(raw.json, { jsonrpc: '2.0', id: 4, error: { code: -32602, message: 'Unknown tool: drop_tables' } });
    const { client } = await mcpClient(keys.a);
    try {
      await assert.rejects(
        client.callTool({ name: 'drop_tables', arguments: {} }),
        (error: Error & { code?: number }) => error.code === -32602 && /Unknown tool: drop_tables/.test(error.message),
      );
      await callOk(client, 'get_opt_in_summary');
    } finally {
      await client.close();
    }
  });

  test('params that do not fit the method are -32602 Invalid params naming the field, never -32603', async () => {
    for (const [message, field] of [
      [{ jsonrpc: '2.0', id: 5, method: 'tools/call', params: {} }, 'params.name'],
      [{ jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'get_opt_in_summary', arguments: 'x' } }, 'params.arguments'],
      [{ jsonrpc: '2.0', id: 7, method: 'initialize', params: { capabilities: {} } }, 'params.protocolVersion'],
    ] as const) {
      const response = await rawPost({ authorization: `Bearer ${keys.a}` }, message);
      assert.equal(response.status, 200, JSON.stringify(message));
      assert.equal(response.json.id, message.id);
      assert.equal(response.json.error.code, -32602, response.text);
      assert.match(
        response.json.error.message,
        new RegExp(`^Invalid params for ${message.method}: .*${field.replace('.', '\\.')}`),
        response.text,
      );
    }
  });

  test('GET on the MCP endpoint is 405 (stateless: no event stream)', async () => {
    const response = await httpRequest(mcpUrl, { headers: { authorization: `Bearer ${keys.a}`, accept: 'text/event-stream' } });
    assert.equal(response.status, 405);
    assert.equal(response.headers.allow, 'POST');
    assert.equal(response.json?.error, 'method_not_allowed');
  });

  test('the 20/min limit of get_opt_in_summary applies to tool calls (shared with REST)', async () => {
    const { client } = await mcpClient(keys.limits);
    try {
      for (let i = 1; i <= 20; i++) {
        const result = (await client.callTool({ name: 'get_opt_in_summary', arguments: {} })) as CallToolResult;
        assert.notEqual(result.isError, true, `call ${i}: ${JSON.stringify(result.content)}`);
      }
      const refused = (await client.callTool({ name: 'get_opt_in_summary', arguments: {} })) as CallToolResult;
      assert.equal(refused.isError, true);
      assert.match(text(refused), /rate_limited/);
      // The same window as REST, per operation: the REST endpoint is refused too, other tools are not.
      const viaRest = await t.hubGet('/opt-in-summary', keys.limits);
      assert.equal(viaRest.status, 429);
      assert.equal(viaRest.body.error, 'rate_limited');
      await callOk(client, 'list_playbook_opt_ins', { limit: 1 });
      await callOk(client, 'get_spend_by_workspace', { period: 'today' });
    } finally {
      await client.close();
    }
  });

  test('each tool call of a JSON-RPC batch counts against the per-key limit; answers are never cached', async () => {
    const call = (id: number) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'list_playbook_opt_ins', arguments: { limit: 1 } },
    });
    const batch = await rawPost({ authorization: `Bearer ${keys.batch}` }, [call(1), call(2), call(3)]);
    assert.equal(batch.status, 200, batch.text);
    assert.equal(batch.json.length, 3);
    assert.equal(batch.headers['cache-control'], 'no-store');
    // The POST was counted once when authenticated, the two extra calls once each: 3 of 120 used.
    const after = await t.hubGet('/playbook-opt-ins?limit=1', keys.batch);
    assert.equal(after.headers.ratelimit, '"per-key";r=116;t=60');
  });

  test('a server-side Node.js MCP client with default fetch is not mistaken for a browser', async () => {
    // Node's global fetch sends `Sec-Fetch-Mode: cors` on every request (a header cannot turn it
    // off); without Sec-Fetch-Site or Origin that is a server, and the SDK client must get through.
    const { client } = await mcpClient(keys.b);
    try {
      const { tools } = await client.listTools();
      assert.equal(tools.length, 3);
      const page = await callOk(client, 'list_playbook_opt_ins', { limit: 1 });
      assert.equal((page.data as unknown[]).length, 1);
    } finally {
      await client.close();
    }
  });
});
