import { sql, type Kysely } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database, PostStatus } from '../../db/schema.ts';
import { after, cursorText, type Position } from '../keyset.ts';
import { inScope, type WorkspaceScope } from '../scope.ts';
import type { Delivery, Post } from './post.ts';

const iso = (column: string) => sql.raw(`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`);

// A post with its channels (as deliveries, in the caller's order) and media ids, built in one
// statement; the correlated subqueries use the (post_id, …) keys.
const POST_COLUMNS = sql`
  p.id, p.workspace_id, p.text, p.status, p.scheduled_at, p.published_at, p.error, p.calendar_at,
  p.created_by, p.created_at, p.updated_at,
  coalesce((SELECT json_agg(json_build_object(
             'channelId', d.channel_id, 'platform', c.platform, 'status', d.status,
             'externalId', d.external_id, 'error', d.error, 'deliveredAt', ${iso('d.delivered_at')},
             'failureKind', d.failure_kind, 'platformMessage', d.platform_message, 'url', d.url,
             'attemptedAt', ${iso('d.attempt_started_at')}) ORDER BY d.position)
              FROM post_deliveries d JOIN social_channels c ON c.id = d.channel_id
             WHERE d.post_id = p.id), '[]') AS deliveries,
  coalesce((SELECT array_agg(pm.media_id ORDER BY pm.position) FROM post_media pm WHERE pm.post_id = p.id), '{}') AS media_ids`;

interface PostRow {
  id: string;
  workspace_id: string;
  text: string;
  status: PostStatus;
  scheduled_at: Date | null;
  published_at: Date | null;
  error: string | null;
  calendar_at: Date;
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
  deliveries: Delivery[];
  media_ids: string[];
}

const toPost = (r: PostRow): Post => ({
  _id: r.id,
  workspaceId: r.workspace_id,
  text: r.text,
  channelIds: r.deliveries.map((d) => d.channelId),
  mediaIds: r.media_ids,
  status: r.status,
  scheduledAt: r.scheduled_at?.toISOString() ?? null,
  publishedAt: r.published_at?.toISOString() ?? null,
  error: r.error,
  calendarAt: r.calendar_at.toISOString(),
  deliveries: r.deliveries,
  createdBy: r.created_by,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});

export interface PostPageQuery {
  scope: WorkspaceScope;
  status?: PostStatus;
  /** calendar_at ≥ from */
  from?: Date;
  /** calendar_at < before */
  before?: Date;
  after?: Position;
  limit: number;
}

export async function findPostPage(db: Db, q: PostPageQuery): Promise<{ row: Post; position: Position }[]> {
  const result = await sql<PostRow & { cursor_at: string }>`
    SELECT ${POST_COLUMNS}, ${cursorText(sql`p.calendar_at`)} AS cursor_at
      FROM posts p
     WHERE ${inScope(q.scope, 'p')}
       ${q.status !== undefined ? sql`AND p.status = ${q.status}` : sql``}
       ${q.from !== undefined ? sql`AND p.calendar_at >= ${q.from}` : sql``}
       ${q.before !== undefined ? sql`AND p.calendar_at < ${q.before}` : sql``}
       ${q.after ? sql`AND ${after(sql`p.calendar_at`, sql`p.id`, q.after)}` : sql``}
     ORDER BY p.calendar_at, p.id
     LIMIT ${q.limit + 1}`.execute(db.kysely);
  return result.rows.map((r) => ({ row: toPost(r), position: { at: r.cursor_at, id: r.id } }));
}

export async function findPost(db: Kysely<Database>, scope: WorkspaceScope, id: string): Promise<Post | undefined> {
  const result = await sql<PostRow>`SELECT ${POST_COLUMNS} FROM posts p WHERE ${inScope(scope, 'p')} AND p.id = ${id}`.execute(db);
  return result.rows[0] && toPost(result.rows[0]);
}

export interface NewPost {
  id: string;
  hubId: string;
  workspaceId: string;
  text: string;
  status: PostStatus;
  scheduledAt: Date | string | null;
  publishedAt?: Date | string | null;
  error?: string | null;
  createdBy: string | null;
  createdAt?: string;
  channelIds: string[];
  mediaIds: string[];
}

/** Rows for a new post: the post, one pending delivery per channel, its media, each in order. */
export function postRows(p: NewPost) {
  return {
    post: {
      id: p.id,
      hub_id: p.hubId,
      workspace_id: p.workspaceId,
      text: p.text,
      status: p.status,
      scheduled_at: p.scheduledAt,
      published_at: p.publishedAt ?? null,
      error: p.error ?? null,
      created_by: p.createdBy,
      ...(p.createdAt === undefined ? {} : { created_at: p.createdAt, updated_at: p.createdAt }),
    },
    deliveries: p.channelIds.map((channelId, position) => ({
      hub_id: p.hubId,
      workspace_id: p.workspaceId,
      post_id: p.id,
      channel_id: channelId,
      position,
    })),
    media: p.mediaIds.map((mediaId, position) => ({
      hub_id: p.hubId,
      workspace_id: p.workspaceId,
      post_id: p.id,
      media_id: mediaId,
      position,
    })),
  };
}

export async function insertPost(trx: Kysely<Database>, post: NewPost): Promise<void> {
  const rows = postRows(post);
  await trx.insertInto('posts').values(rows.post).execute();
  if (rows.deliveries.length > 0) await trx.insertInto('post_deliveries').values(rows.deliveries).execute();
  if (rows.media.length > 0) await trx.insertInto('post_media').values(rows.media).execute();
}
