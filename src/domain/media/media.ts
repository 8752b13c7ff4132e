import type { MediaContentType, MediaKind } from '../../db/schema.ts';
import { withoutHiddenFormatCharacters } from '../../platform/text.ts';
import { EXTENSION } from './media-info.ts';

/** A media library asset as the main API presents it. */
export interface MediaAsset {
  _id: string;
  workspaceId: string;
  kind: MediaKind;
  contentType: MediaContentType;
  filename: string;
  byteSize: number;
  width: number;
  height: number;
  durationMs: number | null;
  /** SHA-256 of the bytes, hex. */
  sha256: string;
  createdBy: string | null;
  createdAt: string;
}

const MAX_FILENAME = 255;
// Extensions that also name these types; anything else is replaced by the canonical one.
const ALIASES: Record<MediaContentType, string[]> = {
  'image/jpeg': ['jpg', 'jpeg', 'jpe', 'jfif'],
  'image/png': ['png'],
  'image/webp': ['webp'],
  'image/gif': ['gif'],
  'video/mp4': ['mp4', 'm4v'],
  'video/quicktime': ['mov', 'qt'],
};
const MEDIA_EXTENSIONS = new Set(
  Object.values(ALIASES).flat().concat(['heic', 'heif', 'avif', 'bmp', 'tif', 'tiff', 'avi', 'mkv', 'webm', 'html', 'htm', 'svg']),
);

/**
 * The display name of an upload: the last path segment of what the client sent, without control
 * characters or invisible formatting ones (platform/text.ts: `photo\u202Egnp.exe`), at most 255 characters, and with an extension that matches the content (a PNG sent
 * as `photo.mp4` is kept as `photo.png`).
 */
export function cleanFilename(sent: string | undefined, contentType: MediaContentType): string {
  const segment = (sent ?? '')
    .split(/[\\/]/)
    .pop()!
    .replace(/[\u0000-\u001f\u007f]/g, '');
  const base = withoutHiddenFormatCharacters(segment).trim();
  const dot = base.lastIndexOf('.');
  const extension = dot > 0 ? base.slice(dot + 1).toLowerCase() : '';
  if (ALIASES[contentType].includes(extension)) return [...base].slice(0, MAX_FILENAME).join('');
  const stem = (MEDIA_EXTENSIONS.has(extension) ? base.slice(0, dot) : base) || 'upload';
  const suffix = `.${EXTENSION[contentType]}`;
  return [...stem].slice(0, MAX_FILENAME - suffix.length).join('') + suffix;
}
