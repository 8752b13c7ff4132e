import { crc32, deflateSync } from 'node:zlib';

// Real image and video files, built byte by byte for the upload tests: each follows its format's
// specification (a PNG with a zlib-compressed IDAT and CRCs, a baseline JPEG with its own Huffman
// tables and entropy-coded blocks, an LZW-coded GIF, a lossless VP8L WebP, ISO-BMFF movies).

const u16be = (n: number) => Buffer.from([(n >> 8) & 0xff, n & 0xff]);
const u32be = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
};
const u16le = (n: number) => Buffer.from([n & 0xff, (n >> 8) & 0xff]);
const u32le = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n >>> 0);
  return b;
};

/** An RGB PNG of one colour. */
export function png(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    return Buffer.concat([u32be(data.length), body, u32be(crc32(body))]);
  };
  const ihdr = Buffer.concat([u32be(width), u32be(height), Buffer.from([8, 2, 0, 0, 0])]);
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(width * 3, 0x80)]);
  const raw = Buffer.concat(Array.from({ length: height }, () => row));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/**
 * A grey baseline JPEG. Its Huffman tables each hold one 1-bit code (DC difference 0, end of
 * block), so every 8×8 block is the two bits `00`. `appBytes` adds an application segment of
 * about that size before the frame header (as EXIF data does), split into 64 KB segments.
 */
export function jpeg(width: number, height: number, appBytes = 0): Buffer {
  const segment = (marker: number, data: Buffer) => Buffer.concat([Buffer.from([0xff, marker]), u16be(data.length + 2), data]);
  const apps: Buffer[] = [];
  for (let left = appBytes; left > 0; left -= 65_000) apps.push(segment(0xe1, Buffer.alloc(Math.min(left, 65_000), 0x41)));
  const blocks = Math.ceil(width / 8) * Math.ceil(height / 8);
  const bits = blocks * 2;
  const scan = Buffer.alloc(Math.ceil(bits / 8), 0);
  // Pad the last byte with 1 bits, as the standard asks.
  const used = bits % 8;
  if (used !== 0) scan[scan.length - 1] = 0xff >> used;
  const huffman = (tableClass: number, symbol: number) =>
    Buffer.concat([Buffer.from([tableClass << 4]), Buffer.from([1, ...new Array(15).fill(0)]), Buffer.from([symbol])]);
  return Buffer.concat([
    Buffer.from([0xff, 0xd8]),
    segment(0xe0, Buffer.from([0x4a, 0x46, 0x49, 0x46, 0x00, 1, 1, 0, 0, 1, 0, 1, 0, 0])),
    ...apps,
    segment(0xdb, Buffer.concat([Buffer.from([0]), Buffer.alloc(64, 1)])),
    segment(0xc0, Buffer.concat([Buffer.from([8]), u16be(height), u16be(width), Buffer.from([1, 1, 0x11, 0])])),
    segment(0xc4, huffman(0, 0)),
    segment(0xc4, huffman(1, 0)),
    segment(0xda, Buffer.from([1, 1, 0x00, 0, 63, 0])),
    scan,
    Buffer.from([0xff, 0xd9]),
  ]);
}

/** A GIF89a of one colour (LZW: a clear code before every pair of pixels keeps codes 3 bits wide). */
export function gif(width: number, height: number): Buffer {
  const codes: number[] = [];
  for (let i = 0; i < width * height; i += 2) codes.push(4, 0, ...(i + 1 < width * height ? [0] : []));
  codes.push(5);
  const data: number[] = [];
  let acc = 0;
  let n = 0;
  for (const code of codes) {
    acc |= code << n;
    n += 3;
    while (n >= 8) {
      data.push(acc & 0xff);
      acc >>= 8;
      n -= 8;
    }
  }
  if (n > 0) data.push(acc & 0xff);
  const blocks: number[] = [];
  for (let i = 0; i < data.length; i += 255) {
    const part = data.slice(i, i + 255);
    blocks.push(part.length, ...part);
  }
  return Buffer.concat([
    Buffer.from('GIF89a', 'latin1'),
    u16le(width),
    u16le(height),
    Buffer.from([0x80, 0, 0]),
    Buffer.from([0x20, 0x40, 0x60, 0xff, 0xff, 0xff]),
    Buffer.from([0x2c]),
    u16le(0),
    u16le(0),
    u16le(width),
    u16le(height),
    Buffer.from([0]),
    Buffer.from([2, ...blocks, 0]),
    Buffer.from([0x3b]),
  ]);
}

/**
 * A lossless (VP8L) WebP of one colour: the header, then five prefix codes of a single symbol
 * each, so every pixel takes zero bits.
 */
export function webpLossless(width: number, height: number): Buffer {
  const bits: [number, number][] = [
    [width - 1, 14],
    [height - 1, 14],
    [0, 1],
    [0, 3], // size, no alpha, version 0
    [0, 1], // no transform
    [0, 1],
    [0, 1], // no colour cache, no meta prefix codes
    [1, 1],
    [0, 1],
    [0, 1],
    [0, 1], // green: simple, one symbol, 1-bit symbol 0
    [1, 1],
    [0, 1],
    [1, 1],
    [0x80, 8], // red: one 8-bit symbol
    [1, 1],
    [0, 1],
    [1, 1],
    [0x40, 8], // blue
    [1, 1],
    [0, 1],
    [1, 1],
    [0xff, 8], // alpha
    [1, 1],
    [0, 1],
    [0, 1],
    [0, 1], // distance
  ];
  const out: number[] = [0x2f];
  let acc = 0;
  let n = 0;
  for (const [value, count] of bits) {
    for (let i = 0; i < count; i++) {
      acc |= ((value >> i) & 1) << n;
      if (++n === 8) {
        out.push(acc);
        acc = 0;
        n = 0;
      }
    }
  }
  if (n > 0) out.push(acc);
  return riff('VP8L', Buffer.from(out));
}

function riff(chunkType: string, data: Buffer): Buffer {
  const padded = data.length % 2 === 1 ? Buffer.concat([data, Buffer.from([0])]) : data;
  const chunk = Buffer.concat([Buffer.from(chunkType, 'latin1'), u32le(data.length), padded]);
  return Buffer.concat([Buffer.from('RIFF', 'latin1'), u32le(4 + chunk.length), Buffer.from('WEBP', 'latin1'), chunk]);
}

/** Well-known 1×1 WebP files (lossy VP8, and extended VP8X with alpha), as browsers' feature tests use. */
export const WEBP_LOSSY_1X1 = Buffer.from('UklGRiIAAABXRUJQVlA4IBYAAAAwAQCdASoBAAEADsD+JaQAA3AAAAAA', 'base64');
export const WEBP_ALPHA_1X1 = Buffer.from(
  'UklGRkoAAABXRUJQVlA4WAoAAAAQAAAAAAAAAAAAQUxQSAwAAAARBxAR/Q9ERP8DAABWUDggGAAAABQBAJ0BKgEAAQAAAP4AAA3AAP7mtQAAAA==',
  'base64',
);

const box = (type: string, ...payload: Buffer[]) => {
  const body = Buffer.concat(payload);
  return Buffer.concat([u32be(body.length + 8), Buffer.from(type, 'latin1'), body]);
};
const u64be = (n: number | bigint) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
};
const IDENTITY = [0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x40000000];
const QUARTER_TURN = [0, 0x10000, 0, -0x10000, 0, 0, 0, 0, 0x40000000];
const matrix = (m: number[]) =>
  Buffer.concat(
    m.map((v) => {
      const b = Buffer.alloc(4);
      b.writeInt32BE(v);
      return b;
    }),
  );

export interface MovieOptions {
  brand?: string;
  width: number;
  height: number;
  durationMs: number;
  timescale?: number;
  /** Box versions 1 (64-bit times) instead of 0. */
  version1?: boolean;
  rotated?: boolean;
  /** moov after mdat, as cameras write it. */
  moovAtEnd?: boolean;
  /** An audio track (0×0) before the video track. */
  audioFirst?: boolean;
  mdatBytes?: number;
  /** The raw duration field (in timescale units), as a crafted file would set it; default from durationMs. */
  durationUnits?: bigint;
}

/** An ISO base media file (MP4, or MOV with brand `qt  `): ftyp, moov (mvhd, traks) and mdat. */
export function movie(o: MovieOptions): Buffer {
  const timescale = o.timescale ?? 600;
  const duration = o.durationUnits ?? BigInt(Math.round((o.durationMs * timescale) / 1000));
  const v1 = o.version1 === true;
  const times = (trackId?: number) =>
    v1
      ? Buffer.concat([u64be(0), u64be(0), ...(trackId === undefined ? [u32be(timescale)] : [u32be(trackId), u32be(0)]), u64be(duration)])
      : Buffer.concat([
          u32be(0),
          u32be(0),
          ...(trackId === undefined ? [u32be(timescale)] : [u32be(trackId), u32be(0)]),
          u32be(Number(duration & 0xffffffffn)),
        ]);
  const version = Buffer.from([v1 ? 1 : 0, 0, 0, 0]);
  const mvhd = box('mvhd', version, times(), u32be(0x10000), u16be(0x100), Buffer.alloc(10), matrix(IDENTITY), Buffer.alloc(24), u32be(3));
  const trak = (id: number, handler: string, w: number, h: number, m: number[]) =>
    box(
      'trak',
      box(
        'tkhd',
        Buffer.from([v1 ? 1 : 0, 0, 0, 3]),
        times(id),
        Buffer.alloc(8),
        u16be(0),
        u16be(0),
        u16be(handler === 'soun' ? 0x100 : 0),
        u16be(0),
        matrix(m),
        u32be(w * 0x10000),
        u32be(h * 0x10000),
      ),
      box(
        'mdia',
        box(
          'mdhd',
          Buffer.from([0, 0, 0, 0]),
          u32be(0),
          u32be(0),
          u32be(timescale),
          u32be(Number(duration & 0xffffffffn)),
          u16be(0x55c4),
          u16be(0),
        ),
        box(
          'hdlr',
          Buffer.from([0, 0, 0, 0]),
          u32be(0),
          Buffer.from(handler, 'latin1'),
          Buffer.alloc(12),
          Buffer.from('handler\0', 'latin1'),
        ),
      ),
    );
  const tracks = [
    ...(o.audioFirst ? [trak(1, 'soun', 0, 0, IDENTITY)] : []),
    trak(2, 'vide', o.width, o.height, o.rotated ? QUARTER_TURN : IDENTITY),
  ];
  const brand = o.brand ?? 'isom';
  const ftyp = box('ftyp', Buffer.from(brand, 'latin1'), u32be(512), Buffer.from(brand === 'qt  ' ? 'qt  ' : 'isomiso2avc1mp41', 'latin1'));
  const moov = box('moov', mvhd, ...tracks);
  const mdat = box('mdat', Buffer.alloc(o.mdatBytes ?? 256, 0x11));
  return Buffer.concat(o.moovAtEnd ? [ftyp, mdat, moov] : [ftyp, moov, mdat]);
}
