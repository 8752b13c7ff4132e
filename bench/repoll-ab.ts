// The server's CPU per authenticated 304, per re-polled resource, for one checkout or for two side
// by side (an A/B on a busy machine): starts one server per --app-root on the bench data set
// (as `npm run bench` left it: never rebuilt here), takes each resource's ETag, then runs blocks of
// sequential conditional re-polls (If-None-Match, one poller key per resource and server),
// interleaved: every block of every resource goes to each server in turn, back to back, the order
// alternating block by block, so that other work on the machine hits both alike. The server's CPU is read
// around each block from /proc/<pid>/task/*/schedstat (nanoseconds, every thread).
//
//   node bench/repoll-ab.ts                                    # this checkout
//   node bench/repoll-ab.ts --app-root /tmp/before --app-root .   # A against B
//   node bench/repoll-ab.ts --resources summary --blocks 20 --per-block 200
//
// Prints, per server and resource: server CPU ms per 304 over all blocks, and the median and
// lowest block (the lowest is the least disturbed by other work), with the load average and the
// other processes' cores during the run.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { connect } from '../src/db/database.ts';
import { createKey } from '../src/domain/api-keys/api-key.service.ts';
import { cpuProbe, cpuShare, preciseCpu } from './cpu.ts';
import { BENCH_DATABASE, BIG_HUB, benchDatabaseUrl } from './dataset.ts';
import { HubClient, KeyRing } from './http.ts';
import { HUB } from './scenarios.ts';
import { startServer, type RunningServer } from './server.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const { values: args } = parseArgs({
  options: {
    'app-root': { type: 'string', multiple: true },
    resources: { type: 'string', default: 'page,summary,spend' },
    blocks: { type: 'string', default: '10' },
    'per-block': { type: 'string', default: '200' },
  },
});
const roots = (args['app-root'] ?? [ROOT]).map((r) => path.resolve(r));
for (const root of roots) if (!existsSync(path.join(root, 'src', 'main.ts'))) throw new Error(`--app-root ${root}: no src/main.ts there`);
const blocks = Number(args.blocks);
const perBlock = Number(args['per-block']);

const serverUrl = process.env.DATABASE_URL?.trim() || 'postgres://postgres@127.0.0.1:5432/postgres';
const dataset = await existingDataset(serverUrl);
const since = new Date(dataset.anchor.getTime() - 365 * 86_400_000).toISOString();
const RESOURCES: Record<string, string> = {
  page: `${HUB}/playbook-opt-ins?limit=500&since=${since}`,
  summary: `${HUB}/opt-in-summary`,
  spend: `${HUB}/spend-by-workspace?period=last_30_days`,
  // Floors: the fixed index document (no key read, no database) and the liveness probe (a 200).
  index: `${HUB}`,
  healthz: '/healthz',
};
const resources = args.resources.split(',').map((name) => {
  const url = RESOURCES[name];
  if (!url) throw new Error(`--resources: unknown ${name} (page, summary, spend, index, healthz)`);
  return { name, url };
});

// A conditional request counts against a ceiling of 3,000 per key per minute: a poller key per
// resource and server, and a fresh one every 2,500 re-polls.
const keysNeeded = roots.length * resources.length * Math.ceil((blocks * perBlock) / 2_500);
const keys: string[] = [];
{
  const db = connect(dataset.url, { max: 2, applicationName: 'hubops-bench-keys' });
  try {
    await db.pool.query(`DELETE FROM api_keys WHERE hub_id = $1 AND name LIKE 'bench repoll %'`, [BIG_HUB]);
    for (let i = 0; i < keysNeeded + 1; i++) keys.push((await createKey(db, { hubId: BIG_HUB, name: `bench repoll ${i}` })).key);
  } finally {
    await db.close();
  }
}
const setupKey = keys.pop()!;

/**
 * The data set `npm run bench` built, as it is: never rebuilt here (another run may be using it),
 * so it must exist. Its anchor (the build's instant) fixes the page's `since`.
 */
async function existingDataset(server: string): Promise<{ url: string; anchor: Date }> {
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ comment: string | null }>(
      `SELECT shobj_description(oid, 'pg_database') AS comment FROM pg_database WHERE datname = $1`,
      [BENCH_DATABASE],
    );
    const anchor = rows[0]?.comment ? (JSON.parse(rows[0].comment) as { anchor?: string }).anchor : undefined;
    if (!anchor) throw new Error(`no ${BENCH_DATABASE} data set: run npm run bench first (this harness never builds one)`);
    return { url: benchDatabaseUrl(server), anchor: new Date(anchor) };
  } finally {
    await admin.end();
  }
}

interface Series {
  server: RunningServer;
  client: HubClient;
  resource: string;
  url: string;
  etag: string;
  keys: string[];
  sent: number;
  blockMs: number[];
  serverSeconds: number;
  user: number;
  system: number;
  unexpected: number;
}

const servers: { root: string; server: RunningServer; client: HubClient }[] = [];
const cpu = await cpuProbe(dataset.url);
/** User and kernel time of a process (10 ms ticks, in seconds): which side of the syscalls the CPU went to. */
async function userSystem(pid: number): Promise<{ user: number; system: number }> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8');
  const f = text
    .slice(text.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
  return { user: f[11]! / 100, system: f[12]! / 100 };
}
const serverCpu = async (pid: number): Promise<number> => (await preciseCpu(pid)) ?? 0;

try {
  for (const root of roots) {
    const server = await startServer({ databaseUrl: dataset.url, entry: path.join(root, 'src', 'main.ts') });
    servers.push({ root, server, client: new HubClient(server.baseUrl, new KeyRing([setupKey])) });
  }
  const series: Series[] = [];
  let k = 0;
  for (const { server, client } of servers) {
    for (const { name, url } of resources) {
      const mine = keys.slice(k, k + Math.ceil((blocks * perBlock) / 2_500));
      k += mine.length;
      // The poller's keys are known to this server (as a real poller's is after its first request).
      for (const key of mine) await client.getOk(`${HUB}/playbook-opt-ins?limit=1`, { key });
      const etag = (await client.getOk(url)).headers.etag ?? '"none"';
      // Warm the 304 path itself (JIT, the pool's prepared statements) before measuring.
      for (let i = 0; i < 200; i++) await client.get(url, { key: mine[0]!, headers: { 'if-none-match': etag } });
      series.push({
        server,
        client,
        resource: name,
        url,
        etag,
        keys: mine,
        sent: 200,
        blockMs: [],
        serverSeconds: 0,
        user: 0,
        system: 0,
        unexpected: 0,
      });
    }
  }
  const loadBefore = loadavg();
  const machineBefore = await cpu?.();
  const started = performance.now();
  let busyServers = 0;
  for (let block = 0; block < blocks; block++) {
    // Each resource's block on every server back to back, the servers' order alternating.
    const order = block % 2 === 0 ? servers : [...servers].reverse();
    for (const { name } of resources) {
      for (const { server } of order) {
        const s = series.find((x) => x.server === server && x.resource === name)!;
        const split = await userSystem(server.pid);
        const before = await serverCpu(server.pid);
        for (let i = 0; i < perBlock; i++) {
          const key = s.keys[Math.floor(s.sent / 2_500)] ?? s.keys.at(-1)!;
          s.sent++;
          const response = await s.client.get(s.url, { key, headers: { 'if-none-match': s.etag } });
          if (response.status !== (s.resource === 'healthz' ? 200 : 304)) s.unexpected++;
        }
        const used = (await serverCpu(server.pid)) - before;
        const splitAfter = await userSystem(server.pid);
        s.user += splitAfter.user - split.user;
        s.system += splitAfter.system - split.system;
        busyServers += used;
        s.serverSeconds += used;
        s.blockMs.push((used * 1000) / perBlock);
      }
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const machineAfter = await cpu?.();
  const loadAfter = loadavg();
  const out: string[] = [];
  // Other processes' cores: the machine's busy time less the servers', PostgreSQL's and this process's.
  if (machineBefore && machineAfter) {
    const share = cpuShare(machineBefore, machineAfter, seconds, 1);
    const others = Math.max(0, share.otherCores - busyServers / seconds);
    out.push(`other processes: ${others.toFixed(2)} cores; PostgreSQL ${share.cores.postgres.toFixed(2)} cores`);
  }
  out.push(`load average before ${loadBefore.map((l) => l.toFixed(2)).join(' ')}, after ${loadAfter.map((l) => l.toFixed(2)).join(' ')}`);
  out.push(`${blocks} blocks × ${perBlock} re-polls per resource and server, ${seconds.toFixed(1)} s`);
  for (const { root, server } of servers) {
    out.push(`${root}:`);
    for (const s of series.filter((x) => x.server === server)) {
      const sorted = [...s.blockMs].sort((a, b) => a - b);
      const all = (s.serverSeconds * 1000) / (blocks * perBlock);
      out.push(
        `  ${s.resource.padEnd(8)} server CPU per 304: ${all.toFixed(3)} ms (blocks: median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(3)}, lowest ${sorted[0]!.toFixed(3)}; user ${Math.round((100 * s.user) / (s.user + s.system))} %, kernel ${Math.round((100 * s.system) / (s.user + s.system))} %)${s.unexpected ? `; ${s.unexpected} not 304!` : ''}`,
      );
    }
  }
  // Two checkouts: each block of one against the same block of the other (run back to back, so
  // whatever else the machine did then weighs on both): the ratio's median and quartiles.
  if (servers.length === 2) {
    out.push(`${path.basename(servers[1]!.root)} ÷ ${path.basename(servers[0]!.root)}, paired blocks (median [quartiles]):`);
    for (const { name } of resources) {
      const [a, b] = servers.map(({ server }) => series.find((x) => x.server === server && x.resource === name)!);
      const ratios = a!.blockMs.map((ms, i) => b!.blockMs[i]! / ms).sort((x, y) => x - y);
      const at = (q: number) => ratios[Math.min(ratios.length - 1, Math.floor(q * ratios.length))]!.toFixed(2);
      out.push(
        `  ${name.padEnd(8)} ${at(0.5)} [${at(0.25)}–${at(0.75)}]; all blocks together ${(b!.serverSeconds / a!.serverSeconds).toFixed(2)}`,
      );
    }
  }
  process.stdout.write(`${out.join('\n')}\n`);
} finally {
  for (const { client, server } of servers) {
    client.close();
    await server.stop();
  }
}
