// Publisher throughput (issue 3, benchmark): 10,000 due posts with 3 channels each, published by
// two publisher loops on two connection pools (as two instances) through the sandbox connector.
// Reports the seconds until every post is published, and checks that every channel of every post
// was sent to exactly once. Target: under 30 s. Against the machine's PostgreSQL (DATABASE_URL,
// or postgres://postgres@127.0.0.1:5432/postgres), in a database of its own. Not part of npm test.
//
//   npm run bench:publisher            POSTS=20000 BATCH=200 npm run bench:publisher
import pg from 'pg';
import { sql } from 'kysely';
import { connect } from '../src/db/database.ts';
import { migrate } from '../src/db/migrate.ts';
import { SandboxConnector } from '../src/domain/posts/connector.ts';
import { postRows } from '../src/domain/posts/post.repository.ts';
import { createPublisher } from '../src/domain/posts/publisher.ts';
import { systemClock } from '../src/platform/clock.ts';

const POSTS = Number(process.env.POSTS ?? 10_000);
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
  await db.kysely.insertInto('workspaces').values(workspaces.map((id) => ({ id, hub_id: 'hub_bench', name: id }))).execute();
  await db.kysely.insertInto('social_channels').values(workspaces.flatMap((w) => PLATFORMS.map((platform) => ({
    id: `${w}_${platform}`, hub_id: 'hub_bench', workspace_id: w, platform, name: `${w} ${platform}`, handle: null,
  })))).execute();

  const due = new Date(Date.now() - 60_000).toISOString();
  const rows = Array.from({ length: POSTS }, (_, i) => {
    const w = workspaces[i % WORKSPACES]!;
    return postRows({
      id: `post_bench_${i}`, hubId: 'hub_bench', workspaceId: w, text: `Bench post ${i}`, status: 'scheduled', scheduledAt: due,
      createdBy: null, channelIds: PLATFORMS.map((p) => `${w}_${p}`), mediaIds: [],
    });
  });
  for (let i = 0; i < rows.length; i += 2_000) {
    const chunk = rows.slice(i, i + 2_000);
    await db.kysely.insertInto('posts').values(chunk.map((r) => r.post)).execute();
    await db.kysely.insertInto('post_deliveries').values(chunk.flatMap((r) => r.deliveries)).execute();
  }
  await sql`ANALYZE`.execute(db.kysely);
  console.log(`${POSTS.toLocaleString('en-US')} due posts × ${PLATFORMS.length} channels; ${LOOPS} publisher loops, batch ${BATCH}, pool 10 each`);

  const pools = Array.from({ length: LOOPS }, () => connect(dbUrl.toString(), { max: 10 }));
  const errors: unknown[] = [];
  const publishers = pools.map((pool) => createPublisher({
    db: pool, clock: systemClock, connector: new SandboxConnector(pool, systemClock), intervalMs: 50, batchSize: BATCH, onError: (e) => errors.push(e),
  }));
  const started = performance.now();
  for (const p of publishers) p.start();
  let remaining = POSTS;
  while (remaining > 0) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    const { rows: left } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM posts WHERE status IN ('scheduled', 'publishing')`.execute(db.kysely);
    remaining = left[0]!.n;
    if (errors.length > 0) throw errors[0];
  }
  const seconds = (performance.now() - started) / 1000;
  await Promise.all(publishers.map((p) => p.stop()));
  await Promise.all(pools.map((p) => p.close()));

  const { rows: [check] } = await sql<{ published: number; deliveries: number; calls: number; pairs: number }>`
    SELECT (SELECT count(*)::int FROM posts WHERE status = 'published') AS published,
           (SELECT count(*)::int FROM post_deliveries WHERE status = 'published') AS deliveries,
           (SELECT count(*)::int FROM sandbox_publications) AS calls,
           (SELECT count(DISTINCT (post_id, channel_id))::int FROM sandbox_publications) AS pairs`.execute(db.kysely);
  const expected = POSTS * PLATFORMS.length;
  const exactlyOnce = check!.published === POSTS && check!.deliveries === expected && check!.calls === expected && check!.pairs === expected;
  console.log(`published ${check!.published.toLocaleString('en-US')} posts, ${check!.calls.toLocaleString('en-US')} channel publications (${check!.pairs.toLocaleString('en-US')} distinct) in ${seconds.toFixed(2)} s`);
  console.log(`${Math.round(POSTS / seconds).toLocaleString('en-US')} posts/s, ${Math.round(expected / seconds).toLocaleString('en-US')} publications/s`);
  console.log(`exactly once: ${exactlyOnce ? 'yes' : 'NO'}; target < ${TARGET_SECONDS} s: ${seconds < TARGET_SECONDS ? 'met' : 'MISSED'}`);
  process.exitCode = exactlyOnce && seconds < TARGET_SECONDS ? 0 : 1;
} finally {
  await db.close();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}
