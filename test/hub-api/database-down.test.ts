// With PostgreSQL unreachable the Hub API answers 503 service_unavailable (never a 500 with
// internals), liveness stays up while readiness goes down, and everything recovers when the
// database comes back, including key revocations made while the app could not reach it.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { buildApp, type App } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { connect, type Db } from '../../src/db/database.ts';
import { createKey, revokeKey } from '../../src/domain/api-keys/api-key.service.ts';
import { openDiskMediaStore } from '../../src/domain/media/media-store.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import * as fx from '../support/world.ts';
import { proxyDatabase, type TcpProxy } from '../support/tcp-proxy.ts';

let db: TestDb;
let proxy: TcpProxy;
let proxied: Db;
let app: App;
let dataDir: string;

before(async () => {
  db = await createTestDb();
  const through = await proxyDatabase(db.url);
  proxy = through.proxy;
  // Short read and connect timeouts, so that the stalled database of the second test is noticed quickly.
  proxied = connect(through.url, { readTimeoutMs: 1_500, connectTimeoutMs: 1_000 });
  dataDir = await mkdtemp(path.join(tmpdir(), 'hubops-database-down-'));
  const config = loadConfig({ DATABASE_URL: through.url, DATA_DIR: dataDir, LOG_LEVEL: 'silent' });
  // No periodic usage flush during the test: the test flushes when it wants to.
  app = await buildApp({
    config,
    db: proxied,
    logger: false,
    usageFlushMs: 3_600_000,
    publisher: false,
    media: await openDiskMediaStore(path.join(dataDir, 'media')),
  });
});

after(async () => {
  await app?.close();
  await proxied?.close();
  await proxy?.close();
  await db?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

async function get(url: string, key?: string): Promise<{ status: number; headers: Record<string, unknown>; text: string; json: any }> {
  const response = await app.fastify.inject({ method: 'GET', url, headers: key ? { authorization: `Bearer ${key}` } : {} });
  let json: unknown;
  try {
    json = response.json();
  } catch {
    json = undefined;
  }
  return { status: response.statusCode, headers: response.headers, text: response.body, json };
}

async function eventually<T>(attempt: () => Promise<T>, ok: (value: T) => boolean, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await attempt();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

test('database down: 503 service_unavailable, /healthz up, /readyz down; then recovery, and a key revoked meanwhile is refused', async () => {
  await fx.account(db);
  await fx.hub(db, 'hub_1');
  await fx.workspace(db, 'hub_1', 'ws_1');
  await fx.playbook(db, 'hub_1', 'pb_1');
  await fx.optIns(db, [{ id: 'oi_1', hubId: 'hub_1', playbookId: 'pb_1', workspaceId: 'ws_1', optedInAt: '2026-11-01T10:00:00Z' }]);
  const key = await createKey(db, { hubId: 'hub_1', name: 'stays' });
  const doomed = await createKey(db, { hubId: 'hub_1', name: 'revoked during the outage' });
  let served = 0;

  // Up: both keys work.
  for (const k of [key.key, key.key, doomed.key, doomed.key]) {
    const response = await get('/v1/hub/playbook-opt-ins', k);
    assert.equal(response.status, 200, response.text);
    assert.equal(response.json.data[0].id, 'oi_1');
    if (k === key.key) served += 1;
  }
  assert.equal((await get('/readyz')).status, 200);
  assert.equal((await get('/healthz')).status, 200);
  const connectionsBefore = proxy.accepted;
  assert.ok(connectionsBefore >= 1, 'the app reaches PostgreSQL through the proxy');

  // Down.
  await proxy.cut();
  await new Promise((resolve) => setTimeout(resolve, 100)); // let the app's pooled sockets see the drop
  for (const path of ['/v1/hub/playbook-opt-ins', '/v1/hub/opt-in-summary', '/v1/hub/spend-by-workspace?period=today']) {
    for (const k of [key.key, doomed.key]) {
      const response = await get(path, k);
      assert.equal(response.status, 503, `${path}: ${response.text}`);
      assert.deepEqual(Object.keys(response.json).sort(), ['error', 'message']);
      assert.equal(response.json.error, 'service_unavailable');
      assert.match(String(response.headers['retry-after']), /^\d+$/);
      assert.doesNotMatch(response.text, /SELECT|api_keys|ECONNREFUSED|at .*\.ts|stack/i, 'no internals in the body');
    }
  }
  // The MCP endpoint too (before anything is hijacked).
  const mcp = await app.fastify.inject({
    method: 'POST',
    url: '/v1/hub/mcp',
    headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
  });
  assert.equal(mcp.statusCode, 503, mcp.body);
  assert.equal(mcp.json().error, 'service_unavailable');
  // A mistyped key needs no database: still a clean 401.
  assert.equal((await get('/v1/hub/playbook-opt-ins', fx.mistyped(key.key))).status, 401);

  const ready = await get('/readyz');
  assert.equal(ready.status, 503);
  assert.equal(ready.json.error, 'service_unavailable');
  assert.equal((await get('/healthz')).status, 200);

  // A failed usage flush keeps the counts for later.
  await app.usage.flush();

  // Revoked while the app cannot reach the database (nothing it held from before may be trusted).
  await revokeKey(db, doomed.id);

  // Up again. The first answer for the key revoked during the outage is already a refusal: no
  // verdict from before the outage survives it.
  await proxy.restore();
  const first = await eventually(
    () => get('/v1/hub/playbook-opt-ins', doomed.key),
    (r) => r.status !== 503,
    'the Hub API to recover',
  );
  assert.equal(first.status, 401, first.text);
  assert.equal(first.json.error, 'invalid_api_key');
  const back = await get('/v1/hub/playbook-opt-ins', key.key);
  assert.equal(back.status, 200, back.text);
  assert.equal(back.json.data[0].id, 'oi_1');
  served += 1;
  assert.equal(
    (
      await eventually(
        () => get('/readyz'),
        (r) => r.status === 200,
        'readiness',
      )
    ).status,
    200,
  );
  for (let i = 0; i < 3; i++) {
    const refused = await get('/v1/hub/playbook-opt-ins', doomed.key);
    assert.equal(refused.status, 401, refused.text);
    const ok = await get('/v1/hub/opt-in-summary', key.key);
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.json.activeOptIns, 1);
    served += 1;
  }

  // The usage counted before the outage survived the failed flush.
  await app.usage.flush();
  const { rows } = await db.pool.query<{ request_count: string; last_used_at: Date | null }>(
    'SELECT coalesce(u.request_count, 0) AS request_count, u.last_used_at FROM api_keys k LEFT JOIN api_key_usage u ON u.key_id = k.id WHERE k.id = $1',
    [key.id],
  );
  assert.equal(Number(rows[0]!.request_count), served);
  assert.ok(rows[0]!.last_used_at);
  // And so did its requests per day, added by the same statement.
  const daily = await db.pool.query<{ total: string }>('SELECT sum(request_count) AS total FROM api_key_daily_usage WHERE key_id = $1', [
    key.id,
  ]);
  assert.equal(Number(daily.rows[0]!.total), served);
});

test('a database that stops answering: 503 once nothing has arrived for the read timeout, never a hung request; then recovery', {
  timeout: 30_000,
}, async () => {
  const key = await createKey(db, { hubId: 'hub_1', name: 'stall' });
  assert.equal((await get('/v1/hub/playbook-opt-ins', key.key)).status, 200);
  // Connections stay open, but PostgreSQL's answers never arrive: pooled connections, with a
  // statement waiting, must be dropped; new ones time out connecting.
  proxy.stall();
  for (const path of ['/v1/hub/playbook-opt-ins', '/v1/hub/opt-in-summary']) {
    const response = await get(path, key.key);
    assert.equal(response.status, 503, `${path}: ${response.text}`);
    assert.equal(response.json.error, 'service_unavailable');
    assert.doesNotMatch(response.text, /timeout|SELECT|at .*\.ts/i, 'no internals in the body');
  }
  proxy.unstall();
  const back = await eventually(
    () => get('/v1/hub/playbook-opt-ins', key.key),
    (r) => r.status === 200,
    'the Hub API to recover',
  );
  assert.equal(back.json.data[0].id, 'oi_1');
});
