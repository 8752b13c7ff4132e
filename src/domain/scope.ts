import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/database.ts';
import { invalid } from '../platform/errors.ts';
import type { Caller } from './caller.ts';
import { workspaceExistsInHub } from './scope.repository.ts';

/** The tenancy every query for a caller filters by: the hub, and the workspace when one is active. */
export interface WorkspaceScope {
  hubId: string;
  /** null: every workspace of the hub (a hub admin acting hub-wide). */
  workspaceId: string | null;
}

export function scopeOf(caller: Caller): WorkspaceScope {
  return { hubId: caller.hub.id, workspaceId: caller.workspace?.id ?? null };
}

/**
 * The tenancy filter of every query for a caller: `alias.hub_id = hub [AND alias.workspace_id = ws]`.
 * Rows outside it are never read, so "not found" and "not yours" cannot be told apart.
 */
export function inScope(scope: WorkspaceScope, alias: string): RawBuilder<unknown> {
  const column = (name: string) => sql.ref(`${alias}.${name}`);
  return scope.workspaceId === null
    ? sql`${column('hub_id')} = ${scope.hubId}`
    : sql`${column('hub_id')} = ${scope.hubId} AND ${column('workspace_id')} = ${scope.workspaceId}`;
}

/**
 * The scope narrowed to an optional `workspaceId` filter. Undefined when the filter names a
 * workspace the caller cannot see through this scope: the answer is then empty, as for any
 * workspace that does not exist.
 */
export function narrowScope(scope: WorkspaceScope, workspaceId: string | undefined): WorkspaceScope | undefined {
  if (workspaceId === undefined) return scope;
  if (scope.workspaceId !== null && scope.workspaceId !== workspaceId) return undefined;
  return { hubId: scope.hubId, workspaceId };
}

/**
 * The workspace a new record goes into: the caller's active workspace, or for a hub admin acting
 * hub-wide the `workspaceId` they name (required, and in their hub). Refused as invalid on the
 * `workspaceId` field, with the same words whether the workspace exists elsewhere or not at all.
 */
export async function targetWorkspace(db: Db, scope: WorkspaceScope, workspaceId: string | undefined): Promise<string> {
  if (scope.workspaceId !== null) {
    if (workspaceId !== undefined && workspaceId !== scope.workspaceId) {
      throw invalid([{ field: 'workspaceId', message: `must be your active workspace (${scope.workspaceId}) or be left out` }]);
    }
    return scope.workspaceId;
  }
  if (workspaceId === undefined) throw invalid([{ field: 'workspaceId', message: 'is required when acting across the whole hub' }]);
  if (!(await workspaceExistsInHub(db, scope.hubId, workspaceId))) {
    throw invalid([{ field: 'workspaceId', message: 'is not a workspace of your hub' }]);
  }
  return workspaceId;
}

/** The same filter for the workspaces table itself (whose workspace column is `id`). */
export function workspacesInScope(scope: WorkspaceScope, alias: string): RawBuilder<unknown> {
  const column = (name: string) => sql.ref(`${alias}.${name}`);
  return scope.workspaceId === null
    ? sql`${column('hub_id')} = ${scope.hubId}`
    : sql`${column('hub_id')} = ${scope.hubId} AND ${column('id')} = ${scope.workspaceId}`;
}
