import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { buildApp } from '../../src/app.ts';
import { createClient } from '../../src/domain/oauth/clients.service.ts';
import { createUser } from '../../src/domain/tenancy/tenancy.service.ts';
import { deleteExpiredArtifacts } from '../../src/surfaces/oauth/adapter.ts';
import { FAILED_AUTH_LIMIT, REFRESH_TOKEN_REUSE_LEEWAY_S } from '../../src/policy.ts';
import { startApp, type TestApp } from '../support/app.ts';
import * as fx from '../support/world.ts';
import {
  api,
  authorize,
  Browser,
  exchangeCode,
  oauth,
  openSignIn,
  REDIRECT,
  refresh,
  registerClient,
  revoke,
  type RegisteredClient,
} from '../support/oauth-flow.ts';
import { HUB_ADMIN } from '../support/world.ts';

// The OAuth 2.1 authorization server and the main API, end to end: a real OAuth client library
// (oauth4webapi), sign-in and consent driven over HTTP, real PostgreSQL.

const MEMBER = { email: 'max@acme.test', password: 'member password 1' };
const NO_API = { email: 'nia@plain.test', password: 'no api access 123' };
const OTHER = { email: 'ola@other.test', password: 'other hub user 12' };
const GUESSED = { email: 'sam@other.test', password: 'someone guesses 1' };
const UNASSIGNED = { email: 'una@acme.test', password: 'member without ws 1' };
const STARTER = { email: 'sta@acme.test', password: 'admin who starts 1' };

let live: TestApp;

before(async () => {
  live = await startApp({ listen: true });
  const db = live.db;
  await fx.account(db, 'acc_api'); // api_access true
  await db.kysely.updateTable('accounts').set({ plan: 'standard' }).where('id', '=', 'acc_api').execute();
  await db.kysely.insertInto('accounts').values({ id: 'acc_plain', name: 'No API', plan: 'standard', api_access: false }).execute();
  await fx.hub(db, 'h1', 'acc_api');
  await fx.hub(db, 'h2', 'acc_api');
  await fx.hub(db, 'hp', 'acc_plain');
  await fx.workspace(db, 'h1', 'w1');
  await fx.workspace(db, 'h1', 'w2');
  await fx.workspace(db, 'h2', 'v1');
  await fx.workspace(db, 'hp', 'p1');
  await createUser(db, { ...HUB_ADMIN, firstname: 'Ada', lastname: 'Lee', hubId: 'h1', role: 'hub_admin' });
  await createUser(db, { ...MEMBER, firstname: 'Max', lastname: 'Mo', hubId: 'h1', role: 'member', workspaceId: 'w2' });
  await createUser(db, { ...NO_API, firstname: 'Nia', lastname: 'No', hubId: 'hp', role: 'hub_admin' });
  await createUser(db, { ...OTHER, firstname: 'Ola', lastname: 'Oh', hubId: 'h2', role: 'hub_admin' });
  await createUser(db, { ...GUESSED, firstname: 'Sam', lastname: 'So', hubId: 'h2', role: 'member' });
  await createUser(db, { ...UNASSIGNED, firstname: 'Una', lastname: 'U', hubId: 'h1', role: 'member' });
  await createUser(db, { ...STARTER, firstname: 'Sta', lastname: 'S', hubId: 'h1', role: 'hub_admin', workspaceId: 'w1' });
});
after(async () => {
  await live.close();
});

async function signInAndGetTokens(registered: RegisteredClient, user = HUB_ADMIN, extra: { workspace?: string } = {}) {
  const result = await authorize(live, registered, { ...user, redirectUri: REDIRECT, ...extra });
  assert.ok(result.callback, `redirected back to the client (got ${result.response.status})`);
  return exchangeCode(live, registered, result, REDIRECT);
}

describe('authorization server metadata (RFC 8414)', () => {
  test('states exactly what is supported', async () => {
    const response = await fetch(`${live.config.siteUrl}/.well-known/oauth-authorization-server`);
    assert.equal(response.status, 200);
    const metadata = (await response.json()) as Record<string, unknown>;
    assert.equal(metadata.issuer, live.config.siteUrl);
    assert.equal(metadata.authorization_endpoint, `${live.baseUrl}/oauth/authorize`);
    assert.equal(metadata.token_endpoint, `${live.baseUrl}/oauth/token`);
    assert.equal(metadata.registration_endpoint, `${live.baseUrl}/oauth/register`);
    assert.equal(metadata.revocation_endpoint, `${live.baseUrl}/oauth/revoke`);
    assert.deepEqual(metadata.code_challenge_methods_supported, ['S256']);
    assert.deepEqual(metadata.scopes_supported, ['service:full']);
    assert.deepEqual(metadata.grant_types_supported, ['authorization_code', 'refresh_token']);
    assert.deepEqual(metadata.token_endpoint_auth_methods_supported, ['client_secret_post', 'none']);
    assert.deepEqual(metadata.response_types_supported, ['code']);
    assert.equal(metadata.authorization_response_iss_parameter_supported, true);
  });
});

describe('public client (PKCE, no secret)', () => {
  test('sign-in, consent, code, API calls, refresh with rotation, revocation', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT, name: 'Public Tool' });
    assert.equal(client.secret, undefined);
    const result = await authorize(live, client, { ...HUB_ADMIN, redirectUri: REDIRECT });
    assert.equal(result.callback?.searchParams.get('iss'), live.config.siteUrl, 'iss in the authorization response');
    assert.equal(result.callback?.searchParams.get('state'), result.state);
    assert.match(result.pages[1]!, /Public Tool/, 'the consent page names the client');
    assert.match(result.pages[1]!, /ada@acme\.test/, 'and the user');
    const tokens = await exchangeCode(live, client, result, REDIRECT);
    assert.equal(tokens.expires_in, 3600);
    assert.equal(tokens.scope, 'service:full');
    assert.ok(tokens.refresh_token, 'refresh token issued without offline_access');

    const whoami = await api(live, '/whoami', tokens.access_token);
    assert.equal(whoami.status, 200);
    const adaId = (await live.db.kysely.selectFrom('users').select('id').where('email', '=', HUB_ADMIN.email).executeTakeFirstOrThrow()).id;
    assert.deepEqual(whoami.body, {
      user: { _id: adaId, email: HUB_ADMIN.email, firstname: 'Ada', lastname: 'Lee' },
      workspace: null,
      hub: { _id: 'h1', name: 'Hub h1' },
      scope: 'service:full',
      clientId: client.client.client_id,
    });
    const workspaces = await api(live, '/workspaces', tokens.access_token);
    assert.deepEqual(
      workspaces.body.data.map((w: { _id: string }) => w._id),
      ['w1', 'w2'],
    );
    assert.equal((await api(live, '/workspaces/w1', tokens.access_token)).body.name, 'Workspace w1');
    assert.equal((await api(live, '/workspaces/v1', tokens.access_token)).status, 404, "another hub's workspace is not found");
    assert.deepEqual(
      (await api(live, '/hubs', tokens.access_token)).body.data.map((h: { _id: string }) => h._id),
      ['h1', 'h2'],
    );

    const rotated = await refresh(live, client, tokens.refresh_token!);
    assert.notEqual(rotated.refresh_token, tokens.refresh_token, 'refresh tokens rotate on every use');
    assert.equal((await api(live, '/whoami', rotated.access_token)).status, 200);

    await revoke(live, client, rotated.access_token);
    const afterRevoke = await api(live, '/whoami', rotated.access_token);
    assert.equal(afterRevoke.status, 401);
    assert.equal(afterRevoke.body.error, 'invalid_token');
    assert.match(afterRevoke.headers.get('www-authenticate') ?? '', /^Bearer .*error="invalid_token"/);

    await revoke(live, client, rotated.refresh_token!);
    await assert.rejects(
      refresh(live, client, rotated.refresh_token!),
      (error: Error & { error?: string }) => error.error === 'invalid_grant',
    );
  });

  test('reusing a rotated refresh token after the reuse leeway revokes the whole grant, the newer tokens with it', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const first = await signInAndGetTokens(client);
    const second = await refresh(live, client, first.refresh_token!);
    assert.equal((await api(live, '/whoami', second.access_token)).status, 200, 'the newer token works (and its verdict is now cached)');
    // As if it had rotated longer ago than the leeway (which runs on the database's clock).
    await sql`UPDATE oauth_artifacts SET consumed_at = now() - make_interval(secs => ${REFRESH_TOKEN_REUSE_LEEWAY_S + 1})
               WHERE model = 'RefreshToken' AND consumed_at IS NOT NULL`.execute(live.db.kysely);
    await assert.rejects(
      refresh(live, client, first.refresh_token!),
      (error: Error & { error?: string }) => error.error === 'invalid_grant',
    );
    assert.equal((await api(live, '/whoami', second.access_token)).status, 401, 'the newer access token is revoked');
    await assert.rejects(
      refresh(live, client, second.refresh_token!),
      (error: Error & { error?: string }) => error.error === 'invalid_grant',
    );
  });
});

describe('confidential client (client_secret_post)', () => {
  test('full flow; the secret and tokens are stored only as hashes', async () => {
    const client = await registerClient(live, { confidential: true, redirectUri: REDIRECT, name: 'Server App' });
    assert.ok(client.secret && client.secret.length >= 43);
    const tokens = await signInAndGetTokens(client);
    assert.equal((await api(live, '/whoami', tokens.access_token)).body.clientId, client.client.client_id);
    const refreshed = await refresh(live, client, tokens.refresh_token!);
    assert.equal((await api(live, '/whoami', refreshed.access_token)).status, 200);

    const stored = await live.db.kysely
      .selectFrom('oauth_clients')
      .select('metadata')
      .where('client_id', '=', client.client.client_id)
      .executeTakeFirstOrThrow();
    assert.match(String(stored.metadata.client_secret), /^sha256:[0-9a-f]{64}$/);
    const dump = (
      await sql<{ t: string }>`SELECT string_agg(payload::text || encode(id_hash, 'hex'), ' ') AS t FROM oauth_artifacts`.execute(
        live.db.kysely,
      )
    ).rows[0]!.t;
    for (const secret of [tokens.access_token, tokens.refresh_token!, refreshed.access_token, refreshed.refresh_token!]) {
      assert.ok(!dump.includes(secret), 'no token is stored in plaintext');
    }

    const wrongSecret: RegisteredClient = { ...client, clientAuth: oauth.ClientSecretPost('not-the-secret') };
    await assert.rejects(
      refresh(live, wrongSecret, refreshed.refresh_token!),
      (error: Error & { error?: string }) => error.error === 'invalid_client',
    );
  });
});

describe('pre-provisioned client (hubops clients create)', () => {
  test('works through the whole flow like a registered one', async () => {
    const provisioned = await createClient(live.db, { name: 'Account Manager Tool', redirectUris: [REDIRECT], public: false });
    const registered: RegisteredClient = {
      client: { client_id: provisioned.client_id },
      clientAuth: oauth.ClientSecretPost(provisioned.client_secret!),
      secret: provisioned.client_secret,
    };
    const result = await authorize(live, registered, { ...HUB_ADMIN, redirectUri: REDIRECT });
    assert.match(result.pages[1]!, /Account Manager Tool/);
    const tokens = await exchangeCode(live, registered, result, REDIRECT);
    assert.equal((await api(live, '/whoami', tokens.access_token)).body.clientId, provisioned.client_id);
    assert.ok((await refresh(live, registered, tokens.refresh_token!)).access_token);
  });
});

describe('revocation across instances', () => {
  test('a token revoked through one instance is refused by another that had it cached', async () => {
    const other = await buildApp({ config: live.config, db: live.db, logger: false, publisher: false });
    try {
      const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
      const tokens = await signInAndGetTokens(client);
      const viaOther = () =>
        other.fastify.inject({ method: 'GET', url: '/whoami', headers: { authorization: `Bearer ${tokens.access_token}` } });
      assert.equal((await viaOther()).statusCode, 200);
      assert.equal((await viaOther()).statusCode, 200, 'served from its cache');
      await revoke(live, client, tokens.access_token);
      // NOTIFY is asynchronous: allow a loaded CI machine up to 10 s (a quiet one takes milliseconds).
      let status = 200;
      for (const deadline = Date.now() + 10_000; status === 200 && Date.now() < deadline; ) {
        status = (await viaOther()).statusCode;
        if (status === 200) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.equal(status, 401, 'the NOTIFY emptied the other instance’s cache');
    } finally {
      await other.close();
    }
  });
});

describe('token verdict cache', () => {
  test('is used: a token row deleted behind the server’s back (no revocation, no NOTIFY) still serves until the cache drops it', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const tokens = await signInAndGetTokens(client);
    assert.equal((await api(live, '/whoami', tokens.access_token)).status, 200);
    await sql`DELETE FROM oauth_artifacts WHERE model = 'AccessToken'`.execute(live.db.kysely);
    assert.equal((await api(live, '/whoami', tokens.access_token)).status, 200, 'served from the cache');
    await revoke(live, client, tokens.refresh_token!); // revokes the grant: every instance's cache is emptied
    assert.equal((await api(live, '/whoami', tokens.access_token)).status, 401);
  });
});

describe('expired artifacts', () => {
  test('are deleted an hour after they expire; live ones stay', async () => {
    await sql`INSERT INTO oauth_artifacts (model, id_hash, payload, expires_at) VALUES
      ('AccessToken', '\\x01', '{}', now() - interval '2 hours'),
      ('AccessToken', '\\x02', '{}', now() - interval '10 minutes'),
      ('AccessToken', '\\x03', '{}', now() + interval '1 hour')`.execute(live.db.kysely);
    assert.ok((await deleteExpiredArtifacts(live.db)) >= 1);
    const left = await sql<{
      h: string;
    }>`SELECT encode(id_hash, 'hex') AS h FROM oauth_artifacts WHERE id_hash IN ('\\x01', '\\x02', '\\x03') ORDER BY 1`.execute(
      live.db.kysely,
    );
    assert.deepEqual(
      left.rows.map((r) => r.h),
      ['02', '03'],
    );
  });
});

describe('refusals', () => {
  test('plain PKCE is refused', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const result = await authorize(live, client, { ...HUB_ADMIN, redirectUri: REDIRECT, challengeMethod: 'plain' });
    assert.equal(result.callback?.searchParams.get('error'), 'invalid_request');
    assert.equal(result.callback?.searchParams.get('code'), null);
  });

  test('a wrong code verifier is refused', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const result = await authorize(live, client, { ...HUB_ADMIN, redirectUri: REDIRECT });
    await assert.rejects(
      exchangeCode(live, client, { ...result, codeVerifier: oauth.generateRandomCodeVerifier() }, REDIRECT),
      (error: Error & { error?: string }) => error.error === 'invalid_grant',
    );
  });

  test('a redirect URI that does not match exactly gets an error page, never a redirect', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    for (const uri of [`${REDIRECT}/extra`, 'http://127.0.0.1:9/callback?x=1', 'http://evil.example/callback']) {
      const result = await authorize(live, client, { ...HUB_ADMIN, redirectUri: uri });
      assert.equal(result.callback, undefined);
      assert.equal(result.response.status, 400, uri);
      assert.match(result.pages[0] ?? '', /redirect_uri/);
    }
  });

  test('a replayed code is refused and revokes what the code issued', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const result = await authorize(live, client, { ...HUB_ADMIN, redirectUri: REDIRECT });
    const tokens = await exchangeCode(live, client, result, REDIRECT);
    await assert.rejects(
      exchangeCode(live, client, result, REDIRECT),
      (error: Error & { error?: string }) => error.error === 'invalid_grant',
    );
    assert.equal((await api(live, '/whoami', tokens.access_token)).status, 401);
    await assert.rejects(
      refresh(live, client, tokens.refresh_token!),
      (error: Error & { error?: string }) => error.error === 'invalid_grant',
    );
  });

  test('an expired access token is refused with invalid_token', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const tokens = await signInAndGetTokens(client);
    await sql`UPDATE oauth_artifacts SET expires_at = now() - interval '1 second',
                payload = jsonb_set(payload, '{exp}', to_jsonb(extract(epoch from now())::int - 1))
              WHERE model = 'AccessToken'`.execute(live.db.kysely);
    const response = await api(live, '/whoami', tokens.access_token);
    assert.equal(response.status, 401);
    assert.equal(response.body.error, 'invalid_token');
  });

  test('missing and malformed tokens get 401 with a Bearer challenge', async () => {
    const missing = await api(live, '/whoami', undefined);
    assert.equal(missing.status, 401);
    assert.match(missing.headers.get('www-authenticate') ?? '', /^Bearer realm="hubops"/);
    const bogus = await api(live, '/workspaces', 'not-a-real-token');
    assert.equal(bogus.status, 401);
    assert.equal(bogus.body.error, 'invalid_token');
  });

  test('Deny sends access_denied to the client', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const result = await authorize(live, client, { ...HUB_ADMIN, redirectUri: REDIRECT, decision: 'deny' });
    assert.equal(result.callback?.searchParams.get('error'), 'access_denied');
    assert.equal(result.callback?.searchParams.get('code'), null);
  });

  test('a user of an account without API access sees a refusal page and the client gets access_denied', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT, name: 'Some App' });
    const result = await authorize(live, client, { ...NO_API, redirectUri: REDIRECT });
    assert.match(result.pages[1] ?? '', /API access isn&#39;t enabled|API access isn't enabled/);
    assert.equal(result.callback?.searchParams.get('error'), 'access_denied');
  });

  test('a member pinned to a workspace gets a token bound to it and cannot read other workspaces', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const tokens = await signInAndGetTokens(client, MEMBER);
    const whoami = await api(live, '/whoami', tokens.access_token);
    assert.deepEqual(whoami.body.workspace, { _id: 'w2', name: 'Workspace w2' });
    assert.deepEqual(
      (await api(live, '/workspaces', tokens.access_token)).body.data.map((w: { _id: string }) => w._id),
      ['w2'],
    );
    assert.equal((await api(live, '/workspaces/w1', tokens.access_token)).status, 404);
  });

  test('a member not assigned to a workspace gets no token (nothing to act in, never the whole hub)', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const result = await authorize(live, client, { ...UNASSIGNED, redirectUri: REDIRECT, hub: 'h1' });
    assert.equal(result.callback?.searchParams.get('error'), 'access_denied');
    assert.equal(result.callback?.searchParams.get('code'), null);
  });

  test('a hub admin whose membership names a start workspace may still act across the whole hub', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const tokens = await signInAndGetTokens(client, STARTER, { workspace: '' });
    assert.equal((await api(live, '/whoami', tokens.access_token)).body.workspace, null);
  });

  test('a hub admin may bind a token to one workspace at consent', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const tokens = await signInAndGetTokens(client, HUB_ADMIN, { workspace: 'w1' });
    assert.deepEqual((await api(live, '/whoami', tokens.access_token)).body.workspace, { _id: 'w1', name: 'Workspace w1' });
    const foreign = await authorize(live, client, { ...HUB_ADMIN, redirectUri: REDIRECT, workspace: 'v1' });
    assert.equal(foreign.callback, undefined, 'a workspace of another hub is not accepted');
  });
});

describe('sign-in page', () => {
  test('wrong passwords are refused, then limited; pages cannot be framed and forms need the CSRF token', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const browser = new Browser();
    const interaction = await openSignIn(live, client, browser, REDIRECT);
    const page = await browser.fetch(interaction);
    assert.match(page.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
    assert.equal(page.headers.get('x-frame-options'), 'DENY');
    const html = await page.text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(html)![1]!;
    const post = (fields: Record<string, string>) =>
      browser.fetch(`${interaction}/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(fields),
      });
    assert.equal((await post({ email: GUESSED.email, password: GUESSED.password })).status, 400, 'no CSRF token, no sign-in');
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await post({ csrf, email: GUESSED.email, password: 'wrong password!' })).status);
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429]);
    assert.equal(
      (await post({ csrf, email: GUESSED.email, password: GUESSED.password })).status,
      429,
      'even the right password waits out the limit',
    );
  });
});

describe('form_post response mode', () => {
  test("the page that carries the code has our pages' security headers; its one script runs by its hash alone", async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const result = await authorize(live, client, { ...HUB_ADMIN, redirectUri: REDIRECT, responseMode: 'form_post' });
    const html = result.pages.at(-1)!;
    const code = /name="code" value="([^"]+)"/.exec(html)?.[1];
    assert.ok(code, `the form_post page carries the code: ${html.slice(0, 300)}`);
    const headers = result.response.headers;
    const policy = Object.fromEntries(
      (headers.get('content-security-policy') ?? '').split(';').map((d) => {
        const [name, ...values] = d.trim().split(/\s+/);
        return [name, values.join(' ')];
      }),
    );
    const script = /<script>([\s\S]*?)<\/script>/.exec(html)![1]!;
    assert.deepEqual(policy, {
      'default-src': "'none'",
      'script-src': `'sha256-${createHash('sha256').update(script).digest('base64')}'`,
      'form-action': 'http:',
      'frame-ancestors': "'none'",
      'base-uri': "'none'",
    });
    assert.equal(headers.get('x-frame-options'), 'DENY');
    assert.equal(headers.get('x-content-type-options'), 'nosniff');
    assert.equal(headers.get('referrer-policy'), 'no-referrer');
    assert.equal(headers.get('cache-control'), 'no-store');
    // The code still works, and oidc-provider's JSON answers carry no page policy.
    const token = await fetch(live.as.token_endpoint!, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT,
        client_id: client.client.client_id,
        code_verifier: result.codeVerifier,
      }),
    });
    assert.equal(token.status, 200, await token.clone().text());
    assert.equal(token.headers.get('content-security-policy'), null);
    assert.equal((await api(live, '/whoami', ((await token.json()) as { access_token: string }).access_token)).status, 200);
  });
});

describe('main API rate limits and errors', () => {
  test('the 61st request in a minute on the Standard plan gets 429 with Retry-After', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const tokens = await signInAndGetTokens(client, OTHER);
    for (let i = 1; i <= 60; i++) assert.equal((await api(live, '/whoami', tokens.access_token)).status, 200, `request ${i}`);
    const limited = await api(live, '/whoami', tokens.access_token);
    assert.equal(limited.status, 429);
    assert.equal(limited.body.error, 'rate_limited');
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    live.clock.advance(61_000);
    assert.equal((await api(live, '/whoami', tokens.access_token)).status, 200);
  });

  test("a 401 carries the RateLimit headers of its address's failed-authentication window; a wrong token counts, a missing one does not; the 31st is 429, a valid token still works", async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const tokens = await signInAndGetTokens(client);
    const policy = `"failed-auth";q=${FAILED_AUTH_LIMIT.limit};w=${FAILED_AUTH_LIMIT.windowMs / 1000}`;
    const remaining = (response: { headers: Headers }) => Number(/r=(\d+)/.exec(response.headers.get('ratelimit') ?? '')?.[1]);
    const missing = await api(live, '/whoami', undefined);
    assert.equal(missing.status, 401);
    assert.equal(missing.headers.get('ratelimit-policy'), policy);
    assert.equal(remaining(missing), FAILED_AUTH_LIMIT.limit, 'a missing token is shown the window, not counted');
    for (let i = 1; i <= FAILED_AUTH_LIMIT.limit; i++) {
      const wrong = await api(live, '/whoami', `not-a-token-${i}`);
      assert.equal(wrong.status, 401, `attempt ${i}`);
      assert.equal(wrong.headers.get('ratelimit-policy'), policy);
      assert.equal(remaining(wrong), FAILED_AUTH_LIMIT.limit - i, `attempt ${i}`);
      assert.match(wrong.headers.get('www-authenticate') ?? '', /^Bearer .*error="invalid_token"/);
    }
    const limited = await api(live, '/whoami', 'not-a-token-again');
    assert.equal(limited.status, 429);
    assert.equal(limited.body.error, 'rate_limited');
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    assert.equal((await api(live, '/whoami', tokens.access_token)).status, 200, 'a valid token is not held back by the guesses');
    live.clock.advance(61_000);
    assert.equal((await api(live, '/whoami', 'not-a-token-later')).status, 401);
  });

  test('bad parameters get 400 naming the field; the OpenAPI document lists the operations', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const tokens = await signInAndGetTokens(client);
    const bad = await api(live, '/workspaces?limit=0&cursor=zzz', tokens.access_token);
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body.issues.map((i: { field: string }) => i.field).sort(), ['cursor', 'limit']);
    const doc = await api(live, '/openapi.json', undefined);
    assert.equal(doc.status, 200);
    assert.ok(doc.body.paths['/whoami'].get);
    assert.ok(
      doc.body.paths['/workspaces/{id}'].get.parameters.some((p: { in: string; name: string }) => p.in === 'path' && p.name === 'id'),
    );
    assert.equal(doc.body.components.securitySchemes.bearer.type, 'oauth2');
  });
});
