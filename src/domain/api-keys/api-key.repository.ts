import { sql, type Kysely, type Transaction } from 'kysely';
import { queryPrepared, type Db, type Statement } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import { newId } from '../../platform/ids.ts';
import type { KeyMaterial, KeyScope } from './api-key.ts';

// The SQL of API keys: rows in and out, as the service (api-key.service.ts) decides them.

/** A key as the hub's list reads it (api-key.service.ts's KeySummary, before its rules). */
export interface KeyListRow {
  id: string;
  name: string;
  scope: KeyScope;
  start: string;
  requestCount: number;
  notModifiedCount: number;
  lastUsedAt: string | null;
  createdAt: string;
  revokedAt: string | null;
  expiresAt: string | null;
  replacedBy: string | null;
  /** Whether the key stores an Ed25519 public key (an embed key pair). */
  hasPublicKey: boolean;
}

/** What authentication needs to know about a key, read by its hash. */
export interface KeyVerdict {
  keyId: string;
  hubId: string;
  scope: KeyScope;
  revoked: boolean;
  hubSuspended: boolean;
  /** When the key stops working; null: never. */
  expiresAt: Date | null;
  /** The key that replaced it when it was rolled (its expiry is then the end of the grace period). */
  replacedBy: string | null;
}

/** What an embed token's verification needs to know about the key it names. */
export interface EmbedKeyRecord {
  id: string;
  hubId: string;
  scope: KeyScope;
  revoked: boolean;
  hubSuspended: boolean;
  /** When the key stops working; null: never. */
  expiresAt: Date | null;
  /** An embed key pair's raw Ed25519 public key. */
  publicKey: Buffer | null;
  /** SHA-256 of the key for read keys and legacy embed keys (what api_keys.key_hash holds). */
  keyHash: Buffer | null;
}

/** A key row to insert: what the service decided (name, scope, times) and the key's material. */
export interface KeyRow {
  hubId: string;
  name: string;
  scope: KeyScope;
  now: Date;
  expiresAt: Date | null;
}

/** The inserted key as lists show it; undefined when the hub does not exist (nothing is written). */
export async function insertKey(
  executor: Kysely<Database>,
  input: KeyRow,
  material: KeyMaterial,
): Promise<
  { id: string; name: string; scope: KeyScope; hubId: string; start: string; createdAt: string; expiresAt: string | null } | undefined
> {
  const hub = await executor.selectFrom('hubs').select('id').where('id', '=', input.hubId).executeTakeFirst();
  if (!hub) return undefined;
  // created_at is the same instant the expiry counts from, so a roll can carry the lifetime over.
  const row = await executor
    .insertInto('api_keys')
    .values({
      id: newId('key'),
      hub_id: input.hubId,
      name: input.name,
      scope: input.scope,
      start: material.start,
      key_hash: material.keyHash,
      public_key: material.publicKey,
      created_at: input.now,
      expires_at: input.expiresAt,
    })
    .returning(['id', 'created_at', 'expires_at'])
    .executeTakeFirstOrThrow();
  return {
    id: row.id,
    name: input.name,
    scope: input.scope,
    hubId: input.hubId,
    start: material.start,
    createdAt: row.created_at.toISOString(),
    expiresAt: row.expires_at?.toISOString() ?? null,
  };
}

/** What a roll decides on, read with the row locked (FOR UPDATE) until the caller's transaction ends. */
export interface KeyToRoll {
  id: string;
  name: string;
  scope: KeyScope;
  createdAt: Date;
  revokedAt: Date | null;
  expiresAt: Date | null;
  replacedBy: string | null;
}

/** The hub's key, locked for a roll; undefined when the hub has no such key. */
export async function lockKeyToRoll(trx: Transaction<Database>, hubId: string, keyId: string): Promise<KeyToRoll | undefined> {
  const row = await trx
    .selectFrom('api_keys')
    .select(['id', 'name', 'scope', 'created_at', 'revoked_at', 'expires_at', 'replaced_by'])
    .where('id', '=', keyId)
    .where('hub_id', '=', hubId)
    .forUpdate()
    .executeTakeFirst();
  return (
    row && {
      id: row.id,
      name: row.name,
      scope: row.scope,
      createdAt: row.created_at,
      revokedAt: row.revoked_at,
      expiresAt: row.expires_at,
      replacedBy: row.replaced_by,
    }
  );
}

/** Records that a key was rolled: its successor, and the end of its grace period as its expiry. */
export async function markKeyRolled(
  trx: Transaction<Database>,
  input: { hubId: string; keyId: string; replacedBy: string; expiresAt: Date },
): Promise<void> {
  await trx
    .updateTable('api_keys')
    .set({ replaced_by: input.replacedBy, expires_at: input.expiresAt })
    .where('id', '=', input.keyId)
    .where('hub_id', '=', input.hubId)
    .execute();
}

/** The hub a key belongs to, or undefined for an unknown key. */
export async function hubOfKey(trx: Transaction<Database>, keyId: string): Promise<string | undefined> {
  const key = await trx.selectFrom('api_keys').select('hub_id').where('id', '=', keyId).executeTakeFirst();
  return key?.hub_id;
}

export async function listKeys(db: Db, hubId: string): Promise<KeyListRow[]> {
  const rows = await db.kysely
    .selectFrom('api_keys as k')
    .leftJoin('api_key_usage as u', 'u.key_id', 'k.id')
    .select([
      'k.id',
      'k.name',
      'k.scope',
      'k.start',
      'u.request_count',
      'u.not_modified_count',
      'u.last_used_at',
      'k.created_at',
      'k.revoked_at',
      'k.expires_at',
      'k.replaced_by',
      sql<boolean>`k.public_key IS NOT NULL`.as('has_public_key'),
    ])
    .where('k.hub_id', '=', hubId)
    .orderBy('k.created_at')
    .orderBy('k.id')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    scope: r.scope,
    start: r.start,
    requestCount: Number(r.request_count ?? 0),
    notModifiedCount: Number(r.not_modified_count ?? 0),
    lastUsedAt: r.last_used_at?.toISOString() ?? null,
    createdAt: r.created_at.toISOString(),
    revokedAt: r.revoked_at?.toISOString() ?? null,
    expiresAt: r.expires_at?.toISOString() ?? null,
    replacedBy: r.replaced_by,
    hasPublicKey: r.has_public_key,
  }));
}

/** One key's requests on one UTC day, and how many of them were answered 304 Not Modified. */
export interface DayUsage {
  requests: number;
  notModified: number;
}

/** The daily usage rows of the hub's keys for the UTC days from `first` to `last` (YYYY-MM-DD). */
export async function dailyKeyUsageRows(
  db: Db,
  hubId: string,
  first: string,
  last: string,
): Promise<({ keyId: string; day: string } & DayUsage)[]> {
  const rows = await db.kysely
    .selectFrom('api_key_daily_usage as d')
    .innerJoin('api_keys as k', 'k.id', 'd.key_id')
    .select(['d.key_id', 'd.day', 'd.request_count', 'd.not_modified_count'])
    .where('k.hub_id', '=', hubId)
    .where('d.day', '>=', first)
    .where('d.day', '<=', last)
    .execute();
  return rows.map((r) => ({ keyId: r.key_id, day: r.day, requests: Number(r.request_count), notModified: Number(r.not_modified_count) }));
}

/**
 * Revokes a key (idempotent: revoking again keeps the first revocation time) and the older secrets
 * it replaced, transitively, that still work at `now` (rolled keys in their grace period); those
 * already ended keep their history. Undefined for an unknown key (of this hub, when one is given).
 */
export async function revokeKeyAndPredecessors(
  db: Db,
  input: { keyId: string; hubId?: string; now: Date },
): Promise<{ id: string; revokedAt: string; predecessors: string[] } | undefined> {
  const rows = await sql<{ id: string; revoked_at: Date; target: boolean }>`
    WITH RECURSIVE target AS (
      SELECT id FROM api_keys WHERE id = ${input.keyId} AND (${input.hubId ?? null}::text IS NULL OR hub_id = ${input.hubId ?? null})
    ), predecessors AS (
      SELECT k.id FROM api_keys k JOIN target t ON k.replaced_by = t.id
      UNION
      SELECT k.id FROM api_keys k JOIN predecessors p ON k.replaced_by = p.id
    )
    UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
     WHERE id IN (SELECT id FROM target)
        OR (id IN (SELECT id FROM predecessors) AND revoked_at IS NULL AND expires_at > ${input.now})
    RETURNING id, revoked_at, id IN (SELECT id FROM target) AS target`.execute(db.kysely);
  const target = rows.rows.find((r) => r.target);
  if (!target) return undefined;
  return {
    id: target.id,
    revokedAt: target.revoked_at.toISOString(),
    predecessors: rows.rows.filter((r) => !r.target).map((r) => r.id),
  };
}

// Every Hub API request reads this: a fixed prepared statement (planned once per connection).
const KEY_VERDICT_SQL = `
  SELECT k.id, k.hub_id, k.scope, k.revoked_at IS NOT NULL AS revoked, h.suspended, k.expires_at, k.replaced_by
    FROM api_keys k JOIN hubs h ON h.id = k.hub_id
   WHERE k.key_hash = $1`;

interface KeyVerdictRow {
  id: string;
  hub_id: string;
  scope: KeyScope;
  revoked: boolean;
  suspended: boolean;
  expires_at: Date | null;
  replaced_by: string | null;
}

/** The statement that reads a key's verdict by its hash (for RideAlongCheck). */
export const keyVerdictStatement = (hash: Buffer): Statement => ({ name: 'key_verdict', text: KEY_VERDICT_SQL, values: [hash] });

/** The verdict in the rows of keyVerdictStatement; undefined for an unknown key. */
export function keyVerdictOf(rows: unknown[]): KeyVerdict | undefined {
  const row = rows[0] as KeyVerdictRow | undefined;
  if (!row) return undefined;
  return {
    keyId: row.id,
    hubId: row.hub_id,
    scope: row.scope,
    revoked: row.revoked,
    hubSuspended: row.suspended,
    expiresAt: row.expires_at,
    replacedBy: row.replaced_by,
  };
}

export async function findKeyByHash(db: Db, hash: Buffer): Promise<KeyVerdict | undefined> {
  return keyVerdictOf(await queryPrepared(db, keyVerdictStatement(hash)));
}

/** The key an embed token names (by id: the token carries it as `kid`); undefined for an unknown id. */
export async function findEmbedKey(db: Db, keyId: string): Promise<EmbedKeyRecord | undefined> {
  const row = await db.kysely
    .selectFrom('api_keys as k')
    .innerJoin('hubs as h', 'h.id', 'k.hub_id')
    .select(['k.id', 'k.hub_id', 'k.scope', 'k.revoked_at', 'h.suspended', 'k.expires_at', 'k.public_key', 'k.key_hash'])
    .where('k.id', '=', keyId)
    .executeTakeFirst();
  return (
    row && {
      id: row.id,
      hubId: row.hub_id,
      scope: row.scope,
      revoked: row.revoked_at !== null,
      hubSuspended: row.suspended,
      expiresAt: row.expires_at,
      publicKey: row.public_key,
      keyHash: row.key_hash,
    }
  );
}

/**
 * Adds batched usage in one statement for any number of keys and days: each key's totals
 * (requests, and those answered 304) and last use, the same per UTC day, and the deletion of its
 * days before `firstKept`, so a key holds only the days the service keeps.
 */
export async function addKeyUsage(
  db: Db,
  rows: ({ keyId: string; day: string; lastUsedAt: string } & DayUsage)[],
  firstKept: string,
): Promise<void> {
  // Keys deleted meanwhile are skipped (their rows locked, so none can go before the inserts).
  // The deleted days are all before firstKept and the inserted ones from it: no row is touched twice.
  // Rows are locked in key (and day) order, so instances flushing the same keys cannot deadlock.
  await sql`
    WITH u AS (
      SELECT * FROM unnest(${rows.map((r) => r.keyId)}::text[], ${rows.map((r) => r.day)}::date[],
                           ${rows.map((r) => r.requests)}::bigint[], ${rows.map((r) => r.notModified)}::bigint[],
                           ${rows.map((r) => r.lastUsedAt)}::timestamptz[]) AS u(id, day, requests, not_modified, last_used_at)
    ), live AS (
      SELECT k.id FROM api_keys k WHERE k.id IN (SELECT id FROM u) ORDER BY k.id FOR KEY SHARE
    ), totals AS (
      INSERT INTO api_key_usage AS a (key_id, request_count, not_modified_count, last_used_at)
      SELECT u.id, sum(u.requests), sum(u.not_modified), max(u.last_used_at) FROM u JOIN live USING (id) GROUP BY u.id ORDER BY u.id
      ON CONFLICT (key_id) DO UPDATE SET request_count = a.request_count + excluded.request_count,
                                         not_modified_count = a.not_modified_count + excluded.not_modified_count,
                                         last_used_at = greatest(a.last_used_at, excluded.last_used_at)
    ), pruned AS (
      DELETE FROM api_key_daily_usage d USING live WHERE d.key_id = live.id AND d.day < ${firstKept}::date
    )
    INSERT INTO api_key_daily_usage AS d (key_id, day, request_count, not_modified_count)
    SELECT u.id, u.day, u.requests, u.not_modified FROM u JOIN live USING (id) WHERE u.day >= ${firstKept}::date ORDER BY u.id, u.day
    ON CONFLICT (key_id, day) DO UPDATE SET request_count = d.request_count + excluded.request_count,
                                            not_modified_count = d.not_modified_count + excluded.not_modified_count`.execute(db.kysely);
}
