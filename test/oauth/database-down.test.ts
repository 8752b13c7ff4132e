import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startApp, type TestApp } from '../support/app.ts';
import { HUB_ADMIN, seedHubAdmin } from '../support/world.ts';
import { authorize, Browser, exchangeCode, oauth, REDIRECT, refresh, registerClient } from '../support/oauth-flow.ts';
import { captureLog } from '../support/log.ts';

// With PostgreSQL unreachable the OAuth endpoints answer 503 with Retry-After and an OAuth error
// body (an error page for the browser), never a 500; oidc-provider's server errors are logged
// with their stack and without secrets; everything works again when the database is back.

const { logger, lines } = captureLog('info');
let live: TestApp;

before(async () => {
  live = await startApp({ listen: true, logger, throughProxy: true });
});

after(async () => {
  await live?.close();
});

test('database down: every OAuth endpoint answers 503 with Retry-After, the errors are logged; then recovery', async () => {
  await seedHubAdmin(live.db);
  const client = await registerClient(live, { confidential: true, redirectUri: REDIRECT });
  const result = await authorize(live, client, { ...HUB_ADMIN, redirectUri: REDIRECT });
  const tokens = await exchangeCode(live, client, result, REDIRECT);

  // A user who reached the sign-in page just before the outage.
  const browser = new Browser();
  const started = new URL(live.as.authorization_endpoint!);
  started.search = new URLSearchParams({
    response_type: 'code',
    client_id: client.client.client_id,
    redirect_uri: REDIRECT,
    scope: 'service:full',
    code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
    code_challenge_method: 'S256',
  }).toString();
  const interaction = new URL((await browser.fetch(started.toString())).headers.get('location')!, live.baseUrl).toString();
  assert.equal((await browser.fetch(interaction)).status, 200);

  await live.proxy!.cut();
  await new Promise((resolve) => setTimeout(resolve, 100));
  const form = (fields: Record<string, string>) => ({
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields),
  });
  const authorizeUrl = new URL(live.as.authorization_endpoint!);
  authorizeUrl.search = new URLSearchParams({
    response_type: 'code',
    client_id: client.client.client_id,
    redirect_uri: REDIRECT,
    scope: 'service:full',
    code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
    code_challenge_method: 'S256',
  }).toString();
  const calls: [string, () => Promise<Response>][] = [
    [
      'token',
      () =>
        fetch(
          live.as.token_endpoint!,
          form({
            grant_type: 'refresh_token',
            refresh_token: tokens.refresh_token!,
            client_id: client.client.client_id,
            client_secret: client.secret!,
          }),
        ),
    ],
    [
      'revocation',
      () =>
        fetch(
          live.as.revocation_endpoint!,
          form({ token: tokens.access_token, client_id: client.client.client_id, client_secret: client.secret! }),
        ),
    ],
    [
      'registration',
      () =>
        fetch(live.as.registration_endpoint!, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ client_name: 'x', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }),
        }),
    ],
    ['authorization', () => fetch(authorizeUrl, { redirect: 'manual', headers: { accept: 'text/html' } })],
  ];
  for (const [name, call] of calls) {
    const response = await call();
    const text = await response.text();
    assert.equal(response.status, 503, `${name}: ${text.slice(0, 300)}`);
    assert.match(response.headers.get('retry-after') ?? '', /^\d+$/, name);
    assert.doesNotMatch(text, /ECONNREFUSED|127\.0\.0\.1|SELECT .* FROM|oauth_(artifacts|clients)|\.(ts|js):\d+/i, `${name}: no internals`);
    if (name === 'authorization') {
      assert.match(response.headers.get('content-type') ?? '', /text\/html/);
      assert.match(text, /temporarily_unavailable/);
    } else {
      assert.deepEqual(JSON.parse(text), {
        error: 'temporarily_unavailable',
        error_description: 'The service is temporarily unavailable; retry shortly.',
      });
    }
  }

  for (const [method, url] of [
    ['GET', interaction],
    ['POST', `${interaction}/login`],
  ] as const) {
    const response = await browser.fetch(url, {
      method,
      ...(method === 'POST'
        ? {
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({ email: HUB_ADMIN.email, password: HUB_ADMIN.password }),
          }
        : {}),
    });
    assert.equal(response.status, 503, `${method} sign-in page`);
    assert.match(response.headers.get('retry-after') ?? '', /^\d+$/);
  }

  const logged = lines.filter((l) => /authorization server/.test(l.msg));
  assert.ok(logged.length >= 3, `the server errors are logged (${logged.length})`);
  for (const line of logged) {
    assert.ok(line.err?.stack, 'with the stack');
    assert.ok(line.route && line.path, 'and where it happened');
  }
  const everything = JSON.stringify(lines);
  for (const secret of [client.secret!, tokens.refresh_token!, tokens.access_token])
    assert.ok(!everything.includes(secret), 'no secret in the log');

  await live.proxy!.restore();
  let refreshed: Awaited<ReturnType<typeof refresh>> | undefined;
  for (const deadline = Date.now() + 10_000; !refreshed && Date.now() < deadline; ) {
    refreshed = await refresh(live, client, tokens.refresh_token!).catch(async () => {
      await new Promise((resolve) => setTimeout(resolve, 100));
      return undefined;
    });
  }
  assert.ok(refreshed?.access_token, 'the token endpoint works again');
});
