import { sql, type Kysely } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database, SocialPlatform } from '../../db/schema.ts';
import { after, cursorText, type Position } from '../keyset.ts';
import { inScope, type WorkspaceScope } from '../scope.ts';
import type { Channel } from './channel.ts';

interface ChannelRow {
  id: string;
  workspace_id: string;
  platform: SocialPlatform;
  name: string;
  handle: string | null;
  connected: boolean;
  created_at: Date;
}

const toChannel = (r: ChannelRow): Channel => ({
  _id: r.id,
  workspaceId: r.workspace_id,
  platform: r.platform,
  name: r.name,
  handle: r.handle,
  connected: r.connected,
  createdAt: r.created_at.toISOString(),
});

export async function findChannelPage(
  db: Db,
  q: { scope: WorkspaceScope; platform?: SocialPlatform; after?: Position; limit: number },
): Promise<{ row: Channel; position: Position }[]> {
  const result = await sql<ChannelRow & { cursor_at: string }>`
    SELECT c.id, c.workspace_id, c.platform, c.name, c.handle, c.connected, c.created_at, ${cursorText(sql`c.created_at`)} AS cursor_at
      FROM social_channels c
     WHERE ${inScope(q.scope, 'c')}
       ${q.platform !== undefined ? sql`AND c.platform = ${q.platform}` : sql``}
       ${q.after ? sql`AND ${after(sql`c.created_at`, sql`c.id`, q.after)}` : sql``}
     ORDER BY c.created_at, c.id
     LIMIT ${q.limit + 1}`.execute(db.kysely);
  return result.rows.map((r) => ({ row: toChannel(r), position: { at: r.cursor_at, id: r.id } }));
}

/** The channels among `ids` that belong to one workspace of the hub. */
export async function findWorkspaceChannels(trx: Kysely<Database>, hubId: string, workspaceId: string, ids: string[]): Promise<Channel[]> {
  if (ids.length === 0) return [];
  const rows = await trx
    .selectFrom('social_channels')
    .select(['id', 'workspace_id', 'platform', 'name', 'handle', 'connected', 'created_at'])
    .where('hub_id', '=', hubId)
    .where('workspace_id', '=', workspaceId)
    .where('id', 'in', ids)
    .execute();
  return rows.map(toChannel);
}

/** A channel as the admin's Channels page needs it: its network connection, last publish, last failure, open deliveries. */
export interface ChannelStatusRow {
  id: string;
  workspace_id: string;
  workspace_name: string;
  platform: SocialPlatform;
  name: string;
  handle: string | null;
  connected: boolean;
  connection_id: string | null;
  connection_label: string | null;
  external_id: string | null;
  token_expires_at: Date | null;
  last_published_at: Date | null;
  failure_kind: string | null;
  failure_message: string | null;
  failure_code: string | null;
  failing_since: Date | null;
  /** Deliveries to it sent or being sent but not confirmed yet (publishing, unconfirmed). */
  unconfirmed: number;
  total: number;
}

/**
 * The hub's channels, those needing attention first (disconnected, failing), then by workspace and
 * name; at most `limit`. The open deliveries are counted from the partial index of unconfirmed ones.
 */
export async function findChannelStatuses(db: Db, hubId: string, limit: number): Promise<ChannelStatusRow[]> {
  const result = await sql<ChannelStatusRow>`
    WITH open AS (
      SELECT channel_id, count(*)::int AS n FROM post_deliveries
       WHERE hub_id = ${hubId} AND status IN ('publishing', 'unconfirmed') GROUP BY channel_id
    )
    SELECT c.id, c.workspace_id, w.name AS workspace_name, c.platform, c.name, c.handle, c.connected,
           c.connection_id, cc.label AS connection_label, c.external_id,
           CASE WHEN c.token_sealed IS NOT NULL THEN c.token_expires_at ELSE cc.token_expires_at END AS token_expires_at,
           c.last_published_at, c.failure_kind, c.failure_message, c.failure_code, c.failing_since,
           coalesce(o.n, 0) AS unconfirmed, count(*) OVER ()::int AS total
      FROM social_channels c
      JOIN workspaces w ON w.hub_id = c.hub_id AND w.id = c.workspace_id
      LEFT JOIN channel_connections cc ON cc.hub_id = c.hub_id AND cc.id = c.connection_id
      LEFT JOIN open o ON o.channel_id = c.id
     WHERE c.hub_id = ${hubId}
     ORDER BY (NOT c.connected OR c.failure_kind IS NOT NULL) DESC, w.name, c.name, c.id
     LIMIT ${limit}`.execute(db.kysely);
  return result.rows;
}
