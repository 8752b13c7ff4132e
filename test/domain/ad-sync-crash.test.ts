// A spend sync killed with SIGKILL mid-run: its instance dies between committed chunks and the one
// in flight. Once its lease has run out another run takes the account over, completes it from
// complete_through, and nothing is counted twice: the figures equal the platform's, exactly.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { claimDue } from '../../src/domain/ad-sync/ad-account.repository.ts';
import { connectAdAccounts, type AdSyncDeps } from '../../src/domain/ad-sync/ad-account.service.ts';
import { createSpendSyncLoop } from '../../src/domain/ad-sync/sync-loop.ts';
import { FixedClock } from '../../src/platform/clock.ts';
import { Sealer, secretsKey } from '../../src/platform/sealing.ts';
import { TEST_SECRETS_KEY } from '../support/app.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import { account, hub, workspace } from '../support/world.ts';
import { CRASH_NOW, CRASH_TOKEN, crashPlatform } from './ad-sync-fake.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const NODE = path.join(ROOT, 'node_modules/.bin/node');
const LEASE_MS = 60_000;

let db: TestDb;
const children: ChildProcess[] = [];
const platform = crashPlatform();
const clock = new FixedClock(CRASH_NOW);
let deps: AdSyncDeps;

before(async () => {
  db = await createTestDb();
  await account(db, 'acc_1');
  await hub(db, 'hub_crash', 'acc_1');
  for (const w of ['a', 'b', 'c']) await workspace(db, 'hub_crash', `ws_crash_${w}`);
  deps = {
    db,
    clock,
    clients: { meta: platform },
    sealer: new Sealer([secretsKey(Buffer.from(TEST_SECRETS_KEY, 'base64url'))]),
    leaseMs: LEASE_MS,
  };
});
after(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await db.drop();
});

async function until(condition: () => Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

test('a sync killed with SIGKILL mid-run: the next run completes it and nothing is double counted', async () => {
  const [view] = await connectAdAccounts(deps, 'hub_crash', {
    platform: 'meta',
    kind: 'system_user',
    accessToken: CRASH_TOKEN,
    tokenExpiresAt: null,
    externalIds: ['act_4242'],
    label: 'crash',
  });
  const id = view!.id;
  const state = async () =>
    await db.kysely
      .selectFrom('ad_accounts')
      .select(['complete_through', 'last_synced_at', 'sync_state', 'lease_owner'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();

  const child = spawn(NODE, [path.join(ROOT, 'test/domain/ad-sync-process.ts')], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: db.url,
      SECRETS_KEY: TEST_SECRETS_KEY,
      NOW: CRASH_NOW,
      LEASE_MS: String(LEASE_MS),
      BATCH_MS: '10',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  // Killed once at least one chunk is committed, while the next one is being read.
  await until(async () => (await state()).complete_through !== null, 'the first chunk to be committed');
  child.kill('SIGKILL');
  await once(child, 'exit');
  const dead = await state();
  assert.equal(dead.last_synced_at, null, 'the run had not finished');
  assert.equal(dead.sync_state, 'syncing');
  assert.ok(
    dead.lease_owner !== null && dead.complete_through! < '2026-11-19',
    `killed mid-run (complete through ${dead.complete_through})`,
  );

  // Within the dead instance's lease the account is not taken over…
  assert.deepEqual(await claimDue(db, 'another instance', clock.now(), new Date(clock.now().getTime() + LEASE_MS), 5, id), []);
  // …after it, the next loop round takes it over and completes it, though its hourly sync is not due yet.
  await db.kysely
    .updateTable('ad_accounts')
    .set({ next_sync_at: new Date(clock.now().getTime() + 3_600_000) })
    .where('id', '=', id)
    .execute();
  clock.advance(LEASE_MS + 1_000);
  const outcomes = await createSpendSyncLoop({ deps, intervalMs: 10, batchSize: 5 }).runOnce();
  assert.deepEqual(
    outcomes.map((o) => o.status),
    ['done'],
    JSON.stringify(outcomes),
  );
  const done = await state();
  assert.equal(done.complete_through, '2026-11-19');
  assert.equal(done.sync_state, 'idle');

  // Expected: the platform's rows of UTC days [today − 90, today], per ad set rounded once, by workspace.
  const want = new Map<string, bigint>();
  for (const r of platform.accounts.get('act_4242')!.rows) {
    if (r.date < '2026-08-22') continue;
    const key = `${r.date}|${r.adSetId}`;
    want.set(key, (want.get(key) ?? 0n) + r.spendMicros);
  }
  const perWorkspace = new Map<string, number>();
  for (const [key, micros] of want) {
    const ws = `ws_crash_${key.split('|')[1]!.slice(2)}`;
    perWorkspace.set(ws, (perWorkspace.get(ws) ?? 0) + Number((micros + 5_000n) / 10_000n));
  }
  const got = await sql<{ ws: string; cents: string; days: string }>`
    SELECT workspace_id AS ws, sum(spend_cents) AS cents, count(*) AS days FROM spend WHERE ad_account_id = ${id} GROUP BY 1 ORDER BY 1`.execute(
    db.kysely,
  );
  assert.deepEqual(Object.fromEntries(got.rows.map((r) => [r.ws, Number(r.cents)])), Object.fromEntries([...perWorkspace].sort()));
  assert.ok(
    got.rows.every((r) => r.days === '91'),
    'one spend row per UTC day and workspace',
  );
  // The report's running totals (kept by triggers) agree with the rows: no chunk was added twice.
  const totals = await sql<{ rows: string; running: string }>`
    SELECT (SELECT sum(spend_cents) FROM spend WHERE hub_id = 'hub_crash') AS rows,
           (SELECT sum(sums[64]) FROM spend_prefix_sums WHERE hub_id = 'hub_crash') AS running`.execute(db.kysely);
  assert.equal(totals.rows[0]!.running, totals.rows[0]!.rows);
});
