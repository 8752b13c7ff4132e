// The front door: GET / for browsers and API clients, GET /v1/hub, the docs under /docs, the web
// admin's HTML 404s (the APIs' JSON ones unchanged), the favicon.
import assert from 'node:assert/strict';
import http from 'node:http';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import Fastify from 'fastify';
import { createKey } from '../../src/domain/api-keys/api-key.service.ts';
import type { Clock } from '../../src/platform/clock.ts';
import { MemoryRateLimiter } from '../../src/platform/rate-limit.ts';
import { createReportCaches } from '../../src/surfaces/shared/report-caches.ts';
import { webPlugin } from '../../src/surfaces/web/plugin.ts';
import { hubCsvExports } from '../../src/surfaces/hub-api/csv.ts';
import { hubOperations } from '../../src/surfaces/hub-api/operations.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { httpRequest, type HttpResponse } from '../support/http.ts';
import { HUB, seedWebHub } from '../support/world.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const CHROME_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';

/** The headers of every web admin page: a CSP whose nonce is the stylesheet's, no framing, no caching. */
function assertPageHeaders(r: HttpResponse, what: string): void {
  assert.equal(r.headers['content-type'], 'text/html; charset=utf-8', what);
  const csp = String(r.headers['content-security-policy']);
  const nonce = /style-src 'nonce-([\w-]+)'/.exec(csp)?.[1];
  assert.ok(nonce, `${what}: a style nonce in ${csp}`);
  assert.ok(r.text.includes(`<style nonce="${nonce}">`), `${what}: the stylesheet carries the header's nonce`);
  assert.match(csp, /frame-ancestors 'none'/, what);
  assert.equal(r.headers['x-frame-options'], 'DENY', what);
  assert.equal(r.headers['x-content-type-options'], 'nosniff', what);
  assert.equal(r.headers['cache-control'], 'no-store', what);
  assert.match(r.text, /<link rel="icon" type="image\/svg\+xml" href="data:image\/svg\+xml,/, `${what}: the icon`);
}

/** A rendered docs page: its stylesheet under the header's nonce, nothing to run, no framing. */
function assertDocHeaders(r: HttpResponse, what: string): void {
  assert.equal(r.status, 200, what);
  assert.equal(r.headers['content-type'], 'text/html; charset=utf-8', what);
  const csp = String(r.headers['content-security-policy']);
  const nonce = /style-src 'nonce-([\w-]+)'/.exec(csp)?.[1];
  assert.ok(nonce && r.text.includes(`<style nonce="${nonce}">`), `${what}: the stylesheet carries the header's nonce`);
  assert.match(csp, /^default-src 'none';/, what);
  assert.ok(!csp.includes('script-src'), `${what}: no script allowed`);
  assert.match(csp, /frame-ancestors 'none'/, what);
  assert.equal(r.headers['x-frame-options'], 'DENY', what);
  assert.equal(r.headers['x-content-type-options'], 'nosniff', what);
}

/** A JSON 404 exactly as the APIs answer it. */
function assertJson404(r: HttpResponse, method: string, urlPath: string): void {
  assert.equal(r.status, 404, `${method} ${urlPath}`);
  assert.match(String(r.headers['content-type']), /^application\/json/, `${method} ${urlPath}`);
  assert.deepEqual(r.json, { error: 'not_found', message: `No endpoint ${method} ${urlPath}.` });
}

/** GET with the path sent byte for byte (a URL string would have its dot segments resolved first). */
function rawGet(baseUrl: string, rawPath: string): Promise<{ status: number; text: string }> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    http
      .get({ hostname, port, path: rawPath, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res
          .on('data', (c: Buffer) => chunks.push(c))
          .on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }))
          .on('error', reject);
      })
      .on('error', reject);
  });
}

describe('front door', () => {
  let t: TestApp;
  let key: string;
  before(async () => {
    t = await startApp({ listen: true, seed: seedWebHub });
    key = (await createKey(t.db, { hubId: HUB, name: 'front door' })).key;
  });
  after(async () => {
    await t?.close();
  });
  const get = (urlPath: string, headers: Record<string, string> = {}) => httpRequest(`${t.baseUrl}${urlPath}`, { headers });

  test("GET / for a browser: a page in the web admin look, with the web pages' headers, that varies on Accept", async () => {
    const r = await get('/', { accept: CHROME_ACCEPT });
    assert.equal(r.status, 200);
    assertPageHeaders(r, 'front page');
    assert.match(String(r.headers.vary), /Accept/);
    assert.match(r.text, /This is a hubops server/);
  });

  test('GET / for curl, an API client, or no Accept at all: JSON with the same links as the page', async () => {
    const page = await get('/', { accept: CHROME_ACCEPT });
    const hrefs = [...page.text.matchAll(/href="([^"]+)"/g)].map((m) => m[1]!).filter((href) => href.startsWith('http'));
    for (const accept of ['*/*', 'application/json', 'text/html;q=0.5, application/json', undefined]) {
      const r = await get('/', accept === undefined ? {} : { accept });
      assert.equal(r.status, 200, String(accept));
      assert.equal(r.headers['content-type'], 'application/json; charset=utf-8', String(accept));
      assert.match(String(r.headers.vary), /Accept/);
      assert.equal(r.headers['x-content-type-options'], 'nosniff');
      const b = t.baseUrl;
      assert.deepEqual(r.json, {
        name: 'hubops',
        description: r.json.description,
        webAdmin: `${b}/app`,
        docs: `${b}/docs`,
        apis: [
          {
            name: 'Hub API',
            url: `${b}/v1/hub`,
            openapi: `${b}/v1/hub/openapi.json`,
            mcp: `${b}/v1/hub/mcp`,
            authentication: r.json.apis[0].authentication,
          },
          { name: 'main API', url: b, openapi: `${b}/openapi.json`, mcp: `${b}/mcp`, authentication: r.json.apis[1].authentication },
        ],
      });
      const links = [r.json.webAdmin, r.json.docs, ...r.json.apis.flatMap((api: any) => [api.url, api.openapi, api.mcp])];
      assert.deepEqual(new Set(hrefs), new Set(links), 'the page links exactly what the JSON lists');
    }
  });

  test('every link of the front door answers: pages and documents 200, the MCP endpoints as MCP endpoints', async () => {
    const door = (await get('/')).json;
    // The web admin sends a visitor to sign in, and that page is there.
    const admin = await httpRequest(door.webAdmin, { headers: { accept: CHROME_ACCEPT } });
    assert.equal(admin.status, 303);
    assert.equal((await httpRequest(new URL(admin.headers.location!, door.webAdmin))).status, 200);
    assert.equal((await httpRequest(door.docs, { headers: { accept: CHROME_ACCEPT } })).status, 200);
    for (const api of door.apis) {
      const openapi = await httpRequest(api.openapi);
      assert.equal(openapi.status, 200, api.openapi);
      assert.match(openapi.json.openapi, /^3\./);
      // An MCP endpoint without credentials: refused in JSON-RPC's or the API's words, not "no such endpoint".
      const mcp = await httpRequest(api.mcp, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
        }),
      });
      assert.ok([401, 403].includes(mcp.status), `${api.mcp}: ${mcp.status} ${mcp.text}`);
    }
    assert.equal((await httpRequest(door.apis[0].url)).status, 200, 'the Hub API index');
    assert.equal((await httpRequest(`${door.apis[1].url}/whoami`)).status, 401, 'the main API under its base URL');
  });

  test('GET /v1/hub: without a key, the declared operations with the OpenAPI and MCP URLs and how to authenticate', async () => {
    const r = await get('/v1/hub');
    assert.equal(r.status, 200, r.text);
    assert.match(String(r.headers['content-type']), /^application\/json/);
    assert.equal(r.json.openapi, `${t.baseUrl}/v1/hub/openapi.json`);
    assert.equal(r.json.mcp, `${t.baseUrl}/v1/hub/mcp`);
    assert.equal(r.json.authentication.header, 'Authorization: Bearer <HUB_API_KEY>');
    const declared = [...hubOperations.filter((op) => op.rest), ...hubCsvExports];
    assert.ok(declared.length >= 3);
    assert.deepEqual(
      r.json.endpoints.map((e: any) => e.operationId),
      declared.map((op) => op.name),
    );
    // The same operations at the same URLs as the OpenAPI document, and each answers a key.
    const openapi = (await get('/v1/hub/openapi.json')).json;
    const server = openapi.servers[0].url;
    const documented = Object.entries(openapi.paths).flatMap(([p, ops]: [string, any]) =>
      Object.entries(ops).map(([method, op]: [string, any]) => `${method.toUpperCase()} ${server}${p} ${op.operationId}`),
    );
    assert.deepEqual(r.json.endpoints.map((e: any) => `${e.method} ${e.url} ${e.operationId}`).sort(), documented.sort());
    for (const endpoint of r.json.endpoints) {
      const answer = await httpRequest(endpoint.url, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(answer.status, 200, `${endpoint.url}: ${answer.text.slice(0, 200)}`);
      const op = declared.find((o) => o.name === endpoint.operationId)!;
      assert.deepEqual(endpoint.parameters, Object.keys(op.input.properties));
    }
    // Read-only, like the rest of the Hub API.
    const post = await httpRequest(`${t.baseUrl}/v1/hub`, { method: 'POST' });
    assert.equal(post.status, 405);
    assert.equal(post.json.error, 'method_not_allowed');
  });

  test('/docs: the README and every docs/*.md rendered for browsers, as markdown for everything else', async () => {
    const files = [
      'README.md',
      ...(await readdir(path.join(ROOT, 'docs')))
        .filter((n) => n.endsWith('.md'))
        .sort()
        .map((n) => `docs/${n}`),
    ];
    const index = await get('/docs');
    assert.equal(index.status, 200);
    assert.match(String(index.headers['content-type']), /^application\/json/);
    assert.deepEqual(
      index.json.pages.map((p: any) => p.url),
      files.map((f) => `${t.baseUrl}/${f}`),
    );
    // For a browser: the README rendered, every page listed (the README as the index itself).
    const html = await get('/docs', { accept: CHROME_ACCEPT });
    assertDocHeaders(html, 'docs index');
    assert.match(html.text, /<h1 id="hubops">hubops<a class="anchor" href="#hubops"/);
    for (const f of files.slice(1)) assert.ok(html.text.includes(`href="/${f}"`), f);
    for (const f of files) {
      const r = await get(`/${f}`);
      assert.equal(r.status, 200, f);
      assert.equal(r.headers['content-type'], 'text/markdown; charset=utf-8', f);
      assert.equal(r.headers['x-content-type-options'], 'nosniff', f);
      assert.equal(r.headers['x-frame-options'], 'DENY', f);
      assert.match(String(r.headers.vary), /Accept/, f);
      assert.match(String(r.headers['content-security-policy']), /default-src 'none'.*sandbox/, f);
      assert.equal(r.text, await readFile(path.join(ROOT, f), 'utf8'), f);
      // The same URL in a browser is the page rendered; ?format=md is the markdown there too.
      const page = await get(`/${f}`, { accept: CHROME_ACCEPT });
      assertDocHeaders(page, f);
      assert.match(page.text, /<article>/, f);
      assert.ok(!/\$BASE\b/.test(page.text), `${f}: $BASE is filled in`);
      const raw = await get(`/${f}?format=md`, { accept: CHROME_ACCEPT });
      assert.equal(raw.headers['content-type'], 'text/markdown; charset=utf-8', f);
      assert.equal(raw.text, r.text, f);
    }
    // Screenshots, with their type; an API reference per OpenAPI document.
    const image = await get('/docs/screenshots/home-390.png');
    assert.equal(image.status, 200);
    assert.equal(image.headers['content-type'], 'image/png');
    for (const name of ['hub', 'main']) {
      const r = await get(`/docs/api/${name}`, { accept: CHROME_ACCEPT });
      assert.equal(r.status, 200, name);
      assert.match(String(r.headers['content-security-policy']), /script-src 'self';.*connect-src 'self'/, name);
      const scripts = [...r.text.matchAll(/<script src="([^"]+)"/g)].map((m) => m[1]!);
      assert.equal(scripts.length, 2, name);
      for (const src of scripts) {
        const js = await get(src);
        assert.equal(js.status, 200, src);
        assert.match(String(js.headers['content-type']), /^text\/javascript/, src);
      }
      assert.ok(!/<script>/.test(r.text), `${name}: no inline script`);
    }
    const bundle = [
      ...(await get('/docs/api/hub', { accept: CHROME_ACCEPT })).text.matchAll(/<script src="([^"]+swagger-ui-bundle\.js)"/g),
    ][0]![1]!;
    const cached = await get(bundle);
    assert.equal(cached.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.equal((await get(bundle, { 'if-none-match': String(cached.headers.etag) })).status, 304);
  });

  test('/docs refuses everything that is not on its list: traversal, other files, encodings', async () => {
    const secretish = ['"dependencies"', 'DATABASE_URL =', 'export function loadConfig'];
    for (const attempt of [
      '/docs/..%2Fpackage.json',
      '/docs/..%2F..%2Fpackage.json',
      '/docs/%2e%2e%2fsrc%2fconfig.ts',
      '/docs/..%5Cpackage.json',
      '/docs/package.json',
      '/docs/README.md',
      '/docs/.env',
      '/docs/CLI.MD',
      '/docs/architecture.md.bak',
      '/docs/screenshots',
      '/docs/..',
      '/docs/%2e%2e',
      '/docs/../package.json',
      '/docs/../../etc/passwd',
      '/README.md/../package.json',
    ]) {
      const r = await rawGet(t.baseUrl, attempt);
      assert.equal(r.status, 404, `${attempt}: ${r.status}`);
      for (const s of secretish) assert.ok(!r.text.includes(s), `${attempt} leaks ${s}`);
    }
    // A NUL byte is refused by the input rule before any route runs.
    assert.equal((await get('/docs/cli.md%00')).status, 400);
    const json = await get('/docs/..%2Fpackage.json');
    assert.equal(json.status, 404);
    assert.deepEqual(json.json, { error: 'not_found', message: 'There is no such page in the documentation.' });
  });

  test("a mistyped web admin URL is an HTML page with the web pages' headers; an embed's stays frameable", async () => {
    for (const urlPath of ['/app/nope', '/app/hubs/hub_web/settings/apii', '/app/hubs/hub_web/opt-ins/x/y']) {
      const r = await get(urlPath, { accept: CHROME_ACCEPT });
      assert.equal(r.status, 404, urlPath);
      assertPageHeaders(r, urlPath);
      assert.match(r.text, /<h1>Page not found<\/h1>/, urlPath);
      assert.match(r.text, /href="\/app"/, urlPath);
    }
    // Even for curl: the web admin's addresses answer in pages.
    assertPageHeaders(await get('/app/nope'), 'curl on /app/nope');
    const wrongMethod = await httpRequest(`${t.baseUrl}/app/sign-out`, { method: 'GET' });
    assert.equal(wrongMethod.status, 405);
    assert.equal(wrongMethod.headers.allow, 'POST');
    assertPageHeaders(wrongMethod, 'GET /app/sign-out');
    const embed = await get('/embed/nope');
    assert.equal(embed.status, 404);
    assert.equal(embed.headers['content-type'], 'text/html; charset=utf-8');
    assert.match(String(embed.headers['content-security-policy']), /frame-ancestors \*/);
    assert.equal(embed.headers['x-frame-options'], undefined);
    assert.match(embed.text, /No such view/);
  });

  test('a URL Fastify refuses before routing is a page under /app and /embed, JSON elsewhere', async () => {
    for (const urlPath of ['/app/%zz', `/app/hubs/${'a'.repeat(200)}`]) {
      const r = await get(urlPath);
      assert.equal(r.status, 400, urlPath);
      assertPageHeaders(r, urlPath);
      assert.match(r.text, /<h1>Bad request<\/h1>/, urlPath);
    }
    const embed = await get('/embed/%zz');
    assert.equal(embed.status, 400);
    assert.match(String(embed.headers['content-security-policy']), /frame-ancestors \*/);
    assert.match(embed.text, /data-embed-error>The URL is not valid/);
    const api = await get('/posts/%zz');
    assert.equal(api.status, 400);
    assert.equal(api.json.error, 'invalid_request');
  });

  test("a server error under /app is a page with the web headers and the request id, nothing of the error; an embed's stays frameable", async () => {
    // A clock that fails: whatever a page does after reading the session cookie fails with it.
    const failing: Clock = {
      now: () => {
        throw new Error('clock exploded at /secret/path.ts:12');
      },
    } as unknown as Clock;
    const app = Fastify({ logger: false, genReqId: () => 'req-123' });
    await app.register(webPlugin, {
      config: t.config,
      db: t.db,
      clock: failing,
      limiter: new MemoryRateLimiter(),
      caches: createReportCaches(),
    });
    try {
      const r = await app.inject({ url: `/app/hubs/${HUB}`, headers: { cookie: `hubops_app=${'a'.repeat(43)}` } });
      assert.equal(r.statusCode, 500, r.body.slice(0, 200));
      assertPageHeaders({ status: r.statusCode, headers: r.headers as HttpResponse['headers'], text: r.body, json: undefined }, '500 page');
      assert.match(r.body, /Something went wrong on our side \(request req-123\)/);
      assert.doesNotMatch(r.body, /exploded|\/secret\/path/);
      // On an embed URL the page is an embed's, so the embedding site's frame shows it.
      const embed = await app.inject({ url: '/embed/spend?token=x' });
      assert.equal(embed.statusCode, 500);
      assert.match(String(embed.headers['content-security-policy']), /frame-ancestors \*/);
      assert.equal(embed.headers['x-frame-options'], undefined);
      assert.match(embed.body, /Something went wrong on our side \(request req-123\)/);
      assert.doesNotMatch(embed.body, /exploded|\/secret\/path/);
    } finally {
      await app.close();
    }
  });

  test("everywhere else a 404 or 405 keeps the APIs' JSON body", async () => {
    for (const urlPath of ['/nope', '/v1/hub/nope', '/apps', '/application', '/embedded', '/oauth/nope'])
      assertJson404(await get(urlPath, { accept: CHROME_ACCEPT }), 'GET', urlPath);
    const r = await httpRequest(`${t.baseUrl}/openapi.json`, { method: 'DELETE' });
    assert.equal(r.status, 405);
    assert.equal(r.json.error, 'method_not_allowed');
  });

  test('favicon: an ICO and an SVG, cached for a long time', async () => {
    const ico = await new Promise<Buffer>((resolve, reject) => {
      import('node:http').then(
        ({ get: httpGet }) =>
          httpGet(`${t.baseUrl}/favicon.ico`, (res) => {
            assert.equal(res.statusCode, 200);
            assert.equal(res.headers['content-type'], 'image/x-icon');
            assert.ok(
              Number(/max-age=(\d+)/.exec(String(res.headers['cache-control']))?.[1]) >= 7 * 86_400,
              String(res.headers['cache-control']),
            );
            const chunks: Buffer[] = [];
            res
              .on('data', (c: Buffer) => chunks.push(c))
              .on('end', () => resolve(Buffer.concat(chunks)))
              .on('error', reject);
          }).on('error', reject),
        reject,
      );
    });
    // ICO header: reserved 0, type 1 (icon), one image of 32×32 whose data is a PNG.
    assert.deepEqual([ico.readUInt16LE(0), ico.readUInt16LE(2), ico.readUInt16LE(4), ico[6], ico[7]], [0, 1, 1, 32, 32]);
    const offset = ico.readUInt32LE(18);
    assert.equal(ico.readUInt32LE(14), ico.length - offset);
    assert.deepEqual([...ico.subarray(offset, offset + 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    const svg = await get('/favicon.svg');
    assert.equal(svg.status, 200);
    assert.equal(svg.headers['content-type'], 'image/svg+xml');
    assert.match(String(svg.headers['cache-control']), /public, max-age=\d{6,}/);
    assert.match(svg.text, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    // The sign-in page names the icon too.
    assertPageHeaders(await get('/app/sign-in'), 'sign-in');
  });
});

describe('front door under a BASE_URL path', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp({ listen: true, basePath: '/api' });
  });
  after(async () => {
    await t?.close();
  });

  test('it lives at {base_url}/ and links under it', async () => {
    const r = await httpRequest(`${t.baseUrl}/`);
    assert.equal(r.status, 200);
    assert.equal(r.json.webAdmin, `${t.baseUrl}/app`);
    assert.equal(r.json.docs, `${t.baseUrl}/docs`);
    const docs = await httpRequest(r.json.docs);
    assert.equal(docs.status, 200);
    for (const page of docs.json.pages) assert.equal((await httpRequest(page.url)).status, 200, page.url);
    const html = await httpRequest(`${t.baseUrl}/docs`, { headers: { accept: CHROME_ACCEPT } });
    assert.ok(html.text.includes('href="/api/docs/'), 'index links carry the base path');
    const miss = await httpRequest(`${t.baseUrl}/app/nope`);
    assert.equal(miss.status, 404);
    assert.equal(miss.headers['content-type'], 'text/html; charset=utf-8');
    assert.match(miss.text, /href="\/api\/app"/);
  });
});
