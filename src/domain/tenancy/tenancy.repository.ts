import type { Db } from '../../db/database.ts';
import { DomainError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { hashPassword } from '../../platform/password.ts';

// Accounts own hubs; users belong to an account and hold a role in a hub (a membership row).
// The rules below are shared with the NDJSON import, so both refuse exactly the same input.
// The *Problem functions return the reason without the subject ("must be …"), so callers can
// put it after a flag name or an import field path.

export const PLANS = ['standard', 'partner'] as const;
export type Plan = (typeof PLANS)[number];
export const ROLES = ['hub_admin', 'member'] as const;
export type Role = (typeof ROLES)[number];
const PASSWORD_MIN_LENGTH = 8;
// scrypt accepts any length; the cap only stops a megabyte "password" from being hashed.
const PASSWORD_MAX_LENGTH = 1024;
const EMAIL_PATTERN = /^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/;

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

/** Names are kept exactly as given (trailing spaces included) but must show something. */
export function nameProblem(name: string, max = 200): string | undefined {
  if (name.length < 1 || name.length > max) return `must be 1 to ${max} characters`;
  if (name.trim() === '') return 'must not be blank';
  return undefined;
}

export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** For an address already passed through normaliseEmail. */
export function emailProblem(email: string): string | undefined {
  if (email.length > 254 || !EMAIL_PATTERN.test(email)) return 'must be an email address like name@example.com';
  return undefined;
}

export function passwordProblem(password: string): string | undefined {
  const length = [...password].length;
  if (length < PASSWORD_MIN_LENGTH) return `must be at least ${PASSWORD_MIN_LENGTH} characters`;
  if (length > PASSWORD_MAX_LENGTH) return `must be at most ${PASSWORD_MAX_LENGTH} characters`;
  return undefined;
}

function check(subject: string, problem: string | undefined): void {
  if (problem) throw new DomainError('invalid', `${subject} ${problem}`);
}

function isUniqueViolation(error: unknown, constraint: string): boolean {
  const e = error as { code?: string; constraint?: string };
  return e.code === '23505' && e.constraint === constraint;
}

export async function createAccount(db: Db, input: { name: string; plan?: Plan; apiAccess?: boolean }): Promise<Account> {
  check('account name', nameProblem(input.name));
  const plan = input.plan ?? 'standard';
  if (!PLANS.includes(plan)) throw new DomainError('invalid', `plan must be one of ${PLANS.join(', ')}`);
  const account = { id: newId('acc'), name: input.name, plan, apiAccess: input.apiAccess ?? false };
  await db.kysely
    .insertInto('accounts')
    .values({ id: account.id, name: account.name, plan: account.plan, api_access: account.apiAccess })
    .execute();
  return account;
}

export async function createHub(db: Db, input: { accountId: string; name: string }): Promise<Hub> {
  check('hub name', nameProblem(input.name));
  return db.kysely.transaction().execute(async (trx) => {
    // FOR SHARE: the account cannot disappear between this check and the insert.
    const account = await trx.selectFrom('accounts').select('id').where('id', '=', input.accountId).forShare().executeTakeFirst();
    if (!account) throw new DomainError('not_found', `account ${input.accountId} does not exist`);
    const hub = { id: newId('hub'), accountId: input.accountId, name: input.name, suspended: false };
    await trx.insertInto('hubs').values({ id: hub.id, account_id: hub.accountId, name: hub.name }).execute();
    return hub;
  });
}

export async function getHub(db: Db, hubId: string): Promise<Hub> {
  const row = await db.kysely
    .selectFrom('hubs')
    .select(['id', 'account_id', 'name', 'suspended'])
    .where('id', '=', hubId)
    .executeTakeFirst();
  if (!row) throw new DomainError('not_found', `hub ${hubId} does not exist`);
  return { id: row.id, accountId: row.account_id, name: row.name, suspended: row.suspended };
}

/** Suspends or restores a hub's access; the Hub API answers 403 while it is suspended. */
export async function setHubSuspended(db: Db, hubId: string, suspended: boolean): Promise<{ id: string; suspended: boolean }> {
  const row = await db.kysely
    .updateTable('hubs')
    .set({ suspended })
    .where('id', '=', hubId)
    .returning(['id', 'suspended'])
    .executeTakeFirst();
  if (!row) throw new DomainError('not_found', `hub ${hubId} does not exist`);
  return { id: row.id, suspended: row.suspended };
}

export interface NewUser {
  email: string;
  password: string;
  firstname: string;
  lastname: string;
  hubId: string;
  role: Role;
  /** The workspace a member is pinned to (for a hub admin: the one they start in). */
  workspaceId?: string | undefined;
  staff?: boolean | undefined;
}

/** Creates a user in the hub's account with a membership (role) in that hub. */
export async function createUser(db: Db, input: NewUser): Promise<User> {
  const email = normaliseEmail(input.email);
  check('email', emailProblem(email));
  check('password', passwordProblem(input.password));
  check('firstname', nameProblem(input.firstname, 100));
  check('lastname', nameProblem(input.lastname, 100));
  if (!ROLES.includes(input.role)) throw new DomainError('invalid', `role must be one of ${ROLES.join(', ')}`);
  // Hashing takes ~0.1 s: do it before the transaction, not while holding locks.
  const passwordHash = await hashPassword(input.password);
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

/**
 * Gives an existing user a role in another hub of their account. A user belongs to one account
 * (its plan and API access apply to them), so a hub of another account is refused. Nothing is
 * written on a refusal.
 */
export async function addUserToHub(db: Db, input: { email: string; hubId: string; role: Role; workspaceId?: string | undefined }): Promise<Membership> {
  const email = normaliseEmail(input.email);
  if (!ROLES.includes(input.role)) throw new DomainError('invalid', `role must be one of ${ROLES.join(', ')}`);
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
