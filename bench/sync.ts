// Spend sync throughput: a Meta backfill of ACCOUNTS accounts × AD_SETS ad sets × 90 days × 24
// hours from the sandbox over loopback (the sandbox in a process of its own), synced by the real
// engine (Meta client, UTC-day mapping, attribution, per-chunk transactions) into a database of
// its own; then an incremental run of the same accounts, as the hourly schedule runs it (the
// lookback re-read). Prints source rows per second (target ≥ 50,000), the benchmark process's
// peak RSS (target < 300 MB: pages are streamed, never a whole answer held) and the incremental
// run's time (target < 30 s), each with PASS/FAIL. Not part of npm test.
//
//   npm run bench:sync                 ACCOUNTS=5 AD_SETS=20 npm run bench:sync
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { sql } from 'kysely';
import { connect } from '../src/db/database.ts';
import { migrate } from '../src/db/migrate.ts';
import { connectAdAccounts, syncNow, type AdSyncDeps } from '../src/domain/ad-sync/ad-account.service.ts';
import type { AdPlatformClient } from '../src/integrations/ad-platform.ts';
import { createMetaClient } from '../src/integrations/meta/client.ts';
import { systemClock } from '../src/platform/clock.ts';
import { Sealer, secretsKey } from '../src/platform/sealing.ts';
import { SPEND_BACKFILL_DAYS } from '../src/policy.ts';
import { scratchDatabase } from './scratch-database.ts';
import { benchAccounts } from './sync-accounts.ts';

const ACCOUNTS = Number(process.env.ACCOUNTS ?? 20);
const AD_SETS = Number(process.env.AD_SETS ?? 100);
/** Accounts synced at once, as one instance's loop does (src/app.ts). */
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 2);
const WORKSPACES = 50;
const TARGETS = { rowsPerSecond: 50_000, peakRssMb: 300, incrementalSeconds: 30 };

const log = (line: string) => process.stderr.write(`${line}\n`);
const scratch = await scratchDatabase('hubops_bench_sync');
const db = connect(scratch.url, { max: 10 });

// Peak RSS of this process (the engine's side), sampled; maxRSS from the kernel confirms it.
let peakRss = 0;
const sampler = setInterval(() => {
  peakRss = Math.max(peakRss, process.memoryUsage.rss());
}, 50);

const accounts = benchAccounts(ACCOUNTS, AD_SETS, WORKSPACES);

const sandbox = spawn(
  process.execPath,
  [
    path.join(import.meta.dirname, 'meta-sandbox-process.ts'),
    JSON.stringify({ accounts: ACCOUNTS, adSets: AD_SETS, workspaces: WORKSPACES }),
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
try {
  const [line] = (await once(createInterface({ input: sandbox.stdout! }), 'line')) as [string];
  const { url, token } = JSON.parse(line) as { url: string; token: string };

  await migrate(db.pool);
  await db.kysely.insertInto('accounts').values({ id: 'acc_bench', name: 'Bench' }).execute();
  await db.kysely.insertInto('hubs').values({ id: 'hub_bench', account_id: 'acc_bench', name: 'Bench' }).execute();
  await db.kysely
    .insertInto('workspaces')
    .values(Array.from({ length: WORKSPACES }, (_, i) => ({ id: `ws_bench_${i}`, hub_id: 'hub_bench', name: `Bench ${i}` })))
    .execute();

  // The real Meta client, counting the rows it hands the engine.
  const meta = createMetaClient({ graphUrl: url });
  let sourceRows = 0;
  const counting: AdPlatformClient = {
    platform: meta.platform,
    describeAccount: (c, id) => meta.describeAccount(c, id),
    listAccounts: (c) => meta.listAccounts(c),
    async *readSpend(c, account, range, signal) {
      for await (const batch of meta.readSpend(c, account, range, signal)) {
        sourceRows += batch.length;
        yield batch;
      }
    },
  };
  const deps: AdSyncDeps = { db, clock: systemClock, clients: { meta: counting }, sealer: new Sealer([secretsKey(Buffer.alloc(32, 7))]) };
  const connected = await connectAdAccounts(deps, 'hub_bench', {
    platform: 'meta',
    kind: 'system_user',
    accessToken: token,
    tokenExpiresAt: null,
    externalIds: accounts.map((a) => a.id),
    label: 'bench',
  });

  /** Syncs every account, CONCURRENCY at a time; the seconds it took. */
  async function syncAll(): Promise<number> {
    const queue = connected.map((a) => a.id);
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
          const outcome = await syncNow(deps, 'hub_bench', id);
          if (outcome.status !== 'done') throw new Error(`${id}: ${outcome.status}: ${'message' in outcome ? outcome.message : ''}`);
        }
      }),
    );
    return (performance.now() - started) / 1000;
  }

  log(`backfill: ${ACCOUNTS} accounts × ${AD_SETS} ad sets × ${SPEND_BACKFILL_DAYS} days × 24 hours, ${CONCURRENCY} at a time…`);
  const backfillSeconds = await syncAll();
  const backfillRows = sourceRows;
  const backfillPeakMb = Math.max(peakRss, process.resourceUsage().maxRSS * 1024) / 2 ** 20;

  log('incremental: the same accounts again (the lookback re-read)…');
  sourceRows = 0;
  const incrementalSeconds = await syncAll();
  const incrementalRows = sourceRows;
  const peakMb = Math.max(peakRss, process.resourceUsage().maxRSS * 1024) / 2 ** 20;

  const {
    rows: [stored],
  } = await sql<{ platform_rows: string; spend_rows: string; cents: string }>`
    SELECT (SELECT count(*) FROM ad_spend_rows) AS platform_rows, (SELECT count(*) FROM spend) AS spend_rows,
           (SELECT coalesce(sum(spend_cents), 0) FROM spend) AS cents`.execute(db.kysely);
  const rowsPerSecond = backfillRows / backfillSeconds;
  const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
  console.log(`\nSpend sync (Meta sandbox over loopback, ${CONCURRENCY} accounts at a time)\n`);
  console.log('| figure | value | target | |');
  console.log('|---|---|---|---|');
  console.log(`| backfill source rows | ${backfillRows.toLocaleString('en-US')} in ${backfillSeconds.toFixed(1)} s | | |`);
  console.log(
    `| backfill source rows per second | ${Math.round(rowsPerSecond).toLocaleString('en-US')} | ≥ ${TARGETS.rowsPerSecond.toLocaleString('en-US')} | ${verdict(rowsPerSecond >= TARGETS.rowsPerSecond)} |`,
  );
  console.log(
    `| peak RSS after the backfill · overall | ${backfillPeakMb.toFixed(0)} MB · ${peakMb.toFixed(0)} MB | < ${TARGETS.peakRssMb} MB | ${verdict(peakMb < TARGETS.peakRssMb)} |`,
  );
  console.log(
    `| incremental run (${incrementalRows.toLocaleString('en-US')} source rows) | ${incrementalSeconds.toFixed(1)} s | < ${TARGETS.incrementalSeconds} s | ${verdict(incrementalSeconds < TARGETS.incrementalSeconds)} |`,
  );
  console.log(
    `| stored | ${Number(stored!.platform_rows).toLocaleString('en-US')} platform rows (UTC day × ad set), ${Number(stored!.spend_rows).toLocaleString('en-US')} spend rows, ${(Number(stored!.cents) / 100).toLocaleString('en-US')} USD | | |`,
  );
} finally {
  clearInterval(sampler);
  sandbox.kill('SIGTERM');
  await db.close();
  await scratch.drop();
}
