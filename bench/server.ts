// Starts a hubops server as a child process (the real entry, src/main.ts, unless told otherwise),
// waits until it answers, reads its memory from /proc, and stops it. Every child is registered so
// that the benchmark kills it however it ends (normal exit, error, Ctrl-C).
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { freePort } from '../src/platform/net.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
/** Node 22 from the project's own install (the system node may be too old for type stripping). */
export const NODE = path.join(ROOT, 'node_modules', '.bin', 'node');

/** The Node flags `npm start` runs the server with (e.g. its heap bound), so the bench measures the same process. */
export const START_FLAGS: string[] = (() => {
  const start = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  // Every word between `node` and the entry: flags and their values (`--import ./bin/require-node.js`).
  return start
    .split(/\s+/)
    .slice(1, -1)
    .map((word) => (word.startsWith('./') ? path.join(ROOT, word) : word));
})();

/** The real server process entry. */
export const MAIN_ENTRY = path.join(ROOT, 'src', 'main.ts');
/** The bench stand-in for the run without rate limits (see its header). */
export const BENCH_ENTRY = path.join(ROOT, 'bench', 'server-entry.ts');

const live = new Set<ChildProcess>();

function killAll(): void {
  for (const child of live) child.kill('SIGKILL');
  live.clear();
}

// 'exit' handlers may only do synchronous work: SIGKILL is, and nothing of a child outlives it.
process.on('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    killAll();
    process.exit(130);
  });
}

export interface ServerMemory {
  /** Peak resident set size so far (VmHWM), in MB (10^6 bytes). */
  peakMB: number;
  /** Resident set size now (VmRSS), in MB (10^6 bytes). */
  currentMB: number;
}

export interface RunningServer {
  /** The entry file, relative to the project root. */
  entry: string;
  pid: number;
  baseUrl: string;
  memory(): Promise<ServerMemory>;
  /** SIGTERM (graceful: the server flushes key usage), SIGKILL after 10 s. */
  stop(): Promise<void>;
}

export async function startServer(options: { databaseUrl: string; entry?: string; env?: Record<string, string> }): Promise<RunningServer> {
  const port = await freePort();
  const entry = options.entry ?? MAIN_ENTRY;
  // REDIS_URL is not passed on: the figures are for the in-process rate limiter, whatever the
  // caller's environment holds.
  const { REDIS_URL: _ignored, ...inherited } = process.env;
  // BENCH_SERVER_FLAGS adds Node flags to every server the bench starts, e.g.
  // `--cpu-prof --cpu-prof-dir=/tmp/prof` (a profile per process, written when it stops).
  const extraFlags = (process.env.BENCH_SERVER_FLAGS ?? '').split(/\s+/).filter(Boolean);
  const child = spawn(NODE, [...START_FLAGS, ...extraFlags, entry], {
    cwd: ROOT,
    env: {
      ...inherited,
      ...options.env,
      DATABASE_URL: options.databaseUrl,
      HUBOPS_DEMO: '0',
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  // Keep the tail of its output for the error message should it fail to start or crash.
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-4000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  // BENCH_SERVER_LOG: a file each server's output is appended to as well (e.g. with --trace-gc).
  if (process.env.BENCH_SERVER_LOG) {
    const log = createWriteStream(process.env.BENCH_SERVER_LOG, { flags: 'a' });
    child.stdout!.pipe(log);
    child.stderr!.pipe(log);
  }
  let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exit = new Promise<void>((resolve) =>
    child.on('exit', (code, signal) => {
      exited = { code, signal };
      live.delete(child);
      resolve();
    }),
  );

  const label = path.relative(ROOT, entry);
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited) throw new Error(`${label} exited (${exited.code ?? exited.signal}) before it was ready:\n${output}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${label} did not answer /healthz within 60 s:\n${output}`);
    }
    const ok = await fetch(`${baseUrl}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }

  return {
    entry: label,
    pid: child.pid!,
    baseUrl,
    memory: async () => {
      const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
      const kib = (field: string) => Number(status.match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'))?.[1] ?? Number.NaN);
      return { peakMB: (kib('VmHWM') * 1024) / 1e6, currentMB: (kib('VmRSS') * 1024) / 1e6 };
    },
    stop: async () => {
      if (exited) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exit;
      clearTimeout(timer);
    },
  };
}
