// Rolling-window rate limits (a sliding log: "at most N requests in any W ms"). In-process by
// default; with REDIS_URL the log lives in Redis so every instance shares the same windows.

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the oldest counted request leaves the window (a unit frees up). */
  resetSeconds: number;
}

/** One rolling window a request is counted in. */
export interface RateWindow {
  key: string;
  limit: number;
  windowMs: number;
}

/** The outcome of counting one request against several windows at once. */
export interface RateCharge {
  /** True when the request fitted in every window (and was counted in all of them). */
  allowed: boolean;
  /** One decision per window, in order; a refused request leaves every `remaining` as it was. */
  decisions: RateDecision[];
  /** What was counted, so that `refund` can give it back (empty when refused). */
  counted: { key: string; member: string }[];
}

export interface RateLimiter {
  /** Counts one request against `key` if it fits in the window; a refused request is not counted. */
  hit(key: string, limit: number, windowMs: number, nowMs: number): Promise<RateDecision>;
  /**
   * Counts one request against every window if it fits in all of them, atomically; otherwise
   * counts it in none — a refused request consumes nothing, not even from the windows it passed.
   */
  hitAll(windows: RateWindow[], nowMs: number): Promise<RateCharge>;
  /** Gives back what a charge counted (a request that turned out to be refused after all). */
  refund(charge: RateCharge): Promise<void>;
  /** How many requests `key` has in the window now, without counting one. */
  count(key: string, windowMs: number, nowMs: number): Promise<number>;
  /** What `hitAll` would say of each window now, without counting anything (a request the limits let through free, such as a 304). */
  peekAll(windows: RateWindow[], nowMs: number): Promise<RateDecision[]>;
  close(): Promise<void>;
}

/** A charge that counted nothing and refused nothing: what a limiter that cannot answer yields (limits fail open). */
export function allowedCharge(windows: RateWindow[]): RateCharge {
  return {
    allowed: true,
    decisions: windows.map((w) => ({ allowed: true, limit: w.limit, remaining: w.limit, resetSeconds: w.windowMs / 1000 })),
    counted: [],
  };
}

export const decide = (allowed: boolean, limit: number, used: number, oldestMs: number, windowMs: number, nowMs: number): RateDecision => ({
  allowed,
  limit,
  remaining: Math.max(0, limit - used),
  resetSeconds: Math.max(1, Math.ceil((oldestMs + windowMs - nowMs) / 1000)),
});

export class MemoryRateLimiter implements RateLimiter {
  // Per key, the times of the counted requests, oldest first.
  readonly #logs = new Map<string, number[]>();
  readonly #sweeper: NodeJS.Timeout;
  // The longest window asked for so far: a key is forgotten only once it cannot matter to any.
  #longestWindowMs = 60_000;

  constructor(sweepEveryMs = 60_000) {
    // Forget keys whose newest request is older than any window we use (a bounded map).
    this.#sweeper = setInterval(() => {
      const cutoff = Date.now() - this.#longestWindowMs;
      for (const [key, log] of this.#logs) if ((log[log.length - 1] ?? 0) < cutoff) this.#logs.delete(key);
    }, sweepEveryMs);
    this.#sweeper.unref();
  }

  #window(key: string, windowMs: number, nowMs: number): number[] {
    if (windowMs > this.#longestWindowMs) this.#longestWindowMs = windowMs;
    const log = this.#logs.get(key) ?? [];
    let drop = 0;
    while (drop < log.length && log[drop]! <= nowMs - windowMs) drop++;
    if (drop > 0) log.splice(0, drop);
    return log;
  }

  async hit(key: string, limit: number, windowMs: number, nowMs: number): Promise<RateDecision> {
    return (await this.hitAll([{ key, limit, windowMs }], nowMs)).decisions[0]!;
  }

  async hitAll(windows: RateWindow[], nowMs: number): Promise<RateCharge> {
    const logs = windows.map((w) => this.#window(w.key, w.windowMs, nowMs));
    const allowed = windows.every((w, i) => logs[i]!.length < w.limit);
    if (allowed) {
      windows.forEach((w, i) => {
        logs[i]!.push(nowMs);
        this.#logs.set(w.key, logs[i]!);
      });
    }
    return {
      allowed,
      decisions: windows.map((w, i) =>
        decide(logs[i]!.length < w.limit || allowed, w.limit, logs[i]!.length, logs[i]![0] ?? nowMs, w.windowMs, nowMs),
      ),
      counted: allowed ? windows.map((w) => ({ key: w.key, member: String(nowMs) })) : [],
    };
  }

  async refund(charge: RateCharge): Promise<void> {
    for (const { key, member } of charge.counted) {
      const log = this.#logs.get(key);
      const at = log?.lastIndexOf(Number(member)) ?? -1;
      if (at >= 0) log!.splice(at, 1);
    }
  }

  async count(key: string, windowMs: number, nowMs: number): Promise<number> {
    return this.#window(key, windowMs, nowMs).length;
  }

  async peekAll(windows: RateWindow[], nowMs: number): Promise<RateDecision[]> {
    return windows.map((w) => {
      const log = this.#window(w.key, w.windowMs, nowMs);
      return decide(log.length < w.limit, w.limit, log.length, log[0] ?? nowMs, w.windowMs, nowMs);
    });
  }

  async close(): Promise<void> {
    clearInterval(this.#sweeper);
    this.#logs.clear();
  }
}
