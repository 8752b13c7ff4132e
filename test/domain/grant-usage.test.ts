// Connected apps' "last used": each instance writes a grant's last use at most once a minute, the
// first use within a second (batched), later ones when the minute is over (or on close), and never
// lowers it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { GRANT_USE_WRITE_INTERVAL_MS, GrantUseRecorder } from '../../src/domain/oauth/grant-usage.ts';
import { createUser } from '../../src/domain/tenancy/tenancy.service.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import * as fx from '../support/world.ts';

let db: TestDb;
before(async () => {
  db = await createTestDb();
  await fx.account(db);
  await fx.hub(db, 'h1');
  const user = await createUser(db, {
    email: 'u@grants.test',
    password: 'a password 1',
    firstname: 'U',
    lastname: 'Ser',
    hubId: 'h1',
    role: 'hub_admin',
  });
  await db.kysely
    .insertInto('oauth_grant_contexts')
    .values([
      { grant_id: 'grant_a', user_id: user.id, hub_id: 'h1', workspace_id: null },
      { grant_id: 'grant_b', user_id: user.id, hub_id: 'h1', workspace_id: null },
    ])
    .execute();
});
after(async () => {
  await db.drop();
});

const lastUse = async (grantId: string) =>
  (
    await db.kysely.selectFrom('oauth_grant_usage').select('last_used_at').where('grant_id', '=', grantId).executeTakeFirst()
  )?.last_used_at.toISOString();
const at = (seconds: number) => new Date(Date.UTC(2026, 10, 24, 9, 0, seconds));

test('one write per grant per interval: the first use at once, the latest held use once the interval is over', async () => {
  let now = 1_000_000;
  const errors: unknown[] = [];
  const recorder = new GrantUseRecorder(db, { nowMs: () => now, sweepEveryMs: 3_600_000, onError: (e) => errors.push(e) });
  try {
    recorder.record('grant_a', at(0));
    await recorder.flushDue();
    assert.equal(await lastUse('grant_a'), at(0).toISOString(), 'the first use is written at once');

    now += 10_000;
    recorder.record('grant_a', at(10));
    recorder.record('grant_a', at(20));
    recorder.record('grant_b', at(20)); // another grant is not held back by grant_a's interval
    await recorder.flushDue();
    assert.equal(await lastUse('grant_a'), at(0).toISOString(), 'within the interval nothing is written');
    assert.equal(await lastUse('grant_b'), at(20).toISOString());

    now += GRANT_USE_WRITE_INTERVAL_MS;
    await recorder.flushDue();
    assert.equal(await lastUse('grant_a'), at(20).toISOString(), 'the latest held use, once the interval is over');

    recorder.record('grant_a', at(5)); // an older use (another instance's clock) never lowers it
    recorder.record('grant_unknown', at(30)); // a grant with no context is skipped, not an error
    await recorder.flushDue();
    now += GRANT_USE_WRITE_INTERVAL_MS;
    await recorder.flushDue();
    assert.equal(await lastUse('grant_a'), at(20).toISOString());
    assert.equal(await lastUse('grant_unknown'), undefined);
  } finally {
    await recorder.close();
  }
  assert.deepEqual(errors, []);
});

test('close writes what is held back', async () => {
  let now = 5_000_000;
  const recorder = new GrantUseRecorder(db, { nowMs: () => now, sweepEveryMs: 3_600_000 });
  recorder.record('grant_b', at(40));
  await recorder.flushDue();
  now += 1_000;
  recorder.record('grant_b', at(41));
  await recorder.close();
  assert.equal(await lastUse('grant_b'), at(41).toISOString());
});
