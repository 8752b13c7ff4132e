// Spend sync throughput: a backfill of ACCOUNTS accounts × AD_SETS ad sets × 90 days × 24 hours
// from the sandboxes over loopback (each sandbox in a process of its own), synced by the real
// engine (the platforms' clients, UTC-day mapping, attribution, per-chunk transactions) into a
// database of its own; then an incremental run of the same accounts, as the hourly schedule runs
// it (the lookback re-read). Two scenarios: every account on Meta, and the same volume split over
// Meta, Google Ads and ChatGPT Ads (mixed). Prints per scenario source rows per second (target
// ≥ 50,000), peak RSS of the benchmark process (target < 300 MB: pages are streamed, never a whole
// answer held) and the incremental run's time (target < 30 s), each with PASS/FAIL. Not part of npm test.
//
//   npm run bench:sync        ACCOUNTS=5 AD_SETS=20 npm run bench:sync        SCENARIOS=mixed npm run bench:sync
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { sql } from 'kysely';
import { connect, type Db } from '../src/db/database.ts';
import { migrate } from '../src/db/migrate.ts';
import { connectAdAccounts, syncNow, type AdSyncDeps } from '../src/domain/ad-sync/ad-account.service.ts';
import type { AdPlatformClient } from '../src/integrations/ad-platform.ts';
import { createGoogleAdsClient } from '../src/integrations/google-ads/client.ts';
import { createMetaClient } from '../src/integrations/meta/client.ts';
import { createOpenAIAdsClient } from '../src/integrations/openai-ads/client.ts';
import { systemClock } from '../src/platform/clock.ts';
import { Sealer, secretsKey } from '../src/platform/sealing.ts';
import { SPEND_BACKFILL_DAYS } from '../src/policy.ts';
import { scratchDatabase } from './scratch-database.ts';
import type { BenchPlatform } from './sync-accounts.ts';

const ACCOUNTS = Number(process.env.ACCOUNTS ?? 20);
const AD_SETS = Number(process.env.AD_SETS ?? 100);
/** Accounts synced at once, as one instance's loop does (src/app.ts). */
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 2);
const WORKSPACES = 50;
const TARGETS = { rowsPerSecond: 50_000, peakRssMb: 300, incrementalSeconds: 30 };
const PLATFORM_NAMES: Record<BenchPlatform, string> = { meta: 'Meta', google_ads: 'Google Ads', chatgpt_ads: 'ChatGPT Ads' };

/** Which platforms hold how many of the ACCOUNTS accounts, per scenario. */
const third = Math.ceil(ACCOUNTS / 3);
const SCENARIOS: Record<string, [BenchPlatform, number][]> = {
  meta: [['meta', ACCOUNTS]],
  mixed: [
    ['meta', third],
    ['google_ads', third],
    ['chatgpt_ads', ACCOUNTS - 2 * third],
  ],
};
const chosen = (process.env.SCENARIOS ?? 'meta,mixed').split(',').filter((name) => SCENARIOS[name]);

const log = (line: string) => process.stderr.write(`${line}\n`);
const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
const sealer = new Sealer([secretsKey(Buffer.alloc(32, 7))]);
const children: ChildProcess[] = [];

// Peak RSS of this process (the engine's side), sampled per scenario.
let peakRss = 0;
const sampler = setInterval(() => {
  peakRss = Math.max(peakRss, process.memoryUsage.rss());
}, 50);

interface Ready {
  url: string;
  credentials: { secret: string; externalIds: string[] }[];
  clientId?: string;
  clientSecret?: string;
}

/** Starts one platform's sandbox process with accounts first … first + count − 1. */
async function sandbox(platform: BenchPlatform, first: number, count: number): Promise<Ready> {
  const child = spawn(
    process.execPath,
    [
      path.join(import.meta.dirname, 'sandbox-process.ts'),
      JSON.stringify({ platform, first, count, adSets: AD_SETS, workspaces: WORKSPACES }),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  children.push(child);
  const [line] = (await once(createInterface({ input: child.stdout! }), 'line')) as [string];
  return JSON.parse(line) as Ready;
}

function clientFor(platform: BenchPlatform, ready: Ready): AdPlatformClient {
  if (platform === 'meta') return createMetaClient({ graphUrl: ready.url });
  if (platform === 'google_ads')
    return createGoogleAdsClient({ adsUrl: ready.url, oauthUrl: ready.url, clientId: ready.clientId!, clientSecret: ready.clientSecret! });
  return createOpenAIAdsClient({ baseUrl: ready.url });
}

/** The client, counting the rows it hands the engine. */
function counting(client: AdPlatformClient, count: (rows: number) => void): AdPlatformClient {
  return {
    platform: client.platform,
    describeAccount: (c, ref) => client.describeAccount(c, ref),
    listAccounts: (c) => client.listAccounts(c),
    async *readSpend(c, account, range, signal) {
      for await (const batch of client.readSpend(c, account, range, signal)) {
        count(batch.length);
        yield batch;
      }
    },
  };
}

/** One scenario on a database of its own: the same workspace ids, nothing left from the one before. */
async function runScenario(name: string, split: [BenchPlatform, number][]): Promise<string[]> {
  const scratch = await scratchDatabase(`hubops_bench_sync_${name}`);
  const db = connect(scratch.url, { max: 10 });
  try {
    await migrate(db.pool);
    return await runOn(db, name, split);
  } finally {
    await db.close();
    await scratch.drop();
  }
}

async function runOn(db: Db, name: string, split: [BenchPlatform, number][]): Promise<string[]> {
  const hubId = 'hub_bench';
  await db.kysely.insertInto('accounts').values({ id: 'acc_bench', name: 'Bench' }).execute();
  await db.kysely
    .insertInto('hubs')
    .values({ id: hubId, account_id: 'acc_bench', name: `Bench ${name}` })
    .execute();
  await db.kysely
    .insertInto('workspaces')
    .values(Array.from({ length: WORKSPACES }, (_, i) => ({ id: `ws_bench_${i}`, hub_id: hubId, name: `Bench ${i}` })))
    .execute();
  let sourceRows = 0;
  const clients: AdSyncDeps['clients'] = {};
  const accountIds: string[] = [];
  let first = 0;
  const pending: { platform: BenchPlatform; ready: Ready }[] = [];
  for (const [platform, count] of split) {
    if (count <= 0) continue;
    const ready = await sandbox(platform, first, count);
    first += count;
    clients[platform] = counting(clientFor(platform, ready), (rows) => {
      sourceRows += rows;
    });
    pending.push({ platform, ready });
  }
  const deps: AdSyncDeps = { db, clock: systemClock, clients, sealer };
  for (const { platform, ready } of pending) {
    for (const credential of ready.credentials) {
      const connected = await connectAdAccounts(deps, hubId, {
        platform,
        kind: platform === 'meta' ? 'system_user' : platform === 'google_ads' ? 'oauth' : 'api_key',
        accessToken: credential.secret,
        tokenExpiresAt: null,
        externalIds: credential.externalIds,
        label: `bench ${platform}`,
      });
      accountIds.push(...connected.map((a) => a.id));
    }
  }

  /** Syncs every account, CONCURRENCY at a time; the seconds it took. */
  async function syncAll(): Promise<number> {
    const queue = [...accountIds];
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
          const outcome = await syncNow(deps, hubId, id);
          if (outcome.status !== 'done') throw new Error(`${id}: ${outcome.status}: ${'message' in outcome ? outcome.message : ''}`);
        }
      }),
    );
    return (performance.now() - started) / 1000;
  }

  const what = split
    .filter(([, n]) => n > 0)
    .map(([p, n]) => `${n} ${PLATFORM_NAMES[p]}`)
    .join(' + ');
  peakRss = process.memoryUsage.rss();
  log(`${name}: backfill of ${what} accounts × ${AD_SETS} ad sets × ${SPEND_BACKFILL_DAYS} days × 24 hours, ${CONCURRENCY} at a time…`);
  const backfillSeconds = await syncAll();
  const backfillRows = sourceRows;
  log(`${name}: incremental, the same accounts again (the lookback re-read)…`);
  sourceRows = 0;
  const incrementalSeconds = await syncAll();
  const incrementalRows = sourceRows;
  const peakMb = peakRss / 2 ** 20;
  const {
    rows: [stored],
  } = await sql<{ platform_rows: string; spend_rows: string; cents: string }>`
    SELECT (SELECT count(*) FROM ad_spend_rows) AS platform_rows, (SELECT count(*) FROM spend) AS spend_rows,
           (SELECT coalesce(sum(spend_cents), 0) FROM spend) AS cents`.execute(db.kysely);
  const rowsPerSecond = backfillRows / backfillSeconds;
  return [
    `| ${name}: ${what} | backfill source rows | ${backfillRows.toLocaleString('en-US')} in ${backfillSeconds.toFixed(1)} s | | |`,
    `| | backfill source rows per second | ${Math.round(rowsPerSecond).toLocaleString('en-US')} | ≥ ${TARGETS.rowsPerSecond.toLocaleString('en-US')} | ${verdict(rowsPerSecond >= TARGETS.rowsPerSecond)} |`,
    `| | peak RSS (sampled) | ${peakMb.toFixed(0)} MB | < ${TARGETS.peakRssMb} MB | ${verdict(peakMb < TARGETS.peakRssMb)} |`,
    `| | incremental run (${incrementalRows.toLocaleString('en-US')} source rows) | ${incrementalSeconds.toFixed(1)} s | < ${TARGETS.incrementalSeconds} s | ${verdict(incrementalSeconds < TARGETS.incrementalSeconds)} |`,
    `| | stored | ${Number(stored!.platform_rows).toLocaleString('en-US')} platform rows (UTC day × ad set), ${Number(stored!.spend_rows).toLocaleString('en-US')} spend rows, ${(Number(stored!.cents) / 100).toLocaleString('en-US')} USD | | |`,
  ];
}

try {
  const lines: string[] = [];
  for (const name of chosen) lines.push(...(await runScenario(name, SCENARIOS[name]!)));
  const kernelPeakMb = (process.resourceUsage().maxRSS * 1024) / 2 ** 20;
  console.log(`\nSpend sync (sandboxes over loopback, each in its own process; ${CONCURRENCY} accounts at a time)\n`);
  console.log('| scenario | figure | value | target | |');
  console.log('|---|---|---|---|---|');
  for (const line of lines) console.log(line);
  console.log(
    `| all | peak RSS of the process (kernel) | ${kernelPeakMb.toFixed(0)} MB | < ${TARGETS.peakRssMb} MB | ${verdict(kernelPeakMb < TARGETS.peakRssMb)} |`,
  );
} finally {
  clearInterval(sampler);
  for (const child of children) child.kill('SIGTERM');
}
