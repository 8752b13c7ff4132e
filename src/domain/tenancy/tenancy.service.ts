// Accounts, hubs, users and memberships' one door, and what the web admin shows about a hub beside
// its reports. Input is checked here (with the rules in tenancy.ts, shared with the NDJSON import)
// before any row is read; the repositories hold the SQL.
import type { Db } from '../../db/database.ts';
import { DomainError } from '../../platform/errors.ts';
import { hashPassword } from '../../platform/password.ts';
import { hubName as findHubName, hubPlaybooks as findHubPlaybooks, hubWorkspaces as findHubWorkspaces, visibleFieldKeys as findVisibleFieldKeys } from './hub-directory.repository.ts';
import { check, emailProblem, nameProblem, normaliseEmail, passwordProblem, PLANS, ROLES, type Plan, type Role } from './tenancy.ts';
import { findHub, insertAccount, insertHub, insertMembership, insertUser, updateHubSuspended, type Account, type Hub, type Membership, type User } from './tenancy.repository.ts';

export type { Account, Hub, Membership, User } from './tenancy.repository.ts';

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
  return insertHub(db, input);
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
  const { password, ...rest } = input;
  return insertUser(db, { ...rest, email, passwordHash: await hashPassword(password) });
}

/**
 * Gives an existing user a role in another hub of their account. A user belongs to one account
 * (its plan and API access apply to them), so a hub of another account is refused. Nothing is
 * written on a refusal.
 */
export async function addUserToHub(db: Db, input: { email: string; hubId: string; role: Role; workspaceId?: string | undefined }): Promise<Membership> {
  checkRole(input.role);
  return insertMembership(db, { ...input, email: normaliseEmail(input.email) });
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
