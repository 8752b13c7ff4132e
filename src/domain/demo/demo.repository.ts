import { sql, type Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';

// Any constant shared by every hubops process: serialises concurrent seeders.
const SEED_LOCK = 7_262_012;

/** Holds the seeders' lock until the caller's transaction ends. */
export async function lockDemoSeed(trx: Transaction<Database>): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(${SEED_LOCK})`.execute(trx);
}

export async function accountExists(trx: Transaction<Database>, accountId: string): Promise<boolean> {
  return (await trx.selectFrom('accounts').select('id').where('id', '=', accountId).executeTakeFirst()) !== undefined;
}

/** Whether any account exists. */
export async function anyAccount(db: Db): Promise<boolean> {
  return (await db.kysely.selectFrom('accounts').select('id').limit(1).executeTakeFirst()) !== undefined;
}

/** Gives a user a role in another hub (the NDJSON format's user line names one hub). */
export async function insertMembership(
  trx: Transaction<Database>,
  membership: { userId: string; hubId: string; role: 'hub_admin' | 'member'; workspaceId: string | null },
): Promise<void> {
  await trx
    .insertInto('memberships')
    .values({ user_id: membership.userId, hub_id: membership.hubId, role: membership.role, workspace_id: membership.workspaceId })
    .execute();
}
