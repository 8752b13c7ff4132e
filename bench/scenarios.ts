// The measurements. Each takes a running server (or the database) and returns plain figures;
// run.ts decides the order and prints them.
import { createHash } from 'node:crypto';
import autocannon from 'autocannon';
import { connect } from '../src/db/database.ts';
import { createKey } from '../src/domain/api-keys/api-key.service.ts';
import { HubCatalogCache } from '../src/domain/opt-ins/hub-catalog.ts';
import { findOptInPage } from '../src/domain/opt-ins/opt-in.repository.ts';
import { parseSince } from '../src/domain/opt-ins/opt-in.ts';
import { cpuShare, type CpuProbe, type CpuShare, type CpuTimes } from './cpu.ts';
import { forEachConcurrently, type HubClient } from './http.ts';
import type { RunningServer } from './server.ts';
import { summarize, type Summary } from './stats.ts';

export const HUB = '/v1/hub';

/**
 * One cheap request per key: the server caches key verdicts (60 s), so afterwards no measured
 * request pays for a key lookup that a real client, using one key all the time, would not pay.
 */
export async function warmKeys(client: HubClient, keys: readonly string[]): Promise<void> {
  await forEachConcurrently(keys, 8, async (key) => {
    await client.getOk(`${HUB}/playbook-opt-ins?limit=1`, { key });
  });
}

/**
 * Fresh read keys on the big hub, named `${prefix} 1…count`, after dropping the keys a previous
 * run made with that prefix (keys are shown once and only their hash is kept, so each run makes
 * its own). createKey is what the CLI and the admin UI use. `extra`: more single keys, by name.
 */
export async function makeBenchKeys(
  databaseUrl: string,
  hubId: string,
  prefix: string,
  count: number,
  extra: readonly string[] = [],
): Promise<{ keys: string[]; extra: string[] }> {
  const db = connect(databaseUrl, { max: 10, applicationName: 'hubops-bench-keys' });
  try {
    await db.pool.query(`DELETE FROM api_keys WHERE hub_id = $1 AND name LIKE $2`, [hubId, `${prefix} %`]);
    const keys: string[] = [];
    await forEachConcurrently(
      Array.from({ length: count }, (_, i) => i),
      10,
      async (i) => void keys.push((await createKey(db, { hubId, name: `${prefix} ${i + 1}` })).key),
    );
    const more: string[] = [];
    for (const name of extra) more.push((await createKey(db, { hubId, name })).key);
    return { keys, extra: more };
  } finally {
    await db.close();
  }
}

export interface PullResult {
  seconds: number;
  pages: number;
  rows: number;
  distinctIds: number;
  /** Every row came after the previous one in (updatedAt, id) order, as the Hub API promises. */
  ordered: boolean;
  pageLatency: Summary;
  /** Seconds spent waiting for responses (the rest is the client decompressing and parsing pages and merging ids). */
  waitingSeconds: number;
  /** Body bytes received, summed over the pages (compressed where the server compressed). */
  wireBytes: number;
  /** The same bodies decompressed. */
  identityBytes: number;
  /** Pages by the content coding the server sent them in. */
  codings: Record<string, number>;
  /**
   * SHA-256 (hex) of every page's ETag and identity body bytes, in order: the same data set and
   * code that answers the same bytes give the same digest (a change to the page path must not
   * move it; bench/pull-digest.ts takes it of another checkout).
   */
  digest: string;
}

/**
 * A client's full pull: page with `cursor` until `nextCursor` is null, merging rows by id. With
 * `acceptEncoding`, each page is asked for compressed and decompressed here (node:zlib) before
 * it is parsed, as an HTTP client library would.
 */
export async function fullPull(client: HubClient, limit: number, acceptEncoding?: string): Promise<PullResult> {
  const headers: Record<string, string> = acceptEncoding ? { 'accept-encoding': acceptEncoding } : {};
  const ids = new Set<string>();
  const latencies: number[] = [];
  const codings: Record<string, number> = {};
  let rows = 0;
  let wireBytes = 0;
  let identityBytes = 0;
  let ordered = true;
  let previous = { updatedAt: '', id: '' };
  let cursor: string | null = null;
  const digest = createHash('sha256');
  const started = performance.now();
  do {
    const path: string = `${HUB}/playbook-opt-ins?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const response = await client.getOk(path, { headers });
    latencies.push(response.ms);
    wireBytes += response.wireBytes;
    identityBytes += response.identityBytes;
    codings[response.coding] = (codings[response.coding] ?? 0) + 1;
    digest
      .update(`${response.headers.etag ?? '(no etag)'}\n`)
      .update(response.body)
      .update('\n');
    const page = JSON.parse(response.body) as { data: { id: string; updatedAt: string }[]; nextCursor: string | null };
    for (const row of page.data) {
      // Timestamps are fixed-width ISO strings and ids ASCII, so string order is the promised order.
      if (row.updatedAt < previous.updatedAt || (row.updatedAt === previous.updatedAt && row.id <= previous.id)) ordered = false;
      previous = row;
      ids.add(row.id);
    }
    rows += page.data.length;
    cursor = page.nextCursor;
  } while (cursor !== null);
  return {
    seconds: (performance.now() - started) / 1000,
    pages: latencies.length,
    rows,
    distinctIds: ids.size,
    ordered,
    pageLatency: summarize(latencies),
    waitingSeconds: latencies.reduce((sum, x) => sum + x, 0) / 1000,
    wireBytes,
    identityBytes,
    codings,
    digest: digest.digest('hex'),
  };
}

/** The content coding the server answers `path` in when asked for `coding` alone. */
export async function codingServed(client: HubClient, path: string, coding: string): Promise<string> {
  return (await client.getOk(path, { headers: { 'accept-encoding': coding } })).coding;
}

export interface FirstSpendResult {
  ms: number;
  workspaces: number;
}

/**
 * The first /spend-by-workspace request of a fresh server process (its report cache is in
 * process memory, so a new process has not computed anything yet). The connection pool and the
 * key cache are warmed first with a cheap request, so the figure is the report's computation,
 * not the process's first database connection.
 */
export async function firstSpendRequest(client: HubClient, key: string, period = 'last_30_days'): Promise<FirstSpendResult> {
  await client.getOk(`${HUB}/playbook-opt-ins?limit=1`, { key });
  const response = await client.getOk(`${HUB}/spend-by-workspace?period=${period}`, { key });
  const body = JSON.parse(response.body) as { workspaces: unknown[] };
  return { ms: response.ms, workspaces: body.workspaces.length };
}

/** `n` sequential requests (next key each time); the latency of each. */
export async function latencySeries(client: HubClient, path: string, n: number): Promise<Summary> {
  const latencies: number[] = [];
  for (let i = 0; i < n; i++) latencies.push((await client.getOk(path)).ms);
  return summarize(latencies);
}

export interface CompressedSeries {
  /** What the server sent (the first response's coding). */
  coding: string;
  /** One response's body bytes as sent, and decompressed. */
  wireBytes: number;
  identityBytes: number;
  latency: Summary;
  /** Responses by coding, over the whole series. */
  codings: Record<string, number>;
}

/**
 * `n` sequential requests of `path` with `Accept-Encoding: coding` (next key each time), timed to
 * the last byte as sent; the first response is decompressed and parsed, so a body the bench
 * cannot decode fails the run instead of being timed.
 */
export async function compressedSeries(client: HubClient, path: string, coding: string, n: number): Promise<CompressedSeries> {
  const headers = { 'accept-encoding': coding };
  const first = await client.getOk(path, { headers });
  JSON.parse(first.body);
  const latencies: number[] = [];
  const codings: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const response = await client.getOk(path, { headers });
    latencies.push(response.ms);
    codings[response.coding] = (codings[response.coding] ?? 0) + 1;
  }
  return { coding: first.coding, wireBytes: first.wireBytes, identityBytes: first.identityBytes, latency: summarize(latencies), codings };
}

/** CPU used over several separate intervals, summed as if it were one interval. */
class CpuTally {
  readonly #used: CpuTimes = { postgres: new Map(), server: 0, bench: 0, machine: 0 };
  #seconds = 0;
  #requests = 0;

  add(before: CpuTimes, after: CpuTimes, seconds: number, requests: number): void {
    // PostgreSQL pid by pid, as cpuShare compares them: a backend new in `after` counts from zero.
    for (const [pid, cpu] of after.postgres)
      this.#used.postgres.set(pid, (this.#used.postgres.get(pid) ?? 0) + cpu - (before.postgres.get(pid) ?? 0));
    this.#used.server += after.server - before.server;
    this.#used.bench += after.bench - before.bench;
    this.#used.machine += after.machine - before.machine;
    this.#seconds += seconds;
    this.#requests += requests;
  }

  share(): CpuShare {
    return cpuShare({ postgres: new Map(), server: 0, bench: 0, machine: 0 }, this.#used, this.#seconds, this.#requests);
  }
}

export interface StatusSeries {
  requests: number;
  latency: Summary;
  /** Responses with another status than the one expected, by status: each one fails the row. */
  unexpected: Record<string, number>;
  cpu?: CpuShare;
}

export interface RepollResult {
  /** The ETag the poller held (from one unconditional request first). */
  etag: string;
  /** Conditional re-polls with If-None-Match: each must be 304. */
  notModified: StatusSeries;
  /** The same resource unconditionally: each must be 200. */
  full: StatusSeries;
  /** Both kinds' intervals together, for the noise line. */
  cpu?: CpuShare;
}

/**
 * A poller re-requesting an unchanged resource: `requests` sequential conditional requests
 * (If-None-Match: its ETag, all with one key, which 304s must not use up) and as many
 * unconditional ones (next key of the ring each, since 200s count against the limits), in
 * `blocks` blocks of each kind, alternating which kind goes first, so that whatever else runs on
 * the machine meanwhile hits both kinds alike. CPU is sampled around each block and summed per kind.
 */
export async function conditionalRepolls(options: {
  client: HubClient;
  path: string;
  pollerKey: string;
  requests: number;
  blocks: number;
  serverPid: number;
  cpu?: CpuProbe;
}): Promise<RepollResult> {
  const { client, path } = options;
  const etag = (await client.getOk(path)).headers.etag;
  if (!etag) throw new Error(`GET ${path} sent no ETag: nothing to re-poll with`);
  const kinds = {
    notModified: { status: 304, send: () => client.get(path, { key: options.pollerKey, headers: { 'if-none-match': etag } }) },
    full: { status: 200, send: () => client.get(path) },
  };
  const tallies = { notModified: new CpuTally(), full: new CpuTally(), both: new CpuTally() };
  const latencies: Record<keyof typeof kinds, number[]> = { notModified: [], full: [] };
  const unexpected: Record<keyof typeof kinds, Record<string, number>> = { notModified: {}, full: {} };
  for (let block = 0; block < options.blocks; block++) {
    // The requests spread evenly over the blocks (the first blocks take the remainder).
    const size = Math.floor(options.requests / options.blocks) + (block < options.requests % options.blocks ? 1 : 0);
    for (const kind of block % 2 === 0 ? (['notModified', 'full'] as const) : (['full', 'notModified'] as const)) {
      const before = await options.cpu?.(options.serverPid);
      const started = performance.now();
      for (let i = 0; i < size; i++) {
        const response = await kinds[kind].send();
        latencies[kind].push(response.ms);
        if (response.status !== kinds[kind].status) unexpected[kind][response.status] = (unexpected[kind][response.status] ?? 0) + 1;
      }
      const seconds = (performance.now() - started) / 1000;
      const after = await options.cpu?.(options.serverPid);
      if (before && after) {
        tallies[kind].add(before, after, seconds, size);
        tallies.both.add(before, after, seconds, size);
      }
    }
  }
  const series = (kind: keyof typeof kinds): StatusSeries => ({
    requests: latencies[kind].length,
    latency: summarize(latencies[kind]),
    unexpected: unexpected[kind],
    cpu: options.cpu ? tallies[kind].share() : undefined,
  });
  return { etag, notModified: series('notModified'), full: series('full'), cpu: options.cpu ? tallies.both.share() : undefined };
}

export interface ThroughputResult {
  label: string;
  reqPerSec: number;
  ok: number;
  /** Responses other than 2xx, plus connection errors and timeouts. */
  failed: number;
  statusCounts: Record<string, number>;
  latencyP50: number;
  latencyP99: number;
  /** Where the CPU went during the measured run (when PostgreSQL is local). */
  cpu?: CpuShare;
}

/**
 * autocannon against one Hub API URL. Each connection cycles through one request per key (the
 * requests are serialised once, up front, so rotation costs the load generator nothing): with
 * K keys the server's limits allow K × 120 requests a minute in all.
 */
export async function apiThroughput(options: {
  label: string;
  server: RunningServer;
  path: string;
  keys: readonly string[];
  connections: number;
  seconds: number;
  warmupSeconds: number;
  cpu?: CpuProbe;
}): Promise<ThroughputResult> {
  const run = (duration: number) =>
    autocannon({
      url: `${options.server.baseUrl}${options.path}`,
      connections: options.connections,
      duration,
      requests: options.keys.map((key) => ({ method: 'GET', path: options.path, headers: { authorization: `Bearer ${key}` } })),
    });
  if (options.warmupSeconds > 0) await run(options.warmupSeconds);
  const cpuBefore = await options.cpu?.(options.server.pid);
  const result = await run(options.seconds);
  const cpuAfter = await options.cpu?.(options.server.pid);
  const statusCounts = Object.fromEntries(Object.entries(result.statusCodeStats).map(([status, s]) => [status, s.count]));
  return {
    label: options.label,
    reqPerSec: result['2xx'] / result.duration,
    ok: result['2xx'],
    failed: result.non2xx + result.errors + result.timeouts,
    statusCounts,
    latencyP50: result.latency.p50,
    latencyP99: result.latency.p99,
    cpu: cpuBefore && cpuAfter ? cpuShare(cpuBefore, cpuAfter, result.duration, result['2xx']) : undefined,
  };
}

/**
 * The same page query without HTTP: findOptInPage (the exact SQL the endpoint runs) through a
 * pg pool of the server's size, from `connections` concurrent loops.
 */
export async function bareThroughput(options: {
  databaseUrl: string;
  hubId: string;
  since: string;
  limit: number;
  connections: number;
  seconds: number;
  warmupSeconds: number;
  cpu?: CpuProbe;
}): Promise<ThroughputResult> {
  // The server's pool: openDatabase → connect() with the default of 10 connections.
  const db = connect(options.databaseUrl, { max: 10, applicationName: 'hubops-bench-bare' });
  const catalogs = new HubCatalogCache();
  const query = { hubId: options.hubId, since: parseSince(options.since), limit: options.limit };
  const loop = async (seconds: number, latencies: number[] | undefined) => {
    const until = performance.now() + seconds * 1000;
    await Promise.all(
      Array.from({ length: options.connections }, async () => {
        while (performance.now() < until) {
          const t0 = performance.now();
          const page = await findOptInPage(db, catalogs, query);
          if (page.rows !== options.limit || !page.next)
            throw new Error(
              `findOptInPage returned ${page.rows} rows and ${page.next ? 'a' : 'no'} next page; expected ${options.limit} and one`,
            );
          latencies?.push(performance.now() - t0);
        }
      }),
    );
  };
  try {
    if (options.warmupSeconds > 0) await loop(options.warmupSeconds, undefined);
    const latencies: number[] = [];
    const cpuBefore = await options.cpu?.();
    const started = performance.now();
    await loop(options.seconds, latencies);
    const elapsed = (performance.now() - started) / 1000;
    const cpuAfter = await options.cpu?.();
    const summary = summarize(latencies);
    return {
      label: 'bare pg (findOptInPage)',
      reqPerSec: latencies.length / elapsed,
      ok: latencies.length,
      failed: 0,
      statusCounts: {},
      latencyP50: summary.p50,
      latencyP99: summary.p99,
      cpu: cpuBefore && cpuAfter ? cpuShare(cpuBefore, cpuAfter, elapsed, latencies.length) : undefined,
    };
  } finally {
    await db.close();
  }
}
