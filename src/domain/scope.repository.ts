import type { Db } from '../db/database.ts';

export async function workspaceExistsInHub(db: Db, hubId: string, workspaceId: string): Promise<boolean> {
  const row = await db.kysely
    .selectFrom('workspaces')
    .select('id')
    .where('hub_id', '=', hubId)
    .where('id', '=', workspaceId)
    .executeTakeFirst();
  return row !== undefined;
}
