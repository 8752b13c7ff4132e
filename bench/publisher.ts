// Publisher benchmark: 10,000 due posts × 3 channels, published by two publisher processes (as two
// instances) of which one is killed with SIGKILL a third of the way through and replaced by a new
// one. Counted at the network (the sandbox's publications), not only in our records: no duplicate
// (each channel of each post published once), no loss (every delivery published), every
// `unconfirmed` delivery reconciled, and the time until the queue is drained. Target: < 60 s.
//
// The network is the SandboxConnector by default. CONNECTOR_MODULE=<path> plugs another one in: a
// module exporting `benchConnector(db, clock): Connector` (e.g. a loopback sandbox of Meta or
// Google Business Profile), used by every publisher process; it must count its publications for
// the checks, so the module may also export `countPublications(db): Promise<{ publications,
// pairs }>` (default: sandbox_publications).
//
// Against the machine's PostgreSQL (DATABASE_URL, or postgres://postgres@127.0.0.1:5432/postgres),
// in a database of its own. Not part of npm test.
//
//   npm run bench:publisher            POSTS=20000 BATCH=200 npm run bench:publisher
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import pg from 'pg';
import { sql, type RawBuilder } from 'kysely';
import { connect, type Db } from '../src/db/database.ts';
import { migrate } from '../src/db/migrate.ts';
import { postRows } from '../src/domain/posts/post.repository.ts';

const POSTS = Number(process.env.POSTS ?? 10_000);
const BATCH = Number(process.env.BATCH ?? 100);
/** The lease a dead publisher's posts wait out, and the settle delay before a lookup. */
const LEASE_MS = Number(process.env.LEASE_MS ?? 5_000);
const SETTLE_MS = Number(process.env.SETTLE_MS ?? 1_000);
/** How long the network takes to answer after publishing: the window a kill loses answers in. */
const ANSWER_MS = Number(process.env.ANSWER_MS ?? 10);
const TARGET_SECONDS = 60;
const WORKSPACES = 50;
const PLATFORMS = ['facebook', 'instagram', 'google_business'] as const;
const ROOT = path.join(import.meta.dirname, '..');

const serverUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const name = `hubops_bench_publisher_${process.pid}`;
const admin = new pg.Client({ connectionString: serverUrl });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
const dbUrl = new URL(serverUrl);
dbUrl.pathname = `/${name}`;
const db = connect(dbUrl.toString());
const children: ChildProcess[] = [];

type Counter = (db: Db) => Promise<{ publications: number; pairs: number }>;
const countPublications: Counter = process.env.CONNECTOR_MODULE
  ? (((await import(path.resolve(process.env.CONNECTOR_MODULE))) as { countPublications?: Counter }).countPublications ?? sandboxCount)
  : sandboxCount;

async function sandboxCount(d: Db): Promise<{ publications: number; pairs: number }> {
  const { rows } = await sql<{ publications: number; pairs: number }>`
    SELECT count(*)::int AS publications, count(DISTINCT (post_id, channel_id))::int AS pairs FROM sandbox_publications`.execute(d.kysely);
  return rows[0]!;
}

const count = async (query: RawBuilder<{ n: number }>) => (await query.execute(db.kysely)).rows[0]!.n;

function startPublisher(): ChildProcess {
  const child = spawn(path.join(ROOT, 'node_modules/.bin/node'), [path.join(ROOT, 'test/domain/publisher-process.ts')], {
    env: {
      ...process.env,
      DATABASE_URL: dbUrl.toString(),
      BATCH: String(BATCH),
      LEASE_MS: String(LEASE_MS),
      SETTLE_MS: String(SETTLE_MS),
      ANSWER_MS: String(ANSWER_MS),
      INTERVAL_MS: '50',
      ...(process.env.CONNECTOR_MODULE ? { CONNECTOR_MODULE: path.resolve(process.env.CONNECTOR_MODULE) } : {}),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  return child;
}

let ok = false;
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
  const expected = POSTS * PLATFORMS.length;
  console.log(
    `${POSTS.toLocaleString('en-US')} due posts × ${PLATFORMS.length} channels; 2 publisher processes (batch ${BATCH}, lease ${LEASE_MS / 1000} s, settle ${SETTLE_MS / 1000} s, network answers within ${ANSWER_MS} ms); ${process.env.CONNECTOR_MODULE ? `connector ${process.env.CONNECTOR_MODULE}` : 'sandbox connector'}`,
  );
  console.log('kill -9 of one publisher at a third, a new one started at once');

  const recorded = () => count(sql`SELECT count(*)::int AS n FROM post_deliveries WHERE status IN ('published', 'failed')`);
  const started = performance.now();
  const doomed = startPublisher();
  startPublisher();
  while ((await recorded()) < expected / 3) await new Promise((resolve) => setTimeout(resolve, 10));
  doomed.kill('SIGKILL');
  await once(doomed, 'exit');
  const killedAfter = (performance.now() - started) / 1000;
  const {
    rows: [atKill],
  } = await sql<{ recorded: number; publishing: number; sent: number }>`
    SELECT (SELECT count(*)::int FROM post_deliveries WHERE status IN ('published', 'failed')) AS recorded,
           (SELECT count(*)::int FROM post_deliveries WHERE status = 'publishing') AS publishing,
           (SELECT count(*)::int FROM post_deliveries d WHERE d.status = 'publishing'
               AND EXISTS (SELECT 1 FROM sandbox_publications s WHERE s.post_id = d.post_id AND s.channel_id = d.channel_id)) AS sent`.execute(
    db.kysely,
  );
  startPublisher();
  console.log(
    `killed at ${killedAfter.toFixed(2)} s: ${atKill!.recorded.toLocaleString('en-US')} deliveries recorded, ${atKill!.publishing} publishing (${atKill!.sent} of them already published by the network, answer not recorded)`,
  );

  while (
    (await count(sql`SELECT count(*)::int AS n FROM post_deliveries WHERE status NOT IN ('published', 'failed')`)) > 0 ||
    (await count(sql`SELECT count(*)::int AS n FROM posts WHERE status IN ('scheduled', 'publishing')`)) > 0
  ) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    if (performance.now() - started > 10 * 60_000) throw new Error('not drained within 10 minutes');
  }
  const seconds = (performance.now() - started) / 1000;

  const network = await countPublications(db);
  const {
    rows: [check],
  } = await sql<{ posts: number; deliveries: number; failed: number }>`
    SELECT (SELECT count(*)::int FROM posts WHERE status = 'published') AS posts,
           (SELECT count(*)::int FROM post_deliveries WHERE status = 'published') AS deliveries,
           (SELECT count(*)::int FROM post_deliveries WHERE status = 'failed') AS failed`.execute(db.kysely);
  const noDuplicate = network.publications === network.pairs;
  const noLoss = network.pairs === expected && check!.deliveries === expected && check!.posts === POSTS;
  const fast = seconds < TARGET_SECONDS;
  console.log(
    `drained in ${seconds.toFixed(2)} s (lease ${LEASE_MS / 1000} s and settle ${SETTLE_MS / 1000} s included): ${Math.round(POSTS / seconds).toLocaleString('en-US')} posts/s, ${Math.round(expected / seconds).toLocaleString('en-US')} deliveries/s`,
  );
  console.log(
    `network: ${network.publications.toLocaleString('en-US')} publications for ${network.pairs.toLocaleString('en-US')} post×channel pairs (expected ${expected.toLocaleString('en-US')}); recorded: ${check!.deliveries.toLocaleString('en-US')} deliveries published, ${check!.failed} failed, ${check!.posts.toLocaleString('en-US')} posts published`,
  );
  console.log(`no duplicate: ${noDuplicate ? 'PASS' : 'FAIL'}`);
  console.log(`no loss (every delivery published, every unconfirmed one reconciled): ${noLoss ? 'PASS' : 'FAIL'}`);
  console.log(`drained < ${TARGET_SECONDS} s: ${fast ? 'PASS' : 'FAIL'} (${seconds.toFixed(2)} s)`);
  ok = noDuplicate && noLoss && fast;
} finally {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  await Promise.all(children.map((c) => (c.exitCode === null && c.signalCode === null ? once(c, 'exit') : undefined)));
  await db.close();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}
process.exitCode = ok ? 0 : 1;
