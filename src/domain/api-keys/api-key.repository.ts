import { sql, type Kysely, type Transaction } from 'kysely';
import { queryPrepared, type Db, type Statement } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import { DomainError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { KEY_LIFETIME_DAYS, KEY_ROLL_GRACE_MS, KEY_USAGE_DAYS } from '../../policy.ts';
import {
  daysEndingWith, embedMaterialFromPublicKey, isKeyLifetime, isRollGrace, keyNameProblem, newKeyMaterial, utcDay, type KeyMaterial, type KeyScope,
} from './api-key.ts';

const DAY_MS = 86_400_000;

export interface KeySummary {
  id: string;
  name: string;
  scope: KeyScope;
  start: string;
  requestCount: number;
  /** Of requestCount, those answered 304 Not Modified: conditional hits, free against the rate limit. */
  notModifiedCount: number;
  lastUsedAt: string | null;
  createdAt: string;
  revokedAt: string | null;
  /** When it stops working (a rolled key: the end of its grace period); null: never. */
  expiresAt: string | null;
  /** The key that replaced it when it was rolled. */
  replacedBy: string | null;
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
  expiresAt: string | null;
}

/** A new key, and how it stops working: never, or after one of the allowed lifetimes. */
export interface NewKey {
  hubId: string;
  name: string;
  scope?: KeyScope;
  /** One of KEY_LIFETIME_DAYS; absent or null: the key never expires. */
  expiresInDays?: number | null;
  /** The creation time the expiry counts from (default: now). */
  now?: Date;
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

function validateKeyName(name: string): string {
  if (keyNameProblem(name)) throw new DomainError('invalid', 'key name must be 1 to 100 characters');
  return name.trim();
}

/** The expiry of a key created at `now` with this lifetime; refuses a lifetime that is not allowed. */
function expiryOf(expiresInDays: number | null | undefined, now: Date): Date | null {
  if (expiresInDays === undefined || expiresInDays === null) return null;
  if (!isKeyLifetime(expiresInDays)) throw new DomainError('invalid', `expiry must be one of ${KEY_LIFETIME_DAYS.join(', ')} days, or none (never expires)`);
  return new Date(now.getTime() + expiresInDays * DAY_MS);
}

export async function createKey(db: Db, input: NewKey): Promise<CreatedKey> {
  return createKeyIn(db.kysely, input);
}

/** createKey inside the caller's transaction (the key commits or rolls back with the rest). */
export async function createKeyInTransaction(trx: Transaction<Database>, input: NewKey): Promise<CreatedKey> {
  return createKeyIn(trx, input);
}

async function createKeyIn(executor: Kysely<Database>, input: NewKey): Promise<CreatedKey> {
  const scope = input.scope ?? 'read';
  const now = input.now ?? new Date();
  const expiresAt = expiryOf(input.expiresInDays, now);
  const material = newKeyMaterial(scope);
  const created = await insertKey(executor, { hubId: input.hubId, name: input.name, scope, now, expiresAt }, material);
  return { ...created, key: material.secret };
}

/** An embed key whose private key the customer made and keeps: only its public key is given. */
export async function createEmbedKeyFromPublicKey(db: Db, input: Omit<NewKey, 'scope'> & { publicKey: string }): Promise<Omit<CreatedKey, 'key'>> {
  const now = input.now ?? new Date();
  const expiresAt = expiryOf(input.expiresInDays, now);
  const material = embedMaterialFromPublicKey(input.publicKey);
  if (!material) throw new DomainError('invalid', 'public key must be an Ed25519 public key (PEM, or the 32 raw bytes in base64url)');
  return insertKey(db.kysely, { hubId: input.hubId, name: input.name, scope: 'embed', now, expiresAt }, material);
}

async function insertKey(
  executor: Kysely<Database>,
  input: { hubId: string; name: string; scope: KeyScope; now: Date; expiresAt: Date | null },
  material: KeyMaterial,
): Promise<Omit<CreatedKey, 'key'>> {
  const name = validateKeyName(input.name);
  const hub = await executor.selectFrom('hubs').select('id').where('id', '=', input.hubId).executeTakeFirst();
  if (!hub) throw new DomainError('not_found', `hub ${input.hubId} does not exist`);
  // created_at is the same instant the expiry counts from, so a roll can carry the lifetime over.
  const row = await executor
    .insertInto('api_keys')
    .values({
      id: newId('key'), hub_id: input.hubId, name, scope: input.scope, start: material.start, key_hash: material.keyHash, public_key: material.publicKey,
      created_at: input.now, expires_at: input.expiresAt,
    })
    .returning(['id', 'created_at', 'expires_at'])
    .executeTakeFirstOrThrow();
  return {
    id: row.id, name, scope: input.scope, hubId: input.hubId, start: material.start,
    createdAt: row.created_at.toISOString(), expiresAt: row.expires_at?.toISOString() ?? null,
  };
}

export interface RolledKey extends CreatedKey {
  /** The key that was rolled, and when its old secret stops working. */
  replaces: { id: string; expiresAt: string };
}

/**
 * Rolls a key of this hub: a new secret with the same name, scope and lifetime (shown once),
 * while the old secret keeps working for `graceMs` (or until its own expiry, if sooner). The old
 * row names its successor. An embed, revoked, expired or already rolled key is refused (conflict). Runs
 * in the caller's transaction, with the old row locked, so two rolls of one key make one successor.
 */
export async function rollKeyInTransaction(trx: Transaction<Database>, input: { hubId: string; keyId: string; graceMs: number; now: Date }): Promise<RolledKey> {
  if (!isRollGrace(input.graceMs)) throw new DomainError('invalid', `grace period must be one of ${KEY_ROLL_GRACE_MS.map((ms) => `${ms / 3_600_000} h`).join(', ')}`);
  const old = await trx
    .selectFrom('api_keys')
    .select(['id', 'name', 'scope', 'created_at', 'revoked_at', 'expires_at', 'replaced_by'])
    .where('id', '=', input.keyId)
    .where('hub_id', '=', input.hubId)
    .forUpdate()
    .executeTakeFirst();
  if (!old) throw new DomainError('not_found', `key ${input.keyId} does not exist`);
  const nowMs = input.now.getTime();
  // The private half of an embed key may be the customer's own (keys create --public-key): a roll
  // must not swap it for a pair hubops made. Its successor is simply a new embed key.
  if (old.scope === 'embed') throw new DomainError('conflict', `key ${old.id} is an embed key, which is not rolled: create a new embed key, sign with it, then revoke this one`);
  if (old.revoked_at) throw new DomainError('conflict', `key ${old.id} is revoked, so it cannot be rolled: create a new key instead`);
  if (old.expires_at && old.expires_at.getTime() <= nowMs) {
    throw new DomainError('conflict', `key ${old.id} expired at ${old.expires_at.toISOString()}, so it cannot be rolled: create a new key instead`);
  }
  if (old.replaced_by) throw new DomainError('conflict', `key ${old.id} was already rolled: roll its replacement, ${old.replaced_by}, instead`);
  const material = newKeyMaterial(old.scope);
  const lifetimeMs = old.expires_at ? old.expires_at.getTime() - old.created_at.getTime() : null;
  const created = await insertKey(
    trx,
    { hubId: input.hubId, name: old.name, scope: old.scope, now: input.now, expiresAt: lifetimeMs === null ? null : new Date(nowMs + lifetimeMs) },
    material,
  );
  const graceEnds = new Date(Math.min(nowMs + input.graceMs, old.expires_at?.getTime() ?? Infinity));
  await trx.updateTable('api_keys').set({ replaced_by: created.id, expires_at: graceEnds }).where('id', '=', old.id).where('hub_id', '=', input.hubId).execute();
  return { ...created, key: material.secret, replaces: { id: old.id, expiresAt: graceEnds.toISOString() } };
}

/** Rolls a key by its id alone (the operator CLI, which is not acting in one hub): see rollKeyInTransaction. */
export async function rollKey(db: Db, input: { keyId: string; graceMs: number; now: Date }): Promise<RolledKey> {
  return db.kysely.transaction().execute(async (trx) => {
    const key = await trx.selectFrom('api_keys').select('hub_id').where('id', '=', input.keyId).executeTakeFirst();
    if (!key) throw new DomainError('not_found', `key ${input.keyId} does not exist`);
    return rollKeyInTransaction(trx, { ...input, hubId: key.hub_id });
  });
}

export async function listKeys(db: Db, hubId: string): Promise<KeySummary[]> {
  const rows = await db.kysely
    .selectFrom('api_keys as k')
    .leftJoin('api_key_usage as u', 'u.key_id', 'k.id')
    .select([
      'k.id', 'k.name', 'k.scope', 'k.start', 'u.request_count', 'u.not_modified_count', 'u.last_used_at', 'k.created_at', 'k.revoked_at', 'k.expires_at', 'k.replaced_by',
      sql<boolean>`k.scope = 'embed' AND k.public_key IS NULL`.as('legacy_embed'),
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
    legacyEmbed: r.legacy_embed,
  }));
}

/** Each key's requests per UTC day, oldest first, by key id (absent: none in the period). */
export interface DailyKeyUsage {
  days: string[];
  /** All requests, 0 for a day without any. */
  counts: Map<string, number[]>;
  /** Of those, the ones answered 304 Not Modified. */
  notModified: Map<string, number[]>;
}

/** Requests per day of each of the hub's keys, for the KEY_USAGE_DAYS UTC days ending with `today`'s. */
export async function keyDailyUsage(db: Db, hubId: string, today: Date): Promise<DailyKeyUsage> {
  const days = daysEndingWith(today, KEY_USAGE_DAYS);
  const rows = await db.kysely
    .selectFrom('api_key_daily_usage as d')
    .innerJoin('api_keys as k', 'k.id', 'd.key_id')
    .select(['d.key_id', 'd.day', 'd.request_count', 'd.not_modified_count'])
    .where('k.hub_id', '=', hubId)
    .where('d.day', '>=', days[0]!)
    .where('d.day', '<=', days.at(-1)!)
    .execute();
  const counts = new Map<string, number[]>();
  const notModified = new Map<string, number[]>();
  const seriesOf = (map: Map<string, number[]>, keyId: string) => {
    let series = map.get(keyId);
    if (!series) map.set(keyId, (series = days.map(() => 0)));
    return series;
  };
  for (const row of rows) {
    const day = days.indexOf(row.day);
    seriesOf(counts, row.key_id)[day] = Number(row.request_count);
    seriesOf(notModified, row.key_id)[day] = Number(row.not_modified_count);
  }
  return { days, counts, notModified };
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
  return { keyId: row.id, hubId: row.hub_id, scope: row.scope, revoked: row.revoked, hubSuspended: row.suspended, expiresAt: row.expires_at, replacedBy: row.replaced_by };
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
  return row && {
    id: row.id, hubId: row.hub_id, scope: row.scope, revoked: row.revoked_at !== null, hubSuspended: row.suspended, expiresAt: row.expires_at,
    publicKey: row.public_key, keyHash: row.key_hash,
  };
}

/** One key's requests on one UTC day, and how many of them were answered 304 Not Modified. */
export interface DayUsage {
  requests: number;
  notModified: number;
}

/** A key's usage since the last flush: by UTC day (YYYY-MM-DD), and the latest request. */
export interface KeyUsage {
  keyId: string;
  days: Map<string, DayUsage>;
  lastUsedAt: Date;
}

/**
 * Adds batched usage in one statement for any number of keys: each key's totals (requests, and
 * those answered 304) and last use, the same per UTC day, and the deletion of its days older than
 * KEY_USAGE_DAYS (counted back from the newest day in the batch), so a key never holds more days than that.
 */
export async function addKeyUsage(db: Db, usage: KeyUsage[]): Promise<void> {
  const rows = usage.flatMap((u) => [...u.days].map(([day, { requests, notModified }]) => ({ keyId: u.keyId, day, requests, notModified, lastUsedAt: u.lastUsedAt.toISOString() })));
  if (rows.length === 0) return;
  const newest = rows.reduce((max, r) => (r.day > max ? r.day : max), rows[0]!.day);
  const firstKept = utcDay(new Date(Date.parse(newest) - (KEY_USAGE_DAYS - 1) * DAY_MS));
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
