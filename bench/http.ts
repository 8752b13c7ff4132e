// A minimal keep-alive HTTP client for the Hub API, and the key rotation that keeps the
// benchmark clear of the per-key rate limits (120/min per key, 20/min per key on the summaries).
import http from 'node:http';
import zlib from 'node:zlib';

export interface Response {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body's content coding (Content-Encoding): 'identity' unless the server compressed it. */
  coding: string;
  /** Body bytes as they came over the wire (compressed, when the server compressed them). */
  wireBytes: number;
  /** The body decompressed and decoded as UTF-8 (done on reading, then kept). */
  readonly body: string;
  /** The decompressed body's size in bytes (decompresses on reading). */
  readonly identityBytes: number;
  /** From sending the request to the last byte of the body. */
  ms: number;
}

export interface RequestOptions {
  /** The key to send; default the ring's next. */
  key?: string;
  /** More request headers (Accept-Encoding, If-None-Match). */
  headers?: Record<string, string>;
}

const DECOMPRESS: Record<string, (bytes: Buffer) => Buffer> = {
  identity: (bytes) => bytes,
  gzip: (bytes) => zlib.gunzipSync(bytes),
  br: (bytes) => zlib.brotliDecompressSync(bytes),
  zstd: (bytes) => zlib.zstdDecompressSync(bytes),
};

function decompress(coding: string, bytes: Buffer): Buffer {
  const decoder = DECOMPRESS[coding];
  if (!decoder) throw new Error(`the server sent Content-Encoding: ${coding}, which the bench cannot decode`);
  return decoder(bytes);
}

/** Hands out keys round-robin, so N keys give N × 120 requests per minute. */
export class KeyRing {
  readonly keys: readonly string[];
  #next = 0;
  constructor(keys: readonly string[]) {
    if (keys.length === 0) throw new Error('KeyRing needs at least one key');
    this.keys = keys;
  }
  next(): string {
    const key = this.keys[this.#next]!;
    this.#next = (this.#next + 1) % this.keys.length;
    return key;
  }
}

export class HubClient {
  readonly baseUrl: string;
  readonly #agent: http.Agent;
  readonly #keys: KeyRing;

  constructor(baseUrl: string, keys: KeyRing, options: { sockets?: number } = {}) {
    this.baseUrl = baseUrl;
    this.#keys = keys;
    this.#agent = new http.Agent({ keepAlive: true, maxSockets: options.sockets ?? 8 });
  }

  /** GET `path` (relative to the server root) with the next key of the ring, or `options.key`. */
  get(path: string, options: RequestOptions = {}): Promise<Response> {
    const url = new URL(path, this.baseUrl);
    const headers = { ...options.headers, authorization: `Bearer ${options.key ?? this.#keys.next()}` };
    return new Promise((resolve, reject) => {
      const started = performance.now();
      const request = http.get(url, { agent: this.#agent, headers }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          // Timed at the last byte; the body is decompressed and decoded only if read (a 1.5 MB
          // string per response would have this process collecting garbage in the middle of
          // later timings).
          const ms = performance.now() - started;
          const bytes = Buffer.concat(chunks);
          const coding = response.headers['content-encoding']?.trim().toLowerCase() || 'identity';
          let identity: Buffer | undefined;
          const decoded = () => (identity ??= decompress(coding, bytes));
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            coding,
            wireBytes: bytes.length,
            get body() {
              return decoded().toString('utf8');
            },
            get identityBytes() {
              return decoded().length;
            },
            ms,
          });
        });
        response.on('error', reject);
      });
      request.on('error', reject);
    });
  }

  /** Like get(), but anything other than 200 is an error naming the status and body. */
  async getOk(path: string, options: RequestOptions = {}): Promise<Response> {
    const response = await this.get(path, options);
    if (response.status !== 200) throw new Error(`GET ${path} → ${response.status}: ${response.body.slice(0, 300)}`);
    return response;
  }

  close(): void {
    this.#agent.destroy();
  }
}

/** Runs `task` for each item with at most `concurrency` in flight. */
export async function forEachConcurrently<T>(items: readonly T[], concurrency: number, task: (item: T) => Promise<void>): Promise<void> {
  let index = 0;
  const worker = async () => {
    while (index < items.length) await task(items[index++]!);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}
