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
