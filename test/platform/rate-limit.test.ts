import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { MemoryRateLimiter } from '../../src/platform/rate-limit.ts';

describe('rolling-window rate limiter', () => {
  test('allows a request exactly when fewer than `limit` allowed requests fall in the last window', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 5_000 }), { maxLength: 80 }),
        fc.integer({ min: 1, max: 6 }),
        async (gaps, limit) => {
          const limiter = new MemoryRateLimiter();
          const windowMs = 1_000;
          const allowed: number[] = [];
          let now = 0;
          for (const gap of gaps) {
            now += gap % 700;
            const expected = allowed.filter((t) => t > now - windowMs).length < limit;
            const decision = await limiter.hit('k', limit, windowMs, now);
            assert.equal(decision.allowed, expected);
            if (expected) allowed.push(now);
            assert.equal(decision.remaining, Math.max(0, limit - allowed.filter((t) => t > now - windowMs).length));
          }
          await limiter.close();
        },
      ),
    );
  });
});
