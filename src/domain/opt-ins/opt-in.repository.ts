import { createHash } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { fixedStatement, queryPrepared, type Db } from '../../db/database.ts';
import { after, type Position } from '../keyset.ts';
import { addDays, type DateRange } from '../periods.ts';
import type { HubCatalog, HubCatalogCache } from './hub-catalog.ts';
import { OPT_IN_STATUSES, type OptInReportSort, type OptInStatus } from './opt-in.ts';

// The hub's non-archived custom fields only: archived keys are removed from each workspace's
// values. Evaluated once per statement (an InitPlan), not per row.
export const visibleFields = (hubId: string) =>
  sql`w.fields - (SELECT coalesce(array_agg(f.key), '{}') FROM workspace_fields f WHERE f.hub_id = ${hubId} AND f.archived)`;

export interface OptInPageQuery {
  hubId: string;
  since?: Date;
  playbookId?: string;
  status?: string;
  after?: Position;
  limit: number;
  /** Web report filters (not offered by the Hub API): one workspace, an optedInAt range [from, to). */
  workspaceId?: string;
  optedInFrom?: Date;
  optedInBefore?: Date;
}

/**
 * What a keyset page is a function of, besides its query: the catalog version its rows embed
 * (null for an empty page, which embeds nothing), the digest of its rows' keys at the database's
 * full precision (every change to a row's own columns moves its updated_at: opt_ins_touch,
 * migration 001), and whether more rows follow.
 */
export interface OptInPageState {
  catalogVersion: string | null;
  /** SHA-256 (hex) of each row's `updated_at` (fixed-width text, microseconds), the byte length of its id, `:` and the id, in page order. */
  keysDigest: string;
  hasNext: boolean;
}

/** A keyset page of opt-ins. */
export interface OptInPage extends OptInPageState {
  /** The page's rows as a Hub API JSON array, in (updatedAt, id) order, in pieces to concatenate. */
  json: string[];
  rows: number;
  /** Where the next page starts (the last row's position), or null if this is the last page. */
  next: Position | null;
}

const q = JSON.stringify;

/** A page row as PostgreSQL returns it: text only, ready to splice. */
interface OptInPageSqlRow {
  id: string;
  playbook_id: string;
  workspace_id: string;
  status: string;
  opted_in_at: string;
  cursor_updated_at: string;
  budget_cents: string | null;
  budget_type: string | null;
  variant: string;
  responses: string;
  /** The hub's catalog version, read once per statement: the same on every row. */
  catalog_version: string;
}

/**
 * One keyset page ordered by (updated_at, id); `limit + 1` rows are read to see if more follow.
 * The hot path of full pulls: the statement reads opt-ins alone, PostgreSQL formats timestamps
 * and hands JSON columns over as text, and the rows' JSON is spliced together here with each
 * row's workspace and playbook taken from the hub's catalog at the version the statement saw —
 * no joins, no Date objects, no parse and re-serialise.
 */
export async function findOptInPage(db: Db, catalogs: HubCatalogCache, q_: OptInPageQuery): Promise<OptInPage> {
  const query = optInPageQuery(q_).compile(db.kysely);
  const rows = await queryPrepared(db, query);
  if (rows.length === 0) return { json: ['[]'], rows: 0, next: null, catalogVersion: null, keysDigest: keysDigestOf([]), hasNext: false };
  const cached = catalogs.get(q_.hubId, rows[0]!.catalog_version);
  const page = cached && splice(rows, q_.limit, cached);
  if (page) return page;
  // The hub's workspaces or playbooks changed since this process read them, or it never did:
  // read them, and the page again, in one snapshot, so the two agree.
  const [catalog, again] = await db.kysely
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => [await readHubCatalog(trx, q_.hubId), (await trx.executeQuery(query)).rows] as const);
  catalogs.set(q_.hubId, catalog);
  const fresh = splice(again, q_.limit, catalog);
  // Cannot happen: foreign keys tie every opt-in to a workspace and a playbook of its hub.
  if (!fresh) throw new Error(`opt-in page of hub ${q_.hubId} refers to a workspace or playbook outside its catalog`);
  return fresh;
}

// updated_at as the cursor keeps it: microseconds, as text (a JS Date would drop them).
const UPDATED_AT_TEXT = sql`to_char(o.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

function optInPageQuery(q_: OptInPageQuery) {
  return sql<OptInPageSqlRow>`
    SELECT o.id, o.playbook_id, o.workspace_id, o.status,
           to_char(o.opted_in_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS opted_in_at,
           ${UPDATED_AT_TEXT} AS cursor_updated_at,
           o.budget_cents, o.budget_type, o.variant::text AS variant, o.responses::text AS responses,
           (SELECT h.catalog_version::text FROM hubs h WHERE h.id = ${q_.hubId}) AS catalog_version
      FROM opt_ins o
     ${pageRows(q_)}`;
}

/** The page's rows: the WHERE, ORDER BY and LIMIT of the page and of its keys alike. */
function pageRows(q_: OptInPageQuery) {
  return sql`WHERE o.hub_id = ${q_.hubId}
       ${q_.playbookId !== undefined ? sql`AND o.playbook_id = ${q_.playbookId}` : sql``}
       ${q_.status !== undefined ? sql`AND o.status = ${q_.status}` : sql``}
       ${q_.since !== undefined ? sql`AND o.updated_at >= ${q_.since}` : sql``}
       ${q_.workspaceId !== undefined ? sql`AND o.workspace_id = ${q_.workspaceId}` : sql``}
       ${q_.optedInFrom !== undefined ? sql`AND o.opted_in_at >= ${q_.optedInFrom}` : sql``}
       ${q_.optedInBefore !== undefined ? sql`AND o.opted_in_at < ${q_.optedInBefore}` : sql``}
       ${q_.after ? sql`AND ${after(sql`o.updated_at`, sql`o.id`, q_.after)}` : sql``}
     ORDER BY o.updated_at, o.id
     LIMIT ${q_.limit + 1}`;
}

/**
 * The state of the page findOptInPage would return (see OptInPageState), in one statement that
 * reads the same rows' keys from the (hub, …, updated_at, id) indexes and hands back one row: the
 * digest is taken in PostgreSQL, so a conditional request parses no page of keys.
 */
export async function findOptInPageState(db: Db, q_: OptInPageQuery): Promise<OptInPageState> {
  const query = sql<{ n: number; digest: string; catalog_version: string | null }>`
    SELECT coalesce(cardinality(k.keys), 0) AS n,
           encode(sha256(convert_to(coalesce(array_to_string(k.keys[1:${q_.limit}], ''), ''), 'UTF8')), 'hex') AS digest,
           CASE WHEN k.keys IS NOT NULL THEN (SELECT h.catalog_version::text FROM hubs h WHERE h.id = ${q_.hubId}) END AS catalog_version
      FROM (SELECT array_agg(p.updated_at || octet_length(p.id) || ':' || p.id ORDER BY p.at, p.id) AS keys
              FROM (SELECT o.id, o.updated_at AS at, ${UPDATED_AT_TEXT} AS updated_at
                      FROM opt_ins o
                     ${pageRows(q_)}) p) k`.compile(db.kysely);
  const [row] = await queryPrepared(db, query);
  return { catalogVersion: row!.catalog_version, keysDigest: row!.digest, hasNext: row!.n > q_.limit };
}

/**
 * The digest findOptInPageState takes in PostgreSQL, of rows read here (see OptInPageState). One
 * hash update of the keys' text joined: an update per key (500 calls into the crypto binding a
 * page) cost more than the hashing itself.
 */
function keysDigestOf(keys: readonly Position[]): string {
  const text = new Array<string>(keys.length);
  for (let i = 0; i < keys.length; i++) text[i] = `${keys[i]!.at}${Buffer.byteLength(keys[i]!.id)}:${keys[i]!.id}`;
  return createHash('sha256').update(text.join('')).digest('hex');
}

/** Rows per piece of a page's JSON: pieces stay small enough (~50 kB) to die young. */
const ROWS_PER_PIECE = 100;

/**
 * The first `limit` rows as a JSON array in pieces, or undefined if one refers to a workspace or
 * playbook the catalog lacks. Each piece is a list of strings joined once: a template per row
 * would make a tree of thousands of small strings to walk, and one string for a whole 500-row
 * page would be large enough to be allocated straight into the old generation, page after page.
 */
function splice(rows: OptInPageSqlRow[], limit: number, catalog: HubCatalog): OptInPage | undefined {
  const count = Math.min(rows.length, limit);
  const pieces: string[] = [];
  let parts: string[] = ['['];
  for (let i = 0; i < count; i++) {
    const r = rows[i]!;
    const playbook = catalog.playbooks.get(r.playbook_id);
    const workspace = catalog.workspaces.get(r.workspace_id);
    if (playbook === undefined || workspace === undefined) return undefined;
    // updatedAt is shown at millisecond precision (what the API promises); the cursor keeps all.
    // status and budget_type are plain words (CHECK constraints), so they need no escaping.
    parts.push(
      i === 0 ? '{"id":' : ',{"id":',
      q(r.id),
      ',"playbook":',
      playbook,
      ',"workspace":',
      workspace,
      ',"status":"',
      r.status,
      '","optedInAt":"',
      r.opted_in_at,
      '","updatedAt":"',
      r.cursor_updated_at.slice(0, 23),
      'Z","budgetCents":',
      r.budget_cents ?? 'null',
      ',"budgetType":',
      r.budget_type === null ? 'null' : `"${r.budget_type}"`,
      ',"variant":',
      r.variant,
      ',"responses":',
      r.responses,
      '}',
    );
    if ((i + 1) % ROWS_PER_PIECE === 0) {
      pieces.push(parts.join(''));
      parts = [];
    }
  }
  parts.push(']');
  pieces.push(parts.join(''));
  const keys = rows.slice(0, count).map((r) => ({ at: r.cursor_updated_at, id: r.id }));
  const hasNext = rows.length > limit;
  return {
    json: pieces,
    rows: count,
    next: hasNext ? keys[count - 1]! : null,
    catalogVersion: catalog.version,
    keysDigest: keysDigestOf(keys),
    hasNext,
  };
}

/** The hub's catalog (see HubCatalog) and the version it is at, in one statement. */
async function readHubCatalog(db: Kysely<Database>, hubId: string): Promise<HubCatalog> {
  const { rows } = await sql<{ kind: 'version' | 'workspace' | 'playbook'; id: string; name: string | null; detail: string | null }>`
    SELECT 'version' AS kind, h.catalog_version::text AS id, NULL AS name, NULL AS detail FROM hubs h WHERE h.id = ${hubId}
    UNION ALL
    SELECT 'workspace', w.id, w.name, (${visibleFields(hubId)})::text FROM workspaces w WHERE w.hub_id = ${hubId}
    UNION ALL
    SELECT 'playbook', p.id, p.name, array_to_json(p.solutions)::text FROM playbooks p WHERE p.hub_id = ${hubId}`.execute(db);
  const catalog: HubCatalog = { version: '', workspaces: new Map(), playbooks: new Map() };
  for (const r of rows) {
    if (r.kind === 'version') catalog.version = r.id;
    // Joined, not templated: a template makes a tree of strings that every page would walk again.
    else if (r.kind === 'workspace')
      catalog.workspaces.set(r.id, ['{"id":', q(r.id), ',"name":', q(r.name), ',"fields":', r.detail, '}'].join(''));
    else catalog.playbooks.set(r.id, ['{"id":', q(r.id), ',"name":', q(r.name), ',"solutions":', r.detail, '}'].join(''));
  }
  return catalog;
}

export interface PeriodCounts {
  optIns: number;
  workspaces: number;
}

/**
 * What /opt-in-summary's figures are current at: the hub's counter and when it last moved
 * (migration 015: stamped at the changing transaction's commit), and the database's time when
 * they were read, on the same clock as the stamp.
 */
export interface OptInSummaryVersion {
  version: string;
  changedAt: Date;
  readAt: Date;
}

const SUMMARY_VERSION = fixedStatement(`
    SELECT h.opt_in_summary_version::text AS version, h.opt_ins_changed_at AS changed_at, statement_timestamp() AS read_at
      FROM hubs h WHERE h.id = $1`);

/** The hub's summary version alone: one row by primary key, what a conditional request is compared with. */
export async function readOptInSummaryVersion(db: Db, hubId: string): Promise<OptInSummaryVersion> {
  const [row] = await queryPrepared<{ version: string; changed_at: Date; read_at: Date }>(db, SUMMARY_VERSION(hubId));
  if (!row) throw new Error(`hub ${hubId} does not exist`);
  return { version: row.version, changedAt: row.changed_at, readAt: row.read_at };
}

export interface OptInSummaryCounts extends OptInSummaryVersion {
  /** Opt-ins whose status is active now. */
  activeOptIns: number;
  /** Per range, in the order given. */
  ranges: PeriodCounts[];
}

/**
 * The summary's figures and the version they are at, in one statement (one snapshot, so the
 * version names exactly these figures). Opt-ins per range add up the per-day counts the triggers
 * of migration 006 keep, and the active count is theirs too. Distinct workspaces need the rows:
 * one pass over the hub's opted_in_at index for the union of the ranges folds each workspace's
 * days into a bit mask (bit i = i days after the first day), and a workspace counts for a range
 * when its mask shares a bit with the range's. Up to 63 days.
 */
export async function countOptInSummary(db: Db, hubId: string, ranges: DateRange[]): Promise<OptInSummaryCounts> {
  if (ranges.length === 0) throw new Error('countOptInSummary needs at least one range');
  const from = ranges.reduce((min, r) => (r.startDate < min ? r.startDate : min), ranges[0]!.startDate);
  const to = ranges.reduce((max, r) => (r.endDate > max ? r.endDate : max), ranges[0]!.endDate);
  const dayIndex = (date: string) => Math.round((Date.parse(date) - Date.parse(from)) / 86_400_000);
  const days = dayIndex(to) + 1;
  if (days > 63) throw new Error(`countOptInSummary spans ${days} days; a bigint mask holds 63`);
  const dayStarts = Array.from({ length: days }, (_, i) => `${addDays(from, i)}T00:00:00Z`);
  const masks = ranges.map((r) => {
    let mask = 0n;
    for (let i = dayIndex(r.startDate); i <= dayIndex(r.endDate); i++) mask |= 1n << BigInt(i);
    return mask;
  });
  const { rows } = await sql<Record<string, string | Date>>`
    SELECT h.opt_in_summary_version::text AS version, h.opt_ins_changed_at AS changed_at, statement_timestamp() AS read_at,
           coalesce((SELECT s.opt_ins FROM opt_in_status_counts s WHERE s.hub_id = h.id AND s.status = 'active'), 0) AS active,
           per_day.*, distinct_workspaces.*
      FROM hubs h
     CROSS JOIN (
       SELECT ${sql.join(ranges.map((r, i) => sql`coalesce(sum(d.opt_ins) FILTER (WHERE d.day BETWEEN ${r.startDate}::date AND ${r.endDate}::date), 0) AS ${sql.raw(`o${i}`)}`))}
         FROM opt_in_day_counts d
        WHERE d.hub_id = ${hubId} AND d.day >= ${from}::date AND d.day <= ${to}::date) per_day
     CROSS JOIN (
       SELECT ${sql.join(masks.map((mask, i) => sql`count(*) FILTER (WHERE days & ${mask.toString()}::bigint <> 0) AS ${sql.raw(`w${i}`)}`))}
         FROM (SELECT bit_or(1::bigint << (width_bucket(o.opted_in_at, ${dayStarts}::timestamptz[]) - 1)) AS days
                 FROM opt_ins o
                WHERE o.hub_id = ${hubId}
                  AND o.opted_in_at >= ${dayStarts[0]}::timestamptz
                  AND o.opted_in_at < ${`${addDays(to, 1)}T00:00:00Z`}::timestamptz
                GROUP BY o.workspace_id) per_workspace) distinct_workspaces
     WHERE h.id = ${hubId}`.execute(db.kysely);
  const row = rows[0];
  if (!row) throw new Error(`hub ${hubId} does not exist`);
  return {
    version: row.version as string,
    changedAt: row.changed_at as Date,
    readAt: row.read_at as Date,
    activeOptIns: Number(row.active),
    ranges: ranges.map((_, i) => ({ optIns: Number(row[`o${i}`]), workspaces: Number(row[`w${i}`]) })),
  };
}

/** Opt-ins whose optedInAt falls in [from, before), and the distinct workspaces among them. */
export async function countOptInsBetween(db: Db, hubId: string, from: Date, before: Date): Promise<PeriodCounts> {
  const { rows } = await sql<{ opt_ins: string; workspaces: string }>`
    SELECT count(*) AS opt_ins, count(DISTINCT o.workspace_id) AS workspaces
      FROM opt_ins o
     WHERE o.hub_id = ${hubId} AND o.opted_in_at >= ${from} AND o.opted_in_at < ${before}`.execute(db.kysely);
  return { optIns: Number(rows[0]!.opt_ins), workspaces: Number(rows[0]!.workspaces) };
}

// --- The web admin's opt-ins report: sorted by the column a user picks, counted, paged by offset.

export interface OptInReportFilters {
  hubId: string;
  playbookId?: string;
  status?: string;
  workspaceId?: string;
  /** optedInAt in [optedInFrom, optedInBefore). */
  optedInFrom?: Date;
  optedInBefore?: Date;
}

export interface OptInReportQuery extends OptInReportFilters {
  sort: OptInReportSort;
  descending: boolean;
  offset: number;
  limit: number;
}

/** One row of the report: names instead of the nested objects, instants as ISO text (UTC, ms). */
export interface OptInReportRow {
  id: string;
  playbookName: string;
  workspaceName: string;
  status: OptInStatus;
  optedInAt: string;
  updatedAt: string;
  budgetCents: number | null;
  budgetType: 'lifetime' | 'daily' | null;
}

const reportFilters = (f: OptInReportFilters) => sql`o.hub_id = ${f.hubId}
       ${f.playbookId !== undefined ? sql`AND o.playbook_id = ${f.playbookId}` : sql``}
       ${f.status !== undefined ? sql`AND o.status = ${f.status}` : sql``}
       ${f.workspaceId !== undefined ? sql`AND o.workspace_id = ${f.workspaceId}` : sql``}
       ${f.optedInFrom !== undefined ? sql`AND o.opted_in_at >= ${f.optedInFrom}` : sql``}
       ${f.optedInBefore !== undefined ? sql`AND o.opted_in_at < ${f.optedInBefore}` : sql``}`;

// Names sort case-insensitively; statuses in their lifecycle order (OPT_IN_STATUSES), as a
// workflow tool lists them; ties by id, so every order is total and pages never overlap.
const SORT_KEYS: Record<OptInReportSort, ReturnType<typeof sql>> = {
  workspace: sql`lower(w.name)`,
  playbook: sql`lower(p.name)`,
  status: sql`array_position(${[...OPT_IN_STATUSES]}::text[], o.status)`,
  opted_in: sql`o.opted_in_at`,
  updated: sql`o.updated_at`,
};

/** One page of the report in the chosen order. */
export async function findOptInReportPage(db: Db, q_: OptInReportQuery): Promise<OptInReportRow[]> {
  const dir = sql.raw(q_.descending ? 'DESC' : 'ASC');
  const { rows } = await sql<{
    id: string;
    playbook_name: string;
    workspace_name: string;
    status: OptInStatus;
    opted_in_at: string;
    updated_at: string;
    budget_cents: string | null;
    budget_type: 'lifetime' | 'daily' | null;
  }>`
    SELECT o.id, p.name AS playbook_name, w.name AS workspace_name, o.status,
           to_char(o.opted_in_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS opted_in_at,
           to_char(o.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at,
           o.budget_cents, o.budget_type
      FROM opt_ins o
      JOIN workspaces w ON w.id = o.workspace_id AND w.hub_id = ${q_.hubId}
      JOIN playbooks p ON p.id = o.playbook_id AND p.hub_id = ${q_.hubId}
     WHERE ${reportFilters(q_)}
     ORDER BY ${SORT_KEYS[q_.sort]} ${dir}, o.id ${dir}
     LIMIT ${q_.limit} OFFSET ${q_.offset}`.execute(db.kysely);
  return rows.map((r) => ({
    id: r.id,
    playbookName: r.playbook_name,
    workspaceName: r.workspace_name,
    status: r.status,
    optedInAt: r.opted_in_at,
    updatedAt: r.updated_at,
    budgetCents: r.budget_cents === null ? null : Number(r.budget_cents),
    budgetType: r.budget_type,
  }));
}

/** How many opt-ins match: by status from the counts the triggers of migration 006 keep, else counted. */
export async function countOptInReport(db: Db, f: OptInReportFilters): Promise<number> {
  if (f.playbookId === undefined && f.workspaceId === undefined && f.optedInFrom === undefined && f.optedInBefore === undefined) {
    let query = db.kysely
      .selectFrom('opt_in_status_counts')
      .select((e) => e.fn.coalesce(e.fn.sum<string>('opt_ins'), sql<string>`0`).as('n'))
      .where('hub_id', '=', f.hubId);
    if (f.status !== undefined) query = query.where('status', '=', f.status);
    return Number((await query.executeTakeFirstOrThrow()).n);
  }
  const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM opt_ins o WHERE ${reportFilters(f)}`.execute(db.kysely);
  return Number(rows[0]!.n);
}
