import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import zlib from 'node:zlib';
import fc from 'fast-check';
import { negotiateCoding, OFFERED_CODINGS, varyWithAcceptEncoding } from '../../src/surfaces/shared/compression.ts';
import { readKey, startApp, type TestApp } from '../support/app.ts';
import { signedIn } from '../support/web-forms.ts';
import * as fx from '../support/world.ts';

// Issue 13, item 3: JSON and CSV answers are compressed as Accept-Encoding asks (br, gzip, zstd
// where Node has it), decompress to exactly the identity body, say `Vary: Accept-Encoding`, carry
// their coding in the ETag's suffix, and odd Accept-Encoding values never fail a request. Raw
// bytes through node:http: fetch would decompress them silently.

const HUB = 'h_cmp';
const WORKSPACES = 1_000;
const OPT_INS = 600;
const NOW = '2026-11-21T12:00:00.000Z';

let t: TestApp;
let key: string;

before(async () => {
  t = await startApp({
    listen: true,
    limiter: 'unlimited',
    now: NOW,
    seed: async (db) => {
      await fx.seedWebHub(db);
      await fx.hub(db, HUB, 'acc_1');
      await fx.field(db, HUB, 'region');
      const ids = Array.from({ length: WORKSPACES }, (_, i) => `ws_${String(i).padStart(4, '0')}`);
      await db.kysely
        .insertInto('workspaces')
        .values(
          ids.map((id, i) => ({ id, hub_id: HUB, name: `Location ${i}`, fields: JSON.stringify({ region: ['North', 'South'][i % 2] }) })),
        )
        .execute();
      await fx.playbook(db, HUB, 'pb_cmp');
      await fx.optIns(
        db,
        Array.from({ length: OPT_INS }, (_, i) => ({
          id: `oi_${String(i).padStart(4, '0')}`,
          hubId: HUB,
          playbookId: 'pb_cmp',
          workspaceId: ids[i % WORKSPACES]!,
          optedInAt: new Date(Date.parse(NOW) - (i + 1) * 60_000).toISOString(),
          responses: [{ question: 'Store hours?', answer: '9-5' }],
        })),
      );
      await fx.adAccount(db, HUB, 'ads_cmp', 'idle', '2026-11-21T11:00:00.000Z');
      await fx.spend(
        db,
        ids.map((workspaceId, i) => ({ hubId: HUB, adAccountId: 'ads_cmp', workspaceId, date: '2026-11-20', cents: 1000 + i })),
      );
    },
  });
  key = await readKey(t.db, HUB);
});
after(async () => {
  await t?.close();
});

interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

function raw(path: string, headers: Record<string, string> = {}, method = 'GET', body?: string): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const request = http.request(`${t.baseUrl}${path}`, { method, headers, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
    });
    request.on('error', reject);
    request.end(body);
  });
}

const hub = (path: string, headers: Record<string, string> = {}, method = 'GET') =>
  raw(`/v1/hub${path}`, { authorization: `Bearer ${key}`, ...headers }, method);

function decode(response: Raw): Buffer {
  switch (response.headers['content-encoding']) {
    case undefined:
      return response.body;
    case 'gzip':
      return zlib.gunzipSync(response.body);
    case 'br':
      return zlib.brotliDecompressSync(response.body);
    case 'zstd':
      return zlib.zstdDecompressSync(response.body);
    default:
      throw new Error(`unexpected content-encoding ${response.headers['content-encoding']}`);
  }
}

const varyNames = (response: Raw) =>
  String(response.headers.vary ?? '')
    .split(',')
    .map((n) => n.trim().toLowerCase());

/** A compressed 200 in `coding` whose bytes decode to exactly `identity`'s, with its length and tag. */
function assertCompressedLike(response: Raw, identity: Raw, coding: string, what: string): void {
  assert.equal(response.status, 200, what);
  assert.equal(response.headers['content-encoding'], coding, what);
  assert.ok(response.body.length < identity.body.length / 3, `${what}: ${response.body.length} bytes is not compressed`);
  assert.deepEqual(decode(response), identity.body, what);
  if (response.headers['content-length'] !== undefined)
    assert.equal(Number(response.headers['content-length']), response.body.length, what);
  assert.ok(varyNames(response).includes('accept-encoding'), `${what}: Vary ${response.headers.vary}`);
  if (identity.headers.etag) assert.equal(response.headers.etag, `${String(identity.headers.etag).slice(0, -1)}-${coding}"`, what);
}

test('a 500-row page comes back in each coding we offer and decodes to the identity body', async () => {
  assert.ok(OFFERED_CODINGS.includes('br') && OFFERED_CODINGS.includes('gzip'));
  const identity = await hub('/playbook-opt-ins?limit=500');
  assert.equal(identity.status, 200);
  assert.equal(identity.headers['content-encoding'], undefined);
  assert.equal(JSON.parse(identity.body.toString('utf8')).data.length, 500);
  // The identity answer depends on Accept-Encoding too: a cache must know.
  assert.deepEqual(varyNames(identity).sort(), ['accept-encoding', 'authorization']);
  for (const coding of OFFERED_CODINGS) {
    const response = await hub('/playbook-opt-ins?limit=500', { 'accept-encoding': coding });
    assertCompressedLike(response, identity, coding, coding);
    // Vary keeps rest.ts's Authorization, once each.
    assert.deepEqual(varyNames(response).sort(), ['accept-encoding', 'authorization'], coding);
  }
});

test('MCP answers are compressed like REST ones: a 500-row tool result from the Hub MCP endpoint', async () => {
  const call = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 'list_playbook_opt_ins', arguments: { limit: 500 } },
  });
  const headers = {
    authorization: `Bearer ${key}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-11-25',
  };
  const identity = await raw('/v1/hub/mcp', headers, 'POST', call);
  assert.equal(identity.status, 200, identity.body.toString('utf8').slice(0, 300));
  assert.equal(identity.headers['content-encoding'], undefined);
  assert.equal(JSON.parse(identity.body.toString('utf8')).result.structuredContent.data.length, 500);
  for (const coding of OFFERED_CODINGS) {
    const response = await raw('/v1/hub/mcp', { ...headers, 'accept-encoding': coding }, 'POST', call);
    assertCompressedLike(response, identity, coding, `MCP ${coding}`);
    assert.equal(response.headers['cache-control'], 'no-store', coding);
  }
});

test('both OpenAPI documents are compressed too', async () => {
  for (const path of ['/v1/hub/openapi.json', '/openapi.json']) {
    const identity = await raw(path);
    assert.equal(identity.status, 200, path);
    for (const coding of OFFERED_CODINGS)
      assertCompressedLike(await raw(path, { 'accept-encoding': coding }), identity, coding, `${path} ${coding}`);
  }
});

test('q-values decide the coding; identity when nothing we offer is acceptable (never 406)', async () => {
  const identity = await raw('/v1/hub/openapi.json');
  const cases: [string, string | undefined][] = [
    ['br;q=0, gzip', 'gzip'],
    ['gzip;q=0.5, br;q=1', 'br'],
    ['GZIP', 'gzip'],
    ['x-gzip', 'gzip'],
    ['*', OFFERED_CODINGS[0]],
    ['*;q=0.5, gzip;q=0.8', 'gzip'],
    ['deflate, compress', undefined],
    ['gzip;q=0.5, identity', undefined],
    // Every coding refused, identity too: we do not answer 406, the body goes uncompressed.
    ['identity;q=0, *;q=0', undefined],
    ['', undefined],
  ];
  for (const [header, expected] of cases) {
    const response = await raw('/v1/hub/openapi.json', { 'accept-encoding': header });
    assert.equal(response.status, 200, header);
    assert.equal(response.headers['content-encoding'], expected, header);
    assert.deepEqual(decode(response), identity.body, header);
  }
  assert.equal(negotiateCoding('zstd, br, gzip', ['br', 'gzip']), 'br', 'a coding we do not offer is never chosen');
  assert.equal(negotiateCoding('gzip;q=0.001, br;q=0'), 'gzip');
});

test('no compression for a small error body, a HEAD or a 304', async () => {
  const refused = await raw('/v1/hub/playbook-opt-ins?limit=500', { 'accept-encoding': 'gzip' });
  assert.equal(refused.status, 401);
  assert.equal(refused.headers['content-encoding'], undefined);
  assert.ok(varyNames(refused).includes('accept-encoding'));
  assert.equal(typeof JSON.parse(refused.body.toString('utf8')).error, 'string', 'our JSON error body, as sent');

  const head = await hub('/playbook-opt-ins?limit=500', { 'accept-encoding': 'gzip' }, 'HEAD');
  assert.equal(head.status, 200);
  assert.equal(head.headers['content-encoding'], undefined);
  assert.equal(head.body.length, 0);

  const full = await hub('/playbook-opt-ins?limit=500', { 'accept-encoding': 'br' });
  const notModified = await hub('/playbook-opt-ins?limit=500', { 'accept-encoding': 'br', 'if-none-match': String(full.headers.etag) });
  assert.equal(notModified.status, 304);
  assert.equal(notModified.headers['content-encoding'], undefined);
  assert.deepEqual(varyNames(notModified).sort(), ['accept-encoding', 'authorization'], 'the Vary its 200 would carry');
  assert.equal(notModified.body.length, 0);
});

test("a compressed 200 tags its coding; a 304 carries the tag its 200 would, and another coding's tag (identity's too) gets the full answer", async () => {
  const identity = await hub('/playbook-opt-ins?limit=500');
  const identityTag = String(identity.headers.etag);
  assert.match(identityTag, /^"[^"]+"$/);
  for (const coding of OFFERED_CODINGS) {
    const compressed = await hub('/playbook-opt-ins?limit=500', { 'accept-encoding': coding });
    const codedTag = String(compressed.headers.etag);
    assert.equal(codedTag, `${identityTag.slice(0, -1)}-${coding}"`);
    const again = await hub('/playbook-opt-ins?limit=500', { 'accept-encoding': coding, 'if-none-match': `W/${codedTag}` });
    assert.equal(again.status, 304, coding);
    assert.equal(again.headers.etag, codedTag, `${coding}: the 304 carries the tag its 200 would, not the client's W/ form`);
    // A strong tag names exact bytes: the identity body's is not the compressed body's, nor the reverse (RFC 9110 §8.8.3.3).
    const fromIdentity = await hub('/playbook-opt-ins?limit=500', { 'accept-encoding': coding, 'if-none-match': identityTag });
    assert.equal(fromIdentity.status, 200, `${coding}: the identity tag does not name the ${coding} body`);
    assert.equal(fromIdentity.headers.etag, codedTag);
    const toIdentity = await hub('/playbook-opt-ins?limit=500', { 'if-none-match': codedTag });
    assert.equal(toIdentity.status, 200, `${coding}: the ${coding} tag does not name the identity body`);
    assert.equal(toIdentity.headers.etag, identityTag);
    // Several tags held (one per coding, as a cache that keeps variants sends): the 304 names the selected one.
    const many = await hub('/playbook-opt-ins?limit=500', { 'accept-encoding': coding, 'if-none-match': `${identityTag}, ${codedTag}` });
    assert.equal(many.status, 304);
    assert.equal(many.headers.etag, codedTag);
  }
  // A body too small to compress is still tagged for the coding its request selected, so a 304 decided before the body is built is exact.
  const small = await hub('/opt-in-summary', { 'accept-encoding': 'gzip' });
  assert.equal(small.headers['content-encoding'], undefined);
  assert.match(String(small.headers.etag), /-gzip"$/);
  const head = await hub('/playbook-opt-ins?limit=500', { 'accept-encoding': 'gzip' }, 'HEAD');
  assert.equal(head.headers.etag, `${identityTag.slice(0, -1)}-gzip"`, 'a HEAD carries the tag its GET would');
  // The OpenAPI document's body-hash tag, too.
  const document = await raw('/v1/hub/openapi.json', { 'accept-encoding': 'gzip' });
  assert.match(String(document.headers.etag), /-gzip"$/);
  assert.equal(
    (await raw('/v1/hub/openapi.json', { 'accept-encoding': 'gzip', 'if-none-match': String(document.headers.etag) })).status,
    304,
  );
});

test('the web admin CSV export streams compressed and decodes to the same CSV', async () => {
  const browser = await signedIn(t);
  const cookie = [...browser.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  const path = `/app/hubs/${fx.HUB}/opt-ins.csv`;
  const identity = await raw(path, { cookie });
  assert.equal(identity.status, 200, identity.body.toString('utf8').slice(0, 300));
  assert.match(String(identity.headers['content-type']), /^text\/csv/);
  assert.equal(identity.body.toString('utf8').trimEnd().split('\n').length > 130, true);
  for (const coding of OFFERED_CODINGS) {
    const response = await raw(path, { cookie, 'accept-encoding': coding });
    assert.equal(response.status, 200, coding);
    assert.equal(response.headers['content-encoding'], coding);
    assert.equal(response.headers['content-length'], undefined, `${coding}: streamed, no length known ahead`);
    assert.ok(varyNames(response).includes('accept-encoding'), coding);
    assert.deepEqual(decode(response), identity.body, coding);
  }
});

test('odd Accept-Encoding values never fail a request: the body is identity or decodes to it', async () => {
  const identity = await raw('/v1/hub/openapi.json');
  const odd = [
    'gzip;q=abc',
    ';;;',
    'br;q=2',
    ',',
    ',,,gzip,,,',
    'gzip;q=',
    'gzip;q=1.0001',
    'gzip;;q=0.5',
    '=;q=1',
    'br ; q = 0.7',
    'q=1',
    'gzip;q=0.5;q=0',
    'identity;q=x',
    '*;q=-1',
    'gz\u00edp',
    ','.repeat(4096),
    `${'gzip;q=0.1,'.repeat(300)}br`,
  ];
  const check = async (header: string) => {
    const response = await raw('/v1/hub/openapi.json', { 'accept-encoding': header });
    assert.equal(response.status, 200, JSON.stringify(header));
    assert.deepEqual(decode(response), identity.body, JSON.stringify(header));
  };
  for (const header of odd) await check(header);
  // Generated header text: visible ASCII and spaces (what Node lets through), biased to the grammar's characters.
  const headerText = fc.string({
    unit: fc.oneof(
      fc.constantFrom(',', ';', '=', 'q', '.', ' ', '*', '0', '1', 'gzip', 'br', 'zstd', 'identity'),
      fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
    ),
    maxLength: 40,
  });
  await fc.assert(
    fc.asyncProperty(headerText, async (header) => {
      assert.equal(negotiateCoding(header) === undefined || OFFERED_CODINGS.includes(negotiateCoding(header)!), true);
      await check(header.trim());
    }),
    { numRuns: 60 },
  );
});

test('Vary: Accept-Encoding is added once, keeping what is there', () => {
  assert.equal(varyWithAcceptEncoding(undefined), 'Accept-Encoding');
  assert.equal(varyWithAcceptEncoding('Authorization'), 'Authorization, Accept-Encoding');
  assert.equal(varyWithAcceptEncoding('Authorization, accept-encoding'), 'Authorization, accept-encoding');
  assert.equal(varyWithAcceptEncoding(['Accept', 'Origin']), 'Accept, Origin, Accept-Encoding');
  assert.equal(varyWithAcceptEncoding('*'), '*');
});

test('a large report is compressed once per tag and coding, then served from the cache', async () => {
  const identity = await hub('/spend-by-workspace');
  assert.equal(identity.status, 200, identity.body.toString('utf8').slice(0, 300));
  assert.ok(identity.body.length >= 64 * 1024, `the report is ${identity.body.length} bytes: too small to be cached`);
  const before = t.app.fastify.responseCompression.stats();
  const first = await hub('/spend-by-workspace', { 'accept-encoding': 'br' });
  const second = await hub('/spend-by-workspace', { 'accept-encoding': 'br' });
  assertCompressedLike(first, identity, 'br', 'first');
  assert.deepEqual(second.body, first.body, 'the same bytes again');
  assert.equal(second.headers.etag, first.headers.etag);
  const afterBr = t.app.fastify.responseCompression.stats();
  assert.equal(afterBr.cacheFills - before.cacheFills, 1);
  assert.equal(afterBr.cacheHits - before.cacheHits, 1);
  // Another coding is other bytes: compressed and kept on its own.
  assertCompressedLike(await hub('/spend-by-workspace', { 'accept-encoding': 'gzip' }), identity, 'gzip', 'gzip');
  const afterGzip = t.app.fastify.responseCompression.stats();
  assert.equal(afterGzip.cacheFills - afterBr.cacheFills, 1);
  assert.equal(afterGzip.cacheHits, afterBr.cacheHits);
  // A small page is never kept.
  await hub('/playbook-opt-ins?limit=5', { 'accept-encoding': 'br' });
  assert.deepEqual(t.app.fastify.responseCompression.stats(), afterGzip);
});
