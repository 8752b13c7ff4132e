import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { createUser } from '../../src/domain/tenancy/tenancy.service.ts';
import { REVOCATION_CHANNEL } from '../../src/db/revocation-feed.ts';
import { REFRESH_TOKEN_REUSE_LEEWAY_S } from '../../src/policy.ts';
import { startApp, type TestApp } from '../support/app.ts';
import * as fx from '../support/world.ts';
import { api, authorize, Browser, exchangeCode, REDIRECT, refresh, registerClient, type RegisteredClient } from '../support/oauth-flow.ts';

// Grants and the tokens issued from them, through a real OAuth client (oauth4webapi) on real
// HTTP and PostgreSQL: a new consent never changes what earlier tokens may reach; a refresh token
// rotates once into one new pair however many of its client's requests race (within the reuse
// leeway), and its reuse after the leeway or by another client revokes the grant.

const ADMIN = { email: 'two@hubs.test', password: 'admin of two hubs 1' };

let live: TestApp;

before(async () => {
  live = await startApp({ listen: true });
  const db = live.db;
  await fx.account(db, 'acc_api');
  await fx.hub(db, 'h1', 'acc_api');
  await fx.hub(db, 'h2', 'acc_api');
  await fx.workspace(db, 'h1', 'w1');
  await fx.workspace(db, 'h1', 'w2');
  await fx.workspace(db, 'h2', 'v1');
  const user = await createUser(db, { ...ADMIN, firstname: 'Two', lastname: 'Hubs', hubId: 'h1', role: 'hub_admin' });
  await db.kysely.insertInto('memberships').values({ user_id: user.id, hub_id: 'h2', role: 'hub_admin', workspace_id: null }).execute();
});
after(async () => {
  await live.close();
});

async function tokensFor(client: RegisteredClient, browser: Browser, choice: { hub: string; workspace: string; prompt?: string }) {
  const result = await authorize(live, client, { ...ADMIN, redirectUri: REDIRECT, browser, ...choice });
  assert.ok(result.callback?.searchParams.get('code'), `a code (got ${result.response.status} ${result.callback})`);
  return exchangeCode(live, client, result, REDIRECT);
}

/** Empties every verdict cache, as a revocation elsewhere would: the next check reads the grant fresh. */
async function dropVerdictCaches(): Promise<void> {
  await sql`SELECT pg_notify(${REVOCATION_CHANNEL}, '')`.execute(live.db.kysely);
  await new Promise((resolve) => setTimeout(resolve, 200));
}

async function scopeOf(token: string): Promise<{ hub: string; workspace: string | null }> {
  const whoami = await api(live, '/whoami', token);
  assert.equal(whoami.status, 200, JSON.stringify(whoami.body));
  return { hub: whoami.body.hub._id, workspace: whoami.body.workspace?._id ?? null };
}

describe('a new consent makes a new grant', () => {
  test('re-consenting hub-wide, or for another hub, never widens or moves a token issued before', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const browser = new Browser();
    const a = await tokensFor(client, browser, { hub: 'h1', workspace: 'w1' });
    assert.deepEqual(await scopeOf(a.access_token), { hub: 'h1', workspace: 'w1' });

    // Same browser session, same client: the user is asked again and chooses the whole hub.
    const b = await tokensFor(client, browser, { hub: 'h1', workspace: '', prompt: 'consent' });
    assert.deepEqual(await scopeOf(b.access_token), { hub: 'h1', workspace: null }, 'the new token is hub-wide');
    assert.deepEqual(await scopeOf(a.access_token), { hub: 'h1', workspace: 'w1' }, 'token A keeps its workspace');
    await dropVerdictCaches();
    assert.deepEqual(await scopeOf(a.access_token), { hub: 'h1', workspace: 'w1' }, 'also when read fresh');
    const refreshedA = await refresh(live, client, a.refresh_token!);
    assert.deepEqual(
      await scopeOf(refreshedA.access_token),
      { hub: 'h1', workspace: 'w1' },
      'and so do the tokens its refresh token makes',
    );

    // Again, now for the other hub.
    const c = await tokensFor(client, browser, { hub: 'h2', workspace: 'v1', prompt: 'consent' });
    assert.deepEqual(await scopeOf(c.access_token), { hub: 'h2', workspace: 'v1' });
    await dropVerdictCaches();
    assert.deepEqual(await scopeOf(refreshedA.access_token), { hub: 'h1', workspace: 'w1' }, 'token A never moves to another hub');
    assert.deepEqual(await scopeOf(b.access_token), { hub: 'h1', workspace: null });
    const workspacesOfA = await api(live, '/workspaces', refreshedA.access_token);
    assert.deepEqual(
      workspacesOfA.body.data.map((w: { _id: string }) => w._id),
      ['w1'],
    );
  });

  test('the database refuses to rewrite a grant context', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    await tokensFor(client, new Browser(), { hub: 'h1', workspace: 'w2' });
    await assert.rejects(
      sql`UPDATE oauth_grant_contexts SET workspace_id = NULL WHERE workspace_id = 'w2'`.execute(live.db.kysely),
      /cannot change; a new consent makes a new grant/,
    );
  });
});

/** Moves a refresh token's rotation back in time, as if it had rotated `seconds` ago (the leeway runs on the database's clock). */
async function rotatedAgo(refreshToken: string, seconds: number): Promise<void> {
  await sql`UPDATE oauth_artifacts SET consumed_at = now() - make_interval(secs => ${seconds})
             WHERE model = 'RefreshToken' AND id_hash = sha256(convert_to(${refreshToken}, 'UTF8'))`.execute(live.db.kysely);
}

describe('refresh tokens: one new pair per rotation, reuse is theft', () => {
  test(`N concurrent refreshes with one token by its client (parallel workers, oauth4webapi) all get the same new pair, which works and rotates on`, async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const N = 10;
    for (let trial = 0; trial < 4; trial++) {
      const tokens = await tokensFor(client, new Browser(), { hub: 'h1', workspace: '' });
      const outcomes = await Promise.allSettled(Array.from({ length: N }, () => refresh(live, client, tokens.refresh_token!)));
      const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
      assert.deepEqual(
        refused.map((o) => String(o.reason)),
        [],
        `trial ${trial}: every worker gets tokens`,
      );
      const pairs = outcomes.map((o) => (o as PromiseFulfilledResult<Awaited<ReturnType<typeof refresh>>>).value);
      assert.equal(new Set(pairs.map((p) => p.refresh_token)).size, 1, `trial ${trial}: one new refresh token, not a family per worker`);
      assert.equal(new Set(pairs.map((p) => p.access_token)).size, 1, `trial ${trial}: one new access token`);
      assert.notEqual(pairs[0]!.refresh_token, tokens.refresh_token, 'it rotated');
      assert.equal((await api(live, '/whoami', pairs[0]!.access_token)).status, 200, `trial ${trial}: the new access token works`);
      assert.equal((await api(live, '/whoami', tokens.access_token)).status, 200, 'and the first one still does: nothing was revoked');
      const next = await refresh(live, client, pairs[0]!.refresh_token!);
      assert.equal((await api(live, '/whoami', next.access_token)).status, 200, `trial ${trial}: the new refresh token rotates on`);
    }
  });

  test('a retry within the leeway (its answer lost) gets the same pair; after the leeway the same token is a theft: the grant is revoked', async () => {
    const client = await registerClient(live, { confidential: true, redirectUri: REDIRECT });
    const tokens = await tokensFor(client, new Browser(), { hub: 'h1', workspace: '' });
    const first = await refresh(live, client, tokens.refresh_token!);
    const retried = await refresh(live, client, tokens.refresh_token!);
    assert.equal(retried.refresh_token, first.refresh_token);
    assert.equal(retried.access_token, first.access_token);

    await rotatedAgo(tokens.refresh_token!, REFRESH_TOKEN_REUSE_LEEWAY_S + 1);
    await assert.rejects(refresh(live, client, tokens.refresh_token!), (error: { error?: string }) => error.error === 'invalid_grant');
    assert.equal((await api(live, '/whoami', first.access_token)).status, 401, 'the newer access token is revoked');
    await assert.rejects(refresh(live, client, first.refresh_token!), (error: { error?: string }) => error.error === 'invalid_grant');
  });

  test('the leeway is counted from the rotation: a token replaced twice over is still a theft once its own rotation is past the leeway', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const tokens = await tokensFor(client, new Browser(), { hub: 'h1', workspace: 'w1' });
    const second = await refresh(live, client, tokens.refresh_token!);
    const third = await refresh(live, client, second.refresh_token!);
    await rotatedAgo(tokens.refresh_token!, REFRESH_TOKEN_REUSE_LEEWAY_S + 1);
    await assert.rejects(refresh(live, client, tokens.refresh_token!), (error: { error?: string }) => error.error === 'invalid_grant');
    assert.equal((await api(live, '/whoami', third.access_token)).status, 401, 'every token of the grant is revoked');
  });

  test('a refresh token presented by another client is a theft, within the leeway or not: refused, and its grant revoked', async () => {
    const owner = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const thief = await registerClient(live, { confidential: false, redirectUri: REDIRECT, name: 'Thief' });
    for (const rotatedFirst of [false, true]) {
      const tokens = await tokensFor(owner, new Browser(), { hub: 'h1', workspace: '' });
      const stolen = rotatedFirst ? tokens.refresh_token! : undefined;
      const current = rotatedFirst ? await refresh(live, owner, tokens.refresh_token!) : tokens;
      await assert.rejects(
        refresh(live, thief, stolen ?? current.refresh_token!),
        (error: { error?: string }) => error.error === 'invalid_grant',
      );
      assert.equal(
        (await api(live, '/whoami', current.access_token)).status,
        401,
        `rotated first: ${rotatedFirst}: the owner's tokens are revoked`,
      );
      await assert.rejects(refresh(live, owner, current.refresh_token!), (error: { error?: string }) => error.error === 'invalid_grant');
    }
  });

  test('an authorization code has no leeway: of N concurrent exchanges one gets tokens, and they are revoked', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    for (let trial = 0; trial < 3; trial++) {
      const result = await authorize(live, client, { ...ADMIN, redirectUri: REDIRECT, browser: new Browser(), hub: 'h1', workspace: '' });
      const outcomes = await Promise.allSettled(Array.from({ length: 6 }, () => exchangeCode(live, client, result, REDIRECT)));
      const won = outcomes.filter((o) => o.status === 'fulfilled');
      assert.equal(won.length, 1, `trial ${trial}: exactly one exchange succeeds (got ${won.length})`);
      for (const o of outcomes) if (o.status === 'rejected') assert.equal((o.reason as { error?: string }).error, 'invalid_grant');
      const tokens = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof exchangeCode>>>).value;
      assert.equal((await api(live, '/whoami', tokens.access_token)).status, 401, 'a replayed code revokes what it issued');
    }
  });

  test('a refresh token used once, alone, rotates normally', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const tokens = await tokensFor(client, new Browser(), { hub: 'h1', workspace: 'w2' });
    const next = await refresh(live, client, tokens.refresh_token!);
    const again = await refresh(live, client, next.refresh_token!);
    assert.deepEqual(await scopeOf(again.access_token), { hub: 'h1', workspace: 'w2' });
  });
});
