import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { createClient } from '../../src/domain/oauth/clients.service.ts';
import { CLIENT_AUTH_FAILURE_LIMIT, REGISTRATION_LIMIT } from '../../src/policy.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { HUB_ADMIN, seedHubAdmin } from '../support/world.ts';
import {
  api,
  authorize,
  exchangeCode,
  insecure,
  oauth,
  REDIRECT,
  refresh,
  registerClient,
  type RegisteredClient,
} from '../support/oauth-flow.ts';

// Scope checked before any page; dynamic registration: redirect URIs per the
// MCP authorization spec, no secret or hash on the client read endpoint, and limits on secret
// guessing and on registrations. A real client (oauth4webapi) over real HTTP.

let live: TestApp;

before(async () => {
  live = await startApp({ listen: true, seed: (db) => seedHubAdmin(db) });
});
after(async () => {
  await live.close();
});

async function register(metadata: Record<string, unknown>): Promise<{ status: number; headers: Headers; body: any }> {
  const response = await fetch(live.as.registration_endpoint!, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(metadata),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

describe('scope is checked at /authorize, before any page', () => {
  test('an unknown scope, openid alone, or openid beside service:full: invalid_scope straight back to the client', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    for (const scope of ['nonsense', 'openid', 'service:full openid', 'service:read']) {
      const url = new URL(live.as.authorization_endpoint!);
      url.search = new URLSearchParams({
        response_type: 'code',
        client_id: client.client.client_id,
        redirect_uri: REDIRECT,
        scope,
        state: 's1',
        code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
        code_challenge_method: 'S256',
      }).toString();
      const response = await fetch(url, { redirect: 'manual' });
      assert.equal(response.status, 303, scope);
      const location = new URL(response.headers.get('location')!);
      assert.equal(`${location.origin}${location.pathname}`, REDIRECT, `${scope}: no sign-in page, straight back`);
      assert.equal(location.searchParams.get('error'), 'invalid_scope', scope);
      assert.equal(location.searchParams.get('state'), 's1');
      assert.equal(location.searchParams.get('iss'), live.config.siteUrl);
    }
  });

  test('no scope means service:full (the only scope): the token carries it and works', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const result = await authorize(live, client, { ...HUB_ADMIN, redirectUri: REDIRECT, scope: null });
    assert.ok(result.callback?.searchParams.get('code'), `a code (got ${result.response.status} ${result.callback})`);
    const tokens = await exchangeCode(live, client, result, REDIRECT);
    assert.equal(tokens.scope, 'service:full');
    assert.equal((await api(live, '/whoami', tokens.access_token)).status, 200);
  });
});

describe('dynamic registration', () => {
  test('redirect URIs: https, or http to a loopback address; private-use schemes only for native apps', async () => {
    const refused = [
      { redirect_uris: ['http://example.com/cb'] },
      { redirect_uris: ['http://10.0.0.1/cb'] },
      { redirect_uris: [REDIRECT, 'http://localhost.evil.example/cb'] },
      { redirect_uris: ['myapp:/cb'], application_type: 'native' },
      { redirect_uris: ['com.example.app:/cb'] },
      { redirect_uris: ['javascript:alert(1)'], application_type: 'native' },
    ];
    for (const metadata of refused) {
      const response = await register({ client_name: 'x', token_endpoint_auth_method: 'none', ...metadata });
      assert.equal(response.status, 400, JSON.stringify(metadata));
      assert.equal(response.body.error, 'invalid_redirect_uri', JSON.stringify(response.body));
      assert.equal(typeof response.body.error_description, 'string');
    }
    const accepted = [
      { redirect_uris: ['https://app.example.com/cb'] },
      { redirect_uris: ['http://localhost:8976/callback'] },
      { redirect_uris: ['http://127.0.0.1:33418/cb'] },
      { redirect_uris: ['http://[::1]:8080/cb'] },
      { redirect_uris: ['com.example.app:/oauth/cb'], application_type: 'native' },
    ];
    for (const metadata of accepted) {
      const response = await register({ client_name: 'x', token_endpoint_auth_method: 'none', ...metadata });
      assert.equal(response.status, 201, `${JSON.stringify(metadata)}: ${JSON.stringify(response.body)}`);
    }
  });

  test('the client read endpoint (RFC 7592) returns neither the secret nor its hash', async () => {
    const created = await register({ client_name: 'Reader', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'client_secret_post' });
    assert.equal(created.status, 201);
    assert.ok(created.body.client_secret, 'the secret is shown once, at creation');
    const read = await fetch(created.body.registration_client_uri, {
      headers: { authorization: `Bearer ${created.body.registration_access_token}` },
    });
    assert.equal(read.status, 200);
    const text = await read.text();
    const body = JSON.parse(text);
    assert.equal(body.client_id, created.body.client_id);
    assert.equal(body.client_secret, undefined);
    assert.ok(!text.includes('sha256:') && !text.includes(created.body.client_secret), text);
  });

  test('failed client authentication is limited per client id and address: 429 with Retry-After, the right secret too, until the window moves', async () => {
    const client = await registerClient(live, { confidential: true, redirectUri: REDIRECT });
    const form = (secret: string) =>
      new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'x', client_id: client.client.client_id, client_secret: secret });
    const attempt = (secret: string) =>
      fetch(live.as.token_endpoint!, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: form(secret),
      });
    /** The same request from another loopback address (fetch cannot choose its source address). */
    const attemptFrom = (localAddress: string, secret: string) =>
      new Promise<number>((resolve, reject) => {
        const sent = request(
          live.as.token_endpoint!,
          { method: 'POST', localAddress, headers: { 'content-type': 'application/x-www-form-urlencoded' } },
          (response) => {
            response.resume();
            resolve(response.statusCode!);
          },
        );
        sent.on('error', reject);
        sent.end(form(secret).toString());
      });
    assert.equal((await attempt(client.secret!)).status, 400, 'right secret: authenticated (then invalid_grant); not counted');
    const statuses: number[] = [];
    for (let i = 0; i < CLIENT_AUTH_FAILURE_LIMIT.limit + 1; i++) statuses.push((await attempt(`wrong-${i}`)).status);
    assert.deepEqual(statuses, [...Array(CLIENT_AUTH_FAILURE_LIMIT.limit).fill(401), 429]);
    const limited = await attempt(client.secret!);
    assert.equal(limited.status, 429, 'even the right secret waits');
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    const body = (await limited.json()) as { error?: string; error_description?: string };
    assert.equal(body.error, 'rate_limited');
    assert.equal(typeof body.error_description, 'string');
    // A client id is public: failures from one address must not lock the client out elsewhere.
    assert.equal(await attemptFrom('127.0.0.2', client.secret!), 400, 'the same client from another address: authenticated');
    const other = await registerClient(live, { confidential: true, redirectUri: REDIRECT });
    await assert.rejects(
      refresh(live, other, 'x'),
      (error: { error?: string }) => error.error === 'invalid_grant',
      'another client is not affected',
    );
    live.clock.advance(CLIENT_AUTH_FAILURE_LIMIT.windowMs + 1_000);
    assert.equal((await attempt(client.secret!)).status, 400, 'after the window: authenticated again');
  });

  test('registrations are limited per address: 429 with Retry-After and an OAuth error body', async () => {
    live.clock.advance(REGISTRATION_LIMIT.windowMs + 1_000); // an empty window
    const statuses: number[] = [];
    for (let i = 0; i < REGISTRATION_LIMIT.limit + 1; i++) {
      statuses.push((await register({ client_name: `c${i}`, redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' })).status);
    }
    assert.deepEqual(statuses, [...Array(REGISTRATION_LIMIT.limit).fill(201), 429]);
    const limited = await register({ client_name: 'one more', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' });
    assert.equal(limited.status, 429);
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    assert.equal(limited.body.error, 'rate_limited');
    assert.equal(typeof limited.body.error_description, 'string');
    await assert.rejects(
      oauth.processDynamicClientRegistrationResponse(
        await oauth.dynamicClientRegistrationRequest(live.as, { redirect_uris: [REDIRECT] }, insecure),
      ),
    );
  });

  test('with an https BASE_URL and no TRUST_PROXY, a made-up X-Forwarded-For does not give a fresh registration window', async () => {
    const config = loadConfig({
      DATABASE_URL: live.db.url,
      LOG_LEVEL: 'silent',
      BASE_URL: 'https://hubops.example',
      DATA_DIR: live.config.dataDir,
    });
    const app = await buildApp({ config, db: live.db, logger: false, publisher: false });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < REGISTRATION_LIMIT.limit + 1; i++) {
        const response = await app.fastify.inject({
          method: 'POST',
          url: '/oauth/register',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': `203.0.113.${i}`, 'x-forwarded-proto': 'https' },
          payload: { client_name: `p${i}`, redirect_uris: ['https://app.example.com/cb'], token_endpoint_auth_method: 'none' },
        });
        statuses.push(response.statusCode);
      }
      assert.deepEqual(statuses, [...Array(REGISTRATION_LIMIT.limit).fill(201), 429]);
    } finally {
      await app.close();
    }
  });

  test('a pre-provisioned client with a private-use redirect URI (a native app) completes the flow', async () => {
    const redirect = 'com.example.app:/oauth/cb';
    const provisioned = await createClient(live.db, { name: 'Native App', redirectUris: [redirect], public: true });
    const registered: RegisteredClient = {
      client: { client_id: provisioned.client_id, token_endpoint_auth_method: 'none' },
      clientAuth: oauth.None(),
    };
    const result = await authorize(live, registered, { ...HUB_ADMIN, redirectUri: redirect });
    assert.ok(
      result.callback?.searchParams.get('code'),
      `a code at the app's URI (got ${result.response.status} ${result.pages.at(-1)?.slice(0, 300)})`,
    );
    const tokens = await exchangeCode(live, registered, result, redirect);
    assert.equal((await api(live, '/whoami', tokens.access_token)).status, 200);
  });
});
