// Real HTTP caches in front of our authenticated reads: undici's cache interceptor (as a private
// cache, which docs/hub-api.md recommends) and make-fetch-happen (npm's fetch, http-cache-semantics)
// keep a Hub API and a main API answer, and the second request revalidates: the client's cache
// sends If-None-Match with the ETag it got, we answer 304, and the client gets the body it holds.
// What crossed the wire is seen by a recording proxy between the client and the app.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request as forward, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
// @ts-expect-error: make-fetch-happen ships no types (only what this test calls is used)
import makeFetchHappen from 'make-fetch-happen';
import { Agent, interceptors, request } from 'undici';
import { startApp, type TestApp } from '../support/app.ts';
import { seedEdgeWorld, type EdgeWorld } from '../support/edge-world.ts';

interface Exchange {
  path: string;
  ifNoneMatch: string | undefined;
  status: number;
  etag: string | undefined;
}

let live: TestApp;
let world: EdgeWorld;
let proxy: Server;
let origin: string;
const exchanges: Exchange[] = [];
let cacheDir: string;

before(async () => {
  live = await startApp({ listen: true, limiter: 'unlimited' });
  world = await seedEdgeWorld(live);
  const target = new URL(live.baseUrl);
  proxy = createServer((incoming, outgoing) => {
    const sent = forward(
      {
        host: target.hostname,
        port: target.port,
        method: incoming.method,
        path: incoming.url,
        headers: { ...incoming.headers, host: target.host },
      },
      (answer) => {
        exchanges.push({
          path: incoming.url!,
          ifNoneMatch: incoming.headers['if-none-match'],
          status: answer.statusCode!,
          etag: answer.headers.etag,
        });
        outgoing.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(outgoing);
      },
    );
    incoming.pipe(sent);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  cacheDir = await mkdtemp(path.join(tmpdir(), 'hubops-http-cache-'));
});
after(async () => {
  proxy?.closeAllConnections();
  await new Promise((resolve) => proxy?.close(resolve));
  await (world ?? live)?.close();
  if (cacheDir) await rm(cacheDir, { recursive: true, force: true });
});

/** The reads to cache: a Hub API read (key) and a main API read (OAuth token), each with its credential. */
const reads = () => [
  { what: 'Hub API', path: '/v1/hub/playbook-opt-ins', authorization: `Bearer ${world.hubKey}` },
  { what: 'main API', path: '/workspaces', authorization: `Bearer ${world.token}` },
];

/** What crossed the wire for `path` since `from`. */
const wire = (from: number, p: string) => exchanges.slice(from).filter((e) => e.path === p);

test("undici's cache interceptor (a private cache) keeps our authenticated answers and revalidates them: If-None-Match, 304, the body from the cache", async () => {
  const agent = new Agent().compose(interceptors.cache({ type: 'private' }));
  try {
    for (const read of reads()) {
      const from = exchanges.length;
      const get = async () => {
        const response = await request(`${origin}${read.path}`, { dispatcher: agent, headers: { authorization: read.authorization } });
        return { status: response.statusCode, body: await response.body.text() };
      };
      const first = await get();
      const second = await get();
      assert.equal(first.status, 200, read.what);
      assert.deepEqual(second, first, `${read.what}: the client gets the answer it holds`);
      const [full, revalidation] = wire(from, read.path);
      assert.equal(full?.status, 200, read.what);
      assert.deepEqual(
        revalidation && { ifNoneMatch: revalidation.ifNoneMatch, status: revalidation.status, etag: revalidation.etag },
        { ifNoneMatch: full!.etag, status: 304, etag: full!.etag },
        `${read.what}: the second request revalidated with the ETag it held and got a 304 carrying that tag`,
      );
    }
  } finally {
    await agent.close();
  }
});

test('make-fetch-happen (npm, http-cache-semantics) revalidates the same way; with its Accept-Encoding the tag is the gzip one, on the 304 too', async () => {
  const fetch = makeFetchHappen.defaults({ cachePath: cacheDir, retry: false });
  for (const read of reads()) {
    const from = exchanges.length;
    const get = async () => {
      const response = await fetch(`${origin}${read.path}`, { headers: { authorization: read.authorization } });
      return { status: response.status, body: await response.text(), cache: response.headers.get('x-local-cache-status') };
    };
    const first = await get();
    const second = await get();
    assert.equal(first.status, 200, read.what);
    assert.equal(second.status, 200, read.what);
    assert.equal(second.body, first.body, read.what);
    assert.equal(second.cache, 'revalidated', `${read.what}: served from its cache after a revalidation`);
    const [full, revalidation] = wire(from, read.path);
    assert.match(String(full?.etag), /-gzip"$/, `${read.what}: the tag of the representation its Accept-Encoding selects`);
    assert.deepEqual(
      revalidation && { ifNoneMatch: revalidation.ifNoneMatch, status: revalidation.status, etag: revalidation.etag },
      { ifNoneMatch: full!.etag, status: 304, etag: full!.etag },
      read.what,
    );
  }
});
