import type { Db } from '../../db/database.ts';
import { USAGE_STOP_DEADLINE_MS } from '../../policy.ts';
import { addKeyUsage, type DayUsage } from './api-key.service.ts';
import { utcDay } from './api-key.ts';

interface Pending {
  /** Requests, and those answered 304, by UTC day (a flush can straddle midnight). */
  days: Map<string, DayUsage>;
  lastUsedAt: Date;
}

/** Waits between the shutdown flush's attempts: about 4 s in all, well inside a stop's grace. */
const CLOSE_RETRY_DELAYS_MS = [250, 1_000, 3_000];

/**
 * Request counts and conditional hits (per UTC day) and last-use times per key, kept in memory and written in one statement per
 * flush (every `flushEveryMs`, and on shutdown), so authenticated requests never write to the
 * database. Deltas are additive, so any number of instances can flush independently.
 */
export class UsageRecorder {
  #pending = new Map<string, Pending>();
  /** The counts a write has taken and not yet written (back in #pending if it fails). */
  #writing = new Map<string, Pending>();
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

  /** A request admitted with this key (at authentication, whatever its answer). */
  record(keyId: string, at: Date): void {
    this.#add(keyId, { days: new Map([[utcDay(at), { requests: 1, notModified: 0 }]]), lastUsedAt: at });
  }

  /** A request answered 304 Not Modified, already counted by `record`: a conditional hit. */
  recordNotModified(keyId: string, at: Date): void {
    this.#add(keyId, { days: new Map([[utcDay(at), { requests: 0, notModified: 1 }]]), lastUsedAt: at });
  }

  #add(keyId: string, usage: Pending): void {
    const entry = this.#pending.get(keyId);
    if (!entry) {
      this.#pending.set(keyId, usage);
      return;
    }
    for (const [day, add] of usage.days) {
      const sum = entry.days.get(day);
      if (sum) {
        sum.requests += add.requests;
        sum.notModified += add.notModified;
      } else entry.days.set(day, { ...add });
    }
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
  async close(retryDelaysMs: readonly number[] = CLOSE_RETRY_DELAYS_MS, deadlineMs = USAGE_STOP_DEADLINE_MS): Promise<void> {
    clearInterval(this.#timer);
    const deadline = Date.now() + deadlineMs;
    for (let attempt = 0; ; attempt += 1) {
      const error = await beforeDeadline(this.#write(), deadline);
      if (!error) return;
      if (attempt === retryDelaysMs.length || Date.now() + retryDelaysMs[attempt]! >= deadline) {
        throw new Error(`key usage not written at shutdown: ${this.unwritten()} are lost`, { cause: error });
      }
      this.#onError(error);
      await new Promise((resolve) => setTimeout(resolve, retryDelaysMs[attempt]));
    }
  }

  /** What is counted and not yet written, in words: "5 request(s) on 1 key(s)". */
  unwritten(): string {
    const entries = [...this.#pending, ...this.#writing];
    const requests = entries.flatMap(([, u]) => [...u.days.values()]).reduce((sum, day) => sum + day.requests, 0);
    return `${requests} request(s) on ${new Set(entries.map(([keyId]) => keyId)).size} key(s)`;
  }

  /** One write of the pending counts (serialised); returns the error, the counts kept, if it failed. */
  #write(): Promise<unknown> {
    const attempt = this.#flushing.then(async () => {
      if (this.#pending.size === 0) return undefined;
      const batch = this.#pending;
      this.#pending = new Map();
      this.#writing = batch;
      try {
        await addKeyUsage(
          this.#db,
          [...batch].map(([keyId, u]) => ({ keyId, ...u })),
        );
        return undefined;
      } catch (error) {
        for (const [keyId, u] of batch) this.#add(keyId, u);
        return error;
      } finally {
        this.#writing = new Map();
      }
    });
    this.#flushing = attempt.then(() => {});
    return attempt;
  }
}

/** The write's outcome (its error, or undefined), or an error once `deadline` passes first. */
async function beforeDeadline(write: Promise<unknown>, deadline: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      write,
      new Promise((resolve) => {
        timer = setTimeout(() => resolve(new Error('the database did not answer before the shutdown deadline')), deadline - Date.now());
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
