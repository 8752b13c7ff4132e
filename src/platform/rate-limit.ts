
// Rolling-window rate limits (a sliding log: "at most N requests in any W ms"). In-process by
// default; with REDIS_URL the log lives in Redis so every instance shares the same windows.

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the oldest counted request leaves the window (a unit frees up). */
  resetSeconds: number;
}

export interface RateLimiter {
  /** Counts one request against `key` if it fits in the window; a refused request is not counted. */
  hit(key: string, limit: number, windowMs: number, nowMs: number): Promise<RateDecision>;
  /** How many requests `key` has in the window now, without counting one. */
  count(key: string, windowMs: number, nowMs: number): Promise<number>;
  close(): Promise<void>;
}

export const decide = (allowed: boolean, limit: number, used: number, oldestMs: number, windowMs: number, nowMs: number): RateDecision => ({
  allowed,
  limit,
  remaining: Math.max(0, limit - used),
  resetSeconds: Math.max(1, Math.ceil((oldestMs + windowMs - nowMs) / 1000)),
});

export class MemoryRateLimiter implements RateLimiter {
  readonly #logs = new Map<string, number[]>();
  readonly #sweeper: NodeJS.Timeout;

  constructor(sweepEveryMs = 60_000) {
    // Forget keys whose newest request is older than any window we use (a bounded map).
    this.#sweeper = setInterval(() => {
      const cutoff = Date.now() - 10 * 60_000;
      for (const [key, log] of this.#logs) if ((log[log.length - 1] ?? 0) < cutoff) this.#logs.delete(key);
    }, sweepEveryMs);
    this.#sweeper.unref();
  }

  #window(key: string, windowMs: number, nowMs: number): number[] {
    const log = this.#logs.get(key) ?? [];
    let drop = 0;
    while (drop < log.length && log[drop]! <= nowMs - windowMs) drop++;
    if (drop > 0) log.splice(0, drop);
    return log;
  }

  async hit(key: string, limit: number, windowMs: number, nowMs: number): Promise<RateDecision> {
    const log = this.#window(key, windowMs, nowMs);
    const allowed = log.length < limit;
    if (allowed) {
      log.push(nowMs);
      this.#logs.set(key, log);
    }
    return decide(allowed, limit, log.length, log[0] ?? nowMs, windowMs, nowMs);
  }

  async count(key: string, windowMs: number, nowMs: number): Promise<number> {
    return this.#window(key, windowMs, nowMs).length;
  }

  async close(): Promise<void> {
    clearInterval(this.#sweeper);
    this.#logs.clear();
  }
}
