import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startApp, type TestApp } from '../support/app.ts';

// A wrong method on an OAuth endpoint is 405 with `Allow` and an OAuth-shaped JSON body, never a
// 404 or text/plain; the right methods still reach oidc-provider.

let live: TestApp;
before(async () => {
  live = await startApp({ listen: true });
});
after(async () => {
  await live.close();
});

test('every OAuth path answers the methods it does not take with 405 and Allow', async () => {
  const base = live.baseUrl;
  const cases: [string, string, string][] = [
    ['GET', '/oauth/token', 'POST, OPTIONS'],
    ['PUT', '/oauth/token', 'POST, OPTIONS'],
    ['GET', '/oauth/revoke', 'POST, OPTIONS'],
    ['DELETE', '/oauth/revoke', 'POST, OPTIONS'],
    ['GET', '/oauth/register', 'POST'],
    ['PUT', '/oauth/register/some-client', 'GET, HEAD'],
    ['DELETE', '/oauth/register/some-client', 'GET, HEAD'],
    ['POST', '/oauth/authorize', 'GET, HEAD'],
    ['DELETE', '/oauth/authorize/some-uid', 'GET, HEAD'],
    ['POST', '/oauth/jwks', 'GET, OPTIONS, HEAD'],
    ['POST', '/.well-known/oauth-authorization-server', 'GET, OPTIONS, HEAD'],
    ['DELETE', '/oauth/interaction/some-uid', 'GET, HEAD'],
    ['GET', '/oauth/interaction/some-uid/login', 'POST'],
    ['PATCH', '/oauth/interaction/some-uid/consent', 'POST'],
  ];
  for (const [method, path, allow] of cases) {
    const response = await fetch(`${base}${path}`, { method, redirect: 'manual' });
    assert.equal(response.status, 405, `${method} ${path}`);
    assert.equal(response.headers.get('allow'), allow, `${method} ${path}`);
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/, `${method} ${path}`);
    const body = (await response.json()) as Record<string, unknown>;
    assert.deepEqual(Object.keys(body).sort(), ['error', 'error_description'], `${method} ${path}`);
    assert.equal(body.error, 'method_not_allowed');
  }
  // The methods they do take still reach the provider.
  assert.equal((await fetch(`${base}/oauth/jwks`)).status, 200);
  assert.equal((await fetch(`${base}/.well-known/oauth-authorization-server`, { method: 'HEAD' })).status, 200);
  const token = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=refresh_token',
  });
  assert.equal(token.status, 400);
  assert.equal(((await token.json()) as { error: string }).error, 'invalid_request');
});
