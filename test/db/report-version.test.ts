// The report version (what the spend report's cache and ETag hang on) moves when a figure the
// report is built from changes, and only then: rewrites of rows as they were, and the sync loop's
// lease and state writes on ad accounts, leave it alone (migration 017).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { createTestDb, type TestDb } from '../support/db.ts';
import { account, adAccount, field, hub, spend, workspace } from '../support/world.ts';

let db: TestDb;
before(async () => {
  db = await createTestDb();
  await account(db, 'acc_1');
  await hub(db, 'h1');
  await hub(db, 'h2');
  await workspace(db, 'h1', 'ws_1');
  await workspace(db, 'h2', 'ws_2');
  await field(db, 'h1', 'region');
  await adAccount(db, 'h1', 'aa_1');
  await spend(db, [{ hubId: 'h1', adAccountId: 'aa_1', workspaceId: 'ws_1', date: '2026-11-01', cents: 500 }]);
});
after(async () => db.drop());

const versions = async () =>
  Object.fromEntries(
    (await db.kysely.selectFrom('hubs').select(['id', 'report_version']).execute()).map((h) => [h.id, Number(h.report_version)]),
  );

async function bumps(statement: string): Promise<{ h1: number; h2: number }> {
  const before = await versions();
  await sql.raw(statement).execute(db.kysely);
  const after = await versions();
  return { h1: after.h1! - before.h1!, h2: after.h2! - before.h2! };
}

test('rewriting rows as they were bumps nothing; a real change bumps its hub once', async () => {
  assert.deepEqual(await bumps(`UPDATE workspaces SET name = name`), { h1: 0, h2: 0 });
  assert.deepEqual(await bumps(`UPDATE workspaces SET name = 'Downtown' WHERE id = 'ws_1'`), { h1: 1, h2: 0 });
  assert.deepEqual(await bumps(`UPDATE workspace_fields SET label = label`), { h1: 0, h2: 0 });
  assert.deepEqual(await bumps(`UPDATE workspace_fields SET archived = true`), { h1: 1, h2: 0 });
  assert.deepEqual(await bumps(`UPDATE spend SET spend_cents = spend_cents`), { h1: 0, h2: 0 });
  assert.deepEqual(await bumps(`UPDATE spend SET spend_cents = 501`), { h1: 1, h2: 0 });
  assert.deepEqual(await bumps(`INSERT INTO spend SELECT * FROM spend WHERE false`), { h1: 0, h2: 0 });
  assert.deepEqual(await bumps(`DELETE FROM spend WHERE spend_cents = 0`), { h1: 0, h2: 0 });
  assert.deepEqual(await bumps(`INSERT INTO workspaces (id, hub_id, name) VALUES ('ws_3', 'h2', 'Uptown')`), { h1: 0, h2: 1 });
});

test("ad accounts: creation, removal and a new name bump; the sync loop's writes do not", async () => {
  assert.deepEqual(
    await bumps(`UPDATE ad_accounts SET sync_state = 'syncing', lease_until = now(), lease_owner = 'me', last_attempt_at = now()`),
    { h1: 0, h2: 0 },
  );
  assert.deepEqual(
    await bumps(
      `UPDATE ad_accounts SET sync_state = 'idle', last_synced_at = now(), lease_until = NULL, next_sync_at = now() + interval '1 hour', complete_through = '2026-11-19'`,
    ),
    { h1: 0, h2: 0 },
  );
  assert.deepEqual(await bumps(`UPDATE ad_accounts SET name = name`), { h1: 0, h2: 0 });
  assert.deepEqual(await bumps(`UPDATE ad_accounts SET name = 'Ads renamed'`), { h1: 1, h2: 0 });
  assert.deepEqual(await bumps(`INSERT INTO ad_accounts (id, hub_id, platform, name) VALUES ('aa_2', 'h2', 'meta', 'Two')`), {
    h1: 0,
    h2: 1,
  });
  assert.deepEqual(await bumps(`DELETE FROM ad_accounts WHERE id = 'aa_2'`), { h1: 0, h2: 1 });
});
