// Issue 27 finding 8: a refusal sent before the request's body was read (a 413 on a declared size,
// a 401 or 415 before reading, oidc-provider's refusal of an oversized body) must end the
// connection, saying so (`Connection: close`). Left open, the connection waits for the rest of the
// body; a client that rightly stops sending it has its next request on that socket swallowed as
// body bytes, unanswered. A refusal of a body that was read (a 400 on its content) keeps it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startApp } from '../support/app.ts';
import { seedEdgeWorld, type EdgeWorld } from '../support/edge-world.ts';
import { RawConnection, type RawResponse } from '../support/raw-http.ts';

let world: EdgeWorld;
let port: number;

before(async () => {
  world = await seedEdgeWorld(await startApp({ listen: true, limiter: 'unlimited' }));
  port = Number(new URL(world.live.baseUrl).port);
});
after(async () => {
  await world?.close();
});

const NEXT = 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';

/** Sends a request head (and `body`, maybe less than it declares), reads the refusal, then sends a GET on the same socket. */
async function refuseThenReuse(head: string, body = ''): Promise<{ refusal: RawResponse; next: RawResponse | 'closed' }> {
  const connection = await RawConnection.open(port);
  try {
    connection.write(`${head}\r\n${body}`);
    const refusal = await connection.response();
    connection.write(NEXT);
    // Either the server answers the GET, or it has closed the socket: never silence.
    const next = await connection.response().catch((error: Error) => {
      if (connection.isClosed) return 'closed' as const;
      throw error;
    });
    return { refusal, next };
  } finally {
    connection.destroy();
  }
}

const post = (path: string, headers: Record<string, string>) =>
  [`POST ${path} HTTP/1.1`, 'Host: 127.0.0.1', ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`), ''].join('\r\n');

test('a refusal before the body was read closes the connection, saying so: the next request is never swallowed', async () => {
  const bearer = `Bearer ${world.token}`;
  const multipart = 'multipart/form-data; boundary=xyz';
  const cases: [string, string, number][] = [
    // The finding: an upload whose declared size is over the limit.
    [
      '413 on POST /media',
      post('/media', { authorization: bearer, 'content-type': multipart, 'content-length': String(300 * 1024 * 1024) }),
      413,
    ],
    ['401 on POST /media', post('/media', { 'content-type': multipart, 'content-length': String(5 * 1024 * 1024) }), 401],
    [
      '413 on a JSON body',
      post('/posts', { authorization: bearer, 'content-type': 'application/json', 'content-length': String(2 * 1024 * 1024) }),
      413,
    ],
    ['415 on a text body', post('/posts', { authorization: bearer, 'content-type': 'text/plain', 'content-length': '100000' }), 415],
    [
      "oidc-provider's refusal",
      post('/oauth/token', { 'content-type': 'application/x-www-form-urlencoded', 'content-length': '100000' }),
      400,
    ],
  ];
  for (const [what, head, status] of cases) {
    const { refusal, next } = await refuseThenReuse(head, 'grant_type=');
    assert.equal(refusal.status, status, `${what}: ${refusal.body}`);
    assert.equal(next, 'closed', `${what}: the connection is closed after the refusal, not left waiting for the body`);
    // oidc-provider writes its own answer: the connection is ended after it instead.
    if (!what.startsWith('oidc')) assert.equal(refusal.headers.connection, 'close', `${what}: the refusal says the connection closes`);
  }
});

test('a refusal of a request whose body was read keeps the connection, and the next request is answered', async () => {
  const body = JSON.stringify({ text: 42 });
  const { refusal, next } = await refuseThenReuse(
    post('/posts', { authorization: `Bearer ${world.token}`, 'content-type': 'application/json', 'content-length': String(body.length) }),
    body,
  );
  assert.equal(refusal.status, 400, refusal.body);
  assert.notEqual(refusal.headers.connection, 'close');
  assert.notEqual(next, 'closed');
  assert.equal((next as RawResponse).status, 200);
});
