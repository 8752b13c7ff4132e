import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createAccount, createHub, createUser, getHub, setHubSuspended } from '../../src/domain/tenancy/tenancy.service.ts';
import { DomainError } from '../../src/platform/errors.ts';
import { verifyPassword } from '../../src/platform/password.ts';
import { createTestDb, type TestDb } from '../support/db.ts';

let db: TestDb;
let accountId: string;
let hubId: string;
let otherHubId: string;

before(async () => {
  db = await createTestDb();
  accountId = (await createAccount(db, { name: 'Acme', plan: 'partner', apiAccess: true })).id;
  hubId = (await createHub(db, { accountId, name: 'Acme US' })).id;
  otherHubId = (await createHub(db, { accountId, name: 'Acme CA' })).id;
  await db.kysely
    .insertInto('workspaces')
    .values([
      { id: 'ws_1', hub_id: hubId, name: 'Denver' },
      { id: 'ws_2', hub_id: otherHubId, name: 'Toronto' },
    ])
    .execute();
});
after(async () => {
  await db.drop();
});

/** Asserts a DomainError with exactly this one-line reason. */
async function refused(work: Promise<unknown>, reason: string): Promise<void> {
  await assert.rejects(work, (error: unknown) => {
    assert.ok(error instanceof DomainError, String(error));
    assert.equal(error.message, reason);
    return true;
  });
}

test('accounts and hubs', async () => {
  const account = await createAccount(db, { name: 'Defaults Ltd' });
  assert.match(account.id, /^acc_/);
  assert.deepEqual({ ...account, id: '' }, { id: '', name: 'Defaults Ltd', plan: 'standard', apiAccess: false });
  assert.deepEqual(await getHub(db, hubId), { id: hubId, accountId, name: 'Acme US', suspended: false });
  await refused(createAccount(db, { name: '' }), 'account name must be 1 to 200 characters');
  await refused(createAccount(db, { name: 'X', plan: 'gold' as never }), 'plan must be one of standard, partner');
  await refused(createHub(db, { accountId: 'acc_nope', name: 'X' }), 'account acc_nope does not exist');
  await refused(createHub(db, { accountId, name: 'x'.repeat(201) }), 'hub name must be 1 to 200 characters');
  await refused(getHub(db, 'hub_nope'), 'hub hub_nope does not exist');
});

test('suspending and restoring a hub', async () => {
  assert.deepEqual(await setHubSuspended(db, hubId, true), { id: hubId, suspended: true });
  assert.equal((await getHub(db, hubId)).suspended, true);
  assert.deepEqual(await setHubSuspended(db, hubId, false), { id: hubId, suspended: false });
  await refused(setHubSuspended(db, 'hub_nope', true), 'hub hub_nope does not exist');
});

test("users: in the hub's account, with a membership, email lower-cased, password hashed", async () => {
  const user = await createUser(db, {
    email: '  Ada@Example.COM ',
    password: 'correct horse',
    firstname: 'Ada',
    lastname: 'Lovelace',
    hubId,
    role: 'member',
    workspaceId: 'ws_1',
  });
  assert.deepEqual(
    { ...user, id: '' },
    {
      id: '',
      accountId,
      email: 'ada@example.com',
      firstname: 'Ada',
      lastname: 'Lovelace',
      hubId,
      role: 'member',
      workspaceId: 'ws_1',
      staff: false,
    },
  );
  const row = await db.kysely
    .selectFrom('users')
    .select(['account_id', 'password_hash'])
    .where('id', '=', user.id)
    .executeTakeFirstOrThrow();
  assert.equal(row.account_id, accountId);
  assert.equal(await verifyPassword('correct horse', row.password_hash), true);
  const membership = await db.kysely.selectFrom('memberships').selectAll().where('user_id', '=', user.id).execute();
  assert.deepEqual(membership, [{ user_id: user.id, hub_id: hubId, role: 'member', workspace_id: 'ws_1' }]);
});

test('users: every refusal is a one-line reason, and writes nothing', async () => {
  const base = { email: 'new@example.com', password: 'long enough', firstname: 'N', lastname: 'N', hubId, role: 'hub_admin' as const };
  const count = async () =>
    Number(
      (
        await db.kysely
          .selectFrom('users')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const before = await count();
  await refused(createUser(db, { ...base, email: 'ADA@example.com' }), 'a user with email ada@example.com already exists');
  await refused(createUser(db, { ...base, email: 'nope@' }), 'email must be an email address like name@example.com');
  await refused(createUser(db, { ...base, password: 'seven77' }), 'password must be at least 8 characters');
  await refused(createUser(db, { ...base, firstname: ' ' }), 'firstname must not be blank');
  await refused(createUser(db, { ...base, role: 'owner' as never }), 'role must be one of hub_admin, member');
  await refused(createUser(db, { ...base, hubId: 'hub_nope' }), 'hub hub_nope does not exist');
  await refused(createUser(db, { ...base, workspaceId: 'ws_nope' }), 'workspace ws_nope does not exist');
  await refused(createUser(db, { ...base, workspaceId: 'ws_2' }), `workspace ws_2 belongs to another hub, not ${hubId}`);
  assert.equal(await count(), before);
});

test('users: an address taken by a concurrent transaction is still a clean refusal', async () => {
  // Another transaction inserts the address but has not committed: createUser's check cannot see
  // it, so the unique index decides, and the reason must still be human.
  const other = await db.pool.connect();
  try {
    await other.query('BEGIN');
    await other.query(
      `INSERT INTO users (id, account_id, email, password_hash, firstname, lastname) VALUES ('usr_race', $1, 'race@example.com', 'x', 'R', 'R')`,
      [accountId],
    );
    // The verdict is attached at once: the refusal may arrive before COMMIT's own reply does.
    const verdict = refused(
      createUser(db, { email: 'race@example.com', password: 'long enough', firstname: 'R', lastname: 'R', hubId, role: 'member' }),
      'a user with email race@example.com already exists',
    );
    // Wait until createUser's insert is blocked on the index, then commit the other transaction.
    for (let waited = 0; ; waited += 20) {
      const { rows } = await db.pool.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      if (rows[0].n > 0) break;
      assert.ok(waited < 15_000, 'createUser never reached the insert');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await other.query('COMMIT');
    await verdict;
  } finally {
    other.release();
  }
});
