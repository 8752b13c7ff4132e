import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startApp, type TestApp } from '../support/app.ts';
import { HUB_ADMIN, seedHubAdmin } from '../support/world.ts';
import { Browser, completeAuthorization, oauth, REDIRECT, registerClient } from '../support/oauth-flow.ts';

// Text PostgreSQL cannot store (NUL, lone surrogates) sent to every OAuth endpoint and form gets
// a clean OAuth error and changes nothing — never a 500.

let live: TestApp;

before(async () => {
  live = await startApp({ listen: true, seed: (db) => seedHubAdmin(db) });
});
after(async () => {
  await live.close();
});

async function json(response: Response): Promise<{ status: number; body: any }> {
  const text = await response.text();
  try {
    return { status: response.status, body: JSON.parse(text) };
  } catch {
    return { status: response.status, body: text };
  }
}

const clientCount = async () =>
  Number(
    (
      await live.db.kysely
        .selectFrom('oauth_clients')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('hostile text on the OAuth endpoints', () => {
  test('registration: NUL or a lone surrogate in any metadata string is invalid_client_metadata; nothing is stored', async () => {
    const before = await clientCount();
    const bodies = [
      `{"client_name":"evil\\u0000name","redirect_uris":["${REDIRECT}"],"token_endpoint_auth_method":"none"}`,
      `{"client_name":"lone \\ud800 surrogate","redirect_uris":["${REDIRECT}"],"token_endpoint_auth_method":"none"}`,
      `{"client_name":"ok","client_uri":"https://example.com/\\u0000","redirect_uris":["${REDIRECT}"],"token_endpoint_auth_method":"none"}`,
      `{"client_name":"ok","contacts":["a\\u0000@example.com"],"redirect_uris":["${REDIRECT}"],"token_endpoint_auth_method":"none"}`,
      `{"client_name":"ok","redirect_uris":["${REDIRECT}?x=\\u0000"],"token_endpoint_auth_method":"none"}`,
    ];
    for (const body of bodies) {
      const response = await json(
        await fetch(live.as.registration_endpoint!, { method: 'POST', headers: { 'content-type': 'application/json' }, body }),
      );
      assert.equal(response.status, 400, `${body}: ${JSON.stringify(response.body)}`);
      assert.match(response.body.error, /^invalid_(client_metadata|redirect_uri)$/, body);
      assert.equal(typeof response.body.error_description, 'string');
    }
    assert.equal(await clientCount(), before, 'no client was stored');
  });

  test('client_id=%00 on token, revocation and authorization: invalid_client, not a 500', async () => {
    const form = (fields: Record<string, string>) => ({
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields),
    });
    for (const clientId of ['\u0000', 'abc\u0000def', '\ud800']) {
      const token = await json(
        await fetch(live.as.token_endpoint!, form({ grant_type: 'refresh_token', refresh_token: 'x', client_id: clientId })),
      );
      assert.equal(token.status, 401, JSON.stringify(token.body));
      assert.equal(token.body.error, 'invalid_client');
      const revoke = await json(await fetch(live.as.revocation_endpoint!, form({ token: 'x', client_id: clientId })));
      assert.equal(revoke.status, 401, JSON.stringify(revoke.body));
      assert.equal(revoke.body.error, 'invalid_client');
      const url = new URL(live.as.authorization_endpoint!);
      url.search = new URLSearchParams({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: REDIRECT,
        scope: 'service:full',
        code_challenge: 'x'.repeat(43),
        code_challenge_method: 'S256',
      }).toString();
      const authorization = await fetch(url, { redirect: 'manual' });
      assert.equal(authorization.status, 400);
      assert.match(await authorization.text(), /invalid_client/);
    }
  });

  test('NUL in codes, tokens and other parameters of a known client: OAuth errors', async () => {
    const client = await registerClient(live, { confidential: true, redirectUri: REDIRECT });
    const form = (fields: Record<string, string>) => ({
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: client.client.client_id, client_secret: client.secret!, ...fields }),
    });
    const code = await json(
      await fetch(
        live.as.token_endpoint!,
        form({ grant_type: 'authorization_code', code: '\u0000', redirect_uri: REDIRECT, code_verifier: 'v'.repeat(43) }),
      ),
    );
    assert.equal(code.status, 400);
    assert.equal(code.body.error, 'invalid_grant');
    const secret = await json(
      await fetch(live.as.token_endpoint!, form({ grant_type: 'refresh_token', refresh_token: 'x', client_secret: '\u0000' })),
    );
    assert.equal(secret.status, 401);
    assert.equal(secret.body.error, 'invalid_client');
    const revoke = await fetch(live.as.revocation_endpoint!, form({ token: '\u0000\ud800' }));
    assert.equal(revoke.status, 200, 'revoking an unknown token is a no-op (RFC 7009)');

    // A state that cannot be stored: the client gets invalid_request at its redirect URI.
    const url = new URL(live.as.authorization_endpoint!);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: client.client.client_id,
      redirect_uri: REDIRECT,
      scope: 'service:full',
      state: 'bad\u0000state',
      code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
      code_challenge_method: 'S256',
    }).toString();
    const result = await completeAuthorization(live, url, { ...HUB_ADMIN, redirectUri: REDIRECT });
    assert.equal(result.callback?.searchParams.get('error'), 'invalid_request', `got ${result.response.status}`);
  });

  test('NUL in any other authorization parameter or OAuth path: never a 500', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const base = {
      response_type: 'code',
      client_id: client.client.client_id,
      redirect_uri: REDIRECT,
      scope: 'service:full',
      state: 's',
      code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
      code_challenge_method: 'S256',
    };
    for (const param of [
      'redirect_uri',
      'scope',
      'code_challenge',
      'code_challenge_method',
      'resource',
      'prompt',
      'response_type',
      'response_mode',
      'nonce',
    ]) {
      const url = new URL(live.as.authorization_endpoint!);
      url.search = new URLSearchParams({ ...base, [param]: 'x\u0000y' }).toString();
      const response = await fetch(url, { redirect: 'manual' });
      assert.ok(response.status < 500, `${param}: ${response.status}`);
    }
    for (const path of ['/oauth/authorize/%00', '/oauth/interaction/%00', '/oauth/register/%00', '/oauth/interaction/%00/login']) {
      const response = await fetch(`${live.baseUrl}${path}`, {
        method: path.endsWith('login') ? 'POST' : 'GET',
        headers: { authorization: 'Bearer x' },
        redirect: 'manual',
      });
      assert.ok(response.status >= 400 && response.status < 500, `${path}: ${response.status}`);
    }
  });

  test('sign-in form: a NUL in the email is a failed sign-in (401), never a 500', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const browser = new Browser();
    const url = new URL(live.as.authorization_endpoint!);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: client.client.client_id,
      redirect_uri: REDIRECT,
      scope: 'service:full',
      code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
      code_challenge_method: 'S256',
    }).toString();
    const interaction = new URL((await browser.fetch(url.toString())).headers.get('location')!, live.baseUrl).toString();
    const csrf = /name="csrf" value="([^"]+)"/.exec(await (await browser.fetch(interaction)).text())![1]!;
    for (const email of ['ada\u0000@acme.test', '\ud800@acme.test']) {
      const response = await browser.fetch(`${interaction}/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrf, email, password: HUB_ADMIN.password }),
      });
      assert.equal(response.status, 401, email);
      assert.match(await response.text(), /do not match an account/);
    }
    const consent = await browser.fetch(`${interaction}/consent`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf, decision: 'allow', hub: '\u0000', workspace: '\u0000' }),
    });
    assert.equal(consent.status, 400, 'consent before sign-in: the form is refused cleanly');
  });
});
