import { sql } from 'kysely';
import { queryPrepared, type Db } from '../../db/database.ts';
import type { DateRange } from '../periods.ts';
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
 * Opt-ins whose optedInAt falls on a day of each range, and the distinct workspaces among them,
 * in one scan of the hub's opted_in_at index over the union of the ranges: rows are grouped by
 * workspace once (counting per range), so a distinct count is just "workspaces with a count > 0"
 * — no per-range sort.
 */
export async function countOptInsByRanges(db: Db, hubId: string, ranges: DateRange[]): Promise<PeriodCounts[]> {
  if (ranges.length === 0) return [];
  const from = ranges.reduce((min, r) => (r.startDate < min ? r.startDate : min), ranges[0]!.startDate);
  const to = ranges.reduce((max, r) => (r.endDate > max ? r.endDate : max), ranges[0]!.endDate);
  const perWorkspace = ranges.map(
    (r, i) => sql`count(*) FILTER (WHERE o.opted_in_at >= ${r.startDate}::date::timestamp AT TIME ZONE 'UTC'
                                     AND o.opted_in_at < (${r.endDate}::date + 1)::timestamp AT TIME ZONE 'UTC') AS ${sql.raw(`n${i}`)}`,
  );
  const totals = ranges.map((_, i) => sql`coalesce(sum(${sql.raw(`n${i}`)}), 0) AS ${sql.raw(`n${i}`)}, count(*) FILTER (WHERE ${sql.raw(`n${i}`)} > 0) AS ${sql.raw(`w${i}`)}`);
  const result = await sql<Record<string, string>>`
    WITH per_workspace AS (
      SELECT ${sql.join(perWorkspace)}
        FROM opt_ins o
       WHERE o.hub_id = ${hubId}
         AND o.opted_in_at >= ${from}::date::timestamp AT TIME ZONE 'UTC'
         AND o.opted_in_at < (${to}::date + 1)::timestamp AT TIME ZONE 'UTC'
       GROUP BY o.workspace_id
    )
    SELECT ${sql.join(totals)} FROM per_workspace`.execute(db.kysely);
  const row = result.rows[0]!;
  return ranges.map((_, i) => ({ optIns: Number(row[`n${i}`]), workspaces: Number(row[`w${i}`]) }));
}

export async function countActiveOptIns(db: Db, hubId: string): Promise<number> {
  const row = await db.kysely
    .selectFrom('opt_ins')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('hub_id', '=', hubId)
    .where('status', '=', 'active')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
