// Decomposes the "API (rate limiter off, 1 key) / API (real server)" row of npm run bench (issue
// 26): the two servers differ in three ways at once — the entry (src/main.ts against
// bench/server-entry.ts), the limiter (MemoryRateLimiter against one that allows everything) and
// the keys (2,000 rotated against one) — and, in npm run bench, in how warm each is (server A has
// served the whole bench before its throughput runs; the other only autocannon's 2 s warm-up).
// Here four fresh servers, each changing one thing from the one before, get the same warm-up
// (every key once, then WARMUP_S of load), and rounds are interleaved; req/s and server CPU per
// request, best of the rounds, on the data set npm run bench built.
//
//   node bench/throughput-ab.ts            ROUNDS=3 SECONDS=10 WARMUP_S=10 node bench/throughput-ab.ts
import { cpuProbe } from './cpu.ts';
import { BIG_HUB, DEFAULT_SPEC, ensureDataset } from './dataset.ts';
import { HubClient, KeyRing } from './http.ts';
import { apiThroughput, HUB, makeBenchKeys, type ThroughputResult, warmKeys } from './scenarios.ts';
import { BENCH_ENTRY, MAIN_ENTRY, startServer, type RunningServer } from './server.ts';
import { BENCH_SERVER_URL } from './scratch-database.ts';
import { int } from './stats.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const SECONDS = Number(process.env.SECONDS ?? 10);
const WARMUP_S = Number(process.env.WARMUP_S ?? 10);
const KEYS = 2_000;
const CONNECTIONS = 10;
const say = (line: string) => console.log(line);

const dataset = await ensureDataset(BENCH_SERVER_URL, DEFAULT_SPEC, { fresh: false, log: say });
const { keys } = await makeBenchKeys(dataset.url, BIG_HUB, 'bench ab', KEYS);
const cpu = await cpuProbe(dataset.url);
const since = new Date(dataset.anchor.getTime() - 365 * 86_400_000).toISOString();
const path = `${HUB}/playbook-opt-ins?limit=100&since=${since}`;

interface Variant {
  label: string;
  start: () => Promise<RunningServer>;
  keys: readonly string[];
}
const variants: Variant[] = [
  { label: 'src/main.ts, 2,000 keys (the real server)', start: () => startServer({ databaseUrl: dataset.url, entry: MAIN_ENTRY }), keys },
  {
    label: 'bench entry, limiter on, 2,000 keys',
    start: () => startServer({ databaseUrl: dataset.url, entry: BENCH_ENTRY, env: { BENCH_RATE_LIMITS: 'on' } }),
    keys,
  },
  {
    label: 'bench entry, limiter off, 2,000 keys',
    start: () => startServer({ databaseUrl: dataset.url, entry: BENCH_ENTRY, env: { BENCH_RATE_LIMITS: 'off' } }),
    keys,
  },
  {
    label: "bench entry, limiter off, 1 key (npm run bench's row)",
    start: () => startServer({ databaseUrl: dataset.url, entry: BENCH_ENTRY, env: { BENCH_RATE_LIMITS: 'off' } }),
    keys: [keys[0]!],
  },
];

const servers: RunningServer[] = [];
for (const v of variants) {
  const server = await v.start();
  servers.push(server);
  await warmKeys(new HubClient(server.baseUrl, new KeyRing(v.keys)), v.keys);
}
say(`warming each server with ${WARMUP_S} s of load …`);
for (const [i, v] of variants.entries())
  await apiThroughput({
    label: v.label,
    server: servers[i]!,
    path,
    keys: v.keys,
    connections: CONNECTIONS,
    seconds: WARMUP_S,
    warmupSeconds: 0,
  });

const results: ThroughputResult[][] = variants.map(() => []);
for (let round = 1; round <= ROUNDS; round++) {
  for (const [i, v] of variants.entries()) {
    // Key verdicts are cached for 60 s: refresh them so no measured request pays for a lookup.
    await warmKeys(new HubClient(servers[i]!.baseUrl, new KeyRing(v.keys)), v.keys.slice(0, KEYS));
    const r = await apiThroughput({
      label: v.label,
      server: servers[i]!,
      path,
      keys: v.keys,
      connections: CONNECTIONS,
      seconds: SECONDS,
      warmupSeconds: 2,
      cpu,
    });
    results[i]!.push(r);
  }
  say(`round ${round}/${ROUNDS}: ${results.map((r) => int(r.at(-1)!.reqPerSec)).join(' / ')} req/s`);
}
for (const server of servers) await server.stop();

const best = (list: ThroughputResult[]) => list.reduce((a, b) => (b.reqPerSec > a.reqPerSec ? b : a));
const reference = best(results[0]!).reqPerSec;
say('');
say(`${CONNECTIONS} connections, ${SECONDS} s rounds × ${ROUNDS}, best of each; server CPU per request from /proc`);
for (const [i, v] of variants.entries()) {
  const b = best(results[i]!);
  const server = b.cpu ? `${b.cpu.msPerRequest.server.toFixed(3)} ms server CPU/request` : '';
  const failed = b.failed > 0 ? `, ${b.failed} not 2xx` : '';
  say(
    `${v.label.padEnd(56)} ${int(b.reqPerSec).padStart(6)} req/s  ${((b.reqPerSec / reference) * 100).toFixed(0).padStart(3)} %  ${server}${failed}`,
  );
}
