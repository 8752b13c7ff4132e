import type { Db } from '../../db/database.ts';
import { DomainError } from '../../platform/errors.ts';
import { grantIdOf, liveGrants, ofHubsExceptUser, ofUser, revokeGrant, type GrantRow } from './grants.repository.ts';

// Connected apps: which OAuth grants a user sees and may revoke. Everyone sees and revokes their
// own; a hub admin also those of other users acting in a hub they administer. Anything else is
// "not found", never "forbidden": a grant reference tells nobody whether it exists elsewhere.

/** Who is looking: the user, and the hubs they administer. */
export interface GrantViewer {
  userId: string;
  adminHubIds: string[];
}

export interface ConnectedApp {
  /** The grant's public reference (the page's handle for it; not the grant id). */
  ref: string;
  client: { id: string; name: string };
  user: { id: string; email: string; name: string };
  hub: { id: string; name: string };
  /** The workspace its tokens act in; null: the whole hub. */
  workspace: { id: string; name: string } | null;
  /** The scopes granted, over every resource (the REST API, the MCP server). */
  scopes: string[];
  authorisedAt: string;
  lastUsedAt: string | null;
}

/** At most this many grants per list, newest first. */
export const CONNECTED_APPS_SHOWN = 200;

const REF = /^[0-9a-f]{64}$/;

function toApp(row: GrantRow): ConnectedApp {
  const scopes = new Set(
    Object.values(row.resources ?? {})
      .flatMap((s) => (typeof s === 'string' ? s.split(' ') : []))
      .filter(Boolean),
  );
  return {
    ref: row.ref,
    client: { id: row.client_id, name: row.client_name?.trim() || row.client_id },
    user: { id: row.user_id, email: row.email, name: `${row.firstname} ${row.lastname}`.trim() },
    hub: { id: row.hub_id, name: row.hub_name },
    workspace: row.workspace_id ? { id: row.workspace_id, name: row.workspace_name ?? row.workspace_id } : null,
    scopes: [...scopes].sort(),
    authorisedAt: row.created_at.toISOString(),
    lastUsedAt: row.last_used_at?.toISOString() ?? null,
  };
}

export interface ConnectedApps {
  own: ConnectedApp[];
  /** Other users' grants in the hubs the viewer administers (empty for a member). */
  others: ConnectedApp[];
  /** Whether a list holds CONNECTED_APPS_SHOWN and more exist. */
  truncated: boolean;
}

export async function connectedApps(db: Db, viewer: GrantViewer): Promise<ConnectedApps> {
  const [own, others] = await Promise.all([
    liveGrants(db, ofUser(viewer.userId), CONNECTED_APPS_SHOWN + 1),
    viewer.adminHubIds.length ? liveGrants(db, ofHubsExceptUser(viewer.adminHubIds, viewer.userId), CONNECTED_APPS_SHOWN + 1) : [],
  ]);
  return {
    own: own.slice(0, CONNECTED_APPS_SHOWN).map(toApp),
    others: others.slice(0, CONNECTED_APPS_SHOWN).map(toApp),
    truncated: own.length > CONNECTED_APPS_SHOWN || others.length > CONNECTED_APPS_SHOWN,
  };
}

/**
 * Revokes the grant with this reference and every token issued from it, on every instance at once
 * (`signal` empties this instance's token verdicts; the NOTIFY the others'). Revoking a grant that
 * is already revoked changes nothing. Throws not_found for a reference the viewer may not revoke.
 */
export async function revokeConnectedApp(db: Db, viewer: GrantViewer, ref: string, signal: { revoked(): void } | undefined): Promise<void> {
  const grantId = REF.test(ref) ? await grantIdOf(db, ref, { userId: viewer.userId, hubIds: viewer.adminHubIds }) : undefined;
  if (!grantId) throw new DomainError('not_found', 'no such connected app');
  await revokeGrant(db, grantId, signal);
}
