import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createKey, revokeKey } from '../../src/domain/api-keys/api-key.service.ts';
import { startApp, readKey, type TestApp } from '../support/app.ts';
import * as fx from '../support/world.ts';

// End-to-end over HTTP (app.inject) against a real PostgreSQL: every endpoint, every error status,
// and tenancy between two hubs of different accounts.

let t: TestApp;
let key: string; // read key of hub h1
let otherKey: string; // read key of hub h2

before(async () => {
  t = await startApp({ now: '2026-11-21T12:00:00.000Z' });
  const db = t.db;
  await fx.account(db, 'acc_1');
  await fx.account(db, 'acc_2');
  await fx.hub(db, 'h1', 'acc_1');
  await fx.hub(db, 'h2', 'acc_2');
  await fx.hub(db, 'h3', 'acc_1', true); // suspended
  await fx.field(db, 'h1', 'region');
  await fx.field(db, 'h1', 'store');
  await fx.field(db, 'h1', 'legacy_code', true);
  await fx.workspace(db, 'h1', 'w1', { region: 'West', store: 12, legacy_code: 'X1' });
  await fx.workspace(db, 'h1', 'w2', {});
  await fx.workspace(db, 'h2', 'v1', { region: 'North' });
  await fx.playbook(db, 'h1', 'p1', 'Spring Promo ', ['meta', 'google_ads']);
  await fx.playbook(db, 'h1', 'p2', 'Questions');
  await fx.playbook(db, 'h2', 'q1', 'Other hub');
  await fx.optIns(db, [
    {
      id: 'o1',
      hubId: 'h1',
      playbookId: 'p1',
      workspaceId: 'w1',
      status: 'active',
      optedInAt: '2026-11-20T10:00:00Z',
      updatedAt: '2026-11-20T11:00:00.123Z',
      budgetCents: 50000,
      budgetType: 'lifetime',
      variant: { audience: 'Families' },
      responses: [{ question: 'Store hours?', answer: '9-5' }],
    },
    {
      id: 'o2',
      hubId: 'h1',
      playbookId: 'p2',
      workspaceId: 'w2',
      status: 'questions_only',
      optedInAt: '2026-11-21T08:00:00Z',
      budgetCents: null,
      budgetType: null,
    },
    { id: 'o3', hubId: 'h1', playbookId: 'p1', workspaceId: 'w2', status: 'in_review', optedInAt: '2026-10-01T00:00:00Z' },
    { id: 'x1', hubId: 'h2', playbookId: 'q1', workspaceId: 'v1', status: 'active', optedInAt: '2026-11-21T09:00:00Z' },
  ]);
  await fx.adAccount(db, 'h1', 'a1', 'idle', '2026-11-21T10:00:00Z');
  await fx.adAccount(db, 'h2', 'b1', 'idle', '2026-11-21T11:00:00Z');
  await fx.spend(db, [
    { hubId: 'h1', adAccountId: 'a1', workspaceId: 'w1', date: '2026-11-20', cents: 1000 },
    { hubId: 'h1', adAccountId: 'a1', workspaceId: 'w1', date: '2026-10-01', cents: 300 },
    { hubId: 'h1', adAccountId: 'a1', workspaceId: null, date: '2026-11-21', cents: 25 },
    { hubId: 'h2', adAccountId: 'b1', workspaceId: 'v1', date: '2026-11-20', cents: 99999 },
  ]);
  key = await readKey(db, 'h1');
  otherKey = await readKey(db, 'h2');
});

after(async () => {
  await t.close();
});

describe('GET /playbook-opt-ins', () => {
  test('returns rows in the documented shape, ordered by (updatedAt, id)', async () => {
    const r = await t.hubGet('/playbook-opt-ins', key);
    assert.equal(r.status, 200);
    assert.match(String(r.headers['content-type']), /^application\/json/);
    // A read with a validator: the caller's own cache may keep it, revalidating every time.
    assert.equal(r.headers['cache-control'], 'private, no-cache, must-revalidate');
    assert.deepEqual(
      r.body.data.map((row: { id: string }) => row.id),
      ['o3', 'o1', 'o2'],
    );
    assert.equal(r.body.nextCursor, null);
    assert.deepEqual(r.body.data[1], {
      id: 'o1',
      playbook: { id: 'p1', name: 'Spring Promo ', solutions: ['meta', 'google_ads'] },
      workspace: { id: 'w1', name: 'Workspace w1', fields: { region: 'West', store: 12 } },
      status: 'active',
      optedInAt: '2026-11-20T10:00:00.000Z',
      updatedAt: '2026-11-20T11:00:00.123Z',
      budgetCents: 50000,
      budgetType: 'lifetime',
      variant: { audience: 'Families' },
      responses: [{ question: 'Store hours?', answer: '9-5' }],
    });
    const questionsOnly = r.body.data[2];
    assert.equal(questionsOnly.budgetCents, null);
    assert.equal(questionsOnly.budgetType, null);
    assert.deepEqual(questionsOnly.workspace.fields, {});
  });

  test('filters by since (inclusive, date or timestamp with offset), playbookId and status', async () => {
    const ids = async (query: string) => (await t.hubGet(`/playbook-opt-ins?${query}`, key)).body.data.map((row: { id: string }) => row.id);
    assert.deepEqual(await ids('since=2026-11-20T11:00:00.123Z'), ['o1', 'o2']);
    assert.deepEqual(await ids('since=2026-11-20T11:00:00.124Z'), ['o2']);
    assert.deepEqual(await ids('since=2026-11-20T12:00:00.123%2B01:00'), ['o1', 'o2']);
    assert.deepEqual(await ids('since=2026-11-21'), ['o2']);
    assert.deepEqual(await ids('playbookId=p1'), ['o3', 'o1']);
    assert.deepEqual(await ids('status=questions_only'), ['o2']);
    assert.deepEqual(await ids('playbookId=p1&status=active'), ['o1']);
    assert.deepEqual(await ids('playbookId=does-not-exist'), []);
    assert.deepEqual(await ids('unknownParam=1&limit=1'), ['o3'], 'unknown parameters are ignored');
  });

  test('pages with limit and cursor until nextCursor is null', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor ? `limit=2&cursor=${cursor}` : 'limit=2';
      const r = await t.hubGet(`/playbook-opt-ins?${query}`, key);
      assert.equal(r.status, 200);
      seen.push(...r.body.data.map((row: { id: string }) => row.id));
      cursor = r.body.nextCursor;
      pages++;
    } while (cursor);
    assert.deepEqual(seen, ['o3', 'o1', 'o2']);
    assert.equal(pages, 2);
  });

  test('rejects each bad parameter with 400 invalid_request naming the field', async () => {
    const cases: [string, string][] = [
      ['limit=0', 'limit'],
      ['limit=501', 'limit'],
      ['limit=1.5', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=', 'limit'],
      ['limit=1&limit=2', 'limit'],
      ['status=live', 'status'],
      ['since=yesterday', 'since'],
      ['since=2026-02-30', 'since'],
      ['since=2026-11-20T10:00:00', 'since'],
      ['cursor=abc', 'cursor'],
      [`cursor=${Buffer.from('["v1","x","o1"]').toString('base64url')}`, 'cursor'],
    ];
    for (const [query, field] of cases) {
      const r = await t.hubGet(`/playbook-opt-ins?${query}`, key);
      assert.equal(r.status, 400, query);
      assert.equal(r.body.error, 'invalid_request', query);
      assert.deepEqual(
        r.body.issues.map((i: { field: string }) => i.field),
        [field],
        query,
      );
      assert.equal(typeof r.body.issues[0].message, 'string');
    }
    const both = await t.hubGet('/playbook-opt-ins?limit=0&status=nope', key);
    assert.deepEqual(both.body.issues.map((i: { field: string }) => i.field).sort(), ['limit', 'status']);
  });

  test('a cursor from another hub cannot reveal that hub: the key still reads only its own rows', async () => {
    const first = await t.hubGet('/playbook-opt-ins?limit=1', otherKey);
    assert.deepEqual(
      first.body.data.map((row: { id: string }) => row.id),
      ['x1'],
    );
    const foreign = await t.hubGet('/playbook-opt-ins?limit=1', key);
    const r = await t.hubGet(`/playbook-opt-ins?cursor=${foreign.body.nextCursor}`, otherKey);
    assert.equal(r.status, 200);
    assert.ok(r.body.data.every((row: { id: string }) => row.id === 'x1'));
  });
});

describe('tenancy', () => {
  test("a key never sees another hub's rows, counts or spend", async () => {
    const rows = await t.hubGet('/playbook-opt-ins', otherKey);
    assert.deepEqual(
      rows.body.data.map((row: { id: string }) => row.id),
      ['x1'],
    );
    assert.deepEqual((await t.hubGet('/playbook-opt-ins?playbookId=p1', otherKey)).body.data, []);
    const summary = await t.hubGet('/opt-in-summary', otherKey);
    assert.equal(summary.body.activeOptIns, 1);
    assert.equal(summary.body.periods.find((p: { period: string }) => p.period === 'today').optIns, 1);
    const spend = await t.hubGet('/spend-by-workspace', otherKey);
    assert.deepEqual(
      spend.body.workspaces.map((w: { id: string }) => w.id),
      ['v1'],
    );
    assert.equal(spend.body.totals.spendCents, 99999);
    const mine = await t.hubGet('/spend-by-workspace', key);
    assert.ok(!mine.body.workspaces.some((w: { id: string }) => w.id === 'v1'));
  });
});

describe('GET /opt-in-summary', () => {
  test('counts opt-ins by UTC day for each period and its prior period', async () => {
    const r = await t.hubGet('/opt-in-summary', key);
    assert.equal(r.status, 200);
    assert.equal(r.body.timezone, 'UTC');
    // Since when the figures are current: the hub's last counted change (the seeding, on the
    // database's clock), not the request's time.
    const changed = await t.db.kysely.selectFrom('hubs').select('opt_ins_changed_at').where('id', '=', 'h1').executeTakeFirstOrThrow();
    assert.equal(r.body.asOf, new Date(Math.max(changed.opt_ins_changed_at.getTime(), Date.parse('2026-11-21T00:00:00Z'))).toISOString());
    assert.equal(r.body.activeOptIns, 1);
    const byPeriod = Object.fromEntries(r.body.periods.map((p: { period: string }) => [p.period, p]));
    assert.deepEqual(Object.keys(byPeriod), ['today', 'yesterday', 'last_7_days', 'last_30_days']);
    assert.deepEqual(byPeriod.today, {
      period: 'today',
      startDate: '2026-11-21',
      endDate: '2026-11-21',
      optIns: 1,
      workspaces: 1,
      prior: { startDate: '2026-11-20', endDate: '2026-11-20', optIns: 1, workspaces: 1 },
    });
    assert.deepEqual(byPeriod.last_7_days, {
      period: 'last_7_days',
      startDate: '2026-11-15',
      endDate: '2026-11-21',
      optIns: 2,
      workspaces: 2,
      prior: { startDate: '2026-11-08', endDate: '2026-11-14', optIns: 0, workspaces: 0 },
    });
    assert.deepEqual(byPeriod.last_30_days.prior, { startDate: '2026-09-23', endDate: '2026-10-22', optIns: 1, workspaces: 1 });
  });
});

describe('GET /spend-by-workspace', () => {
  test('sums spend per workspace with prior period, unattributed spend and freshness', async () => {
    const r = await t.hubGet('/spend-by-workspace?period=last_30_days', key);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, {
      period: 'last_30_days',
      timezone: 'UTC',
      current: { startDate: '2026-10-23', endDate: '2026-11-21' },
      prior: { startDate: '2026-09-23', endDate: '2026-10-22' },
      asOf: '2026-11-21T10:00:00.000Z',
      freshness: 'fresh',
      totals: { spendCents: 1025, priorSpendCents: 300, unattributedSpendCents: 25, priorUnattributedSpendCents: 0 },
      workspaces: [
        { id: 'w1', name: 'Workspace w1', fields: { region: 'West', store: 12 }, spendCents: 1000, priorSpendCents: 300 },
        { id: 'w2', name: 'Workspace w2', fields: {}, spendCents: 0, priorSpendCents: 0 },
      ],
    });
    const today = await t.hubGet('/spend-by-workspace?period=today', key);
    assert.deepEqual(today.body.totals, {
      spendCents: 25,
      priorSpendCents: 1000,
      unattributedSpendCents: 25,
      priorUnattributedSpendCents: 0,
    });
    const bad = await t.hubGet('/spend-by-workspace?period=last_90_days', key);
    assert.equal(bad.status, 400);
    assert.deepEqual(
      bad.body.issues.map((i: { field: string }) => i.field),
      ['period'],
    );
  });

  test('a cached report follows new spend and freshness changes', async () => {
    const before = await t.hubGet('/spend-by-workspace?period=today', otherKey);
    assert.equal(before.body.totals.spendCents, 0);
    await fx.spend(t.db, [{ hubId: 'h2', adAccountId: 'b1', workspaceId: 'v1', date: '2026-11-21', cents: 42 }]);
    await t.db.kysely.updateTable('ad_accounts').set({ sync_state: 'syncing' }).where('id', '=', 'b1').execute();
    const afterChange = await t.hubGet('/spend-by-workspace?period=today', otherKey);
    assert.equal(afterChange.body.totals.spendCents, 42);
    assert.equal(afterChange.body.freshness, 'syncing');
    await t.db.kysely.updateTable('ad_accounts').set({ sync_state: 'idle' }).where('id', '=', 'b1').execute();
  });
});

describe('authentication and access', () => {
  test('missing, malformed, mistyped, unknown, embed and revoked keys get 401 invalid_api_key', async () => {
    const embed = await readKey(t.db, 'h1', 'embed');
    const revoked = await createKey(t.db, { hubId: 'h1', name: 'to revoke' });
    await revokeKey(t.db, revoked.id);
    const mistyped = key.slice(0, 20) + (key[20] === 'a' ? 'b' : 'a') + key.slice(21);
    const unknown = (await createKey(t.db, { hubId: 'h1', name: 'deleted' })).key;
    await t.db.kysely.deleteFrom('api_keys').where('name', '=', 'deleted').execute();
    for (const [label, k] of [
      ['missing', undefined],
      ['malformed', 'not-a-key'],
      ['mistyped', mistyped],
      ['unknown', unknown],
      ['embed', embed],
      ['revoked', revoked.key],
    ] as const) {
      const r = await t.hubGet('/playbook-opt-ins', k);
      assert.equal(r.status, 401, label);
      assert.equal(r.body.error, 'invalid_api_key', label);
      assert.ok(r.headers['ratelimit-policy'], `${label}: RateLimit-Policy present`);
      assert.ok(!JSON.stringify(r.body).includes(key), 'no key echoed');
    }
    const basic = await t.hubGet('/playbook-opt-ins', undefined, { authorization: `Basic ${Buffer.from(`x:${key}`).toString('base64')}` });
    assert.equal(basic.status, 401);
  });

  test('revocation takes effect on the next request, whatever the request', async () => {
    // A key seen before has its verdict read in the same round trip as the request's data (or
    // on its own when the request reads none that way): the data of a revoked key's request
    // must never come back, and its 401 wins over a 400.
    const paths = ['/playbook-opt-ins?limit=2', '/opt-in-summary', '/spend-by-workspace?period=today', '/playbook-opt-ins?limit=0'];
    for (const path of paths) {
      const created = await createKey(t.db, { hubId: 'h1', name: 'short-lived' });
      assert.equal((await t.hubGet('/playbook-opt-ins?limit=1', created.key)).status, 200);
      await revokeKey(t.db, created.id);
      const r = await t.hubGet(path, created.key);
      assert.equal(r.status, 401, path);
      assert.deepEqual(Object.keys(r.body).sort(), ['error', 'message'], `${path}: an error and nothing else`);
    }
  });

  test('a suspended hub gets 403 hub_access_suspended, and access returns on resume', async () => {
    const suspendedKey = await readKey(t.db, 'h3');
    const r = await t.hubGet('/playbook-opt-ins', suspendedKey);
    assert.equal(r.status, 403);
    assert.equal(r.body.error, 'hub_access_suspended');
    await t.db.kysely.updateTable('hubs').set({ suspended: false }).where('id', '=', 'h3').execute();
    assert.equal((await t.hubGet('/playbook-opt-ins', suspendedKey)).status, 200);
    await t.db.kysely.updateTable('hubs').set({ suspended: true }).where('id', '=', 'h3').execute();
    assert.equal((await t.hubGet('/playbook-opt-ins', suspendedKey)).status, 403);
  });

  test('browser requests are refused with 403 and no CORS headers', async () => {
    for (const headers of [
      { origin: 'https://evil.example' },
      { 'sec-fetch-mode': 'cors', 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-mode': 'cors', 'sec-fetch-site': 'same-site' },
      { origin: 'http://hubops.test', 'sec-fetch-mode': 'cors', 'sec-fetch-site': 'same-origin' },
    ] as Record<string, string>[]) {
      const r = await t.hubGet('/playbook-opt-ins', key, headers);
      assert.equal(r.status, 403);
      assert.equal(r.body.error, 'browser_request_rejected');
      assert.equal(r.headers['access-control-allow-origin'], undefined);
    }
    // A page of this server (the API reference's Try it out): a same-origin GET carries no Origin.
    const ownPage = await t.hubGet('/playbook-opt-ins', key, { 'sec-fetch-mode': 'cors', 'sec-fetch-site': 'same-origin' });
    assert.equal(ownPage.status, 200, 'a same-origin fetch from our own docs page');
    const nodeFetch = await t.hubGet('/playbook-opt-ins', key, { 'sec-fetch-mode': 'cors' });
    assert.equal(nodeFetch.status, 200, "Node's fetch sends Sec-Fetch-Mode: cors without Sec-Fetch-Site: a server, not a browser");
    const preflight = await t.app.fastify.inject({
      method: 'OPTIONS',
      url: '/v1/hub/playbook-opt-ins',
      headers: {
        origin: 'https://evil.example',
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'authorization',
      },
    });
    assert.equal(preflight.statusCode, 403);
    assert.equal(preflight.json().error, 'browser_request_rejected');
    assert.equal(preflight.headers['access-control-allow-origin'], undefined);
  });

  test('writes are refused with 405 and unknown paths with 404, as JSON', async () => {
    const post = await t.app.fastify.inject({
      method: 'POST',
      url: '/v1/hub/playbook-opt-ins',
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(post.statusCode, 405);
    assert.equal(post.headers.allow, 'GET, HEAD');
    const missing = await t.hubGet('/nope', key);
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error, 'not_found');
  });
});

describe('rate limits', () => {
  test('the 121st request in a window gets 429 with Retry-After; RateLimit headers on every response', async () => {
    const k = await readKey(t.db, 'h1');
    for (let i = 1; i <= 120; i++) {
      const r = await t.hubGet('/playbook-opt-ins?limit=1', k);
      assert.equal(r.status, 200, `request ${i}`);
      assert.equal(r.headers['ratelimit-policy'], '"per-key";q=120;w=60');
      assert.match(String(r.headers.ratelimit), new RegExp(`^"per-key";r=${120 - i};t=\\d+$`));
    }
    const limited = await t.hubGet('/playbook-opt-ins?limit=1', k);
    assert.equal(limited.status, 429);
    assert.equal(limited.body.error, 'rate_limited');
    assert.ok(Number(limited.headers['retry-after']) >= 1 && Number(limited.headers['retry-after']) <= 60);
    assert.match(String(limited.headers.ratelimit), /^"per-key";r=0;t=\d+$/);
    t.clock.advance(60_001);
    assert.equal((await t.hubGet('/playbook-opt-ins?limit=1', k)).status, 200, 'the window rolls on');
  });

  test('a key revoked while over its limit hears 401, not 429', async () => {
    const created = await createKey(t.db, { hubId: 'h1', name: 'busy then revoked' });
    for (let i = 1; i <= 120; i++) assert.equal((await t.hubGet('/playbook-opt-ins?limit=1', created.key)).status, 200, `request ${i}`);
    assert.equal((await t.hubGet('/playbook-opt-ins?limit=1', created.key)).status, 429);
    await revokeKey(t.db, created.id);
    const refused = await t.hubGet('/playbook-opt-ins?limit=1', created.key);
    assert.equal(refused.status, 401);
    assert.equal(refused.body.error, 'invalid_api_key');
  });

  test('the 21st summary request in a window gets 429, with both policies in the headers', async () => {
    const k = await readKey(t.db, 'h1');
    for (let i = 1; i <= 20; i++) {
      const r = await t.hubGet('/opt-in-summary', k);
      assert.equal(r.status, 200, `request ${i}`);
      assert.equal(r.headers['ratelimit-policy'], '"per-key";q=120;w=60, "opt-in-summary";q=20;w=60');
    }
    const limited = await t.hubGet('/opt-in-summary', k);
    assert.equal(limited.status, 429);
    assert.ok(Number(limited.headers['retry-after']) >= 1);
    assert.equal((await t.hubGet('/spend-by-workspace', k)).status, 200, 'each endpoint has its own 20');
    assert.equal((await t.hubGet('/playbook-opt-ins', k)).status, 200, 'the other endpoints still answer');
  });

  test('repeated failed authentications from one address get 429', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 32; i++)
      statuses.push(
        (
          await t.app.fastify.inject({
            method: 'GET',
            url: '/v1/hub/opt-in-summary',
            headers: { authorization: 'Bearer hubops_guess' },
            remoteAddress: '203.0.113.9',
          })
        ).statusCode,
      );
    assert.deepEqual(statuses.slice(0, 30), Array(30).fill(401));
    assert.deepEqual(statuses.slice(30), [429, 429]);
    const from = (k: string) =>
      t.app.fastify.inject({
        method: 'GET',
        url: '/v1/hub/playbook-opt-ins?limit=1',
        headers: { authorization: `Bearer ${k}` },
        remoteAddress: '203.0.113.9',
      });
    // A key in use (admitted before) keeps working behind the same address: one broken tool
    // behind an office NAT must not lock out the others.
    assert.equal((await from(key)).statusCode, 200, 'a key already admitted is not locked out');
    // A key never admitted here is refused unread while the address is blocked: guesses are not tried.
    const unseen = await readKey(t.db, 'h1');
    const blocked = await from(unseen);
    assert.equal(blocked.statusCode, 429);
    assert.match(String(blocked.headers.ratelimit), /^"failed-auth";r=0;t=\d+$/);
    t.clock.advance(60_001);
    assert.equal((await from(unseen)).statusCode, 200, 'the block lifts with the window');
  });

  test('a refused request consumes nothing: not from the window that refused it, nor from the ones it passed', async () => {
    const k = await readKey(t.db, 'h1');
    for (let i = 1; i <= 20; i++) {
      const r = await t.hubGet('/opt-in-summary', k);
      assert.equal(r.status, 200, `request ${i}`);
      assert.equal(r.headers.ratelimit, `"per-key";r=${120 - i};t=60, "opt-in-summary";r=${20 - i};t=60`);
    }
    for (let i = 1; i <= 5; i++) {
      const refused = await t.hubGet('/opt-in-summary', k);
      assert.equal(refused.status, 429, `refused ${i}`);
      assert.equal(refused.headers.ratelimit, '"per-key";r=100;t=60, "opt-in-summary";r=0;t=60', `refused ${i}: per-key stays at 100`);
      assert.equal(refused.headers['retry-after'], '60');
    }
    assert.equal((await t.hubGet('/playbook-opt-ins?limit=1', k)).headers.ratelimit, '"per-key";r=99;t=60');
    t.clock.advance(60_001);
    const back = await t.hubGet('/opt-in-summary', k);
    assert.equal(back.status, 200);
    assert.equal(back.headers.ratelimit, '"per-key";r=119;t=60, "opt-in-summary";r=19;t=60', 'the full quota is back');
  });
});

describe('operations endpoints', () => {
  test('OpenAPI 3.1 document describes the three operations and their two CSV exports with the validating schemas', async () => {
    const r = await t.hubGet('/openapi.json', undefined);
    assert.equal(r.status, 200);
    assert.equal(r.body.openapi, '3.1.0');
    assert.equal(r.body.servers[0].url, 'http://hubops.test/v1/hub');
    assert.deepEqual(Object.keys(r.body.paths).sort(), [
      '/opt-in-summary',
      '/playbook-opt-ins',
      '/playbook-opt-ins.csv',
      '/spend-by-workspace',
      '/spend-by-workspace.csv',
    ]);
    const list = r.body.paths['/playbook-opt-ins'].get;
    const query = list.parameters.filter((p: { in: string }) => p.in === 'query');
    assert.deepEqual(
      query.map((p: { name: string }) => p.name),
      ['since', 'playbookId', 'status', 'limit', 'cursor'],
    );
    const limit = list.parameters.find((p: { name: string }) => p.name === 'limit');
    assert.deepEqual([limit.schema.minimum, limit.schema.maximum, limit.schema.default], [1, 500, 100]);
    assert.equal(list.parameters.find((p: { name: string }) => p.name === 'status').schema.enum.length, 13);
    for (const status of ['200', '400', '401', '403', '429']) assert.ok(list.responses[status], status);
    assert.ok(r.body.components.securitySchemes.bearer);
  });

  test('health and readiness', async () => {
    assert.equal((await t.app.fastify.inject('/healthz')).statusCode, 200);
    assert.deepEqual((await t.app.fastify.inject('/readyz')).json(), { status: 'ready' });
  });
});
