// Contract tests of the Google Business Profile wire client and connector against the loopback
// sandbox (no network): locations across accounts, local posts LIVE / PROCESSING / REJECTED (a
// 200 that is a refusal), a create that went out without an answer or with a temporary failure
// (unconfirmed, then found by the lookup, never made twice), posts refused before sending, review pages, throttling waited
// out, an unapproved project, an expired refresh token, and hostile answers.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, test } from 'node:test';
import { PlatformError, PlatformThrottled } from '../../src/integrations/ad-platform.ts';
import { createGoogleBusinessClient, GOOGLE_BUSINESS_SCOPES } from '../../src/integrations/google-business/client.ts';
import { createGoogleBusinessConnector } from '../../src/integrations/google-business/connector.ts';
import { startGoogleBusinessSandbox, type GoogleBusinessSandbox } from '../../src/integrations/google-business/sandbox.ts';
import { DeliveryUnconfirmed, type OutgoingChannel, type OutgoingPost } from '../../src/domain/posts/connector.ts';

const START = Date.parse('2026-11-27T18:30:00Z');
let nowMs = START;
const sleeps: number[] = [];
const fakeSleep = async (ms: number) => {
  sleeps.push(ms);
  nowMs += ms;
};
let sandbox: GoogleBusinessSandbox;
let refreshToken: string;
const LOCATION = 'accounts/101/locations/2001';

const clientFor = (o: { timeoutMs?: number } = {}) =>
  createGoogleBusinessClient({
    businessUrl: sandbox.url,
    oauthUrl: sandbox.url,
    clientId: sandbox.clientId,
    clientSecret: sandbox.clientSecret,
    sleep: fakeSleep,
    now: () => new Date(nowMs),
    timeoutMs: o.timeoutMs ?? 2000,
    maxBodyBytes: 1024 * 1024,
  });

const post = (text: string, media: OutgoingPost['media'] = []): OutgoingPost => ({
  id: 'post_1',
  hubId: 'hub_1',
  workspaceId: 'ws_1',
  text,
  media,
});
const channel = (secret = refreshToken): OutgoingChannel => ({
  id: 'ch_1',
  platform: 'google_business',
  name: 'Downtown',
  handle: null,
  externalId: LOCATION,
  secret,
});
const photo = (url: string | null = 'https://hubops.example/media-public/m1?sig=x'): OutgoingPost['media'][number] => ({
  id: 'med_1',
  kind: 'image',
  contentType: 'image/jpeg',
  width: 1200,
  height: 800,
  storageKey: 'k',
  url,
});

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail('expected a rejection');
}

before(async () => {
  sandbox = await startGoogleBusinessSandbox({ now: () => new Date(nowMs) });
});
after(() => sandbox.close());
beforeEach(() => {
  sandbox.scenario.reset();
  refreshToken = sandbox.issueRefreshToken();
  sleeps.length = 0;
});

test('the consent URL asks for business.manage, offline, with consent every time', () => {
  const url = new URL(
    clientFor().authorizeUrl({ accountsUrl: sandbox.url, clientId: sandbox.clientId, redirectUri: 'http://127.0.0.1/cb', state: 's' }),
  );
  assert.equal(url.pathname, '/o/oauth2/v2/auth');
  assert.equal(url.searchParams.get('scope'), GOOGLE_BUSINESS_SCOPES.join(' '));
  assert.equal(url.searchParams.get('access_type'), 'offline');
  assert.equal(url.searchParams.get('prompt'), 'consent');
});

test('locations of every account, named accounts/…/locations/… for the v4 calls', async () => {
  const locations = await clientFor().listLocations(refreshToken);
  assert.deepEqual(
    locations.map((l) => [l.name, l.title]),
    sandbox.locations().map((l) => [l.name, l.title]),
  );
  assert.ok(locations.every((l) => l.address?.includes('Main Street')));
});

test('a post goes out once as a STANDARD local post; PROCESSING is taken, REJECTED in a 200 is a refusal', async () => {
  const connector = createGoogleBusinessConnector(clientFor());
  const live = await connector.publish(post('Fresh pastries from 7am'), channel());
  assert.match(live.externalId, /^accounts\/101\/locations\/2001\/localPosts\/\d+$/);
  assert.match(live.url ?? '', /^https:\/\/local\.google\.com\//);
  sandbox.scenario.postState(LOCATION, 'PROCESSING');
  const processing = await connector.publish(post('Live music on Friday', [photo()]), channel());
  assert.notEqual(processing.externalId, live.externalId);
  assert.equal(sandbox.posts(LOCATION).at(-1)!.photos, 1);

  sandbox.scenario.postState(LOCATION, 'REJECTED');
  const error = await rejection(connector.publish(post('Buy followers here'), channel()));
  assert.ok(error instanceof PlatformError);
  assert.equal(error.kind, 'rejected');
  assert.equal(error.platformMessage, 'This post was rejected due to content policy violation');
  assert.equal(sandbox.posts(LOCATION).length, 3);
});

test('posts Business Profile refuses are refused before anything is sent', async () => {
  const connector = createGoogleBusinessConnector(clientFor());
  const before = sandbox.requests.length;
  const posted = sandbox.posts(LOCATION).length;
  const video = { ...photo(), kind: 'video' as const, contentType: 'video/mp4' as const };
  for (const [p, words] of [
    [post('A clip', [video]), /photos, not video/],
    [post('x'.repeat(1501)), /at most 1500 characters \(this one has 1501\)/],
    [post('   '), /needs text or a photo/],
    [
      post(
        'Eleven',
        Array.from({ length: 11 }, () => photo()),
      ),
      /at most 10 photos/,
    ],
  ] as const) {
    const error = await rejection(connector.publish(p, channel()));
    assert.ok(error instanceof PlatformError && error.kind === 'invalid_request', String(error));
    assert.match(error.message, words);
  }
  assert.equal(sandbox.requests.length, before, 'no request was made');
  assert.equal(sandbox.posts(LOCATION).length, posted);
  // The limit counts characters, not UTF-16 units: 1,500 of them (emoji included) go out.
  const longest = `${'☕'.repeat(500)}${'🍩'.repeat(500)}${'x'.repeat(500)}`;
  await connector.publish(post(longest), channel());
  assert.equal(sandbox.posts(LOCATION).at(-1)!.summary, longest);
});

test('a create that went out without an answer is unconfirmed; the lookup finds it, so it is not made twice', async () => {
  const connector = createGoogleBusinessConnector(clientFor({ timeoutMs: 300 }));
  const since = new Date(nowMs - 1000);
  const posted = sandbox.posts(LOCATION).length;
  assert.equal(await connector.find(post('Unconfirmed special'), channel(), since), null);
  sandbox.scenario.hangAfterPost(LOCATION);
  const error = await rejection(connector.publish(post('Unconfirmed special'), channel()));
  assert.ok(error instanceof DeliveryUnconfirmed, String(error));
  const found = await connector.find(post('Unconfirmed special'), channel(), since);
  assert.ok(found);
  assert.equal(found.externalId, sandbox.posts(LOCATION).at(-1)!.name);
  assert.equal(sandbox.posts(LOCATION).length, posted + 1);
  // A post from before the attempt, or with other text, is not this one.
  assert.equal(await connector.find(post('Unconfirmed special'), channel(), new Date(nowMs + 60_000)), null);
  assert.equal(await connector.find(post('Another text'), channel(), since), null);
});

test('a create answered 200 with a body cut off (the connection drops mid-body, or the JSON stops half-way) is unconfirmed, and the lookup finds the post', async () => {
  const connector = createGoogleBusinessConnector(clientFor());
  for (const kind of ['dropped', 'truncated'] as const) {
    const text = `Half an answer (${kind})`;
    const since = new Date(nowMs - 1000);
    const posted = sandbox.posts(LOCATION).length;
    sandbox.scenario.cutAnswerAfterPost(LOCATION, kind);
    const error = await rejection(connector.publish(post(text), channel()));
    // Not a failure: Google made the post, and a failed delivery would be scheduled again by a person.
    assert.ok(error instanceof DeliveryUnconfirmed, `${kind}: ${String(error)}`);
    assert.match(error.message, /\(HTTP 200\): the post was made/, kind);
    assert.equal(sandbox.posts(LOCATION).length, posted + 1, kind);
    const found = await connector.find(post(text), channel(), since);
    assert.equal(found?.externalId, sandbox.posts(LOCATION).at(-1)!.name, kind);
  }
  // The same cut-off answer to a read stays a bad answer: nothing was made.
  sandbox.scenario.malformed(LOCATION, 'slow');
  const read = await rejection(clientFor({ timeoutMs: 300 }).reviewPage(refreshToken, LOCATION, null));
  assert.ok(read instanceof PlatformError && read.kind === 'bad_answer', String(read));
});

test('a temporary failure answered to the create may hide a made post: unconfirmed, not a retryable error; a refused connection is unreachable', async () => {
  const connector = createGoogleBusinessConnector(clientFor());
  const posted = sandbox.posts(LOCATION).length;
  // A 502 page from a front end: what the API did is unknown, so it is looked up, never sent blindly.
  sandbox.scenario.malformed(LOCATION, 'html');
  const gateway = await rejection(connector.publish(post('Gateway special'), channel()));
  assert.ok(gateway instanceof DeliveryUnconfirmed, String(gateway));
  assert.match(gateway.message, /HTTP 502.*the post may have been made/);
  assert.equal(sandbox.posts(LOCATION).length, posted);
  // The same answer to a read stays a platform error (nothing is made by a read).
  sandbox.scenario.malformed(LOCATION, 'html');
  const read = await rejection(clientFor().reviewPage(refreshToken, LOCATION, null));
  assert.ok(read instanceof PlatformError && read.kind === 'platform_error', String(read));
  // Nothing listens at the API's address: the create never left, unreachable (the publisher sends it again later).
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  const dead = createGoogleBusinessConnector(
    createGoogleBusinessClient({
      businessUrl: `http://127.0.0.1:${port}`,
      oauthUrl: sandbox.url,
      clientId: sandbox.clientId,
      clientSecret: sandbox.clientSecret,
      sleep: fakeSleep,
      now: () => new Date(nowMs),
      timeoutMs: 1000,
    }),
  );
  const refused = await rejection(dead.publish(post('Refused special'), channel()));
  assert.ok(
    refused instanceof PlatformError && refused.kind === 'unreachable' && !(refused instanceof DeliveryUnconfirmed),
    String(refused),
  );
  assert.equal(sandbox.posts(LOCATION).length, posted);
});

test('a token refresh sent without an answer is unreachable, not unconfirmed: no post was sent, so it is tried again, never looked up', async () => {
  // A token endpoint that reads the request and never answers.
  const silent = http.createServer((request) => request.resume());
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  try {
    const posted = sandbox.posts(LOCATION).length;
    const connector = createGoogleBusinessConnector(
      createGoogleBusinessClient({
        businessUrl: sandbox.url,
        oauthUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`,
        clientId: sandbox.clientId,
        clientSecret: sandbox.clientSecret,
        sleep: fakeSleep,
        now: () => new Date(nowMs),
        timeoutMs: 300,
      }),
    );
    const failed = await rejection(connector.publish(post('Token silent'), channel()));
    assert.ok(failed instanceof PlatformError && failed.kind === 'unreachable' && !(failed instanceof DeliveryUnconfirmed), String(failed));
    assert.equal(sandbox.posts(LOCATION).length, posted);
  } finally {
    silent.closeAllConnections();
    silent.close();
  }
});

test('posts to many locations at once on a login with no access token in memory share one token refresh', async () => {
  const connector = createGoogleBusinessConnector(clientFor());
  const asked = sandbox.requests.length;
  const given = new AbortController();
  given.abort(new Error('this one gave up'));
  const outcomes = await Promise.allSettled([
    connector.publish(post('Too late for the refresh'), channel(), given.signal),
    ...Array.from({ length: 8 }, (_, i) => connector.publish(post(`Batch ${i}`), channel())),
  ]);
  assert.deepEqual(
    outcomes.map((o) => o.status),
    ['rejected', ...Array(8).fill('fulfilled')],
    'one caller giving up fails only its own call',
  );
  const calls = sandbox.requests.slice(asked).map((r) => `${r.method} ${r.path}`);
  assert.equal(calls.filter((c) => c === 'POST /token').length, 1, calls.join('\n'));
  assert.equal(calls.filter((c) => c.endsWith('/localPosts')).length, 8);
});

test('a publication given up (its signal aborted) sends nothing', async () => {
  const connector = createGoogleBusinessConnector(clientFor());
  const given = new AbortController();
  given.abort(new Error('the publisher gave the call up'));
  const posted = sandbox.posts(LOCATION).length;
  const asked = sandbox.requests.length;
  assert.match(String(await rejection(connector.publish(post('Too late'), channel(), given.signal))), /gave the call up/);
  assert.equal(sandbox.posts(LOCATION).length, posted);
  assert.equal(sandbox.requests.length, asked, 'not even the token was asked for');
});

test('reviews come in pages of at most 50, newest update first, with Google counts', async () => {
  const client = clientFor();
  const seen: string[] = [];
  let pageToken: string | null = null;
  let pages = 0;
  do {
    const page = await client.reviewPage(refreshToken, LOCATION, pageToken);
    assert.ok(page.reviews.length <= 50);
    assert.equal(page.totalReviewCount, 40);
    seen.push(...page.reviews.map((r) => r.updateTime));
    pageToken = page.nextPageToken;
    pages++;
  } while (pageToken);
  assert.equal(seen.length, 40);
  assert.deepEqual(seen, [...seen].sort().reverse());
  assert.equal(pages, 1);
  const expected = sandbox.reviews(LOCATION);
  const first = await client.reviewPage(refreshToken, LOCATION, null);
  assert.deepEqual(
    first.reviews.map((r) => [r.reviewId, r.starRating, r.repliedAt !== null]),
    expected.map((r) => [r.reviewId, r.starRating, r.replied]),
  );
});

test('a throttle is waited out for its retryDelay; a long one is handed back as PlatformThrottled', async () => {
  sandbox.scenario.throttle(5_000);
  const page = await clientFor().reviewPage(refreshToken, LOCATION, null);
  assert.equal(page.totalReviewCount, 40);
  assert.deepEqual(sleeps, [5_000]);
  sandbox.scenario.throttle(48 * 3_600_000);
  const error = await rejection(clientFor().reviewPage(refreshToken, LOCATION, null));
  assert.ok(error instanceof PlatformThrottled, String(error));
});

test('an unapproved project (quota 0) is "API access not yet approved", not a wait', async () => {
  sandbox.scenario.notApproved(true);
  const error = await rejection(clientFor().listLocations(refreshToken));
  assert.ok(error instanceof PlatformError);
  assert.equal(error.kind, 'not_approved');
  assert.match(error.message, /API access not yet approved/);
  assert.match(error.platformMessage ?? '', /Quota exceeded/);
  assert.deepEqual(sleeps, []);
});

test('an expired refresh token is needs_reconnect in Google words, and never shown', async () => {
  sandbox.scenario.expireRefreshToken(refreshToken);
  const error = await rejection(clientFor().reviewPage(refreshToken, LOCATION, null));
  assert.ok(error instanceof PlatformError);
  assert.equal(error.kind, 'needs_reconnect');
  assert.equal(error.platformMessage, 'Token has been expired or revoked.');
  assert.ok(!JSON.stringify({ ...error, message: error.message }).includes(refreshToken));
  const missing = await rejection(createGoogleBusinessConnector(clientFor()).publish(post('x'), channel('')));
  assert.ok(missing instanceof PlatformError && missing.kind === 'needs_reconnect');
});

test('hostile answers fail with a kind, never a crash', async () => {
  const client = clientFor({ timeoutMs: 500 });
  for (const [kind, expected] of [
    ['html', 'platform_error'],
    ['wrong_types', 'bad_answer'],
    ['redirect', 'bad_answer'],
    ['huge', 'bad_answer'],
    ['slow', 'bad_answer'],
  ] as const) {
    sandbox.scenario.malformed(LOCATION, kind);
    const error = await rejection(client.reviewPage(refreshToken, LOCATION, null));
    assert.ok(error instanceof PlatformError, `${kind}: ${String(error)}`);
    assert.equal(error.kind, expected, kind);
  }
  sandbox.scenario.malformed('accounts', 'wrong_types');
  const error = await rejection(client.listLocations(refreshToken));
  assert.ok(error instanceof PlatformError && error.kind === 'bad_answer');
});
