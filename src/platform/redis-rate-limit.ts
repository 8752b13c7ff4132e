import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { decide, type RateDecision, type RateLimiter } from './rate-limit.ts';

// The rate limiter for several instances: the sliding logs live in Redis. In a module of its
// own so that ioredis is loaded only when REDIS_URL is set.

// Trim, count and (if it fits) add, atomically. Returns {allowed, used, oldest}.
const HIT_SCRIPT = `
local key, now, window, limit, member = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local used = redis.call('ZCARD', key)
local allowed = 0
if used < limit then
  redis.call('ZADD', key, now, member)
  used = used + 1
  allowed = 1
end
redis.call('PEXPIRE', key, window)
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2] or now
return {allowed, used, tostring(oldest)}`;

export class RedisRateLimiter implements RateLimiter {
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(url: string, prefix = 'hubops:rl:') {
    this.#redis = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false });
    // Connection trouble is reported per call (and handled by the caller); don't crash on it.
    this.#redis.on('error', () => {});
    this.#redis.defineCommand('hubopsHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
    this.#prefix = prefix;
  }

  async hit(key: string, limit: number, windowMs: number, nowMs: number): Promise<RateDecision> {
    const member = `${nowMs}:${randomBytes(6).toString('hex')}`;
    const [allowed, used, oldest] = (await (this.#redis as unknown as {
      hubopsHit(key: string, now: number, window: number, limit: number, member: string): Promise<[number, number, string]>;
    }).hubopsHit(this.#prefix + key, nowMs, windowMs, limit, member));
    return decide(allowed === 1, limit, used, Number(oldest), windowMs, nowMs);
  }

  async count(key: string, windowMs: number, nowMs: number): Promise<number> {
    return this.#redis.zcount(this.#prefix + key, `(${nowMs - windowMs}`, '+inf');
  }

  async ready(): Promise<void> {
    if (this.#redis.status === 'ready') return;
    await new Promise<void>((resolve, reject) => {
      this.#redis.once('ready', () => resolve());
      this.#redis.once('end', () => reject(new Error('Redis connection ended')));
    });
  }

  async close(): Promise<void> {
    this.#redis.disconnect();
  }
}
