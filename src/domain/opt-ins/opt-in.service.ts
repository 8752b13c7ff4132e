import type { Db } from '../../db/database.ts';
import type { Clock } from '../../platform/clock.ts';
import { JsonText } from '../../platform/json-text.ts';
import { addDays, PERIODS, periodRanges, utcDate, type DateRange, type Period } from '../periods.ts';
import { DEFAULT_PAGE_SIZE } from '../../policy.ts';
import type { HubCatalogCache } from './hub-catalog.ts';
import { decodeOptInCursor, encodeOptInCursor, parseSince } from './opt-in.ts';
import { countActiveOptIns, countOptInsBetween, countOptInsByRanges, findOptInPage, type PeriodCounts } from './opt-in.repository.ts';

export interface ListOptInsInput {
  since?: string;
  playbookId?: string;
  status?: string;
  limit?: number;
  cursor?: string;
}

/** A page of the hub's opt-ins, oldest change first, as `{data, nextCursor}` JSON text. */
export async function listOptIns(db: Db, catalogs: HubCatalogCache, hubId: string, input: ListOptInsInput): Promise<JsonText> {
  const page = await findOptInPage(db, catalogs, {
    hubId,
    since: input.since === undefined ? undefined : parseSince(input.since),
    playbookId: input.playbookId,
    status: input.status,
    after: input.cursor === undefined ? undefined : decodeOptInCursor(input.cursor),
    limit: input.limit ?? DEFAULT_PAGE_SIZE,
  });
  const nextCursor = page.next && encodeOptInCursor(page.next);
  return new JsonText('{"data":', ...page.json, `,"nextCursor":${JSON.stringify(nextCursor)}}`);
}

export interface PeriodSummary extends DateRange {
  period: Period;
  optIns: number;
  workspaces: number;
  prior: DateRange & { optIns: number; workspaces: number };
}

export interface OptInSummary {
  timezone: 'UTC';
  asOf: string;
  activeOptIns: number;
  periods: PeriodSummary[];
}

export async function optInSummary(db: Db, hubId: string, clock: Clock): Promise<OptInSummary> {
  const now = clock.now();
  const ranges = PERIODS.map((period) => ({ period, ...periodRanges(period, now) }));
  const [counts, activeOptIns] = await Promise.all([
    countOptInsByRanges(db, hubId, ranges.flatMap((r) => [r.current, r.prior])),
    countActiveOptIns(db, hubId),
  ]);
  return {
    timezone: 'UTC',
    asOf: now.toISOString(),
    activeOptIns,
    periods: ranges.map((r, i) => ({
      period: r.period,
      ...r.current,
      ...counts[2 * i]!,
      prior: { ...r.prior, ...counts[2 * i + 1]! },
    })),
  };
}

/** The summary as the web admin shows it: today so far against yesterday up to the same time of day. */
export interface WebOptInSummary extends OptInSummary {
  /** Yesterday's opt-ins from 00:00 UTC until exactly 24 hours before `asOf`. */
  yesterdaySameHours: PeriodCounts;
}

export async function webOptInSummary(db: Db, hubId: string, clock: Clock): Promise<WebOptInSummary> {
  const summary = await optInSummary(db, hubId, clock);
  const now = new Date(summary.asOf);
  const yesterday = new Date(`${addDays(utcDate(now), -1)}T00:00:00Z`);
  const yesterdaySameHours = await countOptInsBetween(db, hubId, yesterday, new Date(now.getTime() - 86_400_000));
  return { ...summary, yesterdaySameHours };
}
