import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { isDatabaseEmpty, seedDemo, type DemoSeed } from '../../src/domain/demo/demo.service.ts';
import { OPT_IN_STATUSES } from '../../src/domain/opt-ins/opt-in.ts';
import { FixedClock } from '../../src/platform/clock.ts';
import { verifyPassword } from '../../src/platform/password.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import { snapshot } from '../support/snapshot.ts';

const NOW = '2026-11-21T15:30:00.000Z';
const DAY = 86_400_000;
let db: TestDb;
let seed: DemoSeed;

before(async () => {
  db = await createTestDb();
  assert.equal(await isDatabaseEmpty(db), true);
  seed = await seedDemo(db, new FixedClock(NOW));
});
after(async () => {
  await db.drop();
});

test('ids, credentials and first-start detection', async () => {
  assert.equal(seed.created, true);
  assert.equal(await isDatabaseEmpty(db), false);
  assert.equal(seed.accountId, 'acc_demo');
  assert.deepEqual(seed.hubIds, ['hub_demo_brewline', 'hub_demo_pulse']);
  assert.equal(seed.workspaceIds.length, 40);
  assert.equal(seed.playbookIds.length, 8);
  assert.equal(seed.adAccountIds.length, 3);
  const account = await db.kysely
    .selectFrom('accounts')
    .select(['plan', 'api_access'])
    .where('id', '=', 'acc_demo')
    .executeTakeFirstOrThrow();
  assert.deepEqual(account, { plan: 'partner', api_access: true });
  const users = await db.kysely
    .selectFrom('users as u')
    .innerJoin('memberships as m', 'm.user_id', 'u.id')
    .select(['u.email', 'u.password_hash', 'm.hub_id', 'm.role', 'm.workspace_id'])
    .orderBy('u.email')
    .orderBy('m.hub_id')
    .execute();
  assert.deepEqual(
    users.map((u) => [u.email, u.hub_id, u.role, u.workspace_id]),
    [
      // The admin administers the second hub too: its freshness banners (docs/web-admin.md) are in reach.
      ['admin@demo.hubops.dev', seed.hubIds[0], 'hub_admin', null],
      ['admin@demo.hubops.dev', seed.hubIds[1], 'hub_admin', null],
      ['member@demo.hubops.dev', seed.hubIds[0], 'member', 'ws_demo_brewline_01'],
    ],
  );
  for (const u of users) assert.equal(await verifyPassword(seed.adminPassword, u.password_hash), true);
  const keys = await db.kysely.selectFrom('api_keys').select('id').execute();
  assert.deepEqual(keys, [], 'the seed creates no API keys');
});

test('seeding again writes nothing and returns the same ids', async () => {
  const before = await snapshot(db);
  const again = await seedDemo(db, new FixedClock(new Date(Date.parse(NOW) + 3 * DAY)));
  assert.deepEqual(again, { ...seed, created: false });
  assert.deepEqual(await snapshot(db), before);
});

test('concurrent first seeds: one writes, the others find it', async () => {
  const fresh = await createTestDb();
  try {
    const results = await Promise.all([seedDemo(fresh), seedDemo(fresh), seedDemo(fresh)]);
    assert.deepEqual(results.map((r) => r.created).sort(), [false, false, true]);
  } finally {
    await fresh.drop();
  }
});

test('workspaces: custom fields, an archived one with values, some without any', async () => {
  const fields = await db.kysely
    .selectFrom('workspace_fields')
    .select(['hub_id', 'key', 'archived'])
    .where('archived', '=', true)
    .execute();
  assert.deepEqual(fields, [{ hub_id: 'hub_demo_brewline', key: 'legacy_pos_id', archived: true }]);
  const withArchived = await sql<{ n: number }>`SELECT count(*)::int AS n FROM workspaces WHERE fields ? 'legacy_pos_id'`.execute(
    db.kysely,
  );
  assert.ok(withArchived.rows[0]!.n >= 5);
  const empty = await sql<{ n: number }>`SELECT count(*)::int AS n FROM workspaces WHERE fields = '{}'`.execute(db.kysely);
  assert.ok(empty.rows[0]!.n >= 1);
  const hubs = await db.kysely
    .selectFrom('workspaces')
    .select(['hub_id', (eb) => eb.fn.countAll<string>().as('n')])
    .groupBy('hub_id')
    .orderBy('hub_id')
    .execute();
  assert.deepEqual(
    hubs.map((h) => [h.hub_id, Number(h.n)]),
    [
      ['hub_demo_brewline', 24],
      ['hub_demo_pulse', 16],
    ],
  );
});

test('playbooks: names with and without trailing spaces, all four solutions, one multi-solution', async () => {
  const playbooks = await db.kysely.selectFrom('playbooks').select(['name', 'solutions', 'variants', 'questions']).execute();
  assert.equal(playbooks.length, 8);
  assert.ok(playbooks.some((p) => p.name.endsWith(' ')));
  assert.ok(playbooks.some((p) => !p.name.endsWith(' ')));
  assert.deepEqual([...new Set(playbooks.flatMap((p) => p.solutions))].sort(), ['chatgpt_ads', 'google_ads', 'meta', 'organic_social']);
  assert.ok(playbooks.some((p) => p.solutions.length > 1));
  assert.ok(playbooks.some((p) => Object.keys(p.variants).length > 0));
  assert.ok(playbooks.some((p) => p.questions.length > 0));
});

test('opt-ins: a few hundred over the last 60 days, every status, consistent times and budgets', async () => {
  const rows = await db.kysely.selectFrom('opt_ins').selectAll().execute();
  assert.ok(rows.length >= 200 && rows.length <= 400, String(rows.length));
  assert.deepEqual([...new Set(rows.map((r) => r.status))].sort(), [...OPT_IN_STATUSES].sort());
  const now = Date.parse(NOW);
  for (const r of rows) {
    assert.ok(r.updated_at >= r.opted_in_at, r.id);
    assert.ok(r.updated_at.getTime() <= now, r.id);
    assert.ok(r.opted_in_at.getTime() >= now - 60 * DAY, r.id);
    assert.equal(r.budget_cents === null, r.budget_type === null, r.id);
    if (r.status === 'questions_only') {
      assert.equal(r.budget_cents, null);
      assert.ok(r.responses.length > 0);
    }
  }
  assert.ok(
    rows.some((r) => r.opted_in_at.toISOString().slice(0, 10) === NOW.slice(0, 10)),
    'some opted in today',
  );
  assert.ok(rows.some((r) => Object.keys(r.variant).length > 0));
});

test('ad accounts and spend: differing sync states, 60 days, unattributed spend', async () => {
  const accounts = await db.kysely.selectFrom('ad_accounts').select(['id', 'sync_state', 'last_synced_at']).orderBy('id').execute();
  assert.deepEqual(accounts.map((a) => a.sync_state).sort(), ['failed', 'idle', 'syncing']);
  const idle = accounts.find((a) => a.sync_state === 'idle')!;
  assert.ok(Date.parse(NOW) - idle.last_synced_at!.getTime() < 3_600_000, 'the idle account synced recently');
  const spend = await db.kysely
    .selectFrom('spend')
    .select([
      'ad_account_id',
      (eb) => eb.fn.min('date').as('first'),
      (eb) => eb.fn.max('date').as('last'),
      sql<number>`count(*) FILTER (WHERE workspace_id IS NULL)::int`.as('unattributed'),
    ])
    .groupBy('ad_account_id')
    .orderBy('ad_account_id')
    .execute();
  assert.equal(spend.length, 3);
  for (const s of spend) {
    assert.equal(s.first, '2026-09-23', 'sixty days, today included');
    assert.ok(s.unattributed > 0);
  }
  assert.equal(spend.find((s) => s.ad_account_id === idle.id)!.last, '2026-11-21');
  // A workspace without spend still exists (the report lists it with zero).
  const without = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM workspaces w WHERE NOT EXISTS (SELECT 1 FROM spend s WHERE s.workspace_id = w.id)`.execute(db.kysely);
  assert.ok(without.rows[0]!.n >= 1);
});

test('the data is the same apart from the time anchor', async () => {
  const shifted = await createTestDb();
  try {
    // Whole weeks: weekend spend is higher, so the weekday of each date matters.
    const shift = 14 * DAY;
    await seedDemo(shifted, new FixedClock(new Date(Date.parse(NOW) + shift)));
    const optIns = async (d: TestDb, offset: number) =>
      (await d.kysely.selectFrom('opt_ins').selectAll().orderBy('id').execute()).map((r) => ({
        ...r,
        opted_in_at: r.opted_in_at.getTime() - offset,
        updated_at: r.updated_at.getTime() - offset,
      }));
    assert.deepEqual(await optIns(shifted, shift), await optIns(db, 0));
    const spend = async (d: TestDb, days: number) =>
      (await d.kysely.selectFrom('spend').selectAll().orderBy('ad_account_id').orderBy('date').orderBy('workspace_id').execute()).map(
        (r) => ({
          ...r,
          date: new Date(Date.parse(r.date) - days * DAY).toISOString().slice(0, 10),
        }),
      );
    assert.deepEqual(await spend(shifted, 14), await spend(db, 0));
  } finally {
    await shifted.drop();
  }
});
