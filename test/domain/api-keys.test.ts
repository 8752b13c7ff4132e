import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { connect } from '../../src/db/database.ts';
import { generateKey, isWellFormedKey, KEY_PREFIX, visibleStart } from '../../src/domain/api-keys/api-key.ts';
import { MemoryRateLimiter } from '../../src/platform/rate-limit.ts';
import { UsageRecorder } from '../../src/domain/api-keys/usage-recorder.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { ApiError } from '../../src/surfaces/shared/errors.ts';
import { HubApiGuard } from '../../src/surfaces/hub-api/guard.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';

describe('Hub API keys', () => {
  test('have 256 bits of randomness, a prefix and a checksum that catches any one-character typo', () => {
    const key = generateKey();
    assert.match(key, /^hubops_[0-9A-Za-z]{49}$/);
    assert.ok(isWellFormedKey(key));
    assert.equal(visibleStart(key), key.slice(0, KEY_PREFIX.length + 4));
    fc.assert(fc.property(fc.integer({ min: KEY_PREFIX.length, max: key.length - 1 }), fc.constantFrom(...'0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'), (i, c) => {
      fc.pre(key[i] !== c);
      assert.equal(isWellFormedKey(key.slice(0, i) + c + key.slice(i + 1)), false);
    }), { numRuns: 500 });
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
      guard.authenticate({ ip: '192.0.2.1', headers: { authorization } } as FastifyRequest, reply, { rideAlong: true });
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
