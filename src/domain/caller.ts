/**
 * Who calls a service: a user acting in one hub (and, for a member pinned to a location or a hub
 * admin who chose one when connecting, one workspace), through one client application. The
 * surfaces resolve it (the main API from the access token); services only read it.
 */
export interface Caller {
  user: { id: string; email: string; firstname: string; lastname: string; isStaff: boolean };
  account: { id: string; plan: 'standard' | 'partner' };
  hub: { id: string; name: string };
  /** The active workspace; null when a hub admin acts across the whole hub. */
  workspace: { id: string; name: string } | null;
  role: 'hub_admin' | 'member';
  /** The OAuth client the call came through: idempotency keys are the user's per client. */
  clientId: string;
}
