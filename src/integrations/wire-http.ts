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
