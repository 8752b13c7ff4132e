// Contract tests of the Meta Pages / Instagram publishing client and connector against the loopback
// sandbox (no network): Pages with their tokens and paging, Page feed / photo / multi-photo posts,
// Instagram single, carousel and reel containers with IN_PROGRESS / ERROR / EXPIRED, the publishing
// limit, the reconciliation lookup (a post without text matched only when it is the one candidate), insights, throttles waited out, expired tokens, content refused
// before sending, hostile answers, and unconfirmed publications (written, no answer) vs unreachable.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, test } from 'node:test';
import {
  LookupAmbiguous as PublisherAmbiguous,
  DeliveryUnconfirmed as PublisherUnconfirmed,
  type OutgoingChannel,
  type OutgoingPost,
} from '../../src/domain/posts/connector.ts';
import {
  DeliveryUnconfirmed,
  LookupAmbiguous,
  PlatformError,
  PlatformThrottled,
  PublishNotReady,
} from '../../src/integrations/ad-platform.ts';
import { createMetaPagesClient, type MetaMedia, type MetaPagesClient } from '../../src/integrations/meta-pages/client.ts';
import { createMetaPagesConnector } from '../../src/integrations/meta-pages/connector.ts';
import { startMetaPagesSandbox } from '../../src/integrations/meta-pages/sandbox.ts';

const PAGE = '1000000001';
const IG = '17841400000000001';
let nowMs = Date.parse('2026-11-27T15:00:00Z');
const sleeps: number[] = [];
const fakeSleep = async (ms: number) => {
  sleeps.push(ms);
  nowMs += ms;
};
let sandbox: Awaited<ReturnType<typeof startMetaPagesSandbox>>;
let client: MetaPagesClient;
let pageToken: string;
const img = (n: number) => ({ kind: 'image' as const, url: `https://hub.example/media/${n}.jpg?sig=x` });

const expectKind = async (work: Promise<unknown>, kind: string) => {
  await assert.rejects(work, (error: unknown) => {
    assert.ok(error instanceof PlatformError, `a PlatformError, got ${String(error)}`);
    assert.equal(error.kind, kind, error.message);
    return true;
  });
};

before(async () => {
  sandbox = await startMetaPagesSandbox({ now: () => new Date(nowMs) });
  sandbox.organic.addPage({ id: '1000000003', name: 'Third', instagram: { id: '17841400000000003', username: 'third' } });
  client = createMetaPagesClient({ graphUrl: sandbox.url, sleep: fakeSleep, timeoutMs: 1_500 });
  pageToken = sandbox.organic.pageToken(PAGE);
});
after(() => sandbox.close());
beforeEach(() => {
  sandbox.scenario.reset();
  sleeps.length = 0;
});

test('listPages: every Page with its Page token and linked Instagram account, across pages of the answer', async () => {
  const userToken = sandbox.issueToken();
  const small = await startMetaPagesSandbox({ pageSize: 1 });
  try {
    const c = createMetaPagesClient({ graphUrl: small.url });
    const pages = await c.listPages(small.issueToken());
    assert.deepEqual(
      pages.map((p) => [p.id, p.instagram?.id ?? null]),
      [
        ['1000000001', IG],
        ['1000000002', null],
      ],
    );
    assert.equal(pages[0]!.accessToken, small.organic.pageToken('1000000001'));
    assert.ok(small.requests.filter((r) => r.path.endsWith('/me/accounts')).length >= 2, 'paged');
  } finally {
    await small.close();
  }
  const pages = await client.listPages(userToken);
  assert.equal(pages.length, 3);
  sandbox.scenario.expireToken(userToken);
  await expectKind(client.listPages(userToken), 'needs_reconnect');
});

test('Page: a text post, a photo post and a multi-photo post are each one publication, found again by their text', async () => {
  const before = sandbox.organic.publications(PAGE).length;
  const since = new Date(nowMs);
  const text = await client.publishPage(pageToken, PAGE, { text: 'Open late tonight', media: [] });
  assert.match(text.externalId, /^1000000001_\d+$/);
  assert.match(text.url ?? '', /^https:\/\/www\.facebook\.com\//);
  const photo = await client.publishPage(pageToken, PAGE, { text: 'New pastry', media: [img(1)] });
  const multi = await client.publishPage(pageToken, PAGE, { text: 'Three views', media: [img(1), img(2), img(3)] });
  const made = sandbox.organic.publications(PAGE).slice(before);
  assert.deepEqual(
    made.map((p) => [p.id, p.text, p.media.length]),
    [
      [text.externalId, 'Open late tonight', 0],
      [photo.externalId, 'New pastry', 1],
      [multi.externalId, 'Three views', 3],
    ],
  );
  assert.equal((await client.findPagePost(pageToken, PAGE, 'New pastry', since))?.externalId, photo.externalId);
  assert.equal(await client.findPagePost(pageToken, PAGE, 'New pastry!', since), null, 'exact text only');
  assert.equal(await client.findPagePost(pageToken, PAGE, 'New pastry', new Date(nowMs + 3_600_000)), null, 'made before since');
});

test('a post without text is matched only when it is the one post without text since the attempt; two are "cannot tell", never a guess', async () => {
  // A Page and account of their own, an hour on: no other test's posts in the window.
  nowMs += 3_600_000;
  const page = '1000000003';
  const ig = '17841400000000003';
  const token = sandbox.organic.pageToken(page);
  const connector = createMetaPagesConnector({ client });
  const fb = { id: 'ch_fb3', platform: 'facebook', externalId: page, secret: token };
  const insta = { id: 'ch_ig3', platform: 'instagram', externalId: ig, secret: token };
  const imageOnly = { text: '', media: [img(7)] };
  const since = new Date(nowMs);
  assert.equal(await connector.find(imageOnly, fb, since), null, 'no post at all: none');
  await client.publishPage(token, page, { text: 'With words', media: [img(6)] });
  assert.equal(await connector.find(imageOnly, fb, since), null, 'a post with text is not an image-only post');
  const first = await client.publishPage(token, page, { text: '', media: [img(7)] });
  assert.equal((await connector.find(imageOnly, fb, since))?.externalId, first.externalId, 'the only candidate');
  // Another post without text in the window (the admin's own photo, or ours): nothing tells them apart.
  nowMs += 60_000;
  await client.publishPage(token, page, { text: '', media: [img(8)] });
  await assert.rejects(connector.find(imageOnly, fb, since), (error: unknown) => {
    assert.ok(error instanceof LookupAmbiguous, String(error));
    assert.ok(error instanceof PublisherAmbiguous, 'the class the publisher knows');
    assert.match(error.message, /more than one post without text/);
    return true;
  });
  // Text is still matched exactly, newest first, beside them.
  assert.ok(await connector.find({ text: 'With words', media: [img(6)] }, fb, since));
  // A window after both: none.
  assert.equal(await connector.find(imageOnly, fb, new Date(nowMs + 10 * 60_000)), null);

  // Instagram the same: one media without caption is it, two cannot be told apart.
  const igSince = new Date(nowMs);
  const single = await client.publishInstagram(token, ig, { caption: '', media: [img(9)] });
  assert.equal((await connector.find(imageOnly, insta, igSince))?.externalId, single.externalId);
  await client.publishInstagram(token, ig, { caption: '', media: [img(10), img(11)] });
  await assert.rejects(connector.find(imageOnly, insta, igSince), LookupAmbiguous);
});

test('Instagram: an image, a carousel and a reel (polled through IN_PROGRESS) are published once each and found by caption', async () => {
  const since = new Date(nowMs);
  const single = await client.publishInstagram(pageToken, IG, { caption: 'Morning light', media: [img(1)] });
  const carousel = await client.publishInstagram(pageToken, IG, { caption: 'Menu', media: [img(1), img(2)] });
  sleeps.length = 0;
  const reel = await client.publishInstagram(pageToken, IG, {
    caption: 'Behind the counter',
    media: [{ kind: 'video', url: 'https://hub.example/media/v.mp4' }],
  });
  assert.ok(sleeps.length >= 2, 'the reel container was polled while IN_PROGRESS');
  const made = sandbox.organic.publications(IG);
  assert.deepEqual(
    made.map((m) => [m.id, m.text, m.media.length]),
    [
      [single.externalId, 'Morning light', 1],
      [carousel.externalId, 'Menu', 2],
      [reel.externalId, 'Behind the counter', 1],
    ],
  );
  assert.match(single.url ?? '', /^https:\/\/www\.instagram\.com\/p\//);
  assert.equal((await client.findInstagramMedia(pageToken, IG, 'Menu', since))?.externalId, carousel.externalId);
  assert.equal(await client.findInstagramMedia(pageToken, IG, 'menu', since), null);
});

test('a publication given up (its signal aborted) while the reel container is processing sends no media_publish, says PublishNotReady, and the next attempt waits for the same container', async () => {
  const given = new AbortController();
  const reason = new Error('the publisher gave the call up');
  // The publisher's deadline passes while the client waits between two container polls.
  const c = createMetaPagesClient({
    graphUrl: sandbox.url,
    timeoutMs: 1_500,
    sleep: async (ms) => {
      nowMs += ms;
      given.abort(reason);
    },
  });
  const before = sandbox.organic.counts()[IG] ?? 0;
  const asked = sandbox.requests.length;
  const reel = { caption: 'Given up', media: [{ kind: 'video' as const, url: 'https://hub.example/media/v.mp4' }] };
  sandbox.organic.scenario.slowContainer(IG, 4);
  let prepared = '';
  await assert.rejects(c.publishInstagram(pageToken, IG, reel, given.signal), (error: unknown) => {
    assert.ok(error instanceof PublishNotReady, `PublishNotReady, got ${String(error)}`);
    prepared = error.prepared;
    return true;
  });
  const paths = sandbox.requests.slice(asked).map((r) => `${r.method} ${r.path.replace(/^\/v[\d.]+\//, '')}`);
  const containerId = paths[2]!.slice(4);
  assert.deepEqual(
    paths,
    [`GET ${IG}/content_publishing_limit`, `POST ${IG}/media`, `GET ${containerId}`],
    'no second poll, no media_publish',
  );
  assert.match(prepared, new RegExp(`^ig-container:${containerId}:\\d+$`));
  assert.equal(sandbox.organic.counts()[IG], before);
  // Given up before it starts: not even the limit is read.
  await assert.rejects(c.publishPage(pageToken, PAGE, { text: 'Too late', media: [] }, given.signal), (error: unknown) => error === reason);
  assert.equal(sandbox.requests.length, asked + 3);

  // The next attempt, given what was prepared: the same container polled to FINISHED, no new one, published once.
  const resumedAt = sandbox.requests.length;
  const published = await client.publishInstagram(pageToken, IG, reel, undefined, prepared);
  const again = sandbox.requests.slice(resumedAt).map((r) => `${r.method} ${r.path.replace(/^\/v[\d.]+\//, '')}`);
  assert.ok(!again.includes(`POST ${IG}/media`), `no new container: ${again.join(', ')}`);
  assert.deepEqual(
    again.filter((p) => p.startsWith('POST')),
    [`POST ${IG}/media_publish`],
  );
  assert.ok(again.filter((p) => p === `GET ${containerId}`).length >= 2, 'the same container polled on');
  assert.equal(sandbox.organic.counts()[IG], before + 1);
  assert.equal(sandbox.organic.publications(IG).at(-1)!.id, published.externalId);
  // Something else given as prepared (not ours, or damaged) is not trusted: a new container.
  const fresh = sandbox.requests.length;
  await client.publishInstagram(pageToken, IG, { caption: 'Fresh', media: [img(9)] }, undefined, 'ig-container:../../x:1');
  assert.ok(sandbox.requests.slice(fresh).some((r) => r.method === 'POST' && r.path.endsWith(`${IG}/media`)));
});

test('a container waited for past its 5 minutes is not PublishNotReady again, even when its polls hang: the wait is bounded', async () => {
  // A Graph API that answers the publishing limit and never the container's status.
  const graph = http.createServer((request, response) => {
    if (!request.url!.includes('content_publishing_limit')) return;
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ data: [{ quota_usage: 0, config: { quota_total: 50 } }] }));
  });
  await new Promise<void>((resolve) => graph.listen(0, '127.0.0.1', resolve));
  try {
    const c = createMetaPagesClient({ graphUrl: `http://127.0.0.1:${(graph.address() as AddressInfo).port}`, timeoutMs: 60_000 });
    const reel = { caption: 'Long reel', media: [{ kind: 'video' as const, url: 'https://hub.example/media/v.mp4' }] };
    const attempt = async (prepared: string) => {
      const given = new AbortController();
      const reason = new Error('the publisher gave the call up');
      setTimeout(() => given.abort(reason), 100);
      return c.publishInstagram(pageToken, IG, reel, given.signal, prepared).then(
        () => 'published',
        (error: unknown) => (error instanceof PublishNotReady ? 'not ready' : error === reason ? 'given up' : String(error)),
      );
    };
    assert.equal(await attempt(`ig-container:123456:${Date.now()}`), 'not ready', 'within its 5 minutes: waited for again');
    assert.equal(await attempt(`ig-container:123456:${Date.now() - 5 * 60_000}`), 'given up', 'past them: a timeout like any other');
  } finally {
    graph.closeAllConnections();
    graph.close();
  }
});

test('Instagram containers: ERROR is rejected with the platform words, EXPIRED a platform error, endless IN_PROGRESS gives up on schedule; nothing published', async () => {
  const count = () => sandbox.organic.counts()[IG];
  const before = count();
  sandbox.organic.scenario.containers(IG, ['ERROR']);
  await assert.rejects(client.publishInstagram(pageToken, IG, { caption: 'x', media: [img(1)] }), (e: unknown) => {
    assert.ok(e instanceof PlatformError && e.kind === 'rejected');
    assert.match(e.platformMessage ?? '', /2207026/);
    return true;
  });
  sandbox.organic.scenario.containers(IG, ['EXPIRED']);
  await expectKind(client.publishInstagram(pageToken, IG, { caption: 'x', media: [img(1)] }), 'platform_error');
  sandbox.organic.scenario.containers(IG, ['IN_PROGRESS']);
  sleeps.length = 0;
  const bounded = createMetaPagesClient({
    graphUrl: sandbox.url,
    sleep: fakeSleep,
    containerPoll: { firstMs: 1_000, maxDelayMs: 4_000, totalMs: 20_000 },
  });
  await expectKind(bounded.publishInstagram(pageToken, IG, { caption: 'x', media: [img(1)] }), 'platform_error');
  assert.deepEqual(sleeps, [1_000, 2_000, 4_000, 4_000, 4_000, 4_000, 4_000]);
  assert.equal(count(), before);
});

test('Instagram publishing limit: read before publishing; at the quota the post is refused as limit_reached without a container', async () => {
  sandbox.organic.scenario.quota(IG, 50);
  const containersBefore = sandbox.requests.filter((r) => r.method === 'POST' && r.path.endsWith(`/${IG}/media`)).length;
  await expectKind(client.publishInstagram(pageToken, IG, { caption: 'x', media: [img(1)] }), 'limit_reached');
  assert.equal(sandbox.requests.filter((r) => r.method === 'POST' && r.path.endsWith(`/${IG}/media`)).length, containersBefore);
  // A quota the answer states (here 60) is the one believed.
  sandbox.organic.scenario.quota(IG, 50, 60);
  await client.publishInstagram(pageToken, IG, { caption: 'under a larger quota', media: [img(1)] });
});

test('Instagram rules checked before sending, each with its reason: text only, caption length, hashtags, @ mentions, carousel items, JPEG only', async () => {
  const sent = sandbox.requests.length;
  const refused = async (
    post: { caption: string; media: { kind: 'image' | 'video'; url: string; contentType?: string }[] },
    words: RegExp,
  ) =>
    assert.rejects(client.publishInstagram(pageToken, IG, post), (error: unknown) => {
      assert.ok(error instanceof PlatformError && error.kind === 'rejected', String(error));
      assert.match(error.message, words);
      return true;
    });
  const list = (n: number, make: (i: number) => string) => Array.from({ length: n }, (_, i) => make(i)).join(' ');
  await refused({ caption: 'Just words', media: [] }, /a post without media cannot go to Instagram/);
  await refused({ caption: '☕'.repeat(2201), media: [img(1)] }, /at most 2200 characters \(this one has 2201\)/);
  await refused({ caption: list(31, (i) => `#t${i}`), media: [img(1)] }, /at most 30 hashtags \(this one has 31\)/);
  await refused({ caption: list(21, (i) => `@friend${i}`), media: [img(1)] }, /at most 20 @ mentions \(this one has 21\)/);
  await refused(
    { caption: 'x', media: Array.from({ length: 11 }, (_, i) => img(i)) },
    /carousel published through the API has at most 10 images or videos \(this post has 11\)/,
  );
  await refused({ caption: 'x', media: [{ ...img(1), contentType: 'image/png' }] }, /JPEG images only \(this post has image\/png\)/);
  await refused(
    { caption: 'x', media: [img(1), { ...img(2), contentType: 'image/webp' }] },
    /JPEG images only \(this post has image\/webp\)/,
  );
  assert.equal(sandbox.requests.length, sent, 'nothing was sent');
  // At the limits it goes out: 2,200 characters (counted as characters, not UTF-16 units) with 30
  // hashtags and 20 mentions, and a carousel of 10 JPEG images and a video.
  const caption = `${list(30, (i) => `#t${i}`)} ${list(20, (i) => `@f${i}`)} `;
  const full = `${caption}${'☕'.repeat(2200 - [...caption].length)}`;
  assert.equal([...full].length, 2200);
  await client.publishInstagram(pageToken, IG, { caption: full, media: [{ ...img(1), contentType: 'image/jpeg' }] });
  await client.publishInstagram(pageToken, IG, {
    caption: 'Ten',
    media: [
      ...Array.from({ length: 9 }, (_, i) => ({ ...img(i), contentType: 'image/jpeg' })),
      { kind: 'video' as const, url: 'https://hub.example/media/v.mp4', contentType: 'video/mp4' },
    ],
  });
});

test('Facebook Page rules checked before sending: neither text nor media, a video with other media, a message over 63,206 characters', async () => {
  const sent = sandbox.requests.length;
  const video = { kind: 'video' as const, url: 'https://hub.example/media/v.mp4' };
  const cases: [{ text: string; media: MetaMedia[] }, RegExp][] = [
    [{ text: '  ', media: [] }, /needs text or media/],
    [{ text: 'Clip and photo', media: [video, img(1)] }, /one video alone, or images only/],
    [{ text: 'x'.repeat(63_207), media: [] }, /at most 63206 characters/],
  ];
  for (const [post, words] of cases) {
    await assert.rejects(client.publishPage(pageToken, PAGE, post), (error: unknown) => {
      assert.ok(error instanceof PlatformError && error.kind === 'rejected', String(error));
      assert.match(error.message, words);
      return true;
    });
  }
  assert.equal(sandbox.requests.length, sent, 'nothing was sent');
  // A PNG goes to a Page (Facebook takes it; only Instagram is JPEG only).
  await client.publishPage(pageToken, PAGE, { text: 'A PNG', media: [{ ...img(1), contentType: 'image/png' }] });
});

test('errors: an expired Page token is needs_reconnect, a refused post rejected-as-invalid with error_user_msg, a missing permission missing_permission', async () => {
  const other = sandbox.organic.pageToken('1000000003');
  sandbox.organic.scenario.expireToken(other);
  await expectKind(client.publishPage(other, '1000000003', { text: 'x', media: [] }), 'needs_reconnect');
  sandbox.organic.scenario.rejectNext(PAGE, 'Your post looks like spam.');
  await assert.rejects(client.publishPage(pageToken, PAGE, { text: 'buy now', media: [] }), (e: unknown) => {
    assert.ok(e instanceof PlatformError);
    assert.equal(e.kind, 'invalid_request');
    assert.equal(e.platformMessage, 'Your post looks like spam.');
    assert.equal(e.platformCode, '100/1363047');
    return true;
  });
  // A Page token used on another Page's object.
  await expectKind(client.publishPage(pageToken, '1000000003', { text: 'x', media: [] }), 'missing_permission');
  sandbox.organic.scenario.fail(PAGE, { code: 10, message: '(#10) Requires pages_manage_posts permission' });
  await expectKind(client.publishPage(pageToken, PAGE, { text: 'x', media: [] }), 'missing_permission');
});

test('throttling: code 32 with X-Business-Use-Case-Usage is waited out (its estimated time), past the budget PlatformThrottled; nothing published twice', async () => {
  const before = sandbox.organic.counts()[PAGE]!;
  sandbox.organic.scenario.throttle(PAGE, 60_000);
  const p = await client.publishPage(pageToken, PAGE, { text: 'after the wait', media: [] });
  assert.deepEqual(sleeps, [60_000]);
  assert.ok(p.externalId);
  assert.equal(sandbox.organic.counts()[PAGE], before + 1);
  sandbox.organic.scenario.throttle(PAGE, 30 * 60_000);
  await assert.rejects(client.publishPage(pageToken, PAGE, { text: 'too long a wait', media: [] }), PlatformThrottled);
  assert.equal(sandbox.organic.counts()[PAGE], before + 1);
});

test('a publishing call written but unanswered (hang, cut off, HTML after publishing) is DeliveryUnconfirmed, and find resolves it', async () => {
  const since = new Date(nowMs);
  sandbox.organic.scenario.hang(PAGE, { publish: true });
  await assert.rejects(client.publishPage(pageToken, PAGE, { text: 'hung but made', media: [] }), DeliveryUnconfirmed);
  assert.ok(await client.findPagePost(pageToken, PAGE, 'hung but made', since));
  sandbox.organic.scenario.hang(PAGE, { publish: false });
  await assert.rejects(client.publishPage(pageToken, PAGE, { text: 'hung, not made', media: [] }), DeliveryUnconfirmed);
  assert.equal(await client.findPagePost(pageToken, PAGE, 'hung, not made', since), null);
  sandbox.organic.scenario.malformed(IG, 'truncated');
  // The quota read is the first call on IG: a truncated answer there is an ordinary bad answer (nothing sent).
  await expectKind(client.publishInstagram(pageToken, IG, { caption: 'cut', media: [img(1)] }), 'bad_answer');
  // The publisher's own class, injected (integrations cannot import the domain).
  const injected = createMetaPagesClient({
    graphUrl: sandbox.url,
    sleep: fakeSleep,
    timeoutMs: 1_500,
    unconfirmed: (m) => new PublisherUnconfirmed(m),
  });
  sandbox.organic.scenario.hang(PAGE, { publish: true });
  await assert.rejects(injected.publishPage(pageToken, PAGE, { text: 'injected', media: [] }), PublisherUnconfirmed);
  for (const kind of ['truncated', 'wrong_types', 'slow'] as const) {
    sandbox.organic.scenario.malformed(PAGE, kind);
    await assert.rejects(client.publishPage(pageToken, PAGE, { text: `made, ${kind}`, media: [] }), DeliveryUnconfirmed, kind);
    assert.ok(await client.findPagePost(pageToken, PAGE, `made, ${kind}`, since), kind);
  }
});

test('a publishing call answered 200 whose body is cut off or unreadable is DeliveryUnconfirmed (Meta made the post), on Pages and Instagram', async () => {
  const since = new Date(nowMs);
  for (const kind of ['dropped', 'truncated', 'bad_error'] as const) {
    const before = sandbox.organic.counts()[PAGE]!;
    sandbox.organic.scenario.malformed(PAGE, kind);
    await assert.rejects(client.publishPage(pageToken, PAGE, { text: `cut, ${kind}`, media: [] }), DeliveryUnconfirmed, kind);
    assert.equal(sandbox.organic.counts()[PAGE], before + 1, kind);
    assert.ok(await client.findPagePost(pageToken, PAGE, `cut, ${kind}`, since), kind);
  }
  // Instagram publishes with its last call, media_publish: cut off there, the media exists all the same.
  for (const kind of ['dropped', 'truncated', 'bad_error'] as const) {
    const before = sandbox.organic.counts()[IG] ?? 0;
    sandbox.organic.scenario.malformed(IG, kind, { publishing: true });
    await assert.rejects(client.publishInstagram(pageToken, IG, { caption: `cut, ${kind}`, media: [img(1)] }), DeliveryUnconfirmed, kind);
    assert.equal(sandbox.organic.counts()[IG], before + 1, kind);
    assert.ok(await client.findInstagramMedia(pageToken, IG, `cut, ${kind}`, since), kind);
  }
  // A read answered so is a bad answer: nothing was made by it.
  for (const kind of ['dropped', 'bad_error'] as const) {
    sandbox.organic.scenario.malformed(PAGE, kind);
    await expectKind(client.findPagePost(pageToken, PAGE, 'x', since), 'bad_answer');
  }
});

test('unreachable before sending: a refused connection is PlatformError unreachable, not unconfirmed', async () => {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  const dead = createMetaPagesClient({ graphUrl: `http://127.0.0.1:${port}`, sleep: fakeSleep, timeoutMs: 1_000 });
  await expectKind(dead.publishPage(pageToken, PAGE, { text: 'x', media: [] }), 'unreachable');
});

test('hostile answers on reads are failure kinds, never crashes: HTML, wrong types, redirect, huge, slow', async () => {
  const small = createMetaPagesClient({ graphUrl: sandbox.url, sleep: fakeSleep, timeoutMs: 1_000, maxBodyBytes: 256 * 1024 });
  for (const kind of ['html', 'wrong_types', 'redirect', 'huge', 'slow', 'truncated'] as const) {
    sandbox.organic.scenario.malformed(PAGE, kind);
    await expectKind(small.findPagePost(pageToken, PAGE, 'x', new Date(nowMs)), 'bad_answer');
  }
});

test('insights: Page post (post_media_view, post_total_media_view_unique, post_clicks, reactions, comments, shares) and Instagram media (views, reach, likes, saved, total_interactions)', async () => {
  const post = await client.publishPage(pageToken, PAGE, { text: 'counted', media: [] });
  const media = await client.publishInstagram(pageToken, IG, { caption: 'counted', media: [img(1)] });
  nowMs += 3 * 86_400_000;
  const fb = await client.pagePostInsights(pageToken, post.externalId);
  assert.ok(fb.impressions! > 0 && fb.reach! > 0 && fb.reach! <= fb.impressions!);
  assert.ok(fb.clicks !== null && fb.likes !== null && fb.comments !== null && fb.shares !== null);
  assert.equal(fb.saves, null);
  const ig = await client.instagramMediaInsights(pageToken, media.externalId);
  assert.ok(ig.impressions! > 0 && ig.reach! > 0);
  assert.equal(ig.engagements, ig.likes! + ig.comments! + ig.shares! + ig.saves!);
  nowMs += 4 * 86_400_000;
  assert.ok((await client.pagePostInsights(pageToken, post.externalId)).impressions! >= fb.impressions!);
  sandbox.organic.scenario.malformed(IG, 'wrong_types');
  await expectKind(client.instagramMediaInsights(pageToken, media.externalId), 'bad_answer');
});

test('the connector: Facebook and Instagram channels by platform, the Page token as secret; IG text-only refused before sending', async () => {
  const connector = createMetaPagesConnector({ graphUrl: sandbox.url, sleep: fakeSleep });
  const post: OutgoingPost = { id: 'post_1', hubId: 'hub_1', workspaceId: 'ws_1', text: 'From the connector', media: [] };
  const channel = (platform: 'facebook' | 'instagram', externalId: string, secret: string | null): OutgoingChannel => ({
    id: `ch_${platform}`,
    platform,
    name: platform,
    handle: null,
    externalId,
    secret,
  });
  const since = new Date(nowMs);
  const fb = await connector.publish(post, channel('facebook', PAGE, pageToken));
  assert.equal((await connector.find(post, channel('facebook', PAGE, pageToken), since))?.externalId, fb.externalId);
  await expectKind(connector.publish(post, channel('instagram', IG, pageToken)), 'rejected');
  await expectKind(connector.publish(post, channel('facebook', PAGE, null)), 'needs_reconnect');
  const withMedia: OutgoingPost = {
    ...post,
    media: [{ id: 'm1', kind: 'image', contentType: 'image/jpeg', width: 10, height: 10, storageKey: 'k', url: 'https://hub.example/m/1' }],
  };
  const ig = await connector.publish(withMedia, channel('instagram', IG, pageToken));
  assert.equal((await connector.find(withMedia, channel('instagram', IG, pageToken), since))?.externalId, ig.externalId);
  // The connector hands the media's type on: a PNG is refused for Instagram before sending.
  const png: OutgoingPost = { ...withMedia, media: [{ ...withMedia.media[0]!, contentType: 'image/png' }] };
  await expectKind(connector.publish(png, channel('instagram', IG, pageToken)), 'rejected');
  const figures = await connector.insights(channel('instagram', IG, pageToken), ig.externalId);
  assert.ok(figures.reach !== null);
});

test('scenario control over HTTP drives the Pages side too', async () => {
  const post = (body: unknown) =>
    fetch(`${sandbox.url}/__sandbox/scenario`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  assert.equal((await post({ action: 'pages.rejectNext', channelId: PAGE, message: 'No.' })).status, 200);
  await expectKind(client.publishPage(pageToken, PAGE, { text: 'x', media: [] }), 'invalid_request');
  const counts = (await (await post({ action: 'pages.counts' })).json()) as Record<string, number>;
  assert.equal(counts[PAGE], sandbox.organic.counts()[PAGE]);
  assert.equal((await post({ action: 'pages.containers', channelId: PAGE, outcomes: ['ERROR'] })).status, 400, 'a Page has no containers');
  assert.equal((await post({ action: 'nonsense' })).status, 400);
});

test('the lookups look from `since` exactly (the publisher has already allowed for clock skew): an older post with the same text is not found', async () => {
  // The publisher asks from RECONCILE_SKEW_MS before the attempt; a second margin here would widen
  // the window in which another post with the same text is taken for this one.
  // The third Page and its account (added in before), so the other tests' counts stay theirs.
  const [third, thirdIg, token] = ['1000000003', '17841400000000003', sandbox.organic.pageToken('1000000003')];
  nowMs = Math.ceil(nowMs / 1000) * 1000;
  const text = 'Kouign-amann, fresh at noon';
  const page = await client.publishPage(token, third, { text, media: [] });
  const pageAt = nowMs;
  const media = await client.publishInstagram(token, thirdIg, { caption: text, media: [img(4)] });
  const mediaAt = nowMs; // after the container's polls
  nowMs += 60_000;
  assert.equal(await client.findPagePost(token, third, text, new Date(pageAt + 1_000)), null, 'a Page post made a second before since');
  assert.equal(await client.findInstagramMedia(token, thirdIg, text, new Date(mediaAt + 1_000)), null, 'media made a second before since');
  assert.equal((await client.findPagePost(token, third, text, new Date(pageAt)))?.externalId, page.externalId);
  assert.equal((await client.findInstagramMedia(token, thirdIg, text, new Date(mediaAt)))?.externalId, media.externalId);
});
