// Who may sign in, what they may consent to, and who a grant acts as: the rules, over the SQL of
// identity.repository.ts.
import type { Db } from '../../db/database.ts';
import { hashPassword, verifyPassword } from '../../platform/password.ts';
import { normaliseEmail } from '../tenancy/tenancy.ts';
import {
  findConsentUser,
  findCredentials,
  findGrantIdentity,
  findLiveMemberships,
  findWorkspacesOfHubs,
  saveGrantContext as insertGrantContext,
  type GrantIdentity,
} from './identity.repository.ts';

export type { GrantIdentity } from './identity.repository.ts';

// Verified against when the email is unknown, so a wrong email costs the same time as a wrong
// password and response times don't reveal which emails exist.
const decoyHash = hashPassword('decoy password that matches nothing');

/** The user for these credentials, or undefined. Takes the same time whether or not the email exists. */
export async function checkCredentials(db: Db, email: string, password: string): Promise<{ id: string; email: string } | undefined> {
  const user = await findCredentials(db, normaliseEmail(email));
  const matches = await verifyPassword(password, user?.passwordHash ?? (await decoyHash));
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
  const user = await findConsentUser(db, userId);
  if (!user) return undefined;
  const memberships = await findLiveMemberships(db, userId);
  const workspaces = await findWorkspacesOfHubs(
    db,
    memberships.filter((m) => m.role === 'hub_admin').map((m) => m.hubId),
  );
  return {
    user: { id: user.id, email: user.email, isStaff: user.isStaff },
    apiAccess: user.accountApiAccess || user.isStaff,
    // A member not assigned to a workspace has nothing a token could act in.
    hubs: memberships
      .filter((m) => m.role === 'hub_admin' || m.workspace)
      .map((m) => ({
        hubId: m.hubId,
        hubName: m.hubName,
        role: m.role,
        // A member acts in their workspace only; a hub admin's workspace is just where they start.
        pinned: m.role === 'member' ? m.workspace : null,
        workspaces: m.role === 'hub_admin' ? workspaces.filter((w) => w.hubId === m.hubId).map(({ id, name }) => ({ id, name })) : [],
      })),
  };
}

/**
 * Records the hub and workspace a new grant acts in. Written once: a grant's context never
 * changes after tokens were issued from it, so a token never gains or moves access after it was issued.
 */
export async function saveGrantContext(
  db: Db,
  context: { grantId: string; userId: string; hubId: string; workspaceId: string | null },
): Promise<void> {
  await insertGrantContext(db, context);
}

/**
 * Who a grant acts as, read fresh on every request: the user must still be a member of the hub
 * (and, if pinned, of that workspace), so removing a membership cuts the token off at once.
 */
export async function grantIdentity(db: Db, grantId: string, userId: string): Promise<GrantIdentity | undefined> {
  const found = await findGrantIdentity(db, grantId, userId);
  if (!found) return undefined;
  const { pinnedWorkspaceId, ...identity } = found;
  // Members are bound to their workspace (one without a workspace gets no hub-wide token).
  if (identity.role === 'member' && (!identity.workspace || pinnedWorkspaceId !== identity.workspace.id)) return undefined;
  return identity;
}
