// The demo's ad platforms (src/domain/demo/ad-demo.ts), wired as `npm start` wires them
// (startDemoSandboxes, then app.ts's platformClients on the configuration pointed at them): on the
// first start every sandbox account of the demo hub is connected and syncs — two on Meta, one on
// Google Ads reached through a manager account, one on ChatGPT Ads — their [ws:…] ad sets landing
// on locations; a later start (new sandbox processes, so new credentials) connects again the
// accounts still connected, keeping their rows and synced days, and leaves a disconnected one
// disconnected.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { platformClients } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { disconnectAdAccount, listAdAccounts, syncNow, type AdSyncDeps } from '../../src/domain/ad-sync/ad-account.service.ts';
import { connectDemoAccounts, DEMO_GOOGLE_MANAGER, startDemoSandboxes, type DemoSandboxes } from '../../src/domain/demo/ad-demo.ts';
import { DEMO_HUB_ID, seedDemo } from '../../src/domain/demo/demo.service.ts';
import { readSpendState } from '../../src/domain/spend/spend.repository.ts';
import { spendFreshness } from '../../src/domain/spend/spend.ts';
import type { Db } from '../../src/db/database.ts';
import { FixedClock, systemClock } from '../../src/platform/clock.ts';
import { Sealer, secretsKey } from '../../src/platform/sealing.ts';
import { createTestDb, type TestDb } from '../support/db.ts';

let db: TestDb;
const sealer = new Sealer([secretsKey(randomBytes(32))]);
const started: DemoSandboxes[] = [];
/** A demo start's sandboxes and the ad-sync dependencies pointed at them, as main.ts builds them. */
const depsOn = async (on: Db = db): Promise<{ deps: AdSyncDeps; sandboxes: DemoSandboxes }> => {
  const base = loadConfig({ HUBOPS_DEMO: '1' });
  assert.ok(base.metaSandbox && base.googleAdsSandbox && base.openaiAdsSandbox, 'the demo without platform settings runs every sandbox');
  const sandboxes = (await startDemoSandboxes(base))!;
  started.push(sandboxes);
  const { clients } = platformClients(sandboxes.configure(base));
  return { sandboxes, deps: { db: on, clock: systemClock, sealer, clients } };
};
const connectAll = async (deps: AdSyncDeps, sandboxes: DemoSandboxes, firstStart: boolean) => {
  const ids: string[] = [];
  for (const connection of sandboxes.connections()) ids.push(...(await connectDemoAccounts(deps, connection, firstStart)));
  return ids;
};
const ws = (n: number) => `ws_demo_brewline_${String(n).padStart(2, '0')}`;

before(async () => {
  db = await createTestDb();
  await seedDemo(db);
});
after(async () => {
  for (const s of started) await s.close();
  await db.drop();
});

test("first start: every platform's accounts connected and synced; spend on the [ws:…] locations, the rest unattributed", async () => {
  const { deps, sandboxes } = await depsOn();
  const ids = await connectAll(deps, sandboxes, true);
  assert.equal(ids.length, 4);
  for (const id of ids) assert.deepEqual((await syncNow(deps, DEMO_HUB_ID, id)).status, 'done', id);
  const accounts = await listAdAccounts(deps, DEMO_HUB_ID);
  const byPlatform = (p: string) =>
    accounts
      .filter((a) => a.platform === p && ids.includes(a.id))
      .map((a) => a.externalId)
      .sort();
  assert.deepEqual(byPlatform('meta'), ['act_100001', 'act_100002']);
  assert.deepEqual(byPlatform('google_ads'), ['7000000101']);
  assert.deepEqual(byPlatform('chatgpt_ads'), ['adacct_brewline_ask_ai']);
  const google = await db.kysely
    .selectFrom('ad_accounts')
    .select('access_via')
    .where('external_id', '=', '7000000101')
    .executeTakeFirstOrThrow();
  assert.equal(google.access_via, DEMO_GOOGLE_MANAGER, 'the Google account is reached through its manager');

  const spent = await db.kysely
    .selectFrom('spend')
    .innerJoin('ad_accounts', 'ad_accounts.id', 'spend.ad_account_id')
    .select(['ad_accounts.platform', 'spend.workspace_id'])
    .where('spend.ad_account_id', 'in', ids)
    .groupBy(['ad_accounts.platform', 'spend.workspace_id'])
    .execute();
  const where = (p: string) =>
    spent
      .filter((r) => r.platform === p)
      .map((r) => r.workspace_id ?? 'unattributed')
      .sort();
  assert.deepEqual(where('meta'), [...[1, 2, 3, 4, 5, 6, 13, 14, 15, 16].map(ws), 'unattributed'].sort());
  assert.deepEqual(
    where('google_ads'),
    [...[17, 18, 19, 20, 21, 22].map(ws), 'unattributed'].sort(),
    'ws 22: the Performance Max campaign',
  );
  assert.deepEqual(where('chatgpt_ads'), [...[6, 7, 8].map(ws), 'unattributed'].sort());
});

test("a later start connects again, with the new sandboxes' credentials, the accounts still connected", async () => {
  const before = await listAdAccounts((await depsOn()).deps, DEMO_HUB_ID);
  const west = before.find((a) => a.externalId === 'act_100001')!;
  const east = before.find((a) => a.externalId === 'act_100002')!;
  const google = before.find((a) => a.externalId === '7000000101')!;
  const chatgpt = before.find((a) => a.externalId === 'adacct_brewline_ask_ai')!;
  const { deps, sandboxes } = await depsOn();
  await disconnectAdAccount(deps, DEMO_HUB_ID, east.id);
  const ids = await connectAll(deps, sandboxes, false);
  assert.deepEqual(ids, [west.id, google.id, chatgpt.id]);
  const after = await listAdAccounts(deps, DEMO_HUB_ID);
  for (const a of [west, google, chatgpt])
    assert.equal(after.find((b) => b.id === a.id)!.completeThrough, a.completeThrough, `${a.externalId}: its synced days stay`);
  assert.equal(after.find((a) => a.id === east.id)!.status, 'disconnected');
  for (const id of ids) assert.equal((await syncNow(deps, DEMO_HUB_ID, id)).status, 'done', 'the new credentials work');
  assert.equal((await db.kysely.selectFrom('ad_connections').select('id').where('hub_id', '=', DEMO_HUB_ID).execute()).length, 3);
});

test('seeded for the sandboxes, Brewline has no imported Meta account: 7 hours after the seed its figures are as fresh as its synced accounts', async () => {
  const HOUR = 3_600_000;
  const seededAt = new FixedClock(new Date(Date.now() - 7 * HOUR));
  const freshnessAfterSync = async (brewlineMetaSynced: boolean) => {
    const fresh = await createTestDb();
    try {
      const seed = await seedDemo(fresh, seededAt, { brewlineMetaSynced });
      const { deps, sandboxes } = await depsOn(fresh);
      for (const id of await connectAll(deps, sandboxes, true)) assert.equal((await syncNow(deps, DEMO_HUB_ID, id)).status, 'done');
      const imported = await fresh.kysely.selectFrom('ad_accounts').select('id').where('id', '=', 'aa_demo_brewline_meta').execute();
      return { seed, imported: imported.length, ...spendFreshness((await readSpendState(fresh, DEMO_HUB_ID)).accounts, new Date()) };
    } finally {
      await fresh.drop();
    }
  };
  const synced = await freshnessAfterSync(true);
  assert.equal(synced.imported, 0);
  assert.deepEqual(synced.seed.adAccountIds, ['aa_demo_pulse_meta', 'aa_demo_pulse_google']);
  assert.equal(synced.freshness, 'fresh');
  assert.ok(Date.now() - synced.asOf!.getTime() < HOUR, "asOf is the synced accounts' last sync");
  // Seeded as `hubops demo seed` seeds (no sandbox), the imported account pins asOf at the seed.
  const pinned = await freshnessAfterSync(false);
  assert.equal(pinned.imported, 1);
  assert.equal(pinned.freshness, 'stale');
});
