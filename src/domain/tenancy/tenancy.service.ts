// Accounts, hubs, users and memberships' one door, and what the web admin shows about a hub beside
// its reports. Input is checked here (with the rules in tenancy.ts, shared with the NDJSON import)
// before any row is read; what the rows say (an unknown hub, a taken email) is decided here too,
// inside the transaction that holds them. The repositories hold the SQL.
import type { Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import { DomainError } from '../../platform/errors.ts';
import { ID_PATTERN, newId } from '../../platform/ids.ts';
import { hashPassword } from '../../platform/password.ts';
import { isTimeZoneName } from '../../platform/time.ts';
import { randomBytes } from 'node:crypto';
import {
  hubName as findHubName,
  hubPlaybooks as findHubPlaybooks,
  hubWorkspaces as findHubWorkspaces,
  visibleFieldKeys as findVisibleFieldKeys,
} from './hub-directory.repository.ts';
import { check, emailProblem, nameProblem, normaliseEmail, passwordProblem, PLANS, ROLES, type Plan, type Role } from './tenancy.ts';
import {
  emailTaken,
  findHub,
  insertAccount,
  insertHub,
  insertMembership,
  insertUser,
  isUniqueViolation,
  lockAccount,
  lockHub,
  lockUserByEmail,
  lockWorkspace,
  membershipRole,
  updateHubSuspended,
  listAccounts as findAccounts,
  listHubs as findAllHubs,
  listUsers as findUsers,
  replacePasswordHash,
  insertWorkspace,
  workspaceExists,
  type AccountListing,
  type HubListing,
  type UserListing,
  type Account,
  type Hub,
  type Membership,
  type User,
} from './tenancy.repository.ts';

export type { Account, AccountListing, Hub, HubListing, Membership, User, UserListing } from './tenancy.repository.ts';

function checkRole(role: Role): void {
  if (!ROLES.includes(role)) throw new DomainError('invalid', `role must be one of ${ROLES.join(', ')}`);
}

export async function createAccount(db: Db, input: { name: string; plan?: Plan; apiAccess?: boolean }): Promise<Account> {
  check('account name', nameProblem(input.name));
  const plan = input.plan ?? 'standard';
  if (!PLANS.includes(plan)) throw new DomainError('invalid', `plan must be one of ${PLANS.join(', ')}`);
  return insertAccount(db, { name: input.name, plan, apiAccess: input.apiAccess ?? false });
}

export async function createHub(db: Db, input: { accountId: string; name: string }): Promise<Hub> {
  check('hub name', nameProblem(input.name));
  return db.kysely.transaction().execute(async (trx) => {
    if (!(await lockAccount(trx, input.accountId))) throw new DomainError('not_found', `account ${input.accountId} does not exist`);
    return insertHub(trx, input);
  });
}

/** The hub (locked until the transaction ends); refuses an unknown hub. */
async function existingHub(trx: Transaction<Database>, hubId: string): Promise<{ id: string; accountId: string }> {
  const hub = await lockHub(trx, hubId);
  if (!hub) throw new DomainError('not_found', `hub ${hubId} does not exist`);
  return hub;
}

/** Refuses a workspace that does not exist or belongs to another hub than `hubId` (the workspace stays locked). */
async function checkWorkspaceOf(trx: Transaction<Database>, workspaceId: string | undefined, hubId: string): Promise<void> {
  if (workspaceId === undefined) return;
  const workspace = await lockWorkspace(trx, workspaceId);
  if (!workspace) throw new DomainError('not_found', `workspace ${workspaceId} does not exist`);
  if (workspace.hubId !== hubId) throw new DomainError('invalid', `workspace ${workspaceId} belongs to another hub, not ${hubId}`);
}

export async function getHub(db: Db, hubId: string): Promise<Hub> {
  const hub = await findHub(db, hubId);
  if (!hub) throw new DomainError('not_found', `hub ${hubId} does not exist`);
  return hub;
}

/** Suspends or restores a hub's access; the Hub API answers 403 while it is suspended. */
export async function setHubSuspended(db: Db, hubId: string, suspended: boolean): Promise<{ id: string; suspended: boolean }> {
  const hub = await updateHubSuspended(db, hubId, suspended);
  if (!hub) throw new DomainError('not_found', `hub ${hubId} does not exist`);
  return hub;
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
  checkRole(input.role);
  // Hashing takes ~0.1 s: do it before the transaction, not while holding locks.
  const passwordHash = await hashPassword(input.password);
  try {
    return await db.kysely.transaction().execute(async (trx) => {
      const hub = await existingHub(trx, input.hubId);
      await checkWorkspaceOf(trx, input.workspaceId, hub.id);
      if (await emailTaken(trx, email)) throw new DomainError('conflict', `a user with email ${email} already exists`);
      const user: User = {
        id: newId('usr'),
        accountId: hub.accountId,
        email,
        firstname: input.firstname,
        lastname: input.lastname,
        hubId: hub.id,
        role: input.role,
        workspaceId: input.workspaceId ?? null,
        staff: input.staff ?? false,
      };
      await insertUser(trx, user, passwordHash);
      return user;
    });
  } catch (error) {
    // Two concurrent creations of the same address: the unique index decides, the reason stays human.
    if (isUniqueViolation(error, 'users_email_key')) throw new DomainError('conflict', `a user with email ${email} already exists`);
    throw error;
  }
}

/**
 * Gives an existing user a role in another hub of their account. A user belongs to one account
 * (its plan and API access apply to them), so a hub of another account is refused. Nothing is
 * written on a refusal.
 */
export async function addUserToHub(
  db: Db,
  input: { email: string; hubId: string; role: Role; workspaceId?: string | undefined },
): Promise<Membership> {
  const email = normaliseEmail(input.email);
  checkRole(input.role);
  try {
    return await db.kysely.transaction().execute(async (trx) => {
      const user = await lockUserByEmail(trx, email);
      if (!user) throw new DomainError('not_found', `no user has the email ${email} (create one with: hubops users create)`);
      const hub = await existingHub(trx, input.hubId);
      if (hub.accountId !== user.accountId) {
        throw new DomainError(
          'rejected',
          `hub ${hub.id} belongs to account ${hub.accountId}, and ${email} to account ${user.accountId}; a user can only join hubs of their own account`,
        );
      }
      await checkWorkspaceOf(trx, input.workspaceId, hub.id);
      const existing = await membershipRole(trx, user.id, hub.id);
      if (existing) throw new DomainError('conflict', `${email} is already a member of hub ${hub.id} (role ${existing})`);
      const membership = { userId: user.id, email, hubId: hub.id, role: input.role, workspaceId: input.workspaceId ?? null };
      await insertMembership(trx, membership);
      return membership;
    });
  } catch (error) {
    // Two concurrent additions of the same user to the same hub: the primary key decides.
    if (isUniqueViolation(error, 'memberships_pkey'))
      throw new DomainError('conflict', `${email} is already a member of hub ${input.hubId}`);
    throw error;
  }
}

/** The hub's name; undefined for an unknown hub. */
export async function hubName(db: Db, hubId: string): Promise<string | undefined> {
  return findHubName(db, hubId);
}

/** The hub's non-archived custom field keys, in byte order (the CSV's field_<key> columns). */
export async function visibleFieldKeys(db: Db, hubId: string): Promise<string[]> {
  return findVisibleFieldKeys(db, hubId);
}

/** Up to 1000 playbooks of the hub by name, for a filter's choices. */
export async function hubPlaybooks(db: Db, hubId: string): Promise<{ id: string; name: string }[]> {
  return findHubPlaybooks(db, hubId);
}

/** Up to `limit` workspaces of the hub by name, for a filter's choices. */
export async function hubWorkspaces(db: Db, hubId: string, limit?: number): Promise<{ id: string; name: string }[]> {
  return findHubWorkspaces(db, hubId, limit);
}

/** Every account, with its number of hubs (the operator's `hubops accounts list`). */
export async function listAccounts(db: Db): Promise<AccountListing[]> {
  return findAccounts(db);
}

/** Every hub, or an account's, with its number of workspaces; refuses an unknown account. */
export async function listHubs(db: Db, accountId?: string): Promise<HubListing[]> {
  const hubs = await findAllHubs(db, accountId);
  if (accountId !== undefined && hubs.length === 0 && !(await db.kysely.transaction().execute((trx) => lockAccount(trx, accountId))))
    throw new DomainError('not_found', `account ${accountId} does not exist`);
  return hubs;
}

/** Every user with their roles, or those with a role in one hub; refuses an unknown hub. */
export async function listUsers(db: Db, filter: { hubId?: string | undefined } = {}): Promise<UserListing[]> {
  if (filter.hubId !== undefined) await getHub(db, filter.hubId);
  return findUsers(db, filter);
}

/** A password hubops makes up: 16 characters of base64url (96 bits), no characters that need quoting in a shell. */
export function generatePassword(): string {
  return randomBytes(12).toString('base64url');
}

/**
 * Gives a user a new password and signs them out of the web admin everywhere (their sessions
 * end; OAuth grants they gave stay, revoked in Connected apps if need be).
 */
export async function resetPassword(
  db: Db,
  input: { email: string; password: string },
): Promise<{ id: string; email: string; sessionsEnded: number }> {
  const email = normaliseEmail(input.email);
  check('password', passwordProblem(input.password));
  const passwordHash = await hashPassword(input.password);
  const user = await replacePasswordHash(db, email, passwordHash);
  if (!user) throw new DomainError('not_found', `no user has the email ${email}`);
  return { id: user.id, email, sessionsEnded: user.sessionsEnded };
}

/** Creates a workspace (a location) in a hub: its own id if given (as the NDJSON import takes it), else a new one. */
export async function createWorkspace(
  db: Db,
  input: { hubId: string; name: string; id?: string | undefined; timezone?: string | undefined },
): Promise<{ id: string; hubId: string; name: string; timezone: string }> {
  check('workspace name', nameProblem(input.name));
  if (input.id !== undefined && !ID_PATTERN.test(input.id))
    throw new DomainError('invalid', `workspace id must be 1-64 letters, digits, _ or -, got ${JSON.stringify(input.id)}`);
  const timezone = input.timezone ?? 'UTC';
  if (!isTimeZoneName(timezone))
    throw new DomainError('invalid', `timezone must be an IANA time zone like America/Denver, got ${JSON.stringify(timezone)}`);
  const workspace = { id: input.id ?? newId('ws'), hubId: input.hubId, name: input.name, timezone };
  try {
    return await db.kysely.transaction().execute(async (trx) => {
      await existingHub(trx, input.hubId);
      if (await workspaceExists(trx, workspace.id)) throw new DomainError('conflict', `workspace ${workspace.id} already exists`);
      await insertWorkspace(trx, workspace);
      return workspace;
    });
  } catch (error) {
    if (isUniqueViolation(error, 'workspaces_pkey')) throw new DomainError('conflict', `workspace ${workspace.id} already exists`);
    throw error;
  }
}
