// npm run bench:reviews — Google reviews sync of 1,000 Business Profile locations × 200 reviews
// through the sandbox (its own process, so only hubops's side is measured): the first sync (every
// review read, stored and rolled into review days), then an hourly one (nothing changed: one page
// per location). Prints wall time, CPU and peak RSS of the syncing process, and checks every
// review arrived (the review days add up to 200,000).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { sql } from 'kysely';
import { connect } from '../src/db/database.ts';
import { migrate } from '../src/db/migrate.ts';
import { connectBusinessLocations } from '../src/domain/channels/google-business.service.ts';
import { createReviewSyncLoop } from '../src/domain/reviews/review-sync.ts';
import { createGoogleBusinessClient } from '../src/integrations/google-business/client.ts';
import { FixedClock } from '../src/platform/clock.ts';
import { Sealer, secretsKey } from '../src/platform/sealing.ts';
import { REVIEW_SYNC_INTERVAL_MS } from '../src/policy.ts';
import { scratchDatabase } from './scratch-database.ts';

const LOCATIONS = Number(process.env.BENCH_LOCATIONS ?? 1_000);
const REVIEWS = Number(process.env.BENCH_REVIEWS ?? 200);
/** Locations synced at once per round (the loop's batch). */
const BATCH = 20;
const TARGET_S = 120;

const child = spawn(
  process.execPath,
  [path.join(import.meta.dirname, 'business-sandbox-process.ts'), JSON.stringify({ locations: LOCATIONS, reviewsPerLocation: REVIEWS })],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
const [line] = (await once(createInterface({ input: child.stdout! }), 'line')) as [string];
const ready = JSON.parse(line) as { url: string; clientId: string; clientSecret: string; refreshToken: string };
const scratch = await scratchDatabase('bench_reviews');
const db = connect(scratch.url, { max: 10 });
let peakRss = 0;
const sampler = setInterval(() => {
  peakRss = Math.max(peakRss, process.memoryUsage.rss());
}, 50);
try {
  await migrate(db.pool);
  const clock = new FixedClock(new Date());
  await db.kysely.insertInto('accounts').values({ id: 'acc_bench', name: 'Bench' }).execute();
  await db.kysely.insertInto('hubs').values({ id: 'hub_bench', account_id: 'acc_bench', name: 'Bench hub' }).execute();
  await db.kysely
    .insertInto('workspaces')
    .values(Array.from({ length: LOCATIONS }, (_, i) => ({ id: `ws_${i}`, hub_id: 'hub_bench', name: `Store ${i}`, fields: '{}' })))
    .execute();
  const client = createGoogleBusinessClient({
    businessUrl: ready.url,
    oauthUrl: ready.url,
    clientId: ready.clientId,
    clientSecret: ready.clientSecret,
  });
  const deps = { db, clock, client, sealer: new Sealer([secretsKey(randomBytes(32))]) };
  const locations = await client.listLocations(ready.refreshToken);
  await connectBusinessLocations(deps, 'hub_bench', {
    refreshToken: ready.refreshToken,
    mappings: locations.map((l, i) => ({ location: l.name, workspaceId: `ws_${i}` })),
  });
  const loop = createReviewSyncLoop({ deps, intervalMs: 0, batchSize: BATCH });

  async function drain(): Promise<{ seconds: number; cpu: number; synced: number }> {
    const cpu = process.cpuUsage();
    const started = performance.now();
    let synced = 0;
    for (;;) {
      const outcomes = await loop.runOnce();
      if (outcomes.length === 0) break;
      for (const o of outcomes) {
        if (o.status !== 'synced') throw new Error(`a location did not sync: ${JSON.stringify(o)}`);
        synced++;
      }
    }
    const used = process.cpuUsage(cpu);
    return { seconds: (performance.now() - started) / 1000, cpu: (used.user + used.system) / 1e6, synced };
  }

  peakRss = process.memoryUsage.rss();
  const first = await drain();
  const stored = await sql<{ reviews: string; days: string }>`
    SELECT (SELECT count(*) FROM google_reviews) AS reviews,
           (SELECT coalesce(sum(new_1 + new_2 + new_3 + new_4 + new_5), 0) FROM review_days) AS days`.execute(db.kysely);
  const { reviews, days } = stored.rows[0]!;
  clock.advance(REVIEW_SYNC_INTERVAL_MS + 10 * 60_000);
  const hourly = await drain();
  const expected = LOCATIONS * REVIEWS;
  const pass = Number(reviews) === expected && Number(days) === expected && first.seconds < TARGET_S;
  console.log(`bench:reviews — ${LOCATIONS} locations × ${REVIEWS} reviews, ${BATCH} locations at once, sandbox in its own process`);
  console.log(
    `first sync:  ${first.synced} locations, ${reviews} reviews stored (review days add up to ${days}) in ${first.seconds.toFixed(1)} s`,
  );
  console.log(
    `             ${Math.round(Number(reviews) / first.seconds).toLocaleString('en-US')} reviews/s, ${first.cpu.toFixed(1)} s CPU in the syncing process`,
  );
  console.log(
    `hourly sync: ${hourly.synced} locations, nothing changed, in ${hourly.seconds.toFixed(1)} s (${hourly.cpu.toFixed(1)} s CPU)`,
  );
  console.log(`peak RSS of the syncing process: ${Math.round(peakRss / 1048576)} MB`);
  console.log(`every review stored, first sync < ${TARGET_S} s: ${pass ? 'PASS' : 'FAIL'}`);
  if (!pass) process.exitCode = 1;
} finally {
  clearInterval(sampler);
  await db.close();
  await scratch.drop();
  child.kill();
}
