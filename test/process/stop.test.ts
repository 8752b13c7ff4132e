// Issue 10 item 1: stopping `npm start` the way a terminal (Ctrl-C: SIGINT to the process group)
// or systemd (KillMode=control-group: SIGTERM to the group) does loses no Hub API request count,
// on the embedded database and on an external one; the process exits 0 and leaves no postmaster.
// Item 19 (binding): with the embedded database and no HOST the server listens on 127.0.0.1 only.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { createTestDb, type TestDb } from '../support/db.ts';
import { httpRequest } from '../support/http.ts';
import {
  callHubApi,
  dataDir as newDataDir,
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

const N = 23;
const running: Running[] = [];
const cleanups: (() => Promise<unknown>)[] = [];

after(async () => {
  for (const server of running) if (server.child.exitCode === null) killGroup(server.child, 'SIGKILL');
  for (const cleanup of cleanups) await cleanup();
});

/** Can a client reach the server through 127.0.0.2 (another loopback address, so only a 0.0.0.0 bind answers)? */
async function reachableBeyond127001(server: Running): Promise<boolean> {
  return httpRequest(`http://127.0.0.2:${server.port}/healthz`, { timeoutMs: 2_000 }).then(
    (r) => r.status === 200,
    () => false,
  );
}

async function stopGroup(server: Running, signal: NodeJS.Signals, dataDir?: string): Promise<void> {
  const postmaster = dataDir ? postmasterPid(dataDir) : undefined;
  if (dataDir) assert.ok(postmaster && isAlive(postmaster), 'the embedded postmaster runs');
  const node = serverPid(server.output());
  killGroup(server.child, signal);
  const [code, killedBy] = await server.exited;
  // npm ends the way its script's shell did: by the signal (or 0 when the shell waited for node).
  assert.ok(killedBy === signal || code === 0, `npm: exit code ${code}, signal ${killedBy}:\n${server.output()}`);
  await waitUntil(() => !isAlive(node), 'the server process to end');
  assert.match(server.output(), /"exitCode":0,"msg":"stopped"/, server.output());
  assert.doesNotMatch(server.output(), /flush failed|not written|unclean stop|forced exit/);
  if (postmaster) {
    assert.equal(isAlive(postmaster), false, 'no postmaster is left running');
    assert.equal(existsSync(path.join(dataDir!, 'postgres', 'postmaster.pid')), false, 'PostgreSQL shut down cleanly');
  }
}

/** Two runs of `npm start` on one database: N requests, then Ctrl-C; N more, then SIGTERM to the group. */
async function twoStops(env: NodeJS.ProcessEnv, options: { dataDir?: string; listensEverywhere: boolean }): Promise<void> {
  const first = await startServer('npm', ['start'], env);
  running.push(first);
  assert.equal(await reachableBeyond127001(first), options.listensEverywhere, 'listen address');
  const { key, hubId } = demoKey(first.output());
  await callHubApi(first, key, N);
  await stopGroup(first, 'SIGINT', options.dataDir);
  assert.equal(await demoKeyRequests(hubId, env), N, 'Ctrl-C: every request counted');

  const second = await startServer('npm', ['start'], env);
  running.push(second);
  await callHubApi(second, key, N);
  await stopGroup(second, 'SIGTERM', options.dataDir);
  assert.equal(await demoKeyRequests(hubId, env), 2 * N, 'SIGTERM to the group: every request counted');
}

test('embedded database: Ctrl-C and a group SIGTERM on `npm start` keep every request count; it listens on 127.0.0.1 only', {
  timeout: 300_000,
}, async () => {
  const dataDir = await newDataDir('hubops-stop-', { initialised: true });
  cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
  await twoStops(hubopsEnv({ dataDir }), { dataDir, listensEverywhere: false });
});

test('external database: the same, and without HOST it listens on every address', { timeout: 300_000 }, async () => {
  const db: TestDb = await createTestDb();
  cleanups.push(() => db.drop());
  await twoStops(hubopsEnv({ url: db.url }), { listensEverywhere: true });
});

test('HOST overrides the loopback default of the embedded database', { timeout: 300_000 }, async () => {
  const dataDir = await newDataDir('hubops-host-', { initialised: true });
  cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
  const server = await startServer(NODE, [path.join(ROOT, 'src/main.ts')], hubopsEnv({ dataDir }, { HOST: '0.0.0.0' }));
  running.push(server);
  assert.equal(await reachableBeyond127001(server), true);
  await stopGroup(server, 'SIGTERM', dataDir);
});

test('after kill -9 of the server, the next start stops the orphaned postmaster and starts at once, on the same data', {
  timeout: 300_000,
}, async () => {
  const dataDir = await newDataDir('hubops-kill9-', { initialised: true });
  cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
  const env = hubopsEnv({ dataDir });
  const first = await startServer(NODE, [path.join(ROOT, 'src/main.ts')], env);
  running.push(first);
  const { key } = demoKey(first.output());
  const orphan = postmasterPid(dataDir)!;
  process.kill(serverPid(first.output()), 'SIGKILL');
  await first.exited;
  assert.ok(isAlive(orphan), 'the postmaster, in its own session, outlives a SIGKILLed server');

  const startedAt = Date.now();
  const second = await startServer(NODE, [path.join(ROOT, 'src/main.ts')], env);
  running.push(second);
  assert.ok(Date.now() - startedAt < 12_000, `started in ${Date.now() - startedAt} ms, without waiting out the owner timeout`);
  assert.ok(!isAlive(orphan) || /\) Z /.test(readFileSync(`/proc/${orphan}/stat`, 'utf8')), 'the orphaned postmaster was stopped');
  assert.notEqual(postmasterPid(dataDir), orphan);
  await callHubApi(second, key, 1);
  await stopGroup(second, 'SIGTERM', dataDir);
});
