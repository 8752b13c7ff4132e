import type { Db } from '../../db/database.ts';
import type { SocialPlatform } from '../../db/schema.ts';
import { AD_TOKEN_EXPIRY_WARNING_MS } from '../../policy.ts';
import { findChannelStatuses, type ChannelStatusRow } from './channel.repository.ts';

// Each channel's state in words a hub admin can act on (Manage Hub → Channels): connected to its
// network, needs reconnect (and why), failing (the last publish failed, in the network's words),
// or a sandbox channel; its last publish, its token's expiry (flagged as ad accounts' are), and the
// deliveries still being confirmed.

export type ChannelState = 'connected' | 'needs_reconnect' | 'failing' | 'sandbox';

export interface ChannelStatusView {
  id: string;
  workspaceId: string;
  workspaceName: string;
  platform: SocialPlatform;
  name: string;
  handle: string | null;
  externalId: string | null;
  connectionLabel: string | null;
  state: ChannelState;
  /** One sentence: what the state means and what to do. */
  stateText: string;
  lastPublishedAt: Date | null;
  failureKind: string | null;
  /** The last failure in the network's words (or ours when the network gave none). */
  failureMessage: string | null;
  failureCode: string | null;
  failingSince: Date | null;
  tokenExpiresAt: Date | null;
  tokenExpiresSoon: boolean;
  unconfirmed: number;
}

/** Failure kinds that only a new connection fixes. */
const RECONNECT_KINDS = new Set(['needs_reconnect', 'missing_permission']);

export function channelState(r: ChannelStatusRow, now: Date): { state: ChannelState; stateText: string } {
  if (!r.connected) return { state: 'needs_reconnect', stateText: 'Disconnected: connect it again; posts to it fail until then.' };
  if (r.token_expires_at && r.token_expires_at.getTime() <= now.getTime())
    return {
      state: 'needs_reconnect',
      stateText: `Its token expired on ${r.token_expires_at.toISOString().slice(0, 10)}: connect it again; posts to it fail until then.`,
    };
  if (r.failure_kind && RECONNECT_KINDS.has(r.failure_kind))
    return {
      state: 'needs_reconnect',
      stateText:
        r.failure_kind === 'missing_permission'
          ? 'The network refused a permission the channel needs: connect it again and grant every permission asked.'
          : 'The network no longer accepts its token (expired or revoked): connect it again.',
    };
  if (r.failure_kind)
    return {
      state: 'failing',
      stateText:
        r.failure_kind === 'not_confirmed'
          ? 'A post could not be confirmed on the network: check the channel before posting it again.'
          : 'Its last publish failed; the next post is tried as usual.',
    };
  if (r.connection_id === null)
    return { state: 'sandbox', stateText: 'Not connected to a network: its posts go to the sandbox (nothing is published).' };
  return { state: 'connected', stateText: 'Connected: scheduled posts publish to it.' };
}

/** The hub's channels with their state, those needing attention first; `total` counts them all. */
export async function channelStatuses(
  db: Db,
  hubId: string,
  now: Date,
  limit = 500,
): Promise<{ channels: ChannelStatusView[]; total: number }> {
  const rows = await findChannelStatuses(db, hubId, limit);
  return {
    total: rows[0]?.total ?? 0,
    channels: rows.map((r) => ({
      id: r.id,
      workspaceId: r.workspace_id,
      workspaceName: r.workspace_name,
      platform: r.platform,
      name: r.name,
      handle: r.handle,
      externalId: r.external_id,
      connectionLabel: r.connection_label,
      ...channelState(r, now),
      lastPublishedAt: r.last_published_at,
      failureKind: r.failure_kind,
      failureMessage: r.failure_message,
      failureCode: r.failure_code,
      failingSince: r.failing_since,
      tokenExpiresAt: r.token_expires_at,
      tokenExpiresSoon: r.token_expires_at !== null && r.token_expires_at.getTime() - now.getTime() < AD_TOKEN_EXPIRY_WARNING_MS,
      unconfirmed: r.unconfirmed,
    })),
  };
}
