// The main MCP server as an OAuth protected resource: its RFC 9728 metadata, its 401/403 challenges,
// audience binding (a REST API token is refused here and an MCP token there), expired and revoked
// tokens, tokens only from the header, the tenancy rule for hub-wide paid figures, and the plan's
// rate limit applied per tool call.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { loadConfig } from '../../src/config.ts';
import { importNdjson } from '../../src/domain/import/import.service.ts';
import { mcpResource, protectedResourceMetadata } from '../../src/surfaces/mcp-main/plugin.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { callError, callOk, newClient, remaining, transport } from '../support/mcp-client.ts';
import {
  api,
  authorize,
  exchangeCode,
  expireAccessTokens,
  REDIRECT,
  registerClient,
  revoke,
  type RegisteredClient,
} from '../support/oauth-flow.ts';
import { HUB_ADMIN } from '../support/world.ts';

const MEMBER = { email: 'max@acme.test', password: 'member password 1' };

let live: TestApp;
let mcpUrl: string;
let prmUrl: string;

before(async () => {
  live = await startApp({ listen: true });
  mcpUrl = `${live.baseUrl}/mcp`;
  prmUrl = `${live.baseUrl}/.well-known/oauth-protected-resource/mcp`;
  const today = live.clock.now().toISOString().slice(0, 10);
  const lines = [
    { type: 'account', id: 'acc_1', name: 'Acme', plan: 'standard', apiAccess: true },
    { type: 'hub', id: 'h1', accountId: 'acc_1', name: 'Acme US' },
    { type: 'workspace', id: 'w1', hubId: 'h1', name: 'Denver' },
    { type: 'workspace', id: 'w2', hubId: 'h1', name: 'Boulder' },
    { type: 'playbook', id: 'pb_1', hubId: 'h1', name: 'Spring', solutions: ['meta'] },
    { type: 'optIn', id: 'oi_1', playbookId: 'pb_1', workspaceId: 'w1', status: 'active', optedInAt: `${today}T00:00:00Z` },
    {
      type: 'paidMetrics',
      workspaceId: 'w1',
      date: today,
      platform: 'meta',
      campaignId: 'c1',
      campaignName: 'C1',
      spendCents: 100,
      impressions: 1000,
      clicks: 10,
      results: 1,
    },
    {
      type: 'paidMetrics',
      workspaceId: 'w2',
      date: today,
      platform: 'meta',
      campaignId: 'c1',
      campaignName: 'C1',
      spendCents: 900,
      impressions: 9000,
      clicks: 90,
      results: 9,
    },
    {
      type: 'user',
      email: HUB_ADMIN.email,
      password: HUB_ADMIN.password,
      firstname: 'Ada',
      lastname: 'Lee',
      hubId: 'h1',
      role: 'hub_admin',
    },
    {
      type: 'user',
      email: MEMBER.email,
      password: MEMBER.password,
      firstname: 'Max',
      lastname: 'Mo',
      hubId: 'h1',
      role: 'member',
      workspaceId: 'w2',
    },
  ];
  await importNdjson(live.db, lines.map((l) => JSON.stringify(l)).join('\n'));
});
after(async () => {
  await live.close();
});

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
const toolCall = (id: number, name = 'whoami', args: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args },
});

/**
 * One POST to the MCP endpoint, as a client would send it: a 2025-06-18 client, or a 2025-03-26
 * one for a JSON-RPC batch (the last revision that has them).
 */
async function post(
  token: string | undefined,
  body: unknown = INITIALIZE,
  url = mcpUrl,
): Promise<{ status: number; headers: Headers; body: any }> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': Array.isArray(body) ? '2025-03-26' : '2025-06-18',
  };
  if (token) headers.authorization = `Bearer ${token}`;
  const response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // keep the text
  }
  return { status: response.status, headers: response.headers, body: parsed };
}

async function tokensFor(
  user: { email: string; password: string },
  options: { resource?: string; workspace?: string } = {},
): Promise<{ client: RegisteredClient; access: string; refresh: string }> {
  const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
  const result = await authorize(live, client, { ...user, redirectUri: REDIRECT, ...options });
  assert.ok(result.callback?.searchParams.get('code'), `authorized (got ${result.response.status})`);
  const tokens = await exchangeCode(live, client, result, REDIRECT);
  return { client, access: tokens.access_token, refresh: tokens.refresh_token! };
}

function assertChallenge(response: { status: number; headers: Headers; body: any }, withError: boolean) {
  assert.equal(response.status, 401);
  assert.equal(response.body.error, 'invalid_token');
  const challenge = response.headers.get('www-authenticate') ?? '';
  assert.match(challenge, /^Bearer /);
  assert.ok(challenge.includes(`resource_metadata="${prmUrl}"`), challenge);
  assert.ok(challenge.includes('scope="service:full"'), challenge);
  assert.equal(/error="invalid_token"/.test(challenge), withError, challenge);
}

describe('protected-resource metadata (RFC 9728)', () => {
  test('at the path-aware URL only: no root document a client of another endpoint could take for its own', async () => {
    const expected = {
      resource: mcpUrl,
      authorization_servers: [live.config.siteUrl],
      scopes_supported: ['service:full'],
      bearer_methods_supported: ['header'],
      resource_name: 'hubops MCP server',
      resource_documentation: `${live.baseUrl}/openapi.json`,
    };
    const response = await fetch(prmUrl);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(response.headers.get('access-control-allow-origin'), '*');
    assert.deepEqual(await response.json(), expected);
    // RFC 9728 §3.3: a root document would have to describe the origin; the Hub MCP endpoint is
    // not an OAuth protected resource at all.
    for (const path of ['', '/v1/hub/mcp']) {
      const missing = await fetch(`${live.baseUrl}/.well-known/oauth-protected-resource${path}`);
      assert.equal(missing.status, 404, path);
      assert.equal(((await missing.json()) as { error: string }).error, 'not_found');
    }
    // The authorization server it names answers RFC 8414 discovery; dynamic registration is on,
    // and so are Client ID Metadata Documents (test/oauth/cimd.test.ts).
    const as = (await (await fetch(`${live.config.siteUrl}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    assert.equal(as.issuer, live.config.siteUrl);
    assert.equal(as.registration_endpoint, `${live.baseUrl}/oauth/register`);
    assert.deepEqual(as.code_challenge_methods_supported, ['S256']);
    assert.equal(as.client_id_metadata_document_supported, true);
  });

  test('a base URL with a path puts the well-known segment before it', () => {
    const config = loadConfig({
      BASE_URL: 'https://api.example.com/hubops/',
      SITE_URL: 'https://example.com',
      DATABASE_URL: 'postgres://x@y/z',
    });
    assert.deepEqual(mcpResource(config), {
      resource: 'https://api.example.com/hubops/mcp',
      path: '/hubops/mcp',
      metadataPath: '/.well-known/oauth-protected-resource/hubops/mcp',
      metadataUrl: 'https://api.example.com/.well-known/oauth-protected-resource/hubops/mcp',
    });
    assert.deepEqual(protectedResourceMetadata(config).authorization_servers, ['https://example.com']);
  });
});

describe('authentication on /mcp', () => {
  test('no token: 401 with resource_metadata and scope, without an error code', async () => {
    const response = await post(undefined);
    assertChallenge(response, false);
    assert.equal(response.headers.get('www-authenticate'), `Bearer realm="hubops", resource_metadata="${prmUrl}", scope="service:full"`);
  });

  test('a token only counts in the Authorization header', async () => {
    const { access } = await tokensFor(HUB_ADMIN, { resource: mcpUrl });
    assert.equal((await post(access)).status, 200, 'the token itself is good');
    assertChallenge(await post(undefined, INITIALIZE, `${mcpUrl}?access_token=${access}`), false);
    const response = await fetch(mcpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json, text/event-stream' },
      body: `access_token=${access}`,
    });
    assert.equal(response.status, 401);
    assertChallenge(await post('not-a-real-token'), true);
  });

  test('a token for the REST API is refused on /mcp, and an MCP token by the REST API (audience)', async () => {
    const restTokens = await tokensFor(HUB_ADMIN);
    assert.equal((await api(live, '/whoami', restTokens.access)).status, 200);
    const refused = await post(restTokens.access);
    assertChallenge(refused, true);
    assert.match(refused.body.message, /issued for another resource, not .*\/mcp/);

    const mcpTokens = await tokensFor(HUB_ADMIN, { resource: mcpUrl });
    assert.equal((await post(mcpTokens.access)).status, 200);
    const rest = await api(live, '/whoami', mcpTokens.access);
    assert.equal(rest.status, 401);
    assert.equal(rest.body.error, 'invalid_token');
  });

  test('an expired token is refused with the challenge', async () => {
    const { access } = await tokensFor(HUB_ADMIN, { resource: mcpUrl });
    assert.equal((await post(access)).status, 200);
    await expireAccessTokens(live);
    // Expiry edited into the database bypasses the server's 30 s cache of token verdicts (a real
    // expiry cannot: verdicts never outlive `exp`), so wait for the nudge to empty it.
    for (let i = 0; i < 200 && (await post(access)).status === 200; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    assertChallenge(await post(access), true);
  });

  test('a revoked token (and one from a revoked grant) is refused with the challenge', async () => {
    const first = await tokensFor(HUB_ADMIN, { resource: mcpUrl });
    assert.equal((await post(first.access)).status, 200);
    await revoke(live, first.client, first.access);
    assertChallenge(await post(first.access), true);

    const second = await tokensFor(HUB_ADMIN, { resource: mcpUrl });
    assert.equal((await post(second.access)).status, 200);
    await revoke(live, second.client, second.refresh);
    assertChallenge(await post(second.access), true);
  });

  test('a token without the service:full scope gets 403 insufficient_scope with the challenge', async () => {
    const { access } = await tokensFor(HUB_ADMIN, { resource: mcpUrl });
    // Every token is issued with the one scope, so take it away in storage (before first use, so
    // no cached verdict exists).
    await sql`UPDATE oauth_artifacts SET payload = jsonb_set(payload, '{scope}', '""')
              WHERE model = 'AccessToken' AND id_hash = ${createHash('sha256').update(access).digest()}`.execute(live.db.kysely);
    const response = await post(access);
    assert.equal(response.status, 403);
    assert.equal(response.body.error, 'insufficient_scope');
    assert.equal(
      response.headers.get('www-authenticate'),
      `Bearer realm="hubops", resource_metadata="${prmUrl}", scope="service:full", error="insufficient_scope"`,
    );
  });

  test('a request from a web page of another origin is refused with 403 (DNS rebinding protection)', async () => {
    const { access } = await tokensFor(HUB_ADMIN, { resource: mcpUrl });
    const headers = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${access}`,
    };
    const foreign = await fetch(mcpUrl, {
      method: 'POST',
      headers: { ...headers, origin: 'http://evil.example' },
      body: JSON.stringify(INITIALIZE),
    });
    assert.equal(foreign.status, 403);
    assert.equal(((await foreign.json()) as { error: string }).error, 'origin_not_allowed');
    assert.equal(foreign.headers.get('access-control-allow-origin'), null);
    const own = await fetch(mcpUrl, {
      method: 'POST',
      headers: { ...headers, origin: new URL(mcpUrl).origin },
      body: JSON.stringify(INITIALIZE),
    });
    assert.equal(own.status, 200);
  });

  test('GET and DELETE are 405 (stateless: no event stream, no session)', async () => {
    for (const method of ['GET', 'DELETE']) {
      const response = await fetch(mcpUrl, { method, headers: { accept: 'text/event-stream' } });
      assert.equal(response.status, 405, method);
      assert.equal(response.headers.get('allow'), 'POST');
      assert.equal(((await response.json()) as { error: string }).error, 'method_not_allowed');
    }
  });
});

describe('tenancy of hub-wide paid figures', () => {
  const HUB_WIDE = ['list_playbook_opt_ins', 'get_opt_in_summary', 'get_spend_by_workspace'];

  test('a hub admin acting hub-wide sees them', async () => {
    const { access } = await tokensFor(HUB_ADMIN, { resource: mcpUrl });
    const client = newClient();
    await client.connect(transport(new URL(mcpUrl), { token: access }));
    try {
      assert.deepEqual(
        (await callOk(client, 'list_playbook_opt_ins')).data.map((r: any) => r.id),
        ['oi_1'],
      );
      assert.equal((await callOk(client, 'get_opt_in_summary')).activeOptIns, 1);
      assert.deepEqual((await callOk(client, 'get_spend_by_workspace')).workspaces.map((w: any) => w.id).sort(), ['w1', 'w2']);
    } finally {
      await client.close();
    }
  });

  for (const [label, user, options] of [
    ['a hub admin whose token is bound to one workspace', HUB_ADMIN, { workspace: 'w1' }],
    ['a member (always bound to their workspace)', MEMBER, {}],
  ] as const) {
    test(`${label} gets a clear tool error, and still sees their workspace's paid figures`, async () => {
      const { access } = await tokensFor(user, { resource: mcpUrl, ...options });
      const client = newClient();
      await client.connect(transport(new URL(mcpUrl), { token: access }));
      try {
        const workspace = (await callOk(client, 'whoami')).workspace._id;
        for (const tool of HUB_WIDE) {
          const text = await callError(client, tool);
          assert.match(text, /^hub_wide_access_required: /, tool);
          assert.match(text, new RegExp(`${tool} reports on every workspace of the hub`), tool);
          assert.match(text, /paid_analytics/, tool);
        }
        const paid = await callOk(client, 'paid_analytics');
        assert.deepEqual(
          paid.workspaces.map((w: any) => w.workspace._id),
          [workspace],
        );
        assert.equal(paid.totals.spendCents, workspace === 'w1' ? 100 : 900);
        assert.deepEqual(
          (await callOk(client, 'list_playbooks')).data.map((p: any) => p._id),
          ['pb_1'],
          'playbooks are hub-level: visible',
        );
      } finally {
        await client.close();
      }
    });
  }
});

describe('JSON-RPC errors', () => {
  /** A POST with a raw body, as a hand-written or broken client would send it. */
  async function rawPost(token: string, body: string): Promise<{ status: number; body: any }> {
    const response = await fetch(mcpUrl, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18',
      },
      body,
    });
    return { status: response.status, body: await response.json() };
  }

  test('a body that is not JSON is -32700; a non-object, a message without method or an empty batch is -32600', async () => {
    const { access } = await tokensFor(MEMBER, { resource: mcpUrl });
    for (const body of ['{"jsonrpc":"2.0","id":1,', 'not json', '', '{"__proto__":{"x":1},"jsonrpc":"2.0","id":1,"method":"tools/list"}']) {
      const response = await rawPost(access, body);
      assert.equal(response.status, 400, body);
      assert.deepEqual(
        response.body,
        { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: the body is not valid JSON.' } },
        body,
      );
    }
    for (const [body, id] of [
      ['[]', null],
      ['42', null],
      ['"tools/list"', null],
      ['null', null],
      ['{"jsonrpc":"2.0","id":7}', 7],
      ['{"jsonrpc":"2.0","id":"a","method":5}', 'a'],
      ['[{"jsonrpc":"2.0","id":1,"method":"tools/list"},3]', null],
    ] as const) {
      const response = await rawPost(access, body);
      assert.equal(response.status, 400, body);
      assert.equal(response.body.jsonrpc, '2.0', body);
      assert.equal(response.body.id, id, body);
      assert.equal(response.body.error.code, -32600, body);
      assert.match(response.body.error.message, /^Invalid Request: /, body);
    }
  });

  test('an unknown tool is the JSON-RPC error -32602, through raw HTTP and the SDK client', async () => {
    const { access } = await tokensFor(MEMBER, { resource: mcpUrl });
    const raw = await post(access, toolCall(3, 'no_such_tool'));
    assert.equal(raw.status, 200);
    assert.deepEqual(raw.body, { jsonrpc: '2.0', id: 3, error: { code: -32602, message: 'Unknown tool: no_such_tool' } });
    const client = newClient();
    await client.connect(transport(new URL(mcpUrl), { token: access }));
    try {
      await assert.rejects(
        client.callTool({ name: 'no_such_tool', arguments: {} }),
        (error: Error & { code?: number }) => error.code === -32602 && /Unknown tool: no_such_tool/.test(error.message),
      );
      assert.equal((await callOk(client, 'whoami')).user.email, MEMBER.email, 'the connection carries on');
    } finally {
      await client.close();
    }
  });
});

describe('rate limits', () => {
  test('a tool call refused by its own limit consumes nothing from the plan', async () => {
    const { access } = await tokensFor(HUB_ADMIN, { resource: mcpUrl });
    let last = 0;
    for (let i = 1; i <= 20; i++) {
      const ok = await post(access, toolCall(i, 'get_opt_in_summary'));
      assert.notEqual(ok.body.result.isError, true, JSON.stringify(ok.body));
      last = remaining(ok.headers)!;
    }
    assert.equal(last, 40);
    for (let i = 21; i <= 25; i++) {
      const refused = await post(access, toolCall(i, 'get_opt_in_summary'));
      assert.match(refused.body.result.content[0].text, /^rate_limited: Too many requests: opt-in-summary allows 20 per 60 s/);
    }
    // The five refused calls gave their POSTs' counts back: this one is the 21st counted.
    assert.equal(remaining((await post(access, toolCall(26))).headers), 39);
  });

  test('every tool call counts against the plan (a batch counts each call); over the limit is 429', async () => {
    const { access } = await tokensFor(MEMBER, { resource: mcpUrl });
    const first = await post(access, toolCall(1));
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('ratelimit-policy'), '"per-user-client";q=60;w=60');
    const start = remaining(first.headers)!;
    assert.equal(start, 59);

    // A JSON-RPC batch of three tool calls: the POST counts one, the two extra calls one each.
    const batch = await post(access, [toolCall(2), toolCall(3), toolCall(4)]);
    assert.equal(batch.status, 200);
    assert.equal(batch.body.length, 3);
    assert.ok(
      batch.body.every((r: any) => r.result && r.result.isError !== true),
      JSON.stringify(batch.body),
    );
    const afterBatch = await post(access, toolCall(5));
    assert.equal(remaining(afterBatch.headers), start - 4);

    // Spend the rest, leaving one: a batch of two then gets one answer and one rate_limited error.
    for (let r = start - 4; r > 1; r = remaining((await post(access, toolCall(6))).headers)!);
    const squeezed = await post(access, [toolCall(7), toolCall(8)]);
    assert.equal(squeezed.status, 200);
    assert.equal(remaining(squeezed.headers), 0);
    const byId = new Map(squeezed.body.map((r: any) => [r.id, r.result]));
    assert.notEqual((byId.get(7) as any).isError, true);
    assert.equal((byId.get(8) as any).isError, true);
    assert.match((byId.get(8) as any).content[0].text, /^rate_limited: Too many requests: the standard plan allows 60 per minute/);

    const refused = await post(access, toolCall(9));
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error, 'rate_limited');
    assert.ok(Number(refused.headers.get('retry-after')) >= 1);
  });

  test('a batch from a revision without batches (2025-06-18 on) is -32600 and runs nothing', async () => {
    const { access } = await tokensFor(MEMBER, { resource: mcpUrl });
    for (const version of ['2025-06-18', '2025-11-25', '2026-07-28']) {
      const response = await fetch(mcpUrl, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${access}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': version,
        },
        body: JSON.stringify([toolCall(1), toolCall(2)]),
      });
      assert.equal(response.status, 400, version);
      assert.equal(response.headers.get('cache-control'), 'no-store');
      assert.deepEqual(
        await response.json(),
        {
          jsonrpc: '2.0',
          id: null,
          error: { code: -32600, message: `Invalid Request: MCP ${version} has no JSON-RPC batches; send one message per POST.` },
        },
        version,
      );
    }
    // Only the POSTs were counted (one each), no tool call: 60 - 3 - this one.
    assert.equal(remaining((await post(access, toolCall(3))).headers), 56);
  });
});
