// The whole-set opt-in export (the Hub API's and the web admin's CSV): what the set is a function
// of, read in one statement without reading the rows, and the rows themselves in keyset pages
// with their workspace and playbook joined in, so that memory holds one page whatever the hub's size.
import { sql } from 'kysely';
import { queryPrepared, type Db } from '../../db/database.ts';
import { after, type Position } from '../keyset.ts';
import type { OptInRow } from './opt-in.ts';
import { visibleFields } from './opt-in.repository.ts';

/** Which opt-ins an export holds: the Hub API's filters and the web report's. */
export interface OptInExportFilters {
  hubId: string;
  since?: Date | undefined;
  playbookId?: string | undefined;
  status?: string | undefined;
  workspaceId?: string | undefined;
  optedInFrom?: Date | undefined;
  optedInBefore?: Date | undefined;
}

/**
 * What the export's bytes are a function of, besides its filters: the hub's catalog version
 * (workspaces, custom fields, playbooks: migration 008), its visible field keys (the columns),
 * and its rows' keys — how many, and an order-independent sum of a 64-bit hash of each row's
 * (id, updated_at at microseconds). Every change to a row's own columns moves its updated_at
 * (opt_ins_touch, migration 001); a row added or removed changes the count and the sum.
 */
export interface OptInExportState {
  catalogVersion: string;
  fieldKeys: string[];
  rows: number;
  keysSum: string;
}

function where(f: OptInExportFilters) {
  return sql`o.hub_id = ${f.hubId}
       ${f.playbookId !== undefined ? sql`AND o.playbook_id = ${f.playbookId}` : sql``}
       ${f.status !== undefined ? sql`AND o.status = ${f.status}` : sql``}
       ${f.since !== undefined ? sql`AND o.updated_at >= ${f.since}` : sql``}
       ${f.workspaceId !== undefined ? sql`AND o.workspace_id = ${f.workspaceId}` : sql``}
       ${f.optedInFrom !== undefined ? sql`AND o.opted_in_at >= ${f.optedInFrom}` : sql``}
       ${f.optedInBefore !== undefined ? sql`AND o.opted_in_at < ${f.optedInBefore}` : sql``}`;
}

/**
 * The export's state in one statement. The keys come from the (hub, …, updated_at, id) indexes,
 * an index-only scan that holds nothing but a running count and sum: constant memory at any size.
 */
export async function readOptInExportState(db: Db, f: OptInExportFilters): Promise<OptInExportState> {
  const query = sql<{ catalog_version: string | null; field_keys: string[]; n: string; keys_sum: string }>`
    SELECT (SELECT h.catalog_version::text FROM hubs h WHERE h.id = ${f.hubId}) AS catalog_version,
           ARRAY(SELECT wf.key FROM workspace_fields wf WHERE wf.hub_id = ${f.hubId} AND NOT wf.archived ORDER BY wf.key COLLATE "C") AS field_keys,
           k.n::text AS n, k.keys_sum::text AS keys_sum
      FROM (SELECT count(*) AS n,
                   coalesce(sum(hashtextextended(o.id || '|' || extract(epoch FROM o.updated_at)::text, 0)::numeric), 0) AS keys_sum
              FROM opt_ins o
             WHERE ${where(f)}) k`.compile(db.kysely);
  const [row] = await queryPrepared(db, query);
  return { catalogVersion: row!.catalog_version ?? '', fieldKeys: row!.field_keys, rows: Number(row!.n), keysSum: row!.keys_sum };
}

/** The hub's workspaces (visible fields only) and playbooks, as an export's rows embed them: read once per export, O(workspaces) not O(rows). */
export interface ExportCatalog {
  workspaces: Map<string, OptInRow['workspace']>;
  playbooks: Map<string, OptInRow['playbook']>;
}

export async function readExportCatalog(db: Db, hubId: string): Promise<ExportCatalog> {
  const query = sql<{
    kind: 'w' | 'p';
    id: string;
    name: string;
    fields: OptInRow['workspace']['fields'] | null;
    solutions: OptInRow['playbook']['solutions'] | null;
  }>`
    SELECT 'w' AS kind, w.id, w.name, ${visibleFields(hubId)} AS fields, NULL::text[] AS solutions FROM workspaces w WHERE w.hub_id = ${hubId}
    UNION ALL
    SELECT 'p', p.id, p.name, NULL, p.solutions FROM playbooks p WHERE p.hub_id = ${hubId}`.compile(db.kysely);
  const catalog: ExportCatalog = { workspaces: new Map(), playbooks: new Map() };
  for (const r of await queryPrepared(db, query)) {
    if (r.kind === 'w') catalog.workspaces.set(r.id, { id: r.id, name: r.name, fields: r.fields ?? {} });
    else catalog.playbooks.set(r.id, { id: r.id, name: r.name, solutions: r.solutions ?? [] });
  }
  return catalog;
}

/** A page row as the driver hands it over: jsonb parsed, timestamps as text. */
interface ExportSqlRow {
  id: string;
  playbook_id: string;
  workspace_id: string;
  status: OptInRow['status'];
  opted_in_at: string;
  cursor_updated_at: string;
  /** bigint: text from the driver. */
  budget_cents: string | null;
  budget_type: OptInRow['budgetType'];
  variant: OptInRow['variant'];
  responses: OptInRow['responses'];
}

/**
 * One keyset page of the export in (updated_at, id) order — one range of the (hub, …, updated_at,
 * id) index, opt-ins alone — each row as the Hub API shows it with its workspace and playbook from
 * `catalog`, and where the next page starts. Undefined when a row refers to a workspace or
 * playbook the catalog lacks (created since it was read): read the catalog again.
 */
export async function readOptInExportPage(
  db: Db,
  f: OptInExportFilters,
  catalog: ExportCatalog,
  from: Position | undefined,
  limit: number,
): Promise<{ rows: OptInRow[]; next: Position | null } | undefined> {
  const query = sql<ExportSqlRow>`
    SELECT o.id, o.playbook_id, o.workspace_id, o.status,
           to_char(o.opted_in_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS opted_in_at,
           to_char(o.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_updated_at,
           o.budget_cents, o.budget_type, o.variant, o.responses
      FROM opt_ins o
     WHERE ${where(f)}
       ${from ? sql`AND ${after(sql`o.updated_at`, sql`o.id`, from)}` : sql``}
     ORDER BY o.updated_at, o.id
     LIMIT ${limit + 1}`.compile(db.kysely);
  const raw = await queryPrepared(db, query);
  const count = Math.min(raw.length, limit);
  const rows: OptInRow[] = new Array(count);
  for (let i = 0; i < count; i++) {
    const r = raw[i]!;
    const playbook = catalog.playbooks.get(r.playbook_id);
    const workspace = catalog.workspaces.get(r.workspace_id);
    if (!playbook || !workspace) return undefined;
    rows[i] = {
      id: r.id,
      playbook,
      workspace,
      status: r.status,
      optedInAt: r.opted_in_at,
      // Shown at millisecond precision, as the Hub API does; the cursor keeps all.
      updatedAt: `${r.cursor_updated_at.slice(0, 23)}Z`,
      budgetCents: r.budget_cents === null ? null : Number(r.budget_cents),
      budgetType: r.budget_type,
      variant: r.variant,
      responses: r.responses,
    };
  }
  const last = raw[count - 1];
  return { rows, next: raw.length > limit && last ? { at: last.cursor_updated_at, id: last.id } : null };
}
