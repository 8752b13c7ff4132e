import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createUser } from '../../src/domain/tenancy/tenancy.service.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { channel } from '../support/content-world.ts';
import * as fx from '../support/world.ts';
import { png } from '../support/media-files.ts';
import { api, authorize, exchangeCode, REDIRECT, registerClient } from '../support/oauth-flow.ts';

// The main API's content endpoints through the whole stack: a real OAuth token, HTTP on a real
// port, multipart upload, idempotent creation, and the background publisher of the app itself.

let live: TestApp;
let token: string;
let otherToken: string;

before(async () => {
  live = await startApp({ listen: true, publisher: true });
  const db = live.db;
  await fx.account(db, 'acc_1');
  await fx.hub(db, 'h1', 'acc_1');
  await fx.hub(db, 'h2', 'acc_1');
  await fx.workspace(db, 'h1', 'w1');
  await fx.workspace(db, 'h2', 'v1');
  await channel(db, 'h1', 'w1', 'ch_fb', 'facebook');
  await channel(db, 'h1', 'w1', 'ch_x', 'x');
  await channel(db, 'h2', 'v1', 'ch_other', 'facebook');
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
    hubId: 'h2',
    role: 'member',
    workspaceId: 'v1',
  });
  const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
  for (const [email, password, set] of [
    ['pat@acme.test', 'pat password 12', (t: string) => (token = t)],
    ['quinn@acme.test', 'quinn password 1', (t: string) => (otherToken = t)],
  ] as const) {
    const result = await authorize(live, client, { email, password, redirectUri: REDIRECT });
    set((await exchangeCode(live, client, result, REDIRECT)).access_token);
  }
});
after(async () => {
  await live.close();
});

test('upload an image (multipart), post it idempotently, and the app publishes it', async () => {
  const form = new FormData();
  form.append('file', new Blob([png(640, 480)], { type: 'application/octet-stream' }), 'photo.bin');
  const uploaded = await api(live, '/media', token, { method: 'POST', body: form });
  assert.equal(uploaded.status, 201, JSON.stringify(uploaded.body));
  assert.equal(uploaded.body.contentType, 'image/png', 'the type comes from the bytes');
  assert.deepEqual([uploaded.body.width, uploaded.body.height], [640, 480]);
  const mediaId = uploaded.body._id;
  assert.equal((await api(live, `/media/${mediaId}`, token)).body._id, mediaId);
  assert.equal((await api(live, `/media/${mediaId}`, otherToken)).status, 404, 'another hub cannot see it');

  const body = JSON.stringify({
    text: 'Pumpkin spice is back!',
    channelIds: ['ch_fb', 'ch_x'],
    mediaIds: [mediaId],
    status: 'scheduled',
    publishNow: true,
  });
  const headers = { 'content-type': 'application/json', 'idempotency-key': 'launch-post-1' };
  const created = await api(live, '/posts', token, { method: 'POST', body, headers });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const replay = await api(live, '/posts', token, { method: 'POST', body, headers });
  assert.equal(replay.status, 201);
  assert.equal(replay.body._id, created.body._id, 'a retry returns the first post');
  assert.equal(replay.headers.get('idempotent-replayed'), 'true');
  const reused = await api(live, '/posts', token, {
    method: 'POST',
    body: JSON.stringify({ text: 'different', status: 'draft' }),
    headers,
  });
  assert.equal(reused.status, 422);
  assert.equal(reused.body.error, 'idempotency_key_reused');
  const list = await api(live, '/posts', token);
  assert.deepEqual(
    list.body.data.map((p: { _id: string }) => p._id),
    [created.body._id],
    'one post, not two',
  );

  // The app's own publisher (1 s interval) picks the due post up.
  let post = created.body;
  for (let i = 0; i < 50 && post.status !== 'published'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    post = (await api(live, `/posts/${created.body._id}`, token)).body;
  }
  assert.equal(post.status, 'published');
  assert.ok(post.publishedAt);
});

test('validation: platform text limits, foreign channels, bad input — 400 naming the field, nothing written', async () => {
  const tooLongForX = await api(live, '/posts', token, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text: 'x'.repeat(281), channelIds: ['ch_x'], status: 'draft' }),
  });
  assert.equal(tooLongForX.status, 400);
  assert.ok(tooLongForX.body.issues.some((i: { field: string }) => i.field === 'text'));
  const foreign = await api(live, '/posts', token, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text: 'hi', channelIds: ['ch_other'], status: 'scheduled', publishNow: true }),
  });
  assert.equal(foreign.status, 400);
  const malformed = await api(live, '/posts', token, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"text": ',
  });
  assert.equal(malformed.status, 400);
  assert.equal(malformed.body.error, 'invalid_request');
  const html = new FormData();
  html.append('file', new Blob(['<html><script>alert(1)</script></html>'], { type: 'image/png' }), 'x.png');
  const refused = await api(live, '/media', token, { method: 'POST', body: html });
  assert.equal(refused.status, 415);
  const truncated = await api(live, '/media', token, {
    method: 'POST',
    headers: { 'content-type': 'multipart/form-data; boundary=XYZ' },
    body: '--XYZ\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n\x89PNG\r\n',
  });
  assert.equal(truncated.status, 400, JSON.stringify(truncated.body));
  assert.equal(truncated.body.error, 'invalid_request');
  const count = await live.db.kysely
    .selectFrom('posts')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  assert.equal(Number(count.n), 1, 'only the post of the first test exists');
});

test('analytics and review endpoints answer for the caller’s workspace; lists page', async () => {
  for (const path of [
    '/analytics/organic',
    '/analytics/paid',
    '/analytics/google-reviews',
    '/channels',
    '/media',
    '/posts?status=published',
  ]) {
    const response = await api(live, path, token);
    assert.equal(response.status, 200, `${path}: ${JSON.stringify(response.body)}`);
  }
  const organic = await api(live, '/analytics/organic?from=2026-01-01&to=2026-01-31', token);
  assert.ok(JSON.stringify(organic.body).includes('w1'));
  assert.ok(!JSON.stringify(organic.body).includes('v1'), 'no other hub');
  const bad = await api(live, '/analytics/paid?from=2026-02-30', token);
  assert.equal(bad.status, 400);
  const doc = await api(live, '/openapi.json', undefined);
  for (const path of [
    '/posts',
    '/posts/{id}',
    '/media',
    '/media/{id}',
    '/channels',
    '/analytics/organic',
    '/analytics/paid',
    '/analytics/google-reviews',
  ])
    assert.ok(doc.body.paths[path], path);
  assert.ok(doc.body.paths['/media'].post, 'the multipart upload is documented');
});
