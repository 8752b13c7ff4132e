// Issue 27 finding 6, in-process: the OAuth revocation listener against a database that accepts
// connections and never answers them (a blackhole). A connect gives up after its timeout and is
// retried with growing waits; an established connection that goes silent is noticed by the
// heartbeat and replaced; NOTIFYs arrive again once the database answers; close() never waits on it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { connect, type Db } from '../../src/db/database.ts';
import { REVOCATION_CHANNEL, RevocationFeed } from '../../src/db/revocation-feed.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import { proxyDatabase, type TcpProxy } from '../support/tcp-proxy.ts';

let db: TestDb;
let proxy: TcpProxy;
let proxied: Db;

before(async () => {
  db = await createTestDb();
  const through = await proxyDatabase(db.url);
  proxy = through.proxy;
  proxied = connect(through.url);
});
after(async () => {
  await proxied?.close();
  await proxy?.close();
  await db?.drop();
});

const FAST = { connectTimeoutMs: 300, heartbeatMs: 200, reconnectMs: { first: 100, max: 400 } };

async function until(check: () => boolean, what: string): Promise<void> {
  for (const deadline = Date.now() + 15_000; !check(); ) {
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Sends NOTIFYs (straight to the database) until the feed reports a revocation. */
async function notifiedThrough(notified: () => number): Promise<void> {
  const seen = notified();
  await until(() => {
    void db.pool.query(`NOTIFY ${REVOCATION_CHANNEL}`);
    return notified() > seen;
  }, 'a NOTIFY to arrive');
}

test('a connection that goes silent is noticed, replaced, and NOTIFYs arrive again', async () => {
  const states: { listening: boolean; retryInMs?: number }[] = [];
  const feed = new RevocationFeed(proxied, { ...FAST, onState: (s) => states.push(s) });
  let notified = 0;
  feed.onRevocation(() => (notified += 1));
  await feed.start();
  assert.equal(feed.reliable, true);
  await notifiedThrough(() => notified);

  proxy.stall();
  await until(() => !feed.reliable, 'the silent connection to be noticed');
  // Back for new connections; the old one stays dead without a word.
  proxy.passNew();
  await until(() => feed.reliable, 'the listener to listen again');
  assert.deepEqual(states.at(-1), { listening: true });
  await notifiedThrough(() => notified);
  await feed.close();
});

test('a connect to a blackhole gives up after its timeout and is retried with growing waits; close() does not wait', async () => {
  const waits: number[] = [];
  const feed = new RevocationFeed(proxied, { ...FAST, onState: (s) => s.retryInMs !== undefined && waits.push(s.retryInMs) });
  proxy.stall();
  try {
    await assert.rejects(feed.start());
    await until(() => waits.length >= 4, 'four failed attempts');
    assert.deepEqual(waits.slice(0, 4), [100, 200, 400, 400]);
    assert.equal(feed.reliable, false);
  } finally {
    proxy.passNew();
  }
  await until(() => feed.reliable, 'the listener to connect once the database answers');
  proxy.stall();
  try {
    await feed.close(); // the test's own timeout bounds it: a blackholed end() never completes
  } finally {
    proxy.unstall();
  }
});
