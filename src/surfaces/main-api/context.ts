import type { Db } from '../../db/database.ts';
import type { MediaStore } from '../../domain/media/media-store.ts';
import type { Clock } from '../../platform/clock.ts';

/**
 * Who is calling the main API: a user acting in one hub (and, for a member pinned to a location
 * or a hub admin who chose one at consent, one workspace), through one OAuth client. Resolved
 * from the access token on every request.
 */
export interface Principal {
  user: { id: string; email: string; firstname: string; lastname: string; isStaff: boolean };
  account: { id: string; plan: 'standard' | 'partner' };
  hub: { id: string; name: string };
  /** The active workspace; null when a hub admin acts across the whole hub. */
  workspace: { id: string; name: string } | null;
  role: 'hub_admin' | 'member';
  clientId: string;
  scope: string;
}

/** The tenancy every main API query filters by: the hub, and the workspace when one is active. */
export interface WorkspaceScope {
  hubId: string;
  /** null: every workspace of the hub (a hub admin acting hub-wide). */
  workspaceId: string | null;
}

export function scopeOf(principal: Principal): WorkspaceScope {
  return { hubId: principal.hub.id, workspaceId: principal.workspace?.id ?? null };
}

/** What every main API operation runs with. */
export interface MainContext {
  db: Db;
  clock: Clock;
  principal: Principal;
  /** Where uploaded media bytes are kept ($DATA_DIR/media). */
  media: MediaStore;
  /** The request's `Idempotency-Key` header (REST POSTs); undefined when none was sent. */
  idempotencyKey?: string | undefined;
  /** Adds a header to the response (REST only), e.g. `Idempotent-Replayed: true` on a replay. */
  setResponseHeader?: ((name: string, value: string) => void) | undefined;
}
