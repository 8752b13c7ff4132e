import type { Db } from '../../db/database.ts';
import type { WorkspaceScope } from '../scope.ts';
import { visibleFields } from '../opt-ins/opt-in.repository.ts';
import { sql } from 'kysely';

export interface WorkspaceRecord {
  _id: string;
  hubId: string;
  name: string;
  timezone: string;
  fields: Record<string, string | number | boolean>;
  createdAt: string;
}

/** Workspaces in scope, by id, keyset-paged (`limit + 1` rows to see whether more follow). */
export async function findWorkspaces(
  db: Db,
  scope: WorkspaceScope,
  page: { afterId?: string; limit: number; id?: string },
): Promise<WorkspaceRecord[]> {
  const result = await sql<{
    id: string;
    hub_id: string;
    name: string;
    timezone: string;
    fields: WorkspaceRecord['fields'];
    created_at: Date;
  }>`
    SELECT w.id, w.hub_id, w.name, w.timezone, ${visibleFields(scope.hubId)} AS fields, w.created_at
      FROM workspaces w
     WHERE w.hub_id = ${scope.hubId}
       ${scope.workspaceId ? sql`AND w.id = ${scope.workspaceId}` : sql``}
       ${page.id !== undefined ? sql`AND w.id = ${page.id}` : sql``}
       ${page.afterId !== undefined ? sql`AND w.id > ${page.afterId}` : sql``}
     ORDER BY w.id
     LIMIT ${page.limit + 1}`.execute(db.kysely);
  return result.rows.map((r) => ({
    _id: r.id,
    hubId: r.hub_id,
    name: r.name,
    timezone: r.timezone,
    fields: r.fields,
    createdAt: r.created_at.toISOString(),
  }));
}

export interface HubRecord {
  _id: string;
  name: string;
  suspended: boolean;
  createdAt: string;
}

/** Hubs of an account, by id, keyset-paged. */
export async function findHubs(db: Db, accountId: string, page: { afterId?: string; limit: number }): Promise<HubRecord[]> {
  let query = db.kysely.selectFrom('hubs').select(['id', 'name', 'suspended', 'created_at']).where('account_id', '=', accountId);
  if (page.afterId !== undefined) query = query.where('id', '>', page.afterId);
  const rows = await query
    .orderBy('id')
    .limit(page.limit + 1)
    .execute();
  return rows.map((r) => ({ _id: r.id, name: r.name, suspended: r.suspended, createdAt: r.created_at.toISOString() }));
}
