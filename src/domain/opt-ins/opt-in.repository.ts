import { sql } from 'kysely';
import { queryPrepared, type Db } from '../../db/database.ts';
import { addDays, type DateRange } from '../periods.ts';
import type { PageCursor } from './opt-in.ts';

// The hub's non-archived custom fields only: archived keys are removed from each workspace's
// values. Evaluated once per statement (an InitPlan), not per row.
export const visibleFields = (hubId: string) =>
  sql`w.fields - (SELECT coalesce(array_agg(f.key), '{}') FROM workspace_fields f WHERE f.hub_id = ${hubId} AND f.archived)`;

export interface OptInPageQuery {
  hubId: string;
  since?: Date;
  playbookId?: string;
  status?: string;
  after?: PageCursor;
  limit: number;
  /** Web report filters (not offered by the Hub API): one workspace, an optedInAt range [from, to). */
  workspaceId?: string;
  optedInFrom?: Date;
  optedInBefore?: Date;
}

export interface OptInPageRow {
  /** The row as Hub API JSON text. */
  json: string;
  /** updated_at at full database precision, for the cursor. */
  cursorUpdatedAt: string;
  id: string;
}

const q = JSON.stringify;

/** A page row as PostgreSQL returns it: text only, ready to splice. */
interface OptInPageSqlRow {
  id: string;
  playbook_id: string;
  playbook_name: string;
  solutions: string;
  workspace_id: string;
  workspace_name: string;
  fields: string;
  status: string;
  opted_in_at: string;
  cursor_updated_at: string;
  budget_cents: string | null;
  budget_type: string | null;
  variant: string;
  responses: string;
}

/**
 * One keyset page ordered by (updated_at, id), fetching `limit + 1` rows to see if more follow.
 * The hot path of full pulls: PostgreSQL formats timestamps and hands JSON columns over as text,
 * and each row's JSON is spliced together here — no Date objects, no parse and re-serialise.
 */
export async function findOptInPage(db: Db, q_: OptInPageQuery): Promise<OptInPageRow[]> {
  const query = sql<OptInPageSqlRow>`
    SELECT o.id, p.id AS playbook_id, p.name AS playbook_name, array_to_json(p.solutions)::text AS solutions,
           w.id AS workspace_id, w.name AS workspace_name, (${visibleFields(q_.hubId)})::text AS fields,
           o.status,
           to_char(o.opted_in_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS opted_in_at,
           to_char(o.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_updated_at,
           o.budget_cents, o.budget_type, o.variant::text AS variant, o.responses::text AS responses
      FROM opt_ins o
      JOIN playbooks p ON p.id = o.playbook_id
      JOIN workspaces w ON w.id = o.workspace_id
     WHERE o.hub_id = ${q_.hubId}
       ${q_.playbookId !== undefined ? sql`AND o.playbook_id = ${q_.playbookId}` : sql``}
       ${q_.status !== undefined ? sql`AND o.status = ${q_.status}` : sql``}
       ${q_.since !== undefined ? sql`AND o.updated_at >= ${q_.since}` : sql``}
       ${q_.workspaceId !== undefined ? sql`AND o.workspace_id = ${q_.workspaceId}` : sql``}
       ${q_.optedInFrom !== undefined ? sql`AND o.opted_in_at >= ${q_.optedInFrom}` : sql``}
       ${q_.optedInBefore !== undefined ? sql`AND o.opted_in_at < ${q_.optedInBefore}` : sql``}
       ${q_.after ? sql`AND (o.updated_at, o.id) > (${q_.after.updatedAt}::timestamptz, ${q_.after.id})` : sql``}
     ORDER BY o.updated_at, o.id
     LIMIT ${q_.limit + 1}`.compile(db.kysely);
  const rows = await queryPrepared(db, query);
  return rows.map(mapRow);
}

function mapRow(r: OptInPageSqlRow): OptInPageRow {
  // updatedAt is shown at millisecond precision (what the API promises); the cursor keeps all.
  const updatedAt = `${r.cursor_updated_at.slice(0, 23)}Z`;
  return {
    json:
      `{"id":${q(r.id)},"playbook":{"id":${q(r.playbook_id)},"name":${q(r.playbook_name)},"solutions":${r.solutions}},` +
      `"workspace":{"id":${q(r.workspace_id)},"name":${q(r.workspace_name)},"fields":${r.fields}},` +
      `"status":${q(r.status)},"optedInAt":"${r.opted_in_at}","updatedAt":"${updatedAt}",` +
      `"budgetCents":${r.budget_cents ?? 'null'},"budgetType":${r.budget_type === null ? 'null' : q(r.budget_type)},` +
      `"variant":${r.variant},"responses":${r.responses}}`,
    cursorUpdatedAt: r.cursor_updated_at,
    id: r.id,
  };
}

export interface PeriodCounts {
  optIns: number;
  workspaces: number;
}

/**
 * Opt-ins whose optedInAt falls on a day of each range, and the distinct workspaces among them.
 * The opt-in counts add up the per-day counts the triggers of migration 006 keep (one row a day).
 * Distinct workspaces need the rows: one pass over the hub's opted_in_at index for the union of
 * the ranges folds each workspace's days into a bit mask (bit i = i days after the first day), and
 * a workspace counts for a range when its mask shares a bit with the range's. Up to 63 days.
 */
export async function countOptInsByRanges(db: Db, hubId: string, ranges: DateRange[]): Promise<PeriodCounts[]> {
  if (ranges.length === 0) return [];
  const from = ranges.reduce((min, r) => (r.startDate < min ? r.startDate : min), ranges[0]!.startDate);
  const to = ranges.reduce((max, r) => (r.endDate > max ? r.endDate : max), ranges[0]!.endDate);
  const dayIndex = (date: string) => Math.round((Date.parse(date) - Date.parse(from)) / 86_400_000);
  const days = dayIndex(to) + 1;
  if (days > 63) throw new Error(`countOptInsByRanges spans ${days} days; a bigint mask holds 63`);
  const dayStarts = Array.from({ length: days }, (_, i) => `${addDays(from, i)}T00:00:00Z`);
  const masks = ranges.map((r) => {
    let mask = 0n;
    for (let i = dayIndex(r.startDate); i <= dayIndex(r.endDate); i++) mask |= 1n << BigInt(i);
    return mask;
  });
  const [perDay, distinct] = await Promise.all([
    db.kysely
      .selectFrom('opt_in_day_counts')
      .select(['day', 'opt_ins'])
      .where('hub_id', '=', hubId)
      .where('day', '>=', from)
      .where('day', '<=', to)
      .execute(),
    sql<Record<string, string>>`
      SELECT ${sql.join(masks.map((mask, i) => sql`count(*) FILTER (WHERE days & ${mask.toString()}::bigint <> 0) AS ${sql.raw(`w${i}`)}`))}
        FROM (SELECT bit_or(1::bigint << (width_bucket(o.opted_in_at, ${dayStarts}::timestamptz[]) - 1)) AS days
                FROM opt_ins o
               WHERE o.hub_id = ${hubId}
                 AND o.opted_in_at >= ${dayStarts[0]}::timestamptz
                 AND o.opted_in_at < ${`${addDays(to, 1)}T00:00:00Z`}::timestamptz
               GROUP BY o.workspace_id) per_workspace`.execute(db.kysely),
  ]);
  const workspaces = distinct.rows[0]!;
  return ranges.map((r, i) => ({
    optIns: perDay.reduce((sum, d) => (d.day >= r.startDate && d.day <= r.endDate ? sum + d.opt_ins : sum), 0),
    workspaces: Number(workspaces[`w${i}`]),
  }));
}

/** Opt-ins whose status is active now (a count the triggers of migration 006 keep). */
export async function countActiveOptIns(db: Db, hubId: string): Promise<number> {
  const row = await db.kysely
    .selectFrom('opt_in_status_counts')
    .select('opt_ins')
    .where('hub_id', '=', hubId)
    .where('status', '=', 'active')
    .executeTakeFirst();
  return row?.opt_ins ?? 0;
}
