import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { Kysely, PostgresDialect } from 'kysely';
import { connect, type Db } from '../../src/db/database.ts';
import type { Database } from '../../src/db/schema.ts';
import { createKey, keyDailyUsage, listKeys } from '../../src/domain/api-keys/api-key.service.ts';
import { generateKey, isWellFormedKey, KEY_PREFIX, visibleStart } from '../../src/domain/api-keys/api-key.ts';
import { MemoryRateLimiter } from '../../src/platform/rate-limit.ts';
import { UsageRecorder } from '../../src/domain/api-keys/usage-recorder.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { ApiError } from '../../src/surfaces/shared/errors.ts';
import { HubApiGuard } from '../../src/surfaces/hub-api/guard.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { createTestDb, type TestDb } from '../support/db.ts';
import * as fx from '../support/world.ts';

describe('Hub API keys', () => {
  test('have 256 bits of randomness, a prefix and a checksum that catches any one-character typo', () => {
    const key = generateKey();
    assert.match(key, /^hubops_[0-9A-Za-z]{49}$/);
    assert.ok(isWellFormedKey(key));
    assert.equal(visibleStart(key), key.slice(0, KEY_PREFIX.length + 4));
    fc.assert(
      fc.property(
        fc.integer({ min: KEY_PREFIX.length, max: key.length - 1 }),
        fc.constantFrom(...'0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'),
        (i, c) => {
          fc.pre(key[i] !== c);
          assert.equal(isWellFormedKey(key.slice(0, i) + c + key.slice(i + 1)), false);
        },
      ),
      { numRuns: 500 },
    );
    assert.equal(isWellFormedKey(`${key}x`), false);
    assert.equal(isWellFormedKey(key.slice(0, -1)), false);
  });

  test('a key with a wrong checksum is refused without a database read', async () => {
    // A pool pointing nowhere: any query would fail, so a clean 401 proves none was made.
    const unreachable = connect('postgres://nobody@127.0.0.1:1/none');
    const limiter = new MemoryRateLimiter();
    const guard = new HubApiGuard({ db: unreachable, limiter, usage: new UsageRecorder(unreachable), clock: systemClock });
    const reply = { headers: () => reply } as unknown as FastifyReply;
    const attempt = (authorization: string) =>
      guard.authenticate({ ip: '192.0.2.1', headers: { authorization } } as FastifyRequest, reply, {});
    const key = generateKey();
    const mistyped = key.slice(0, 10) + (key[10] === 'a' ? 'b' : 'a') + key.slice(11);
    for (const header of [`Bearer ${mistyped}`, 'Bearer nonsense']) {
      await assert.rejects(attempt(header), (error) => error instanceof ApiError && error.status === 401);
    }
    await assert.rejects(attempt(`Bearer ${key}`), (error) => !(error instanceof ApiError), 'a well-formed key does reach the database');
    await limiter.close();
    await unreachable.close();
  });
});

describe('key usage: requests and conditional hits (answered 304)', () => {
  let db: TestDb;
  before(async () => {
    db = await createTestDb();
    await fx.account(db, 'acc_u');
    await fx.hub(db, 'hub_u', 'acc_u');
  });
  after(async () => db?.drop());

  const totals = async (keyId: string) =>
    (
      await db.pool.query<{ request_count: string; not_modified_count: string }>(
        'SELECT request_count, not_modified_count FROM api_key_usage WHERE key_id = $1',
        [keyId],
      )
    ).rows[0];
  const days = async (keyId: string) =>
    (
      await db.pool.query<{ day: string; request_count: string; not_modified_count: string }>(
        'SELECT day, request_count, not_modified_count FROM api_key_daily_usage WHERE key_id = $1 ORDER BY day',
        [keyId],
      )
    ).rows;

  test('the recorder keeps both counts per key and UTC day, and one statement writes them for every key', async () => {
    const poller = await createKey(db, { hubId: 'hub_u', name: 'poller' });
    const plain = await createKey(db, { hubId: 'hub_u', name: 'plain' });
    // The same pool, through a Kysely that logs what it sends: the flush's statements.
    const statements: string[] = [];
    const logged: Db = {
      ...db,
      kysely: new Kysely<Database>({
        dialect: new PostgresDialect({ pool: db.pool }),
        log: (event) => void statements.push(event.query.sql),
      }),
    };
    const usage = new UsageRecorder(logged);
    const lateOn21st = new Date('2026-11-21T23:59:59.000Z');
    const earlyOn22nd = new Date('2026-11-22T00:00:01.000Z');
    // As the guard does: every request is recorded at admission; those answered 304 also as conditional hits.
    for (let i = 0; i < 3; i++) usage.record(poller.id, lateOn21st);
    usage.recordNotModified(poller.id, lateOn21st);
    for (let i = 0; i < 4; i++) usage.record(poller.id, earlyOn22nd);
    for (let i = 0; i < 3; i++) usage.recordNotModified(poller.id, earlyOn22nd);
    for (let i = 0; i < 2; i++) usage.record(plain.id, earlyOn22nd);
    assert.equal(await totals(poller.id), undefined, 'nothing written per request');

    await usage.flush();
    assert.equal(statements.length, 1, statements.join('\n---\n'));
    assert.deepEqual(await totals(poller.id), { request_count: '7', not_modified_count: '4' });
    assert.deepEqual(await totals(plain.id), { request_count: '2', not_modified_count: '0' });
    assert.deepEqual(await days(poller.id), [
      { day: '2026-11-21', request_count: '3', not_modified_count: '1' },
      { day: '2026-11-22', request_count: '4', not_modified_count: '3' },
    ]);
    await usage.flush();
    assert.equal(statements.length, 1, 'nothing pending: no statement');

    // Another instance's deltas add to the same rows.
    const other = new UsageRecorder(db);
    other.record(poller.id, earlyOn22nd);
    other.recordNotModified(poller.id, earlyOn22nd);
    other.record(poller.id, earlyOn22nd);
    await other.flush();
    assert.deepEqual(await totals(poller.id), { request_count: '9', not_modified_count: '5' });
    assert.deepEqual((await days(poller.id)).at(-1), { day: '2026-11-22', request_count: '6', not_modified_count: '4' });

    // What the API tab and the CLI read.
    const listed = await listKeys(db, 'hub_u');
    assert.deepEqual(
      listed.map((k) => [k.name, k.requestCount, k.notModifiedCount]),
      [
        ['poller', 9, 5],
        ['plain', 2, 0],
      ],
    );
    const daily = await keyDailyUsage(db, 'hub_u', earlyOn22nd);
    assert.deepEqual(daily.counts.get(poller.id)?.slice(-2), [3, 6]);
    assert.deepEqual(daily.notModified.get(poller.id)?.slice(-2), [1, 4]);
    assert.equal(
      daily.notModified.get(plain.id)?.reduce((a, b) => a + b),
      0,
    );
  });
});
