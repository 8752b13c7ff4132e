import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { createUser } from '../../src/domain/tenancy/tenancy.service.ts';
import { REVOCATION_CHANNEL } from '../../src/db/revocation-feed.ts';
import { startApp, type TestApp } from '../support/app.ts';
import * as fx from '../support/world.ts';
import { api, authorize, Browser, exchangeCode, REDIRECT, refresh, registerClient, type RegisteredClient } from '../support/oauth-flow.ts';

// Grants and the tokens issued from them, through a real OAuth client (oauth4webapi) on real
// HTTP and PostgreSQL: a new consent never changes what earlier tokens may reach, and one refresh
// token is consumed exactly once however many requests race.

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

describe('refresh tokens are consumed exactly once', () => {
  test('of N concurrent refreshes with one token exactly one succeeds; the rest get invalid_grant and the family is revoked', async () => {
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const N = 8;
    for (let trial = 0; trial < 6; trial++) {
      const tokens = await tokensFor(client, new Browser(), { hub: 'h1', workspace: '' });
      const outcomes = await Promise.allSettled(Array.from({ length: N }, () => refresh(live, client, tokens.refresh_token!)));
      const won = outcomes.filter((o) => o.status === 'fulfilled');
      const lost = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
      assert.equal(won.length, 1, `trial ${trial}: exactly one refresh succeeds (got ${won.length})`);
      for (const o of lost) assert.equal((o.reason as { error?: string }).error, 'invalid_grant', `trial ${trial}: ${o.reason}`);
      // Reuse was detected: nothing issued from the grant works any more, the winner's tokens included.
      const winner = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof refresh>>>).value;
      assert.equal((await api(live, '/whoami', winner.access_token)).status, 401, `trial ${trial}: the winner's access token is revoked`);
      assert.equal((await api(live, '/whoami', tokens.access_token)).status, 401, `trial ${trial}: the first access token is revoked`);
      await assert.rejects(refresh(live, client, winner.refresh_token!), (error: { error?: string }) => error.error === 'invalid_grant');
    }
  });

  test('the same holds for an authorization code: of N concurrent exchanges one gets tokens, and they are revoked', async () => {
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
