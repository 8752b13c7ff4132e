import type { Db } from '../../db/database.ts';
import { hashPassword, verifyPassword } from '../../platform/password.ts';
import { normaliseEmail } from '../tenancy/tenancy.ts';

// Who may sign in, what they may consent to, and who a grant acts as.

// Verified against when the email is unknown, so a wrong email costs the same time as a wrong
// password and response times don't reveal which emails exist.
const decoyHash = hashPassword('decoy password that matches nothing');

/** The user for these credentials, or undefined. Takes the same time whether or not the email exists. */
export async function checkCredentials(db: Db, email: string, password: string): Promise<{ id: string; email: string } | undefined> {
  const user = await db.kysely
    .selectFrom('users')
    .select(['id', 'email', 'password_hash'])
    .where('email', '=', normaliseEmail(email))
    .executeTakeFirst();
  const matches = await verifyPassword(password, user?.password_hash ?? (await decoyHash));
  return user && matches ? { id: user.id, email: user.email } : undefined;
}

export interface ConsentOptions {
  user: { id: string; email: string; isStaff: boolean };
  /** Whether the user may authorise API clients: the account has API access, or the user is staff. */
  apiAccess: boolean;
  hubs: {
    hubId: string;
    hubName: string;
    role: 'hub_admin' | 'member';
    pinned: { id: string; name: string } | null;
    /** Workspaces a hub admin may choose to act in. */
    workspaces: { id: string; name: string }[];
  }[];
}

export async function consentOptions(db: Db, userId: string): Promise<ConsentOptions | undefined> {
  const user = await db.kysely
    .selectFrom('users as u')
    .innerJoin('accounts as a', 'a.id', 'u.account_id')
    .select(['u.id', 'u.email', 'u.is_staff', 'a.api_access'])
    .where('u.id', '=', userId)
    .executeTakeFirst();
  if (!user) return undefined;
  const memberships = await db.kysely
    .selectFrom('memberships as m')
    .innerJoin('hubs as h', 'h.id', 'm.hub_id')
    .leftJoin('workspaces as w', 'w.id', 'm.workspace_id')
    .select(['m.hub_id', 'h.name as hub_name', 'm.role', 'w.id as workspace_id', 'w.name as workspace_name'])
    .where('m.user_id', '=', userId)
    .where('h.suspended', '=', false)
    .orderBy('h.name')
    .orderBy('m.hub_id')
    .execute();
  const adminHubs = memberships.filter((m) => m.role === 'hub_admin').map((m) => m.hub_id);
  const workspaces = adminHubs.length === 0 ? [] : await db.kysely
    .selectFrom('workspaces')
    .select(['id', 'name', 'hub_id'])
    .where('hub_id', 'in', adminHubs)
    .orderBy('name')
    .orderBy('id')
    .execute();
  return {
    user: { id: user.id, email: user.email, isStaff: user.is_staff },
    apiAccess: user.api_access || user.is_staff,
    // A member not assigned to a workspace has nothing a token could act in.
    hubs: memberships.filter((m) => m.role === 'hub_admin' || m.workspace_id).map((m) => ({
      hubId: m.hub_id,
      hubName: m.hub_name,
      role: m.role,
      // A member acts in their workspace only; a hub admin's workspace is just where they start.
      pinned: m.role === 'member' && m.workspace_id ? { id: m.workspace_id, name: m.workspace_name! } : null,
      workspaces: m.role === 'hub_admin' ? workspaces.filter((w) => w.hub_id === m.hub_id).map(({ id, name }) => ({ id, name })) : [],
    })),
  };
}

/**
 * Records the hub and workspace a new grant acts in. Written once: a grant's context never
 * changes after tokens were issued from it (a new consent makes a new grant; migration 011
 * refuses updates), so a token never gains or moves access after it was issued.
 */
export async function saveGrantContext(db: Db, context: { grantId: string; userId: string; hubId: string; workspaceId: string | null }): Promise<void> {
  await db.kysely.insertInto('oauth_grant_contexts')
    .values({ grant_id: context.grantId, user_id: context.userId, hub_id: context.hubId, workspace_id: context.workspaceId })
    .execute();
}

export interface GrantIdentity {
  user: { id: string; email: string; firstname: string; lastname: string; isStaff: boolean };
  account: { id: string; plan: 'standard' | 'partner'; apiAccess: boolean };
  hub: { id: string; name: string; suspended: boolean };
  workspace: { id: string; name: string } | null;
  role: 'hub_admin' | 'member';
}

/**
 * Who a grant acts as, read fresh on every request: the user must still be a member of the hub
 * (and, if pinned, of that workspace), so removing a membership cuts the token off at once.
 */
export async function grantIdentity(db: Db, grantId: string, userId: string): Promise<GrantIdentity | undefined> {
  const row = await db.kysely
    .selectFrom('oauth_grant_contexts as g')
    .innerJoin('users as u', 'u.id', 'g.user_id')
    .innerJoin('accounts as a', 'a.id', 'u.account_id')
    .innerJoin('hubs as h', 'h.id', 'g.hub_id')
    .innerJoin('memberships as m', (join) => join.onRef('m.user_id', '=', 'g.user_id').onRef('m.hub_id', '=', 'g.hub_id'))
    .leftJoin('workspaces as w', 'w.id', 'g.workspace_id')
    .select([
      'u.id as user_id', 'u.email', 'u.firstname', 'u.lastname', 'u.is_staff',
      'a.id as account_id', 'a.plan', 'a.api_access',
      'h.id as hub_id', 'h.name as hub_name', 'h.suspended',
      'w.id as workspace_id', 'w.name as workspace_name',
      'm.role', 'm.workspace_id as pinned_workspace_id',
    ])
    .where('g.grant_id', '=', grantId)
    .where('g.user_id', '=', userId)
    .executeTakeFirst();
  if (!row) return undefined;
  // Members are bound to their workspace (one without a workspace gets no hub-wide token).
  if (row.role === 'member' && (!row.workspace_id || row.pinned_workspace_id !== row.workspace_id)) return undefined;
  return {
    user: { id: row.user_id, email: row.email, firstname: row.firstname, lastname: row.lastname, isStaff: row.is_staff },
    account: { id: row.account_id, plan: row.plan, apiAccess: row.api_access },
    hub: { id: row.hub_id, name: row.hub_name, suspended: row.suspended },
    workspace: row.workspace_id ? { id: row.workspace_id, name: row.workspace_name! } : null,
    role: row.role,
  };
}
