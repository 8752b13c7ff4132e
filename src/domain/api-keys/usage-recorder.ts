import type { Db } from '../../db/database.ts';
import { addKeyUsage } from './api-key.repository.ts';

/**
 * Request counts and last-use times per key, kept in memory and written in one statement per
 * flush (every `flushEveryMs`, and on shutdown), so authenticated requests never write to the
 * database. Deltas are additive, so any number of instances can flush independently.
 */
export class UsageRecorder {
  #pending = new Map<string, { count: number; lastUsedAt: Date }>();
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
    const entry = this.#pending.get(keyId);
    if (entry) {
      entry.count += 1;
      if (at > entry.lastUsedAt) entry.lastUsedAt = at;
    } else {
      this.#pending.set(keyId, { count: 1, lastUsedAt: at });
    }
  }

  /** Writes what has accumulated; on failure the counts are kept for the next flush. */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(async () => {
      if (this.#pending.size === 0) return;
      const batch = this.#pending;
      this.#pending = new Map();
      try {
        await addKeyUsage(this.#db, [...batch].map(([keyId, u]) => ({ keyId, ...u })));
      } catch (error) {
        for (const [keyId, u] of batch) {
          const entry = this.#pending.get(keyId);
          if (entry) {
            entry.count += u.count;
            if (u.lastUsedAt > entry.lastUsedAt) entry.lastUsedAt = u.lastUsedAt;
          } else {
            this.#pending.set(keyId, u);
          }
        }
        this.#onError(error);
      }
    });
    return this.#flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.flush();
  }
}
