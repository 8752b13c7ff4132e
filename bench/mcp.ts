// `npm run bench:mcp`: what a Hub MCP tool call costs. Seeds a small hub in a database of its own
// (hubops_bench_mcp: 50 workspaces, 20,000 opt-ins, 90 days of spend, with bench/dataset.ts's SQL,
// a few seconds), starts the app as a child process (bench/server-entry.ts with the rate limiter
// off: the per-key 120/min and the summary's 20/min would stop a load test at once) and times,
// over raw HTTP, tools/list, tools/call list_playbook_opt_ins {limit: 100} and tools/call
// get_opt_in_summary on each protocol leg the app serves — 2025-11-25 (a plain stateless POST, no
// initialize) and 2026-07-28 (the per-request envelope and its headers) — beside the same reads
// over REST: the MCP overhead is MCP − REST. Each row: sequential latency and requests/s on one
// connection, then requests/s and latency from `--connections` concurrent ones (autocannon), with
// the server's and PostgreSQL's CPU per request; every request is warmed up (1 s under load)
// before the first row is measured. Not part of npm test.
//
// Options:
//   --app-root DIR     start the app from another checkout (e.g. a git worktree of an older
//                      commit, its node_modules symlinked): its bench/server-entry.ts, its src/.
//                      The data set and the key are made by this checkout's code; a leg the app
//                      does not serve (2026-07-28 before SDK v2) is reported as not served.
//   --samples N        sequential requests per row (default 300, after 100 warm-up requests)
//   --connections N    concurrency of the throughput runs (default 10)
//   --duration S       seconds of each throughput run (default 5)
//   --codings LIST     Accept-Encoding per row block, comma-separated (default identity,gzip: none,
//                      then what Node's fetch — and so the SDK's client — sends: gzip, deflate)
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import zlib from 'node:zlib';
import autocannon from 'autocannon';
import { connect } from '../src/db/database.ts';
import { migrate } from '../src/db/migrate.ts';
import { createKey } from '../src/domain/api-keys/api-key.service.ts';
import { cpuProbe, cpuShare, type CpuShare } from './cpu.ts';
import { BIG_HUB, generate } from './dataset.ts';
import { scratchDatabase } from './scratch-database.ts';
import { startServer, type RunningServer } from './server.ts';
import { int, ms, percentile, size } from './stats.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const DATABASE = 'hubops_bench_mcp';
const SPEC = { optIns: 20_000, workspaces: 50, playbooks: 12, adAccounts: 5, spendDays: 90 };
const WARMUP = 100;
const WARMUP_SECONDS = 1;
const HUB = '/v1/hub';

const { values: args } = parseArgs({
  options: {
    'app-root': { type: 'string', default: ROOT },
    samples: { type: 'string', default: '300' },
    connections: { type: 'string', default: '10' },
    duration: { type: 'string', default: '5' },
    codings: { type: 'string', default: 'identity,gzip' },
  },
});
const positive = (name: string, text: string): number => {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got ${JSON.stringify(text)}`);
  return n;
};
const samples = positive('samples', args.samples);
const connections = positive('connections', args.connections);
const seconds = positive('duration', args.duration);
const ACCEPT_ENCODING: Record<string, string | undefined> = { identity: undefined, gzip: 'gzip, deflate', br: 'br' };
const codings = args.codings.split(',').map((c) => c.trim());
for (const coding of codings)
  if (!(coding in ACCEPT_ENCODING))
    throw new Error(`--codings: unknown ${JSON.stringify(coding)} (known: ${Object.keys(ACCEPT_ENCODING).join(', ')})`);
const appRoot = path.resolve(args['app-root']);
const entry = path.join(appRoot, 'bench', 'server-entry.ts');
if (!existsSync(entry)) throw new Error(`--app-root ${appRoot}: no bench/server-entry.ts there`);
if (!existsSync(path.join(appRoot, 'node_modules'))) throw new Error(`--app-root ${appRoot}: no node_modules (symlink this checkout's)`);
const say = (line: string) => process.stderr.write(`${line}\n`);
const out = (line: string) => process.stdout.write(`${line}\n`);

// ── Requests ─────────────────────────────────────────────────────────────────────────────────
type Leg = 'REST' | '2025-11-25' | '2026-07-28';

interface Probe {
  op: string;
  leg: Leg;
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** What is wrong with a decoded 200 answer, or undefined when it is the expected one. */
  check(json: any): string | undefined;
}

const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** One JSON-RPC request on a leg: 2025-11-25 as a stateless POST, 2026-07-28 as test/mcp/revisions.test.ts's modern(). */
function mcp(leg: '2025-11-25' | '2026-07-28', op: string, method: string, params: Record<string, unknown>, check: Probe['check']): Probe {
  const name = typeof params.name === 'string' ? params.name : undefined;
  const modern = leg === '2026-07-28';
  return {
    op,
    leg,
    method: 'POST',
    path: `${HUB}/mcp`,
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': leg,
      ...(modern ? { 'mcp-method': method, ...(name ? { 'mcp-name': name } : {}) } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: modern ? { ...params, _meta: ENVELOPE } : params }),
    check: (json) => {
      if (json?.error) return `JSON-RPC error ${json.error.code}: ${json.error.message}`;
      if (json?.result?.isError) return `tool error: ${json.result.content?.[0]?.text}`;
      return json?.result ? check(json.result) : 'no result';
    },
  };
}

const listed = (json: any) => (Array.isArray(json?.tools) && json.tools.length > 0 ? undefined : 'no tools');
const hundredRows = (json: any) => (json?.data?.length === 100 ? undefined : `${json?.data?.length} rows, not 100`);
const summary = (json: any) => (typeof json?.activeOptIns === 'number' ? undefined : 'no activeOptIns');

/** The rows of one block, REST first, each operation's legs side by side. */
function probes(): Probe[] {
  const rest = (op: string, route: string, check: Probe['check']): Probe => ({
    op,
    leg: 'REST',
    method: 'GET',
    path: `${HUB}${route}`,
    headers: {},
    check,
  });
  const legs = ['2025-11-25', '2026-07-28'] as const;
  return [
    ...legs.map((leg) => mcp(leg, 'tools/list', 'tools/list', {}, listed)),
    rest('list_playbook_opt_ins {limit: 100}', '/playbook-opt-ins?limit=100', hundredRows),
    ...legs.map((leg) =>
      mcp(leg, 'list_playbook_opt_ins {limit: 100}', 'tools/call', { name: 'list_playbook_opt_ins', arguments: { limit: 100 } }, (r) =>
        hundredRows(r.structuredContent),
      ),
    ),
    rest('get_opt_in_summary', '/opt-in-summary', summary),
    ...legs.map((leg) =>
      mcp(leg, 'get_opt_in_summary', 'tools/call', { name: 'get_opt_in_summary', arguments: {} }, (r) => summary(r.structuredContent)),
    ),
  ];
}

// ── A one-connection client, timed to the last byte ────────────────────────────────────────────
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

interface Answer {
  status: number;
  ms: number;
  coding: string;
  wireBytes: number;
  bytes: Buffer;
}

function send(baseUrl: string, probe: Probe, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const request = http.request(new URL(probe.path, baseUrl), { method: probe.method, agent, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const bytes = Buffer.concat(chunks);
        const coding = response.headers['content-encoding']?.trim().toLowerCase() || 'identity';
        resolve({ status: response.statusCode ?? 0, ms: performance.now() - started, coding, wireBytes: bytes.length, bytes });
      });
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(probe.body);
  });
}

const DECODE: Record<string, (bytes: Buffer) => Buffer> = {
  identity: (b) => b,
  gzip: zlib.gunzipSync,
  deflate: zlib.inflateSync,
  br: zlib.brotliDecompressSync,
};

/** One request, its answer decoded and checked: what went wrong, or the answer. */
async function verify(baseUrl: string, probe: Probe, headers: Record<string, string>): Promise<{ error: string } | { answer: Answer }> {
  const answer = await send(baseUrl, probe, headers);
  const decode = DECODE[answer.coding];
  if (!decode) return { error: `Content-Encoding ${answer.coding}` };
  const text = decode(answer.bytes).toString('utf8');
  if (answer.status !== 200) return { error: `HTTP ${answer.status}: ${text.slice(0, 200)}` };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { error: `not JSON: ${text.slice(0, 200)}` };
  }
  const wrong = probe.check(json);
  return wrong ? { error: wrong } : { answer };
}

// ── Measurements ─────────────────────────────────────────────────────────────────────────────
interface Row {
  probe: Probe;
  coding: string;
  /** Why the row was not measured (the leg not served, a wrong answer). */
  skipped?: string;
  wireBytes?: number;
  sentAs?: string;
  seq?: { p50: number; p99: number; perSecond: number };
  conc?: { perSecond: number; p50: number; p99: number; failed: number; cpu?: CpuShare };
}

/** What an app answers to a revision it does not serve (SDK v1 to 2026-07-28). */
const UNSERVED = /^HTTP 400: .*Unsupported protocol version/;

/** `connections` keep-alive connections sending `probe` for `duration` seconds. */
function load(server: RunningServer, probe: Probe, headers: Record<string, string>, duration: number) {
  return autocannon({
    url: server.baseUrl,
    connections,
    duration,
    requests: [{ method: probe.method, path: probe.path, headers, ...(probe.body === undefined ? {} : { body: probe.body }) }],
  });
}

async function measure(
  server: RunningServer,
  cpu: Awaited<ReturnType<typeof cpuProbe>>,
  probe: Probe,
  coding: string,
  headers: Record<string, string>,
): Promise<Row> {
  const row: Row = { probe, coding };
  const first = await verify(server.baseUrl, probe, headers);
  if ('error' in first) {
    // A revision the app does not serve is a row of its own; any other wrong answer is a failure.
    if (!UNSERVED.test(first.error)) throw new Error(`${probe.leg} ${probe.op}: ${first.error}`);
    row.skipped = first.error;
    return row;
  }
  row.wireBytes = first.answer.wireBytes;
  row.sentAs = first.answer.coding;
  for (let i = 0; i < WARMUP; i++) await send(server.baseUrl, probe, headers);
  const times: number[] = [];
  const t0 = performance.now();
  for (let i = 0; i < samples; i++) {
    const answer = await send(server.baseUrl, probe, headers);
    if (answer.status !== 200) throw new Error(`${probe.leg} ${probe.op}: HTTP ${answer.status} during the sequential run`);
    times.push(answer.ms);
  }
  const elapsed = (performance.now() - t0) / 1000;
  times.sort((a, b) => a - b);
  row.seq = { p50: percentile(times, 50), p99: percentile(times, 99), perSecond: samples / elapsed };

  const before = await cpu?.(server.pid);
  const result = await load(server, probe, headers, seconds);
  const after = await cpu?.(server.pid);
  row.conc = {
    perSecond: result['2xx'] / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    failed: result.non2xx + result.errors + result.timeouts,
    cpu: before && after ? cpuShare(before, after, result.duration, result['2xx']) : undefined,
  };
  // Still the right answer after the load (a 200 with a JSON-RPC error would pass autocannon).
  const last = await verify(server.baseUrl, probe, headers);
  if ('error' in last) throw new Error(`${probe.leg} ${probe.op}: after the load run: ${last.error}`);
  return row;
}

// ── Run ──────────────────────────────────────────────────────────────────────────────────────
const commit = (dir: string) => {
  try {
    return execFileSync('git', ['-C', dir, 'log', '-1', '--format=%h %s'], { encoding: 'utf8' }).trim().slice(0, 100);
  } catch {
    return 'unknown';
  }
};
const [load1] = loadavg();
say(`load average ${load1!.toFixed(2)}${load1! > 1.5 ? ' — the machine is (or just was) busy: see the other cores column' : ''}`);

const scratch = await scratchDatabase(DATABASE);
const dataDir = await mkdtemp(path.join(tmpdir(), 'hubops-bench-mcp-'));
let server: RunningServer | undefined;
try {
  const t0 = performance.now();
  const db = connect(scratch.url, { max: 1, applicationName: 'hubops-bench-loader', readTimeoutMs: 0 });
  let key: string;
  try {
    await migrate(db.pool);
    await generate(db, SPEC, say);
    key = (await createKey(db, { hubId: BIG_HUB, name: 'mcp bench', scope: 'read' })).key;
  } finally {
    await db.close();
  }
  say(`data set built in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  server = await startServer({ databaseUrl: scratch.url, entry, env: { BENCH_RATE_LIMITS: 'off', DATA_DIR: dataDir } });
  const cpu = await cpuProbe(scratch.url);
  const plan = codings.flatMap((coding) =>
    probes().map((probe) => {
      const accept = ACCEPT_ENCODING[coding];
      return {
        coding,
        probe,
        headers: { ...probe.headers, authorization: `Bearer ${key}`, ...(accept ? { 'accept-encoding': accept } : {}) },
      };
    }),
  );
  // Every request warmed up under load before any is measured: otherwise the first rows of a run
  // pay for the JIT and the SDK's first use, and the order of the rows shows in the figures.
  say(`warm-up: ${WARMUP_SECONDS} s of each request at ${connections} connections…`);
  for (const { probe, headers } of plan) {
    if ('error' in (await verify(server.baseUrl, probe, headers))) continue; // reported with its row
    await load(server, probe, headers, WARMUP_SECONDS);
  }
  const rows: Row[] = [];
  for (const { coding, probe, headers } of plan) {
    say(`${coding} · ${probe.leg} · ${probe.op}…`);
    rows.push(await measure(server, cpu, probe, coding, headers));
  }
  const memory = await server.memory();

  out(`\nHub MCP benchmark · ${new Date().toISOString()}`);
  out(`app: ${appRoot} (${commit(appRoot)}), bench/server-entry.ts, rate limiter off`);
  out(`machine: ${cpus().length} × ${cpus()[0]?.model.trim()} · Node ${process.version} · load average at start ${load1!.toFixed(2)}`);
  out(
    `data: ${int(SPEC.optIns)} opt-ins, ${SPEC.workspaces} workspaces, ${SPEC.adAccounts} ad accounts × ${SPEC.spendDays} days · sequential: ${samples} requests on one connection after ${WARMUP} warm-up · concurrent: ${connections} connections, ${seconds} s (autocannon)`,
  );
  out(`server peak RSS at the end: ${memory.peakMB.toFixed(0)} MB\n`);
  out(
    '| Accept-Encoding | request | leg | body (wire) | seq p50 | seq p99 | seq req/s | conc req/s | conc p50 / p99 | server CPU/req | pg CPU/req | other cores |',
  );
  out('|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  const fmt = (n: number) => (n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : n.toFixed(0));
  for (const row of rows) {
    const head = `| ${ACCEPT_ENCODING[row.coding] ?? 'none'} | ${row.probe.op} | ${row.probe.leg}`;
    if (row.skipped) {
      out(`${head} | not served (see below) | | | | | | | | |`);
      continue;
    }
    const { seq, conc } = row;
    const cpuShareOf = conc!.cpu;
    const body = `${size(row.wireBytes!)}${row.sentAs !== 'identity' ? ` ${row.sentAs}` : ''}`;
    const failed = conc!.failed > 0 ? ` (${conc!.failed} failed)` : '';
    out(
      `${head} | ${body} | ${ms(seq!.p50)} | ${ms(seq!.p99)} | ${int(seq!.perSecond)} | ${int(conc!.perSecond)}${failed} | ${conc!.p50} / ${conc!.p99} ms | ${cpuShareOf ? `${fmt(cpuShareOf.msPerRequest.server)} ms` : '—'} | ${cpuShareOf ? `${fmt(cpuShareOf.msPerRequest.postgres)} ms` : '—'} | ${cpuShareOf ? cpuShareOf.otherCores.toFixed(2) : '—'} |`,
    );
  }
  const unserved = rows.filter((row) => row.skipped);
  if (unserved.length > 0) out('');
  for (const row of unserved)
    out(
      `- not served: ${row.probe.leg} ${row.probe.op} (${ACCEPT_ENCODING[row.coding] ?? 'no Accept-Encoding'}): ${row.skipped!.slice(0, 200)}`,
    );
  out('');
} finally {
  agent.destroy();
  await server?.stop();
  await scratch.drop();
  await rm(dataDir, { recursive: true, force: true });
}
