// Issue 27 finding 5: slow and idle clients are not held. A connection that sends nothing, a
// request head or body dripped a byte at a time, a kept-alive connection left idle: each is closed
// once its limit (src/policy.ts, docs/operations.md "Slow clients") has passed, while other
// requests are served all along; an upload's body has a longer limit than a JSON body's; and an
// instance holds at most so many connections. The first test runs on the policy's own numbers; the
// others on shorter ones, to see every limit enforced in seconds.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { HEADERS_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS, MAX_CONNECTIONS, UPLOAD_TIMEOUT_MS } from '../../src/policy.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { seedEdgeWorld } from '../support/edge-world.ts';
import { httpRequest } from '../support/http.ts';
import { RawConnection } from '../support/raw-http.ts';

const apps: { close(): Promise<void> }[] = [];
after(async () => {
  for (const app of apps) await app.close();
});

const portOf = (live: TestApp) => Number(new URL(live.baseUrl).port);

/** Requests served one after another until `until` settles; returns how many, all of which must be 200. */
async function serveMeanwhile(live: TestApp, until: Promise<unknown>): Promise<number> {
  let done = false;
  void until.finally(() => (done = true));
  let served = 0;
  while (!done) {
    const response = await httpRequest(`${live.baseUrl}/healthz`, { timeoutMs: 5_000 });
    assert.equal(response.status, 200);
    served += 1;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return served;
}

/** Writes `bytes` one at a time, `everyMs` apart, until the connection is closed. */
function drip(connection: RawConnection, bytes: string, everyMs: number): void {
  let at = 0;
  const timer = setInterval(() => {
    if (connection.isClosed || at >= bytes.length) return clearInterval(timer);
    connection.write(bytes[at++]!);
  }, everyMs);
  void connection.closed.then(() => clearInterval(timer));
}

/** Waits for the server to close the connection (the test's own timeout bounds the wait); the time it took. */
async function closedAfter(connection: RawConnection, openedAt: number): Promise<number> {
  await connection.closed;
  return Date.now() - openedAt;
}

test('with the policy numbers: connections that send nothing are closed after the head timeout, others served meanwhile', {
  timeout: HEADERS_TIMEOUT_MS + 30_000,
}, async (t) => {
  const live = await startApp({ listen: true });
  apps.push(live);
  const server = live.app.fastify.server;
  assert.deepEqual(
    [server.headersTimeout, server.requestTimeout, server.keepAliveTimeout, server.maxConnections],
    [HEADERS_TIMEOUT_MS, UPLOAD_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS, MAX_CONNECTIONS],
  );
  const openedAt = Date.now();
  const silent = await Promise.all(Array.from({ length: 50 }, () => RawConnection.open(portOf(live))));
  const closing = Promise.all(silent.map((connection) => closedAfter(connection, openedAt)));
  const served = await serveMeanwhile(live, closing);
  const times = await closing;
  t.diagnostic(`50 silent connections closed after ${Math.min(...times)}–${Math.max(...times)} ms; ${served} requests served meanwhile`);
  assert.ok(served > 0);
  for (const connection of silent) assert.equal(connection.isClosed, true);
});

test('a dripped head or body gets a 408 and is closed; an upload has longer; an idle kept-alive connection is closed', {
  timeout: 60_000,
}, async (t) => {
  const limits = { headersTimeoutMs: 1_000, bodyTimeoutMs: 2_000, uploadTimeoutMs: 5_000, keepAliveTimeoutMs: 1_000 };
  const world = await seedEdgeWorld(await startApp({ listen: true, limiter: 'unlimited', connectionLimits: limits }));
  apps.push(world);
  const live = world.live;
  const port = portOf(live);
  const openedAt = Date.now();

  const head = await RawConnection.open(port);
  drip(head, `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ${'x'.repeat(1_000)}`, 100);

  const json = await RawConnection.open(port);
  const body = JSON.stringify({ text: 'x'.repeat(500) });
  json.write(`POST /posts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
  drip(json, body, 100);

  const upload = await RawConnection.open(port);
  const multipart = `--b\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n\r\n${'x'.repeat(1_000)}`;
  upload.write(
    `POST /media HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${world.token}\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000\r\n\r\n`,
  );
  drip(upload, multipart, 100);

  const idle = await RawConnection.open(port);
  idle.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  assert.equal((await idle.response()).status, 200);

  const all = Promise.all([head, json, upload, idle].map((connection) => closedAfter(connection, openedAt)));
  const served = await serveMeanwhile(live, all);
  const [headMs, jsonMs, uploadMs, idleMs] = (await all) as [number, number, number, number];
  t.diagnostic(
    `closed after: head ${headMs} ms, JSON body ${jsonMs} ms, upload ${uploadMs} ms, idle ${idleMs} ms; ${served} served meanwhile`,
  );
  assert.ok(served > 0);
  // The upload outlived the JSON body's deadline: it had the uploads' limit.
  assert.ok(uploadMs > jsonMs, `the upload (${uploadMs} ms) had longer than the JSON body (${jsonMs} ms)`);
  for (const [what, connection] of [
    ['head', head],
    ['JSON body', json],
    ['upload', upload],
  ] as const) {
    const answer = await connection.response(100);
    assert.equal(answer.status, 408, `${what}: ${answer.body}`);
  }
});

test('an instance holds at most maxConnections: those beyond are closed at once, and once some go, new ones are served', {
  timeout: 60_000,
}, async () => {
  const live = await startApp({ listen: true, connectionLimits: { maxConnections: 10 } });
  apps.push(live);
  const opened = await Promise.all(Array.from({ length: 14 }, () => RawConnection.open(portOf(live))));
  for (const connection of opened) connection.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  const answers = await Promise.all(
    opened.map((connection) =>
      connection.response(5_000).then(
        (r) => r.status,
        (e: Error) => e.message,
      ),
    ),
  );
  const served = answers.filter((answer) => answer === 200).length;
  // The test's own discovery request may still hold one of the ten.
  assert.ok(served >= 9 && served <= 10, `served ${served} of 14: ${answers.join(', ')}`);
  assert.ok(
    answers.every((answer) => answer === 200 || answer === 'the server closed the connection without an answer'),
    answers.join(', '),
  );
  for (const connection of opened) connection.destroy();
  await Promise.all(opened.map((connection) => connection.closed));
  for (let ok = false; !ok; ) {
    ok = await httpRequest(`${live.baseUrl}/healthz`, { timeoutMs: 2_000 }).then(
      (response) => response.status === 200,
      () => false,
    );
  }
});
