// Publisher throughput: 10,000 due posts with 3 channels each, published by
// two publisher loops on two connection pools (as two instances) through the sandbox connector.
// Reports the seconds until every post is published, and checks that every channel of every post
// was sent to exactly once. Target: under 30 s. Then a crash round: CRASH_POSTS more
// due posts, published by a publisher process that is killed with SIGKILL a third of the way
// through and restarted; reports the deliveries the platform made against the sends it received,
// and the time the restarted process took to drain the queue (the lease included). Against the
// machine's PostgreSQL (DATABASE_URL, or postgres://postgres@127.0.0.1:5432/postgres), in a
// database of its own. Not part of npm test.
//
//   npm run bench:publisher            POSTS=20000 BATCH=200 CRASH_POSTS=4000 npm run bench:publisher
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import pg from 'pg';
import { sql, type RawBuilder } from 'kysely';
import { connect } from '../src/db/database.ts';
import { migrate } from '../src/db/migrate.ts';
import { SandboxConnector } from '../src/domain/posts/connector.ts';
import { postRows } from '../src/domain/posts/post.repository.ts';
import { createPublisher } from '../src/domain/posts/publisher.ts';
import { systemClock } from '../src/platform/clock.ts';

const POSTS = Number(process.env.POSTS ?? 10_000);
const CRASH_POSTS = Number(process.env.CRASH_POSTS ?? 4_000);
// The crash round's lease, and how long its platform takes to answer after publishing.
const CRASH_LEASE_MS = 5_000;
const CRASH_ANSWER_MS = 20;
const BATCH = Number(process.env.BATCH ?? 100);
const LOOPS = 2;
const TARGET_SECONDS = 30;
const WORKSPACES = 50;
const PLATFORMS = ['facebook', 'linkedin', 'google_business'] as const;

const serverUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const name = `hubops_bench_publisher_${process.pid}`;
const admin = new pg.Client({ connectionString: serverUrl });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
const dbUrl = new URL(serverUrl);
dbUrl.pathname = `/${name}`;
const db = connect(dbUrl.toString());

try {
  await migrate(db.pool);
  await db.kysely.insertInto('accounts').values({ id: 'acc_bench', name: 'Bench' }).execute();
  await db.kysely.insertInto('hubs').values({ id: 'hub_bench', account_id: 'acc_bench', name: 'Bench' }).execute();
  const workspaces = Array.from({ length: WORKSPACES }, (_, i) => `ws_bench_${i}`);
  await db.kysely
    .insertInto('workspaces')
    .values(workspaces.map((id) => ({ id, hub_id: 'hub_bench', name: id })))
    .execute();
  await db.kysely
    .insertInto('social_channels')
    .values(
      workspaces.flatMap((w) =>
        PLATFORMS.map((platform) => ({
          id: `${w}_${platform}`,
          hub_id: 'hub_bench',
          workspace_id: w,
          platform,
          name: `${w} ${platform}`,
          handle: null,
        })),
      ),
    )
    .execute();

  const due = new Date(Date.now() - 60_000).toISOString();
  const rows = Array.from({ length: POSTS }, (_, i) => {
    const w = workspaces[i % WORKSPACES]!;
    return postRows({
      id: `post_bench_${i}`,
      hubId: 'hub_bench',
      workspaceId: w,
      text: `Bench post ${i}`,
      status: 'scheduled',
      scheduledAt: due,
      createdBy: null,
      channelIds: PLATFORMS.map((p) => `${w}_${p}`),
      mediaIds: [],
    });
  });
  for (let i = 0; i < rows.length; i += 2_000) {
    const chunk = rows.slice(i, i + 2_000);
    await db.kysely
      .insertInto('posts')
      .values(chunk.map((r) => r.post))
      .execute();
    await db.kysely
      .insertInto('post_deliveries')
      .values(chunk.flatMap((r) => r.deliveries))
      .execute();
  }
  await sql`ANALYZE`.execute(db.kysely);
  console.log(
    `${POSTS.toLocaleString('en-US')} due posts × ${PLATFORMS.length} channels; ${LOOPS} publisher loops, batch ${BATCH}, pool 10 each`,
  );

  const pools = Array.from({ length: LOOPS }, () => connect(dbUrl.toString(), { max: 10 }));
  const errors: unknown[] = [];
  const publishers = pools.map((pool) =>
    createPublisher({
      db: pool,
      clock: systemClock,
      connector: new SandboxConnector(pool, systemClock),
      intervalMs: 50,
      batchSize: BATCH,
      onError: (e) => errors.push(e),
    }),
  );
  const started = performance.now();
  for (const p of publishers) p.start();
  let remaining = POSTS;
  while (remaining > 0) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    const { rows: left } = await sql<{
      n: number;
    }>`SELECT count(*)::int AS n FROM posts WHERE status IN ('scheduled', 'publishing')`.execute(db.kysely);
    remaining = left[0]!.n;
    if (errors.length > 0) throw errors[0];
  }
  const seconds = (performance.now() - started) / 1000;
  await Promise.all(publishers.map((p) => p.stop()));
  await Promise.all(pools.map((p) => p.close()));

  const {
    rows: [check],
  } = await sql<{ published: number; deliveries: number; calls: number; pairs: number }>`
    SELECT (SELECT count(*)::int FROM posts WHERE status = 'published') AS published,
           (SELECT count(*)::int FROM post_deliveries WHERE status = 'published') AS deliveries,
           (SELECT count(*)::int FROM sandbox_publications) AS calls,
           (SELECT count(DISTINCT (post_id, channel_id))::int FROM sandbox_publications) AS pairs`.execute(db.kysely);
  const expected = POSTS * PLATFORMS.length;
  const exactlyOnce =
    check!.published === POSTS && check!.deliveries === expected && check!.calls === expected && check!.pairs === expected;
  console.log(
    `published ${check!.published.toLocaleString('en-US')} posts, ${check!.calls.toLocaleString('en-US')} channel publications (${check!.pairs.toLocaleString('en-US')} distinct) in ${seconds.toFixed(2)} s`,
  );
  console.log(
    `${Math.round(POSTS / seconds).toLocaleString('en-US')} posts/s, ${Math.round(expected / seconds).toLocaleString('en-US')} publications/s`,
  );
  console.log(`exactly once: ${exactlyOnce ? 'yes' : 'NO'}; target < ${TARGET_SECONDS} s: ${seconds < TARGET_SECONDS ? 'met' : 'MISSED'}`);
  const crashExactlyOnce = await crashRound(workspaces);
  process.exitCode = exactlyOnce && seconds < TARGET_SECONDS && crashExactlyOnce ? 0 : 1;
} finally {
  await db.close();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}

/** Kill -9 of a publisher process mid-run, then a restart: every delivery still made exactly once? */
async function crashRound(workspaces: string[]): Promise<boolean> {
  const due = new Date(Date.now() - 60_000).toISOString();
  const rows = Array.from({ length: CRASH_POSTS }, (_, i) => {
    const w = workspaces[i % WORKSPACES]!;
    return postRows({
      id: `post_crash_${i}`,
      hubId: 'hub_bench',
      workspaceId: w,
      text: `Crash post ${i}`,
      status: 'scheduled',
      scheduledAt: due,
      createdBy: null,
      channelIds: PLATFORMS.map((p) => `${w}_${p}`),
      mediaIds: [],
    });
  });
  for (let i = 0; i < rows.length; i += 2_000) {
    const chunk = rows.slice(i, i + 2_000);
    await db.kysely
      .insertInto('posts')
      .values(chunk.map((r) => r.post))
      .execute();
    await db.kysely
      .insertInto('post_deliveries')
      .values(chunk.flatMap((r) => r.deliveries))
      .execute();
  }
  const expected = CRASH_POSTS * PLATFORMS.length;
  console.log(
    `\ncrash round: ${CRASH_POSTS.toLocaleString('en-US')} due posts × ${PLATFORMS.length} channels; one publisher process (batch ${BATCH}, lease ${CRASH_LEASE_MS / 1000} s, platform answers within ${CRASH_ANSWER_MS} ms), kill -9 at a third, restart`,
  );
  const count = async (query: RawBuilder<{ n: number }>) => (await query.execute(db.kysely)).rows[0]!.n;
  const recorded = () =>
    count(sql`SELECT count(*)::int AS n FROM post_deliveries WHERE post_id LIKE 'post_crash_%' AND status <> 'pending'`);
  const start = (): ChildProcess =>
    spawn(
      path.join(import.meta.dirname, '../node_modules/.bin/node'),
      [path.join(import.meta.dirname, '../test/content/publisher-process.ts')],
      {
        env: {
          ...process.env,
          DATABASE_URL: dbUrl.toString(),
          BATCH: String(BATCH),
          LEASE_MS: String(CRASH_LEASE_MS),
          ANSWER_MS: String(CRASH_ANSWER_MS),
          INTERVAL_MS: '50',
        },
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );

  const first = start();
  while ((await recorded()) < expected / 3) await new Promise((resolve) => setTimeout(resolve, 10));
  first.kill('SIGKILL');
  await once(first, 'exit');
  const {
    rows: [atKill],
  } = await sql<{ recorded: number; unrecorded: number; claimed: number }>`
    SELECT (SELECT count(*)::int FROM post_deliveries WHERE post_id LIKE 'post_crash_%' AND status <> 'pending') AS recorded,
           (SELECT count(*)::int FROM sandbox_publications s JOIN post_deliveries d ON d.post_id = s.post_id AND d.channel_id = s.channel_id
             WHERE d.post_id LIKE 'post_crash_%' AND d.status = 'pending') AS unrecorded,
           (SELECT count(*)::int FROM posts WHERE id LIKE 'post_crash_%' AND status = 'publishing') AS claimed`.execute(db.kysely);
  console.log(
    `killed: ${atKill!.recorded.toLocaleString('en-US')} deliveries recorded, ${atKill!.unrecorded} sent by the platform but not recorded, ${atKill!.claimed} posts left publishing under the dead lease`,
  );

  const restarted = performance.now();
  const second = start();
  while (
    (await count(sql`SELECT count(*)::int AS n FROM posts WHERE id LIKE 'post_crash_%' AND status IN ('scheduled', 'publishing')`)) > 0
  ) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const drainSeconds = (performance.now() - restarted) / 1000;
  second.kill('SIGTERM');
  await once(second, 'exit');

  const {
    rows: [check],
  } = await sql<{ published: number; deliveries: number; publications: number; pairs: number; sends: number }>`
    SELECT (SELECT count(*)::int FROM posts WHERE id LIKE 'post_crash_%' AND status = 'published') AS published,
           (SELECT count(*)::int FROM post_deliveries WHERE post_id LIKE 'post_crash_%' AND status = 'published') AS deliveries,
           count(*)::int AS publications, count(DISTINCT (post_id, channel_id))::int AS pairs, sum(requests)::int AS sends
      FROM sandbox_publications WHERE post_id LIKE 'post_crash_%'`.execute(db.kysely);
  const exactlyOnce =
    check!.published === CRASH_POSTS && check!.deliveries === expected && check!.publications === expected && check!.pairs === expected;
  console.log(`restart drained the queue in ${drainSeconds.toFixed(2)} s (lease ${CRASH_LEASE_MS / 1000} s included)`);
  console.log(
    `${check!.deliveries.toLocaleString('en-US')} deliveries, ${check!.publications.toLocaleString('en-US')} publications made by the platform, ${check!.sends.toLocaleString('en-US')} sends received (${check!.sends - check!.publications} re-sends answered with the first publication)`,
  );
  console.log(`exactly once after kill -9: ${exactlyOnce ? 'yes' : 'NO'}`);
  return exactlyOnce;
}
