import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import zlib from 'node:zlib';
import fc from 'fast-check';
import { startApp } from '../support/app.ts';
import { seedEdgeWorld, type EdgeWorld } from '../support/edge-world.ts';
import { png } from '../support/media-files.ts';

// The standing fuzz suite, at the HTTP layer itself (issue 27 finding 14), over raw sockets so
// that any byte can be sent: conditional and encoding headers on every GET (If-None-Match,
// If-Match, If-Modified-Since, If-Unmodified-Since, If-Range, Range, Accept-Encoding, Accept,
// valid and garbage), with a few slow sockets dripping meanwhile; and a kept-alive connection
// reused after a refusal (413, 400, 415, 401, 403, 404, 405): the next request on that socket
// gets its own answer, or the server said `Connection: close` and closed it — never silence,
// never an answer to something else. Every answer: no 5xx; a JSON error in our shape; a
// compressed body in a coding that was accepted and that decodes; a 304 without a body.
// Seeded (FUZZ_SEED) and bounded (FUZZ_MS per property), as openapi-fuzz.test.ts.

const SEED = process.env.FUZZ_SEED === 'random' ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.FUZZ_SEED ?? 20_261_124);
const BUDGET_MS = Number(process.env.FUZZ_MS ?? 2_500);
const ANSWER_MS = 10_000;
const FC = {
  seed: SEED,
  numRuns: 1_000_000,
  interruptAfterTimeLimit: BUDGET_MS,
  markInterruptAsFailure: false,
  endOnFailure: true,
  includeErrorInReport: true,
} as const;

let world: EdgeWorld;
let port: number;
const counts: Record<string, number> = {};

before(async () => {
  world = await seedEdgeWorld(await startApp({ listen: true, limiter: 'unlimited' }));
  port = Number(new URL(world.live.baseUrl).port);
  console.log(`http fuzz seed ${SEED} (replay with FUZZ_SEED=${SEED}); ${BUDGET_MS} ms per property`);
});
after(async () => {
  console.log(
    `http fuzz cases: ${Object.entries(counts)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
  );
  await world?.close();
});

// ---- one HTTP/1.1 connection, byte for byte -------------------------------------------------

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** A client socket that writes what it is given and reads answers one at a time (Content-Length, chunked, or to the close). */
class Connection {
  readonly #socket: net.Socket;
  #buffer = Buffer.alloc(0);
  #closed = false;
  #wake: (() => void) | undefined;

  private constructor(socket: net.Socket) {
    this.#socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk]);
      this.#wake?.();
    });
    socket.on('close', () => {
      this.#closed = true;
      this.#wake?.();
    });
    socket.on('error', () => {});
  }

  static open(): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => resolve(new Connection(socket)));
      socket.once('error', reject);
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  write(data: string | Buffer): Promise<void> {
    if (this.#closed || this.#socket.destroyed) return Promise.resolve();
    return new Promise((resolve) => this.#socket.write(data, () => resolve()));
  }

  destroy(): void {
    this.#socket.destroy();
  }

  async #more(deadline: number): Promise<boolean> {
    if (this.#closed) return false;
    const wait = deadline - Date.now();
    if (wait <= 0) throw new Error(`no complete answer within ${ANSWER_MS} ms`);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, wait);
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.#wake = undefined;
    return true;
  }

  /** The next answer; 'closed' when the server closed the connection before sending one. `head`: a HEAD's answer has no body. */
  async response(options: { head?: boolean } = {}): Promise<RawResponse | 'closed'> {
    const deadline = Date.now() + ANSWER_MS;
    let end = this.#buffer.indexOf('\r\n\r\n');
    while (end === -1) {
      if (!(await this.#more(deadline))) {
        if (this.#buffer.length === 0) return 'closed';
        throw new Error(`the connection closed inside an answer's head: ${this.#buffer.toString('latin1').slice(0, 200)}`);
      }
      end = this.#buffer.indexOf('\r\n\r\n');
    }
    const [statusLine, ...lines] = this.#buffer.subarray(0, end).toString('latin1').split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine!)?.[1]);
    assert.ok(status >= 100, `not an HTTP answer: ${statusLine}`);
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).trim().toLowerCase();
      headers[name] = headers[name] === undefined ? line.slice(colon + 1).trim() : `${headers[name]}, ${line.slice(colon + 1).trim()}`;
    }
    this.#buffer = this.#buffer.subarray(end + 4);
    let body: Buffer;
    if (options.head || status === 304 || status === 204 || status < 200) {
      body = Buffer.alloc(0);
    } else if (headers['transfer-encoding']?.includes('chunked')) {
      const parts: Buffer[] = [];
      for (;;) {
        let lineEnd = this.#buffer.indexOf('\r\n');
        while (lineEnd === -1) {
          if (!(await this.#more(deadline))) throw new Error('the connection closed inside a chunked body');
          lineEnd = this.#buffer.indexOf('\r\n');
        }
        const size = Number.parseInt(this.#buffer.subarray(0, lineEnd).toString('latin1'), 16);
        while (this.#buffer.length < lineEnd + 2 + size + 2) {
          if (!(await this.#more(deadline))) throw new Error('the connection closed inside a chunk');
        }
        parts.push(this.#buffer.subarray(lineEnd + 2, lineEnd + 2 + size));
        this.#buffer = this.#buffer.subarray(lineEnd + 2 + size + 2);
        if (size === 0) break;
      }
      body = Buffer.concat(parts);
    } else if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length']);
      while (this.#buffer.length < length) {
        if (!(await this.#more(deadline))) throw new Error('the connection closed inside a body');
      }
      body = this.#buffer.subarray(0, length);
      this.#buffer = this.#buffer.subarray(length);
    } else {
      while (await this.#more(deadline));
      body = this.#buffer;
      this.#buffer = Buffer.alloc(0);
    }
    return { status, headers, body };
  }
}

const request = (method: string, path: string, headers: Record<string, string | number>, body: string | Buffer = ''): Buffer =>
  Buffer.concat([
    Buffer.from(
      `${method} ${path} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n${Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('')}\r\n`,
      'latin1',
    ),
    Buffer.from(body),
  ]);

// ---- what every answer must be -------------------------------------------------------------

const CODINGS: Record<string, (body: Buffer) => Buffer> = {
  gzip: zlib.gunzipSync,
  br: zlib.brotliDecompressSync,
  deflate: zlib.inflateSync,
  zstd: zlib.zstdDecompressSync,
};

/**
 * Whether Accept-Encoding allows `coding` (RFC 9110 §12.5.3): named or `*` (x-gzip is gzip), with
 * no valid q=0 for it. A malformed or out-of-range q is read as allowing: a server may ignore it
 * either way, and only a coding the client refused is wrong.
 */
function accepts(header: string, coding: string): boolean {
  let own: number | undefined;
  let star: number | undefined;
  for (const part of header.split(',')) {
    const [token = '', ...params] = part.split(';');
    const name = token
      .trim()
      .toLowerCase()
      .replace(/^x-gzip$/, 'gzip');
    const q = params.map((p) => p.trim()).find((p) => /^q=/i.test(p));
    const weight = q === undefined || !/^(0(\.\d{0,3})?|1(\.0{0,3})?)$/.test(q.slice(2)) ? 1 : Number(q.slice(2));
    if (name === coding) own = weight;
    else if (name === '*') star = weight;
  }
  return (own ?? star ?? 0) > 0;
}

/** The body as sent before its Content-Encoding, asserting the coding is one the request accepted. */
function decoded(response: RawResponse, acceptEncoding: string | undefined, what: string): Buffer {
  const coding = response.headers['content-encoding'];
  if (coding === undefined || coding === 'identity') return response.body;
  assert.ok(CODINGS[coding], `${what}: unknown Content-Encoding ${coding}`);
  assert.ok(accepts(acceptEncoding ?? '', coding), `${what}: ${coding} sent for Accept-Encoding ${JSON.stringify(acceptEncoding)}`);
  assert.match(response.headers.vary ?? '', /accept-encoding/i, `${what}: a compressed answer varies on Accept-Encoding`);
  try {
    return CODINGS[coding](response.body);
  } catch (error) {
    assert.fail(`${what}: the ${coding} body does not decode: ${(error as Error).message}`);
  }
}

function assertAnswer(response: RawResponse, what: string, acceptEncoding?: string, head = false): void {
  assert.ok(response.status < 500, `${what}: ${response.status} ${response.body.toString('utf8').slice(0, 300)}`);
  if (response.status === 304) {
    assert.equal(response.body.length, 0, `${what}: a 304 has no body`);
    assert.equal(response.headers['content-length'] ?? '0', '0', `${what}: nor a Content-Length of one`);
    return;
  }
  const text = decoded(response, acceptEncoding, what).toString('utf8');
  if (head || !/json/.test(response.headers['content-type'] ?? '')) return;
  const body = JSON.parse(text);
  if (response.status >= 400) {
    assert.equal(typeof body.error, 'string', `${what}: ${text.slice(0, 300)}`);
    assert.equal(typeof body.message, 'string', `${what}: ${text.slice(0, 300)}`);
    assert.doesNotMatch(text, /FST_|statusCode| {4}at |SELECT |violates/, `${what}: leaks internals`);
  }
}

// ---- conditional and encoding headers, with slow sockets dripping meanwhile ------------------

const HTTP_DATES = [
  'Sun, 06 Nov 1994 08:49:37 GMT',
  'Fri, 31 Dec 9999 23:59:59 GMT',
  'Thu, 01 Jan 1970 00:00:00 GMT',
  'Sunday, 06-Nov-94 08:49:37 GMT',
  'Sun Nov  6 08:49:37 1994',
  'Wed, 30 Feb 2026 25:61:61 GMT',
  '0',
  '-1',
  'yesterday',
  'Sat, 01 Jan 275760 00:00:00 GMT',
  '',
];
const GARBAGE = ['', ' ', ',', '*', '"', '""', 'W/', 'W/"', '"a" "b"', '"\u00ff"', 'x'.repeat(4_000), '\u00e9\u00e8', ';q=0', 'null', '[]'];
const CODING_TOKENS = ['gzip', 'br', 'zstd', 'deflate', 'identity', '*', 'x-gzip', 'compress', 'GZIP', 'Br', 'unknown', ''];
const Q_VALUES = ['', ';q=0', ';q=1', ';q=0.5', ';q=abc', ';q=2', ';q=-1', ';q=0.001', ';q=1.0000', ';q=', ';Q=0'];

const acceptEncoding = fc.oneof(
  fc
    .tuple(
      fc.array(fc.tuple(fc.constantFrom(...CODING_TOKENS), fc.constantFrom(...Q_VALUES)), { minLength: 1, maxLength: 6 }),
      fc.constantFrom(', ', ',', ' ,'),
    )
    .map(([list, separator]) => list.map(([token, q]) => `${token}${q}`).join(separator)),
  fc.constantFrom(...GARBAGE),
);

interface ConditionalCase {
  path: string;
  method: 'GET' | 'HEAD';
  auth: boolean;
  headers: Record<string, string>;
}

/** The GET paths of both REST APIs (from their OpenAPI documents) and of the pages, with an id of the world where one is needed. */
async function getPaths(): Promise<string[]> {
  const ids: Record<string, string> = { id: 'o1', workspaceId: 'w1', postId: 'p1', playbookId: 'p1' };
  const paths: string[] = ['/', '/docs', '/openapi.json', '/v1/hub/openapi.json', '/healthz', '/app/sign-in'];
  for (const [prefix, document] of [
    ['', (await world.main('/openapi.json')).body],
    ['/v1/hub', (await world.hub('/openapi.json')).body],
  ] as const) {
    for (const [template, methods] of Object.entries(document.paths as Record<string, Record<string, unknown>>)) {
      if (methods.get) paths.push(prefix + template.replace(/\{([^}]+)\}/g, (_, name: string) => ids[name] ?? 'x'));
    }
  }
  return [...new Set(paths)];
}

test('conditional and encoding headers on every GET and HEAD: no 5xx, a decodable body in an accepted coding, a bodiless 304', async () => {
  const paths = await getPaths();
  // Tags the server really gives, to send back as is, weakened, listed or with a coding suffix.
  const etags = new Set<string>();
  const conditional = fc.record({
    path: fc.constantFrom(...paths),
    method: fc.constantFrom<'GET' | 'HEAD'>('GET', 'GET', 'GET', 'HEAD'),
    auth: fc.constantFrom(true, true, true, true, false),
    headers: fc.record(
      {
        'if-none-match': fc.oneof(
          fc.constant('<etag>'),
          fc.constant('W/<etag>'),
          fc.constant('"x", <etag>'),
          fc.constant('<etag>-gzip'),
          fc.constantFrom(...GARBAGE),
        ),
        'if-match': fc.oneof(fc.constant('<etag>'), fc.constantFrom(...GARBAGE)),
        'if-modified-since': fc.constantFrom(...HTTP_DATES),
        'if-unmodified-since': fc.constantFrom(...HTTP_DATES),
        'if-range': fc.oneof(fc.constant('<etag>'), fc.constantFrom(...HTTP_DATES)),
        range: fc.constantFrom('bytes=0-10', 'bytes=-5', 'bytes=10-0', 'bytes=0-0,1-1', 'items=0-1', 'bytes=999999999999-'),
        'accept-encoding': acceptEncoding,
        accept: fc.constantFrom('application/json', 'text/html', '*/*', 'application/xml', 'text/csv', '', ';;;', 'application/*;q=0'),
      },
      { requiredKeys: [] },
    ),
  }) as fc.Arbitrary<ConditionalCase>;

  // A few slow clients the whole time: head bytes dripped, a body dripped, one idle socket.
  const slow: net.Socket[] = [];
  const drips: NodeJS.Timeout[] = [];
  const answersToSlow: string[] = [];
  for (const shape of ['head', 'head', 'body', 'body', 'idle'] as const) {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => answersToSlow.push(chunk.toString('latin1').split('\r\n')[0]!));
    slow.push(socket);
    const head = `POST /posts HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${world.token}\r\ncontent-type: application/json\r\ncontent-length: 4000\r\n\r\n`;
    if (shape === 'body') socket.write(head);
    let sent = 0;
    if (shape !== 'idle')
      drips.push(
        setInterval(() => {
          if (socket.destroyed) return;
          socket.write(shape === 'head' ? head[sent++ % head.length]! : '[');
        }, 100),
      );
  }

  let runs = 0;
  let connection = await Connection.open();
  try {
    await fc.assert(
      fc.asyncProperty(conditional, async ({ path, method, auth, headers }) => {
        runs++;
        const etag = [...etags][runs % Math.max(1, etags.size)] ?? '"none"';
        const sent: Record<string, string> = {};
        for (const [name, value] of Object.entries(headers)) sent[name] = value.replaceAll('<etag>', etag);
        if (auth) sent.authorization = `Bearer ${path.startsWith('/v1/hub') ? world.hubKey : world.token}`;
        const what = `${method} ${path} ${JSON.stringify(sent).slice(0, 300)}`;
        if (connection.closed) connection = await Connection.open();
        await connection.write(request(method, path, sent));
        const response = await connection.response({ head: method === 'HEAD' });
        assert.notEqual(response, 'closed', `${what}: the connection closed without an answer`);
        if (response === 'closed') return;
        assertAnswer(response, what, sent['accept-encoding'], method === 'HEAD');
        if (response.headers.etag) etags.add(response.headers.etag);
        if (response.status === 304) assert.ok(sent['if-none-match'] ?? sent['if-modified-since'], `${what}: 304 without a condition`);
        if (response.headers.connection === 'close') connection = await Connection.open();
      }),
      FC,
    );
    // The slow ones did not hold the rest up (the property ran), and none got a 5xx.
    assert.ok(runs > 0);
    for (const line of answersToSlow) assert.doesNotMatch(line, /^HTTP\/1\.1 5/, `a slow client got ${line}`);
  } finally {
    counts['conditional and encoding headers'] = runs;
    for (const timer of drips) clearInterval(timer);
    for (const socket of slow) socket.destroy();
    connection.destroy();
  }
});

// ---- a kept-alive connection after a refusal -------------------------------------------------

interface Refusal {
  name: string;
  bytes: () => Buffer;
}

const MIB = 1024 * 1024;

function refusals(): Refusal[] {
  const auth = { authorization: `Bearer ${world.token}` };
  const json = { ...auth, 'content-type': 'application/json' };
  const big = `{"text":"${'x'.repeat(MIB + 10)}","workspaceId":"w1","status":"draft"}`;
  const chunked = (body: string) => `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
  return [
    { name: 'JSON body over 1 MiB (413)', bytes: () => request('POST', '/posts', { ...json, 'content-length': big.length }, big) },
    {
      name: 'chunked JSON body over 1 MiB (413)',
      bytes: () => request('POST', '/posts', { ...json, 'transfer-encoding': 'chunked' }, chunked(big)),
    },
    { name: 'malformed JSON (400)', bytes: () => request('POST', '/posts', { ...json, 'content-length': 9 }, '{"text":,') },
    {
      name: 'a broken \\u escape in JSON (400)',
      bytes: () => request('POST', '/posts', { ...json, 'content-length': 15 }, '{"text":"\\ud80"'),
    },
    {
      name: 'wrong content type (415)',
      bytes: () => request('POST', '/posts', { ...auth, 'content-type': 'text/plain', 'content-length': 5 }, 'hello'),
    },
    { name: 'a broken percent-encoding (400)', bytes: () => request('GET', '/posts/%E0%A4%A', auth) },
    { name: 'a path segment over 100 characters (400)', bytes: () => request('GET', `/posts/${'a'.repeat(150)}`, auth) },
    { name: 'no key (401)', bytes: () => request('GET', '/v1/hub/playbook-opt-ins', {}) },
    {
      name: 'a body on a GET without a key (401)',
      bytes: () => request('GET', '/v1/hub/playbook-opt-ins', { 'content-length': 2000 }, 'y'.repeat(2000)),
    },
    { name: 'a browser request (403)', bytes: () => request('GET', '/v1/hub/playbook-opt-ins', { origin: 'https://evil.example' }) },
    { name: 'an unknown path (404)', bytes: () => request('POST', '/nowhere', { ...json, 'content-length': 2 }, '{}') },
    {
      name: 'a method not allowed, with a body (405)',
      bytes: () => request('DELETE', '/v1/hub/playbook-opt-ins', { 'content-length': 3000 }, 'z'.repeat(3000)),
    },
    {
      name: 'an invalid post (400)',
      bytes: () => request('POST', '/posts', { ...json, 'content-length': 2 }, '{}'),
    },
  ];
}

/** Sends `refusal` then a Hub API read on the same socket: the read gets its own answer, or the refusal said Connection: close and the socket closed. */
async function thenReuse(refusal: Refusal): Promise<void> {
  const connection = await Connection.open();
  try {
    await connection.write(refusal.bytes());
    const first = await connection.response();
    assert.notEqual(first, 'closed', `${refusal.name}: closed without an answer`);
    if (first === 'closed') return;
    assert.ok(first.status >= 400 && first.status < 500, `${refusal.name}: ${first.status} ${first.body.toString().slice(0, 200)}`);
    assertAnswer(first, refusal.name);
    await connection.write(request('GET', '/v1/hub/playbook-opt-ins?limit=1', { authorization: `Bearer ${world.hubKey}` }));
    const second = await connection
      .response()
      .catch((error: Error) => assert.fail(`${refusal.name}, then a read on the same socket: ${error.message}`));
    if (second === 'closed') {
      assert.equal(first.headers.connection, 'close', `${refusal.name}: the socket closed after the refusal without Connection: close`);
      return;
    }
    assert.equal(
      second.status,
      200,
      `${refusal.name}, then a read on the same socket: ${second.status} ${second.body.toString().slice(0, 200)}`,
    );
    assert.equal(JSON.parse(second.body.toString()).data[0].id, 'o1', `${refusal.name}: the read got another answer`);
  } finally {
    connection.destroy();
  }
}

test('a kept-alive connection after a refusal (413, 400, 415, 401, 403, 404, 405): the next request gets its own answer, or Connection: close', async () => {
  const cases = refusals();
  let runs = 0;
  try {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...cases), async (refusal) => {
        runs++;
        await thenReuse(refusal);
      }),
      FC,
    );
  } finally {
    counts['kept-alive after a refusal'] = runs;
  }
});

test('a kept-alive connection after an upload refused as too large (413)', async () => {
  const boundary = 'fuzzboundary';
  const image = Buffer.concat([png(8, 8), Buffer.alloc(10 * MIB + 10)]);
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="workspaceId"\r\n\r\nw1\r\n`),
    Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="big.png"\r\ncontent-type: image/png\r\n\r\n`),
    image,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  await thenReuse({
    name: 'an image over 10 MB (413)',
    bytes: () =>
      request(
        'POST',
        '/media',
        {
          authorization: `Bearer ${world.token}`,
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'content-length': body.length,
        },
        body,
      ),
  });
});

// A client that stops sending its body once refused (curl does, on an early 413) and sends its next
// request: the unread rest of the body can never arrive, so only closing the connection is right.
test('a kept-alive connection after a 413 answered before the body ended, the body never finished', async () => {
  const big = 2 * MIB;
  for (const [name, path, type] of [
    ['JSON', '/posts', 'application/json'],
    ['upload', '/media', 'multipart/form-data; boundary=b'],
  ] as const) {
    const start = type.startsWith('multipart')
      ? '--b\r\ncontent-disposition: form-data; name="file"; filename="big.png"\r\ncontent-type: image/png\r\n\r\n'
      : '{"text":"';
    await thenReuse({
      name: `${name}: ${big * 10} bytes announced, the first ${big} sent (413)`,
      bytes: () =>
        request(
          'POST',
          path,
          { authorization: `Bearer ${world.token}`, 'content-type': type, 'content-length': big * 10 },
          Buffer.concat([Buffer.from(start), type.startsWith('multipart') ? png(8, 8) : Buffer.alloc(0), Buffer.alloc(big, 0x61)]),
        ),
    });
  }
});
