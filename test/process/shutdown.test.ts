// Graceful stop of the real server process: SIGTERM lets in-flight requests finish, then writes
// the batched key usage, so no request count is lost. The whole run is shorter
// than the 10 s usage flush interval, and the database is checked to hold no counts right
// before the signal, so what ends up there was written by the shutdown flush.
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import pg from 'pg';
import { createKey } from '../../src/domain/api-keys/api-key.service.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import * as fx from '../support/world.ts';
import { httpRequest } from '../support/http.ts';
import { freePort } from '../../src/platform/net.ts';
import { NODE, ROOT } from './support.ts';

const QUICK_REQUESTS = 37;

let db: TestDb;
let server: ChildProcess | undefined;
let output = '';

function serverEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: db.url,
    HUBOPS_DEMO: '0',
    LOG_LEVEL: 'warn',
    DATA_DIR: path.join(tmpdir(), `hubops-shutdown-${process.pid}`),
  };
  // In-process rate limits: this test is about the database, not a shared limiter.
  delete env.REDIS_URL;
  return env;
}

async function waitForHealth(base: string, child: ChildProcess, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode} before answering:\n${output}`);
    try {
      const response = await httpRequest(`${base}/healthz`, { timeoutMs: 1_000 });
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`server did not answer /healthz within ${timeoutMs} ms:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

before(async () => {
  db = await createTestDb();
});

after(async () => {
  if (server && server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
  await db?.drop();
});

test('SIGTERM finishes in-flight requests, flushes every request count, and exits 0', async () => {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const started = Date.now();
  const child = spawn(NODE, [path.join(ROOT, 'src/main.ts')], {
    cwd: ROOT,
    env: { ...serverEnv(), PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  server = child;
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  await waitForHealth(base, child);
  const healthyAfterMs = Date.now() - started;

  await fx.account(db, 'acc_stop');
  await fx.hub(db, 'hub_stop', 'acc_stop');
  await fx.workspace(db, 'hub_stop', 'ws_stop');
  await fx.playbook(db, 'hub_stop', 'pb_stop');
  await fx.optIns(
    db,
    Array.from({ length: 600 }, (_, i) => ({
      id: `oi_stop_${String(i).padStart(4, '0')}`,
      hubId: 'hub_stop',
      playbookId: 'pb_stop',
      workspaceId: 'ws_stop',
      optedInAt: new Date(Date.UTC(2026, 10, 1) + i * 60_000).toISOString(),
    })),
  );
  const key = await createKey(db, { hubId: 'hub_stop', name: 'shutdown test' });
  const auth = { authorization: `Bearer ${key.key}` };

  // N authenticated requests, a few at a time.
  for (let i = 0; i < QUICK_REQUESTS; i += 8) {
    const batch = Array.from({ length: Math.min(8, QUICK_REQUESTS - i) }, () =>
      httpRequest(`${base}/v1/hub/playbook-opt-ins?limit=5`, { headers: auth }),
    );
    for (const response of await Promise.all(batch)) assert.equal(response.status, 200, response.text);
  }

  // A request that is provably in flight when the signal arrives: its query waits on a table lock
  // this test holds until after SIGTERM.
  const locker = new pg.Client({ connectionString: db.url });
  await locker.connect();
  let slowStatus: number | undefined;
  try {
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE opt_ins IN ACCESS EXCLUSIVE MODE');
    const slow = httpRequest(`${base}/v1/hub/playbook-opt-ins?limit=500`, { headers: auth, timeoutMs: 20_000 }).then((response) => {
      slowStatus = response.status;
      return response;
    });
    // Awaited further down: until then a failure must not surface as an unhandled rejection.
    slow.catch(() => {});
    await waitFor(async () => {
      const { rowCount } = await db.pool.query(
        `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'hubops-server' AND wait_event_type = 'Lock'`,
      );
      return (rowCount ?? 0) > 0;
    }, 'the slow request to reach PostgreSQL');

    // Nothing has been written yet: the counts are all still in the server's memory.
    const before = await db.pool.query<{ request_count: string; last_used_at: Date | null }>(
      'SELECT coalesce(u.request_count, 0) AS request_count, u.last_used_at FROM api_keys k LEFT JOIN api_key_usage u ON u.key_id = k.id WHERE k.id = $1',
      [key.id],
    );
    assert.equal(
      Number(before.rows[0]!.request_count),
      0,
      'no usage flush may have happened before SIGTERM (the test must run within the 10 s interval)',
    );
    assert.equal(before.rows[0]!.last_used_at, null);
    // The first periodic flush comes 10 s after the server made its recorder, at some point during
    // its start: only the spawn is known to precede it, so the server's start counts against the
    // budget. On a loaded machine that start alone can take most of it; the message says so.
    const elapsedMs = Date.now() - started;
    assert.ok(
      elapsedMs < 9_000,
      `reached SIGTERM before the first periodic flush could run: ${elapsedMs} ms after the spawn, of which the server's start (to its first /healthz answer) took ${healthyAfterMs} ms`,
    );

    assert.ok(child.kill('SIGTERM'));
    // The server is stopping but must wait for the request it is serving.
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(child.exitCode, null, `the server exited while a request was in flight:\n${output}`);
    assert.equal(slowStatus, undefined, 'the slow request was answered before its lock was released');
    await assert.rejects(httpRequest(`${base}/healthz`, { timeoutMs: 2_000 }), 'a stopping server accepts no new connections');

    await locker.query('COMMIT');
    const response = await slow;
    assert.equal(response.status, 200, response.text);
    assert.equal(response.json.data.length, 500);
    assert.equal(typeof response.json.nextCursor, 'string');
  } finally {
    await locker.end().catch(() => {});
  }

  const [code, signal] = await exited;
  assert.equal(signal, null, output);
  assert.equal(code, 0, `exit code ${code}:\n${output}`);

  const { stdout } = await promisify(execFile)(NODE, [path.join(ROOT, 'src/cli/main.ts'), 'keys', 'list', '--hub', 'hub_stop', '--json'], {
    cwd: ROOT,
    env: serverEnv(),
  });
  const keys = JSON.parse(stdout) as { id: string; requestCount: number; lastUsedAt: string | null }[];
  const listed = keys.find((k) => k.id === key.id);
  assert.ok(listed, stdout);
  assert.equal(listed.requestCount, QUICK_REQUESTS + 1);
  assert.ok(listed.lastUsedAt, 'lastUsedAt is set');
  const lastUsed = Date.parse(listed.lastUsedAt);
  assert.ok(lastUsed >= started - 1_000 && lastUsed <= Date.now(), `lastUsedAt ${listed.lastUsedAt} is the time of the last request`);
});

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
