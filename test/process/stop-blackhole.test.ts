// Issue 27 finding 6: the database turns into a blackhole (connections accepted, never answered).
// The revocation listener's connection, open through the outage, stays dead without a word: the
// listener must notice (a heartbeat), reconnect with backoff, and a graceful stop must not wait on
// it. Once the database answers again, a stop is prompt, exits 0 and writes every request count;
// while it still does not, the stop ends by its deadline and says exactly what was lost.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, test } from 'node:test';
import { READ_TIMEOUT_MS } from '../../src/policy.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import { httpRequest } from '../support/http.ts';
import { proxyDatabase, type TcpProxy } from '../support/tcp-proxy.ts';
import { callHubApi, demoKey, demoKeyRequests, hubopsEnv, killStarted, NODE, ROOT, startServer, type Running } from './support.ts';

const N = 13;
const cleanups: (() => Promise<unknown>)[] = [];
after(async () => {
  killStarted();
  for (const cleanup of cleanups) await cleanup();
});

/** A server whose database is behind a proxy the test can turn into a blackhole, with N requests made on the demo key. */
async function serverBehindProxy(): Promise<{ db: TestDb; proxy: TcpProxy; server: Running; hubId: string }> {
  const db = await createTestDb();
  const { proxy, url } = await proxyDatabase(db.url);
  cleanups.push(async () => {
    await proxy.close();
    await db.drop();
  });
  const server = await startServer(NODE, [path.join(ROOT, 'src/main.ts')], hubopsEnv({ url }, { HUBOPS_SPEND_SYNC: '0' }));
  const { key, hubId } = demoKey(server.output());
  await callHubApi(server, key, N);
  return { db, proxy, server, hubId };
}

async function stop(server: Running): Promise<{ code: number | null; ms: number }> {
  const startedAt = Date.now();
  process.kill(server.child.pid!, 'SIGTERM');
  const [code] = await server.exited;
  return { code, ms: Date.now() - startedAt };
}

test('after a blackhole that has ended, a stop is prompt, exits 0 and writes every request count', { timeout: 120_000 }, async (t) => {
  const { db, proxy, server, hubId } = await serverBehindProxy();
  proxy.stall();
  // Longer than the pool keeps an idle connection (10 s): the pool's dead ones are gone, the listener's is not.
  await new Promise((resolve) => setTimeout(resolve, 12_000));
  proxy.passNew();
  // Pooled connections left dead by the outage are dropped by the read timeout: the database is back for all.
  await new Promise((resolve) => setTimeout(resolve, READ_TIMEOUT_MS + 2_000));
  for (let ready = false; !ready; ) {
    ready = await httpRequest(`${server.base}/readyz`, { timeoutMs: 6_000 }).then(
      (r) => r.status === 200,
      () => false,
    );
  }
  const { code, ms } = await stop(server);
  t.diagnostic(`stop took ${ms} ms`);
  assert.equal(code, 0, server.output());
  assert.match(server.output(), /"exitCode":0,"msg":"stopped"/);
  assert.doesNotMatch(server.output(), /not written|unclean stop|did not finish/);
  assert.match(server.output(), /revocation listener connected again/, 'the listener noticed the dead connection and reconnected');
  assert.equal(await demoKeyRequests(hubId, hubopsEnv({ url: db.url })), N, 'every request counted');
});

test('during a blackhole, the stop ends by its deadline and names the request counts it could not write', {
  timeout: 120_000,
}, async (t) => {
  const { db, proxy, server, hubId } = await serverBehindProxy();
  proxy.stall();
  const { code, ms } = await stop(server);
  t.diagnostic(`stop took ${ms} ms`);
  assert.equal(code, 1, server.output());
  assert.match(server.output(), new RegExp(`${N} request\\(s\\) on 1 key\\(s\\) are lost`), server.output());
  proxy.passNew();
  assert.equal(await demoKeyRequests(hubId, hubopsEnv({ url: db.url })), 0);
});
