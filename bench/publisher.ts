// npm run bench:publisher — 10,000 due posts × 3 networks, published through the REAL connectors
// (src/integrations/meta-pages/connector.ts for Facebook and Instagram, google-business/connector.ts
// for Business Profile, wired as src/app.ts wires them: src/domain/posts/network-connectors.ts)
// onto the loopback fakes of Meta and Google Business Profile, each in a process of its own
// (bench/network-fake-process.ts), by two publisher processes (test/domain/publisher-process.ts,
// two instances) of which one is killed with SIGKILL a third of the way through, mid-batch, while
// some of its publications are made at the fake and their answers not recorded; a new one starts
// at once. Counted at the fakes (their publication lists), not in our records: no duplicate (each
// channel of each post published once on its network), no loss (every one published and
// recorded with the network's id), every `unconfirmed` delivery reconciled (found by lookup, or
// sent once after the lookup found none), and the time until the queue is drained. Target: < 60 s.
//
// The channels are connected as the app connects them: one Meta connection (a user token) whose
// Pages and Instagram accounts carry their Page tokens, one Business Profile connection (a refresh
// token) for every location, all sealed with src/platform/sealing.ts's Sealer under a key the
// publisher processes open them with; each post carries one image (Instagram publishes nothing
// without media), sent as a signed media URL. Instagram's documented cap is 50 published posts per
// account in 24 h (content_publishing_limit), which the fake enforces: the posts are spread over
// one workspace (a Page, its Instagram account, a location) per 40 posts — 250 for 10,000 — rather
// than raising the fake's cap.
//
// --sandbox-connector: the same run through the SandboxConnector (a table) instead, unconnected
// channels: the publisher's own cost, without the networks' round trips.
//
// Against the machine's PostgreSQL (DATABASE_URL, or postgres://postgres@127.0.0.1:5432/postgres),
// in a database of its own. Not part of npm test.
//
//   npm run bench:publisher           POSTS=20000 BATCH=100 LEASE_MS=3000 npm run bench:publisher
//   npm run bench:publisher -- --sandbox-connector
//   PUBLISHER_FLAGS='--cpu-prof --cpu-prof-dir=/tmp/prof' npm run bench:publisher   (a profile per publisher process
//   that ends normally; FAKE_FLAGS the same for the fakes; bench/profile-summary.ts reads them)
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { hostname, loadavg } from 'node:os';
import path from 'node:path';
import { sql, type RawBuilder } from 'kysely';
import { connect, type Db } from '../src/db/database.ts';
import { migrate } from '../src/db/migrate.ts';
import { postRows } from '../src/domain/posts/post.repository.ts';
import { Sealer, secretsKey } from '../src/platform/sealing.ts';
import { cpuProbe } from './cpu.ts';
import type { FakePublication, FakeReady } from './network-fake-process.ts';
import { scratchDatabase } from './scratch-database.ts';

const SANDBOX = process.argv.includes('--sandbox-connector');
const POSTS = Number(process.env.POSTS ?? 10_000);
/** Posts a publisher claims per round: the app's (src/app.ts). */
const BATCH = Number(process.env.BATCH ?? 50);
/**
 * The lease a dead publisher's posts wait out, the settle delay before a lookup, and each call's
 * deadline (below the settle delay, as the publisher requires): src/policy.ts's 5 min, 2 min and
 * 1 min, scaled down so a crash is over in seconds.
 */
const LEASE_MS = Number(process.env.LEASE_MS ?? 5_000);
const SETTLE_MS = Number(process.env.SETTLE_MS ?? 2_000);
const TIMEOUT_MS = Number(process.env.TIMEOUT_MS ?? 1_500);
if (!(SETTLE_MS > TIMEOUT_MS)) throw new Error(`SETTLE_MS (${SETTLE_MS}) must be longer than TIMEOUT_MS (${TIMEOUT_MS})`);
/** How long the network takes to answer after publishing: the window a kill loses answers in. */
const ANSWER_MS = Number(process.env.ANSWER_MS ?? 10);
/** Posts per workspace: below Instagram's 50 published posts per account in 24 h. */
const POSTS_PER_ACCOUNT = 40;
const WORKSPACES = Math.ceil(POSTS / POSTS_PER_ACCOUNT);
const TARGET_SECONDS = 60;
const PLATFORMS = ['facebook', 'instagram', 'google_business'] as const;
const ROOT = path.join(import.meta.dirname, '..');
const NODE = path.join(ROOT, 'node_modules/.bin/node');
const BASE_URL = 'https://hubops.bench.test/api';

const n = (value: number) => Math.round(value).toLocaleString('en-US');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A process's CPU seconds (utime + stime) and resident memory (now, and its peak), from /proc. */
async function processFigures(pid: number): Promise<{ cpu: number; rssMb: number; peakMb: number } | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const f = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    return { cpu: (f[11]! + f[12]!) / 100, rssMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

/** One network fake in its own process, asked over IPC. */
class Fake {
  readonly child: ChildProcess;
  readonly ready: FakeReady;
  readonly #pending = new Map<number, (result: unknown) => void>();
  #next = 0;

  private constructor(child: ChildProcess, ready: FakeReady) {
    this.child = child;
    this.ready = ready;
    child.on('message', (m: { id?: number; result?: unknown }) => {
      if (m.id === undefined) return;
      this.#pending.get(m.id)?.(m.result);
      this.#pending.delete(m.id);
    });
  }

  static async start(network: 'meta' | 'google_business', channels: number): Promise<Fake> {
    const child = spawn(
      NODE,
      [...flags('FAKE_FLAGS'), path.join(import.meta.dirname, 'network-fake-process.ts'), JSON.stringify({ network, channels })],
      { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
    );
    children.push(child);
    const [ready] = (await Promise.race([
      once(child, 'message'),
      once(child, 'exit').then(() => {
        throw new Error(`the ${network} fake exited before it was ready`);
      }),
    ])) as [FakeReady];
    return new Fake(child, ready);
  }

  ask<T>(op: string, items?: unknown): Promise<T> {
    const id = this.#next++;
    return new Promise<T>((resolve) => {
      this.#pending.set(id, resolve as (result: unknown) => void);
      this.child.send({ id, op, items });
    });
  }
}

/** Where the publications are counted: the networks' fakes, or the sandbox connector's table. */
interface Network {
  name: string;
  /** The network's publication of each (channel, text), or null. */
  lookup(items: { channelId: string; text: string }[]): Promise<(FakePublication | null)[]>;
  /** Every publication, by our channel id. */
  all(): Promise<Map<string, FakePublication[]>>;
  fakes: { name: string; fake: Fake }[];
}

const flags = (name: string) => (process.env[name] ?? '').split(/\s+/).filter(Boolean);
const children: ChildProcess[] = [];
const scratch = await scratchDatabase(`hubops_bench_publisher_${process.pid}`);
const db = connect(scratch.url);
const count = async (query: RawBuilder<{ n: number }>) => (await query.execute(db.kysely)).rows[0]!.n;
const workspaces = Array.from({ length: WORKSPACES }, (_, i) => `ws_bench_${i}`);
const channelId = (w: string, platform: string) => `${w}_${platform}`;

/** Connects every workspace's three channels to the fakes, as the app stores connections; the publishers' environment. */
async function connectToFakes(d: Db): Promise<{ network: Network; env: Record<string, string> }> {
  const [meta, google] = await Promise.all([Fake.start('meta', WORKSPACES), Fake.start('google_business', WORKSPACES)]);
  const key = randomBytes(32);
  const sealer = new Sealer([secretsKey(key)]);
  await d.kysely
    .insertInto('channel_connections')
    .values([
      {
        id: 'conn_meta',
        hub_id: 'hub_bench',
        platform: 'meta',
        label: 'Meta',
        token_sealed: sealer.seal(meta.ready.connectionToken, 'conn_meta'),
      },
      {
        id: 'conn_google',
        hub_id: 'hub_bench',
        platform: 'google_business',
        label: 'Google',
        token_sealed: sealer.seal(google.ready.connectionToken, 'conn_google'),
      },
    ])
    .execute();
  const external = new Map<string, { fake: Fake; id: string }>();
  const rows = workspaces.flatMap((w, i) => {
    const page = meta.ready.channels[i]!;
    const location = google.ready.channels[i]!;
    const ids = { facebook: page.id, instagram: page.instagramId!, google_business: location.id };
    return PLATFORMS.map((platform) => {
      const id = channelId(w, platform);
      external.set(id, { fake: platform === 'google_business' ? google : meta, id: ids[platform] });
      return {
        id,
        hub_id: 'hub_bench',
        workspace_id: w,
        platform,
        name: `${w} ${platform}`,
        handle: null,
        connection_id: platform === 'google_business' ? 'conn_google' : 'conn_meta',
        external_id: ids[platform],
        // A Page token, for the Page and its Instagram account, sealed with the channel id; a location uses the connection's refresh token.
        token_sealed: platform === 'google_business' ? null : sealer.seal(page.token!, id),
      };
    });
  });
  await d.kysely.insertInto('social_channels').values(rows).execute();

  const byFake = (items: { channelId: string; text: string }[]) => {
    const groups = new Map<Fake, { at: number; channel: string; text: string }[]>();
    items.forEach((item, at) => {
      const e = external.get(item.channelId)!;
      groups.set(e.fake, [...(groups.get(e.fake) ?? []), { at, channel: e.id, text: item.text }]);
    });
    return groups;
  };
  const network: Network = {
    name: 'the real connectors on the Meta and Business Profile fakes',
    async lookup(items) {
      const out: (FakePublication | null)[] = items.map(() => null);
      await Promise.all(
        [...byFake(items)].map(async ([fake, group]) => {
          const found = await fake.ask<(FakePublication | null)[]>('find', group);
          for (const [i, g] of group.entries()) out[g.at] = found[i]!;
        }),
      );
      return out;
    },
    async all() {
      const lists = new Map<Fake, Record<string, FakePublication[]>>();
      for (const fake of [meta, google]) lists.set(fake, await fake.ask('publications'));
      return new Map([...external].map(([id, e]) => [id, lists.get(e.fake)![e.id] ?? []]));
    },
    fakes: [
      { name: 'Meta fake', fake: meta },
      { name: 'Business Profile fake', fake: google },
    ],
  };
  const env = {
    CONNECTOR_MODULE: path.join(import.meta.dirname, 'publisher-networks.ts'),
    BENCH_META_URL: meta.ready.url,
    BENCH_GOOGLE_URL: google.ready.url,
    BENCH_GOOGLE_CLIENT_ID: google.ready.clientId!,
    BENCH_GOOGLE_CLIENT_SECRET: google.ready.clientSecret!,
    BENCH_SECRETS_KEY: key.toString('base64'),
    BENCH_COOKIE_KEY: randomBytes(32).toString('base64url'),
    BENCH_BASE_URL: BASE_URL,
  };
  return { network, env };
}

/** Unconnected channels: every delivery goes to the SandboxConnector, which records it in sandbox_publications. */
async function sandboxChannels(d: Db): Promise<Network> {
  await d.kysely
    .insertInto('social_channels')
    .values(
      workspaces.flatMap((w) =>
        PLATFORMS.map((platform) => ({
          id: channelId(w, platform),
          hub_id: 'hub_bench',
          workspace_id: w,
          platform,
          name: `${w} ${platform}`,
          handle: null,
        })),
      ),
    )
    .execute();
  const rows = async (where: RawBuilder<unknown>) =>
    (
      await sql<{ channel_id: string; id: string; text: string; at: Date }>`
        SELECT channel_id, id, text, published_at AS at FROM sandbox_publications WHERE ${where}`.execute(d.kysely)
    ).rows;
  return {
    name: 'the sandbox connector (sandbox_publications)',
    async lookup(items) {
      const found = await rows(
        sql`(channel_id, text) IN (SELECT * FROM unnest(${items.map((i) => i.channelId)}::text[], ${items.map((i) => i.text)}::text[]))`,
      );
      const by = new Map(found.map((r) => [`${r.channel_id}\0${r.text}`, { id: r.id, text: r.text, at: r.at.getTime() }]));
      return items.map((i) => by.get(`${i.channelId}\0${i.text}`) ?? null);
    },
    async all() {
      const out = new Map<string, FakePublication[]>();
      for (const r of await rows(sql`true`))
        out.set(r.channel_id, [...(out.get(r.channel_id) ?? []), { id: r.id, text: r.text, at: r.at.getTime() }]);
      return out;
    },
    fakes: [],
  };
}

function startPublisher(env: Record<string, string>): ChildProcess {
  const child = spawn(NODE, [...flags('PUBLISHER_FLAGS'), path.join(ROOT, 'test/domain/publisher-process.ts')], {
    cwd: ROOT,
    env: {
      ...process.env,
      ...env,
      DATABASE_URL: scratch.url,
      BATCH: String(BATCH),
      LEASE_MS: String(LEASE_MS),
      SETTLE_MS: String(SETTLE_MS),
      TIMEOUT_MS: String(TIMEOUT_MS),
      ANSWER_MS: String(ANSWER_MS),
      INTERVAL_MS: '50',
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
  await db.kysely
    .insertInto('workspaces')
    .values(workspaces.map((id) => ({ id, hub_id: 'hub_bench', name: id })))
    .execute();
  const { network, env } = SANDBOX ? { network: await sandboxChannels(db), env: {} } : await connectToFakes(db);
  const due = new Date(Date.now() - 60_000).toISOString();
  const posts = Array.from({ length: POSTS }, (_, i) => {
    const w = workspaces[i % WORKSPACES]!;
    const media = {
      id: `med_bench_${i}`,
      hub_id: 'hub_bench',
      workspace_id: w,
      kind: 'image' as const,
      content_type: 'image/jpeg' as const,
      filename: `bench-${i}.jpg`,
      byte_size: 180_000,
      width: 1080,
      height: 1080,
      sha256: randomBytes(32),
      storage_key: `hub_bench/${w}/med_bench_${i}.jpg`,
    };
    const rows = postRows({
      id: `post_bench_${i}`,
      hubId: 'hub_bench',
      workspaceId: w,
      text: `Bench post ${i}: this week at ${w}, fresh from the oven`,
      status: 'scheduled',
      scheduledAt: due,
      createdBy: null,
      channelIds: PLATFORMS.map((p) => channelId(w, p)),
      mediaIds: [media.id],
    });
    return { ...rows, asset: media };
  });
  for (let i = 0; i < posts.length; i += 2_000) {
    const chunk = posts.slice(i, i + 2_000);
    await db.kysely
      .insertInto('media_assets')
      .values(chunk.map((r) => r.asset))
      .execute();
    await db.kysely
      .insertInto('posts')
      .values(chunk.map((r) => r.post))
      .execute();
    await db.kysely
      .insertInto('post_deliveries')
      .values(chunk.flatMap((r) => r.deliveries))
      .execute();
    await db.kysely
      .insertInto('post_media')
      .values(chunk.flatMap((r) => r.media))
      .execute();
  }
  await sql`ANALYZE`.execute(db.kysely);
  const textOf = new Map(posts.map((p) => [p.post.id, p.post.text]));
  const expected = POSTS * PLATFORMS.length;
  const load = loadavg();
  console.log(
    `${n(POSTS)} due posts × ${PLATFORMS.length} networks (Facebook, Instagram, Business Profile) over ${n(WORKSPACES)} workspaces (${POSTS_PER_ACCOUNT} posts per Instagram account: its cap is 50 in 24 h), one image each; through ${network.name}`,
  );
  console.log(
    `2 publisher processes (batch ${BATCH}, lease ${LEASE_MS / 1000} s, settle ${SETTLE_MS / 1000} s, call deadline ${TIMEOUT_MS / 1000} s, each answer held up to ${ANSWER_MS} ms after the network published); kill -9 of one at a third, a new one started at once`,
  );
  console.log(`load average before: ${load.map((l) => l.toFixed(2)).join(' ')} (2 cores)`);

  // PostgreSQL's CPU: its backends of this database, sampled every half second, each from when it
  // was first seen (or from 0, when it started during the run) to when it was last seen: a backend
  // that goes away (the killed publisher's, an idle pool connection) keeps what it used.
  const probe = await cpuProbe(scratch.url);
  const cpuAtStart = await probe?.();
  const backends = new Map<number, { first: number; last: number }>();
  for (const [pid, s] of cpuAtStart?.postgres ?? []) backends.set(pid, { first: s, last: s });
  const sampleBackends = async () => {
    for (const [pid, s] of (await probe?.())?.postgres ?? []) {
      const b = backends.get(pid);
      if (b) b.last = s;
      else backends.set(pid, { first: 0, last: s });
    }
  };
  let sampling = Promise.resolve();
  const sampler = setInterval(() => {
    sampling = sampling.then(sampleBackends, () => undefined);
  }, 500);
  sampler.unref();
  const recorded = () => count(sql`SELECT count(*)::int AS n FROM post_deliveries WHERE status IN ('published', 'failed')`);
  const started = performance.now();
  const doomed = startPublisher(env);
  const survivor = startPublisher(env);
  // The dead publisher's claim: the publisher names itself host:pid:random.
  const doomedClaim = `${hostname()}:${doomed.pid}:`;
  const leftBehind = async () =>
    (
      await sql<{ post_id: string; channel_id: string; attempt_started_at: Date }>`
        SELECT d.post_id, d.channel_id, d.attempt_started_at FROM post_deliveries d JOIN posts p ON p.id = d.post_id
         WHERE d.status = 'publishing' AND starts_with(p.claimed_by, ${doomedClaim})`.execute(db.kysely)
    ).rows;
  const atNetwork = async (rows: { post_id: string; channel_id: string }[]) =>
    rows.length === 0 ? [] : network.lookup(rows.map((r) => ({ channelId: r.channel_id, text: textOf.get(r.post_id)! })));

  // The bench's own polls are cheap (index scans) and rare enough not to weigh on PostgreSQL.
  const postsDone = () => count(sql`SELECT count(*)::int AS n FROM posts WHERE hub_id = 'hub_bench' AND status IN ('published', 'failed')`);
  while ((await postsDone()) < POSTS / 3) await sleep(100);
  // Kill while some of its publications are made at the network and their answers not recorded
  // (looked for again and again: its batch moves on between the look and the kill).
  for (const until = performance.now() + 10_000; performance.now() < until; await sleep(2)) {
    if ((await atNetwork(await leftBehind())).some((p) => p !== null)) break;
  }
  const doomedFigures = await processFigures(doomed.pid!);
  doomed.kill('SIGKILL');
  await once(doomed, 'exit');
  const killedAfter = (performance.now() - started) / 1000;
  const left = await leftBehind();
  const sentAtKill = (await atNetwork(left)).filter((p) => p !== null).length;
  const recordedAtKill = await recorded();
  const replacement = startPublisher(env);
  console.log(
    `killed at ${killedAfter.toFixed(2)} s: ${n(recordedAtKill)} deliveries recorded; the dead publisher left ${left.length} deliveries publishing, ${sentAtKill} of them already published at the network (answer not recorded)`,
  );

  // A post leaves `publishing` only when every delivery is published or failed (postOutcome).
  // Two probes of the publisher's own partial indexes (due, lease): no scan of the table.
  const open = () =>
    count(
      sql`SELECT ((EXISTS (SELECT FROM posts WHERE status = 'scheduled')) OR (EXISTS (SELECT FROM posts WHERE status = 'publishing')))::int AS n`,
    );
  while ((await open()) > 0) {
    await sleep(50);
    if (performance.now() - started > 10 * 60_000) throw new Error('not drained within 10 minutes');
  }
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  await sampling;
  await sampleBackends();
  const cpuAtEnd = await probe?.();
  const figures = {
    survivor: await processFigures(survivor.pid!),
    replacement: await processFigures(replacement.pid!),
    fakes: await Promise.all(network.fakes.map(async (f) => ({ name: f.name, figures: await processFigures(f.fake.child.pid!) }))),
  };
  const loadAfter = loadavg();

  // --- At the network: each (channel, post) once, and the one our delivery recorded.
  const publications = await network.all();
  const deliveries = await sql<{ post_id: string; channel_id: string; status: string; external_id: string | null }>`
    SELECT post_id, channel_id, status, external_id FROM post_deliveries`.execute(db.kysely);
  const wanted = new Map<string, string | null>(); // channel \0 text → the external id we recorded
  for (const d of deliveries.rows) wanted.set(`${d.channel_id}\0${textOf.get(d.post_id)}`, d.status === 'published' ? d.external_id : null);
  let made = 0;
  let duplicates = 0;
  let unexpected = 0;
  let mismatched = 0;
  const seen = new Set<string>();
  for (const [channel, list] of publications) {
    for (const p of list) {
      made++;
      const k = `${channel}\0${p.text}`;
      if (seen.has(k)) duplicates++;
      else if (!wanted.has(k)) unexpected++;
      else if (wanted.get(k) !== p.id) mismatched++;
      seen.add(k);
    }
  }
  const missing = [...wanted.keys()].filter((k) => !seen.has(k)).length;
  // What a failure looks like: the first few pairs published twice, with their delivery's record.
  const leftKeys = new Set(left.map((r) => `${r.channel_id}\0${textOf.get(r.post_id)}`));
  const postOfText = new Map(posts.map((p) => [p.post.text, p.post.id]));
  const twice = [...publications].flatMap(([channel, list]) => {
    const byText = new Map<string, FakePublication[]>();
    for (const p of list) byText.set(p.text, [...(byText.get(p.text) ?? []), p]);
    return [...byText].filter(([, same]) => same.length > 1).map(([text, same]) => ({ channel, text, same }));
  });
  for (const { channel, text, same } of twice.slice(0, 5)) {
    const postId = postOfText.get(text)!;
    const {
      rows: [d],
    } = await sql<{ attempt_started_at: Date; attempts: number; external_id: string }>`
      SELECT d.attempt_started_at, p.attempts, d.external_id FROM post_deliveries d JOIN posts p ON p.id = d.post_id
       WHERE d.post_id = ${postId} AND d.channel_id = ${channel}`.execute(db.kysely);
    console.log(
      `  twice: ${postId} on ${channel} at ${same.map((p) => `${new Date(p.at).toISOString().slice(11, 23)} (${p.id})`).join(', ')}; recorded ${d?.external_id}, attempt ${d?.attempt_started_at.toISOString().slice(11, 23)}, claimed ${d?.attempts} times${leftKeys.has(`${channel}\0${text}`) ? ', left by the dead publisher' : ''}`,
    );
  }
  const reclaimedLive = await count(sql`
    SELECT count(*)::int AS n FROM posts p
     WHERE p.attempts > 1 AND p.id <> ALL(${[...new Set(left.map((r) => r.post_id))]}::text[])`);
  if (reclaimedLive > 0)
    console.log(`${reclaimedLive} posts of live publishers were claimed again (a round outlived the ${LEASE_MS / 1000} s lease)`);
  const {
    rows: [check],
  } = await sql<{ posts: number; deliveries: number; failed: number }>`
    SELECT (SELECT count(*)::int FROM posts WHERE status = 'published') AS posts,
           (SELECT count(*)::int FROM post_deliveries WHERE status = 'published') AS deliveries,
           (SELECT count(*)::int FROM post_deliveries WHERE status = 'failed') AS failed`.execute(db.kysely);

  // --- The dead publisher's deliveries: made unconfirmed when its lease ran out, then looked up.
  // Found: recorded from the lookup, in the attempt it was sent in. Sent again: a new attempt.
  const ends = await sql<{ post_id: string; channel_id: string; status: string; attempt_started_at: Date | null }>`
    SELECT post_id, channel_id, status, attempt_started_at FROM post_deliveries
     WHERE (post_id, channel_id) IN (SELECT * FROM unnest(${left.map((r) => r.post_id)}::text[], ${left.map((r) => r.channel_id)}::text[]))`.execute(
    db.kysely,
  );
  const attemptOf = new Map(left.map((r) => [`${r.post_id}\0${r.channel_id}`, r.attempt_started_at.getTime()]));
  let found = 0;
  let resent = 0;
  for (const e of ends.rows) {
    if (e.status !== 'published') continue;
    if (e.attempt_started_at?.getTime() === attemptOf.get(`${e.post_id}\0${e.channel_id}`)) found++;
    else resent++;
  }

  const noDuplicate = duplicates === 0 && unexpected === 0;
  const noLoss = missing === 0 && mismatched === 0 && made === expected && check!.deliveries === expected && check!.posts === POSTS;
  const reconciled = found + resent === left.length && found >= sentAtKill;
  const answersLost = sentAtKill > 0;
  const fast = seconds < TARGET_SECONDS;
  console.log(
    `drained in ${seconds.toFixed(2)} s (the ${LEASE_MS / 1000} s lease the dead publisher's posts wait out included): ${n(POSTS / seconds)} posts/s, ${n(expected / seconds)} deliveries/s`,
  );
  console.log(
    `at the network: ${n(made)} publications, ${n(seen.size - unexpected)} of the ${n(expected)} post × channel pairs, ${duplicates} twice, ${missing} missing, ${unexpected} unknown; recorded: ${n(check!.deliveries)} deliveries published (${mismatched} with another id than the network's), ${check!.failed} failed, ${n(check!.posts)} posts published`,
  );
  console.log(
    `unconfirmed: the dead publisher's ${left.length} deliveries (${sentAtKill} published at the network, answer lost), looked up after its lease: ${found} found and recorded, ${resent} sent again after the lookup found none`,
  );
  for (const f of network.fakes) {
    const served = await f.fake.ask<Record<string, number>>('requests');
    const total = Object.values(served).reduce((a, b) => a + b, 0);
    console.log(`${f.name}: ${n(total)} requests (${(total / POSTS).toFixed(2)} per post)`);
    for (const [route, k] of Object.entries(served).sort((a, b) => b[1] - a[1])) console.log(`  ${n(k).padStart(7)}  ${route}`);
  }
  const mb = (f: { rssMb: number; peakMb: number } | undefined) => (f ? `${f.rssMb.toFixed(0)} MB (peak ${f.peakMb.toFixed(0)} MB)` : '?');
  const cpu = (f: { cpu: number } | undefined) => (f ? `${f.cpu.toFixed(1)} s CPU` : '?');
  console.log(
    `publisher processes: killed one ${mb(doomedFigures)} at the kill, ${cpu(doomedFigures)}; survivor ${mb(figures.survivor)}, ${cpu(figures.survivor)}; replacement ${mb(figures.replacement)}, ${cpu(figures.replacement)}`,
  );
  for (const f of figures.fakes) console.log(`${f.name} process: ${mb(f.figures)}, ${cpu(f.figures)}`);
  if (cpuAtStart && cpuAtEnd) {
    const pgCpu = [...backends.values()].reduce((sum, b) => sum + b.last - b.first, 0);
    const ours =
      pgCpu +
      (doomedFigures?.cpu ?? 0) +
      (figures.survivor?.cpu ?? 0) +
      (figures.replacement?.cpu ?? 0) +
      figures.fakes.reduce((sum, f) => sum + (f.figures?.cpu ?? 0), 0) +
      (cpuAtEnd.bench - cpuAtStart.bench);
    const machine = cpuAtEnd.machine - cpuAtStart.machine;
    console.log(
      `CPU during the run: PostgreSQL ${pgCpu.toFixed(1)} s; the whole machine ${machine.toFixed(1)} s of ${(2 * seconds).toFixed(1)} (2 cores), of which ${Math.max(0, machine - ours).toFixed(1)} s other work`,
    );
  }
  console.log(`load average after: ${loadAfter.map((l) => l.toFixed(2)).join(' ')}`);
  console.log(`no duplicate: ${noDuplicate ? 'PASS' : 'FAIL'}`);
  console.log(`no loss (every delivery published once and recorded with the network's id): ${noLoss ? 'PASS' : 'FAIL'}`);
  console.log(`every unconfirmed delivery reconciled (found, or sent again after none was found): ${reconciled ? 'PASS' : 'FAIL'}`);
  console.log(`the kill landed mid-batch with answers lost (published at the network, not recorded): ${answersLost ? 'PASS' : 'FAIL'}`);
  console.log(`drained < ${TARGET_SECONDS} s: ${fast ? 'PASS' : 'FAIL'} (${seconds.toFixed(2)} s)`);
  ok = noDuplicate && noLoss && reconciled && answersLost && fast;
} finally {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  await Promise.all(children.map((c) => (c.exitCode === null && c.signalCode === null ? once(c, 'exit') : undefined)));
  await db.close();
  await scratch.drop();
}
process.exitCode = ok ? 0 : 1;
