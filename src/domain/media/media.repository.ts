import { sql, type Kysely } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database, MediaContentType, MediaKind } from '../../db/schema.ts';
import { after, cursorText, type Position } from '../keyset.ts';
import { inScope, type WorkspaceScope } from '../scope.ts';
import type { MediaAsset } from './media.ts';

interface MediaRow {
  id: string;
  workspace_id: string;
  kind: MediaKind;
  content_type: MediaContentType;
  filename: string;
  byte_size: string;
  width: number;
  height: number;
  duration_ms: number | null;
  sha256: Buffer;
  created_by: string | null;
  created_at: Date;
}

const COLUMNS = sql`m.id, m.workspace_id, m.kind, m.content_type, m.filename, m.byte_size, m.width, m.height, m.duration_ms, m.sha256, m.created_by, m.created_at`;

const toMediaAsset = (r: MediaRow): MediaAsset => ({
  _id: r.id,
  workspaceId: r.workspace_id,
  kind: r.kind,
  contentType: r.content_type,
  filename: r.filename,
  byteSize: Number(r.byte_size),
  width: r.width,
  height: r.height,
  durationMs: r.duration_ms,
  sha256: r.sha256.toString('hex'),
  createdBy: r.created_by,
  createdAt: r.created_at.toISOString(),
});

export interface NewMedia {
  id: string;
  hubId: string;
  workspaceId: string;
  kind: MediaKind;
  contentType: MediaContentType;
  filename: string;
  byteSize: number;
  width: number;
  height: number;
  durationMs: number | null;
  sha256: Buffer;
  storageKey: string | null;
  createdBy: string | null;
  createdAt?: string;
}

export const mediaRow = (m: NewMedia) => ({
  id: m.id,
  hub_id: m.hubId,
  workspace_id: m.workspaceId,
  kind: m.kind,
  content_type: m.contentType,
  filename: m.filename,
  byte_size: m.byteSize,
  width: m.width,
  height: m.height,
  duration_ms: m.durationMs,
  sha256: m.sha256,
  storage_key: m.storageKey,
  created_by: m.createdBy,
  ...(m.createdAt === undefined ? {} : { created_at: m.createdAt }),
});

export async function insertMedia(trx: Kysely<Database>, media: NewMedia): Promise<MediaAsset> {
  const row = await trx
    .insertInto('media_assets')
    .values(mediaRow(media))
    .returning([
      'id',
      'workspace_id',
      'kind',
      'content_type',
      'filename',
      'byte_size',
      'width',
      'height',
      'duration_ms',
      'sha256',
      'created_by',
      'created_at',
    ])
    .executeTakeFirstOrThrow();
  return toMediaAsset(row);
}

export async function findMediaPage(
  db: Db,
  q: { scope: WorkspaceScope; kind?: MediaKind; after?: Position; limit: number },
): Promise<{ row: MediaAsset; position: Position }[]> {
  const result = await sql<MediaRow & { cursor_at: string }>`
    SELECT ${COLUMNS}, ${cursorText(sql`m.created_at`)} AS cursor_at
      FROM media_assets m
     WHERE ${inScope(q.scope, 'm')}
       ${q.kind !== undefined ? sql`AND m.kind = ${q.kind}` : sql``}
       ${q.after ? sql`AND ${after(sql`m.created_at`, sql`m.id`, q.after)}` : sql``}
     ORDER BY m.created_at, m.id
     LIMIT ${q.limit + 1}`.execute(db.kysely);
  return result.rows.map((r) => ({ row: toMediaAsset(r), position: { at: r.cursor_at, id: r.id } }));
}

export async function findMedia(db: Db, scope: WorkspaceScope, id: string): Promise<MediaAsset | undefined> {
  const result = await sql<MediaRow>`SELECT ${COLUMNS} FROM media_assets m WHERE ${inScope(scope, 'm')} AND m.id = ${id}`.execute(
    db.kysely,
  );
  return result.rows[0] && toMediaAsset(result.rows[0]);
}

/** The assets among `ids` that belong to one workspace of the hub. */
export async function findWorkspaceMedia(trx: Kysely<Database>, hubId: string, workspaceId: string, ids: string[]): Promise<MediaAsset[]> {
  if (ids.length === 0) return [];
  const result = await sql<MediaRow>`
    SELECT ${COLUMNS} FROM media_assets m
     WHERE m.hub_id = ${hubId} AND m.workspace_id = ${workspaceId} AND m.id = ANY(${ids}::text[])`.execute(trx);
  return result.rows.map(toMediaAsset);
}

/**
 * Where a media asset's bytes are and their type, by id alone: only for the signed public URL,
 * whose signature (checked before this is called) is the authority, not a caller's scope.
 */
export async function findStoredMedia(db: Db, id: string): Promise<{ contentType: string; storageKey: string | null } | undefined> {
  const row = await db.kysely.selectFrom('media_assets').select(['content_type', 'storage_key']).where('id', '=', id).executeTakeFirst();
  return row && { contentType: row.content_type, storageKey: row.storage_key };
}
