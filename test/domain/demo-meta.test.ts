// The demo's Meta (src/domain/demo/meta-demo.ts): on the first start both sandbox accounts of the
// demo hub are connected and sync from the sandbox, their [ws:…] ad sets landing on locations; a
// later start (a new sandbox process, so a new token) connects again the accounts still connected,
// keeping their rows and synced days, and leaves a disconnected one disconnected.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { disconnectAdAccount, listAdAccounts, syncNow, type AdSyncDeps } from '../../src/domain/ad-sync/ad-account.service.ts';
import { connectDemoMeta, DEMO_META_SEED } from '../../src/domain/demo/meta-demo.ts';
import { DEMO_HUB_ID, seedDemo } from '../../src/domain/demo/demo.service.ts';
import { createMetaClient } from '../../src/integrations/meta/client.ts';
import { startMetaSandbox, type MetaSandbox } from '../../src/integrations/meta/sandbox.ts';
import { readSpendState } from '../../src/domain/spend/spend.repository.ts';
import { spendFreshness } from '../../src/domain/spend/spend.ts';
import { FixedClock, systemClock } from '../../src/platform/clock.ts';
import { Sealer, secretsKey } from '../../src/platform/sealing.ts';
import { createTestDb, type TestDb } from '../support/db.ts';

let db: TestDb;
const sealer = new Sealer([secretsKey(randomBytes(32))]);
const sandboxes: MetaSandbox[] = [];
const depsOn = async (): Promise<{ deps: AdSyncDeps; sandbox: MetaSandbox }> => {
  const sandbox = await startMetaSandbox({ seed: DEMO_META_SEED });
  sandboxes.push(sandbox);
  return { sandbox, deps: { db, clock: systemClock, sealer, clients: { meta: createMetaClient({ graphUrl: sandbox.url }) } } };
};

before(async () => {
  db = await createTestDb();
  await seedDemo(db);
});
after(async () => {
  for (const s of sandboxes) await s.close();
  await db.drop();
});

test('first start: both accounts connected and synced; spend on the [ws:…] locations, the rest unattributed', async () => {
  const { deps, sandbox } = await depsOn();
  const ids = await connectDemoMeta(deps, sandbox.issueToken({ systemUser: true }), true);
  assert.equal(ids.length, 2);
  for (const id of ids) assert.equal((await syncNow(deps, DEMO_HUB_ID, id)).status, 'done');
  const byWorkspace = await db.kysely
    .selectFrom('spend')
    .select(['workspace_id'])
    .where('ad_account_id', 'in', ids)
    .groupBy('workspace_id')
    .execute();
  assert.deepEqual(
    byWorkspace.map((r) => r.workspace_id ?? 'unattributed').sort(),
    [...[1, 2, 3, 4, 5, 6, 13, 14, 15, 16].map((n) => `ws_demo_brewline_${String(n).padStart(2, '0')}`), 'unattributed'].sort(),
  );
});

test("a later start connects again, with the new sandbox's token, the accounts still connected", async () => {
  const before = await listAdAccounts((await depsOn()).deps, DEMO_HUB_ID);
  const west = before.find((a) => a.externalId === 'act_100001')!;
  const east = before.find((a) => a.externalId === 'act_100002')!;
  const { deps, sandbox } = await depsOn();
  await disconnectAdAccount(deps, DEMO_HUB_ID, east.id);
  const ids = await connectDemoMeta(deps, sandbox.issueToken({ systemUser: true }), false);
  assert.deepEqual(ids, [west.id]);
  const after = await listAdAccounts(deps, DEMO_HUB_ID);
  assert.equal(after.find((a) => a.id === west.id)!.completeThrough, west.completeThrough, 'its synced days stay');
  assert.equal(after.find((a) => a.id === east.id)!.status, 'disconnected');
  assert.equal((await syncNow(deps, DEMO_HUB_ID, west.id)).status, 'done', 'the new token works');
  assert.equal((await db.kysely.selectFrom('ad_connections').select('id').where('hub_id', '=', DEMO_HUB_ID).execute()).length, 1);
});

test('seeded for the sandbox, Brewline has no imported Meta account: 7 hours after the seed its figures are as fresh as its synced accounts', async () => {
  const HOUR = 3_600_000;
  const seededAt = new FixedClock(new Date(Date.now() - 7 * HOUR));
  const freshnessAfterSync = async (brewlineMetaSynced: boolean) => {
    const fresh = await createTestDb();
    try {
      const seed = await seedDemo(fresh, seededAt, { brewlineMetaSynced });
      const sandbox = await startMetaSandbox({ seed: DEMO_META_SEED });
      sandboxes.push(sandbox);
      const deps: AdSyncDeps = { db: fresh, clock: systemClock, sealer, clients: { meta: createMetaClient({ graphUrl: sandbox.url }) } };
      for (const id of await connectDemoMeta(deps, sandbox.issueToken({ systemUser: true }), true))
        assert.equal((await syncNow(deps, DEMO_HUB_ID, id)).status, 'done');
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
