// Migration 024 deletes the channel connections no channel references (Meta sign-ins kept before
// the admin chose anything, connections a reconnect left behind), their sealed tokens with them,
// and keeps every connection a channel is on.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { migrate } from '../../src/db/migrate.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import { account, hub, workspace } from '../support/world.ts';

const MIGRATION = '024_issue_23_leftovers';
let db: TestDb;

before(async () => {
  db = await createTestDb();
});
after(async () => {
  await db?.drop();
});

test('024 deletes the unreferenced channel connections and keeps the ones a channel is on', async () => {
  await account(db, 'acc_m');
  await hub(db, 'hub_m', 'acc_m');
  await workspace(db, 'hub_m', 'ws_m');
  const connection = (id: string, platform: 'meta' | 'google_business') => ({
    id,
    hub_id: 'hub_m',
    platform,
    label: id,
    token_sealed: Buffer.from(`sealed ${id}`),
  });
  await db.kysely
    .insertInto('channel_connections')
    .values([
      connection('cc_chosen', 'meta'),
      connection('cc_never_chosen', 'meta'),
      connection('cc_left_by_reconnect', 'google_business'),
      connection('cc_gbp_live', 'google_business'),
    ])
    .execute();
  const channel = (id: string, platform: 'facebook' | 'google_business', connectionId: string, externalId: string) => ({
    id,
    hub_id: 'hub_m',
    workspace_id: 'ws_m',
    platform,
    name: id,
    connection_id: connectionId,
    external_id: externalId,
  });
  await db.kysely
    .insertInto('social_channels')
    .values([
      channel('ch_page', 'facebook', 'cc_chosen', '1000000001'),
      channel('ch_loc', 'google_business', 'cc_gbp_live', 'accounts/1/locations/2'),
      { id: 'ch_sandbox', hub_id: 'hub_m', workspace_id: 'ws_m', platform: 'facebook', name: 'sandbox' },
    ])
    .execute();
  // The database as it was before 024: apply it again.
  await db.kysely
    .deleteFrom('schema_migrations' as never)
    .where('name' as never, '=', MIGRATION as never)
    .execute();
  assert.deepEqual(await migrate(db.pool), [MIGRATION]);
  assert.deepEqual(
    (await db.kysely.selectFrom('channel_connections').select('id').orderBy('id').execute()).map((c) => c.id),
    ['cc_chosen', 'cc_gbp_live'],
  );
  assert.equal((await db.kysely.selectFrom('social_channels').select('id').execute()).length, 3, 'no channel is touched');
});
