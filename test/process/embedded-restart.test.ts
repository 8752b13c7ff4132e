// `npm start` without DATABASE_URL: the embedded PostgreSQL lives under
// $DATA_DIR/postgres, starts and stops with the process, and a second start reuses its data — the
// demo key printed by the first start still works, and no second demo is seeded.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { httpRequest } from '../support/http.ts';
import { demoKey, hubopsEnv, isAlive, killStarted, NODE, postmasterPid, ROOT, startServer, type Running } from '../process/support.ts';

let dataDir: string | undefined;

after(async () => {
  killStarted();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** Runs `src/main.ts` on the embedded database in `dir` until it answers (see test/process/support.ts). */
const start = (dir: string): Promise<Running> =>
  startServer(NODE, [path.join(ROOT, 'src/main.ts')], hubopsEnv({ dataDir: dir }, { HOST: '127.0.0.1', LOG_LEVEL: 'warn' }));

async function stop(server: Running): Promise<number | null> {
  server.child.kill('SIGTERM');
  const [code] = await server.exited;
  return code;
}

test('embedded PostgreSQL: started and stopped with the process, and a second start reuses the data', { timeout: 240_000 }, async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'hubops-embedded-'));
  // mkdtemp makes it 0700; as root, PostgreSQL runs as `postgres` and must reach its directory
  // (as it reaches ./data, created with the usual 0755).
  await chmod(dataDir, 0o755);
  const pidFile = path.join(dataDir, 'postgres', 'postmaster.pid');

  const first = await start(dataDir);
  const { key } = demoKey(first.output());
  const summary = await httpRequest(`${first.base}/v1/hub/opt-in-summary`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(summary.status, 200);
  assert.ok(existsSync(pidFile), 'the embedded postmaster runs under $DATA_DIR/postgres');
  const postmaster = postmasterPid(dataDir)!;
  assert.ok(isAlive(postmaster));

  assert.equal(await stop(first), 0, first.output());
  assert.equal(isAlive(postmaster), false, 'SIGTERM stops the embedded PostgreSQL too');
  assert.equal(existsSync(pidFile), false, 'and it shut down cleanly (no stale postmaster.pid)');

  const second = await start(dataDir);
  assert.doesNotMatch(second.output(), /Demo data seeded/, 'the second start seeds nothing');
  const again = await httpRequest(`${second.base}/v1/hub/opt-in-summary`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(again.status, 200, 'the key created by the first start still works: same data');
  assert.deepEqual(JSON.parse(again.text).activeOptIns, JSON.parse(summary.text).activeOptIns);
  assert.equal(await stop(second), 0, second.output());
  assert.equal(existsSync(pidFile), false);
});
