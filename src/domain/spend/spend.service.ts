import type { Db } from '../../db/database.ts';
import type { Clock } from '../../platform/clock.ts';
import { JsonText } from '../../platform/json-text.ts';
import { VersionedCache } from '../../platform/lru.ts';
import { entityTag, type Validator } from '../../platform/validators.ts';
import { periodRanges, utcDate, type Period } from '../periods.ts';
import { spendFreshness, type AdAccountStatus } from './spend.ts';
import {
  adAccountStatuses as readAdAccountStatuses,
  readSpendState,
  sumSpendByWorkspace,
  type SpendByWorkspace,
  type SpendState,
} from './spend.repository.ts';

/**
 * Spend sums per (hub, period, UTC day), kept while the hub's report version is unchanged. The
 * first request of a day computes them; repeats cost one small read (the version and the ad
 * accounts' sync state, which is always read fresh).
 */
export class SpendReportCache extends VersionedCache<SpendByWorkspace> {
  constructor(max = 16) {
    super(max);
  }
}

/** The spend-by-workspace report as JSON text (its workspaces array may be thousands long). */
export async function spendByWorkspace(db: Db, hubId: string, period: Period, clock: Clock, cache: SpendReportCache): Promise<JsonText> {
  return (await spendReport(db, hubId, period, clock, cache)).json;
}

/** The report and the validator of the state it was built from. */
export async function spendReport(
  db: Db,
  hubId: string,
  period: Period,
  clock: Clock,
  cache: SpendReportCache,
): Promise<{ json: JsonText; validator: Validator }> {
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
  return {
    json: new JsonText(`${head.slice(0, -1)},"workspaces":`, sums.workspacesJson, '}'),
    validator: spendValidatorOf(hubId, period, now, state),
  };
}

/**
 * The report's validator without its sums: the state read alone (one small query). No
 * Last-Modified: an ad account's sync state flips (and freshness turns stale) at no recorded time.
 */
export async function spendReportValidator(db: Db, hubId: string, period: Period, clock: Clock): Promise<Validator> {
  const now = clock.now();
  return spendValidatorOf(hubId, period, now, await readSpendState(db, hubId));
}

/**
 * Everything the report is a function of at `now`: the UTC day (its ranges), the report version
 * (spend, workspaces and their fields, by trigger), and what the ad accounts' state shows of
 * itself: asOf (the oldest sync) and freshness (it turns stale 6 hours after a sync with nothing
 * written). Another account's sync that moves neither changes nothing in the report, nor its tag.
 */
function spendValidatorOf(hubId: string, period: Period, now: Date, state: SpendState): Validator {
  const { freshness, asOf } = spendFreshness(state.accounts, now);
  return { etag: entityTag('spend', hubId, period, utcDate(now), state.reportVersion, asOf?.getTime() ?? null, freshness) };
}

/** The hub's ad accounts with their sync state, by name: what the web admin's freshness banner names. */
export async function adAccountStatuses(db: Db, hubId: string): Promise<AdAccountStatus[]> {
  return readAdAccountStatuses(db, hubId);
}
