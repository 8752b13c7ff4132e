import { sql } from 'kysely';
import { queryPrepared, type Db } from '../../db/database.ts';
import { DomainError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { generateKey, hashKey, visibleStart, type KeyScope } from './api-key.ts';

export interface KeySummary {
  id: string;
  name: string;
  scope: KeyScope;
  start: string;
  requestCount: number;
  lastUsedAt: string | null;
  createdAt: string;
  revokedAt: string | null;
}

export interface CreatedKey {
  id: string;
  key: string;
  name: string;
  scope: KeyScope;
  hubId: string;
  start: string;
  createdAt: string;
}

/** What authentication needs to know about a key, read by its hash. */
export interface KeyVerdict {
  keyId: string;
  hubId: string;
  scope: KeyScope;
  revoked: boolean;
  hubSuspended: boolean;
}

export function validateKeyName(name: string): string {
  const trimmed = name.trim();
  if (trimmed.length < 1 || trimmed.length > 100) throw new DomainError('key name must be 1 to 100 characters');
  return trimmed;
}

export async function createKey(db: Db, input: { hubId: string; name: string; scope?: KeyScope }): Promise<CreatedKey> {
  const name = validateKeyName(input.name);
  const scope = input.scope ?? 'read';
  const hub = await db.kysely.selectFrom('hubs').select('id').where('id', '=', input.hubId).executeTakeFirst();
  if (!hub) throw new DomainError(`hub ${input.hubId} does not exist`);
  const key = generateKey();
  const row = await db.kysely
    .insertInto('api_keys')
    .values({ id: newId('key'), hub_id: input.hubId, name, scope, start: visibleStart(key), key_hash: hashKey(key) })
    .returning(['id', 'created_at'])
    .executeTakeFirstOrThrow();
  return { id: row.id, key, name, scope, hubId: input.hubId, start: visibleStart(key), createdAt: row.created_at.toISOString() };
}

export async function listKeys(db: Db, hubId: string): Promise<KeySummary[]> {
  const rows = await db.kysely
    .selectFrom('api_keys')
    .select(['id', 'name', 'scope', 'start', 'request_count', 'last_used_at', 'created_at', 'revoked_at'])
    .where('hub_id', '=', hubId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    scope: r.scope,
    start: r.start,
    requestCount: Number(r.request_count),
    lastUsedAt: r.last_used_at?.toISOString() ?? null,
    createdAt: r.created_at.toISOString(),
    revokedAt: r.revoked_at?.toISOString() ?? null,
  }));
}

/** Revokes a key (idempotent: revoking again keeps the first revocation time). */
export async function revokeKey(db: Db, keyId: string, hubId?: string): Promise<{ id: string; revokedAt: string }> {
  let query = db.kysely
    .updateTable('api_keys')
    .set({ revoked_at: sql`coalesce(revoked_at, now())` })
    .where('id', '=', keyId);
  if (hubId) query = query.where('hub_id', '=', hubId);
  const row = await query.returning(['id', 'revoked_at']).executeTakeFirst();
  if (!row?.revoked_at) throw new DomainError(`key ${keyId} does not exist`);
  return { id: row.id, revokedAt: row.revoked_at.toISOString() };
}

export async function findKeyByHash(db: Db, hash: Buffer): Promise<KeyVerdict | undefined> {
  // Every Hub API request runs this: a prepared statement spares the planning each time.
  const [row] = await queryPrepared(db, db.kysely
    .selectFrom('api_keys as k')
    .innerJoin('hubs as h', 'h.id', 'k.hub_id')
    .select(['k.id', 'k.hub_id', 'k.scope', 'k.revoked_at', 'h.suspended'])
    .where('k.key_hash', '=', hash)
    .compile());
  if (!row) return undefined;
  return { keyId: row.id, hubId: row.hub_id, scope: row.scope, revoked: row.revoked_at !== null, hubSuspended: row.suspended };
}

/** Adds batched usage: one statement for any number of keys. */
export async function addKeyUsage(db: Db, usage: { keyId: string; count: number; lastUsedAt: Date }[]): Promise<void> {
  if (usage.length === 0) return;
  await sql`
    UPDATE api_keys AS k
       SET request_count = k.request_count + u.count,
           last_used_at = greatest(k.last_used_at, u.last_used_at)
      FROM unnest(${usage.map((u) => u.keyId)}::text[], ${usage.map((u) => u.count)}::bigint[],
                  ${usage.map((u) => u.lastUsedAt.toISOString())}::timestamptz[]) AS u(id, count, last_used_at)
     WHERE k.id = u.id`.execute(db.kysely);
}
