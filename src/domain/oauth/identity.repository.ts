import type { Db } from '../../db/database.ts';

// The SQL of who may sign in, what they may consent to, and who a grant acts as; identity.service.ts decides.

/** The user with this (normalised) email and their password hash, or undefined. */
export async function findCredentials(db: Db, email: string): Promise<{ id: string; email: string; passwordHash: string } | undefined> {
  const user = await db.kysely.selectFrom('users').select(['id', 'email', 'password_hash']).where('email', '=', email).executeTakeFirst();
  return user && { id: user.id, email: user.email, passwordHash: user.password_hash };
}

/** The user, whether they are staff and whether their account has API access; undefined for an unknown user. */
export async function findConsentUser(
  db: Db,
  userId: string,
): Promise<{ id: string; email: string; isStaff: boolean; accountApiAccess: boolean } | undefined> {
  const user = await db.kysely
    .selectFrom('users as u')
    .innerJoin('accounts as a', 'a.id', 'u.account_id')
    .select(['u.id', 'u.email', 'u.is_staff', 'a.api_access'])
    .where('u.id', '=', userId)
    .executeTakeFirst();
  return user && { id: user.id, email: user.email, isStaff: user.is_staff, accountApiAccess: user.api_access };
}

export interface MembershipRow {
  hubId: string;
  hubName: string;
  role: 'hub_admin' | 'member';
  /** The membership's workspace and its name, or null. */
  workspace: { id: string; name: string } | null;
}

/** The user's memberships in hubs that are not suspended, by hub name. */
export async function findLiveMemberships(db: Db, userId: string): Promise<MembershipRow[]> {
  const rows = await db.kysely
    .selectFrom('memberships as m')
    .innerJoin('hubs as h', 'h.id', 'm.hub_id')
    .leftJoin('workspaces as w', 'w.id', 'm.workspace_id')
    .select(['m.hub_id', 'h.name as hub_name', 'm.role', 'w.id as workspace_id', 'w.name as workspace_name'])
    .where('m.user_id', '=', userId)
    .where('h.suspended', '=', false)
    .orderBy('h.name')
    .orderBy('m.hub_id')
    .execute();
  return rows.map((m) => ({
    hubId: m.hub_id,
    hubName: m.hub_name,
    role: m.role,
    workspace: m.workspace_id ? { id: m.workspace_id, name: m.workspace_name! } : null,
  }));
}

/** The workspaces of these hubs, by name. */
export async function findWorkspacesOfHubs(db: Db, hubIds: string[]): Promise<{ id: string; name: string; hubId: string }[]> {
  if (hubIds.length === 0) return [];
  const rows = await db.kysely
    .selectFrom('workspaces')
    .select(['id', 'name', 'hub_id'])
    .where('hub_id', 'in', hubIds)
    .orderBy('name')
    .orderBy('id')
    .execute();
  return rows.map((w) => ({ id: w.id, name: w.name, hubId: w.hub_id }));
}

/**
 * Records the hub and workspace a new grant acts in. Written once: a grant's context never
 * changes after tokens were issued from it (a new consent makes a new grant; migration 011
 * refuses updates), so a token never gains or moves access after it was issued.
 */
export async function saveGrantContext(
  db: Db,
  context: { grantId: string; userId: string; hubId: string; workspaceId: string | null },
): Promise<void> {
  await db.kysely
    .insertInto('oauth_grant_contexts')
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

/** A grant's context joined with its user, account, hub and the user's membership there (and the workspace it is pinned to); undefined without a membership. */
export async function findGrantIdentity(
  db: Db,
  grantId: string,
  userId: string,
): Promise<(GrantIdentity & { pinnedWorkspaceId: string | null }) | undefined> {
  const row = await db.kysely
    .selectFrom('oauth_grant_contexts as g')
    .innerJoin('users as u', 'u.id', 'g.user_id')
    .innerJoin('accounts as a', 'a.id', 'u.account_id')
    .innerJoin('hubs as h', 'h.id', 'g.hub_id')
    .innerJoin('memberships as m', (join) => join.onRef('m.user_id', '=', 'g.user_id').onRef('m.hub_id', '=', 'g.hub_id'))
    .leftJoin('workspaces as w', 'w.id', 'g.workspace_id')
    .select([
      'u.id as user_id',
      'u.email',
      'u.firstname',
      'u.lastname',
      'u.is_staff',
      'a.id as account_id',
      'a.plan',
      'a.api_access',
      'h.id as hub_id',
      'h.name as hub_name',
      'h.suspended',
      'w.id as workspace_id',
      'w.name as workspace_name',
      'm.role',
      'm.workspace_id as pinned_workspace_id',
    ])
    .where('g.grant_id', '=', grantId)
    .where('g.user_id', '=', userId)
    .executeTakeFirst();
  return (
    row && {
      user: { id: row.user_id, email: row.email, firstname: row.firstname, lastname: row.lastname, isStaff: row.is_staff },
      account: { id: row.account_id, plan: row.plan, apiAccess: row.api_access },
      hub: { id: row.hub_id, name: row.hub_name, suspended: row.suspended },
      workspace: row.workspace_id ? { id: row.workspace_id, name: row.workspace_name! } : null,
      role: row.role,
      pinnedWorkspaceId: row.pinned_workspace_id,
    }
  );
}
