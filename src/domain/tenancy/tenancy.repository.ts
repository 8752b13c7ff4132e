import type { Db } from '../../db/database.ts';
import { DomainError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { Plan, Role } from './tenancy.ts';

// The SQL of accounts, hubs, users and memberships. Input is checked by tenancy.service.ts;
// what only the database can tell (a row missing or taken) is refused here, inside the transaction.

export interface Account {
  id: string;
  name: string;
  plan: Plan;
  apiAccess: boolean;
}

export interface Hub {
  id: string;
  accountId: string;
  name: string;
  suspended: boolean;
}

export interface User {
  id: string;
  accountId: string;
  email: string;
  firstname: string;
  lastname: string;
  hubId: string;
  role: Role;
  workspaceId: string | null;
  staff: boolean;
}

function isUniqueViolation(error: unknown, constraint: string): boolean {
  const e = error as { code?: string; constraint?: string };
  return e.code === '23505' && e.constraint === constraint;
}

export async function insertAccount(db: Db, input: Omit<Account, 'id'>): Promise<Account> {
  const account = { id: newId('acc'), ...input };
  await db.kysely
    .insertInto('accounts')
    .values({ id: account.id, name: account.name, plan: account.plan, api_access: account.apiAccess })
    .execute();
  return account;
}

export async function insertHub(db: Db, input: { accountId: string; name: string }): Promise<Hub> {
  return db.kysely.transaction().execute(async (trx) => {
    // FOR SHARE: the account cannot disappear between this check and the insert.
    const account = await trx.selectFrom('accounts').select('id').where('id', '=', input.accountId).forShare().executeTakeFirst();
    if (!account) throw new DomainError('not_found', `account ${input.accountId} does not exist`);
    const hub = { id: newId('hub'), accountId: input.accountId, name: input.name, suspended: false };
    await trx.insertInto('hubs').values({ id: hub.id, account_id: hub.accountId, name: hub.name }).execute();
    return hub;
  });
}

export async function findHub(db: Db, hubId: string): Promise<Hub | undefined> {
  const row = await db.kysely
    .selectFrom('hubs')
    .select(['id', 'account_id', 'name', 'suspended'])
    .where('id', '=', hubId)
    .executeTakeFirst();
  return row && { id: row.id, accountId: row.account_id, name: row.name, suspended: row.suspended };
}

/** Sets whether a hub is suspended; undefined for an unknown hub. */
export async function updateHubSuspended(db: Db, hubId: string, suspended: boolean): Promise<{ id: string; suspended: boolean } | undefined> {
  const row = await db.kysely
    .updateTable('hubs')
    .set({ suspended })
    .where('id', '=', hubId)
    .returning(['id', 'suspended'])
    .executeTakeFirst();
  return row;
}

/** A user row: the email already normalised and checked, the password already hashed. */
export interface UserRow {
  email: string;
  passwordHash: string;
  firstname: string;
  lastname: string;
  hubId: string;
  role: Role;
  /** The workspace a member is pinned to (for a hub admin: the one they start in). */
  workspaceId?: string | undefined;
  staff?: boolean | undefined;
}

/** Inserts a user in the hub's account with a membership (role) in that hub. */
export async function insertUser(db: Db, input: UserRow): Promise<User> {
  const { email, passwordHash } = input;
  try {
    return await db.kysely.transaction().execute(async (trx) => {
      const hub = await trx.selectFrom('hubs').select(['id', 'account_id']).where('id', '=', input.hubId).forShare().executeTakeFirst();
      if (!hub) throw new DomainError('not_found', `hub ${input.hubId} does not exist`);
      if (input.workspaceId !== undefined) {
        const workspace = await trx.selectFrom('workspaces').select('hub_id').where('id', '=', input.workspaceId).forShare().executeTakeFirst();
        if (!workspace) throw new DomainError('not_found', `workspace ${input.workspaceId} does not exist`);
        if (workspace.hub_id !== hub.id) throw new DomainError('invalid', `workspace ${input.workspaceId} belongs to another hub, not ${hub.id}`);
      }
      const taken = await trx.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst();
      if (taken) throw new DomainError('conflict', `a user with email ${email} already exists`);
      const user: User = {
        id: newId('usr'),
        accountId: hub.account_id,
        email,
        firstname: input.firstname,
        lastname: input.lastname,
        hubId: hub.id,
        role: input.role,
        workspaceId: input.workspaceId ?? null,
        staff: input.staff ?? false,
      };
      await trx
        .insertInto('users')
        .values({
          id: user.id,
          account_id: user.accountId,
          email,
          password_hash: passwordHash,
          firstname: user.firstname,
          lastname: user.lastname,
          is_staff: user.staff,
        })
        .execute();
      await trx.insertInto('memberships').values({ user_id: user.id, hub_id: user.hubId, role: user.role, workspace_id: user.workspaceId }).execute();
      return user;
    });
  } catch (error) {
    // Two concurrent creations of the same address: the unique index decides, the reason stays human.
    if (isUniqueViolation(error, 'users_email_key')) throw new DomainError('conflict', `a user with email ${email} already exists`);
    throw error;
  }
}

export interface Membership {
  userId: string;
  email: string;
  hubId: string;
  role: Role;
  workspaceId: string | null;
}

/** Inserts the membership; a missing user, hub or workspace, another account's hub or a second membership is refused. */
export async function insertMembership(db: Db, input: { email: string; hubId: string; role: Role; workspaceId?: string | undefined }): Promise<Membership> {
  const { email } = input;
  try {
    return await db.kysely.transaction().execute(async (trx) => {
      const user = await trx.selectFrom('users').select(['id', 'account_id']).where('email', '=', email).forShare().executeTakeFirst();
      if (!user) throw new DomainError('not_found', `no user has the email ${email} (create one with: hubops users create)`);
      const hub = await trx.selectFrom('hubs').select(['id', 'account_id']).where('id', '=', input.hubId).forShare().executeTakeFirst();
      if (!hub) throw new DomainError('not_found', `hub ${input.hubId} does not exist`);
      if (hub.account_id !== user.account_id) {
        throw new DomainError('rejected', `hub ${hub.id} belongs to account ${hub.account_id}, and ${email} to account ${user.account_id}; a user can only join hubs of their own account`);
      }
      if (input.workspaceId !== undefined) {
        const workspace = await trx.selectFrom('workspaces').select('hub_id').where('id', '=', input.workspaceId).forShare().executeTakeFirst();
        if (!workspace) throw new DomainError('not_found', `workspace ${input.workspaceId} does not exist`);
        if (workspace.hub_id !== hub.id) throw new DomainError('invalid', `workspace ${input.workspaceId} belongs to another hub, not ${hub.id}`);
      }
      const existing = await trx.selectFrom('memberships').select('role').where('user_id', '=', user.id).where('hub_id', '=', hub.id).executeTakeFirst();
      if (existing) throw new DomainError('conflict', `${email} is already a member of hub ${hub.id} (role ${existing.role})`);
      const membership = { userId: user.id, email, hubId: hub.id, role: input.role, workspaceId: input.workspaceId ?? null };
      await trx.insertInto('memberships').values({ user_id: user.id, hub_id: hub.id, role: membership.role, workspace_id: membership.workspaceId }).execute();
      return membership;
    });
  } catch (error) {
    // Two concurrent additions of the same user to the same hub: the primary key decides.
    if (isUniqueViolation(error, 'memberships_pkey')) throw new DomainError('conflict', `${email} is already a member of hub ${input.hubId}`);
    throw error;
  }
}
