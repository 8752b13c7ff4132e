import type { Db } from '../../db/database.ts';
import { addGrantUses } from './grants.repository.ts';

/** Each instance writes a grant's last use at most this often (Connected apps says it can be about 1.5 minutes behind). */
export const GRANT_USE_WRITE_INTERVAL_MS = 60_000;
/** How often uses held back by the interval are looked at (so one waits at most interval + this). */
const SWEEP_MS = 15_000;
/** First uses are gathered this long and written in one statement (a restart's burst is one write). */
const FIRST_USE_BATCH_MS = 1_000;

/**
 * When each OAuth grant's tokens were last used, without a write per request: a grant's first use
 * on this instance is written within a second (with every other first use of that second, in one
 * statement), later uses within GRANT_USE_WRITE_INTERVAL_MS of that write
 * are only remembered, and a sweep writes the latest of them once the interval has passed (and on
 * close). So a grant costs at most one write a minute per instance, and the stored time is at most
 * about 75 s behind the real last use. Writes only ever raise the time, so instances can race.
 */
export class GrantUseRecorder {
  readonly #db: Db;
  readonly #onError: (error: unknown) => void;
  /** When (this process's clock, ms) each grant was last written; older than the interval: forgotten. */
  readonly #writtenAt = new Map<string, number>();
  /** Uses not yet written because the grant was written less than an interval ago. */
  #held = new Map<string, Date>();
  /** First uses waiting for the next batch write. */
  #fresh = new Map<string, Date>();
  #freshTimer: NodeJS.Timeout | undefined;
  readonly #timer: NodeJS.Timeout;
  /** Writes under way, awaited on close (before the pool they use goes). */
  readonly #inFlight = new Set<Promise<void>>();

  /** This process's clock for the interval (ms); tests move it. */
  readonly #nowMs: () => number;

  constructor(db: Db, options: { onError?: (error: unknown) => void; nowMs?: () => number; sweepEveryMs?: number } = {}) {
    this.#db = db;
    this.#onError = options.onError ?? (() => {});
    this.#nowMs = options.nowMs ?? Date.now;
    this.#timer = setInterval(() => void this.flushDue(), options.sweepEveryMs ?? SWEEP_MS);
    this.#timer.unref();
  }

  record(grantId: string, at: Date): void {
    const nowMs = this.#nowMs();
    const written = this.#writtenAt.get(grantId);
    if (written !== undefined && nowMs - written < GRANT_USE_WRITE_INTERVAL_MS) {
      const held = this.#held.get(grantId);
      if (!held || at > held) this.#held.set(grantId, at);
      return;
    }
    this.#writtenAt.set(grantId, nowMs);
    this.#held.delete(grantId);
    const fresh = this.#fresh.get(grantId);
    if (!fresh || at > fresh) this.#fresh.set(grantId, at);
    this.#freshTimer ??= setTimeout(() => void this.#writeFresh(), FIRST_USE_BATCH_MS).unref();
  }

  /** Writes the held uses whose grant was last written an interval ago or more; settles every write under way. */
  async flushDue(): Promise<void> {
    await this.#writeFresh();
    await this.#sweep(false);
    await Promise.all(this.#inFlight);
  }

  /** Writes everything held back (last use is a convenience: a failure is reported, not retried). */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.#writeFresh();
    await this.#sweep(true);
    await Promise.all(this.#inFlight);
  }

  async #sweep(all: boolean): Promise<void> {
    const nowMs = this.#nowMs();
    for (const [grantId, written] of this.#writtenAt) {
      if (nowMs - written >= GRANT_USE_WRITE_INTERVAL_MS && !this.#held.has(grantId)) this.#writtenAt.delete(grantId);
    }
    const due: { grantId: string; at: Date }[] = [];
    for (const [grantId, at] of this.#held) {
      if (!all && nowMs - this.#writtenAt.get(grantId)! < GRANT_USE_WRITE_INTERVAL_MS) continue;
      due.push({ grantId, at });
      this.#held.delete(grantId);
      this.#writtenAt.set(grantId, nowMs);
    }
    await this.#write(due);
  }

  #writeFresh(): Promise<void> {
    clearTimeout(this.#freshTimer);
    this.#freshTimer = undefined;
    const uses = [...this.#fresh].map(([grantId, at]) => ({ grantId, at }));
    this.#fresh.clear();
    return this.#write(uses);
  }

  #write(uses: { grantId: string; at: Date }[]): Promise<void> {
    if (uses.length === 0) return Promise.resolve();
    const write = addGrantUses(this.#db, uses)
      .catch((error: unknown) => this.#onError(error))
      .finally(() => this.#inFlight.delete(write));
    this.#inFlight.add(write);
    return write;
  }
}
