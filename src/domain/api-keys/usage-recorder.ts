import type { Db } from '../../db/database.ts';
import { addKeyUsage } from './api-key.repository.ts';
import { utcDay } from './api-key.ts';

interface Pending {
  /** Requests by UTC day (a flush can straddle midnight). */
  days: Map<string, number>;
  lastUsedAt: Date;
}

/** Waits between the shutdown flush's attempts: about 4 s in all, well inside a stop's grace. */
const CLOSE_RETRY_DELAYS_MS = [250, 1_000, 3_000];

/**
 * Request counts (per UTC day) and last-use times per key, kept in memory and written in one statement per
 * flush (every `flushEveryMs`, and on shutdown), so authenticated requests never write to the
 * database. Deltas are additive, so any number of instances can flush independently.
 */
export class UsageRecorder {
  #pending = new Map<string, Pending>();
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> = Promise.resolve();
  readonly #db: Db;
  readonly #onError: (error: unknown) => void;

  constructor(db: Db, options: { flushEveryMs?: number; onError?: (error: unknown) => void } = {}) {
    this.#db = db;
    this.#onError = options.onError ?? (() => {});
    if (options.flushEveryMs) {
      this.#timer = setInterval(() => void this.flush(), options.flushEveryMs);
      this.#timer.unref();
    }
  }

  record(keyId: string, at: Date): void {
    this.#add(keyId, { days: new Map([[utcDay(at), 1]]), lastUsedAt: at });
  }

  #add(keyId: string, usage: Pending): void {
    const entry = this.#pending.get(keyId);
    if (!entry) {
      this.#pending.set(keyId, usage);
      return;
    }
    for (const [day, count] of usage.days) entry.days.set(day, (entry.days.get(day) ?? 0) + count);
    if (usage.lastUsedAt > entry.lastUsedAt) entry.lastUsedAt = usage.lastUsedAt;
  }

  /** Writes what has accumulated; on failure the counts are kept for the next flush. */
  async flush(): Promise<void> {
    const error = await this.#write();
    if (error) this.#onError(error);
  }

  /**
   * The last flush, at shutdown: there is no next one, so a failure (the database restarting,
   * a dropped connection) is retried for a few seconds, and counts that still cannot be written
   * reject the close with how many were lost, rather than vanishing in a "will retry" warning.
   */
  async close(retryDelaysMs: readonly number[] = CLOSE_RETRY_DELAYS_MS): Promise<void> {
    clearInterval(this.#timer);
    for (let attempt = 0; ; attempt += 1) {
      const error = await this.#write();
      if (!error) return;
      if (attempt === retryDelaysMs.length) {
        const requests = [...this.#pending.values()].flatMap((u) => [...u.days.values()]).reduce((sum, count) => sum + count, 0);
        throw new Error(`key usage not written at shutdown: ${requests} request(s) on ${this.#pending.size} key(s) are lost`, { cause: error });
      }
      this.#onError(error);
      await new Promise((resolve) => setTimeout(resolve, retryDelaysMs[attempt]));
    }
  }

  /** One write of the pending counts (serialised); returns the error, the counts kept, if it failed. */
  #write(): Promise<unknown> {
    const attempt = this.#flushing.then(async () => {
      if (this.#pending.size === 0) return undefined;
      const batch = this.#pending;
      this.#pending = new Map();
      try {
        await addKeyUsage(this.#db, [...batch].map(([keyId, u]) => ({ keyId, ...u })));
        return undefined;
      } catch (error) {
        for (const [keyId, u] of batch) this.#add(keyId, u);
        return error;
      }
    });
    this.#flushing = attempt.then(() => {});
    return attempt;
  }
}
