import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { connect, type Db } from '../../src/db/database.ts';
import type { SocialPlatform } from '../../src/db/schema.ts';
import { SandboxConnector, deliveryKey, type Connector } from '../../src/domain/posts/connector.ts';
import { postRows } from '../../src/domain/posts/post.repository.ts';
import { claimDue, reclaimExpired, recordDelivery, recordOutcome } from '../../src/domain/posts/publisher.repository.ts';
import { createPublisher } from '../../src/domain/posts/publisher.ts';
import { FixedClock } from '../../src/platform/clock.ts';
import { publishingHub } from '../support/content-world.ts';
import { createTestDb, type TestDb } from '../support/db.ts';

// The publisher against a real PostgreSQL: exactly-once publication with two loops on separate
// connection pools (as two instances), failures recorded with their reason, and posts whose
// publisher died picked up again after their lease.

const NOW = '2026-11-21T12:00:00.000Z';
const MINUTE = 60_000;
let db: TestDb;
const clock = new FixedClock(NOW);
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
const sandboxCalls = (id: string) => db.kysely.selectFrom('sandbox_publications').selectAll().where('post_id', '=', id).execute();

test('two publisher loops on two pools publish 300 due posts to every channel exactly once', async () => {
  const ids = Array.from({ length: 300 }, (_, i) => `post_x_${String(i).padStart(3, '0')}`);
  await schedule(ids);
  await schedule(['post_x_future'], { at: new Date(Date.parse(NOW) + MINUTE).toISOString() });
  const pools: Db[] = [connect(db.url, { max: 4 }), connect(db.url, { max: 4 })];
  // A little latency per call, so the two loops really interleave.
  const jittery = (inner: Connector): Connector => ({
    publish: async (p, c, key) => {
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 2));
      return inner.publish(p, c, key);
    },
  });
  const errors: unknown[] = [];
  const publishers = pools.map((pool) =>
    createPublisher({
      db: pool,
      clock,
      connector: jittery(new SandboxConnector(pool, clock)),
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
      }>`SELECT count(*)::int AS n FROM posts WHERE status IN ('scheduled', 'publishing') AND id <> 'post_x_future'`.execute(db.kysely);
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
  const calls = await sql<{ n: number; distinct_pairs: number; most: number }>`
    SELECT count(*)::int AS n, count(DISTINCT (post_id, channel_id))::int AS distinct_pairs,
           max(c)::int AS most FROM (SELECT post_id, channel_id, count(*) OVER (PARTITION BY post_id, channel_id) AS c FROM sandbox_publications WHERE post_id LIKE 'post_x_%') s`.execute(
    db.kysely,
  );
  assert.deepEqual(calls.rows[0], { n: 900, distinct_pairs: 900, most: 1 }, 'every channel of every post was sent to exactly once');
  const mismatched = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM post_deliveries d
     WHERE d.post_id LIKE 'post_x_%' AND d.post_id <> 'post_x_future'
       AND NOT (d.status = 'published' AND d.delivered_at = ${NOW}::timestamptz
                AND d.external_id = (SELECT s.id FROM sandbox_publications s WHERE s.post_id = d.post_id AND s.channel_id = d.channel_id))`.execute(
    db.kysely,
  );
  assert.equal(mismatched.rows[0]!.n, 0, 'each delivery records the publication the platform made');
  const published = await post('post_x_000');
  assert.deepEqual(
    [published.published_at?.toISOString(), published.error, published.claimed_at, published.claimed_by, published.attempts],
    [NOW, null, null, null, 1],
  );
});

test('a failing channel fails the post with the reason; the others are published', async () => {
  const sandbox = new SandboxConnector(db, clock);
  sandbox.failChannel('ch_1_linkedin', 'LinkedIn says: token revoked');
  await schedule(['post_fail'], { workspace: 1 });
  await db.kysely.updateTable('social_channels').set({ connected: false }).where('id', '=', 'ch_1_google_business').execute();
  try {
    const publisher = createPublisher({ db, clock, connector: sandbox, intervalMs: 10, batchSize: 10 });
    assert.equal(await publisher.runOnce(), 1);
  } finally {
    await db.kysely.updateTable('social_channels').set({ connected: true }).where('id', '=', 'ch_1_google_business').execute();
  }
  const failed = await post('post_fail');
  assert.equal(failed.status, 'failed');
  assert.equal(failed.published_at, null);
  assert.equal(
    failed.error,
    'linkedin channel linkedin ch_1_linkedin: LinkedIn says: token revoked; google_business channel google_business ch_1_google_business: the channel is disconnected; reconnect it and schedule the post again',
  );
  assert.deepEqual(
    (await deliveries('post_fail')).map((d) => [d.channel_id, d.status, d.external_id?.startsWith('sandbox_') ?? null, d.error]),
    [
      ['ch_1_facebook', 'published', true, null],
      ['ch_1_linkedin', 'failed', null, 'LinkedIn says: token revoked'],
      ['ch_1_google_business', 'failed', null, 'the channel is disconnected; reconnect it and schedule the post again'],
    ],
  );
  assert.deepEqual(
    (await sandboxCalls('post_fail')).map((c) => c.channel_id),
    ['ch_1_facebook'],
  );
});

test('a platform that does not answer fails its delivery after the timeout', async () => {
  await schedule(['post_hang'], { workspace: 2, channels: ['ch_2_facebook'] });
  const hanging: Connector = { publish: () => new Promise(() => {}) };
  await createPublisher({ db, clock, connector: hanging, intervalMs: 10, batchSize: 10, publishTimeoutMs: 50 }).runOnce();
  assert.deepEqual(
    [(await post('post_hang')).status, (await deliveries('post_hang'))[0]!.error],
    ['failed', 'the platform did not answer within 0.05 s'],
  );
});

test('a post whose publisher died is retried after its lease, sending only what is still pending', async () => {
  await schedule(['post_orphan', 'post_leased', 'post_hopeless'], { workspace: 3 });
  const claimedAt = new Date(Date.parse(NOW) - 10 * MINUTE);
  await db.kysely
    .updateTable('posts')
    .set({ status: 'publishing', claimed_at: claimedAt, claimed_by: 'dead-instance', attempts: 1 })
    .where('id', '=', 'post_orphan')
    .execute();
  // It had reached its first channel before dying.
  await db.kysely
    .updateTable('post_deliveries')
    .set({ status: 'published', external_id: 'ext_before_crash', delivered_at: claimedAt })
    .where('post_id', '=', 'post_orphan')
    .where('channel_id', '=', 'ch_3_facebook')
    .execute();
  await db.kysely
    .updateTable('posts')
    .set({ status: 'publishing', claimed_at: new Date(Date.parse(NOW) - MINUTE), claimed_by: 'live-instance', attempts: 1 })
    .where('id', '=', 'post_leased')
    .execute();
  await db.kysely
    .updateTable('posts')
    .set({ status: 'publishing', claimed_at: claimedAt, claimed_by: 'dead-instance', attempts: 5 })
    .where('id', '=', 'post_hopeless')
    .execute();

  const publisher = createPublisher({
    db,
    clock,
    connector: new SandboxConnector(db, clock),
    intervalMs: 10,
    batchSize: 10,
    leaseMs: 5 * MINUTE,
    maxAttempts: 5,
  });
  assert.equal(await publisher.runOnce(), 1, 'only the orphan is claimed');

  const orphan = await post('post_orphan');
  assert.deepEqual([orphan.status, orphan.attempts], ['published', 2]);
  assert.deepEqual((await sandboxCalls('post_orphan')).map((c) => c.channel_id).sort(), ['ch_3_google_business', 'ch_3_linkedin']);
  assert.equal((await deliveries('post_orphan'))[0]!.external_id, 'ext_before_crash');
  assert.equal((await post('post_leased')).status, 'publishing', 'a live lease is respected');
  const hopeless = await post('post_hopeless');
  assert.deepEqual([hopeless.status, hopeless.error], ['failed', 'gave up after 5 attempts: the publisher stopped while publishing']);
  assert.ok((await deliveries('post_hopeless')).every((d) => d.status === 'failed' && d.error === 'not sent: the post was given up'));
});

test('a publisher that lost its lease records its deliveries but not the outcome; the first result wins', async () => {
  await schedule(['post_slow'], { workspace: 1, channels: ['ch_1_facebook'] });
  const slow = { claimant: 'slow', claimedAt: new Date(NOW) };
  assert.deepEqual(await claimDue(db, slow, 10), ['post_slow']);
  const fast = { claimant: 'fast', claimedAt: new Date(Date.parse(NOW) + 6 * MINUTE) };
  assert.ok((await reclaimExpired(db, fast, new Date(Date.parse(NOW) + MINUTE), 5, 10)).includes('post_slow'));

  await recordDelivery(db, 'post_slow', { channelId: 'ch_1_facebook', externalId: 'ext_slow' }, new Date(NOW));
  await recordOutcome(db, 'post_slow', slow, new Date(NOW));
  assert.equal((await post('post_slow')).status, 'publishing', 'the slow publisher no longer holds the post');
  await recordDelivery(db, 'post_slow', { channelId: 'ch_1_facebook', externalId: 'ext_fast' }, fast.claimedAt);
  await recordOutcome(db, 'post_slow', fast, fast.claimedAt);
  assert.equal((await post('post_slow')).status, 'published');
  assert.equal((await deliveries('post_slow'))[0]!.external_id, 'ext_slow', 'one delivery, recorded once');
});

test('start and stop: the loop publishes what becomes due, and stop waits for its round', async () => {
  await schedule(['post_loop'], { workspace: 2, channels: ['ch_2_linkedin'] });
  const publisher = createPublisher({ db, clock, connector: new SandboxConnector(db, clock), intervalMs: 5, batchSize: 10 });
  publisher.start();
  publisher.start();
  for (let i = 0; i < 200 && (await post('post_loop')).status !== 'published'; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  await publisher.stop();
  assert.equal((await post('post_loop')).status, 'published');
  assert.equal((await sandboxCalls('post_loop')).length, 1);
});

test('each delivery is recorded before the next channel is sent, under a key the connector honours', async () => {
  await schedule(['post_steps'], { workspace: 3 });
  const sandbox = new SandboxConnector(db, clock);
  const seen: { key: string; recordedBefore: string[] }[] = [];
  const watching: Connector = {
    publish: async (p, c, key) => {
      const recordedBefore = (await deliveries(p.id)).filter((d) => d.status !== 'pending').map((d) => d.channel_id);
      seen.push({ key, recordedBefore });
      return sandbox.publish(p, c, key);
    },
  };
  await createPublisher({ db, clock, connector: watching, intervalMs: 10, batchSize: 10 }).runOnce();
  assert.deepEqual(seen, [
    { key: deliveryKey('post_steps', 'ch_3_facebook'), recordedBefore: [] },
    { key: deliveryKey('post_steps', 'ch_3_linkedin'), recordedBefore: ['ch_3_facebook'] },
    { key: deliveryKey('post_steps', 'ch_3_google_business'), recordedBefore: ['ch_3_facebook', 'ch_3_linkedin'] },
  ]);
  assert.equal((await post('post_steps')).status, 'published');
});

test('the sandbox connector honours idempotency keys: a repeat publishes nothing and answers with the first id', async () => {
  const sandbox = new SandboxConnector(db, clock);
  const outgoing = { id: 'post_key', hubId: 'hub_a', workspaceId: 'ws_1', text: 'hello', media: [] };
  const target = { id: 'ch_1_facebook', platform: 'facebook' as const, name: 'facebook ch_1_facebook', handle: null };
  sandbox.failChannel(target.id, 'Facebook is down');
  await assert.rejects(sandbox.publish(outgoing, target, 'key-1'), /Facebook is down/);
  sandbox.restoreChannel(target.id);
  // A failed call stored nothing under the key, so the next one publishes; then all answer alike.
  const answers = await Promise.all([1, 2, 3].map(() => sandbox.publish(outgoing, target, 'key-1')));
  assert.equal(new Set(answers.map((a) => a.externalId)).size, 1);
  const other = await sandbox.publish(outgoing, target, 'key-2');
  assert.notEqual(other.externalId, answers[0]!.externalId);
  const rows = await sandboxCalls('post_key');
  assert.deepEqual(
    rows.map((r) => [r.id, r.idempotency_key, r.requests]).sort(),
    [
      [answers[0]!.externalId, 'key-1', 3],
      [other.externalId, 'key-2', 1],
    ].sort(),
  );
});
