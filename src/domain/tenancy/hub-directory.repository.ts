// What the web admin's pages show about a hub beside its reports: its name, the custom field keys
// that head the CSV columns, and its playbooks and workspaces for the report's filters.
import type { Db } from '../../db/database.ts';

export async function hubName(db: Db, hubId: string): Promise<string | undefined> {
  const row = await db.kysely.selectFrom('hubs').select('name').where('id', '=', hubId).executeTakeFirst();
  return row?.name;
}

/** The hub's non-archived custom field keys, in byte order (the CSV's field_<key> columns). */
export async function visibleFieldKeys(db: Db, hubId: string): Promise<string[]> {
  const rows = await db.kysely
    .selectFrom('workspace_fields')
    .select('key')
    .where('hub_id', '=', hubId)
    .where('archived', '=', false)
    .orderBy('key')
    .execute();
  return rows.map((r) => r.key);
}

/** Up to 1000 playbooks of the hub by name, for a filter's choices. */
export async function hubPlaybooks(db: Db, hubId: string): Promise<{ id: string; name: string }[]> {
  return db.kysely
    .selectFrom('playbooks')
    .select(['id', 'name'])
    .where('hub_id', '=', hubId)
    .orderBy('name')
    .orderBy('id')
    .limit(1000)
    .execute();
}

/** Up to `limit` workspaces of the hub by name, for a filter's choices. */
export async function hubWorkspaces(db: Db, hubId: string, limit = 1000): Promise<{ id: string; name: string }[]> {
  return db.kysely
    .selectFrom('workspaces')
    .select(['id', 'name'])
    .where('hub_id', '=', hubId)
    .orderBy('name')
    .orderBy('id')
    .limit(limit)
    .execute();
}
