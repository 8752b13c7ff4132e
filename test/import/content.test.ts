import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type ImportError, importNdjson } from '../../src/domain/import/import.service.ts';
import { seedDemo } from '../../src/domain/demo/demo.service.ts';
import { FixedClock } from '../../src/platform/clock.ts';
import { call, caller, principal, tempMediaStore, type TempMediaStore } from '../support/content-world.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import { snapshot } from '../support/snapshot.ts';

// The NDJSON import's content types (channel, media, post, organicMetrics, paidMetrics,
// reviewDay, hubCpm): a valid file round-trips through the API, every bad line is reported with
// its field, nothing is written on refusal; and the demo seed gives every endpoint real numbers.

const NOW = '2026-11-21T12:00:00.000Z';
let db: TestDb;
let media: TempMediaStore;
const clock = new FixedClock(NOW);
const ndjson = (lines: unknown[]) => lines.map((l) => JSON.stringify(l)).join('\n');
const SHA = 'ab'.repeat(32);

const BASE = [
  { type: 'account', id: 'acc_1', name: 'Acme' },
  { type: 'hub', id: 'hub_1', accountId: 'acc_1', name: 'Acme US' },
  { type: 'workspace', id: 'ws_1', hubId: 'hub_1', name: 'Denver' },
  { type: 'workspace', id: 'ws_2', hubId: 'hub_1', name: 'Boise' },
];
const CONTENT = [
  { type: 'channel', id: 'ch_ig', workspaceId: 'ws_1', platform: 'instagram', name: 'Acme Denver', handle: '@acme.denver' },
  { type: 'channel', id: 'ch_x', workspaceId: 'ws_1', platform: 'x', name: 'Acme Denver', connected: false },
  { type: 'channel', id: 'ch_fb2', workspaceId: 'ws_2', platform: 'facebook', name: 'Acme Boise' },
  {
    type: 'media',
    id: 'med_1',
    workspaceId: 'ws_1',
    contentType: 'image/jpeg',
    filename: 'a.jpg',
    byteSize: 1234,
    width: 1080,
    height: 1080,
    sha256: SHA,
    createdAt: '2026-11-01T10:00:00Z',
  },
  {
    type: 'media',
    id: 'med_2',
    workspaceId: 'ws_1',
    contentType: 'video/mp4',
    filename: 'b.mp4',
    byteSize: 99_999,
    width: 1920,
    height: 1080,
    durationMs: 15_000,
    sha256: SHA,
  },
  {
    type: 'post',
    id: 'post_pub',
    workspaceId: 'ws_1',
    text: 'Hello',
    status: 'published',
    channelIds: ['ch_ig'],
    mediaIds: ['med_1'],
    scheduledAt: '2026-11-10T09:00:00Z',
    publishedAt: '2026-11-10T09:00:05Z',
    externalIds: { ch_ig: 'ig_123' },
  },
  {
    type: 'post',
    id: 'post_fail',
    workspaceId: 'ws_1',
    text: 'Oops',
    status: 'failed',
    channelIds: ['ch_ig', 'ch_x'],
    mediaIds: ['med_2'],
    scheduledAt: '2026-11-11T09:00:00Z',
    error: 'token expired',
  },
  {
    type: 'post',
    id: 'post_sched',
    workspaceId: 'ws_2',
    text: 'Soon',
    status: 'scheduled',
    channelIds: ['ch_fb2'],
    scheduledAt: '2026-12-01T09:00:00Z',
  },
  { type: 'post', workspaceId: 'ws_1', text: 'An idea', status: 'draft' },
  {
    type: 'organicMetrics',
    workspaceId: 'ws_1',
    date: '2026-11-20',
    platform: 'instagram',
    posts: 1,
    impressions: 100,
    reach: 80,
    likes: 5,
    comments: 1,
    shares: 1,
    saves: 1,
  },
  {
    type: 'paidMetrics',
    workspaceId: 'ws_1',
    date: '2026-11-20',
    platform: 'meta',
    campaignId: 'c1',
    campaignName: 'Spring',
    spendCents: 500,
    impressions: 1000,
    clicks: 10,
    results: 1,
  },
  { type: 'reviewDay', workspaceId: 'ws_1', date: '2026-11-20', newReviews: { 5: 2, 4: 1 }, responded: 2 },
  { type: 'hubCpm', hubId: 'hub_1', platform: 'instagram', cpmCents: 1000 },
];

before(async () => {
  db = await createTestDb();
  media = await tempMediaStore();
});
after(async () => {
  await db.drop();
  await media.remove();
});

test('a valid file: every content type, seen through the API as imported', async () => {
  const result = await importNdjson(db, ndjson([...BASE, ...CONTENT]));
  assert.deepEqual(Object.fromEntries(Object.entries(result.imported).filter(([, n]) => n > 0)), {
    account: 1,
    hub: 1,
    workspace: 2,
    channel: 3,
    media: 2,
    post: 4,
    organicMetrics: 1,
    paidMetrics: 1,
    reviewDay: 1,
    hubCpm: 1,
  });
  const admin = caller(db, clock, media.store, principal('hub_1', null, 'usr_x'));
  const posts = (await call('list_posts', admin, { limit: 10 })).data;
  const byId = Object.fromEntries(posts.map((p: { _id: string }) => [p._id, p]));
  assert.deepEqual(byId.post_pub.deliveries, [
    {
      channelId: 'ch_ig',
      platform: 'instagram',
      status: 'published',
      externalId: 'ig_123',
      error: null,
      deliveredAt: '2026-11-10T09:00:05.000Z',
      failureKind: null,
      platformMessage: null,
      url: null,
      attemptedAt: null,
    },
  ]);
  assert.deepEqual(
    [byId.post_pub.status, byId.post_pub.publishedAt, byId.post_pub.mediaIds],
    ['published', '2026-11-10T09:00:05.000Z', ['med_1']],
  );
  assert.deepEqual(
    byId.post_fail.deliveries.map((d: { status: string; error: string }) => [d.status, d.error]),
    [
      ['failed', 'token expired'],
      ['failed', 'token expired'],
    ],
  );
  assert.equal(byId.post_sched.status, 'scheduled');
  assert.equal(posts.filter((p: { status: string }) => p.status === 'draft').length, 1);
  const asset = await call('get_media', admin, { id: 'med_2' });
  assert.deepEqual([asset.kind, asset.durationMs, asset.sha256, asset.createdBy], ['video', 15_000, SHA, null]);
  assert.equal((await call('list_channels', admin, { workspaceId: 'ws_1' })).data.length, 2);
  const organic = await call('organic_analytics', admin, { from: '2026-11-20', to: '2026-11-20' });
  assert.deepEqual([organic.totals.engagement, organic.totals.earnedMediaValueCents], [8, 100]);
  assert.equal((await call('google_review_summaries', admin, { from: '2026-11-20', to: '2026-11-20' })).totals.averageRating, 4.67);
});

test('bad lines are reported with their field, and nothing is written', async () => {
  const before = await snapshot(db);
  const bad = [
    { type: 'channel', workspaceId: 'ws_1', platform: 'myspace', name: 'x' },
    {
      type: 'media',
      workspaceId: 'ws_1',
      contentType: 'image/png',
      filename: 'a.png',
      byteSize: 20_000_000,
      width: 0,
      height: 10,
      durationMs: 5,
      sha256: 'zz',
    },
    {
      type: 'post',
      workspaceId: 'ws_1',
      text: 'x'.repeat(300),
      status: 'scheduled',
      channelIds: ['ch_x'],
      scheduledAt: '2026-12-01T00:00:00Z',
    },
    { type: 'post', workspaceId: 'ws_1', text: 'cross', status: 'draft', channelIds: ['ch_fb2'] },
    { type: 'post', workspaceId: 'ws_1', text: 'y', status: 'publishing', channelIds: ['ch_ig'] },
    {
      type: 'post',
      workspaceId: 'ws_1',
      text: 'z',
      status: 'failed',
      channelIds: ['ch_ig'],
      mediaIds: ['med_1'],
      scheduledAt: '2026-11-01T00:00:00Z',
    },
    { type: 'reviewDay', workspaceId: 'ws_1', date: '2026-11-19', newReviews: { 5: 1, 6: 1 }, responded: 2 },
    {
      type: 'organicMetrics',
      workspaceId: 'ws_1',
      date: '2026-11-19',
      platform: 'x',
      posts: 0,
      impressions: 1,
      reach: 1,
      likes: 0,
      comments: 0,
      shares: 0,
      saves: 0,
    },
    {
      type: 'organicMetrics',
      workspaceId: 'ws_1',
      date: '2026-11-19',
      platform: 'x',
      posts: 0,
      impressions: 2,
      reach: 1,
      likes: 0,
      comments: 0,
      shares: 0,
      saves: -1,
    },
    { type: 'hubCpm', hubId: 'hub_nope', platform: 'x', cpmCents: 1 },
  ];
  await assert.rejects(importNdjson(db, ndjson(bad)), (error: ImportError) => {
    const fields = error.issues.map((i) => `${i.line}:${i.field ?? ''}`);
    assert.deepEqual(fields, [
      '1:channel.platform',
      '2:media.byteSize',
      '2:media.width',
      '2:media.durationMs',
      '2:media.sha256',
      '3:post.text',
      '4:post.channelIds.0',
      '5:post.status',
      '6:post.error',
      '7:reviewDay.newReviews.6',
      '7:reviewDay.responded',
      '9:organicMetrics.saves',
      '10:hubCpm.hubId',
    ]);
    assert.match(error.message, /line 3: post\.text: is 300 characters; x allows 280/);
    assert.match(error.message, /line 4: post\.channelIds\.0: channel ch_fb2 is in workspace ws_2, not in the post's workspace ws_1/);
    return true;
  });
  assert.deepEqual(await snapshot(db), before);

  await assert.rejects(
    importNdjson(db, ndjson([bad[7], bad[7]])),
    /line 2: organicMetrics\.date: the same figures are already given on line 1/,
  );
  // Metrics re-imported for the same key replace what is stored.
  await importNdjson(db, ndjson([{ ...bad[7], impressions: 7 }]));
  await importNdjson(db, ndjson([{ ...bad[7], impressions: 9 }]));
  const row = await db.kysely
    .selectFrom('organic_metrics')
    .select('impressions')
    .where('date', '=', '2026-11-19')
    .executeTakeFirstOrThrow();
  assert.equal(row.impressions, '9');
});

test('numbers beyond what their columns hold are refused by field, never by PostgreSQL', async () => {
  const before = await snapshot(db);
  const huge = [
    {
      type: 'media',
      workspaceId: 'ws_1',
      contentType: 'video/mp4',
      filename: 'long.mp4',
      byteSize: 10,
      width: 70_000,
      height: 10,
      durationMs: 4_294_967_295_000,
      sha256: SHA,
    },
    {
      type: 'organicMetrics',
      workspaceId: 'ws_1',
      date: '2026-11-18',
      platform: 'x',
      posts: 2 ** 31,
      impressions: 2 ** 40,
      reach: 1,
      likes: 0,
      comments: 0,
      shares: 0,
      saves: 0,
    },
    { type: 'reviewDay', workspaceId: 'ws_1', date: '2026-11-18', newReviews: { 5: 2 ** 31 }, responded: 2 ** 31 },
    { type: 'hubCpm', hubId: 'hub_1', platform: 'x', cpmCents: 2 ** 31 },
  ];
  await assert.rejects(importNdjson(db, ndjson(huge)), (error: ImportError) => {
    assert.deepEqual(
      error.issues.map((i) => `${i.line}:${i.field ?? ''}`),
      [
        '1:media.width',
        '1:media.durationMs',
        '2:organicMetrics.posts',
        '3:reviewDay.newReviews.5',
        '3:reviewDay.responded',
        '4:hubCpm.cpmCents',
      ],
    );
    assert.doesNotMatch(error.message, /out of range|integer/);
    return true;
  });
  assert.deepEqual(await snapshot(db), before);
});

test('the demo seed gives every content endpoint real numbers', async () => {
  const demo = await createTestDb();
  try {
    await seedDemo(demo, clock);
    const admin = caller(demo, clock, media.store, principal('hub_demo_brewline', null, 'usr_demo_admin'));
    const member = caller(demo, clock, media.store, principal('hub_demo_brewline', 'ws_demo_brewline_01', 'usr_demo_member'));
    const posts = (await call('list_posts', admin, { limit: 500 })).data;
    assert.ok(posts.length >= 20, `${posts.length} posts in Brewline`);
    const all = await demo.kysely.selectFrom('posts').select('id').execute();
    assert.ok(all.length >= 28, `${all.length} posts in both hubs`);
    assert.deepEqual([...new Set(posts.map((p: { status: string }) => p.status))].sort(), ['draft', 'failed', 'published', 'scheduled']);
    assert.ok((await call('list_posts', member, {})).data.length >= 15, 'the member’s workspace is the busiest');
    assert.ok((await call('list_media', member, {})).data.length >= 10);
    assert.ok((await call('list_channels', member, {})).data.length >= 6);
    assert.ok(
      (await call('list_channels', admin, { limit: 500 })).data.some((c: { connected: boolean }) => !c.connected),
      'one expired connection',
    );
    const organic = await call('organic_analytics', admin, {});
    assert.ok(organic.totals.impressions > 0 && organic.totals.earnedMediaValueCents > 0 && organic.totals.engagementRate > 0);
    assert.equal(organic.workspaces.length, 24);
    const paid = await call('paid_analytics', admin, {});
    assert.ok(paid.totals.spendCents > 0 && paid.totals.ctr > 0 && paid.campaigns.length === 2);
    const reviews = await call('google_review_summaries', admin, {});
    assert.ok(reviews.totals.reviewCount > reviews.totals.newReviews && reviews.totals.newReviews > 0 && reviews.totals.responseRate > 0);
    assert.ok(reviews.totals.averageRating >= 3.5 && reviews.totals.averageRating <= 5);
  } finally {
    await demo.drop();
  }
});
