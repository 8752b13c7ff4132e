import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { LruCache } from '../../platform/lru.ts';
import type { ContentCoding } from '../../platform/validators.ts';
import {
  BROTLI_LEVEL,
  COMPRESSED_CACHE_MAX_BYTES,
  COMPRESSED_CACHE_MIN_BYTES,
  COMPRESSED_COLLECT_MAX_BYTES,
  COMPRESSION_MIN_BYTES,
  GZIP_LEVEL,
  ZSTD_LEVEL,
} from '../../policy.ts';

// Response compression (RFC 9110 §8.4, §12.5.3) for the JSON and CSV the app answers: negotiated
// from Accept-Encoding, done on the libuv threadpool (zlib's async functions and streams), and
// remembered for large bodies whose strong ETag says they are the same bytes as last time.

// zstd is in Node 22's zlib from 22.15 on (experimental): offered only where it exists.
const zstdAvailable = typeof (zlib as { zstdCompress?: unknown }).zstdCompress === 'function';

/**
 * The codings we answer with, best first when a client accepts several equally: zstd and br
 * compress our JSON smaller than gzip at a lower CPU cost (bench/compression-levels.ts).
 */
export const OFFERED_CODINGS: readonly ContentCoding[] = zstdAvailable ? ['zstd', 'br', 'gzip'] : ['br', 'gzip'];

// token = 1*tchar (RFC 9110 §5.6.2); qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ).
const TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;
const QVALUE = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/;

/**
 * The coding to answer with, or undefined for identity. Each listed coding has a weight (q, 1 when
 * absent); `*` weighs every coding not listed; x-gzip is gzip. The heaviest coding we offer wins
 * (ties go to our order); none when all weigh 0, or when the client lists identity heavier. An
 * element that does not parse (a bad name, a q out of range) is ignored, as if absent. We never
 * answer 406: when identity too is refused (`identity;q=0, *;q=0`) the body still goes
 * uncompressed, which RFC 9110 §12.5.3 allows.
 */
export function negotiateCoding(
  header: string | string[] | undefined,
  offered: readonly ContentCoding[] = OFFERED_CODINGS,
): ContentCoding | undefined {
  const text = Array.isArray(header) ? header.join(',') : header;
  if (!text) return undefined;
  const weights = new Map<string, number>();
  for (const element of text.split(',')) {
    const [rawName, ...params] = element.split(';');
    const name = rawName!.trim().toLowerCase();
    if (!TOKEN.test(name)) continue;
    let weight: number | undefined = 1;
    for (const param of params) {
      const [key, value] = param.split('=').map((s) => s.trim());
      if (key?.toLowerCase() !== 'q') continue;
      weight = value !== undefined && QVALUE.test(value) ? Number(value) : undefined;
    }
    if (weight === undefined) continue;
    weights.set(name === 'x-gzip' ? 'gzip' : name, weight);
  }
  const any = weights.get('*') ?? 0;
  let best: { coding: ContentCoding; weight: number } | undefined;
  for (const coding of offered) {
    const weight = weights.get(coding) ?? any;
    if (weight > 0 && (!best || weight > best.weight)) best = { coding, weight };
  }
  const identity = weights.get('identity');
  if (!best || (identity !== undefined && identity > best.weight)) return undefined;
  return best.coding;
}

/** Whether a content type is one we compress: JSON (`application/json`, `application/*+json`) or CSV. */
export function isCompressible(contentType: unknown): boolean {
  if (typeof contentType !== 'string') return false;
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  return type === 'application/json' || type === 'text/csv' || /^application\/[^/]+\+json$/.test(type);
}

// Routes set a handful of Vary values (`Authorization` on every Hub API read): each one's answer,
// kept, so the hook on every response does not split and rebuild the same header text again.
const VARY_MEMO = new Map<string, string>();
const VARY_MEMO_MAX = 64;

/** `Vary` with `Accept-Encoding` added, keeping what is there, once (names compare case-insensitively). */
export function varyWithAcceptEncoding(vary: unknown): string {
  if (typeof vary !== 'string' && vary !== undefined) return withAcceptEncoding(vary);
  const text = vary ?? '';
  let answer = VARY_MEMO.get(text);
  if (answer === undefined) {
    answer = withAcceptEncoding(text);
    if (VARY_MEMO.size < VARY_MEMO_MAX) VARY_MEMO.set(text, answer);
  }
  return answer;
}

function withAcceptEncoding(vary: unknown): string {
  const names = (Array.isArray(vary) ? vary.join(',') : typeof vary === 'string' ? vary : '')
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  if (names.some((n) => n === '*' || n.toLowerCase() === 'accept-encoding')) return names.join(', ');
  return [...names, 'Accept-Encoding'].join(', ');
}

/** The coding's level, and the body's size where it is known (`exact`: the whole body is at hand; zstd needs it exact). */
function compressOptions(
  coding: ContentCoding,
  size: { hint?: number; exact?: number },
): zlib.ZlibOptions | zlib.BrotliOptions | zlib.ZstdOptions {
  const sizeHint = size.exact ?? size.hint;
  switch (coding) {
    case 'gzip':
      return { level: GZIP_LEVEL };
    case 'br':
      return {
        params: {
          [zlib.constants.BROTLI_PARAM_QUALITY]: BROTLI_LEVEL,
          [zlib.constants.BROTLI_PARAM_MODE]: zlib.constants.BROTLI_MODE_TEXT,
          ...(sizeHint === undefined ? {} : { [zlib.constants.BROTLI_PARAM_SIZE_HINT]: sizeHint }),
        },
      };
    case 'zstd':
      return {
        params: { [zlib.constants.ZSTD_c_compressionLevel]: ZSTD_LEVEL },
        ...(size.exact === undefined ? {} : { pledgedSrcSize: size.exact }),
      };
  }
}

/** Compresses a whole body on the threadpool. */
export function compressBuffer(body: Buffer, coding: ContentCoding): Promise<Buffer> {
  const options = compressOptions(coding, { exact: body.length });
  return new Promise((resolve, reject) => {
    const done = (error: Error | null, result: Buffer) => (error ? reject(error) : resolve(result));
    if (coding === 'gzip') zlib.gzip(body, options as zlib.ZlibOptions, done);
    else if (coding === 'br') zlib.brotliCompress(body, options as zlib.BrotliOptions, done);
    else zlib.zstdCompress(body, options as zlib.ZstdOptions, done);
  });
}

function compressStream(coding: ContentCoding, sizeHint: number | undefined): zlib.Gzip | zlib.BrotliCompress | zlib.ZstdCompress {
  const options = compressOptions(coding, { hint: sizeHint });
  if (coding === 'gzip') return zlib.createGzip(options as zlib.ZlibOptions);
  if (coding === 'br') return zlib.createBrotliCompress(options as zlib.BrotliOptions);
  return zlib.createZstdCompress(options as zlib.ZstdOptions);
}

interface CachedBody {
  /** The uncompressed length it was made from: a cheap check that the tag still names the same body. */
  identityLength: number;
  bytes: Buffer;
}

export interface CompressionStats {
  /** Bodies answered from the cache of compressed bodies. */
  readonly cacheHits: number;
  /** Bodies compressed and then kept in the cache. */
  readonly cacheFills: number;
  readonly cachedBodies: number;
}

/**
 * The onSend step that compresses: a 200 of a compressible type, at least COMPRESSION_MIN_BYTES
 * long (a stream of unknown length counts as long), not yet encoded, not a HEAD, for a client
 * that accepts one of our codings. Every response of a compressible type (and every 304) gets
 * `Vary: Accept-Encoding`, compressed or not, so a cache knows it depends on it.
 */
export class ResponseCompression {
  readonly #cache = new LruCache<string, CachedBody>({ max: COMPRESSED_CACHE_MAX_BYTES, weigh: (entry) => entry.bytes.length });
  #cacheHits = 0;
  #cacheFills = 0;

  stats(): CompressionStats {
    return { cacheHits: this.#cacheHits, cacheFills: this.#cacheFills, cachedBodies: this.#cache.size };
  }

  /** The payload to send: at once, or (a body compressed whole) a promise of it. */
  onSend(request: FastifyRequest, reply: FastifyReply, payload: unknown): unknown {
    // A 304 has no type but must say the Vary its 200 would (RFC 9110 §15.4.5); ours are all of JSON reads.
    if (reply.statusCode !== 304 && !isCompressible(reply.getHeader('content-type'))) return payload;
    reply.header('vary', varyWithAcceptEncoding(reply.getHeader('vary')));
    if (reply.statusCode !== 200 || request.method === 'HEAD' || reply.hasHeader('content-encoding')) return payload;
    const length = knownLength(payload, reply);
    if (length === null || (length !== undefined && length < COMPRESSION_MIN_BYTES)) return payload;
    const coding = negotiateCoding(request.headers['accept-encoding']);
    if (!coding) return payload;

    // The route tagged the representation for this coding already (platform/validators.ts representationTag).
    const etag = reply.getHeader('etag');
    const strongTag = typeof etag === 'string' && etag.startsWith('"') ? etag : undefined;
    reply.header('content-encoding', coding);
    // A strong tag names the same bytes until it changes: large bodies are compressed once per tag.
    const cacheKey =
      strongTag && length !== undefined && length >= COMPRESSED_CACHE_MIN_BYTES && length <= COMPRESSED_COLLECT_MAX_BYTES
        ? `${coding} ${strongTag}`
        : undefined;
    if (cacheKey) {
      const cached = this.#cache.get(cacheKey);
      if (cached && cached.identityLength === length) {
        this.#cacheHits++;
        if (payload instanceof Readable) payload.destroy();
        return this.#sendBytes(reply, cached.bytes);
      }
    }
    if (payload instanceof Readable && (length === undefined || length > COMPRESSED_COLLECT_MAX_BYTES)) {
      // Streamed through: memory holds a chunk, whatever the body's size.
      reply.removeHeader('content-length');
      const compressor = compressStream(coding, length);
      pipeline(payload, compressor).catch((error: { code?: string }) => {
        // A client that goes away mid-body is not a failure of ours; a source that fails is.
        if (error.code !== 'ERR_STREAM_PREMATURE_CLOSE') request.log.warn({ err: error }, 'compressed response stream failed');
      });
      return compressor;
    }
    return this.#compressWhole(reply, payload, coding, cacheKey);
  }

  async #compressWhole(reply: FastifyReply, payload: unknown, coding: ContentCoding, cacheKey: string | undefined): Promise<Buffer> {
    const body =
      payload instanceof Readable ? await collect(payload) : typeof payload === 'string' ? Buffer.from(payload) : (payload as Buffer);
    const compressed = await compressBuffer(body, coding);
    if (cacheKey) {
      this.#cache.set(cacheKey, { identityLength: body.length, bytes: compressed });
      this.#cacheFills++;
    }
    return this.#sendBytes(reply, compressed);
  }

  #sendBytes(reply: FastifyReply, bytes: Buffer): Buffer {
    reply.header('content-length', bytes.length);
    return bytes;
  }
}

/**
 * The body's length in bytes: undefined for a stream that does not say (treated as large), null
 * for no body or one we do not handle (an object Fastify has not serialised).
 */
function knownLength(payload: unknown, reply: FastifyReply): number | undefined | null {
  if (typeof payload === 'string') return Buffer.byteLength(payload);
  if (Buffer.isBuffer(payload)) return payload.length;
  if (payload instanceof Readable) {
    const header = Number(reply.getHeader('content-length'));
    return Number.isSafeInteger(header) && header >= 0 ? header : undefined;
  }
  return null;
}

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks);
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The app's response compression (its cache's figures, for tests and diagnostics). */
    responseCompression: ResponseCompression;
  }
}

/** Compresses every response of the app that qualifies (one onSend hook on the root instance). */
export function compressResponses(app: FastifyInstance): ResponseCompression {
  const compression = new ResponseCompression();
  app.decorate('responseCompression', compression);
  // A plain callback: most responses (every 304) need no compression and go on at once, without
  // the promise and microtask an async hook costs every request.
  app.addHook('onSend', (request, reply, payload, done) => {
    let sent: unknown;
    try {
      sent = compression.onSend(request, reply, payload);
    } catch (error) {
      done(error as Error);
      return;
    }
    if (sent instanceof Promise) sent.then((body: unknown) => done(null, body), done);
    else done(null, sent);
  });
  return compression;
}
