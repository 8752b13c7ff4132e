// Manage Hub → Channels and the delivery states around it, end to end: posts scheduled through the
// main API's create_post, published by the publisher through a scripted network (one channel
// refused with the network's words, one throttled, one unconfirmed, one connected with a sealed
// token), then the states read back in GET /posts/:id and on the Channels page (connected / needs
// reconnect and why / failing / sandbox, last publish, the network's words, the token warning, the
// deliveries being confirmed); the signed public media URL the networks fetch (valid, altered,
// expired: 404 alike); and the page in Chromium at 390 and 1280 px (screenshots in
// /tmp/publish-shots, or docs/screenshots with UPDATE_SCREENSHOTS=1).
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { MediaUrlSigner, mediaUrlKey } from '../../src/domain/media/media-url.ts';
import {
  DeliveryUnconfirmed,
  type Connector,
  type OutgoingChannel,
  type OutgoingPost,
  type Publication,
} from '../../src/domain/posts/connector.ts';
import { findPost, postRows } from '../../src/domain/posts/post.repository.ts';
import { createPublisher } from '../../src/domain/posts/publisher.ts';
import { PlatformError, PlatformThrottled } from '../../src/integrations/ad-platform.ts';
import { loadServerSecrets, resolveSecretsKeys } from '../../src/surfaces/oauth/server-secrets.ts';
import { Sealer } from '../../src/platform/sealing.ts';
import { startApp, TEST_SECRETS_KEY, type TestApp } from '../support/app.ts';
import { CHROMIUM, CHROMIUM_ARGS, chromiumMissing } from '../support/chromium.ts';
import { overflows, smallTargets } from '../support/page-checks.ts';
import { signedIn } from '../support/web-forms.ts';
import { ADMIN, HUB, MEMBER, seedWebHub } from '../support/world.ts';

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';
const SHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? path.resolve(import.meta.dirname, '../../docs/screenshots') : '/tmp/publish-shots';
const NOW = new Date('2026-11-21T12:00:00.000Z');
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

let web: TestApp;
let sealer: Sealer;
let signer: MediaUrlSigner;

/** The networks, as scripted: Facebook publishes (with a permalink), Instagram refuses, GBP throttles, LinkedIn loses its answer. */
const network: Connector & { calls: { channel: OutgoingChannel; post: OutgoingPost }[] } = {
  calls: [],
  async publish(post, channel): Promise<Publication> {
    this.calls.push({ channel, post });
    if (channel.platform === 'facebook') return { externalId: `${channel.externalId}_777`, url: 'https://www.facebook.test/777' };
    if (channel.platform === 'instagram')
      throw new PlatformError('needs_reconnect', 'Instagram refused the token', {
        platformMessage: 'Error validating access token: The session has been invalidated.',
        platformCode: '190/460',
      });
    if (channel.platform === 'google_business') throw new PlatformThrottled(120_000, 'throttled', 'Quota exceeded for quota metric');
    throw new DeliveryUnconfirmed('the connection broke after the request was written');
  },
  async find() {
    return null;
  },
};

before(async () => {
  web = await startApp({
    listen: true,
    now: NOW,
    secretsKey: TEST_SECRETS_KEY,
    seed: async (db) => {
      await seedWebHub(db);
    },
  });
  const keys = (await resolveSecretsKeys(web.config)).keys;
  sealer = new Sealer(keys);
  signer = new MediaUrlSigner(mediaUrlKey((await loadServerSecrets(web.db, { keys })).cookieKeys[0]!), web.config.baseUrl, 24 * 3_600_000);
  const db = web.db.kysely;
  await db
    .insertInto('channel_connections')
    .values({
      id: 'conn_meta',
      hub_id: HUB,
      platform: 'meta',
      label: 'Meta (signed in with Facebook)',
      token_sealed: sealer.seal('user-token', 'conn_meta'),
      token_expires_at: new Date(NOW.getTime() + 3 * 86_400_000),
    })
    .execute();
  await db
    .insertInto('social_channels')
    .values([
      { id: 'ch_fb', hub_id: HUB, workspace_id: 'ws_a', platform: 'facebook', name: 'Brewline Downtown', handle: null },
      // Named as a Meta sign-in names an Instagram channel: the account's @username, its handle the username.
      { id: 'ch_ig', hub_id: HUB, workspace_id: 'ws_a', platform: 'instagram', name: '@brewline.downtown', handle: 'brewline.downtown' },
      { id: 'ch_gbp', hub_id: HUB, workspace_id: 'ws_b', platform: 'google_business', name: 'Brewline Uptown', handle: null },
      { id: 'ch_li', hub_id: HUB, workspace_id: 'ws_b', platform: 'linkedin', name: 'Brewline on LinkedIn', handle: null },
      { id: 'ch_x', hub_id: HUB, workspace_id: 'ws_c', platform: 'x', name: 'Brewline X', handle: '@brewline' },
    ])
    .execute();
  await db
    .updateTable('social_channels')
    .set({
      connection_id: 'conn_meta',
      external_id: '1001',
      token_sealed: sealer.seal('page-token', 'ch_fb'),
      token_expires_at: new Date(NOW.getTime() + 3 * 86_400_000),
    })
    .where('id', '=', 'ch_fb')
    .execute();
  await db.updateTable('social_channels').set({ connection_id: 'conn_meta', external_id: '1784' }).where('id', '=', 'ch_ig').execute();
  await db
    .insertInto('media_assets')
    .values({
      id: 'med_pub',
      hub_id: HUB,
      workspace_id: 'ws_a',
      kind: 'image',
      content_type: 'image/png',
      filename: 'private-name.png',
      byte_size: PNG.length,
      width: 1,
      height: 1,
      sha256: Buffer.alloc(32),
      storage_key: `${HUB}/ws_a/med_pub.png`,
    })
    .execute();
  const dir = path.join(web.config.dataDir, 'media', HUB, 'ws_a');
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'med_pub.png'), PNG);
  const rows = [
    postRows({
      id: 'post_a',
      hubId: HUB,
      workspaceId: 'ws_a',
      text: 'Fresh beans today',
      status: 'scheduled',
      scheduledAt: NOW.toISOString(),
      createdBy: null,
      channelIds: ['ch_fb', 'ch_ig'],
      mediaIds: ['med_pub'],
    }),
    postRows({
      id: 'post_b',
      hubId: HUB,
      workspaceId: 'ws_b',
      text: 'Open late on Friday',
      status: 'scheduled',
      scheduledAt: NOW.toISOString(),
      createdBy: null,
      channelIds: ['ch_gbp', 'ch_li'],
      mediaIds: [],
    }),
  ];
  for (const r of rows) {
    await db.insertInto('posts').values(r.post).execute();
    await db.insertInto('post_deliveries').values(r.deliveries).execute();
    if (r.media.length > 0) await db.insertInto('post_media').values(r.media).execute();
  }
  // The app's wiring, with the scripted network for every channel: what app.ts builds for connected ones.
  await createPublisher({
    db: web.db,
    clock: web.clock,
    connectors: network,
    sealer,
    mediaUrls: signer,
    intervalMs: 10,
    batchSize: 10,
  }).runOnce();
});
after(async () => {
  await web?.close();
});

test('the publisher sent the Page its unsealed token and a signed media URL', () => {
  const fb = network.calls.find((c) => c.channel.id === 'ch_fb')!;
  assert.equal(fb.channel.secret, 'page-token');
  assert.equal(network.calls.find((c) => c.channel.id === 'ch_ig')!.channel.secret, 'user-token', 'no Page token: the connection’s');
  assert.ok(fb.post.media[0]!.url!.startsWith(`${web.baseUrl}/media-public/med_pub?exp=`));
  assert.match(fb.post.media[0]!.url!, /\/media-public\/med_pub\?exp=\d+&sig=[\w-]{43}$/);
});

test('the signed media URL serves the bytes without a session; anything altered or expired is the same 404', async () => {
  const url = new URL(network.calls.find((c) => c.channel.id === 'ch_fb')!.post.media[0]!.url!);
  const get = (u: string) => web.app.fastify.inject({ method: 'GET', url: u });
  const ok = await get(`${url.pathname}${url.search}`);
  assert.equal(ok.statusCode, 200);
  assert.deepEqual(ok.rawPayload, PNG);
  assert.equal(ok.headers['content-type'], 'image/png');
  assert.equal(ok.headers['content-length'], String(PNG.length));
  assert.equal(ok.headers['cache-control'], 'private, max-age=300');
  assert.equal(ok.headers['set-cookie'], undefined);
  assert.doesNotMatch(JSON.stringify(ok.headers), /private-name|ws_a|hub_web/, 'no filename, no ids');

  const sig = url.searchParams.get('sig')!;
  const exp = url.searchParams.get('exp')!;
  const flipped = `${sig.slice(0, -1)}${sig.endsWith('A') ? 'B' : 'A'}`;
  const misses = [
    `/media-public/med_pub?exp=${exp}&sig=${flipped}`,
    `/media-public/med_pub?exp=${Number(exp) + 1}&sig=${sig}`,
    `/media-public/med_other?exp=${exp}&sig=${sig}`,
    `/media-public/med_pub?exp=${exp}`,
    `/media-public/med_pub?exp=${exp}&sig=${sig}&sig=${sig}`,
    `/media-public/med_nope?exp=${exp}&sig=${signer.url('med_nope', NOW).split('sig=')[1]}`,
  ];
  const answers = await Promise.all(misses.map(get));
  for (const [i, r] of answers.entries()) {
    assert.equal(r.statusCode, 404, misses[i]);
    assert.equal(r.body, answers[0]!.body, 'one answer for every miss: nothing tells whether the media exists');
  }
  web.clock.advance(24 * 3_600_000 + 1_000);
  try {
    assert.equal((await get(`${url.pathname}${url.search}`)).statusCode, 404, 'expired');
  } finally {
    web.clock.set(NOW);
  }
});

test('GET /posts/:id shows each delivery’s state, failure kind, the network’s words, url and attempt', async () => {
  const post = (id: string) => findPost(web.db.kysely, { hubId: HUB, workspaceId: null }, id);
  const a = await post('post_a');
  assert.equal(a?.status, 'failed');
  assert.deepEqual(
    a?.deliveries.map((d) => [d.channelId, d.status, d.failureKind, d.platformMessage, d.url, d.attemptedAt]),
    [
      ['ch_fb', 'published', null, null, 'https://www.facebook.test/777', NOW.toISOString()],
      ['ch_ig', 'failed', 'needs_reconnect', 'Error validating access token: The session has been invalidated.', null, NOW.toISOString()],
    ],
  );
  const b = await post('post_b');
  assert.equal(b?.status, 'publishing', 'a throttled and an unconfirmed delivery keep the post publishing');
  assert.deepEqual(
    b?.deliveries.map((d) => [d.channelId, d.status, d.failureKind, d.platformMessage]),
    [
      ['ch_gbp', 'pending', 'throttled', 'Quota exceeded for quota metric'],
      ['ch_li', 'unconfirmed', 'no_answer', null],
    ],
  );
});

test('the Channels page: each channel’s state in words, the network’s own, the token warning, the deliveries being confirmed', async () => {
  const admin = await signedIn(web);
  const r = await admin.fetch(`${web.baseUrl}/app/hubs/${HUB}/settings/channels`);
  assert.equal(r.status, 200);
  const html = await r.text();
  const row = (id: string) => new RegExp(`<tr data-channel="${id}">([\\s\\S]*?)</tr>`).exec(html)?.[1] ?? '';
  assert.match(row('ch_fb'), /data-state="connected"/);
  assert.match(row('ch_fb'), /data-token-expires-soon>on <strong>2026-11-24<\/strong>/);
  assert.match(row('ch_fb'), /via Meta \(signed in with Facebook\)/);
  assert.match(row('ch_ig'), /data-state="needs_reconnect"/);
  assert.match(row('ch_ig'), /<q data-platform-message>Error validating access token: The session has been invalidated.<\/q>/);
  assert.match(row('ch_ig'), /code <code>190\/460<\/code>/);
  assert.match(row('ch_li'), /data-state="sandbox"/);
  assert.match(row('ch_li'), /1 post sent without an answer yet/);
  assert.match(row('ch_x'), /Last publish<\/dt><dd>none yet/);
  // A handle is shown once: beside a name that is another one, not beside the name it already is.
  assert.equal(row('ch_ig').match(/brewline\.downtown/g)?.length, 1, row('ch_ig'));
  assert.match(row('ch_ig'), /<strong>@brewline\.downtown<\/strong><br>/);
  assert.match(row('ch_x'), /<strong>Brewline X<\/strong> <small>@brewline<\/small>/);
  assert.ok(html.indexOf('data-channel="ch_ig"') < html.indexOf('data-channel="ch_fb"'), 'the ones needing attention first');
  // Business Profile's page says itself whether Google OAuth is set up; Meta's action needs the Meta app.
  // The card says what connecting does: the locations, for posts and reviews.
  assert.match(
    html,
    /<div id="connect-google-business" data-connect-action><a class="button primary" href="[^"]*\/settings\/channels\/google">Connect Google Business Profile locations<\/a><br><small>Posts go to the Business Profile of each location you choose; its Google reviews feed the review summaries\.<\/small>/,
  );
  assert.doesNotMatch(html, /data-no-connect/);
  assert.doesNotMatch(html, /page-token|user-token/);

  const member = await signedIn(web, MEMBER);
  assert.equal((await member.fetch(`${web.baseUrl}/app/hubs/${HUB}/settings/channels`)).status, 403, 'hub admins only');
});

describe('the Channels page in Chromium', { skip: chromiumMissing }, () => {
  let browser: Browser;
  before(async () => {
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  });
  after(async () => {
    await browser?.close();
  });

  test('390 and 1280 px: nothing overflows, touch targets on the phone', async () => {
    await mkdir(SHOTS, { recursive: true });
    const problems: string[] = [];
    for (const { width, height, phone } of [
      { width: 390, height: 844, phone: true },
      { width: 1280, height: 800, phone: false },
    ]) {
      const context = await browser.newContext({ viewport: { width, height } });
      const page = await context.newPage();
      await page.goto(`${web.baseUrl}/app/sign-in`);
      await page.fill('#email', ADMIN.email);
      await page.fill('#password', ADMIN.password);
      await Promise.all([page.waitForURL(/\/app\/hubs\//), page.click('button[type=submit]')]);
      await page.goto(`${web.baseUrl}/app/hubs/${HUB}/settings/channels`);
      assert.equal(await page.locator('tr[data-channel]').count(), 5);
      for (const found of await overflows(page, width)) problems.push(`${width}: ${found}`);
      if (phone) for (const found of await smallTargets(page)) problems.push(`${width}: ${found}`);
      await page.screenshot({ path: path.join(SHOTS, `channels-${width}.png`), fullPage: true });
      await context.close();
    }
    assert.deepEqual(problems, []);
  });
});
