import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startApp } from '../support/app.ts';
import { seedEdgeWorld, type EdgeWorld } from '../support/edge-world.ts';

// Both OpenAPI documents say how to poll: every read documents If-None-Match and
// If-Modified-Since, its validators, caching and compression headers, and a 304; and what they
// document is what the server sends, read for read (a generated client trusts exactly this).

let world: EdgeWorld;

before(async () => {
  world = await seedEdgeWorld(await startApp({ listen: true, limiter: 'unlimited' }));
  world.live.clock.advance(60_000);
  // The summary's Last-Modified is sent once the database's clock is two whole seconds past its last change.
  for (;;) {
    const { rows } = await world.live.db.pool.query(
      `SELECT bool_and(floor(extract(epoch FROM opt_ins_changed_at)) + 2 <= floor(extract(epoch FROM clock_timestamp()))) AS settled FROM hubs`,
    );
    if (rows[0].settled) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
});
after(async () => {
  await world?.close();
});

type Get = EdgeWorld['main'];
interface Documented {
  surface: 'main' | 'hub';
  get: Get;
  path: string;
  method: string;
  op: any;
}

const SURFACES = [
  { surface: 'main' as const, get: (w: EdgeWorld) => w.main },
  { surface: 'hub' as const, get: (w: EdgeWorld) => w.hub },
];

async function documented(): Promise<Documented[]> {
  const out: Documented[] = [];
  for (const { surface, get } of SURFACES) {
    const document = (await get(world)('/openapi.json')).body as { paths: Record<string, Record<string, any>> };
    for (const [path, methods] of Object.entries(document.paths)) {
      for (const [method, op] of Object.entries(methods)) out.push({ surface, get: get(world), path, method, op });
    }
  }
  return out;
}

const headerParameter = (op: any, name: string) => (op.parameters ?? []).find((p: any) => p.in === 'header' && p.name === name);
const headerNames = (response: any) => Object.keys(response?.headers ?? {});

/** A URL for a documented read: a path parameter is the first `_id` of the list at the parent path. */
async function urlOf({ get, path }: Documented): Promise<string> {
  const parameter = /\{(\w+)\}$/.exec(path);
  if (!parameter) return path;
  const parent = path.slice(0, parameter.index - 1);
  const list = await get(parent);
  assert.equal(list.status, 200, `${parent}: ${JSON.stringify(list.body)}`);
  const id = list.body.data[0]?._id;
  assert.ok(id, `${parent} has a row to read ${path} with`);
  return path.replace(parameter[0], encodeURIComponent(id));
}

describe('the OpenAPI documents', () => {
  test('every read documents the conditional request headers, its validators, caching, compression and a 304; no write does', async () => {
    const operations = await documented();
    const reads = operations.filter((o) => o.method === 'get');
    assert.ok(reads.some((o) => o.surface === 'hub') && reads.some((o) => o.surface === 'main'), 'both documents have reads');
    for (const o of operations) {
      const what = `${o.surface} ${o.method.toUpperCase()} ${o.path}`;
      if (o.method !== 'get') {
        assert.equal(headerParameter(o.op, 'If-None-Match'), undefined, what);
        assert.equal(o.op.responses['304'], undefined, what);
        continue;
      }
      for (const name of ['If-None-Match', 'If-Modified-Since']) {
        const parameter = headerParameter(o.op, name);
        assert.ok(parameter, `${what}: ${name}`);
        assert.equal(parameter.required, false, `${what}: ${name}`);
        assert.match(parameter.description, /malformed value is ignored/, `${what}: ${name}`);
      }
      for (const name of ['ETag', 'Cache-Control', 'Vary', 'Content-Encoding', 'RateLimit', 'RateLimit-Policy']) {
        assert.ok(headerNames(o.op.responses['200']).includes(name), `${what}: the 200 documents ${name}`);
      }
      const notModified = o.op.responses['304'];
      assert.ok(notModified, `${what}: a 304 is documented`);
      assert.equal(notModified.content, undefined, `${what}: a 304 has no body`);
      assert.match(notModified.description, /not counted against the rate limits/, what);
      for (const name of ['ETag', 'Cache-Control', 'RateLimit', 'RateLimit-Policy'])
        assert.ok(headerNames(notModified).includes(name), `${what}: the 304 documents ${name}`);
      assert.ok(!headerNames(notModified).includes('Content-Encoding'), `${what}: a 304 is never compressed`);
    }
  });

  test('Last-Modified is documented on the opt-in summary only: the one read whose figures have a change time', async () => {
    const reads = (await documented()).filter((o) => o.method === 'get');
    const withLastModified = reads
      .filter((o) => headerNames(o.op.responses['200']).includes('Last-Modified'))
      .map((o) => `${o.surface} ${o.op.operationId}`);
    assert.deepEqual(withLastModified, ['hub get_opt_in_summary']);
    for (const o of reads) {
      assert.equal(
        headerNames(o.op.responses['304']).includes('Last-Modified'),
        withLastModified.includes(`${o.surface} ${o.op.operationId}`),
        o.path,
      );
      const since = headerParameter(o.op, 'If-Modified-Since').description as string;
      if (withLastModified.includes(`${o.surface} ${o.op.operationId}`)) assert.match(since, /304 Not Modified/, o.path);
      else assert.match(since, /always gets the full response: use If-None-Match/, o.path);
    }
  });
});

describe('what the documents promise is what every read sends', () => {
  test('the 200 carries every header documented as always sent, and its ETag sent back gets a 304 with the documented headers', async () => {
    for (const o of (await documented()).filter((d) => d.method === 'get')) {
      const url = await urlOf(o);
      const what = `${o.surface} GET ${url}`;
      const full = await o.get(url);
      assert.equal(full.status, 200, `${what}: ${JSON.stringify(full.body).slice(0, 300)}`);
      // Content-Encoding only when negotiated (the body is large enough); every other documented header, always.
      for (const name of headerNames(o.op.responses['200']).filter((n) => n !== 'Content-Encoding')) {
        assert.ok(full.headers.has(name), `${what}: the 200 lacks ${name}`);
      }
      assert.equal(full.headers.get('cache-control'), 'private, no-cache, must-revalidate', what);
      assert.match(full.headers.get('vary') ?? '', /Authorization/i, what);
      assert.match(full.headers.get('etag') ?? '', /^"[A-Za-z0-9_-]{22}(-br|-gzip|-zstd)?"$/, what);

      const revalidated = await o.get(url, { headers: { 'if-none-match': full.headers.get('etag')! } });
      assert.equal(revalidated.status, 304, what);
      assert.equal(revalidated.body, '', `${what}: a 304 has no body`);
      for (const name of headerNames(o.op.responses['304'])) assert.ok(revalidated.headers.has(name), `${what}: the 304 lacks ${name}`);

      // "A malformed value is ignored": the full answer, never a 400 or a 500.
      for (const malformed of ['not-a-tag', '"unterminated', `${full.headers.get('etag')}, junk`, 'W/', ',,,', `"${'x'.repeat(4_000)}`]) {
        assert.equal(
          (await o.get(url, { headers: { 'if-none-match': malformed } })).status,
          200,
          `${what} If-None-Match: ${malformed.slice(0, 40)}`,
        );
      }
      const future = new Date(Date.now() + 86_400_000).toUTCString();
      for (const malformed of ['yesterday', '0', 'Tue, 31 Feb 2026 00:00:00 GMT', 'Tue, 24 Nov 2026 17:11:24 UTC', future]) {
        assert.equal(
          (await o.get(url, { headers: { 'if-modified-since': malformed } })).status,
          200,
          `${what} If-Modified-Since: ${malformed}`,
        );
      }

      const lastModified = full.headers.get('last-modified');
      if (headerNames(o.op.responses['200']).includes('Last-Modified')) {
        assert.equal(
          (await o.get(url, { headers: { 'if-modified-since': lastModified! } })).status,
          304,
          `${what}: If-Modified-Since its Last-Modified`,
        );
      } else {
        assert.equal(lastModified, null, `${what}: sends an undocumented Last-Modified`);
        // Documented as always getting the full response.
        assert.equal(
          (await o.get(url, { headers: { 'if-modified-since': new Date(Date.now() - 1000).toUTCString() } })).status,
          200,
          `${what}: If-Modified-Since`,
        );
      }
    }
  });
});
