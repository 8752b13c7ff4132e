import type { Db } from '../../db/database.ts';
import type { Clock } from '../../platform/clock.ts';
import { JsonText } from '../../platform/json-text.ts';
import { LruCache } from '../../platform/lru.ts';
import { periodRanges, utcDate, type Period } from '../periods.ts';
import { spendFreshness } from './spend.ts';
import { readSpendState, sumSpendByWorkspace, type SpendByWorkspace } from './spend.repository.ts';

/**
 * Spend sums per (hub, period, UTC day), kept while the hub's report version is unchanged. The
 * first request of a day computes them; repeats cost one small read (the version and the ad
 * accounts' sync state, which is always read fresh). Bounded: least recently used entries go.
 */
export class SpendReportCache {
  readonly #entries: LruCache<string, { version: string; sums: SpendByWorkspace }>;
  constructor(max = 16) {
    this.#entries = new LruCache({ max });
  }
  get(key: string, version: string): SpendByWorkspace | undefined {
    if (this.#entries.peek(key)?.version !== version) return undefined;
    return this.#entries.get(key)!.sums;
  }
  set(key: string, version: string, sums: SpendByWorkspace): void {
    this.#entries.set(key, { version, sums });
  }
}

/** The spend-by-workspace report as JSON text (its workspaces array may be thousands long). */
export async function spendByWorkspace(db: Db, hubId: string, period: Period, clock: Clock, cache: SpendReportCache): Promise<JsonText> {
  const now = clock.now();
  const ranges = periodRanges(period, now);
  const state = await readSpendState(db, hubId);
  const cacheKey = `${hubId}|${period}|${utcDate(now)}`;
  let sums = cache.get(cacheKey, state.reportVersion);
  if (!sums) {
    sums = await sumSpendByWorkspace(db, hubId, ranges);
    cache.set(cacheKey, state.reportVersion, sums);
  }
  const { freshness, asOf } = spendFreshness(state.accounts, now);
  const head = JSON.stringify({
    period,
    timezone: 'UTC',
    current: ranges.current,
    prior: ranges.prior,
    asOf: asOf?.toISOString() ?? null,
    freshness,
    totals: {
      spendCents: sums.spendCents,
      priorSpendCents: sums.priorSpendCents,
      unattributedSpendCents: sums.unattributedSpendCents,
      priorUnattributedSpendCents: sums.priorUnattributedSpendCents,
    },
  });
  return new JsonText(`${head.slice(0, -1)},"workspaces":`, sums.workspacesJson, '}');
}
