// What /metrics costs the Hub API per request: the server's CPU per authenticated 304 (the
// cheapest request, the one whose budget is 0.25 ms) with metrics off and on (METRICS_TOKEN),
// interleaved rounds on one database, in this process (Fastify's inject: no sockets, so the
// figure is the server's own work plus inject's, the same in both). Also what one scrape costs.
//
//   npm run bench:metrics [-- --requests N --rounds N]
import { parseArgs } from 'node:util';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { connect } from '../src/db/database.ts';
import { migrate } from '../src/db/migrate.ts';
import { createKey } from '../src/domain/api-keys/api-key.service.ts';
import { DEMO_HUB_ID, seedDemo } from '../src/domain/demo/demo.service.ts';
import { Metrics } from '../src/platform/metrics.ts';
import { scratchDatabase } from './scratch-database.ts';
import { UnlimitedRateLimiter } from './unlimited-limiter.ts';

const { values } = parseArgs({ options: { requests: { type: 'string', default: '4000' }, rounds: { type: 'string', default: '5' } } });
const REQUESTS = Number(values.requests);
const ROUNDS = Number(values.rounds);
const TOKEN = 'bench-metrics-token-0123456789';

/**
 * The per-request work alone (what the onResponse hook does: the route's recorder and the key's
 * count), in CPU ns per request: immune to the noise of a whole request on a busy machine.
 */
async function hookCost(): Promise<number> {
  const metrics = await Metrics.create('bench');
  const record = metrics.http.route('/v1/hub/playbook-opt-ins');
  const calls = 5_000_000;
  const statuses = [200, 304, 304, 304, 429];
  for (let i = 0; i < 100_000; i++) record('GET', statuses[i % 5]!, 0.0004);
  const before = process.cpuUsage();
  for (let i = 0; i < calls; i++) {
    const status = statuses[i % 5]!;
    record('GET', status, 0.0002 + (i % 7) * 0.0001);
    metrics.hubKeys.record(`key_${i % 50}`, status);
  }
  const used = process.cpuUsage(before);
  return ((used.user + used.system) * 1000) / calls;
}
console.log(
  `the per-request hook's work alone: ${(await hookCost()).toFixed(0)} ns CPU per request (route recorder + key count, 5,000,000 calls)`,
);

const scratch = await scratchDatabase('hubops_bench_metrics');
const db = connect(scratch.url);
try {
  process.stderr.write('migrating and seeding…\n');
  await migrate(db.pool);
  await seedDemo(db);
  process.stderr.write('seeded\n');
  const { key } = await createKey(db, { hubId: DEMO_HUB_ID, name: 'bench' });
  const env = { DATABASE_URL: scratch.url, LOG_LEVEL: 'silent', DATA_DIR: '/tmp/hubops-bench-metrics', BASE_URL: 'http://hubops.test' };
  const variants = {
    off: await buildApp({
      config: loadConfig(env),
      db,
      limiter: new UnlimitedRateLimiter(),
      logger: false,
      publisher: false,
      spendSync: false,
    }),
    metrics: await buildApp({
      config: loadConfig({ ...env, METRICS_TOKEN: TOKEN }),
      db,
      limiter: new UnlimitedRateLimiter(),
      logger: false,
      publisher: false,
      spendSync: false,
    }),
  };
  const url = '/v1/hub/playbook-opt-ins?limit=50';
  const headers = { authorization: `Bearer ${key}` };
  const first = await variants.off.fastify.inject({ method: 'GET', url, headers });
  const etag = String(first.headers.etag);
  const cpuPerRequest = async (name: keyof typeof variants): Promise<number> => {
    const app = variants[name].fastify;
    const before = process.cpuUsage();
    for (let i = 0; i < REQUESTS; i++) {
      const r = await app.inject({ method: 'GET', url, headers: { ...headers, 'if-none-match': etag } });
      if (r.statusCode !== 304) throw new Error(`expected 304, got ${r.statusCode}`);
    }
    const used = process.cpuUsage(before);
    return (used.user + used.system) / REQUESTS;
  };
  // Warm both (JIT, prepared statements, caches).
  for (const name of ['off', 'metrics'] as const) await cpuPerRequest(name);
  const samples: Record<'off' | 'metrics', number[]> = { off: [], metrics: [] };
  for (let round = 0; round < ROUNDS; round++) {
    process.stderr.write(`round ${round + 1} of ${ROUNDS}\n`);
    // Alternate the order so a drift of the machine does not favour one.
    for (const name of round % 2 ? (['metrics', 'off'] as const) : (['off', 'metrics'] as const))
      samples[name].push(await cpuPerRequest(name));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const scrapeCpu = process.cpuUsage();
  const scrapes = 50;
  for (let i = 0; i < scrapes; i++) {
    const r = await variants.metrics.fastify.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
    if (r.statusCode !== 200) throw new Error(`scrape: ${r.statusCode}`);
  }
  const scrapeUsed = process.cpuUsage(scrapeCpu);
  const off = median(samples.off);
  const on = median(samples.metrics);
  console.log(`authenticated 304, CPU per request of this process (median of ${ROUNDS} rounds of ${REQUESTS}):`);
  console.log(`  metrics off  ${off.toFixed(1)} µs   (rounds: ${samples.off.map((x) => x.toFixed(1)).join(', ')})`);
  console.log(`  metrics on   ${on.toFixed(1)} µs   (rounds: ${samples.metrics.map((x) => x.toFixed(1)).join(', ')})`);
  console.log(`  difference   ${(on - off).toFixed(1)} µs (${(((on - off) / off) * 100).toFixed(1)} %)`);
  console.log(`one scrape of /metrics: ${((scrapeUsed.user + scrapeUsed.system) / scrapes / 1000).toFixed(2)} ms CPU (mean of ${scrapes})`);
  for (const app of Object.values(variants)) await app.close();
} finally {
  await db.close();
  await scratch.drop();
}
