import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { REDIS_COMMAND_TIMEOUT_MS, REDIS_RETRY_MS, REDIS_START_WAIT_MS } from '../policy.ts';
import { decide, MemoryRateLimiter, type RateCharge, type RateDecision, type RateLimiter, type RateWindow } from './rate-limit.ts';

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

/** Where the limiter says that Redis went away and that it came back (pino's shape). */
export interface OutageLog {
  warn(details: object, message: string): void;
  info(details: object, message: string): void;
}

export interface RedisRateLimiterOptions {
  /** Prefix of every key (tests share one Redis). */
  prefix?: string;
  log: OutageLog;
}

/**
 * Limits that protect accounts must never fail open, so while Redis cannot answer (refused,
 * frozen, restarting) the windows are counted in this process, as without REDIS_URL: each
 * instance then allows the limit on its own, until Redis answers again. The outage and its end
 * are logged once each. Counts made during the outage are not carried over to Redis.
 */
export class RedisRateLimiter implements RateLimiter {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #log: OutageLog;
  readonly #fallback = new MemoryRateLimiter();
  /** Charges counted by the fallback, whose refunds go back to it. */
  readonly #fallbackCharges = new WeakSet<RateCharge>();
  /** Since when Redis has not answered, and when it was last tried (wall-clock ms). */
  #outage: { since: number; triedAt: number } | undefined;

  constructor(url: string, options: RedisRateLimiterOptions) {
    this.#redis = new Redis(url, {
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      lazyConnect: false,
      // A frozen server keeps its sockets open: without a timeout every request would wait on it.
      commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
      connectTimeout: 2_000,
    });
    // Connection trouble shows up as failed commands, which #shared handles; don't crash on it.
    this.#redis.on('error', () => {});
    // No fixed key count: each call says how many windows it counts in.
    this.#redis.defineCommand('hubopsHitAll', { lua: HIT_SCRIPT });
    this.#prefix = options.prefix ?? 'hubops:rl:';
    this.#log = options.log;
  }

  /** Runs `command` on Redis, or `local` on the per-instance windows while Redis cannot answer. */
  async #shared<T>(command: () => Promise<T>, local: (fallback: MemoryRateLimiter) => Promise<T>): Promise<T> {
    const outage = this.#outage;
    // Not connected: ioredis refuses at once (no offline queue). Connected but failing or
    // frozen: one request tries again now and then, rather than each waiting for the timeout.
    if (outage && (this.#redis.status !== 'ready' || Date.now() - outage.triedAt < REDIS_RETRY_MS)) return local(this.#fallback);
    if (outage) outage.triedAt = Date.now();
    try {
      const result = await command();
      if (this.#outage) {
        this.#log.info({ outageMs: Date.now() - this.#outage.since }, 'Redis is back: rate limits are shared between instances again');
        this.#outage = undefined;
      }
      return result;
    } catch (error) {
      this.#beginOutage(error);
      return local(this.#fallback);
    }
  }

  #beginOutage(error: unknown): void {
    if (this.#outage) return;
    this.#outage = { since: Date.now(), triedAt: Date.now() };
    this.#log.warn({ err: error }, 'Redis unavailable: rate limits are counted per instance until it is back');
  }

  async hit(key: string, limit: number, windowMs: number, nowMs: number): Promise<RateDecision> {
    return (await this.hitAll([{ key, limit, windowMs }], nowMs)).decisions[0]!;
  }

  async hitAll(windows: RateWindow[], nowMs: number): Promise<RateCharge> {
    return this.#shared(
      () => this.#hitAll(windows, nowMs),
      async (fallback) => {
        const charge = await fallback.hitAll(windows, nowMs);
        this.#fallbackCharges.add(charge);
        return charge;
      },
    );
  }

  async #hitAll(windows: RateWindow[], nowMs: number): Promise<RateCharge> {
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
    if (this.#fallbackCharges.has(charge)) return this.#fallback.refund(charge);
    // A count Redis holds can only be given back there; if it is down, the count simply ages out.
    await this.#shared(
      async () => {
        const pipeline = this.#redis.pipeline();
        for (const { key, member } of charge.counted) pipeline.zrem(this.#prefix + key, member);
        await pipeline.exec();
      },
      async () => {},
    );
  }

  async count(key: string, windowMs: number, nowMs: number): Promise<number> {
    return this.#shared(
      () => this.#redis.zcount(this.#prefix + key, `(${nowMs - windowMs}`, '+inf'),
      (fallback) => fallback.count(key, windowMs, nowMs),
    );
  }

  async peekAll(windows: RateWindow[], nowMs: number): Promise<RateDecision[]> {
    return this.#shared(
      () => this.#peekAll(windows, nowMs),
      (fallback) => fallback.peekAll(windows, nowMs),
    );
  }

  async #peekAll(windows: RateWindow[], nowMs: number): Promise<RateDecision[]> {
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

  /**
   * Waits for the connection, at most `timeoutMs`; without one by then the outage begins (and is
   * logged), so a start with Redis down serves with per-instance limits instead of waiting.
   */
  async ready(timeoutMs = REDIS_START_WAIT_MS): Promise<boolean> {
    if (this.#redis.status === 'ready') return true;
    const connected = await new Promise<boolean>((resolve) => {
      const onReady = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.#redis.off('ready', onReady);
        resolve(false);
      }, timeoutMs);
      this.#redis.once('ready', onReady);
    });
    if (!connected) this.#beginOutage(new Error(`no connection to Redis within ${timeoutMs} ms`));
    return connected;
  }

  async close(): Promise<void> {
    this.#redis.disconnect();
    await this.#fallback.close();
  }
}
