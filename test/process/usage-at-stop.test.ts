// The shutdown flush of key usage is the last one: when it fails (the database restarting, a
// dropped connection) it is retried, and what still cannot be written is reported with the number
// of requests lost — never dropped behind a "will retry" that no one will do.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { connect, type Db } from '../../src/db/database.ts';
import { createKey } from '../../src/domain/api-keys/api-key.service.ts';
import { UsageRecorder } from '../../src/domain/api-keys/usage-recorder.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import * as fx from '../support/world.ts';
import { proxyDatabase, type TcpProxy } from '../support/tcp-proxy.ts';

let db: TestDb;
let proxy: TcpProxy;
let proxied: Db;

before(async () => {
  db = await createTestDb();
  const through = await proxyDatabase(db.url);
  proxy = through.proxy;
  proxied = connect(through.url);
  await fx.account(db, 'acc_u');
  await fx.hub(db, 'hub_u', 'acc_u');
});

after(async () => {
  await proxied?.close();
  await proxy?.close();
  await db?.drop();
});

async function requestCount(keyId: string): Promise<number> {
  const { rows } = await db.pool.query<{ n: string | null }>('SELECT request_count AS n FROM api_key_usage WHERE key_id = $1', [keyId]);
  return Number(rows[0]?.n ?? 0);
}

/** The key's requests answered 304 Not Modified, in all and on its days. */
async function notModifiedCounts(keyId: string): Promise<{ total: number; daily: number }> {
  const { rows } = await db.pool.query<{ total: string | null; daily: string | null }>(
    `SELECT (SELECT not_modified_count FROM api_key_usage WHERE key_id = $1) AS total,
            (SELECT sum(not_modified_count) FROM api_key_daily_usage WHERE key_id = $1) AS daily`,
    [keyId],
  );
  return { total: Number(rows[0]?.total ?? 0), daily: Number(rows[0]?.daily ?? 0) };
}

test('a shutdown flush that fails is retried, and the counts arrive once the database is back', async () => {
  const key = await createKey(db, { hubId: 'hub_u', name: 'retried' });
  const warnings: unknown[] = [];
  const usage = new UsageRecorder(proxied, { onError: (error) => warnings.push(error) });
  for (let i = 0; i < 17; i += 1) usage.record(key.id, new Date());
  for (let i = 0; i < 6; i += 1) usage.recordNotModified(key.id, new Date());

  await proxy.cut();
  const closed = usage.close([200, 200, 2_000]);
  // Back while the close is still retrying.
  await new Promise((resolve) => setTimeout(resolve, 600));
  await proxy.restore();
  await closed;
  assert.ok(warnings.length >= 1, 'the failed attempts were reported');
  assert.equal(await requestCount(key.id), 17);
  assert.deepEqual(await notModifiedCounts(key.id), { total: 6, daily: 6 }, 'the conditional hits arrive with the requests');
});

test('a shutdown flush that keeps failing rejects, naming the requests lost', async () => {
  const key = await createKey(db, { hubId: 'hub_u', name: 'lost' });
  const usage = new UsageRecorder(proxied);
  for (let i = 0; i < 5; i += 1) usage.record(key.id, new Date());

  await proxy.cut();
  try {
    await assert.rejects(usage.close([50, 50]), /key usage not written at shutdown: 5 request\(s\) on 1 key\(s\) are lost/);
  } finally {
    await proxy.restore();
  }
  assert.equal(await requestCount(key.id), 0);
});
