import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startApp, type TestApp } from '../support/app.ts';

// Issue 10, item 10: what Fastify itself refuses (a bad URL, an overlong id, an unreadable body)
// answers in our error body and words, never its own {statusCode, code: "FST_…"}; and a path that
// exists under other methods answers 405 with Allow, not 404.

let t: TestApp;
before(async () => {
  t = await startApp({ now: '2026-11-21T12:00:00.000Z' });
});
after(async () => {
  await t?.close();
});

async function send(method: string, url: string, options: { body?: string; type?: string } = {}) {
  const response = await t.app.fastify.inject({
    method: method as 'GET',
    url,
    headers: options.type ? { 'content-type': options.type } : {},
    ...(options.body !== undefined ? { payload: options.body } : {}),
  });
  return { status: response.statusCode, headers: response.headers, text: response.body, body: JSON.parse(response.body) };
}

/** Our error body: only our keys, our code, and nothing of Fastify's or the parser's wording. */
function assertOurs(response: { status: number; text: string; body: any }, status: number, error: string, what: string): void {
  assert.equal(response.status, status, `${what}: ${response.text}`);
  assert.equal(response.body.error, error, what);
  assert.equal(typeof response.body.message, 'string', what);
  for (const key of Object.keys(response.body))
    assert.ok(['error', 'message', 'issues', 'requestId'].includes(key), `${what}: unexpected key ${key}`);
  assert.doesNotMatch(response.text, /FST_|statusCode|Unexpected token|at position|Bad Request/, what);
}

test('bad URLs and overlong path segments: 400 in our body', async () => {
  assertOurs(await send('GET', `/posts/${'a'.repeat(101)}`), 400, 'invalid_request', 'id over 100 characters');
  assertOurs(await send('GET', `/v1/hub/playbook-opt-ins/${'a'.repeat(200)}`), 404, 'not_found', 'no such route, however long');
  for (const url of ['/posts/%FF', '/media/%E0%A4%A', '/workspaces/%C0%AF'])
    assertOurs(await send('GET', url), 400, 'invalid_request', url);
});

test('unreadable bodies: our body and wording, with a sensible status', async () => {
  const json = 'application/json';
  assertOurs(await send('POST', '/posts', { body: '{"text":', type: json }), 400, 'invalid_request', 'truncated JSON');
  assertOurs(await send('POST', '/posts', { body: '', type: json }), 400, 'invalid_request', 'empty JSON body');
  assertOurs(await send('POST', '/posts', { body: '{"__proto__":{"admin":true}}', type: json }), 400, 'invalid_request', '__proto__ key');
  for (const type of ['text/plain', 'application/xml', 'multipart/mixed; boundary=x'])
    assertOurs(await send('POST', '/posts', { body: 'text=hi', type }), 415, 'unsupported_media_type', type);
  assertOurs(
    await send('POST', '/posts', { body: JSON.stringify({ text: 'x'.repeat(2 * 1024 * 1024) }), type: json }),
    413,
    'payload_too_large',
    '2 MB body',
  );
  assertOurs(
    await send('POST', '/v1/hub/mcp', { body: '{', type: 'text/html' }),
    415,
    'unsupported_media_type',
    'HTML to the Hub MCP endpoint',
  );
});

test('a path that exists under other methods: 405 with Allow; a path that does not: 404', async () => {
  const cases: [string, string, string][] = [
    ['DELETE', '/posts', 'GET, HEAD, POST'],
    ['PUT', '/posts', 'GET, HEAD, POST'],
    ['PATCH', '/posts/p_1', 'GET, HEAD'],
    ['DELETE', '/media/m_1', 'GET, HEAD'],
    ['POST', '/workspaces', 'GET, HEAD'],
    ['POST', '/analytics/organic', 'GET, HEAD'],
    ['POST', '/openapi.json', 'GET, HEAD'],
    ['DELETE', '/healthz', 'GET, HEAD'],
    ['PUT', '/whoami/', 'GET, HEAD'],
    ['POST', '/v1/hub/openapi.json', 'GET, HEAD'],
  ];
  for (const [method, url, allow] of cases) {
    const response = await send(method, url);
    assertOurs(response, 405, 'method_not_allowed', `${method} ${url}`);
    assert.equal(response.headers.allow, allow, `${method} ${url}`);
  }
  // The Hub API's own 405s (read-only) name HEAD too, which works there as everywhere GET does.
  for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
    const hub = await send(method, '/v1/hub/playbook-opt-ins');
    assert.equal(hub.status, 405);
    assert.equal(hub.headers.allow, 'GET, HEAD', method);
  }
  // Every method an Allow names is answered by something other than 405.
  for (const [, url, allow] of [...cases, ['POST', '/v1/hub/playbook-opt-ins', 'GET, HEAD']]) {
    for (const method of allow!.split(', ')) {
      const answer = await t.app.fastify.inject({ method: method as 'GET', url: url!, headers: { 'content-type': 'application/json' } });
      assert.notEqual(answer.statusCode, 405, `${method} ${url}`);
    }
  }
  for (const [method, url] of [
    ['GET', '/nope'],
    ['DELETE', '/nope/deeper'],
    ['GET', '/v1/hub/nope'],
    ['GET', '/posts/p_1/extra'],
  ]) {
    assertOurs(await send(method!, url!), 404, 'not_found', `${method} ${url}`);
  }
});

test('routes that are not operations (web admin, embeds) hold to the input rule too: refused, never a 500', async () => {
  // The web admin renders the 400 as a page; embeds answer their own 401 refusal page.
  for (const [url, status] of [
    ['/app/hubs/%00', 400],
    ['/app/hubs/h1/opt-ins?status=%00', 400],
    ['/app/sign-in?next=%00', 400],
    ['/embed/spend?token=%00', 401],
    ['/embed/opt-in-summary?token=a%EF%BF%BEb', 401],
  ] as const) {
    const response = await t.app.fastify.inject({ method: 'GET', url });
    assert.equal(response.statusCode, status, url);
  }
  const deep = await t.app.fastify.inject({
    method: 'POST',
    url: '/app/sign-in',
    headers: { 'content-type': 'application/json' },
    payload: `{"a":${'['.repeat(40)}${']'.repeat(40)}}`,
  });
  assert.equal(deep.statusCode, 400, 'deep JSON to a web form');
});
