import { sql, type Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import { newId } from '../../platform/ids.ts';
import type { Plan, Role } from './tenancy.ts';

// The SQL of accounts, hubs, users and memberships; tenancy.service.ts decides. The lock* reads
// take FOR SHARE: the row cannot disappear before the caller's transaction inserts what refers to it.

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

/** Whether an error is the violation of this unique constraint (a concurrent writer got there first). */
export function isUniqueViolation(error: unknown, constraint: string): boolean {
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

export async function lockAccount(trx: Transaction<Database>, accountId: string): Promise<boolean> {
  return (await trx.selectFrom('accounts').select('id').where('id', '=', accountId).forShare().executeTakeFirst()) !== undefined;
}

export async function insertHub(trx: Transaction<Database>, input: { accountId: string; name: string }): Promise<Hub> {
  const hub = { id: newId('hub'), accountId: input.accountId, name: input.name, suspended: false };
  await trx.insertInto('hubs').values({ id: hub.id, account_id: hub.accountId, name: hub.name }).execute();
  return hub;
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
export async function updateHubSuspended(
  db: Db,
  hubId: string,
  suspended: boolean,
): Promise<{ id: string; suspended: boolean } | undefined> {
  const row = await db.kysely
    .updateTable('hubs')
    .set({ suspended })
    .where('id', '=', hubId)
    .returning(['id', 'suspended'])
    .executeTakeFirst();
  return row;
}

export async function lockHub(trx: Transaction<Database>, hubId: string): Promise<{ id: string; accountId: string } | undefined> {
  const hub = await trx.selectFrom('hubs').select(['id', 'account_id']).where('id', '=', hubId).forShare().executeTakeFirst();
  return hub && { id: hub.id, accountId: hub.account_id };
}

export async function lockWorkspace(trx: Transaction<Database>, workspaceId: string): Promise<{ hubId: string } | undefined> {
  const workspace = await trx.selectFrom('workspaces').select('hub_id').where('id', '=', workspaceId).forShare().executeTakeFirst();
  return workspace && { hubId: workspace.hub_id };
}

/** Whether a user has this (normalised) email. */
export async function emailTaken(trx: Transaction<Database>, email: string): Promise<boolean> {
  return (await trx.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst()) !== undefined;
}

export async function lockUserByEmail(trx: Transaction<Database>, email: string): Promise<{ id: string; accountId: string } | undefined> {
  const user = await trx.selectFrom('users').select(['id', 'account_id']).where('email', '=', email).forShare().executeTakeFirst();
  return user && { id: user.id, accountId: user.account_id };
}

/** Inserts the user (the password already hashed) and their membership in the user's hub. */
export async function insertUser(trx: Transaction<Database>, user: User, passwordHash: string): Promise<void> {
  await trx
    .insertInto('users')
    .values({
      id: user.id,
      account_id: user.accountId,
      email: user.email,
      password_hash: passwordHash,
      firstname: user.firstname,
      lastname: user.lastname,
      is_staff: user.staff,
    })
    .execute();
  await trx
    .insertInto('memberships')
    .values({ user_id: user.id, hub_id: user.hubId, role: user.role, workspace_id: user.workspaceId })
    .execute();
}

export interface Membership {
  userId: string;
  email: string;
  hubId: string;
  role: Role;
  workspaceId: string | null;
}

/** The user's role in the hub, or undefined when they are not a member. */
export async function membershipRole(trx: Transaction<Database>, userId: string, hubId: string): Promise<Role | undefined> {
  const existing = await trx
    .selectFrom('memberships')
    .select('role')
    .where('user_id', '=', userId)
    .where('hub_id', '=', hubId)
    .executeTakeFirst();
  return existing?.role;
}

export async function insertMembership(trx: Transaction<Database>, membership: Membership): Promise<void> {
  await trx
    .insertInto('memberships')
    .values({ user_id: membership.userId, hub_id: membership.hubId, role: membership.role, workspace_id: membership.workspaceId })
    .execute();
}

// The operator's listings (hubops accounts|hubs|users|workspaces list), ordered by id.

export interface AccountListing extends Account {
  hubs: number;
  createdAt: Date;
}

export async function listAccounts(db: Db): Promise<AccountListing[]> {
  const rows = await db.kysely
    .selectFrom('accounts as a')
    .select((eb) => [
      'a.id',
      'a.name',
      'a.plan',
      'a.api_access',
      'a.created_at',
      eb.selectFrom('hubs').select(eb.fn.countAll<string>().as('n')).whereRef('hubs.account_id', '=', 'a.id').as('hubs'),
    ])
    .orderBy(sql`a.id COLLATE "C"`)
    .execute();
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    plan: r.plan,
    apiAccess: r.api_access,
    hubs: Number(r.hubs ?? 0),
    createdAt: r.created_at,
  }));
}

export interface HubListing extends Hub {
  workspaces: number;
  createdAt: Date;
}

export async function listHubs(db: Db, accountId: string | undefined): Promise<HubListing[]> {
  let query = db.kysely
    .selectFrom('hubs as h')
    .select((eb) => [
      'h.id',
      'h.account_id',
      'h.name',
      'h.suspended',
      'h.created_at',
      eb.selectFrom('workspaces').select(eb.fn.countAll<string>().as('n')).whereRef('workspaces.hub_id', '=', 'h.id').as('workspaces'),
    ]);
  if (accountId !== undefined) query = query.where('h.account_id', '=', accountId);
  const rows = await query.orderBy(sql`h.id COLLATE "C"`).execute();
  return rows.map((r) => ({
    id: r.id,
    accountId: r.account_id,
    name: r.name,
    suspended: r.suspended,
    workspaces: Number(r.workspaces ?? 0),
    createdAt: r.created_at,
  }));
}

export interface UserListing {
  id: string;
  accountId: string;
  email: string;
  firstname: string;
  lastname: string;
  staff: boolean;
  createdAt: Date;
  memberships: { hubId: string; role: Role; workspaceId: string | null }[];
}

/** Users with their memberships; with `hubId`, only the users with a role in that hub. */
export async function listUsers(db: Db, filter: { hubId?: string | undefined; accountId?: string | undefined }): Promise<UserListing[]> {
  let query = db.kysely
    .selectFrom('users as u')
    .select(['u.id', 'u.account_id', 'u.email', 'u.firstname', 'u.lastname', 'u.is_staff', 'u.created_at']);
  if (filter.accountId !== undefined) query = query.where('u.account_id', '=', filter.accountId);
  if (filter.hubId !== undefined)
    query = query.where(({ exists, selectFrom }) =>
      exists(selectFrom('memberships as m').select('m.user_id').whereRef('m.user_id', '=', 'u.id').where('m.hub_id', '=', filter.hubId!)),
    );
  const users = await query.orderBy(sql`u.id COLLATE "C"`).execute();
  if (users.length === 0) return [];
  const memberships = await db.kysely
    .selectFrom('memberships')
    .select(['user_id', 'hub_id', 'role', 'workspace_id'])
    .where(
      'user_id',
      'in',
      users.map((u) => u.id),
    )
    .orderBy(sql`hub_id COLLATE "C"`)
    .execute();
  return users.map((u) => ({
    id: u.id,
    accountId: u.account_id,
    email: u.email,
    firstname: u.firstname,
    lastname: u.lastname,
    staff: u.is_staff,
    createdAt: u.created_at,
    memberships: memberships.filter((m) => m.user_id === u.id).map((m) => ({ hubId: m.hub_id, role: m.role, workspaceId: m.workspace_id })),
  }));
}

/** Sets a user's password hash and ends their web sessions; undefined for an unknown email. */
export async function replacePasswordHash(
  db: Db,
  email: string,
  passwordHash: string,
): Promise<{ id: string; sessionsEnded: number } | undefined> {
  return db.kysely.transaction().execute(async (trx) => {
    const user = await trx
      .updateTable('users')
      .set({ password_hash: passwordHash })
      .where('email', '=', email)
      .returning('id')
      .executeTakeFirst();
    if (!user) return undefined;
    const ended = await sql`DELETE FROM web_sessions WHERE user_id = ${user.id}`.execute(trx);
    return { id: user.id, sessionsEnded: Number(ended.numAffectedRows ?? 0) };
  });
}

export interface NewWorkspace {
  id: string;
  hubId: string;
  name: string;
  timezone: string;
}

export async function insertWorkspace(trx: Transaction<Database>, workspace: NewWorkspace): Promise<void> {
  await trx
    .insertInto('workspaces')
    .values({ id: workspace.id, hub_id: workspace.hubId, name: workspace.name, timezone: workspace.timezone })
    .execute();
}

export async function workspaceExists(trx: Transaction<Database>, id: string): Promise<boolean> {
  return (await trx.selectFrom('workspaces').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
}
