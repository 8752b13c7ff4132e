// CPU profile of the server under one of the bench's loads alone, for `bench/profile-summary.ts`:
// starts the server (this checkout's, or --app-root's) with --cpu-prof on the bench data set
// (bench/dataset.ts, reused or built), runs the load, stops the server (which writes the profile
// into --dir) and prints the server's CPU per request from /proc.
//
//   node bench/profile-phase.ts --load pull   [--app-root DIR] [--dir /tmp/prof]   # the full pull, limit=500
//   node bench/profile-phase.ts --load 304    # 3,000 sequential 304s of /opt-in-summary, one key
//   node bench/profile-phase.ts --load page   # 10 s of /playbook-opt-ins?limit=100&since=… at 10 connections, 2,000 keys
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { cpuProbe, cpuShare } from './cpu.ts';
import { BIG_HUB, DEFAULT_SPEC, ensureDataset } from './dataset.ts';
import { HubClient, KeyRing } from './http.ts';
import { apiThroughput, fullPull, HUB, makeBenchKeys, warmKeys } from './scenarios.ts';
import { BENCH_SERVER_URL } from './scratch-database.ts';
import { startServer } from './server.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const { values: args } = parseArgs({
  options: {
    'app-root': { type: 'string', default: ROOT },
    load: { type: 'string', default: 'pull' },
    dir: { type: 'string', default: '/tmp/hubops-prof' },
    keys: { type: 'string', default: '2000' },
  },
});
const appRoot = path.resolve(args['app-root']);
const entry = path.join(appRoot, 'src', 'main.ts');
if (!existsSync(entry)) throw new Error(`--app-root ${appRoot}: no src/main.ts there`);
mkdirSync(args.dir, { recursive: true });
const say = (line: string) => process.stderr.write(`${line}\n`);

const dataset = await ensureDataset(BENCH_SERVER_URL, DEFAULT_SPEC, { fresh: false, log: say });
const { keys } = await makeBenchKeys(dataset.url, BIG_HUB, 'bench profile', Number(args.keys));

process.env.BENCH_SERVER_FLAGS = `${process.env.BENCH_SERVER_FLAGS ?? ''} --cpu-prof --cpu-prof-dir=${args.dir}`;
const server = await startServer({ databaseUrl: dataset.url, entry });
const client = new HubClient(server.baseUrl, new KeyRing(keys));
const cpu = await cpuProbe(dataset.url);
try {
  await warmKeys(client, keys);
  const before = await cpu?.(server.pid);
  const started = performance.now();
  let requests = 0;
  if (args.load === 'pull') {
    const pull = await fullPull(client, 500);
    requests = pull.pages;
    say(
      `pull: page p50 ${pull.pageLatency.p50.toFixed(2)} ms, p99 ${pull.pageLatency.p99.toFixed(2)} ms; server peak RSS ${(await server.memory()).peakMB.toFixed(0)} MB`,
    );
  } else if (args.load === '304') {
    const path = `${HUB}/opt-in-summary`;
    const etag = (await client.getOk(path)).headers.etag!;
    for (let i = 0; i < 3000; i++) {
      const r = await client.get(path, { headers: { 'if-none-match': etag } });
      if (r.status !== 304) throw new Error(`expected 304, got ${r.status}`);
    }
    requests = 3000;
  } else if (args.load === 'page') {
    const since = new Date(dataset.anchor.getTime() - 365 * 86_400_000).toISOString();
    // apiThroughput measures its own run (the CPU below then also covers its warm-up).
    const run = await apiThroughput({
      label: 'page',
      server,
      path: `${HUB}/playbook-opt-ins?limit=100&since=${since}`,
      keys,
      connections: 10,
      seconds: 10,
      warmupSeconds: 2,
      cpu,
    });
    say(
      `page: ${Math.round(run.reqPerSec)} req/s; CPU ms/request server ${run.cpu?.msPerRequest.server.toFixed(3)} · pg ${run.cpu?.msPerRequest.postgres.toFixed(3)}`,
    );
    requests = run.ok;
  } else throw new Error(`--load must be pull, 304 or page, got ${args.load}`);
  const after = await cpu?.(server.pid);
  if (before && after) {
    const share = cpuShare(before, after, (performance.now() - started) / 1000, requests);
    say(
      `${args.load}: ${requests} requests; CPU ms/request pg ${share.msPerRequest.postgres.toFixed(3)} · server ${share.msPerRequest.server.toFixed(3)}; other cores ${share.otherCores.toFixed(2)}`,
    );
  }
} finally {
  client.close();
  await server.stop();
}
say(`profile written to ${args.dir}`);
