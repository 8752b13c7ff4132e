import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { decide, type RateCharge, type RateDecision, type RateLimiter, type RateWindow } from './rate-limit.ts';

// The rate limiter for several instances: the sliding logs live in Redis. In a module of its
// own so that ioredis is loaded only when REDIS_URL is set.

// For every window KEYS[i] (ARGV: now, member, then window and limit per key): trim, count; if
// the request fits in all of them, add it to all of them — atomically, so a request refused by
// one window consumes nothing from the others. Returns {allowed, used1, oldest1, used2, …}.
// (The keys of one request are used together in one script: a single Redis, not a Cluster.)
const HIT_SCRIPT = `
local now, member = tonumber(ARGV[1]), ARGV[2]
local used = {}
local allowed = 1
for i = 1, #KEYS do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - tonumber(ARGV[1 + 2 * i]))
  used[i] = redis.call('ZCARD', KEYS[i])
  if used[i] >= tonumber(ARGV[2 + 2 * i]) then allowed = 0 end
end
local out = {allowed}
for i = 1, #KEYS do
  if allowed == 1 then
    redis.call('ZADD', KEYS[i], now, member)
    used[i] = used[i] + 1
  end
  redis.call('PEXPIRE', KEYS[i], tonumber(ARGV[1 + 2 * i]))
  out[2 * i] = used[i]
  out[2 * i + 1] = redis.call('ZRANGE', KEYS[i], 0, 0, 'WITHSCORES')[2] or tostring(now)
end
return out`;

type HitCommand = (numberOfKeys: number, ...args: (string | number)[]) => Promise<(number | string)[]>;

export class RedisRateLimiter implements RateLimiter {
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(url: string, prefix = 'hubops:rl:') {
    this.#redis = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false });
    // Connection trouble is reported per call (and handled by the caller); don't crash on it.
    this.#redis.on('error', () => {});
    // No fixed key count: each call says how many windows it counts in.
    this.#redis.defineCommand('hubopsHitAll', { lua: HIT_SCRIPT });
    this.#prefix = prefix;
  }

  async hit(key: string, limit: number, windowMs: number, nowMs: number): Promise<RateDecision> {
    return (await this.hitAll([{ key, limit, windowMs }], nowMs)).decisions[0]!;
  }

  async hitAll(windows: RateWindow[], nowMs: number): Promise<RateCharge> {
    const member = `${nowMs}:${randomBytes(6).toString('hex')}`;
    const keys = windows.map((w) => this.#prefix + w.key);
    const args = windows.flatMap((w) => [w.windowMs, w.limit]);
    const hitAll = (this.#redis as unknown as { hubopsHitAll: HitCommand }).hubopsHitAll.bind(this.#redis);
    const [allowedFlag, ...rest] = await hitAll(keys.length, ...keys, nowMs, member, ...args);
    const allowed = Number(allowedFlag) === 1;
    return {
      allowed,
      decisions: windows.map((w, i) => {
        const used = Number(rest[2 * i]);
        return decide(allowed || used < w.limit, w.limit, used, Number(rest[2 * i + 1]), w.windowMs, nowMs);
      }),
      counted: allowed ? windows.map((w) => ({ key: w.key, member })) : [],
    };
  }

  async refund(charge: RateCharge): Promise<void> {
    if (charge.counted.length === 0) return;
    const pipeline = this.#redis.pipeline();
    for (const { key, member } of charge.counted) pipeline.zrem(this.#prefix + key, member);
    await pipeline.exec();
  }

  async count(key: string, windowMs: number, nowMs: number): Promise<number> {
    return this.#redis.zcount(this.#prefix + key, `(${nowMs - windowMs}`, '+inf');
  }

  async peekAll(windows: RateWindow[], nowMs: number): Promise<RateDecision[]> {
    const pipeline = this.#redis.pipeline();
    for (const w of windows) {
      const since = `(${nowMs - w.windowMs}`;
      pipeline.zcount(this.#prefix + w.key, since, '+inf');
      pipeline.zrangebyscore(this.#prefix + w.key, since, '+inf', 'WITHSCORES', 'LIMIT', 0, 1);
    }
    const results = (await pipeline.exec()) ?? [];
    return windows.map((w, i) => {
      const [countError, used] = results[2 * i]!;
      const [oldestError, oldest] = results[2 * i + 1]!;
      if (countError || oldestError) throw countError ?? oldestError;
      const usedCount = Number(used);
      return decide(usedCount < w.limit, w.limit, usedCount, Number((oldest as string[])[1] ?? nowMs), w.windowMs, nowMs);
    });
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
