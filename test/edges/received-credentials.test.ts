import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { readKey, startApp, type TestApp } from '../support/app.ts';
import { api, authorize, exchangeCode, REDIRECT, registerClient } from '../support/oauth-flow.ts';
import { HUB_ADMIN, seedHubAdmin } from '../support/world.ts';

// Issue 24 item 4: a refusal says what arrived and what to send instead: a Hub API key on the
// OAuth surfaces (REST, /mcp), an OAuth access token, Basic credentials or an X-API-Key header on
// the Hub API (REST and its /mcp), and a `since` whose + became a space. The secret itself is
// never echoed; the status and the WWW-Authenticate challenge stay what RFC 6750 says.

let live: TestApp;
let hubKey: string;
let accessToken: string;

before(async () => {
  live = await startApp({ listen: true, seed: (db) => seedHubAdmin(db) });
  hubKey = await readKey(live.db, 'h1');
  const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
  const result = await authorize(live, client, { ...HUB_ADMIN, redirectUri: REDIRECT });
  accessToken = (await exchangeCode(live, client, result, REDIRECT)).access_token;
});
after(async () => {
  await live.close();
});

const MCP_INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
});

/** A request with these headers; GET, or an MCP initialize POST for a path ending in /mcp. */
async function send(path: string, headers: Record<string, string>): Promise<{ status: number; headers: Headers; body: any; text: string }> {
  const mcp = path.endsWith('/mcp');
  const response = await fetch(`${live.baseUrl}${path}`, {
    method: mcp ? 'POST' : 'GET',
    headers: mcp ? { ...headers, 'content-type': 'application/json', accept: 'application/json, text/event-stream' } : headers,
    ...(mcp ? { body: MCP_INIT } : {}),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: JSON.parse(text), text };
}

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('a Hub API key on the OAuth surfaces', () => {
  for (const path of ['/workspaces', '/mcp']) {
    test(`${path}: 401 invalid_token naming a Hub API key, the key not echoed`, async () => {
      const answer = await send(path, { authorization: `Bearer ${hubKey}` });
      assert.equal(answer.status, 401);
      assert.equal(answer.body.error, 'invalid_token');
      assert.match(
        answer.body.message,
        /^This is a Hub API key \(hubops_\.\.\.\); the main API takes an OAuth access token: `Authorization: Bearer <ACCESS_TOKEN>`/,
      );
      assert.match(answer.body.message, /works only on the Hub API \(\/v1\/hub\)/);
      const challenge = answer.headers.get('www-authenticate')!;
      assert.match(challenge, /^Bearer realm="hubops"/);
      assert.match(challenge, /error="invalid_token"/);
      assert.match(challenge, /error_description="This is a Hub API key/);
      // RFC 6750: error_description is printable ASCII without " or \.
      assert.match(challenge, /^[\x20-\x7e]+$/);
      assert.ok(!answer.text.includes(hubKey.slice(7)) && !challenge.includes(hubKey.slice(7)), 'the key is not echoed');
    });
  }

  test('Basic credentials and X-API-Key on the main API: still the challenge without an error code, the message says what came', async () => {
    for (const headers of [{ authorization: basic('ada', 'secret') }, { 'x-api-key': hubKey }] as Record<string, string>[]) {
      const answer = await send('/workspaces', headers);
      assert.equal(answer.status, 401);
      assert.equal(answer.body.error, 'invalid_token');
      assert.match(
        answer.body.message,
        headers.authorization
          ? /^This request carries HTTP Basic credentials; the main API takes an OAuth access token/
          : /^An X-API-Key header is not read here; the main API takes an OAuth access token/,
      );
      assert.doesNotMatch(answer.headers.get('www-authenticate')!, /error=/);
      assert.ok(!answer.text.includes(hubKey.slice(7)));
    }
  });

  test('an access token still works there, and a missing one says "Missing access token"', async () => {
    assert.equal((await api(live, '/workspaces', accessToken)).status, 200);
    const missing = await send('/workspaces', {});
    assert.equal(missing.body.message, 'Missing access token: send `Authorization: Bearer <ACCESS_TOKEN>`.');
  });
});

describe('the Hub API refuses other credentials by name', () => {
  for (const path of ['/v1/hub/opt-in-summary', '/v1/hub/mcp']) {
    test(`${path}: an OAuth access token, Basic, X-API-Key, an embed private key`, async () => {
      const cases: [Record<string, string>, RegExp][] = [
        [
          { authorization: `Bearer ${accessToken}` },
          /^This looks like an OAuth access token, which is for the main API and its MCP server \(\/mcp\); the Hub API takes a Hub API key \(hubops_\.\.\.\): send a Hub API key as `Authorization: Bearer <HUB_API_KEY>`/,
        ],
        [
          { authorization: basic('ada', hubKey) },
          /^This request carries HTTP Basic credentials; the Hub API takes no user name or password: send a Hub API key as `Authorization: Bearer <HUB_API_KEY>`/,
        ],
        [{ authorization: basic(hubKey, '') }, /^This request carries HTTP Basic credentials/],
        [
          { 'x-api-key': hubKey },
          /^The key arrived in an X-API-Key header, which the Hub API does not read: send a Hub API key as `Authorization: Bearer <HUB_API_KEY>`/,
        ],
        [{ authorization: `Token ${hubKey}` }, /^The Authorization header is not a Bearer credential/],
        [
          { authorization: 'Bearer hubops_esk_MC4CAQAwBQYDK2VwBCIEIAbcdefghijklmnopqrstuvwxyz012345' },
          /^This is an embed key's private key \(hubops_esk_\.\.\.\): it signs embed tokens on your server and is never sent to hubops/,
        ],
      ];
      for (const [headers, message] of cases) {
        const answer = await send(path, headers);
        // The Hub MCP endpoint answers 403 without a challenge (docs/mcp.md: no OAuth dance for a fixed header).
        assert.equal(answer.status, path.endsWith('/mcp') ? 403 : 401, JSON.stringify(headers));
        assert.equal(answer.body.error, 'invalid_api_key');
        assert.match(answer.body.message, message);
        assert.equal(answer.headers.get('www-authenticate'), path.endsWith('/mcp') ? null : 'Bearer realm="hubops-hub-api"');
        assert.ok(!answer.text.includes(hubKey.slice(7)), 'the key is not echoed');
        assert.ok(!answer.text.includes(accessToken), 'the token is not echoed');
      }
    });
  }

  test('a mistyped hubops_ key and no credential keep their messages', async () => {
    assert.equal(
      (await live.hubGet('/opt-in-summary', 'hubops_not_a_real_key')).body.message,
      'The API key is not valid: it is mistyped, revoked or unknown.',
    );
    assert.equal(
      (await live.hubGet('/opt-in-summary', undefined)).body.message,
      'Missing API key: send `Authorization: Bearer <HUB_API_KEY>`.',
    );
    assert.equal((await live.hubGet('/opt-in-summary', hubKey)).status, 200);
  });
});

describe('since= whose + arrived as a space', () => {
  test('the Hub API says so and how to encode it; %2B and Z work', async () => {
    const answer = await live.hubGet('/playbook-opt-ins?since=2026-01-01T00:00:00+00:00', hubKey);
    assert.equal(answer.status, 400);
    assert.equal(answer.body.error, 'invalid_request');
    assert.deepEqual(answer.body.issues, [
      {
        field: 'since',
        message:
          'the + of the offset arrived as a space (in a query string + means a space): encode it as %2B (2026-01-01T00:00:00%2B00:00) or use Z, like 2026-11-02T09:00:00Z',
      },
    ]);
    assert.equal((await live.hubGet('/playbook-opt-ins?since=2026-01-01T00:00:00%2B00:00', hubKey)).status, 200);
    assert.equal(
      (await live.hubGet('/playbook-opt-ins?since=2026-01-01T00:00:00.5+0530', hubKey)).body.issues[0].message.includes('%2B'),
      true,
    );
    assert.equal((await live.hubGet('/playbook-opt-ins?since=2026-01-01T00:00:00Z', hubKey)).status, 200);
    // Another malformed value keeps the general message.
    assert.match((await live.hubGet('/playbook-opt-ins?since=yesterday', hubKey)).body.issues[0].message, /^must be an ISO 8601 timestamp/);
  });

  test('the main API too (posts from=)', async () => {
    const answer = await api(live, '/posts?from=2026-01-01T00:00:00+01:00', accessToken);
    assert.equal(answer.status, 400, JSON.stringify(answer.body));
    assert.match(answer.body.message, /the \+ of the offset arrived as a space/);
  });
});
