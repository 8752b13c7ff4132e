// Running hubops as a user would: `npm start` (or node src/main.ts) in its own process group, as a
// terminal or systemd starts it, and the CLI afterwards.
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import pg from 'pg';
import { runCli } from '../../src/cli/cli.ts';
import { freePort } from '../../src/platform/net.ts';
import { killGroup as killProcessGroup } from '../support/child-processes.ts';
import { httpRequest } from '../support/http.ts';

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const NODE = path.join(ROOT, 'node_modules/.bin/node');

/**
 * The Node flags `npm start` gives the server (package.json's start script: every word between
 * `node` and the entry, `--import ./bin/require-node.js` with an absolute path), so a test that
 * spawns node itself, to own the process, runs the same process as `npm start`.
 */
export const START_FLAGS: string[] = (() => {
  const start = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  return start
    .split(/\s+/)
    .slice(1, -1)
    .map((word) => (word.startsWith('./') ? path.join(ROOT, word) : word));
})();

export interface Running {
  child: ChildProcess;
  port: number;
  base: string;
  output: () => string;
  exited: Promise<[number | null, NodeJS.Signals | null]>;
}

/**
 * A new DATA_DIR (removed by the caller). `initialised`: a copy of the run's initialised one
 * (test/run.ts), so the first start skips initdb, as every start after a real first one does;
 * otherwise empty, for a test of the first start itself.
 */
export async function dataDir(prefix: string, options: { initialised: boolean }): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  await chmod(dir, 0o755); // as root, PostgreSQL runs as `postgres`, which must enter it
  const template = process.env.HUBOPS_TEST_DATA_DIR_TEMPLATE;
  // `cp -a` keeps the owner (as root, `postgres`) and the modes PostgreSQL insists on.
  if (options.initialised && template) await promisify(execFile)('cp', ['-a', `${template}/.`, dir]);
  return dir;
}

/** Environment for a server or CLI on `database` (a URL, or a DATA_DIR for the embedded one). */
export function hubopsEnv(database: { url: string } | { dataDir: string }, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'info', ...extra };
  for (const name of ['DATABASE_URL', 'REDIS_URL', 'HOST', 'HUBOPS_DEMO', 'DATA_DIR', 'NODE_OPTIONS'])
    if (!(name in extra)) delete env[name];
  if ('url' in database) Object.assign(env, { DATABASE_URL: database.url, HUBOPS_DEMO: '1' });
  else env.DATA_DIR = database.dataDir;
  return env;
}

const spawned = new Set<ChildProcess>();

/** For `after`: ends every process group a test started, also those that never got ready. */
export function killStarted(): void {
  for (const child of spawned) if (child.exitCode === null && child.signalCode === null) killGroup(child, 'SIGKILL');
}

/** Starts `command` detached (leader of its own process group) and waits for the banner; on `port` if given (a restart at the same address). */
export async function startServer(command: string, args: string[], env: NodeJS.ProcessEnv, port?: number): Promise<Running> {
  port ??= await freePort();
  const child = spawn(command, args, { cwd: ROOT, env: { ...env, PORT: String(port) }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  spawned.add(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode} before answering:\n${output}`);
    const ok = await httpRequest(`${base}/healthz`, { timeoutMs: 1_000 }).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok && output.includes('hubops is running')) break;
    if (Date.now() > deadline) {
      killGroup(child, 'SIGKILL');
      throw new Error(`server did not start within 120 s:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return { child, port, base, output: () => output, exited };
}

/** Signals the process group `child` leads (the server and whatever it started). */
export function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  killProcessGroup(child.pid, signal);
}

/** The demo key and its hub, from the first start's banner. */
export function demoKey(output: string): { key: string; hubId: string } {
  const match = output.match(/Demo Hub API key for hub .* \((\w+)\) \(shown once, copy it now\):\n\s+(\S+)/);
  if (!match) throw new Error(`no demo key in the output:\n${output}`);
  return { hubId: match[1]!, key: match[2]! };
}

/**
 * `hubops keys list --hub H --json` (the CLI's entry, run in this process: a process of its own
 * adds nothing to reading a count): the demo key's request count.
 */
export async function demoKeyRequests(hubId: string, env: NodeJS.ProcessEnv): Promise<number> {
  let stdout = '';
  let stderr = '';
  const io = { stdout: (text: string) => (stdout += text), stderr: (text: string) => (stderr += text), env, stdin: Readable.from([]) };
  const code = await runCli(['keys', 'list', '--hub', hubId, '--json'], io);
  if (code !== 0) throw new Error(`hubops keys list exited ${code}:\n${stderr}`);
  const keys = JSON.parse(stdout) as { name: string; requestCount: number }[];
  const demo = keys.find((k) => k.name.startsWith('Demo key'));
  if (!demo) throw new Error(`no demo key listed:\n${stdout}`);
  return demo.requestCount;
}

export { pidExists as isAlive } from '../../src/platform/process.ts';

/** The pid of the embedded postmaster under `dataDir`, if its pid file is there. */
export function postmasterPid(dataDir: string): number | undefined {
  const file = path.join(dataDir, 'postgres', 'postmaster.pid');
  return existsSync(file) ? Number(readFileSync(file, 'utf8').split('\n')[0]) : undefined;
}

/** The URL of the embedded database running under `dataDir` (its port from postmaster.pid). */
export function embeddedUrl(dataDir: string): string {
  const port = Number(readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[3]);
  const password = readFileSync(path.join(dataDir, 'postgres.password'), 'utf8').trim();
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
}

/**
 * Waits until a process with `applicationName` (hubops-cli, hubops-server) is connected to the
 * embedded database under `dataDir`: by then it has started that database and guards it.
 */
export async function waitForConnection(dataDir: string, applicationName: string, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const client = new pg.Client({
      connectionString: existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))
        ? embeddedUrl(dataDir)
        : 'postgres://nobody@127.0.0.1:1/none',
    });
    client.on('error', () => {});
    const connected = await client
      .connect()
      .then(
        async () =>
          ((await client.query('SELECT 1 FROM pg_stat_activity WHERE application_name = $1', [applicationName])).rowCount ?? 0) > 0,
        () => false,
      )
      .finally(() => client.end().catch(() => {}));
    if (connected) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${applicationName} to connect to the embedded database`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The server's own pid (not npm's), from its log lines. */
export function serverPid(output: string): number {
  const pid = output.match(/"pid":(\d+)/)?.[1];
  if (!pid) throw new Error(`no pid in the log:\n${output}`);
  return Number(pid);
}

export async function waitUntil(check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** `count` Hub API requests with `key`, each answered 200. */
export async function callHubApi(server: Running, key: string, count: number): Promise<void> {
  for (let i = 0; i < count; i += 1) {
    const response = await httpRequest(`${server.base}/v1/hub/playbook-opt-ins?limit=1`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(response.status, 200, response.text);
  }
}
