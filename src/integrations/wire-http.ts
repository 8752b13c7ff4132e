// What the platforms' wire clients share below their own rules: kept-alive agents, the content
// encodings we ask for, and reading an answer's body under a cap. node:http rather than fetch:
// plain Buffer chunks, and no redirect followed.
import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';

/** Connections are kept between requests, as fetch keeps them. */
const httpAgent = new http.Agent({ keepAlive: true });
const httpsAgent = new https.Agent({ keepAlive: true });
export const agentFor = (url: URL): http.Agent => (url.protocol === 'https:' ? httpsAgent : httpAgent);

/** One exchange's deadline (see `deadline`). */
export interface Deadline {
  /** Aborted when the time is up or the caller's signal is (with the caller's reason). */
  signal: AbortSignal;
  /** Whether it was the time that ran out. */
  timedOut(): boolean;
  /** The exchange is over: the timer is cleared and the caller's signal let go. */
  done(): void;
}

/**
 * A deadline for one exchange: a signal aborted after `ms`, or when `outer` is. Not
 * AbortSignal.timeout and AbortSignal.any: that timer cannot be cleared, so every request fired
 * it `ms` after it was over (a DOMException and an abort event each, ~45 µs a request, measured
 * for bench:publisher), and `any` kept a listener on the caller's signal per request.
 */
export function deadline(ms: number, outer?: AbortSignal): Deadline {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
  }, ms);
  timer.unref();
  const follow = () => controller.abort(outer!.reason);
  if (outer?.aborted) follow();
  else outer?.addEventListener('abort', follow, { once: true });
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    done() {
      clearTimeout(timer);
      outer?.removeEventListener('abort', follow);
    },
  };
}

/** The content encodings we ask for, and identity (null: nothing to undo). */
const DECODERS = new Map<string, (() => zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress) | null>([
  ['identity', null],
  ['gzip', () => zlib.createGunzip()],
  ['x-gzip', () => zlib.createGunzip()],
  ['deflate', () => zlib.createInflate()],
  ['br', () => zlib.createBrotliDecompress()],
]);

/**
 * Reads `response`'s body, decoded, and calls `settle` once: with the text and its byte count, or
 * with the error (`tooLarge` past the cap, which counts the bytes we hold after decompression so a
 * small zip bomb is refused too; `unknownEncoding`; the signal's reason or "cut off" when the
 * answer breaks off).
 */
export function collectBody(
  response: http.IncomingMessage,
  o: {
    maxBodyBytes: number;
    signal: AbortSignal;
    tooLarge: () => Error;
    unknownEncoding: () => Error;
    settle: (error: unknown, body?: { text: string; bytes: number }) => void;
  },
): void {
  if (Number(response.headers['content-length'] ?? 0) > o.maxBodyBytes) return o.settle(o.tooLarge());
  const decode = DECODERS.get((response.headers['content-encoding'] ?? 'identity').trim().toLowerCase());
  if (decode === undefined) return o.settle(o.unknownEncoding());
  const stream: Readable = decode ? response.pipe(decode()) : response;
  const chunks: Buffer[] = [];
  let total = 0;
  const cutOff = () => o.settle(o.signal.aborted ? o.signal.reason : new Error('cut off'));
  stream.on('data', (chunk: Buffer) => {
    total += chunk.length;
    if (total > o.maxBodyBytes) return o.settle(o.tooLarge());
    chunks.push(chunk);
  });
  stream.on('end', () =>
    o.settle(undefined, { text: (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total)).toString('utf8'), bytes: total }),
  );
  stream.on('error', cutOff);
  response.on('error', cutOff);
  response.on('close', () => {
    if (!response.complete) cutOff();
  });
}
