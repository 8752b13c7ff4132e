import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Db } from '../../db/database.ts';
import type { MediaKind } from '../../db/schema.ts';
import type { Clock } from '../../platform/clock.ts';
import { invalid, notFound, refuseFields, type DomainError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { IMAGE_MAX_BYTES, VIDEO_MAX_BYTES } from '../../policy.ts';
import type { Caller } from '../caller.ts';
import type { Replayable } from '../idempotency/idempotency.ts';
import { withIdempotency } from '../idempotency/idempotency.service.ts';
import { DEFAULT_PAGE_SIZE } from '../../policy.ts';
import { toPage, type ListCursor, type Page, type Position } from '../keyset.ts';
import { narrowScope, scopeOf, targetWorkspace } from '../scope.ts';
import { EXTENSION, MediaRejected, SNIFF_BYTES, inspectMedia, kindOf, maxBytes, sniffContentType } from './media-info.ts';
import { cleanFilename, type MediaAsset } from './media.ts';
import { findMedia, findMediaPage, findStoredMedia, insertMedia } from './media.repository.ts';
import type { MediaUrlSigner } from './media-url.ts';
import type { MediaStore, StagedMedia } from './media-store.ts';

/** The kind of this list's cursors (the surface's cursor parameter is declared with it). */
export const MEDIA_CURSOR = 'media';

export interface UploadDetails {
  /** The client's file name (display only; the bytes decide the type). */
  filename?: string | undefined;
  /** The client's declared content type: never trusted, only quoted when the bytes disagree. */
  declaredType?: string | undefined;
  /** Required when acting hub-wide; otherwise the active workspace. */
  workspaceId?: string | undefined;
}

const MB = 1024 * 1024;

function unsupported(declaredType: string | undefined, reason: string): DomainError {
  const claimed = declaredType ? ` (declared ${declaredType.slice(0, 100)})` : '';
  const message = `${reason}${claimed}; upload a JPEG, PNG, WebP or GIF image or an MP4 or MOV video`;
  return refuseFields('unsupported_type', [{ field: 'file', message }]);
}

function tooLarge(kind: MediaKind | undefined): DomainError {
  const message =
    kind === 'image'
      ? `is larger than ${IMAGE_MAX_BYTES / MB} MB, the limit for images`
      : kind === 'video'
        ? `is larger than ${VIDEO_MAX_BYTES / MB} MB, the limit for videos`
        : `is larger than ${VIDEO_MAX_BYTES / MB} MB`;
  return refuseFields('too_large', [{ field: 'file', message }]);
}

/**
 * Reads an upload into staging while enforcing the size limit of its kind: the type is sniffed
 * from the first bytes (refused at once if unsupported) and the upload is refused as soon as it
 * passes its limit, before anything is stored. Returns the SHA-256 of the bytes.
 */
async function stageUpload(
  content: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  staged: StagedMedia,
  declaredType: string | undefined,
): Promise<Buffer> {
  const hash = createHash('sha256');
  let head = Buffer.alloc(0);
  let kind: MediaKind | undefined;
  let limit = VIDEO_MAX_BYTES;
  for await (const chunk of content) {
    if (kind === undefined) {
      head = Buffer.concat([head, chunk.subarray(0, SNIFF_BYTES - head.length)]);
      if (head.length >= SNIFF_BYTES) {
        const contentType = sniffContentType(head);
        if (!contentType) throw unsupported(declaredType, 'is not a supported image or video');
        kind = kindOf(contentType);
        limit = maxBytes(kind);
      }
    }
    if (staged.size + chunk.length > limit) throw tooLarge(kind);
    hash.update(chunk);
    await staged.write(chunk);
  }
  if (staged.size === 0) throw invalid([{ field: 'file', message: 'is empty' }]);
  if (kind === undefined && !sniffContentType(head)) throw unsupported(declaredType, 'is not a supported image or video');
  return hash.digest();
}

/**
 * Adds an upload to the media library: staged and checked (type from the bytes, size limits,
 * dimensions and duration from the headers), then stored under its final key and recorded. The
 * database row is written only after the file is complete, in the same transaction as the
 * idempotency key's record; if that transaction fails the stored file is removed again.
 */
export async function uploadMedia(
  deps: { db: Db; clock: Clock; media: MediaStore },
  caller: Caller,
  content: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  details: UploadDetails,
  idempotencyKey?: string,
): Promise<Replayable<MediaAsset>> {
  const scope = scopeOf(caller);
  const workspaceId = await targetWorkspace(deps.db, scope, details.workspaceId);
  const staged = await deps.media.stage();
  let storedKey: string | undefined;
  try {
    const sha256 = await stageUpload(content, staged, details.declaredType);
    let info;
    try {
      info = await inspectMedia(staged);
    } catch (error) {
      if (error instanceof MediaRejected) throw invalid([{ field: 'file', message: error.message }]);
      throw error;
    }
    const filename = cleanFilename(details.filename, info.contentType);
    const request = { workspaceId, filename, sha256: sha256.toString('hex') };
    return await withIdempotency(deps, caller, idempotencyKey, 'upload_media', request, async (trx) => {
      const id = newId('med');
      const key = `${scope.hubId}/${workspaceId}/${id}.${EXTENSION[info.contentType]}`;
      await staged.commit(key);
      storedKey = key;
      return insertMedia(trx, {
        id,
        hubId: scope.hubId,
        workspaceId,
        ...info,
        filename,
        byteSize: staged.size,
        sha256,
        storageKey: key,
        createdBy: caller.user.id,
        createdAt: deps.clock.now().toISOString(),
      });
    });
  } catch (error) {
    if (storedKey !== undefined) await deps.media.remove(storedKey);
    throw error;
  } finally {
    await staged.discard();
  }
}

/** The same as an upload, for bytes already in memory (the MCP tool's base64 content). */
export async function addMediaFromBuffer(
  deps: { db: Db; clock: Clock; media: MediaStore },
  caller: Caller,
  bytes: Buffer,
  details: UploadDetails,
): Promise<MediaAsset> {
  return (await uploadMedia(deps, caller, [bytes], details)).value;
}

export interface ListMediaInput {
  workspaceId?: string;
  kind?: MediaKind;
  limit?: number;
  cursor: ListCursor<Position>;
}

/** The media library in scope, oldest upload first. */
export async function listMedia(db: Db, caller: Caller, input: ListMediaInput): Promise<Page<MediaAsset>> {
  const limit = input.limit ?? DEFAULT_PAGE_SIZE;
  const scope = narrowScope(scopeOf(caller), input.workspaceId);
  if (!scope) return { data: [], nextCursor: null };
  return toPage(input.cursor, await findMediaPage(db, { scope, kind: input.kind, after: input.cursor.after, limit }), limit);
}

export async function getMedia(db: Db, caller: Caller, id: string): Promise<MediaAsset> {
  const media = await findMedia(db, scopeOf(caller), id);
  if (!media) throw notFound(`No media asset ${id}.`);
  return media;
}

/**
 * The bytes behind a signed public media URL (what Instagram and Meta fetch), or undefined for
 * anything invalid, altered, expired, unknown or without stored bytes — one answer for all, so
 * nothing tells whether a media id exists.
 */
export async function openSignedMedia(
  deps: { db: Db; media: MediaStore; clock: Clock },
  signer: MediaUrlSigner,
  url: { mediaId: unknown; exp: unknown; sig: unknown },
): Promise<{ contentType: string; size: number; stream: Readable } | undefined> {
  if (!signer.verify(url.mediaId, url.exp, url.sig, deps.clock.now())) return undefined;
  const stored = await findStoredMedia(deps.db, url.mediaId as string);
  if (!stored?.storageKey) return undefined;
  const object = await deps.media.read(stored.storageKey);
  return object && { contentType: stored.contentType, ...object };
}
