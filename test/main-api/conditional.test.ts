import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createUser } from '../../src/domain/tenancy/tenancy.service.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { channel } from '../support/content-world.ts';
import * as fx from '../support/world.ts';
import { api, authorize, exchangeCode, REDIRECT, registerClient } from '../support/oauth-flow.ts';

// Conditional reads on the main API, over HTTP with real tokens: every read carries a strong
// ETag (a hash of its body), If-None-Match answers 304 with no body, and a 304 is given back to
// the plan's limit. The OpenAPI documents carry theirs too.

let live: TestApp;
let pat: string;
let quinn: string;

before(async () => {
  live = await startApp({ listen: true });
  const db = live.db;
  await fx.account(db, 'acc_1');
  await fx.hub(db, 'h1', 'acc_1');
  await fx.workspace(db, 'h1', 'w1');
  await fx.workspace(db, 'h1', 'w2');
  await channel(db, 'h1', 'w1', 'ch_fb', 'facebook');
  await channel(db, 'h1', 'w2', 'ch_fb2', 'facebook');
  await createUser(db, {
    email: 'pat@acme.test',
    password: 'pat password 12',
    firstname: 'Pat',
    lastname: 'Poe',
    hubId: 'h1',
    role: 'member',
    workspaceId: 'w1',
  });
  await createUser(db, {
    email: 'quinn@acme.test',
    password: 'quinn password 1',
    firstname: 'Quinn',
    lastname: 'Q',
    hubId: 'h1',
    role: 'member',
    workspaceId: 'w2',
  });
  const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
  pat = (
    await exchangeCode(
      live,
      client,
      await authorize(live, client, { email: 'pat@acme.test', password: 'pat password 12', redirectUri: REDIRECT }),
      REDIRECT,
    )
  ).access_token;
  quinn = (
    await exchangeCode(
      live,
      client,
      await authorize(live, client, { email: 'quinn@acme.test', password: 'quinn password 1', redirectUri: REDIRECT }),
      REDIRECT,
    )
  ).access_token;
});
after(async () => {
  await live.close();
});

/** A strong tag; a compressed body's names its coding (fetch asks for compression). */
const STRONG_TAG = /^"[A-Za-z0-9_-]{22}(-(br|gzip|zstd))?"$/;
const remaining = (headers: Headers) => Number(headers.get('ratelimit')!.match(/r=(\d+)/)![1]);

test('If-Match on a read: the current tag gets the answer; another is 412 precondition_failed, counted against the plan', async () => {
  const first = await api(live, '/workspaces', pat);
  const etag = first.headers.get('etag')!;
  assert.equal((await api(live, '/workspaces', pat, { headers: { 'if-match': etag } })).status, 200);
  const refused = await api(live, '/workspaces', pat, { headers: { 'if-match': '"not-this-one"' } });
  assert.equal(refused.status, 412);
  assert.equal(refused.body.error, 'precondition_failed');
  assert.equal(remaining(refused.headers), remaining(first.headers) - 2, 'counted, like the full answer before it');
});

test('a read carries a strong ETag; sent back it gets 304 with no body, given back to the limit; a change gets 200', async () => {
  const first = await api(live, '/posts', pat);
  assert.equal(first.status, 200);
  const etag = first.headers.get('etag')!;
  assert.match(etag, STRONG_TAG, 'strong');
  assert.equal(first.headers.get('cache-control'), 'private, no-cache, must-revalidate');
  assert.match(first.headers.get('vary')!, /Authorization/i);
  const left = remaining(first.headers);

  for (let i = 0; i < 5; i++) {
    const again = await api(live, '/posts', pat, { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);
    assert.equal(again.body, '', 'no body');
    assert.equal(again.headers.get('etag'), etag);
    assert.equal(again.headers.get('cache-control'), 'private, no-cache, must-revalidate');
    assert.equal(remaining(again.headers), left, 'a 304 is not counted against the plan');
  }
  assert.equal((await api(live, '/posts', pat, { headers: { 'if-none-match': `W/${etag}` } })).status, 304, 'weak comparison');
  assert.equal((await api(live, '/posts', pat, { headers: { 'if-none-match': '"not-this-one"' } })).status, 200);
  for (const junk of ['abc', '"open', 'W/', `"${'x'.repeat(5000)}"x`]) {
    const response = await api(live, '/posts', pat, { headers: { 'if-none-match': junk } });
    assert.equal(response.status, 200, `malformed If-None-Match ${junk.slice(0, 20)} is ignored`);
  }

  const created = await api(live, '/posts', pat, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text: 'New opening hours', channelIds: ['ch_fb'], status: 'draft' }),
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.equal(created.headers.get('etag'), null, 'a creation is not a read');
  const changed = await api(live, '/posts', pat, { headers: { 'if-none-match': etag } });
  assert.equal(changed.status, 200, 'the list changed');
  assert.notEqual(changed.headers.get('etag'), etag);
});

test("another caller's tag never matches a different body; the same body has the same tag", async () => {
  const own = await api(live, '/whoami', pat);
  const other = await api(live, '/whoami', quinn, { headers: { 'if-none-match': own.headers.get('etag')! } });
  assert.equal(other.status, 200);
  assert.notEqual(other.headers.get('etag'), own.headers.get('etag'));
  assert.equal((await api(live, '/whoami', pat)).headers.get('etag'), own.headers.get('etag'), 'stable for the same state');
});

test('the OpenAPI documents and the Hub API index carry ETags and answer 304; public, revalidated', async () => {
  for (const path of ['/openapi.json', '/v1/hub/openapi.json', '/v1/hub']) {
    const response = await fetch(`${live.baseUrl}${path}`);
    assert.equal(response.status, 200, path);
    await response.arrayBuffer();
    const etag = response.headers.get('etag')!;
    assert.match(etag, STRONG_TAG, path);
    assert.equal(response.headers.get('cache-control'), 'public, no-cache', path);
    const again = await fetch(`${live.baseUrl}${path}`, { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304, path);
    assert.equal(await again.text(), '');
    assert.equal(again.headers.get('etag'), etag);
  }
});
