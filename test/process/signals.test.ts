// Every way the server process ends writes the key usage it holds and leaves no postmaster:
// a duplicate signal (npm forwarding what the process group already got) does not cut the stop
// short, a further signal forces it, an uncaught error stops through the same path, and a start
// that fails after the database started stops the database and says why in one line.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { after, test } from 'node:test';
import pg from 'pg';
import { createTestDb } from '../support/db.ts';
import { httpRequest } from '../support/http.ts';
import {
  callHubApi,
  dataDir,
  demoKey,
  demoKeyRequests,
  hubopsEnv,
  isAlive,
  killGroup,
  NODE,
  postmasterPid,
  ROOT,
  serverPid,
  startServer,
  waitUntil,
  type Running,
} from './support.ts';

const MAIN = path.join(ROOT, 'src/main.ts');
const N = 11;
const running: Running[] = [];
const cleanups: (() => Promise<unknown>)[] = [];

after(async () => {
  for (const server of running) if (server.child.exitCode === null) killGroup(server.child, 'SIGKILL');
  for (const cleanup of cleanups) await cleanup();
});

/** A DATA_DIR for the embedded database; `initialised` skips initdb (see dataDir). */
async function embeddedDir(options: { initialised: boolean }): Promise<string> {
  const dir = await dataDir('hubops-signals-', options);
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A request held in flight by a lock on opt_ins (in the database at `url`), so a stop has something to wait for. */
async function holdRequest(url: string, server: Running, key: string): Promise<{ release: () => Promise<number> }> {
  const locker = new pg.Client({ connectionString: url });
  locker.on('error', () => {}); // a forced exit takes the database away under it
  await locker.connect();
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE opt_ins IN ACCESS EXCLUSIVE MODE');
  const slow = httpRequest(`${server.base}/v1/hub/playbook-opt-ins?limit=1`, {
    headers: { authorization: `Bearer ${key}` },
    timeoutMs: 30_000,
  }).then(
    (r) => r.status,
    () => 0,
  );
  await waitUntilAsync(async () => {
    const { rowCount } = await locker.query(
      `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'hubops-server' AND wait_event_type = 'Lock'`,
    );
    return (rowCount ?? 0) > 0;
  });
  return {
    release: async () => {
      await locker.query('COMMIT').catch(() => {});
      await locker.end().catch(() => {});
      return slow;
    },
  };
}

async function waitUntilAsync(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test('a second signal during a stop is ignored (logged); the stop finishes its request and writes every count', {
  timeout: 120_000,
}, async () => {
  const db = await createTestDb();
  cleanups.push(() => db.drop());
  const env = hubopsEnv({ url: db.url });
  const server = await startServer(NODE, [MAIN], env);
  running.push(server);
  const { key, hubId } = demoKey(server.output());
  await callHubApi(server, key, N);
  const held = await holdRequest(db.url, server, key);

  killGroup(server.child, 'SIGTERM');
  await new Promise((resolve) => setTimeout(resolve, 200));
  killGroup(server.child, 'SIGTERM');
  await waitUntil(() => server.output().includes('already stopping: signal ignored'), 'the duplicate to be logged');
  assert.equal(server.child.exitCode, null, `the duplicate signal ended the process:\n${server.output()}`);

  assert.equal(await held.release(), 200, 'the request in flight is answered');
  const [code] = await server.exited;
  assert.equal(code, 0, server.output());
  assert.equal(await demoKeyRequests(hubId, env), N + 1);
});

test('a third signal forces the exit (exit code 1, logged), and the embedded postmaster still stops', { timeout: 180_000 }, async () => {
  const dataDir = await embeddedDir({ initialised: true });
  const server = await startServer(NODE, [MAIN], hubopsEnv({ dataDir }));
  running.push(server);
  const { key } = demoKey(server.output());
  const postmaster = postmasterPid(dataDir)!;
  // The embedded database, reached as the server reaches it.
  const port = Number(readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[3]);
  const password = readFileSync(path.join(dataDir, 'postgres.password'), 'utf8').trim();
  const held = await holdRequest(`postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`, server, key);
  try {
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGINT'] as const) {
      killGroup(server.child, signal);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const [code] = await server.exited;
    assert.equal(code, 1, server.output());
    assert.match(server.output(), /forced exit/);
    await waitUntil(() => !isAlive(postmaster), 'the postmaster to stop after a forced exit', 15_000);
  } finally {
    await held.release();
  }
});

test('an uncaught error stops through the graceful path: counts written, postmaster stopped, exit code 1', {
  timeout: 180_000,
}, async () => {
  const dataDir = await embeddedDir({ initialised: true });
  const env = hubopsEnv({ dataDir });
  const server = await startServer(NODE, ['--import', path.join(import.meta.dirname, 'uncaught-on-sigusr2.ts'), MAIN], env);
  running.push(server);
  const { key, hubId } = demoKey(server.output());
  await callHubApi(server, key, N);
  const postmaster = postmasterPid(dataDir)!;

  process.kill(serverPid(server.output()), 'SIGUSR2');
  const [code] = await server.exited;
  assert.equal(code, 1, server.output());
  assert.match(server.output(), /uncaught error: stopping/);
  assert.match(server.output(), /"exitCode":1,"msg":"stopped"/);
  assert.equal(isAlive(postmaster), false, 'no postmaster left');
  assert.equal(await demoKeyRequests(hubId, env), N);
});

test('a start that fails after the database started: one line, exit 1, no postmaster left', { timeout: 180_000 }, async () => {
  // An empty DATA_DIR: this start runs initdb itself, and the failure comes after that.
  const dataDir = await embeddedDir({ initialised: false });
  const taken = net.createServer().listen(0, '127.0.0.1');
  await once(taken, 'listening');
  cleanups.push(() => new Promise((resolve) => taken.close(resolve)));
  const port = (taken.address() as net.AddressInfo).port;

  const child = spawn(NODE, [MAIN], {
    cwd: ROOT,
    env: { ...hubopsEnv({ dataDir }), PORT: String(port), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  assert.equal(code, 1, stderr);
  assert.equal(stderr.trim().split('\n').length, 1, `one line:\n${stderr}`);
  assert.equal(stderr, `hubops: port ${port} is in use by another program; set PORT to use another, e.g. PORT=3001 npm start\n`);
  assert.equal(existsSync(path.join(dataDir, 'postgres', 'PG_VERSION')), true, 'the database had started');
  assert.equal(postmasterPid(dataDir), undefined, 'and was stopped cleanly');
});
