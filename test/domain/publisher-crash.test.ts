// Publishing exactly once across a crash: a publisher process is killed with SIGKILL mid-batch,
// while platforms have published posts whose answers it has not recorded yet; a second process
// takes the posts over after their lease. What the sandbox platform received is counted, not
// only what we recorded: every delivery is published exactly once, the re-sends of the unrecorded
// ones are answered with the first publication, and nothing recorded is sent again.
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

function startPublisher(): ChildProcess {
  const child = spawn(NODE, [path.join(ROOT, 'test/domain/publisher-process.ts')], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: db.url, LEASE_MS: String(LEASE_MS), BATCH: '20', ANSWER_MS: '40' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  return child;
}

async function count(query: RawBuilder<{ n: number }>): Promise<number> {
  return (await query.execute(db.kysely)).rows[0]!.n;
}
const recorded = () => count(sql`SELECT count(*)::int AS n FROM post_deliveries WHERE status <> 'pending'`);
// Published by the platform, answer not recorded: what a crash now would have re-sent.
const sentNotRecorded = () =>
  count(sql`
  SELECT count(*)::int AS n FROM sandbox_publications s
    JOIN post_deliveries d ON d.post_id = s.post_id AND d.channel_id = s.channel_id
   WHERE d.status = 'pending'`);

async function until(condition: () => Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

test('a publisher killed with SIGKILL mid-batch: after a restart every delivery happened exactly once', async () => {
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

  const first = startPublisher();
  await until(
    async () => (await recorded()) >= DELIVERIES / 4 && (await sentNotRecorded()) >= 3,
    'a quarter recorded, some sent but not recorded',
  );
  first.kill('SIGKILL');
  await once(first, 'exit');
  const lost = await sentNotRecorded();
  const done = await recorded();
  assert.ok(lost > 0, 'the kill landed between a platform publishing and the publisher recording it');
  assert.ok(done < DELIVERIES, 'the kill landed mid-run');

  const second = startPublisher();
  await until(
    async () => (await count(sql`SELECT count(*)::int AS n FROM posts WHERE status IN ('scheduled', 'publishing')`)) === 0,
    'the second publisher to drain the queue',
  );
  second.kill('SIGTERM');
  await once(second, 'exit');

  const {
    rows: [platform],
  } = await sql<{ publications: number; pairs: number; most: number; sends: number; replayed: number }>`
    SELECT count(*)::int AS publications, count(DISTINCT (post_id, channel_id))::int AS pairs,
           max(n)::int AS most, sum(requests)::int AS sends, count(*) FILTER (WHERE requests > 1)::int AS replayed
      FROM (SELECT *, count(*) OVER (PARTITION BY post_id, channel_id) AS n FROM sandbox_publications) s`.execute(db.kysely);
  assert.deepEqual(
    { publications: platform!.publications, pairs: platform!.pairs, most: platform!.most },
    { publications: DELIVERIES, pairs: DELIVERIES, most: 1 },
    'the platform published every channel of every post exactly once',
  );
  // Only the deliveries the dead publisher had not recorded were sent again, each once.
  assert.deepEqual({ sends: platform!.sends, replayed: platform!.replayed }, { sends: DELIVERIES + lost, replayed: lost });
  assert.equal(await count(sql`SELECT count(*)::int AS n FROM posts WHERE status = 'published'`), POSTS);
  assert.equal(
    await count(sql`
    SELECT count(*)::int AS n FROM post_deliveries d
     WHERE NOT (d.status = 'published' AND d.external_id =
                (SELECT s.id FROM sandbox_publications s WHERE s.post_id = d.post_id AND s.channel_id = d.channel_id))`),
    0,
    'each delivery records the one publication the platform made (a re-send got the first answer)',
  );
});
