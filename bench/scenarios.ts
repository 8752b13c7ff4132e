// The measurements. Each takes a running server (or the database) and returns plain figures;
// run.ts decides the order and prints them.
import autocannon from 'autocannon';
import { connect } from '../src/db/database.ts';
import { HubCatalogCache } from '../src/domain/opt-ins/hub-catalog.ts';
import { findOptInPage } from '../src/domain/opt-ins/opt-in.repository.ts';
import { parseSince } from '../src/domain/opt-ins/opt-in.ts';
import { cpuShare, type CpuProbe, type CpuShare } from './cpu.ts';
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
    await client.getOk(`${HUB}/playbook-opt-ins?limit=1`, key);
  });
}

export interface PullResult {
  seconds: number;
  pages: number;
  rows: number;
  distinctIds: number;
  /** Every row came after the previous one in (updatedAt, id) order, as the Hub API promises. */
  ordered: boolean;
  pageLatency: Summary;
  /** Seconds spent waiting for responses (the rest is the client parsing pages and merging ids). */
  waitingSeconds: number;
}

/** A client's full pull: page with `cursor` until `nextCursor` is null, merging rows by id. */
export async function fullPull(client: HubClient, limit: number): Promise<PullResult> {
  const ids = new Set<string>();
  const latencies: number[] = [];
  let rows = 0;
  let ordered = true;
  let previous = { updatedAt: '', id: '' };
  let cursor: string | null = null;
  const started = performance.now();
  do {
    const path: string = `${HUB}/playbook-opt-ins?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const response = await client.getOk(path);
    latencies.push(response.ms);
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
  };
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
  await client.getOk(`${HUB}/playbook-opt-ins?limit=1`, key);
  const response = await client.getOk(`${HUB}/spend-by-workspace?period=${period}`, key);
  const body = JSON.parse(response.body) as { workspaces: unknown[] };
  return { ms: response.ms, workspaces: body.workspaces.length };
}

/** `n` sequential requests (next key each time); the latency of each. */
export async function latencySeries(client: HubClient, path: string, n: number): Promise<Summary> {
  const latencies: number[] = [];
  for (let i = 0; i < n; i++) latencies.push((await client.getOk(path)).ms);
  return summarize(latencies);
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
          if (page.rows !== options.limit || !page.next) throw new Error(`findOptInPage returned ${page.rows} rows and ${page.next ? 'a' : 'no'} next page; expected ${options.limit} and one`);
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
