// Both MCP endpoints per protocol revision: the SDK v2 client speaking 2026-07-28 (server/discover
// instead of initialize, the per-request envelope, Mcp-Method/Mcp-Name headers, cache hints on the
// tool list), raw 2025-era handshakes that each get their own revision back, header/body
// contradictions refused as the specification says, and the auth failures of the 2025 leg
// unchanged on the 2026 one.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { SdkHttpError } from '@modelcontextprotocol/client';
import { createKey, revokeKey } from '../../src/domain/api-keys/api-key.service.ts';
import { importNdjson } from '../../src/domain/import/import.service.ts';
import { hubOperations } from '../../src/surfaces/hub-api/operations.ts';
import { mcpAppResources, REPORT_VIEW_URI } from '../../src/surfaces/mcp-apps/resources.ts';
import { mainMcpTools } from '../../src/surfaces/mcp-main/tools.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { callError, callOk, modernClient, type RecordedRequest } from '../support/mcp-client.ts';
import { authorize, exchangeCode, REDIRECT, registerClient } from '../support/oauth-flow.ts';
import { HUB_ADMIN } from '../support/world.ts';

let live: TestApp;
let mainUrl: URL;
let hubUrl: URL;
let mcpToken: string;
let restToken: string;
let hubKey: string;
let revokedKey: string;

const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

async function tokenFor(resource?: string): Promise<string> {
  const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
  const result = await authorize(live, client, { ...HUB_ADMIN, redirectUri: REDIRECT, ...(resource ? { resource } : {}) });
  return (await exchangeCode(live, client, result, REDIRECT)).access_token;
}

before(async () => {
  live = await startApp({ listen: true });
  mainUrl = new URL(`${live.baseUrl}/mcp`);
  hubUrl = new URL(`${live.baseUrl}/v1/hub/mcp`);
  const now = live.clock.now();
  const today = now.toISOString().slice(0, 10);
  const lines = [
    { type: 'account', id: 'acc_1', name: 'Acme', plan: 'partner', apiAccess: true },
    { type: 'hub', id: 'h1', accountId: 'acc_1', name: 'Acme US' },
    { type: 'workspace', id: 'w1', hubId: 'h1', name: 'Denver' },
    { type: 'workspace', id: 'w2', hubId: 'h1', name: 'Boulder' },
    { type: 'playbook', id: 'pb_1', hubId: 'h1', name: 'Spring', solutions: ['meta'] },
    { type: 'optIn', id: 'oi_1', playbookId: 'pb_1', workspaceId: 'w1', status: 'active', optedInAt: `${today}T00:00:00Z` },
    { type: 'optIn', id: 'oi_2', playbookId: 'pb_1', workspaceId: 'w2', status: 'in_review', optedInAt: `${today}T00:00:00Z` },
    {
      type: 'adAccount',
      id: 'aa_1',
      hubId: 'h1',
      platform: 'meta',
      name: 'Acme Meta',
      lastSyncedAt: new Date(now.getTime() - 3_600_000).toISOString(),
    },
    { type: 'spend', adAccountId: 'aa_1', workspaceId: 'w1', date: today, spendCents: 1234 },
    {
      type: 'user',
      email: HUB_ADMIN.email,
      password: HUB_ADMIN.password,
      firstname: 'Ada',
      lastname: 'Lee',
      hubId: 'h1',
      role: 'hub_admin',
    },
  ];
  await importNdjson(live.db, lines.map((l) => JSON.stringify(l)).join('\n'));
  hubKey = (await createKey(live.db, { hubId: 'h1', name: 'revisions' })).key;
  const revoked = await createKey(live.db, { hubId: 'h1', name: 'revoked' });
  await revokeKey(live.db, revoked.id);
  revokedKey = revoked.key;
  mcpToken = await tokenFor(mainUrl.href);
  restToken = await tokenFor();
});

after(async () => {
  await live?.close();
});

/** One POST by hand; `headers` are sent as given (besides the content type and accept). */
async function post(url: URL, headers: Record<string, string>, body: unknown): Promise<{ status: number; headers: Headers; body: any }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

/** A 2026-07-28 request with its envelope; the standard headers as a conforming client sends them, unless given. */
function modern(method: string, params: Record<string, unknown> = {}, id = 1) {
  const name = typeof params.name === 'string' ? params.name : undefined;
  return {
    headers: { 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...(name ? { 'mcp-name': name } : {}) },
    body: { jsonrpc: '2.0', id, method, params: { ...params, _meta: ENVELOPE } },
  };
}

const initialize = (protocolVersion: string) => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

const endpoints = () => [
  { label: 'Hub MCP', url: hubUrl, auth: `Bearer ${hubKey}`, name: 'hubops-hub-api', tools: hubOperations.map((op) => op.name) },
  { label: 'main MCP', url: mainUrl, auth: `Bearer ${mcpToken}`, name: 'hubops', tools: mainMcpTools.map((op) => op.name) },
];

describe('2026-07-28 through the SDK v2 client', () => {
  test('Hub MCP: discover instead of initialize, the tools in their declared order, every tool answering as its REST route', async () => {
    const log: RecordedRequest[] = [];
    const client = await modernClient(hubUrl, { token: hubKey, log });
    try {
      assert.equal(client.getProtocolEra(), 'modern');
      assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
      const discovered = client.getDiscoverResult()!;
      assert.deepEqual(discovered.supportedVersions, ['2026-07-28']);
      assert.deepEqual(discovered.capabilities, { tools: {}, resources: {} });
      assert.match(discovered.instructions ?? '', /Read-only tools over one hub/);

      const { tools } = await client.listTools();
      assert.deepEqual(
        tools.map((tool) => tool.name),
        hubOperations.map((op) => op.name),
      );
      assert.ok(tools.every((tool) => tool.annotations?.readOnlyHint === true && tool.outputSchema?.type === 'object'));

      const cases: [string, Record<string, unknown>, string][] = [
        ['list_playbook_opt_ins', { limit: 1 }, '/playbook-opt-ins?limit=1'],
        ['get_opt_in_summary', {}, '/opt-in-summary'],
        ['get_spend_by_workspace', { period: 'today' }, '/spend-by-workspace?period=today'],
      ];
      assert.deepEqual(cases.map(([name]) => name).sort(), [...hubOperations.map((op) => op.name)].sort(), 'every Hub tool is called');
      for (const [name, args, path] of cases) {
        const viaRest = await live.hubGet(path, hubKey);
        assert.equal(viaRest.status, 200, path);
        assert.deepEqual(await callOk(client, name, args), viaRest.body, name);
      }
      const refused = await callError(client, 'list_playbook_opt_ins', { limit: 0 });
      assert.match(refused, /^invalid_request: .*\blimit\b/);
      assert.equal(refused.match(/\blimit: /g)?.length, 1, `the bad field is named once: ${refused}`);

      // What went over the wire: no initialize, and every POST named its revision and method in
      // headers and envelope alike.
      const rpc = log.filter((r) => r.method === 'POST').flatMap((r) => r.rpc);
      assert.equal(rpc[0], 'server/discover');
      assert.ok(!rpc.includes('initialize') && !rpc.includes('notifications/initialized'), rpc.join());
      for (const request of log.filter((r) => r.method === 'POST')) {
        const sent = JSON.parse(request.body!);
        assert.equal(sent.params._meta['io.modelcontextprotocol/protocolVersion'], '2026-07-28');
        assert.equal(request.status, 200);
        assert.equal(request.headers.get('cache-control'), 'no-store');
      }
    } finally {
      await client.close();
    }
  });

  test('main MCP with an OAuth token: the tools in their declared order, a few of them called, an unknown one -32602', async () => {
    const client = await modernClient(mainUrl, { token: mcpToken });
    try {
      assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
      assert.deepEqual(client.getDiscoverResult()!.capabilities, { tools: {}, resources: {} });
      const { tools } = await client.listTools();
      assert.deepEqual(
        tools.map((tool) => tool.name),
        mainMcpTools.map((op) => op.name),
      );

      const me = await callOk(client, 'whoami');
      assert.equal(me.user.email, HUB_ADMIN.email);
      const summary = await callOk(client, 'get_opt_in_summary');
      assert.equal(summary.activeOptIns, 1);
      const optIns = await callOk(client, 'list_playbook_opt_ins', { limit: 5 });
      assert.deepEqual(optIns.data.map((row: { id: string }) => row.id).sort(), ['oi_1', 'oi_2']);
      const spend = await callOk(client, 'get_spend_by_workspace', { period: 'today' });
      assert.equal(spend.totals.spendCents, 1234);
      const docs = await callOk(client, 'search_docs', { query: 'rate limits' });
      assert.ok(docs.hits.length > 0, JSON.stringify(docs).slice(0, 200));

      await assert.rejects(
        client.callTool({ name: 'no_such_tool', arguments: {} }),
        (error: Error & { code?: number }) => error.code === -32602 && /Unknown tool: no_such_tool/.test(error.message),
      );
    } finally {
      await client.close();
    }
  });

  test('both endpoints link the MCP Apps report view from exactly the two report tools, and serve it', async () => {
    const reports = new Set(['get_opt_in_summary', 'get_spend_by_workspace']);
    const [view] = mcpAppResources;
    for (const endpoint of endpoints()) {
      const client = await modernClient(endpoint.url, { token: endpoint.auth.slice('Bearer '.length) });
      try {
        const { tools } = await client.listTools();
        const linked = tools
          .filter((tool) => tool._meta?.ui !== undefined)
          .map((tool) => [tool.name, (tool._meta!.ui as { resourceUri: string }).resourceUri]);
        assert.deepEqual(
          linked,
          endpoint.tools.filter((name) => reports.has(name)).map((name) => [name, REPORT_VIEW_URI]),
          endpoint.label,
        );
        const { resources } = await client.listResources();
        assert.deepEqual(
          resources.map((r) => [r.uri, r.mimeType]),
          [[REPORT_VIEW_URI, 'text/html;profile=mcp-app']],
          endpoint.label,
        );
        const read = await client.readResource({ uri: REPORT_VIEW_URI });
        assert.deepEqual(
          read.contents.map((c) => [c.uri, c.mimeType, 'text' in c ? c.text : undefined]),
          [[REPORT_VIEW_URI, view!.mimeType, view!.text]],
          endpoint.label,
        );
      } finally {
        await client.close();
      }
    }
  });

  test('every 2026-07-28 POST counts once against the per-key window, and a report call against its own too', async () => {
    const { key } = await createKey(live.db, { hubId: 'h1', name: 'charged on 2026-07-28' });
    const log: RecordedRequest[] = [];
    const client = await modernClient(hubUrl, { token: key, log });
    try {
      await client.listTools();
      await callOk(client, 'list_playbook_opt_ins', { limit: 1 });
      await callOk(client, 'get_opt_in_summary');
      await callOk(client, 'get_spend_by_workspace', { period: 'today' });
    } finally {
      await client.close();
    }
    const posts = log.filter((r) => r.method === 'POST');
    const window = (policy: string) =>
      posts.map((r) => Number(r.headers.get('ratelimit')?.match(new RegExp(`"${policy}";r=(\\d+)`))?.[1] ?? NaN));
    const perKey = window('per-key');
    assert.deepEqual(
      perKey,
      perKey.map((_, i) => perKey[0]! - i),
      `one unit per POST: ${perKey.join(', ')}`,
    );
    assert.equal(perKey[0], 119, 'the first POST (server/discover) is the first request of this key');
    // The summary's own 20-a-minute window counted the tool call: REST's next one is its second.
    const rest = await live.hubGet('/opt-in-summary', key);
    assert.match(String(rest.headers.ratelimit), /"opt-in-summary";r=18\b/);
  });

  test('a garbled Host or a protocol version that is no revision is a client error: never a 500, never echoed', async () => {
    const list = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
    for (const host of ['[', 'a b', 'x:99999', '%']) {
      const response = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const request = http.request(
          hubUrl,
          {
            method: 'POST',
            headers: {
              host,
              authorization: `Bearer ${hubKey}`,
              'content-type': 'application/json',
              accept: 'application/json, text/event-stream',
              'mcp-protocol-version': '2025-11-25',
            },
          },
          (answer) => {
            let body = '';
            answer.on('data', (chunk) => (body += chunk));
            answer.on('end', () => resolve({ status: answer.statusCode!, body }));
          },
        );
        request.on('error', reject);
        request.end(JSON.stringify(list));
      });
      assert.equal(response.status, 200, `Host ${host}: ${response.body.slice(0, 200)}`);
      assert.ok(JSON.parse(response.body).result.tools.length > 0, host);
    }
    const long = `2025-${'x'.repeat(5_000)}`;
    const response = await post(hubUrl, { authorization: `Bearer ${hubKey}`, 'mcp-protocol-version': long }, list);
    assert.equal(response.status, 400);
    assert.match(response.body.error.message, /^Bad Request: Unsupported protocol version \(supported versions: 2026-07-28, /);
    assert.ok(JSON.stringify(response.body).length < 300, 'the value is not echoed');
  });

  test('tools/list carries ttlMs and cacheScope on 2026-07-28, and not on 2025-11-25', async () => {
    for (const endpoint of endpoints()) {
      const request = modern('tools/list');
      const listed = await post(endpoint.url, { authorization: endpoint.auth, ...request.headers }, request.body);
      assert.equal(listed.status, 200, endpoint.label);
      assert.equal(listed.body.result.ttlMs, 3_600_000, endpoint.label);
      assert.equal(listed.body.result.cacheScope, 'public', endpoint.label);
      assert.deepEqual(
        listed.body.result.tools.map((tool: { name: string }) => tool.name),
        endpoint.tools,
        endpoint.label,
      );

      const old = await post(
        endpoint.url,
        { authorization: endpoint.auth, 'mcp-protocol-version': '2025-11-25' },
        { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} },
      );
      assert.equal(old.status, 200, endpoint.label);
      assert.equal(old.body.result.ttlMs, undefined, endpoint.label);
      assert.equal(old.body.result.cacheScope, undefined, endpoint.label);
      assert.deepEqual(old.body.result.tools, listed.body.result.tools, `${endpoint.label}: the same tools on both revisions`);
    }
  });
});

describe('2025 revisions over raw HTTP', () => {
  test('initialize negotiates 2025-06-18 and 2025-11-25 as asked; an older offer gets 2025-11-25', async () => {
    for (const endpoint of endpoints()) {
      for (const [offered, answered] of [
        ['2025-06-18', '2025-06-18'],
        ['2025-11-25', '2025-11-25'],
        ['2025-03-26', '2025-03-26'],
        ['2024-11-05', '2025-11-25'],
      ]) {
        const response = await post(endpoint.url, { authorization: endpoint.auth }, initialize(offered!));
        assert.equal(response.status, 200, `${endpoint.label} ${offered}`);
        assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
        assert.equal(response.headers.get('cache-control'), 'no-store');
        assert.equal(response.headers.get('mcp-session-id'), null, 'stateless');
        assert.equal(response.body.result.protocolVersion, answered, `${endpoint.label} ${offered}`);
        assert.equal(response.body.result.serverInfo.name, endpoint.name);
        assert.deepEqual(response.body.result.capabilities, { tools: {}, resources: {} });
      }
    }
  });

  test('a request naming a revision the endpoint does not serve is refused', async () => {
    const response = await post(
      hubUrl,
      { authorization: `Bearer ${hubKey}`, 'mcp-protocol-version': '2024-11-05' },
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
    );
    assert.equal(response.status, 400);
    assert.match(
      response.body.error.message,
      /Unsupported protocol version: 2024-11-05 \(supported versions: 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26\)/,
    );
  });
});

describe('2026-07-28 requests the specification has servers refuse', () => {
  test('Mcp-Method or Mcp-Name contradicting the body, or Mcp-Method missing: 400 with -32020', async () => {
    for (const endpoint of endpoints()) {
      const call = modern('tools/call', { name: 'get_opt_in_summary', arguments: {} }, 7);
      for (const [label, headers, pattern] of [
        [
          'Mcp-Method names another method',
          { ...call.headers, 'mcp-method': 'tools/list' },
          /the body names method tools\/call but the Mcp-Method header names tools\/list/,
        ],
        [
          'Mcp-Name names another tool',
          { ...call.headers, 'mcp-name': 'list_playbook_opt_ins' },
          /params\.name="get_opt_in_summary" but the Mcp-Name header names "list_playbook_opt_ins"/,
        ],
        [
          'no Mcp-Method',
          { 'mcp-protocol-version': '2026-07-28', 'mcp-name': 'get_opt_in_summary' },
          /required Mcp-Method header is absent/,
        ],
        [
          'MCP-Protocol-Version contradicting the envelope',
          { ...call.headers, 'mcp-protocol-version': '2025-11-25' },
          /names protocol version 2026-07-28 but the MCP-Protocol-Version header names 2025-11-25/,
        ],
      ] as const) {
        const response = await post(endpoint.url, { authorization: endpoint.auth, ...headers }, call.body);
        assert.equal(response.status, 400, `${endpoint.label}: ${label}`);
        assert.equal(response.headers.get('cache-control'), 'no-store');
        assert.equal(response.body.id, 7);
        assert.equal(response.body.error.code, -32020, `${endpoint.label}: ${label}: ${JSON.stringify(response.body)}`);
        assert.match(response.body.error.message, pattern, label);
      }
      // Sanity: the same call with the headers that match is served.
      const served = await post(endpoint.url, { authorization: endpoint.auth, ...call.headers }, call.body);
      assert.equal(served.status, 200, JSON.stringify(served.body));
      assert.equal(served.body.result.isError, undefined);
    }
  });

  test('an envelope naming an unknown revision is -32022 listing the supported one; a 2026 header without the envelope -32602', async () => {
    const unknown = modern('tools/list');
    const later = { ...unknown.body, params: { _meta: { ...ENVELOPE, 'io.modelcontextprotocol/protocolVersion': '2027-01-01' } } };
    const refused = await post(
      hubUrl,
      { authorization: `Bearer ${hubKey}`, ...unknown.headers, 'mcp-protocol-version': '2027-01-01' },
      later,
    );
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.code, -32022);
    assert.deepEqual(refused.body.error.data, { supported: ['2026-07-28'], requested: '2027-01-01' });

    const bare = await post(
      hubUrl,
      { authorization: `Bearer ${hubKey}`, ...unknown.headers },
      { jsonrpc: '2.0', id: 3, method: 'tools/list', params: {} },
    );
    assert.equal(bare.status, 400);
    assert.equal(bare.body.error.code, -32602);
    assert.match(bare.body.error.message, /missing the required per-request envelope/);
  });
});

describe('auth failures on the 2026-07-28 leg are those of the 2025 leg', () => {
  test('main MCP: no token, or a token for the REST API, is 401 with resource_metadata', async () => {
    const prm = `${live.baseUrl}/.well-known/oauth-protected-resource/mcp`;
    const discover = modern('server/discover');
    for (const [label, headers, withError] of [
      ['no token', {}, false],
      ['REST API token', { authorization: `Bearer ${restToken}` }, true],
    ] as const) {
      const response = await post(mainUrl, { ...headers, ...discover.headers }, discover.body);
      assert.equal(response.status, 401, label);
      assert.equal(response.body.error, 'invalid_token', label);
      const challenge = response.headers.get('www-authenticate') ?? '';
      assert.ok(challenge.includes(`resource_metadata="${prm}"`), challenge);
      assert.ok(challenge.includes('scope="service:full"'), challenge);
      assert.equal(/error="invalid_token"/.test(challenge), withError, challenge);
    }
    await assert.rejects(modernClient(mainUrl, { token: restToken }), (error: unknown) => {
      assert.ok(error instanceof SdkHttpError, String(error));
      assert.equal(error.status, 401);
      return true;
    });
  });

  test('Hub MCP: no key or a revoked one is 403 invalid_api_key, without a challenge', async () => {
    const discover = modern('server/discover');
    for (const [label, headers] of [
      ['no key', {}],
      ['revoked key', { authorization: `Bearer ${revokedKey}` }],
    ] as const) {
      const response = await post(hubUrl, { ...headers, ...discover.headers }, discover.body);
      assert.equal(response.status, 403, label);
      assert.equal(response.body.error, 'invalid_api_key', label);
      assert.equal(response.headers.get('www-authenticate'), null, label);
    }
    await assert.rejects(modernClient(hubUrl, { token: revokedKey }), (error: unknown) => {
      assert.ok(error instanceof SdkHttpError, String(error));
      assert.equal(error.status, 403);
      // The SDK keeps our answer's body, for the host to show.
      assert.match(String(error.data.text), /"error":"invalid_api_key"/);
      return true;
    });
  });
});
