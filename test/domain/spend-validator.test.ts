import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { SpendReportCache, spendReport, spendReportValidator } from '../../src/domain/spend/spend.service.ts';
import { FixedClock } from '../../src/platform/clock.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import * as fx from '../support/world.ts';

// The spend report's tag is a function of what the report shows: with two ad accounts, a sync of
// the newer one moves neither asOf (the oldest sync) nor freshness, so neither body nor tag
// changes; a sync of the oldest one moves asOf, and both change.

let db: TestDb;
const clock = new FixedClock(new Date('2026-11-21T12:00:00Z'));

before(async () => {
  db = await createTestDb();
  await fx.account(db);
  await fx.hub(db, 'h1');
  await fx.workspace(db, 'h1', 'w1');
  await fx.adAccount(db, 'h1', 'aa_old', 'idle', '2026-11-21T08:00:00Z');
  await fx.adAccount(db, 'h1', 'aa_new', 'idle', '2026-11-21T10:00:00Z');
  await fx.spend(db, [{ hubId: 'h1', adAccountId: 'aa_old', workspaceId: 'w1', date: '2026-11-20', cents: 1234 }]);
});
after(() => db.drop());

const report = async () => {
  const { json, validator } = await spendReport(db, 'h1', 'last_7_days', clock, new SpendReportCache());
  assert.equal((await spendReportValidator(db, 'h1', 'last_7_days', clock)).etag, validator.etag, 'the 304 path and the 200 path agree');
  return { body: json.text, etag: validator.etag };
};
const sync = (id: string, at: string) => sql`UPDATE ad_accounts SET last_synced_at = ${at} WHERE id = ${id}`.execute(db.kysely);

test("another account's sync that moves neither asOf nor freshness changes neither the body nor the tag", async () => {
  const before = await report();
  await sync('aa_new', '2026-11-21T11:00:00Z');
  const after = await report();
  assert.equal(after.body, before.body);
  assert.equal(after.etag, before.etag);
});

test('a sync of the oldest account moves asOf: body and tag change together', async () => {
  const before = await report();
  await sync('aa_old', '2026-11-21T11:30:00Z');
  const after = await report();
  assert.notEqual(after.body, before.body);
  assert.notEqual(after.etag, before.etag);
  assert.match(after.body, /"asOf":"2026-11-21T11:00:00.000Z"/, 'asOf is now the other account, the oldest');
});
