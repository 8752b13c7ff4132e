// Workspaces' and hubs' one door for the main API's listings; the SQL is in workspace.repository.ts.
import type { Db } from '../../db/database.ts';
import type { WorkspaceScope } from '../scope.ts';
import { findHubs as readHubs, findWorkspaces as readWorkspaces, type HubRecord, type WorkspaceRecord } from './workspace.repository.ts';

export type { HubRecord, WorkspaceRecord } from './workspace.repository.ts';

/** Workspaces in scope, by id, keyset-paged (`limit + 1` rows to see whether more follow). */
export async function findWorkspaces(
  db: Db,
  scope: WorkspaceScope,
  page: { afterId?: string; limit: number; id?: string },
): Promise<WorkspaceRecord[]> {
  return readWorkspaces(db, scope, page);
}

/** Hubs of an account, by id, keyset-paged (`limit + 1` rows). */
export async function findHubs(db: Db, accountId: string, page: { afterId?: string; limit: number }): Promise<HubRecord[]> {
  return readHubs(db, accountId, page);
}

/** Every workspace of a hub, by id (the operator's `hubops workspaces list`), read a thousand at a time. */
export async function allWorkspaces(db: Db, hubId: string): Promise<WorkspaceRecord[]> {
  const all: WorkspaceRecord[] = [];
  const limit = 1000;
  for (let afterId: string | undefined; ; ) {
    const page = await readWorkspaces(db, { hubId, workspaceId: null }, { limit, ...(afterId === undefined ? {} : { afterId }) });
    all.push(...page.slice(0, limit));
    if (page.length <= limit) return all;
    afterId = page[limit - 1]!._id;
  }
}
