import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import type { SocialPlatform } from '../../src/db/schema.ts';
import { SOCIAL_PLATFORMS } from '../../src/domain/channels/channel.ts';
import { TEXT_LIMITS } from '../../src/domain/posts/post.ts';
import { FixedClock } from '../../src/platform/clock.ts';
import { refusalOf, type ApiError } from '../../src/surfaces/shared/errors.ts';
import { call, caller, channel, principal, seedTwoHubs, tempMediaStore, user, type TempMediaStore } from '../support/content-world.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import { workspace } from '../support/world.ts';

// Posts through their operation declarations (input schema, then the domain): the per-platform
// rules at their boundaries, media rules, channel ownership, tenancy across hubs and workspaces,
// scheduling, keyset paging, and Idempotency-Key.

const NOW = '2026-11-21T12:00:00.000Z';
const HOUR = 3_600_000;
let db: TestDb;
let media: TempMediaStore;
const clock = new FixedClock(NOW);
const inHours = (h: number) => new Date(Date.parse(NOW) + h * HOUR).toISOString();

const member = () => caller(db, clock, media.store, principal('hub_a', 'ws_a1', 'usr_a1'));
const otherMember = () => caller(db, clock, media.store, principal('hub_a', 'ws_a2', 'usr_a2'));
const admin = () => caller(db, clock, media.store, principal('hub_a', null, 'usr_admin'));
const stranger = () => caller(db, clock, media.store, principal('hub_b', 'ws_b1', 'usr_b'));

const chan = (platform: SocialPlatform) => `ch_a1_${platform}`;

async function mediaRow(
  id: string,
  workspaceId: string,
  kind: 'image' | 'video',
  hubId = 'hub_a',
  contentType: 'image/jpeg' | 'image/png' | 'video/mp4' = kind === 'image' ? 'image/jpeg' : 'video/mp4',
) {
  await db.kysely
    .insertInto('media_assets')
    .values({
      id,
      hub_id: hubId,
      workspace_id: workspaceId,
      kind,
      content_type: contentType,
      filename: `${id}.${contentType.split('/')[1]}`,
      byte_size: 1000,
      width: 10,
      height: 10,
      duration_ms: kind === 'video' ? 1000 : null,
      sha256: randomBytes(32),
      storage_key: null,
      created_by: null,
    })
    .execute();
}
const images = (n: number) => Array.from({ length: n }, (_, i) => `img_${i + 1}`);

/** The issues of a refused call (as REST answers it), as { field: message }. */
async function refused(promise: Promise<unknown>, status = 400): Promise<Record<string, string>> {
  try {
    await promise;
  } catch (error) {
    const answer = refusalOf(error);
    assert.ok(answer, String(error));
    assert.equal(answer.status, status, answer.message);
    return Object.fromEntries((answer.issues ?? []).map((i) => [i.field, i.message]));
  }
  assert.fail('expected a refusal');
}

/** REST's 422 idempotency_key_reused. */
const isReused = (answer: ApiError | undefined) => answer?.status === 422 && answer.code === 'idempotency_key_reused';

before(async () => {
  db = await createTestDb();
  media = await tempMediaStore();
  await seedTwoHubs(db);
  for (const platform of SOCIAL_PLATFORMS) await channel(db, 'hub_a', 'ws_a1', chan(platform), platform);
  await channel(db, 'hub_a', 'ws_a1', 'ch_a1_x_expired', 'x', false);
  await channel(db, 'hub_a', 'ws_a2', 'ch_a2_instagram', 'instagram');
  await channel(db, 'hub_b', 'ws_b1', 'ch_b1_instagram', 'instagram');
  for (const id of images(11)) await mediaRow(id, 'ws_a1', 'image');
  await mediaRow('vid_1', 'ws_a1', 'video');
  await mediaRow('vid_2', 'ws_a1', 'video');
  await mediaRow('png_1', 'ws_a1', 'image', 'hub_a', 'image/png');
  await mediaRow('img_a2', 'ws_a2', 'image');
  await mediaRow('img_b1', 'ws_b1', 'image', 'hub_b');
});
after(async () => {
  await db.drop();
  await media.remove();
});

const scheduled = (overrides: Record<string, unknown> = {}) => ({
  text: 'Hello',
  status: 'scheduled',
  scheduledAt: inHours(2),
  channelIds: [chan('facebook')],
  ...overrides,
});

describe('text limits per platform, at the boundary, counted in characters', () => {
  for (const platform of SOCIAL_PLATFORMS) {
    test(`${platform}: ${TEXT_LIMITS[platform]} characters pass, one more is refused`, async () => {
      const limit = TEXT_LIMITS[platform];
      // An emoji is two UTF-16 units but one character: it must count once.
      const exact = `${'a'.repeat(limit - 1)}😀`;
      const mediaIds = ['instagram', 'tiktok'].includes(platform) ? ['img_1'] : [];
      const post = await call('create_post', member(), scheduled({ text: exact, channelIds: [chan(platform)], mediaIds }));
      assert.equal(post.text, exact);
      const issues = await refused(call('create_post', member(), scheduled({ text: `${exact}b`, channelIds: [chan(platform)], mediaIds })));
      assert.deepEqual(Object.keys(issues), ['text']);
      if (platform !== 'facebook')
        assert.match(
          issues.text!,
          new RegExp(`is ${(limit + 1).toLocaleString('en-US')} characters; ${platform} allows ${limit.toLocaleString('en-US')}`),
        );
    });
  }

  test('the strictest target decides, and every platform over its limit is named', async () => {
    const text = 'a'.repeat(1_600);
    const issues = await refused(
      call('create_post', member(), scheduled({ text, channelIds: [chan('facebook'), chan('x'), chan('google_business')] })),
    );
    assert.equal(issues.text, 'is 1,600 characters; x allows 280, google_business allows 1,500');
  });

  test('text may be empty only with media', async () => {
    assert.deepEqual(await refused(call('create_post', member(), scheduled({ text: '  ' }))), {
      text: 'must not be blank when the post has no media',
    });
    const post = await call('create_post', member(), scheduled({ text: '', mediaIds: ['img_1'] }));
    assert.equal(post.text, '');
  });
});

describe('media rules', () => {
  test('up to 10 images or exactly one video, never both', async () => {
    const ten = await call('create_post', member(), scheduled({ mediaIds: images(10) }));
    assert.deepEqual(ten.mediaIds, images(10));
    assert.ok((await refused(call('create_post', member(), scheduled({ mediaIds: images(11) })))).mediaIds);
    const video = await call('create_post', member(), scheduled({ mediaIds: ['vid_1'] }));
    assert.deepEqual(video.mediaIds, ['vid_1']);
    assert.match(
      (await refused(call('create_post', member(), scheduled({ mediaIds: ['img_1', 'vid_1'] })))).mediaIds!,
      /cannot mix images and a video/,
    );
    assert.match((await refused(call('create_post', member(), scheduled({ mediaIds: ['vid_1', 'vid_2'] })))).mediaIds!, /only one video/);
    assert.ok(
      (await refused(call('create_post', member(), scheduled({ mediaIds: ['img_1', 'img_1'] })))).mediaIds,
      'duplicates are refused',
    );
  });

  test('X takes at most 4 images; Instagram and TikTok need media', async () => {
    await call('create_post', member(), scheduled({ channelIds: [chan('x')], mediaIds: images(4) }));
    assert.equal(
      (await refused(call('create_post', member(), scheduled({ channelIds: [chan('x')], mediaIds: images(5) })))).mediaIds,
      'x allows at most 4 images',
    );
    assert.equal(
      (await refused(call('create_post', member(), scheduled({ channelIds: [chan('instagram'), chan('tiktok')] })))).mediaIds,
      'must hold an image or a video: instagram and tiktok posts cannot be text only',
    );
  });
});

describe('the networks’ own rules, checked when the post is made, not when it is due', () => {
  const postCount = async () => Number((await sql<{ n: string }>`SELECT count(*) AS n FROM posts`.execute(db.kysely)).rows[0]!.n);
  const list = (n: number, make: (i: number) => string) => Array.from({ length: n }, (_, i) => make(i)).join(' ');

  test('Instagram: JPEG images only, named by the media, the channel and the rule; a Page takes the PNG', async () => {
    const before = await postCount();
    const issues = await refused(
      call('create_post', member(), scheduled({ channelIds: [chan('facebook'), chan('instagram')], mediaIds: ['img_1', 'png_1'] })),
    );
    assert.deepEqual(issues, {
      'mediaIds.1':
        'Instagram channel ch_a1_instagram (instagram ch_a1_instagram) cannot take it: Instagram takes JPEG images only (this post has image/png): attach the image as a JPEG',
    });
    assert.equal(await postCount(), before, 'nothing was written');
    await call('create_post', member(), scheduled({ channelIds: [chan('facebook')], mediaIds: ['png_1'] }));
  });

  test('Instagram: at most 30 hashtags and 20 @ mentions in a caption; at the limits the post is made', async () => {
    const ig = (text: string) => scheduled({ text, channelIds: [chan('instagram')], mediaIds: ['img_1'] });
    assert.deepEqual(await refused(call('create_post', member(), ig(list(31, (i) => `#tag${i}`)))), {
      text: 'Instagram channel ch_a1_instagram (instagram ch_a1_instagram) cannot take it: An Instagram caption has at most 30 hashtags (this one has 31)',
    });
    assert.match(
      (await refused(call('create_post', member(), ig(list(21, (i) => `@friend${i}`))))).text!,
      /^Instagram channel ch_a1_instagram .* cannot take it: An Instagram caption has at most 20 @ mentions \(this one has 21\)$/,
    );
    await call('create_post', member(), ig(`${list(30, (i) => `#tag${i}`)} ${list(20, (i) => `@friend${i}`)}`));
    // The same hashtags go to a Facebook Page, which sets no such rule.
    await call('create_post', member(), scheduled({ text: list(31, (i) => `#tag${i}`) }));
  });

  test('Business Profile takes photos, not video; drafts are checked as well', async () => {
    for (const status of ['scheduled', 'draft'] as const) {
      const issues = await refused(
        call('create_post', member(), scheduled({ status, channelIds: [chan('google_business')], mediaIds: ['vid_1'] })),
      );
      assert.deepEqual(issues, {
        'mediaIds.0':
          'Google Business Profile channel ch_a1_google_business (google_business ch_a1_google_business) cannot take it: Google Business Profile posts take photos, not video',
      });
    }
    await call('create_post', member(), scheduled({ channelIds: [chan('google_business')], mediaIds: ['img_1'] }));
  });

  test('one rule broken on several channels is one issue naming them all; the post’s own rules come first', async () => {
    await channel(db, 'hub_a', 'ws_a1', 'ch_a1_instagram_2', 'instagram');
    const issues = await refused(
      call(
        'create_post',
        member(),
        scheduled({ channelIds: [chan('instagram'), 'ch_a1_instagram_2', chan('google_business')], mediaIds: ['png_1'] }),
      ),
    );
    assert.deepEqual(issues, {
      'mediaIds.0':
        'Instagram channels ch_a1_instagram (instagram ch_a1_instagram), ch_a1_instagram_2 (instagram ch_a1_instagram_2) cannot take it: Instagram takes JPEG images only (this post has image/png): attach the image as a JPEG',
    });
    // A caption over the length names the length only (one issue per field): its hashtags come up once it is shorter.
    const long = `${list(31, (i) => `#t${i}`)} ${'a'.repeat(2200)}`;
    assert.deepEqual(
      Object.values(
        await refused(call('create_post', member(), scheduled({ text: long, channelIds: [chan('instagram')], mediaIds: ['img_1'] }))),
      ),
      [`is ${[...long].length.toLocaleString('en-US')} characters; instagram allows 2,200`],
    );
  });
});

describe('channels and media must be the post’s workspace’s', () => {
  test('another workspace’s or another hub’s channel, an unknown one: refused alike', async () => {
    for (const foreign of ['ch_a2_instagram', 'ch_b1_instagram', 'ch_nope']) {
      const issues = await refused(
        call('create_post', member(), scheduled({ channelIds: [chan('facebook'), foreign], mediaIds: ['img_1'] })),
      );
      assert.deepEqual(issues, { 'channelIds.1': 'is not a channel of workspace ws_a1' }, foreign);
    }
  });

  test('another workspace’s or hub’s media: refused alike', async () => {
    for (const foreign of ['img_a2', 'img_b1']) {
      assert.deepEqual(await refused(call('create_post', member(), scheduled({ mediaIds: ['img_1', foreign] }))), {
        'mediaIds.1': 'is not a media asset of workspace ws_a1',
      });
    }
  });
});

describe('scheduling', () => {
  test('scheduledAt must be in the future and within 366 days; publishNow means now', async () => {
    assert.ok((await refused(call('create_post', member(), scheduled({ scheduledAt: NOW })))).scheduledAt);
    assert.ok((await refused(call('create_post', member(), scheduled({ scheduledAt: inHours(-1) })))).scheduledAt);
    assert.ok((await refused(call('create_post', member(), scheduled({ scheduledAt: inHours(367 * 24) })))).scheduledAt);
    assert.equal(
      (await refused(call('create_post', member(), scheduled({ scheduledAt: 'tomorrow' })))).scheduledAt,
      'must be an ISO 8601 timestamp with Z or an offset, like 2026-11-02T09:00:00Z, between 1970-01-01 and 9999-12-31',
    );
    const later = await call('create_post', member(), scheduled({ scheduledAt: '2026-11-21T14:30:00+02:00' }));
    assert.equal(later.scheduledAt, '2026-11-21T12:30:00.000Z');
    const now = await call('create_post', member(), scheduled({ scheduledAt: undefined, publishNow: true }));
    assert.equal(now.scheduledAt, NOW);
    assert.equal(now.status, 'scheduled');
    assert.deepEqual(now.deliveries, [
      {
        channelId: chan('facebook'),
        platform: 'facebook',
        status: 'pending',
        externalId: null,
        error: null,
        deliveredAt: null,
        failureKind: null,
        platformMessage: null,
        url: null,
        attemptedAt: null,
      },
    ]);
    assert.ok((await refused(call('create_post', member(), scheduled({ publishNow: true })))).publishNow, 'not with scheduledAt');
    assert.ok((await refused(call('create_post', member(), { text: 'x', status: 'draft', publishNow: true }))).publishNow);
  });

  test('a scheduled post needs a connected channel; a draft needs neither channel nor date', async () => {
    assert.ok((await refused(call('create_post', member(), scheduled({ channelIds: [] })))).channelIds);
    assert.match(
      (await refused(call('create_post', member(), scheduled({ channelIds: ['ch_a1_x_expired'] }))))['channelIds.0']!,
      /disconnected/,
    );
    const draft = await call('create_post', member(), { text: 'Idea', status: 'draft', channelIds: ['ch_a1_x_expired'] });
    assert.equal(draft.status, 'draft');
    assert.equal(draft.scheduledAt, null);
    assert.equal(draft.calendarAt, NOW, 'an undated draft sits at its creation time');
    assert.equal(draft.createdBy, 'usr_a1');
  });
});

describe('tenancy', () => {
  let postId: string;
  before(async () => {
    postId = (await call('create_post', member(), scheduled({ text: 'Only for ws_a1' })))._id;
  });

  test('the workspace’s members and the hub’s admin see it; others get 404', async () => {
    assert.equal((await call('get_post', member(), { id: postId })).text, 'Only for ws_a1');
    assert.equal((await call('get_post', admin(), { id: postId })).workspaceId, 'ws_a1');
    await refused(call('get_post', otherMember(), { id: postId }), 404);
    await refused(call('get_post', stranger(), { id: postId }), 404);
    const lists = await Promise.all([otherMember(), stranger()].map((ctx) => call('list_posts', ctx, { limit: 500 })));
    for (const page of lists) assert.ok(page.data.every((p: { _id: string }) => p._id !== postId));
    assert.deepEqual((await call('list_posts', otherMember(), { workspaceId: 'ws_a1' })).data, [], 'a filter outside the scope is empty');
  });

  test('a member posts only to their workspace; an admin must name one of the hub’s', async () => {
    assert.match((await refused(call('create_post', member(), scheduled({ workspaceId: 'ws_a2' })))).workspaceId!, /active workspace/);
    assert.equal((await call('create_post', member(), scheduled({ workspaceId: 'ws_a1' }))).workspaceId, 'ws_a1');
    assert.match((await refused(call('create_post', admin(), scheduled()))).workspaceId!, /required/);
    assert.equal(
      (await refused(call('create_post', admin(), scheduled({ workspaceId: 'ws_b1', channelIds: ['ch_b1_instagram'] })))).workspaceId,
      'is not a workspace of your hub',
    );
    const byAdmin = await call(
      'create_post',
      admin(),
      scheduled({ workspaceId: 'ws_a2', channelIds: ['ch_a2_instagram'], mediaIds: ['img_a2'] }),
    );
    assert.equal(byAdmin.workspaceId, 'ws_a2');
  });
});

describe('lists', () => {
  let ctx: ReturnType<typeof caller>;
  before(async () => {
    await workspace(db, 'hub_a', 'ws_list');
    await user(db, 'usr_list');
    await channel(db, 'hub_a', 'ws_list', 'ch_list_fb', 'facebook');
    ctx = caller(db, clock, media.store, principal('hub_a', 'ws_list', 'usr_list'));
    for (const h of [30, 5, 5, 10, 48, 1])
      await call('create_post', ctx, scheduled({ text: `in ${h} h`, channelIds: ['ch_list_fb'], scheduledAt: inHours(h) }));
    await call('create_post', ctx, { text: 'undated draft', status: 'draft' });
  });

  test('ordered by (calendarAt, _id), paged by cursor until nextCursor is null', async () => {
    const seen: { _id: string; calendarAt: string }[] = [];
    let cursor: string | undefined;
    do {
      const page = await call('list_posts', ctx, { limit: 3, ...(cursor ? { cursor } : {}) });
      assert.ok(page.data.length <= 3);
      seen.push(...page.data);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    assert.equal(seen.length, 7);
    const keys = seen.map((p) => `${p.calendarAt}|${p._id}`);
    assert.deepEqual(keys, [...keys].sort(), 'ascending');
    assert.equal(new Set(seen.map((p) => p._id)).size, 7, 'nothing twice');
  });

  test('from/to (dates cover whole days), status and bad parameters', async () => {
    const texts = async (input: Record<string, unknown>) =>
      (await call('list_posts', ctx, input)).data.map((p: { text: string }) => p.text);
    assert.deepEqual(await texts({ from: inHours(5), to: inHours(10) }), ['in 5 h', 'in 5 h', 'in 10 h']);
    assert.deepEqual(await texts({ from: '2026-11-22', to: '2026-11-22' }), ['in 30 h']);
    assert.deepEqual(await texts({ status: 'draft' }), ['undated draft']);
    assert.deepEqual(Object.keys(await refused(call('list_posts', ctx, { limit: 0, status: 'live', from: 'soon' }))).sort(), [
      'from',
      'limit',
      'status',
    ]);
    assert.deepEqual(Object.keys(await refused(call('list_posts', ctx, { from: inHours(5), to: inHours(1) }))), ['to']);
    const mediaCursor = Buffer.from(JSON.stringify(['v1', 'media', '2026-11-21T12:00:00.000000Z', 'x'])).toString('base64url');
    assert.deepEqual(Object.keys(await refused(call('list_posts', ctx, { cursor: mediaCursor }))), ['cursor'], 'another list’s cursor');
  });
});

describe('Idempotency-Key', () => {
  const keyed = (key: string, who = 'usr_a1', clientId = 'client_test') =>
    caller(db, clock, media.store, principal('hub_a', 'ws_a1', who, clientId), key);
  const countPosts = async (text: string) =>
    Number((await sql<{ n: string }>`SELECT count(*) AS n FROM posts WHERE text = ${text}`.execute(db.kysely)).rows[0]!.n);

  test('the same key and body replays the first post and creates nothing', async () => {
    const body = scheduled({ text: 'idempotent 1' });
    const first = keyed('key-1');
    const created = await call('create_post', first, body);
    assert.equal(first.headers['Idempotent-Replayed'], undefined);
    const again = keyed('key-1');
    // Key order in the body does not matter.
    const replay = await call('create_post', again, Object.fromEntries(Object.entries(body).reverse()));
    assert.deepEqual(replay, created);
    assert.equal(again.headers['Idempotent-Replayed'], 'true');
    assert.equal(await countPosts('idempotent 1'), 1);
  });

  test('the same key with another body is refused; other users and clients have their own keys', async () => {
    await call('create_post', keyed('key-2'), scheduled({ text: 'idempotent 2' }));
    await assert.rejects(call('create_post', keyed('key-2'), scheduled({ text: 'idempotent 2b' })), (e) => isReused(refusalOf(e)));
    await call('create_post', keyed('key-2', 'usr_a2'), scheduled({ text: 'idempotent 2' }));
    await call('create_post', keyed('key-2', 'usr_a1', 'other_client'), scheduled({ text: 'idempotent 2' }));
    assert.equal(await countPosts('idempotent 2'), 3);
    assert.equal(await countPosts('idempotent 2b'), 0);
  });

  test("a key reused under another workspace's token is refused, never a replay of the first workspace's post", async () => {
    const draft = { text: 'idempotent across workspaces', status: 'draft' };
    await call('create_post', caller(db, clock, media.store, principal('hub_a', 'ws_a1', 'usr_a1'), 'key-ws'), draft);
    const elsewhere = caller(db, clock, media.store, principal('hub_a', 'ws_a2', 'usr_a1'), 'key-ws');
    await assert.rejects(call('create_post', elsewhere, draft), (e) => isReused(refusalOf(e)));
    assert.equal(elsewhere.headers['Idempotent-Replayed'], undefined);
    assert.equal(await countPosts('idempotent across workspaces'), 1);
  });

  test('concurrent retries create one post, and all get it', async () => {
    const body = scheduled({ text: 'idempotent 3' });
    const results = await Promise.all(Array.from({ length: 6 }, () => call('create_post', keyed('key-3'), body)));
    assert.equal(new Set(results.map((r) => r._id)).size, 1);
    assert.equal(await countPosts('idempotent 3'), 1);
  });

  test('a refused request does not use up its key; keys expire after 24 hours', async () => {
    await refused(call('create_post', keyed('key-4'), scheduled({ text: 'idempotent 4', scheduledAt: inHours(-1) })));
    const ok = await call('create_post', keyed('key-4'), scheduled({ text: 'idempotent 4' }));
    clock.advance(24 * HOUR);
    try {
      const later = await call('create_post', keyed('key-4'), scheduled({ text: 'idempotent 4', scheduledAt: inHours(30) }));
      assert.notEqual(later._id, ok._id, 'an expired key starts afresh');
    } finally {
      clock.set(NOW);
    }
  });

  test('a malformed key is a 400 naming the header', async () => {
    for (const key of ['', 'has space', 'x'.repeat(256), 'é']) {
      assert.deepEqual(Object.keys(await refused(call('create_post', keyed(key), scheduled()))), ['Idempotency-Key'], JSON.stringify(key));
    }
  });
});

test('a published post cannot be edited, even by SQL', async () => {
  const post = await call('create_post', member(), scheduled({ text: 'to publish' }));
  await db.kysely
    .updateTable('posts')
    .set({ status: 'publishing', claimed_at: NOW, claimed_by: 'test' })
    .where('id', '=', post._id)
    .execute();
  await db.kysely
    .updateTable('posts')
    .set({ status: 'published', published_at: NOW, claimed_at: null, claimed_by: null })
    .where('id', '=', post._id)
    .execute();
  await assert.rejects(
    db.kysely.updateTable('posts').set({ text: 'edited' }).where('id', '=', post._id).execute(),
    /published and cannot be edited/,
  );
  assert.equal((await call('get_post', member(), { id: post._id })).text, 'to publish');
});
