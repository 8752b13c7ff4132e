// Reads a `media` line: the metadata of an image or video of a workspace (not the file itself).

import { CONTENT_TYPES, kindOf, MAX_DIMENSION, MAX_DURATION_MS, maxBytes } from '../../media/media-info.ts';
import { shown, type FieldReader } from '../field-reader.ts';
import type { MediaRecord } from '../records.ts';

export function readMedia(r: FieldReader): MediaRecord {
  const id = r.id('media');
  const workspaceId = r.ref('workspaceId');
  const contentType = r.oneOf('contentType', CONTENT_TYPES);
  const kind = kindOf(contentType);
  const filename = r.name('filename', 255);
  const byteSize = r.positive('byteSize', maxBytes(kind));
  const width = r.positive('width', MAX_DIMENSION);
  const height = r.positive('height', MAX_DIMENSION);
  let durationMs: number | null = null;
  if (!r.isNull('durationMs')) {
    if (kind === 'image') r.fail('durationMs', 'is only for videos');
    else durationMs = r.count('durationMs', MAX_DURATION_MS);
  }
  const hex = r.raw('sha256');
  let sha256 = Buffer.alloc(32);
  if (typeof hex === 'string' && /^[0-9a-fA-F]{64}$/.test(hex)) sha256 = Buffer.from(hex, 'hex');
  else r.fail('sha256', `must be the SHA-256 of the file as 64 hex digits; got ${shown(hex)}`);
  const createdAt = r.timestampOrNull('createdAt');
  return { type: 'media', line: r.line, id, workspaceId, contentType, filename, byteSize, width, height, durationMs, sha256, createdAt };
}
