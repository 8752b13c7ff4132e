import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { sql } from 'kysely';
import { connect, type Db } from '../../src/db/database.ts';
import type { DeliveryStatus, SocialPlatform } from '../../src/db/schema.ts';
import { MediaUrlSigner } from '../../src/domain/media/media-url.ts';
import {
  ChannelConnectors,
  DeliveryUnconfirmed,
  SandboxConnector,
  type Connector,
  type OutgoingChannel,
  type OutgoingPost,
  type Publication,
} from '../../src/domain/posts/connector.ts';
import { postRows } from '../../src/domain/posts/post.repository.ts';
import { claimDue, markPublishing, reclaimExpired, recordOutcome, recordPublished } from '../../src/domain/posts/publisher.repository.ts';
import { createPublisher, postOutcome, type PublisherEvent, type PublisherOptions } from '../../src/domain/posts/publisher.ts';
import { PlatformError, PlatformThrottled, PublishNotReady } from '../../src/integrations/ad-platform.ts';
import { FixedClock } from '../../src/platform/clock.ts';
import { Sealer, secretsKey } from '../../src/platform/sealing.ts';
import { publishingHub } from '../support/content-world.ts';
import { createTestDb, type TestDb } from '../support/db.ts';

// The publisher against a real PostgreSQL, each delivery state reached through a scripted
// connector (the Connector interface, answering as told): published; failed with the network's
// kind, words and code; throttled (pending again, nothing published); unconfirmed (thrown, or a
// call that hangs past the timeout), then reconciled by find — found, none (sent again only then),
// or cannot tell (backoff, then "could not confirm", never a blind resend). Plus two loops on two
// pools publishing exactly once, crash leftovers, lost leases, the connector registry with sealed
// tokens, and the post outcome rule.

const NOW = '2026-11-21T12:00:00.000Z';
const MINUTE = 60_000;
const SETTLE = 2 * MINUTE;
const SKEW = 5 * MINUTE;
const BACKOFF = [MINUTE, 5 * MINUTE, 15 * MINUTE];
let db: TestDb;
const PLATFORMS: SocialPlatform[] = ['facebook', 'linkedin', 'google_business'];

before(async () => {
  db = await createTestDb();
  await publishingHub(db, PLATFORMS);
});
after(async () => {
  await db.drop();
});

/** Scheduled posts written straight to the tables (the API path has its own tests). */
async function schedule(ids: string[], options: { workspace?: number; at?: string; channels?: string[] } = {}): Promise<void> {
  const rows = ids.map((id, i) => {
    const w = options.workspace ?? (i % 3) + 1;
    return postRows({
      id,
      hubId: 'hub_a',
      workspaceId: `ws_${w}`,
      text: `post ${id}`,
      status: 'scheduled',
      scheduledAt: options.at ?? new Date(Date.parse(NOW) - MINUTE).toISOString(),
      createdBy: null,
      channelIds: options.channels ?? PLATFORMS.map((p) => `ch_${w}_${p}`),
      mediaIds: [],
    });
  });
  for (let i = 0; i < rows.length; i += 500) {
    const chunk = rows.slice(i, i + 500);
    await db.kysely
      .insertInto('posts')
      .values(chunk.map((r) => r.post))
      .execute();
    await db.kysely
      .insertInto('post_deliveries')
      .values(chunk.flatMap((r) => r.deliveries))
      .execute();
  }
}

const post = (id: string) => db.kysely.selectFrom('posts').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const deliveries = (id: string) =>
  db.kysely.selectFrom('post_deliveries').selectAll().where('post_id', '=', id).orderBy('position').execute();
const channelRow = (id: string) => db.kysely.selectFrom('social_channels').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
/** Posts a test leaves open, removed so that later rounds do not claim them. */
const forget = async (ids: string[]) => {
  await db.kysely.deleteFrom('post_deliveries').where('post_id', 'in', ids).execute();
  await db.kysely.deleteFrom('posts').where('id', 'in', ids).execute();
};
const sandboxCalls = (id: string) => db.kysely.selectFrom('sandbox_publications').selectAll().where('post_id', '=', id).execute();

/** `{ stopsWith }`: runs until its signal aborts (the publisher's deadline), then throws that error. */
type Step = Publication | Error | 'hang' | { stopsWith: Error } | null;

/**
 * A connector that answers as scripted, per channel (or per `post/channel`, looked up first):
 * each publish (and find) takes the next step of its script — a publication, an error to throw, 'hang' (never answers), an
 * error to throw once the call is given up, or (find only) null for "none". It records every call, with the channel (secret
 * included), what an earlier attempt prepared, and `since`.
 */
class ScriptedConnector implements Connector {
  publishes: {
    postId: string;
    channel: OutgoingChannel;
    media: OutgoingPost['media'];
    signal: AbortSignal | undefined;
    prepared: string | undefined;
  }[] = [];
  finds: { postId: string; channelId: string; since: Date }[] = [];
  readonly #publish = new Map<string, Step[]>();
  readonly #find = new Map<string, Step[]>();

  onPublish(channelId: string, ...steps: Step[]): this {
    this.#publish.set(channelId, [...(this.#publish.get(channelId) ?? []), ...steps]);
    return this;
  }
  onFind(channelId: string, ...steps: Step[]): this {
    this.#find.set(channelId, [...(this.#find.get(channelId) ?? []), ...steps]);
    return this;
  }

  static next(scripts: Map<string, Step[]>, p: OutgoingPost, channelId: string): Step | undefined {
    return (scripts.get(`${p.id}/${channelId}`) ?? scripts.get(channelId))?.shift();
  }

  static async answer(step: Step | undefined, signal?: AbortSignal): Promise<Publication | null> {
    if (step === undefined) throw new Error('the script has no step left for this call');
    if (step === 'hang') return new Promise(() => {});
    if (step !== null && 'stopsWith' in step)
      return new Promise((_, reject) => signal!.addEventListener('abort', () => reject(step.stopsWith), { once: true }));
    if (step instanceof Error) throw step;
    return step;
  }

  async publish(p: OutgoingPost, channel: OutgoingChannel, signal?: AbortSignal, prepared?: string): Promise<Publication> {
    this.publishes.push({ postId: p.id, channel, media: p.media, signal, prepared });
    const answer = await ScriptedConnector.answer(ScriptedConnector.next(this.#publish, p, channel.id), signal);
    if (answer === null) throw new Error('publish cannot answer none');
    return answer;
  }

  async find(p: OutgoingPost, channel: OutgoingChannel, since: Date): Promise<Publication | null> {
    this.finds.push({ postId: p.id, channelId: channel.id, since });
    return ScriptedConnector.answer(ScriptedConnector.next(this.#find, p, channel.id));
  }
}

function publisherWith(clock: FixedClock, connectors: Connector | ChannelConnectors, extra: Partial<PublisherOptions> = {}) {
  return createPublisher({
    db,
    clock,
    connectors,
    intervalMs: 10,
    batchSize: 10,
    publishTimeoutMs: 100,
    settleMs: SETTLE,
    skewMs: SKEW,
    checkBackoffMs: BACKOFF,
    ...extra,
  });
}

test('the post outcome rule: publishing while any delivery is open, then failed if any failed, else published', () => {
  const states: DeliveryStatus[] = ['pending', 'publishing', 'published', 'failed', 'unconfirmed'];
  fc.assert(
    fc.property(fc.array(fc.constantFrom(...states), { maxLength: 12 }), (statuses) => {
      const outcome = postOutcome(statuses);
      const open = statuses.filter((s) => s === 'pending' || s === 'publishing' || s === 'unconfirmed').length;
      if (open > 0) return outcome === 'publishing';
      if (statuses.includes('failed')) return outcome === 'failed';
      return outcome === 'published' && statuses.every((s) => s === 'published');
    }),
  );
  assert.equal(postOutcome(['published', 'unconfirmed', 'failed']), 'publishing', 'an unconfirmed delivery keeps the post publishing');
});

test('two publisher loops on two pools publish 300 due posts to every channel exactly once', async () => {
  const clock = new FixedClock(NOW);
  const ids = Array.from({ length: 300 }, (_, i) => `post_x_${String(i).padStart(3, '0')}`);
  await schedule(ids);
  await schedule(['post_x_future'], { at: new Date(Date.parse(NOW) + 24 * 60 * MINUTE).toISOString() });
  const pools: Db[] = [connect(db.url, { max: 4 }), connect(db.url, { max: 4 })];
  // A little latency per call, so the two loops really interleave.
  const jittery = (inner: Connector): Connector => ({
    publish: async (p, c) => {
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 2));
      return inner.publish(p, c);
    },
    find: (p, c, since) => inner.find(p, c, since),
  });
  const errors: unknown[] = [];
  const publishers = pools.map((pool) =>
    createPublisher({
      db: pool,
      clock,
      connectors: jittery(new SandboxConnector(pool, clock)),
      intervalMs: 5,
      batchSize: 7,
      onError: (e) => errors.push(e),
    }),
  );
  try {
    for (const p of publishers) p.start();
    const deadline = Date.now() + 60_000;
    for (;;) {
      const { rows } = await sql<{
        n: number;
      }>`SELECT count(*)::int AS n FROM posts WHERE status IN ('scheduled', 'publishing') AND id LIKE 'post_x_%' AND id <> 'post_x_future'`.execute(
        db.kysely,
      );
      if (rows[0]!.n === 0) break;
      assert.ok(Date.now() < deadline, 'published within a minute');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    await Promise.all(publishers.map((p) => p.stop()));
    await Promise.all(pools.map((p) => p.close()));
  }
  assert.deepEqual(errors, []);

  const statuses = await sql<{
    status: string;
    n: number;
  }>`SELECT status, count(*)::int AS n FROM posts WHERE id LIKE 'post_x_%' GROUP BY status ORDER BY status`.execute(db.kysely);
  assert.deepEqual(
    statuses.rows,
    [
      { status: 'published', n: 300 },
      { status: 'scheduled', n: 1 },
    ],
    'all due posts published, the future one waits',
  );
  const calls = await sql<{ n: number; distinct_pairs: number }>`
    SELECT count(*)::int AS n, count(DISTINCT (post_id, channel_id))::int AS distinct_pairs
      FROM sandbox_publications WHERE post_id LIKE 'post_x_%'`.execute(db.kysely);
  assert.deepEqual(calls.rows[0], { n: 900, distinct_pairs: 900 }, 'every channel of every post was published exactly once');
  const mismatched = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM post_deliveries d
     WHERE d.post_id LIKE 'post_x_%' AND d.post_id <> 'post_x_future'
       AND NOT (d.status = 'published' AND d.delivered_at = ${NOW}::timestamptz AND d.attempt_started_at = ${NOW}::timestamptz
                AND d.external_id = (SELECT s.id FROM sandbox_publications s WHERE s.post_id = d.post_id AND s.channel_id = d.channel_id))`.execute(
    db.kysely,
  );
  assert.equal(mismatched.rows[0]!.n, 0, 'each delivery records the publication the platform made');
  const published = await post('post_x_000');
  assert.deepEqual(
    [published.published_at?.toISOString(), published.error, published.claimed_at, published.claimed_by, published.attempts],
    [NOW, null, null, null, 1],
  );
  assert.equal((await channelRow('ch_1_facebook')).last_published_at?.toISOString(), NOW, 'the channel shows its last publish');
});

test('a refusal fails its delivery with the kind, the network’s words and code, and shows on the channel; a success clears it', async () => {
  const clock = new FixedClock(NOW);
  const connector = new ScriptedConnector().onPublish('ch_1_facebook', { externalId: 'fb_1', url: 'https://facebook.test/fb_1' }).onPublish(
    'ch_1_linkedin',
    new PlatformError('missing_permission', 'LinkedIn refused the post', {
      platformMessage: 'Not enough permissions',
      platformCode: '403',
    }),
  );
  await schedule(['post_fail'], { workspace: 1 });
  await db.kysely.updateTable('social_channels').set({ connected: false }).where('id', '=', 'ch_1_google_business').execute();
  try {
    assert.equal(await publisherWith(clock, connector).runOnce(), 1);
  } finally {
    await db.kysely.updateTable('social_channels').set({ connected: true }).where('id', '=', 'ch_1_google_business').execute();
  }
  const failed = await post('post_fail');
  assert.deepEqual([failed.status, failed.published_at, failed.claimed_by, failed.retry_at], ['failed', null, null, null]);
  assert.equal(
    failed.error,
    'linkedin channel linkedin ch_1_linkedin: LinkedIn refused the post; google_business channel google_business ch_1_google_business: the channel is disconnected; reconnect it and schedule the post again',
  );
  assert.deepEqual(
    (await deliveries('post_fail')).map((d) => [
      d.channel_id,
      d.status,
      d.external_id,
      d.url,
      d.failure_kind,
      d.platform_message,
      d.platform_code,
    ]),
    [
      ['ch_1_facebook', 'published', 'fb_1', 'https://facebook.test/fb_1', null, null, null],
      ['ch_1_linkedin', 'failed', null, null, 'missing_permission', 'Not enough permissions', '403'],
      ['ch_1_google_business', 'failed', null, null, 'needs_reconnect', null, null],
    ],
  );
  assert.deepEqual(
    connector.publishes.map((c) => c.channel.id),
    ['ch_1_facebook', 'ch_1_linkedin'],
    'nothing is sent to a disconnected channel',
  );
  const linkedin = await channelRow('ch_1_linkedin');
  assert.deepEqual(
    [linkedin.failure_kind, linkedin.failure_message, linkedin.failure_code, linkedin.failing_since?.toISOString()],
    ['missing_permission', 'Not enough permissions', '403', NOW],
  );

  // The next success on that channel clears its failure and sets its last publish.
  clock.advance(MINUTE);
  await schedule(['post_heal'], { workspace: 1, channels: ['ch_1_linkedin'], at: NOW });
  await publisherWith(clock, new ScriptedConnector().onPublish('ch_1_linkedin', { externalId: 'li_1' })).runOnce();
  const healed = await channelRow('ch_1_linkedin');
  assert.deepEqual(
    [healed.failure_kind, healed.failure_message, healed.failing_since, healed.last_published_at?.toISOString()],
    [null, null, null, clock.now().toISOString()],
  );
});

test('a throttled delivery published nothing: pending again, the post waits out retry-after, then publishes', async () => {
  const clock = new FixedClock(NOW);
  const connector = new ScriptedConnector()
    .onPublish('ch_2_facebook', new PlatformThrottled(90_000, 'throttled', 'Application request limit reached'), { externalId: 'fb_t' })
    .onPublish('ch_2_linkedin', { externalId: 'li_t' });
  await schedule(['post_throttle'], { workspace: 2, channels: ['ch_2_facebook', 'ch_2_linkedin'] });
  const publisher = publisherWith(clock, connector);
  await publisher.runOnce();
  let p = await post('post_throttle');
  assert.deepEqual(
    [p.status, p.retry_at?.toISOString(), p.claimed_by],
    ['publishing', new Date(Date.parse(NOW) + 90_000).toISOString(), null],
  );
  assert.deepEqual(
    (await deliveries('post_throttle')).map((d) => [d.status, d.attempt_started_at, d.failure_kind, d.platform_message]),
    [
      ['pending', null, 'throttled', 'Application request limit reached'],
      ['published', new Date(NOW), null, null],
    ],
  );
  clock.advance(60_000);
  assert.equal(await publisher.runOnce(), 0, 'not before retry-after');
  clock.advance(31_000);
  assert.equal(await publisher.runOnce(), 1);
  p = await post('post_throttle');
  assert.deepEqual([p.status, p.attempts], ['published', 1], 'a wait is not a crash: it does not count as an attempt');
  assert.deepEqual(
    connector.publishes.map((c) => c.channel.id),
    ['ch_2_facebook', 'ch_2_linkedin', 'ch_2_facebook'],
  );
});

test('a transient failure published nothing: pending again after a backoff (the network’s 5xx, then unreachable), then published once', async () => {
  const clock = new FixedClock(NOW);
  const connector = new ScriptedConnector()
    .onPublish(
      'ch_2_facebook',
      new PlatformError('platform_error', 'Meta refused the post with a temporary error (2)', {
        platformMessage: 'An unexpected error has occurred. Please retry your request later.',
        platformCode: '2',
      }),
      new PlatformError('unreachable', 'Meta could not be reached for the post (ECONNREFUSED)'),
      { externalId: 'fb_retried' },
    )
    .onPublish('ch_2_linkedin', { externalId: 'li_now' });
  await schedule(['post_transient'], { workspace: 2, channels: ['ch_2_facebook', 'ch_2_linkedin'] });
  const publisher = publisherWith(clock, connector, { retryBackoffMs: [MINUTE, 5 * MINUTE, 15 * MINUTE] });
  await publisher.runOnce();
  const row = async () => {
    const [d] = await deliveries('post_transient');
    const p = await post('post_transient');
    return [
      p.status,
      p.retry_at && (p.retry_at.getTime() - clock.now().getTime()) / MINUTE,
      d!.status,
      d!.attempt_started_at,
      d!.failure_kind,
      d!.platform_message,
      d!.platform_code,
      d!.retries,
      d!.error,
    ];
  };
  assert.deepEqual(await row(), [
    'publishing',
    1,
    'pending',
    null,
    'platform_error',
    'An unexpected error has occurred. Please retry your request later.',
    '2',
    1,
    null,
  ]);
  assert.equal((await channelRow('ch_2_facebook')).failure_kind, null, 'a retry is not a failure of the channel');
  clock.advance(MINUTE - 1);
  assert.equal(await publisher.runOnce(), 0, 'not before the backoff');
  clock.advance(1);
  assert.equal(await publisher.runOnce(), 1);
  assert.deepEqual(await row(), [
    'publishing',
    5,
    'pending',
    null,
    'unreachable',
    'Meta could not be reached for the post (ECONNREFUSED)',
    null,
    2,
    null,
  ]);
  clock.advance(5 * MINUTE);
  assert.equal(await publisher.runOnce(), 1);
  const [d, li] = await deliveries('post_transient');
  assert.deepEqual(
    [d!.status, d!.external_id, d!.failure_kind, d!.platform_message, d!.retries, li!.status],
    ['published', 'fb_retried', null, null, 2, 'published'],
  );
  const p = await post('post_transient');
  assert.deepEqual([p.status, p.attempts], ['published', 1], 'a backoff is not a crash: it does not count as an attempt');
  assert.deepEqual(
    connector.publishes.map((c) => c.channel.id),
    ['ch_2_facebook', 'ch_2_linkedin', 'ch_2_facebook', 'ch_2_facebook'],
  );
});

test('transient failures are retried a bounded number of times, then the delivery fails with the network’s words', async () => {
  const clock = new FixedClock(NOW);
  const down = () =>
    new PlatformError('platform_error', 'Business Profile refused the new post (INTERNAL)', {
      platformMessage: 'Internal error encountered.',
      platformCode: 'INTERNAL',
    });
  const connector = new ScriptedConnector().onPublish('ch_3_google_business', down(), down(), down(), { externalId: 'never' });
  await schedule(['post_down'], { workspace: 3, channels: ['ch_3_google_business'] });
  const publisher = publisherWith(clock, connector, { retryBackoffMs: [MINUTE, 2 * MINUTE] });
  const seen: [string, number, number | null][] = [];
  for (let i = 0; i < 3; i++) {
    assert.equal(await publisher.runOnce(), 1);
    const p = await post('post_down');
    const [d] = await deliveries('post_down');
    seen.push([d!.status, d!.retries, p.retry_at && (p.retry_at.getTime() - clock.now().getTime()) / MINUTE]);
    if (p.retry_at) clock.set(p.retry_at);
  }
  assert.deepEqual(seen, [
    ['pending', 1, 1],
    ['pending', 2, 2],
    ['failed', 2, null],
  ]);
  assert.equal(connector.publishes.length, 3, 'the first send and two retries');
  const [d] = await deliveries('post_down');
  assert.deepEqual(
    [d!.failure_kind, d!.platform_message, d!.platform_code, d!.error],
    [
      'platform_error',
      'Internal error encountered.',
      'INTERNAL',
      'Business Profile refused the new post (INTERNAL) (sent 3 times; nothing was published)',
    ],
  );
  assert.equal((await post('post_down')).status, 'failed');
  const channel = await channelRow('ch_3_google_business');
  assert.deepEqual([channel.failure_kind, channel.failure_message], ['platform_error', 'Internal error encountered.']);
});

test('a send that may have been made is never retried on the backoff; re-sends after lookups that found none count as retries', async () => {
  const clock = new FixedClock(NOW);
  const connector = new ScriptedConnector()
    .onPublish('ch_1_linkedin', new DeliveryUnconfirmed('no answer after the request was written'), new DeliveryUnconfirmed('again'))
    .onFind('ch_1_linkedin', null, null);
  await schedule(['post_never_lands'], { workspace: 1, channels: ['ch_1_linkedin'] });
  const publisher = publisherWith(clock, connector, { retryBackoffMs: [MINUTE] });
  await publisher.runOnce();
  assert.deepEqual(
    (await deliveries('post_never_lands')).map((d) => [d.status, d.retries]),
    [['unconfirmed', 0]],
  );
  clock.advance(MINUTE);
  assert.equal(await publisher.runOnce(), 0, 'an unconfirmed send waits for its lookup, not for a retry backoff');
  clock.advance(SETTLE - MINUTE);
  await publisher.runOnce();
  assert.deepEqual(
    (await deliveries('post_never_lands')).map((d) => [d.status, d.retries]),
    [['unconfirmed', 1]],
    'none found: sent again, as a retry',
  );
  clock.advance(SETTLE);
  await publisher.runOnce();
  const [d] = await deliveries('post_never_lands');
  assert.deepEqual([d!.status, d!.failure_kind, d!.retries], ['failed', 'platform_error', 1]);
  assert.equal(
    d!.error,
    'sent 2 times to the linkedin channel without an answer that confirmed it, and the lookups found no such post: nothing was published',
  );
  assert.deepEqual([connector.publishes.length, connector.finds.length], [2, 2]);
});

test('DeliveryUnconfirmed: unconfirmed, looked up only after the settle delay; found: published with that id, never sent again', async () => {
  const clock = new FixedClock(NOW);
  const connector = new ScriptedConnector()
    .onPublish('ch_3_facebook', new DeliveryUnconfirmed('the connection broke after the request was written'))
    .onFind('ch_3_facebook', { externalId: 'fb_found', url: 'https://facebook.test/fb_found' });
  await schedule(['post_unconf'], { workspace: 3, channels: ['ch_3_facebook'] });
  const publisher = publisherWith(clock, connector);
  await publisher.runOnce();
  let p = await post('post_unconf');
  assert.deepEqual([p.status, p.retry_at?.toISOString()], ['publishing', new Date(Date.parse(NOW) + SETTLE).toISOString()]);
  let [d] = await deliveries('post_unconf');
  assert.deepEqual([d!.status, d!.failure_kind, d!.attempt_started_at?.toISOString()], ['unconfirmed', 'no_answer', NOW]);

  clock.advance(SETTLE - 1);
  assert.equal(await publisher.runOnce(), 0, 'the lists have not settled yet');
  clock.advance(1);
  assert.equal(await publisher.runOnce(), 1);
  assert.deepEqual(connector.finds, [{ postId: 'post_unconf', channelId: 'ch_3_facebook', since: new Date(Date.parse(NOW) - SKEW) }]);
  assert.equal(connector.publishes.length, 1, 'never sent again');
  p = await post('post_unconf');
  [d] = await deliveries('post_unconf');
  assert.deepEqual([p.status, d!.status, d!.external_id, d!.url], ['published', 'published', 'fb_found', 'https://facebook.test/fb_found']);
});

test('a call that hangs past the timeout is unconfirmed; find says none after the settle delay: sent again, once', async () => {
  const clock = new FixedClock(NOW);
  const connector = new ScriptedConnector().onPublish('ch_3_linkedin', 'hang', { externalId: 'li_second' }).onFind('ch_3_linkedin', null);
  await schedule(['post_hang'], { workspace: 3, channels: ['ch_3_linkedin'] });
  const events: PublisherEvent[] = [];
  const publisher = publisherWith(clock, connector, { onEvent: (e) => events.push(e) });
  await publisher.runOnce();
  assert.deepEqual(
    (await deliveries('post_hang')).map((d) => [d.status, d.failure_kind]),
    [['unconfirmed', 'no_answer']],
  );
  clock.advance(SETTLE);
  await publisher.runOnce();
  assert.deepEqual([connector.finds.length, connector.publishes.length], [1, 2]);
  const [d] = await deliveries('post_hang');
  assert.deepEqual(
    [d!.status, d!.external_id, d!.attempt_started_at?.toISOString()],
    ['published', 'li_second', clock.now().toISOString()],
    'the second attempt is a new attempt',
  );
  assert.equal((await post('post_hang')).status, 'published');
  // What the operator's log says, in order: no answer, then the lookup found none and sent it again.
  const ref = { postId: 'post_hang', channelId: 'ch_3_linkedin', platform: 'linkedin' };
  assert.deepEqual(events, [
    { kind: 'unconfirmed', ...ref, reason: 'the network did not answer within 0.1 s' },
    { kind: 'reconciled', ...ref, outcome: 'sent_again' },
  ]);
});

test('a call given up at its timeout is told so: its signal is aborted, so nothing of that attempt leaves before the lookup', async () => {
  const clock = new FixedClock(NOW);
  const connector = new ScriptedConnector().onPublish('ch_2_facebook', 'hang').onPublish('ch_2_linkedin', { externalId: 'li_quick' });
  await schedule(['post_abort'], { workspace: 2, channels: ['ch_2_facebook', 'ch_2_linkedin'] });
  await publisherWith(clock, ChannelConnectors.only(connector))
    .runOnce()
    .catch(() => undefined);
  const [hung, quick] = connector.publishes;
  assert.equal(hung!.signal?.aborted, true, 'the hung call was aborted at the timeout');
  assert.match(String(hung!.signal?.reason), /did not answer within 0.1 s/);
  assert.equal(quick!.signal?.aborted, false, 'an answered call is left alone');
  assert.deepEqual(
    (await deliveries('post_abort')).map((d) => d.status),
    ['unconfirmed', 'published'],
  );
  // Out of the later tests' rounds (its lookup would be due with theirs).
  await db.kysely.deleteFrom('post_deliveries').where('post_id', '=', 'post_abort').execute();
  await db.kysely.deleteFrom('posts').where('id', '=', 'post_abort').execute();
});

test('the settle delay must outlast the publish timeout: a lookup comes after anything an attempt could send', () => {
  assert.throws(
    () => publisherWith(new FixedClock(NOW), new ScriptedConnector(), { publishTimeoutMs: SETTLE }),
    /the settle delay \(120000 ms\) must be longer than the publish timeout \(120000 ms\)/,
  );
});

test('a lookup whose match is a twin post’s publication (same text, same channel) cannot tell: never taken, never sent again', async () => {
  const clock = new FixedClock(NOW);
  const connector = new ScriptedConnector()
    .onPublish('post_twin_a/ch_3_facebook', new DeliveryUnconfirmed('socket hang up'))
    .onPublish('post_twin_b/ch_3_facebook', { externalId: 'fb_twin_b' })
    .onFind('post_twin_a/ch_3_facebook', { externalId: 'fb_twin_b' }, { externalId: 'fb_twin_b' }, { externalId: 'fb_twin_b' });
  await schedule(['post_twin_a', 'post_twin_b'], { workspace: 3, channels: ['ch_3_facebook'] });
  const publisher = publisherWith(clock, connector);
  await publisher.runOnce();
  assert.equal((await deliveries('post_twin_b'))[0]!.external_id, 'fb_twin_b');
  clock.advance(SETTLE);
  for (let i = 0; i < BACKOFF.length; i++) {
    assert.equal(await publisher.runOnce(), 1);
    const p = await post('post_twin_a');
    if (p.retry_at) clock.set(p.retry_at);
  }
  const [a] = await deliveries('post_twin_a');
  assert.deepEqual([a!.status, a!.external_id, a!.failure_kind, a!.checks], ['failed', null, 'not_confirmed', BACKOFF.length]);
  assert.equal(connector.finds.length, BACKOFF.length);
  assert.deepEqual(
    connector.publishes.map((c) => c.postId).sort(),
    ['post_twin_a', 'post_twin_b'],
    'looked up, never sent again on a guess',
  );
});

test('twin posts both unconfirmed, looked up at once, both matching the one publication: one takes it, the other cannot tell', async () => {
  const clock = new FixedClock(NOW);
  const attempt = new Date(Date.parse(NOW) - 10 * MINUTE);
  const ids = ['post_twin_c', 'post_twin_d'];
  await schedule(ids, { workspace: 3, channels: ['ch_3_facebook'] });
  await db.kysely
    .updateTable('posts')
    .set({ status: 'publishing', claimed_at: null, claimed_by: null, retry_at: new Date(Date.parse(NOW) - 1_000) })
    .where('id', 'in', ids)
    .execute();
  await db.kysely
    .updateTable('post_deliveries')
    .set({ status: 'unconfirmed', attempt_started_at: attempt, failure_kind: 'no_answer' })
    .where('post_id', 'in', ids)
    .execute();
  // Both lookups answer together: the network has one post with their text.
  let release!: () => void;
  const together = new Promise<void>((resolve) => (release = resolve));
  let lookups = 0;
  const connector: Connector = {
    publish: async () => {
      throw new Error('nothing may be sent');
    },
    find: async () => {
      if (++lookups === 2) release();
      await together;
      return { externalId: 'fb_the_one' };
    },
  };
  await publisherWith(clock, connector, { batchSize: 10 }).runOnce();
  const rows = (await Promise.all(ids.map((id) => deliveries(id)))).map(([d]) => [d!.status, d!.external_id, d!.checks]);
  assert.deepEqual(
    rows.sort(),
    [
      ['published', 'fb_the_one', 0],
      ['unconfirmed', null, 1],
    ],
    'one publication, one delivery',
  );
  await forget(ids);
});

test('a post with one channel refused and another still waiting stays publishing, without an error; the round’s other posts are written too', async () => {
  const clock = new FixedClock(NOW);
  await schedule(['post_mixed', 'post_calm'], { workspace: 3, channels: ['ch_3_facebook', 'ch_3_linkedin'] });
  const connector = new ScriptedConnector()
    .onPublish('post_mixed/ch_3_facebook', new PlatformError('invalid_request', 'The post was refused'))
    .onPublish('post_mixed/ch_3_linkedin', new PlatformThrottled(60_000, 'throttled', 'slow down'))
    .onPublish('post_calm/ch_3_facebook', { externalId: 'fb_calm' })
    .onPublish('post_calm/ch_3_linkedin', { externalId: 'li_calm' });
  const errors: unknown[] = [];
  await publisherWith(clock, connector, { onError: (e) => errors.push(e) }).runOnce();
  assert.deepEqual(errors, []);
  const mixed = await post('post_mixed');
  assert.deepEqual([mixed.status, mixed.error, mixed.claimed_by], ['publishing', null, null]);
  assert.deepEqual(
    (await deliveries('post_mixed')).map((d) => [d.status, d.failure_kind]),
    [
      ['failed', 'invalid_request'],
      ['pending', 'throttled'],
    ],
  );
  assert.equal((await post('post_calm')).status, 'published');
  await forget(['post_mixed', 'post_calm']);
});

test('a lookup that cannot tell backs off and finally fails as not confirmed, never sending again', async () => {
  const clock = new FixedClock(NOW);
  const down = () => new PlatformError('platform_error', 'Graph API failed', { platformMessage: 'An unexpected error has occurred.' });
  const connector = new ScriptedConnector()
    .onPublish('ch_1_google_business', new DeliveryUnconfirmed('socket hang up'))
    .onFind('ch_1_google_business', down(), 'hang', down());
  await schedule(['post_unknown'], { workspace: 1, channels: ['ch_1_google_business'] });
  const publisher = publisherWith(clock, connector);
  await publisher.runOnce();
  clock.advance(SETTLE);
  const waits: [string, number, string | null][] = [];
  for (let i = 0; i < BACKOFF.length; i++) {
    assert.equal(await publisher.runOnce(), 1);
    const p = await post('post_unknown');
    const [d] = await deliveries('post_unknown');
    waits.push([d!.status, d!.checks, p.retry_at ? String((p.retry_at.getTime() - clock.now().getTime()) / MINUTE) : null]);
    if (p.retry_at) clock.set(p.retry_at);
  }
  assert.deepEqual(waits, [
    ['unconfirmed', 1, '1'],
    ['unconfirmed', 2, '5'],
    ['failed', 3, null],
  ]);
  assert.equal(connector.publishes.length, 1, 'never sent blindly');
  const [d] = await deliveries('post_unknown');
  assert.equal(d!.failure_kind, 'not_confirmed');
  assert.match(
    d!.error!,
    /could not confirm whether the google_business channel received the post \(3 lookups failed\); check the channel/,
  );
  assert.equal(d!.platform_message, 'An unexpected error has occurred.');
  const p = await post('post_unknown');
  assert.equal(p.status, 'failed');
  assert.equal((await channelRow('ch_1_google_business')).failure_kind, 'not_confirmed', 'the admin sees it on the channel');
});

test('after a crash: a delivery left publishing is unconfirmed and looked up; only pending ones are sent; a live lease is respected', async () => {
  const clock = new FixedClock(NOW);
  await schedule(['post_orphan', 'post_leased', 'post_hopeless'], { workspace: 2 });
  const claimedAt = new Date(Date.parse(NOW) - 10 * MINUTE);
  const crashed = async (id: string, attempts: number) => {
    await db.kysely
      .updateTable('posts')
      .set({ status: 'publishing', claimed_at: claimedAt, claimed_by: 'dead-instance', attempts })
      .where('id', '=', id)
      .execute();
    // It had published its first channel and was sending the second when it died.
    await db.kysely
      .updateTable('post_deliveries')
      .set({ status: 'published', external_id: `ext_${id}`, delivered_at: claimedAt, attempt_started_at: claimedAt })
      .where('post_id', '=', id)
      .where('channel_id', '=', 'ch_2_facebook')
      .execute();
    await db.kysely
      .updateTable('post_deliveries')
      .set({ status: 'publishing', attempt_started_at: claimedAt })
      .where('post_id', '=', id)
      .where('channel_id', '=', 'ch_2_linkedin')
      .execute();
  };
  await crashed('post_orphan', 1);
  await crashed('post_hopeless', 5);
  await db.kysely
    .updateTable('posts')
    .set({ status: 'publishing', claimed_at: new Date(Date.parse(NOW) - MINUTE), claimed_by: 'live-instance', attempts: 1 })
    .where('id', '=', 'post_leased')
    .execute();

  const connector = new ScriptedConnector()
    .onFind('post_orphan/ch_2_linkedin', { externalId: 'li_made_before_crash' })
    .onFind('post_hopeless/ch_2_linkedin', null)
    .onPublish('post_hopeless/ch_2_linkedin', { externalId: 'li_after_none_found' })
    .onPublish('post_orphan/ch_2_google_business', { externalId: 'gbp_after' });
  const events: PublisherEvent[] = [];
  const publisher = publisherWith(clock, connector, { leaseMs: 5 * MINUTE, maxAttempts: 5, onEvent: (e) => events.push(e) });
  assert.equal(await publisher.runOnce(), 2, 'the orphan is claimed; the hopeless one is released to the reconciler and claimed');
  assert.deepEqual(
    events.find((e) => e.kind === 'taken_over'),
    { kind: 'taken_over', posts: ['post_orphan'] },
  );
  assert.deepEqual(
    events
      .filter((e) => e.kind === 'reconciled')
      .map((e) => `${e.postId} ${e.channelId} ${e.outcome}`)
      .sort(),
    ['post_hopeless ch_2_linkedin sent_again', 'post_orphan ch_2_linkedin found'],
  );

  const orphan = await post('post_orphan');
  assert.deepEqual([orphan.status, orphan.attempts], ['published', 2]);
  assert.deepEqual(
    (await deliveries('post_orphan')).map((d) => [d.channel_id, d.status, d.external_id]),
    [
      ['ch_2_facebook', 'published', 'ext_post_orphan'],
      ['ch_2_linkedin', 'published', 'li_made_before_crash'],
      ['ch_2_google_business', 'published', 'gbp_after'],
    ],
  );
  assert.deepEqual(
    connector.publishes.map((c) => `${c.postId} ${c.channel.id}`).sort(),
    ['post_hopeless ch_2_linkedin', 'post_orphan ch_2_google_business'],
    'what the dead publisher may have sent was looked up first: sent again only where none was found',
  );
  const leased = await post('post_leased');
  assert.deepEqual([leased.status, leased.claimed_by], ['publishing', 'live-instance'], 'a live lease is respected');
  // Claimed its 5th time and dead again: its unsent channel fails, its unconfirmed one is reconciled.
  const hopeless = await post('post_hopeless');
  assert.equal(hopeless.status, 'failed');
  assert.deepEqual(
    (await deliveries('post_hopeless')).map((d) => [d.channel_id, d.status, d.external_id, d.failure_kind]),
    [
      ['ch_2_facebook', 'published', 'ext_post_hopeless', null],
      ['ch_2_linkedin', 'published', 'li_after_none_found', null],
      ['ch_2_google_business', 'failed', null, 'publisher_stopped'],
    ],
  );
});

test('a publisher that lost its lease sends nothing and records no outcome', async () => {
  await schedule(['post_slow'], { workspace: 1, channels: ['ch_1_facebook'] });
  const slow = { claimant: 'slow', claimedAt: new Date(NOW) };
  assert.deepEqual(await claimDue(db, slow, 10), ['post_slow']);
  const fast = { claimant: 'fast', claimedAt: new Date(Date.parse(NOW) + 6 * MINUTE) };
  assert.ok((await reclaimExpired(db, fast, new Date(Date.parse(NOW) + MINUTE), 5, 10)).includes('post_slow'));
  const at = { postId: 'post_slow', channelId: 'ch_1_facebook', status: 'pending' as const, attemptStartedAt: null };
  assert.equal(await markPublishing(db, at, slow, new Date(NOW)), false, 'the slow publisher may not send');
  assert.equal(await markPublishing(db, at, fast, fast.claimedAt), true);
  assert.equal(await markPublishing(db, at, fast, fast.claimedAt), false, 'marked once');
});

test('the registry: connected channels go through their platform’s connector with the unsealed token; others through the sandbox', async () => {
  const clock = new FixedClock(NOW);
  const sealer = new Sealer([secretsKey(randomBytes(32))]);
  await db.kysely
    .insertInto('channel_connections')
    .values([
      { id: 'conn_meta', hub_id: 'hub_a', platform: 'meta', label: 'Meta', token_sealed: sealer.seal('user-token', 'conn_meta') },
      {
        id: 'conn_gbp',
        hub_id: 'hub_a',
        platform: 'google_business',
        label: 'Google',
        token_sealed: sealer.seal('refresh-token', 'conn_gbp'),
      },
      {
        id: 'conn_old',
        hub_id: 'hub_a',
        platform: 'google_business',
        label: 'Old',
        token_sealed: sealer.seal('old', 'conn_old'),
        token_expires_at: new Date(Date.parse(NOW) - MINUTE),
      },
    ])
    .execute();
  const connectAs = (id: string, connectionId: string, externalId: string, token?: Buffer) =>
    db.kysely
      .updateTable('social_channels')
      .set({ connection_id: connectionId, external_id: externalId, token_sealed: token ?? null })
      .where('id', '=', id)
      .execute();
  // Workspace 3: a Page with its own token, a location with the connection's, one with the wrong seal.
  await db.kysely
    .insertInto('social_channels')
    .values([
      { id: 'ch_3_ig', hub_id: 'hub_a', workspace_id: 'ws_3', platform: 'instagram', name: 'IG', handle: null },
      { id: 'ch_3_gbp_old', hub_id: 'hub_a', workspace_id: 'ws_3', platform: 'google_business', name: 'Old GBP', handle: null },
    ])
    .execute();
  await connectAs('ch_3_facebook', 'conn_meta', '1234', sealer.seal('page-token', 'ch_3_facebook'));
  await connectAs('ch_3_ig', 'conn_meta', '1784', sealer.seal('ig-page-token', 'conn_meta')); // sealed for the wrong row
  await connectAs('ch_3_google_business', 'conn_gbp', 'accounts/1/locations/2');
  await connectAs('ch_3_gbp_old', 'conn_old', 'accounts/1/locations/3');
  try {
    const meta = new ScriptedConnector().onPublish('ch_3_facebook', { externalId: '1234_5678' });
    const google = new ScriptedConnector().onPublish('ch_3_google_business', { externalId: 'accounts/1/locations/2/localPosts/9' });
    const sandbox = new SandboxConnector(db, clock);
    const connectors = new ChannelConnectors(sandbox, { facebook: meta, instagram: meta, google_business: google });
    await db.kysely
      .insertInto('media_assets')
      .values({
        id: 'med_reg',
        hub_id: 'hub_a',
        workspace_id: 'ws_3',
        kind: 'image',
        content_type: 'image/png',
        filename: 'secret-name.png',
        byte_size: 10,
        width: 1,
        height: 1,
        sha256: Buffer.alloc(32),
        storage_key: 'hub_a/ws_3/med_reg.png',
      })
      .execute();
    const rows = postRows({
      id: 'post_reg',
      hubId: 'hub_a',
      workspaceId: 'ws_3',
      text: 'hello',
      status: 'scheduled',
      scheduledAt: NOW,
      createdBy: null,
      channelIds: ['ch_3_facebook', 'ch_3_ig', 'ch_3_google_business', 'ch_3_gbp_old', 'ch_3_linkedin'],
      mediaIds: ['med_reg'],
    });
    await db.kysely.insertInto('posts').values(rows.post).execute();
    await db.kysely.insertInto('post_deliveries').values(rows.deliveries).execute();
    await db.kysely.insertInto('post_media').values(rows.media).execute();
    const signer = new MediaUrlSigner(randomBytes(32), 'https://hubops.test/api', 86_400_000);
    await publisherWith(clock, connectors, { sealer, mediaUrls: signer }).runOnce();

    assert.deepEqual(
      meta.publishes.map((c) => [c.channel.id, c.channel.externalId, c.channel.secret]),
      [['ch_3_facebook', '1234', 'page-token']],
    );
    assert.deepEqual(
      google.publishes.map((c) => [c.channel.id, c.channel.externalId, c.channel.secret]),
      [['ch_3_google_business', 'accounts/1/locations/2', 'refresh-token']],
    );
    const url = new URL(meta.publishes[0]!.media[0]!.url!);
    assert.equal(`${url.origin}${url.pathname}`, 'https://hubops.test/api/media-public/med_reg');
    assert.ok(signer.verify('med_reg', url.searchParams.get('exp'), url.searchParams.get('sig'), clock.now()));
    assert.doesNotMatch(url.href, /secret-name|hub_a|ws_3/, 'the URL reveals nothing but the media id');
    assert.deepEqual(
      (await deliveries('post_reg')).map((d) => [d.channel_id, d.status, d.failure_kind]),
      [
        ['ch_3_facebook', 'published', null],
        ['ch_3_ig', 'failed', 'needs_reconnect'],
        ['ch_3_google_business', 'published', null],
        ['ch_3_gbp_old', 'failed', 'needs_reconnect'],
        ['ch_3_linkedin', 'published', null],
      ],
    );
    assert.equal((await sandboxCalls('post_reg')).length, 1, 'the unconnected channel went to the sandbox');
    const errors = (await deliveries('post_reg')).map((d) => d.error ?? '').join(' ');
    assert.match(errors, /token expired on 2026-11-21/);
    assert.doesNotMatch(errors, /token"|page-token|refresh-token|ig-page-token/, 'no secret in any error');
  } finally {
    await db.kysely
      .updateTable('social_channels')
      .set({ connection_id: null, external_id: null, token_sealed: null })
      .where('id', 'in', ['ch_3_facebook', 'ch_3_google_business'])
      .execute();
  }
});

test('a delivery write and a claim check read one index entry, not every delivery or post in flight', async () => {
  // As in bench:publisher: statistics taken while everything was still queued, then a batch in flight.
  const ids = Array.from({ length: 60 }, (_, i) => `post_inflight_${i}`);
  await schedule(ids, { workspace: 2 });
  await sql`ANALYZE posts`.execute(db.kysely);
  await sql`ANALYZE post_deliveries`.execute(db.kysely);
  const claim = { claimant: 'batch', claimedAt: new Date(Date.parse(NOW) + 1) };
  const claimed = await claimDue(db, claim, 100);
  assert.ok(ids.every((id) => claimed.includes(id)));
  // Each delivery marked a millisecond apart, as a batch's are.
  const attemptOf = (i: number) => new Date(Date.parse(NOW) + 2 + i);
  for (const [i, id] of ids.entries())
    assert.ok(
      await markPublishing(db, { postId: id, channelId: 'ch_2_facebook', status: 'pending', attemptStartedAt: null }, claim, attemptOf(i)),
    );
  // One connection in one transaction: the index entries its statements read, from the statistics it has not reported yet.
  const one = connect(db.url, { max: 1 });
  try {
    await sql`BEGIN`.execute(one.kysely);
    const at = { postId: ids[0]!, channelId: 'ch_2_facebook', status: 'publishing' as const, attemptStartedAt: attemptOf(0) };
    assert.ok(await recordPublished(one, at, { externalId: 'fb_1' }, attemptOf(0)));
    const next = { postId: ids[0]!, channelId: 'ch_2_linkedin', status: 'pending' as const, attemptStartedAt: null };
    assert.ok(await markPublishing(one, next, claim, attemptOf(100)));
    assert.ok(await recordOutcome(one, ids[1]!, claim, { status: 'publishing', error: null, retryAt: null }, attemptOf(100)));
    const { rows } = await sql<{ deliveries: string; posts: string }>`
      SELECT pg_stat_get_xact_tuples_returned('post_deliveries_unconfirmed_idx'::regclass) AS deliveries,
             pg_stat_get_xact_tuples_returned('posts_lease_idx'::regclass) AS posts`.execute(one.kysely);
    await sql`ROLLBACK`.execute(one.kysely);
    const read = { deliveries: Number(rows[0]!.deliveries), posts: Number(rows[0]!.posts) };
    assert.ok(read.deliveries <= 2 && read.posts <= 2, `index entries of the batch read: ${JSON.stringify(read)} (60 in flight)`);
  } finally {
    await one.close();
    await db.kysely.deleteFrom('post_deliveries').where('post_id', 'in', ids).execute();
    await db.kysely.deleteFrom('posts').where('id', 'in', ids).execute();
  }
});

test('one statement (one commit) per delivery: each delivery’s record also marks the next one to send', async () => {
  // A day before the other tests' posts, so the rounds claim only these.
  const at = Date.parse(NOW) - 24 * 60 * MINUTE;
  const clock = new FixedClock(new Date(at).toISOString());
  const counted = connect(db.url, { max: 2 });
  let statements = 0;
  counted.pool.on('acquire', () => statements++);
  const sandbox = new SandboxConnector(db, clock);
  const seen: string[][] = [];
  const watching: Connector = {
    publish: async (p, c) => {
      seen.push((await deliveries(p.id)).map((d) => `${d.channel_id.replace('ch_1_', '')}:${d.status}`));
      return sandbox.publish(p, c);
    },
    find: (p, c, since) => sandbox.find(p, c, since),
  };
  const round = async (id: string, channels: string[]) => {
    await schedule([id], { workspace: 1, at: new Date(at - MINUTE).toISOString(), channels });
    statements = 0;
    assert.equal(await publisherWith(clock, watching, { db: counted }).runOnce(), 1);
    assert.equal((await post(id)).status, 'published');
    return statements;
  };
  try {
    const one = await round('post_one_channel', ['ch_1_facebook']);
    const three = await round('post_three_channels', ['ch_1_facebook', 'ch_1_linkedin', 'ch_1_google_business']);
    assert.equal(three - one, 2, `statements: ${one} for one channel, ${three} for three`);
    assert.deepEqual(seen.slice(1), [
      ['facebook:publishing', 'linkedin:pending', 'google_business:pending'],
      ['facebook:published', 'linkedin:publishing', 'google_business:pending'],
      ['facebook:published', 'linkedin:published', 'google_business:publishing'],
    ]);
  } finally {
    await counted.close();
  }
});

test("group commit: the writes of a round's posts share statements, and each is still committed before what follows it", async () => {
  // Two days before the other tests' posts, so the round claims only these.
  const at = Date.parse(NOW) - 48 * 60 * MINUTE;
  const clock = new FixedClock(new Date(at).toISOString());
  const counted = connect(db.url, { max: 4 });
  let statements = 0;
  counted.pool.on('acquire', () => statements++);
  const sandbox = new SandboxConnector(db, clock);
  const ids = Array.from({ length: 30 }, (_, i) => `post_grouped_${i}`);
  const unmarked: string[] = [];
  const watching: Connector = {
    publish: async (p, c) => {
      // Whatever else shares its statement, a delivery is committed publishing before its send.
      const mine = (await deliveries(p.id)).find((d) => d.channel_id === c.id)!;
      if (mine.status !== 'publishing') unmarked.push(`${p.id}/${c.id}:${mine.status}`);
      return sandbox.publish(p, c);
    },
    find: (p, c, since) => sandbox.find(p, c, since),
  };
  await schedule(ids, { workspace: 1, at: new Date(at - MINUTE).toISOString() });
  try {
    statements = 0;
    assert.equal(
      await publisherWith(clock, watching, { db: counted, batchSize: 50, publishTimeoutMs: 10_000, settleMs: 11_000 }).runOnce(),
      ids.length,
    );
    assert.deepEqual(unmarked, []);
    for (const id of ids) {
      assert.equal((await post(id)).status, 'published', id);
      assert.deepEqual(
        (await deliveries(id)).map((d) => d.status),
        ['published', 'published', 'published'],
      );
      assert.equal((await sandboxCalls(id)).length, 3, `${id}: once per channel`);
    }
    // 30 posts × 3 channels: 90 deliveries marked and recorded, 30 outcomes; one by one that is
    // 30 marks + 90 records (each marking the next) + 30 outcomes = 150 statements.
    assert.ok(statements <= 40, `${statements} statements for ${ids.length} posts × 3 channels (150 one by one)`);
  } finally {
    await counted.close();
  }
});

test('a call given up while the network still prepares the post (PublishNotReady) is pending, not unconfirmed: the next attempt goes on from what was prepared; one that stops otherwise is unconfirmed', async () => {
  const clock = new FixedClock(NOW);
  await schedule(['post_reel', 'post_stops'], { workspace: 2, channels: ['ch_2_linkedin'] });
  const connector = new ScriptedConnector()
    .onPublish('post_reel/ch_2_linkedin', {
      stopsWith: new PublishNotReady('Instagram is still processing the reel', 'ig-container:42:1', 30_000),
    })
    .onPublish('post_reel/ch_2_linkedin', { externalId: 'ig_reel', url: 'https://instagram.example/p/reel' })
    .onPublish('post_stops/ch_2_linkedin', { stopsWith: new Error('aborted mid-request') });
  const publisher = publisherWith(clock, connector, { publishTimeoutMs: 50, settleMs: SETTLE });
  await publisher.runOnce();
  const reel = (await deliveries('post_reel'))[0]!;
  assert.equal(reel.status, 'pending', 'nothing was published: not unconfirmed');
  assert.equal(reel.failure_kind, 'processing');
  assert.equal(reel.platform_message, 'Instagram is still processing the reel');
  assert.equal(reel.prepared, 'ig-container:42:1');
  assert.equal(reel.attempt_started_at, null);
  assert.equal((await deliveries('post_stops'))[0]!.status, 'unconfirmed', 'a call that stopped otherwise may have sent');
  // Its wait (the connector's 30 s) over, the next attempt is given what was prepared.
  clock.advance(30_000);
  await publisher.runOnce();
  assert.deepEqual(
    connector.publishes.filter((c) => c.postId === 'post_reel').map((c) => c.prepared),
    [undefined, 'ig-container:42:1'],
  );
  const done = (await deliveries('post_reel'))[0]!;
  assert.deepEqual([done.status, done.external_id, done.prepared], ['published', 'ig_reel', null]);
  assert.equal((await post('post_reel')).status, 'published');
});

test('start and stop: the loop publishes what becomes due, and stop waits for its round', async () => {
  const clock = new FixedClock(NOW);
  await schedule(['post_loop'], { workspace: 2, channels: ['ch_2_linkedin'] });
  const publisher = publisherWith(clock, new SandboxConnector(db, clock), { intervalMs: 5 });
  publisher.start();
  publisher.start();
  for (let i = 0; i < 200 && (await post('post_loop')).status !== 'published'; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  await publisher.stop();
  assert.equal((await post('post_loop')).status, 'published');
  assert.equal((await sandboxCalls('post_loop')).length, 1);
});

test('each delivery is marked publishing (committed) before its network is called, and recorded before the next channel', async () => {
  const clock = new FixedClock(NOW);
  await schedule(['post_steps'], { workspace: 1 });
  const sandbox = new SandboxConnector(db, clock);
  const seen: string[][] = [];
  const watching: Connector = {
    publish: async (p, c) => {
      seen.push((await deliveries(p.id)).map((d) => `${d.channel_id.replace('ch_1_', '')}:${d.status}`));
      return sandbox.publish(p, c);
    },
    find: (p, c, since) => sandbox.find(p, c, since),
  };
  await publisherWith(clock, watching).runOnce();
  assert.deepEqual(seen, [
    ['facebook:publishing', 'linkedin:pending', 'google_business:pending'],
    ['facebook:published', 'linkedin:publishing', 'google_business:pending'],
    ['facebook:published', 'linkedin:published', 'google_business:publishing'],
  ]);
  assert.equal((await post('post_steps')).status, 'published');
});

test('the sandbox connector takes no key: a repeated call publishes again, and find sees publications since a time', async () => {
  const clock = new FixedClock(NOW);
  const sandbox = new SandboxConnector(db, clock);
  const outgoing = { id: 'post_twice', hubId: 'hub_a', workspaceId: 'ws_1', text: 'hello', media: [] };
  const target = { id: 'ch_1_facebook', platform: 'facebook' as const, name: 'fb', handle: null, externalId: null, secret: null };
  assert.equal(await sandbox.find(outgoing, target, new Date(NOW)), null);
  const first = await sandbox.publish(outgoing, target);
  const second = await sandbox.publish(outgoing, target);
  assert.notEqual(first.externalId, second.externalId);
  assert.equal((await sandboxCalls('post_twice')).length, 2, 'a double publication shows');
  assert.deepEqual(await sandbox.find(outgoing, target, new Date(Date.parse(NOW) - MINUTE)), { externalId: first.externalId });
  assert.equal(await sandbox.find(outgoing, target, new Date(Date.parse(NOW) + 1)), null);
});
