import { sql } from 'kysely';
import { fixedStatement, queryPrepared, type Db } from '../../db/database.ts';
import { visibleFields } from '../opt-ins/opt-in.repository.ts';
import type { DateRange, PeriodRanges } from '../periods.ts';
import type { AdAccountStatus, AdAccountSync } from './spend.ts';

export interface SpendState {
  /** Changes whenever spend, workspaces, their fields or ad accounts change (statement triggers comparing old and new rows). */
  reportVersion: string;
  accounts: AdAccountSync[];
}

const SPEND_STATE = fixedStatement(`
    SELECT h.report_version, a.sync_state, a.last_synced_at
      FROM hubs h LEFT JOIN ad_accounts a ON a.hub_id = h.id AND a.disconnected_at IS NULL
     WHERE h.id = $1`);

/**
 * What the report is built from besides the sums: one small indexed read, on every request (and
 * all a conditional request needs). Prepared: a Hub API key's verdict rides along with it. A
 * disconnected account is synced by no one: its past figures stay, but it no longer counts
 * toward freshness and asOf.
 */
export async function readSpendState(db: Db, hubId: string): Promise<SpendState> {
  const rows = await queryPrepared<{ report_version: string; sync_state: AdAccountSync['syncState'] | null; last_synced_at: Date | null }>(
    db,
    SPEND_STATE(hubId),
  );
  return {
    reportVersion: rows[0]?.report_version ?? '0',
    accounts: rows.filter((r) => r.sync_state !== null).map((r) => ({ syncState: r.sync_state!, lastSyncedAt: r.last_synced_at })),
  };
}

/** The hub's ad accounts with their sync state, by name: what the web admin's freshness banner names. */
export async function adAccountStatuses(db: Db, hubId: string): Promise<AdAccountStatus[]> {
  const rows = await db.kysely
    .selectFrom('ad_accounts')
    .select(['id', 'name', 'sync_state', 'last_synced_at'])
    .where('hub_id', '=', hubId)
    .where('disconnected_at', 'is', null)
    .orderBy('name')
    .orderBy('id')
    .execute();
  return rows.map((r) => ({ id: r.id, name: r.name, syncState: r.sync_state, lastSyncedAt: r.last_synced_at }));
}

export interface SpendByWorkspace {
  /** The workspaces array as UTF-8 JSON, by spendCents descending, then id: encoded once, then cached. */
  workspacesJson: Buffer;
  spendCents: number;
  priorSpendCents: number;
  unattributedSpendCents: number;
  priorUnattributedSpendCents: number;
}

/** Days are grouped in aligned blocks of this many for the running totals (migration 009). */
const BLOCK_DAYS = 64;
const epochDay = (date: string) => Math.round(Date.parse(`${date}T00:00:00Z`) / 86_400_000);

/**
 * Spend of one range on a row of spend_prefix_sums: within the row's block, the running total
 * at the range's last day minus the one on the day before its first (a subscript outside the
 * array, such as 0, reads NULL). 0 for blocks the range does not touch.
 */
function rangeSum(range: DateRange) {
  const [first, last] = [epochDay(range.startDate), epochDay(range.endDate)];
  const start = sql`p.block * ${BLOCK_DAYS}`;
  return sql`CASE WHEN p.block BETWEEN ${Math.floor(first / BLOCK_DAYS)} AND ${Math.floor(last / BLOCK_DAYS)}
    THEN p.sums[least(${last}, ${start} + ${BLOCK_DAYS - 1}) - ${start} + 1] - coalesce(p.sums[greatest(${first}, ${start}) - ${start}], 0)
    ELSE 0 END`;
}

/** Sums spend per workspace over the current and prior ranges from the running totals of migration 009. */
export async function sumSpendByWorkspace(db: Db, hubId: string, ranges: PeriodRanges): Promise<SpendByWorkspace> {
  const { current, prior } = ranges;
  // The unattributed line (workspace_key '') comes first, then every workspace of the hub.
  const result = await sql<{
    id: string | null;
    name: string | null;
    fields: Record<string, string | number | boolean> | null;
    cur: string;
    prior: string;
  }>`
    WITH sums AS (
      SELECT p.workspace_key, sum(${rangeSum(current)}) AS cur, sum(${rangeSum(prior)}) AS prior
        FROM spend_prefix_sums p
       WHERE p.hub_id = ${hubId}
         AND p.block BETWEEN ${Math.floor(epochDay(prior.startDate) / BLOCK_DAYS)} AND ${Math.floor(epochDay(current.endDate) / BLOCK_DAYS)}
       GROUP BY p.workspace_key
    )
    SELECT * FROM (
      SELECT NULL::text COLLATE "C" AS id, NULL AS name, NULL::jsonb AS fields, coalesce(sum(cur), 0) AS cur, coalesce(sum(prior), 0) AS prior
        FROM sums WHERE workspace_key = ''
      UNION ALL
      SELECT w.id, w.name, ${visibleFields(hubId)}, coalesce(x.cur, 0), coalesce(x.prior, 0)
        FROM workspaces w LEFT JOIN sums x ON x.workspace_key = w.id
       WHERE w.hub_id = ${hubId}
    ) lines
    ORDER BY id IS NULL DESC, cur DESC, id`.execute(db.kysely);
  const [unattributed, ...rows] = result.rows;
  const workspaces = rows.map((r) => ({
    id: r.id!,
    name: r.name!,
    fields: r.fields!,
    spendCents: Number(r.cur),
    priorSpendCents: Number(r.prior),
  }));
  const unattributedSpendCents = Number(unattributed?.cur ?? 0);
  const priorUnattributedSpendCents = Number(unattributed?.prior ?? 0);
  return {
    workspacesJson: Buffer.from(JSON.stringify(workspaces)),
    spendCents: workspaces.reduce((sum, w) => sum + w.spendCents, 0) + unattributedSpendCents,
    priorSpendCents: workspaces.reduce((sum, w) => sum + w.priorSpendCents, 0) + priorUnattributedSpendCents,
    unattributedSpendCents,
    priorUnattributedSpendCents,
  };
}
