import type { MediaContentType, MediaKind } from '../../db/schema.ts';
import { IMAGE_MAX_BYTES, VIDEO_MAX_BYTES } from '../../policy.ts';

// What an uploaded file really is, from its bytes alone: the type from its magic bytes (the
// declared type and the file name are never trusted), then the dimensions (and a video's
// duration) from the format's own headers. Small parsers of our own, reading only the header
// bytes they need through a ByteSource, so a 200 MB video is never loaded into memory.

// Re-exported for the surfaces that still import the upload sizes from here.
/**
 * The most pixels on a side: what JPEG, GIF, WebP and MP4 headers can express at all (a PNG
 * header could claim 2^31 − 1). A header claiming more is refused, never stored.
 */
export const MAX_DIMENSION = 65_535;
/** The longest video accepted (24 hours); a header claiming more is wrong (no network takes such a post). */
export const MAX_DURATION_MS = 86_400_000;
/** Enough bytes to recognise every supported format. */
export const SNIFF_BYTES = 16;

export const CONTENT_TYPES: readonly MediaContentType[] = [
  'image/jpeg',
  'image/png',
  'image/webp',
  'image/gif',
  'video/mp4',
  'video/quicktime',
];

export const EXTENSION: Record<MediaContentType, string> = {
  'image/jpeg': 'jpg',
  'image/png': 'png',
  'image/webp': 'webp',
  'image/gif': 'gif',
  'video/mp4': 'mp4',
  'video/quicktime': 'mov',
};

export function kindOf(contentType: MediaContentType): MediaKind {
  return contentType.startsWith('image/') ? 'image' : 'video';
}

export function maxBytes(kind: MediaKind): number {
  return kind === 'image' ? IMAGE_MAX_BYTES : VIDEO_MAX_BYTES;
}

/** Random access to a file's bytes; a read past the end returns what there is. */
export interface ByteSource {
  readonly size: number;
  read(offset: number, length: number): Promise<Buffer>;
}

export function bufferSource(bytes: Buffer): ByteSource {
  return { size: bytes.length, read: async (offset, length) => bytes.subarray(offset, offset + length) };
}

export interface MediaInfo {
  contentType: MediaContentType;
  kind: MediaKind;
  width: number;
  height: number;
  durationMs: number | null;
}

/** The bytes are not a supported, well-formed image or video; `message` says why, for people. */
export class MediaRejected extends Error {}

const ascii = (bytes: Uint8Array, start: number, end: number) => String.fromCharCode(...bytes.subarray(start, end));

// ISO base media brands of MP4 files (ftyp major brand); `qt  ` is QuickTime.
const MP4_BRANDS = new Set(['isom', 'iso2', 'iso3', 'iso4', 'iso5', 'iso6', 'mp41', 'mp42', 'avc1', 'M4V ', 'dash', 'mmp4', 'MSNV']);

/** The content type the first bytes announce, or undefined for anything we do not accept. */
export function sniffContentType(head: Uint8Array): MediaContentType | undefined {
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'image/jpeg';
  if (head.length >= 8 && Buffer.from(head.subarray(0, 8)).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))
    return 'image/png';
  if (head.length >= 6 && ['GIF87a', 'GIF89a'].includes(ascii(head, 0, 6))) return 'image/gif';
  if (head.length >= 12 && ascii(head, 0, 4) === 'RIFF' && ascii(head, 8, 12) === 'WEBP') return 'image/webp';
  if (head.length >= 12 && ascii(head, 4, 8) === 'ftyp') {
    const brand = ascii(head, 8, 12);
    if (brand === 'qt  ') return 'video/quicktime';
    if (MP4_BRANDS.has(brand)) return 'video/mp4';
  }
  return undefined;
}

/** Sniffs the type, then reads the dimensions (and duration); throws MediaRejected. */
export async function inspectMedia(source: ByteSource): Promise<MediaInfo> {
  const contentType = sniffContentType(await source.read(0, SNIFF_BYTES));
  if (!contentType) throw new MediaRejected('is not a JPEG, PNG, WebP or GIF image or an MP4 or MOV video');
  const size =
    contentType === 'image/png'
      ? await pngSize(source)
      : contentType === 'image/jpeg'
        ? await jpegSize(source)
        : contentType === 'image/gif'
          ? await gifSize(source)
          : contentType === 'image/webp'
            ? await webpSize(source)
            : undefined;
  if (size) return { contentType, kind: 'image', ...checked(size, contentType), durationMs: null };
  const movie = await movieInfo(source, contentType);
  return { contentType, kind: 'video', ...checked(movie, contentType), durationMs: movie.durationMs };
}

const NAMES: Record<MediaContentType, string> = {
  'image/jpeg': 'JPEG image',
  'image/png': 'PNG image',
  'image/webp': 'WebP image',
  'image/gif': 'GIF image',
  'video/mp4': 'MP4 video',
  'video/quicktime': 'MOV video',
};

function checked(size: { width: number; height: number }, contentType: MediaContentType): { width: number; height: number } {
  const ok = (n: number) => Number.isInteger(n) && n >= 1 && n <= MAX_DIMENSION;
  if (!ok(size.width) || !ok(size.height)) {
    throw new MediaRejected(
      `is not a valid ${NAMES[contentType]}: its dimensions are ${size.width}×${size.height} (each side must be 1 to ${MAX_DIMENSION.toLocaleString('en-US')} pixels)`,
    );
  }
  return { width: size.width, height: size.height };
}

function corrupt(contentType: MediaContentType, detail: string): MediaRejected {
  return new MediaRejected(`is not a valid ${NAMES[contentType]} (${detail})`);
}

async function exactly(source: ByteSource, offset: number, length: number, contentType: MediaContentType): Promise<Buffer> {
  const bytes = await source.read(offset, length);
  if (bytes.length < length) throw corrupt(contentType, 'the file ends too early');
  return bytes;
}

// PNG: the signature, then the IHDR chunk: length 13, "IHDR", width and height (big-endian).
async function pngSize(source: ByteSource) {
  const head = await exactly(source, 0, 24, 'image/png');
  if (ascii(head, 12, 16) !== 'IHDR') throw corrupt('image/png', 'no IHDR header');
  return { width: head.readUInt32BE(16), height: head.readUInt32BE(20) };
}

// GIF: the logical screen descriptor right after the 6-byte signature (little-endian).
async function gifSize(source: ByteSource) {
  const head = await exactly(source, 0, 10, 'image/gif');
  return { width: head.readUInt16LE(6), height: head.readUInt16LE(8) };
}

// WebP: RIFF container; the first chunk is VP8 (lossy), VP8L (lossless) or VP8X (extended).
async function webpSize(source: ByteSource) {
  const head = await exactly(source, 0, 30, 'image/webp');
  const chunk = ascii(head, 12, 16);
  if (chunk === 'VP8 ') {
    // Frame tag (3 bytes), then the key frame start code 9D 01 2A, then 14-bit width and height.
    if (head[23] !== 0x9d || head[24] !== 0x01 || head[25] !== 0x2a) throw corrupt('image/webp', 'no VP8 key frame');
    return { width: head.readUInt16LE(26) & 0x3fff, height: head.readUInt16LE(28) & 0x3fff };
  }
  if (chunk === 'VP8L') {
    if (head[20] !== 0x2f) throw corrupt('image/webp', 'no VP8L signature');
    const bits = head.readUInt32LE(21);
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (chunk === 'VP8X') {
    // Flags and reserved (4 bytes), then canvas width − 1 and height − 1 (24-bit little-endian).
    return { width: head.readUIntLE(24, 3) + 1, height: head.readUIntLE(27, 3) + 1 };
  }
  throw corrupt('image/webp', `unknown chunk ${JSON.stringify(chunk)}`);
}

// JPEG: walk the marker segments after SOI until a start-of-frame (SOF0–SOF15 except DHT C4,
// JPG C8 and DAC CC), whose payload is precision, height, width. Reaching the scan data (SOS)
// or the end first means there is no frame header.
const JPEG_MAX_SEGMENTS = 10_000;

async function jpegSize(source: ByteSource) {
  let offset = 2;
  for (let segments = 0; segments < JPEG_MAX_SEGMENTS; segments++) {
    const head = await exactly(source, offset, 4, 'image/jpeg');
    if (head[0] !== 0xff) throw corrupt('image/jpeg', `no marker at byte ${offset}`);
    const marker = head[1]!;
    if (marker === 0xff) {
      offset += 1; // fill byte
      continue;
    }
    if ((marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) {
      offset += 2; // standalone markers carry no length
      continue;
    }
    if (marker === 0xda || marker === 0xd9) throw corrupt('image/jpeg', 'no frame header before the image data');
    const length = head.readUInt16BE(2);
    if (length < 2) throw corrupt('image/jpeg', `a segment of length ${length}`);
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      const frame = await exactly(source, offset + 4, 5, 'image/jpeg');
      return { width: frame.readUInt16BE(3), height: frame.readUInt16BE(1) };
    }
    offset += 2 + length;
  }
  throw corrupt('image/jpeg', 'too many segments');
}

// MP4 and MOV (ISO base media / QuickTime): boxes of [size, type, payload]. The duration is in
// moov/mvhd; the picture size is in the tkhd of the first track with a non-zero size (audio
// tracks have 0×0), turned by a quarter when the track's matrix rotates it.
interface Box {
  type: string;
  /** Offset of the payload. */
  start: number;
  end: number;
}

const MAX_BOXES = 10_000;

async function children(source: ByteSource, from: number, to: number, contentType: MediaContentType): Promise<Box[]> {
  const boxes: Box[] = [];
  let offset = from;
  while (offset + 8 <= to) {
    if (boxes.length >= MAX_BOXES) throw corrupt(contentType, 'too many boxes');
    const head = await source.read(offset, 16);
    if (head.length < 8) throw corrupt(contentType, 'the file ends too early');
    let size = head.readUInt32BE(0);
    let headerSize = 8;
    if (size === 1) {
      if (head.length < 16) throw corrupt(contentType, 'a truncated box header');
      size = Number(head.readBigUInt64BE(8));
      headerSize = 16;
    } else if (size === 0) {
      size = to - offset; // the box runs to the end of its parent
    }
    if (size < headerSize || offset + size > to) throw corrupt(contentType, `a box overruns its container at byte ${offset}`);
    boxes.push({ type: ascii(head, 4, 8), start: offset + headerSize, end: offset + size });
    offset += size;
  }
  return boxes;
}

/**
 * The movie's duration in milliseconds from mvhd's duration and timescale: null when the header
 * says it is unknown (all bits set, ISO/IEC 14496-12 §8.2.2.3); refused when longer than
 * MAX_DURATION_MS. Computed in BigInt, so no 64-bit value is rounded on the way.
 */
function movieDuration(duration: bigint, timescale: bigint, allOnes: bigint, contentType: MediaContentType): number | null {
  if (duration === allOnes) return null;
  const ms = (duration * 1000n + timescale / 2n) / timescale;
  if (ms > BigInt(MAX_DURATION_MS)) {
    const seconds = (ms / 1000n).toLocaleString('en-US');
    throw corrupt(contentType, `its header gives a duration of ${seconds} seconds; videos are accepted up to 24 hours (86,400 seconds)`);
  }
  return Number(ms);
}

async function movieInfo(
  source: ByteSource,
  contentType: MediaContentType,
): Promise<{ width: number; height: number; durationMs: number | null }> {
  const moov = (await children(source, 0, source.size, contentType)).find((b) => b.type === 'moov');
  if (!moov) throw corrupt(contentType, 'no moov box');
  const inMoov = await children(source, moov.start, moov.end, contentType);

  const mvhd = inMoov.find((b) => b.type === 'mvhd');
  if (!mvhd) throw corrupt(contentType, 'no mvhd box');
  const header = await exactly(source, mvhd.start, 32, contentType);
  const version = header[0];
  const [timescale, duration, allOnes] =
    version === 1
      ? [header.readUInt32BE(20), header.readBigUInt64BE(24), 2n ** 64n - 1n]
      : [header.readUInt32BE(12), BigInt(header.readUInt32BE(16)), 2n ** 32n - 1n];
  if (timescale === 0) throw corrupt(contentType, 'a zero timescale');
  const durationMs = movieDuration(duration, BigInt(timescale), allOnes, contentType);

  for (const trak of inMoov.filter((b) => b.type === 'trak')) {
    const tkhd = (await children(source, trak.start, trak.end, contentType)).find((b) => b.type === 'tkhd');
    if (!tkhd) continue;
    const v = (await exactly(source, tkhd.start, 1, contentType))[0];
    // version, flags, times, track id, reserved, duration (v0: 20 bytes, v1: 32), reserved (8),
    // layer, alternate group, volume, reserved (8), then the 3×3 matrix (36), width, height.
    const matrixAt = tkhd.start + 4 + (v === 1 ? 32 : 20) + 16;
    const rest = await exactly(source, matrixAt, 44, contentType);
    const width = rest.readUInt32BE(36) >>> 16;
    const height = rest.readUInt32BE(40) >>> 16;
    if (width === 0 || height === 0) continue;
    const [a, d] = [rest.readInt32BE(0), rest.readInt32BE(16)];
    const quarterTurn = a === 0 && d === 0;
    return quarterTurn ? { width: height, height: width, durationMs } : { width, height, durationMs };
  }
  throw corrupt(contentType, 'no video track');
}
