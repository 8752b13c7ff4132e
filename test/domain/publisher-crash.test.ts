// Publishing exactly once across a crash, with no idempotency key to lean on: two publisher
// processes share the queue; one is killed with SIGKILL mid-batch, while the sandbox network has
// published deliveries whose answers it had not recorded (left `publishing`). The survivor and a
// restarted process take its posts over after their lease: each delivery left `publishing` becomes
// `unconfirmed` and is looked up (found: recorded as published; none: sent again, after the settle
// delay). What the network received is counted, not only what we recorded: every channel of every
// post exactly once, and every unconfirmed delivery reconciled.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { sql, type RawBuilder } from 'kysely';
import type { SocialPlatform } from '../../src/db/schema.ts';
import { postRows } from '../../src/domain/posts/post.repository.ts';
import { publishingHub } from '../support/content-world.ts';
import { createTestDb, type TestDb } from '../support/db.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const NODE = path.join(ROOT, 'node_modules/.bin/node');
const POSTS = 240;
const PLATFORMS: SocialPlatform[] = ['facebook', 'linkedin', 'google_business'];
const DELIVERIES = POSTS * PLATFORMS.length;
const LEASE_MS = 1_500;
const SETTLE_MS = 1_000;
/** Each call's deadline: below the settle delay, above the slowest answer (the doomed one's 400 ms). */
const TIMEOUT_MS = 900;

let db: TestDb;
const children: ChildProcess[] = [];

before(async () => {
  db = await createTestDb();
  await publishingHub(db, PLATFORMS);
});
after(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await db.drop();
});

/** A publisher process whose network answers within `answerMs` of publishing (the window a kill loses). */
function startPublisher(answerMs = 40): ChildProcess {
  const child = spawn(NODE, [path.join(ROOT, 'test/domain/publisher-process.ts')], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: db.url,
      LEASE_MS: String(LEASE_MS),
      SETTLE_MS: String(SETTLE_MS),
      TIMEOUT_MS: String(TIMEOUT_MS),
      BATCH: '20',
      ANSWER_MS: String(answerMs),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  return child;
}

async function count(query: RawBuilder<{ n: number }>): Promise<number> {
  return (await query.execute(db.kysely)).rows[0]!.n;
}
const recorded = () => count(sql`SELECT count(*)::int AS n FROM post_deliveries WHERE status <> 'pending'`);
/**
 * Deliveries the network has made and the publisher `pid` (its claims) has not recorded yet: what
 * a blind re-send after its crash would duplicate.
 */
const sentNotRecorded = (pid: number) =>
  count(sql`
  SELECT count(*)::int AS n FROM sandbox_publications s
    JOIN post_deliveries d ON d.post_id = s.post_id AND d.channel_id = s.channel_id
    JOIN posts p ON p.id = d.post_id
   WHERE d.status = 'publishing' AND p.claimed_by LIKE ${`%:${pid}:%`}`);

async function until(condition: () => Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

test('two publishers, one killed with SIGKILL mid-batch, then a restart: every delivery happened exactly once, every unconfirmed one reconciled', async () => {
  const due = new Date(Date.now() - 60_000).toISOString();
  const rows = Array.from({ length: POSTS }, (_, i) => {
    const w = (i % 3) + 1;
    return postRows({
      id: `post_${String(i).padStart(3, '0')}`,
      hubId: 'hub_a',
      workspaceId: `ws_${w}`,
      text: `post ${i}`,
      status: 'scheduled',
      scheduledAt: due,
      createdBy: null,
      channelIds: PLATFORMS.map((p) => `ch_${w}_${p}`),
      mediaIds: [],
    });
  });
  await db.kysely
    .insertInto('posts')
    .values(rows.map((r) => r.post))
    .execute();
  await db.kysely
    .insertInto('post_deliveries')
    .values(rows.flatMap((r) => r.deliveries))
    .execute();

  // The doomed one's network answers slowly, so the kill surely lands on sent-but-unrecorded deliveries.
  const doomed = startPublisher(400);
  const survivor = startPublisher();
  await until(
    // The doomed one's own: the survivor's record at once and would not be left behind.
    async () => (await recorded()) >= DELIVERIES / 4 && (await sentNotRecorded(doomed.pid!)) >= 3,
    'a quarter recorded, some sent but not recorded',
  );
  doomed.kill('SIGKILL');
  await once(doomed, 'exit');
  const done = await recorded();
  assert.ok(done < DELIVERIES, 'the kill landed mid-run');
  // What the dead publisher left: deliveries marked publishing (some sent, some not), under its lease.
  const left = await sql<{ post_id: string; channel_id: string; sent: boolean }>`
    SELECT d.post_id, d.channel_id, EXISTS (SELECT 1 FROM sandbox_publications s WHERE s.post_id = d.post_id AND s.channel_id = d.channel_id) AS sent
      FROM post_deliveries d JOIN posts p ON p.id = d.post_id
     WHERE d.status = 'publishing'`.execute(db.kysely);
  // Every publication of those made so far (the survivor's in flight included) is from before now.
  const readAt = new Date();

  const restarted = startPublisher();
  await until(
    async () =>
      (await count(sql`SELECT count(*)::int AS n FROM posts WHERE status IN ('scheduled', 'publishing')`)) === 0 &&
      (await count(sql`SELECT count(*)::int AS n FROM post_deliveries WHERE status <> 'published'`)) === 0,
    'the publishers to drain the queue and reconcile every unconfirmed delivery',
    // Generous: the machine may be shared; the bench measures the time.
    180_000,
  );
  for (const child of [survivor, restarted]) {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }

  const {
    rows: [network],
  } = await sql<{ publications: number; pairs: number }>`
    SELECT count(*)::int AS publications, count(DISTINCT (post_id, channel_id))::int AS pairs FROM sandbox_publications`.execute(db.kysely);
  assert.deepEqual(
    network,
    { publications: DELIVERIES, pairs: DELIVERIES },
    'the network published every channel of every post exactly once',
  );
  assert.equal(await count(sql`SELECT count(*)::int AS n FROM posts WHERE status = 'published'`), POSTS);
  assert.equal(
    await count(sql`
    SELECT count(*)::int AS n FROM post_deliveries d
     WHERE NOT (d.status = 'published' AND d.external_id =
                (SELECT s.id FROM sandbox_publications s WHERE s.post_id = d.post_id AND s.channel_id = d.channel_id))`),
    0,
    'each delivery records the one publication the network made',
  );
  // The sent-but-unrecorded ones were found by the lookup, not sent again (their one publication
  // is from before the kill); the rest were sent once after the lookup found none.
  const sent = left.rows.filter((r) => r.sent);
  assert.ok(sent.length > 0, 'the kill landed between the network publishing and the publisher recording it');
  const {
    rows: [timeline],
  } = await sql<{ reconciled: number }>`
    SELECT count(*)::int AS reconciled FROM post_deliveries d JOIN sandbox_publications s ON s.id = d.external_id
     WHERE (d.post_id, d.channel_id) IN (SELECT * FROM unnest(${sent.map((r) => r.post_id)}::text[], ${sent.map((r) => r.channel_id)}::text[]))
       AND d.status = 'published' AND s.published_at <= ${readAt}`.execute(db.kysely);
  assert.equal(
    timeline!.reconciled,
    sent.length,
    'every delivery the dead publisher had sent is recorded with that publication, found by lookup',
  );
});
