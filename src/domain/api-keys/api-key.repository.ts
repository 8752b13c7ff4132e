import { sql, type Kysely, type Transaction } from 'kysely';
import { queryPrepared, type Db, type Statement } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import { DomainError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { embedMaterialFromPublicKey, keyNameProblem, newKeyMaterial, type KeyMaterial, type KeyScope } from './api-key.ts';

export interface KeySummary {
  id: string;
  name: string;
  scope: KeyScope;
  start: string;
  requestCount: number;
  lastUsedAt: string | null;
  createdAt: string;
  revokedAt: string | null;
  /** An embed key made before key pairs: its tokens are HMACs over a hash the database holds. */
  legacyEmbed: boolean;
}

export interface CreatedKey {
  id: string;
  /** The secret, shown once: a read key, or an embed key pair's private key. */
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

/** What an embed token's verification needs to know about the key it names. */
export interface EmbedKeyRecord {
  id: string;
  hubId: string;
  scope: KeyScope;
  revoked: boolean;
  hubSuspended: boolean;
  /** An embed key pair's raw Ed25519 public key. */
  publicKey: Buffer | null;
  /** SHA-256 of the key for read keys and legacy embed keys (what api_keys.key_hash holds). */
  keyHash: Buffer | null;
}

function validateKeyName(name: string): string {
  if (keyNameProblem(name)) throw new DomainError('invalid', 'key name must be 1 to 100 characters');
  return name.trim();
}

export async function createKey(db: Db, input: { hubId: string; name: string; scope?: KeyScope }): Promise<CreatedKey> {
  return createKeyIn(db.kysely, input);
}

/** createKey inside the caller's transaction (the key commits or rolls back with the rest). */
export async function createKeyInTransaction(trx: Transaction<Database>, input: { hubId: string; name: string; scope?: KeyScope }): Promise<CreatedKey> {
  return createKeyIn(trx, input);
}

async function createKeyIn(executor: Kysely<Database>, input: { hubId: string; name: string; scope?: KeyScope }): Promise<CreatedKey> {
  const scope = input.scope ?? 'read';
  const material = newKeyMaterial(scope);
  const created = await insertKey(executor, { hubId: input.hubId, name: input.name, scope }, material);
  return { ...created, key: material.secret };
}

/** An embed key whose private key the customer made and keeps: only its public key is given. */
export async function createEmbedKeyFromPublicKey(db: Db, input: { hubId: string; name: string; publicKey: string }): Promise<Omit<CreatedKey, 'key'>> {
  const material = embedMaterialFromPublicKey(input.publicKey);
  if (!material) throw new DomainError('invalid', 'public key must be an Ed25519 public key (PEM, or the 32 raw bytes in base64url)');
  return insertKey(db.kysely, { hubId: input.hubId, name: input.name, scope: 'embed' }, material);
}

async function insertKey(executor: Kysely<Database>, input: { hubId: string; name: string; scope: KeyScope }, material: KeyMaterial): Promise<Omit<CreatedKey, 'key'>> {
  const name = validateKeyName(input.name);
  const hub = await executor.selectFrom('hubs').select('id').where('id', '=', input.hubId).executeTakeFirst();
  if (!hub) throw new DomainError('not_found', `hub ${input.hubId} does not exist`);
  const row = await executor
    .insertInto('api_keys')
    .values({ id: newId('key'), hub_id: input.hubId, name, scope: input.scope, start: material.start, key_hash: material.keyHash, public_key: material.publicKey })
    .returning(['id', 'created_at'])
    .executeTakeFirstOrThrow();
  return { id: row.id, name, scope: input.scope, hubId: input.hubId, start: material.start, createdAt: row.created_at.toISOString() };
}

export async function listKeys(db: Db, hubId: string): Promise<KeySummary[]> {
  const rows = await db.kysely
    .selectFrom('api_keys as k')
    .leftJoin('api_key_usage as u', 'u.key_id', 'k.id')
    .select(['k.id', 'k.name', 'k.scope', 'k.start', 'u.request_count', 'u.last_used_at', 'k.created_at', 'k.revoked_at', sql<boolean>`k.scope = 'embed' AND k.public_key IS NULL`.as('legacy_embed')])
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
    lastUsedAt: r.last_used_at?.toISOString() ?? null,
    createdAt: r.created_at.toISOString(),
    revokedAt: r.revoked_at?.toISOString() ?? null,
    legacyEmbed: r.legacy_embed,
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
  if (!row?.revoked_at) throw new DomainError('not_found', `key ${keyId} does not exist`);
  return { id: row.id, revokedAt: row.revoked_at.toISOString() };
}

// Every Hub API request reads this: a fixed prepared statement (planned once per connection).
const KEY_VERDICT_SQL = `
  SELECT k.id, k.hub_id, k.scope, k.revoked_at IS NOT NULL AS revoked, h.suspended
    FROM api_keys k JOIN hubs h ON h.id = k.hub_id
   WHERE k.key_hash = $1`;

interface KeyVerdictRow {
  id: string;
  hub_id: string;
  scope: KeyScope;
  revoked: boolean;
  suspended: boolean;
}

/** The statement that reads a key's verdict by its hash (for RideAlongCheck). */
export const keyVerdictStatement = (hash: Buffer): Statement => ({ name: 'key_verdict', text: KEY_VERDICT_SQL, values: [hash] });

/** The verdict in the rows of keyVerdictStatement; undefined for an unknown key. */
export function keyVerdictOf(rows: unknown[]): KeyVerdict | undefined {
  const row = rows[0] as KeyVerdictRow | undefined;
  if (!row) return undefined;
  return { keyId: row.id, hubId: row.hub_id, scope: row.scope, revoked: row.revoked, hubSuspended: row.suspended };
}

export async function findKeyByHash(db: Db, hash: Buffer): Promise<KeyVerdict | undefined> {
  return keyVerdictOf(await queryPrepared(db, keyVerdictStatement(hash)));
}

/** The key an embed token names (by id: the token carries it as `kid`); undefined for an unknown id. */
export async function findEmbedKey(db: Db, keyId: string): Promise<EmbedKeyRecord | undefined> {
  const row = await db.kysely
    .selectFrom('api_keys as k')
    .innerJoin('hubs as h', 'h.id', 'k.hub_id')
    .select(['k.id', 'k.hub_id', 'k.scope', 'k.revoked_at', 'h.suspended', 'k.public_key', 'k.key_hash'])
    .where('k.id', '=', keyId)
    .executeTakeFirst();
  return row && { id: row.id, hubId: row.hub_id, scope: row.scope, revoked: row.revoked_at !== null, hubSuspended: row.suspended, publicKey: row.public_key, keyHash: row.key_hash };
}

/** Adds batched usage: one statement for any number of keys. */
export async function addKeyUsage(db: Db, usage: { keyId: string; count: number; lastUsedAt: Date }[]): Promise<void> {
  if (usage.length === 0) return;
  // Keys deleted meanwhile are skipped (their rows locked, so none can go before the insert).
  await sql`
    INSERT INTO api_key_usage AS a (key_id, request_count, last_used_at)
    SELECT u.id, u.count, u.last_used_at
      FROM unnest(${usage.map((u) => u.keyId)}::text[], ${usage.map((u) => u.count)}::bigint[],
                  ${usage.map((u) => u.lastUsedAt.toISOString())}::timestamptz[]) AS u(id, count, last_used_at)
      JOIN api_keys k ON k.id = u.id
     ORDER BY u.id
       FOR KEY SHARE OF k
    ON CONFLICT (key_id) DO UPDATE SET request_count = a.request_count + excluded.request_count,
                                       last_used_at = greatest(a.last_used_at, excluded.last_used_at)`.execute(db.kysely);
}
