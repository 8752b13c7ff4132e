import type { Db } from '../../db/database.ts';
import type { Clock } from '../../platform/clock.ts';
import { JsonText } from '../../platform/json-text.ts';
import { VersionedCache } from '../../platform/lru.ts';
import { entityTag, type Validator } from '../../platform/validators.ts';
import { addDays, PERIODS, periodRanges, utcDate, type DateRange, type Period } from '../periods.ts';
import { DEFAULT_PAGE_SIZE } from '../../policy.ts';
import type { HubCatalogCache } from './hub-catalog.ts';
import type { ListCursor, Position } from '../keyset.ts';
import { parseSince } from './opt-in.ts';
import {
  countOptInReport as countReport,
  countOptInsBetween,
  countOptInSummary,
  findOptInPage as readOptInPage,
  findOptInPageState,
  findOptInReportPage as readReportPage,
  readOptInSummaryVersion,
  type OptInPage,
  type OptInPageQuery,
  type OptInPageState,
  type OptInReportFilters,
  type OptInReportQuery,
  type OptInReportRow,
  type PeriodCounts,
} from './opt-in.repository.ts';

export type { OptInPage, OptInPageQuery, OptInReportFilters, OptInReportQuery, OptInReportRow } from './opt-in.repository.ts';

export interface ListOptInsInput {
  since?: string;
  playbookId?: string;
  status?: string;
  limit?: number;
  cursor: ListCursor<Position>;
}

function pageQuery(hubId: string, input: ListOptInsInput): OptInPageQuery {
  return {
    hubId,
    since: input.since === undefined ? undefined : parseSince(input.since),
    playbookId: input.playbookId,
    status: input.status,
    after: input.cursor.after,
    limit: input.limit ?? DEFAULT_PAGE_SIZE,
  };
}

/** A page of the hub's opt-ins, oldest change first, as `{data, nextCursor}` JSON text, and its validator. */
export async function listOptIns(
  db: Db,
  catalogs: HubCatalogCache,
  hubId: string,
  input: ListOptInsInput,
): Promise<{ json: JsonText; validator: Validator }> {
  const query = pageQuery(hubId, input);
  const page = await readOptInPage(db, catalogs, query);
  const nextCursor = page.next && input.cursor.next(page.next);
  return {
    json: new JsonText('{"data":', ...page.json, `,"nextCursor":${JSON.stringify(nextCursor)}}`),
    validator: pageValidatorOf(query, page),
  };
}

/** The validator of the page listOptIns would return, from its rows' keys alone (see findOptInPageState). */
export async function optInPageValidator(db: Db, hubId: string, input: ListOptInsInput): Promise<Validator> {
  const query = pageQuery(hubId, input);
  return pageValidatorOf(query, await findOptInPageState(db, query));
}

/**
 * A page is a function of its query, its rows (each row's own columns move its updated_at), the
 * catalog its rows embed (a workspace renamed, a field archived, a playbook renamed: every page
 * of the hub changes) and whether a next page follows. A row on another page is none of these.
 */
function pageValidatorOf(query: OptInPageQuery, page: OptInPageState): Validator {
  // Every field of the query, by name: a field added to OptInPageQuery does not compile until it is hashed here.
  const queried: { [field in keyof Required<OptInPageQuery>]: string | number | undefined } = {
    hubId: query.hubId,
    since: query.since?.getTime(),
    playbookId: query.playbookId,
    status: query.status,
    after: query.after && `${query.after.at}|${query.after.id}`,
    limit: query.limit,
    workspaceId: query.workspaceId,
    optedInFrom: query.optedInFrom?.getTime(),
    optedInBefore: query.optedInBefore?.getTime(),
  };
  return { etag: entityTag('opt-ins', ...Object.values(queried), page.catalogVersion, page.keysDigest, page.hasNext) };
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

/**
 * Summaries per (hub, UTC day), each valid only at the summary version it was counted at: repeated
 * REST and MCP calls cost one read of the version.
 */
export class OptInSummaryCache extends VersionedCache<OptInSummary> {
  constructor(max = 256) {
    super(max);
  }
}

/**
 * The summary as of `clock`'s UTC day, and its validator; counted only when the hub's summary
 * version or the day changed. Deterministic for a (summary version, day): asOf is the instant its
 * figures have been current since — the hub's last change to them or today's 00:00 UTC (which
 * moves every period's range), whichever is later — not the time it was built, so equal state
 * gives equal bytes.
 */
export async function cachedOptInSummary(
  db: Db,
  hubId: string,
  clock: Clock,
  cache: OptInSummaryCache,
): Promise<{ summary: OptInSummary; validator: Validator }> {
  const now = clock.now();
  const key = `${hubId}|${utcDate(now)}`;
  const { version, readAt } = await readOptInSummaryVersion(db, hubId);
  const cached = cache.get(key, version);
  if (cached) return { summary: cached, validator: summaryValidatorOf(hubId, now, version, cached.asOf, readAt) };
  const counted = await countSummary(db, hubId, now);
  // Kept at the version read with the figures (a change may have landed since the read above).
  cache.set(key, counted.version, counted.summary);
  return { summary: counted.summary, validator: summaryValidatorOf(hubId, now, counted.version, counted.summary.asOf, counted.readAt) };
}

/** The summary's validator from the hub's version alone: one row read, nothing counted. */
export async function optInSummaryValidator(db: Db, hubId: string, clock: Clock): Promise<Validator> {
  const now = clock.now();
  const { version, changedAt, readAt } = await readOptInSummaryVersion(db, hubId);
  return summaryValidatorOf(hubId, now, version, summaryAsOf(changedAt, now).toISOString(), readAt);
}

async function countSummary(db: Db, hubId: string, now: Date): Promise<{ summary: OptInSummary; version: string; readAt: Date }> {
  const ranges = PERIODS.map((period) => ({ period, ...periodRanges(period, now) }));
  const counts = await countOptInSummary(
    db,
    hubId,
    ranges.flatMap((r) => [r.current, r.prior]),
  );
  const summary: OptInSummary = {
    timezone: 'UTC',
    asOf: summaryAsOf(counts.changedAt, now).toISOString(),
    activeOptIns: counts.activeOptIns,
    periods: ranges.map((r, i) => ({
      period: r.period,
      ...r.current,
      ...counts.ranges[2 * i]!,
      prior: { ...r.prior, ...counts.ranges[2 * i + 1]! },
    })),
  };
  return { summary, version: counts.version, readAt: counts.readAt };
}

/** Since when the figures at `now` have been current: their last change, or the start of the UTC day. */
function summaryAsOf(changedAt: Date, now: Date): Date {
  return new Date(Math.max(changedAt.getTime(), Date.parse(`${utcDate(now)}T00:00:00Z`)));
}

/**
 * The summary is a function of the hub's summary version and the UTC day. Its Last-Modified is
 * asOf, once settled at `readAt`, the database's time when the version was read.
 */
function summaryValidatorOf(hubId: string, now: Date, version: string, asOf: string, readAt: Date): Validator {
  return { etag: entityTag('summary', hubId, utcDate(now), version), lastModified: settledAsOf(new Date(asOf), readAt) };
}

/** Whole seconds between a change time's second and the database's second before it is sent as Last-Modified. */
const LAST_MODIFIED_SETTLE_SECONDS = 2;

/**
 * asOf, fit to send as Last-Modified when the database's clock reads `readAt` — or undefined. A
 * change is stamped at its commit, before the commit is visible; an HTTP date has one-second
 * resolution. A commit under way while a client read lands later than the Last-Modified the
 * client got, but it must land in a later second, or If-Modified-Since with that date would be
 * answered 304 and the change never seen: so a Last-Modified is sent only once its second is over
 * by a whole second more (a commit's stamp is visible within that). Both times are the database's.
 */
function settledAsOf(asOf: Date, readAt: Date): Date | undefined {
  const second = (date: Date) => Math.floor(date.getTime() / 1000);
  return second(asOf) + LAST_MODIFIED_SETTLE_SECONDS <= second(readAt) ? asOf : undefined;
}

/** The summary as the web admin shows it: as of the moment it is shown, today so far against yesterday up to the same time of day. */
export interface WebOptInSummary extends OptInSummary {
  /** Yesterday's opt-ins from 00:00 UTC until exactly 24 hours before `asOf`. */
  yesterdaySameHours: PeriodCounts;
}

export async function webOptInSummary(db: Db, hubId: string, clock: Clock, cache: OptInSummaryCache): Promise<WebOptInSummary> {
  const now = clock.now();
  const { summary } = await cachedOptInSummary(db, hubId, { now: () => now }, cache);
  const yesterday = new Date(`${addDays(utcDate(now), -1)}T00:00:00Z`);
  const yesterdaySameHours = await countOptInsBetween(db, hubId, yesterday, new Date(now.getTime() - 86_400_000));
  return { ...summary, asOf: now.toISOString(), yesterdaySameHours };
}

/** One keyset page of the hub's opt-ins with the web report's filters too (the CSV export reads them all, page by page). */
export async function findOptInPage(db: Db, catalogs: HubCatalogCache, query: OptInPageQuery): Promise<OptInPage> {
  return readOptInPage(db, catalogs, query);
}

// --- The web admin's opt-ins report: sorted by the column a user picks, counted, paged by offset.

/** One page of the report in the chosen order. */
export async function findOptInReportPage(db: Db, query: OptInReportQuery): Promise<OptInReportRow[]> {
  return readReportPage(db, query);
}

/** How many opt-ins the report's filters match. */
export async function countOptInReport(db: Db, filters: OptInReportFilters): Promise<number> {
  return countReport(db, filters);
}
