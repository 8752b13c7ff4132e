// API keys' one door: creating, rolling, revoking and listing a hub's keys, the verdict the Hub
// API reads, and usage counts. The rules (names, lifetimes, rolls, the secret and its hash, the
// usage window) are decided here and in api-key.ts; api-key.repository.ts only stores them.
import type { Kysely, Transaction } from 'kysely';
import type { Db, Statement } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import { DomainError } from '../../platform/errors.ts';
import { HIDDEN_FORMAT_MESSAGE } from '../../platform/text.ts';
import { KEY_LIFETIME_DAYS, KEY_ROLL_GRACE_MS, KEY_USAGE_DAYS } from '../../policy.ts';
import {
  daysEndingWith,
  embedMaterialFromPublicKey,
  isKeyLifetime,
  isRollGrace,
  keyNameProblem,
  newKeyMaterial,
  utcDay,
  type KeyMaterial,
  type KeyScope,
} from './api-key.ts';
import * as keys from './api-key.repository.ts';
import type { DayUsage, EmbedKeyRecord, KeyVerdict } from './api-key.repository.ts';

export type { DayUsage, EmbedKeyRecord, KeyVerdict } from './api-key.repository.ts';

const DAY_MS = 86_400_000;

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

function validateKeyName(name: string): string {
  const problem = keyNameProblem(name);
  if (problem === 'hidden_format') throw new DomainError('invalid', `key name ${HIDDEN_FORMAT_MESSAGE}`);
  if (problem) throw new DomainError('invalid', 'key name must be 1 to 100 characters');
  return name.trim();
}

/** The expiry of a key created at `now` with this lifetime; refuses a lifetime that is not allowed. */
function expiryOf(expiresInDays: number | null | undefined, now: Date): Date | null {
  if (expiresInDays === undefined || expiresInDays === null) return null;
  if (!isKeyLifetime(expiresInDays))
    throw new DomainError('invalid', `expiry must be one of ${KEY_LIFETIME_DAYS.join(', ')} days, or none (never expires)`);
  return new Date(now.getTime() + expiresInDays * DAY_MS);
}

async function insertKey(executor: Kysely<Database>, row: keys.KeyRow, material: KeyMaterial): Promise<Omit<CreatedKey, 'key'>> {
  const created = await keys.insertKey(executor, { ...row, name: validateKeyName(row.name) }, material);
  if (!created) throw new DomainError('not_found', `hub ${row.hubId} does not exist`);
  return created;
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
export async function createEmbedKeyFromPublicKey(
  db: Db,
  input: Omit<NewKey, 'scope'> & { publicKey: string },
): Promise<Omit<CreatedKey, 'key'>> {
  const now = input.now ?? new Date();
  const expiresAt = expiryOf(input.expiresInDays, now);
  const material = embedMaterialFromPublicKey(input.publicKey);
  if (!material) throw new DomainError('invalid', 'public key must be an Ed25519 public key (PEM, or the 32 raw bytes in base64url)');
  return insertKey(db.kysely, { hubId: input.hubId, name: input.name, scope: 'embed', now, expiresAt }, material);
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
export async function rollKeyInTransaction(
  trx: Transaction<Database>,
  input: { hubId: string; keyId: string; graceMs: number; now: Date },
): Promise<RolledKey> {
  if (!isRollGrace(input.graceMs))
    throw new DomainError('invalid', `grace period must be one of ${KEY_ROLL_GRACE_MS.map((ms) => `${ms / 3_600_000} h`).join(', ')}`);
  const old = await keys.lockKeyToRoll(trx, input.hubId, input.keyId);
  if (!old) throw new DomainError('not_found', `key ${input.keyId} does not exist`);
  const nowMs = input.now.getTime();
  // The private half of an embed key may be the customer's own (keys create --public-key): a roll
  // must not swap it for a pair hubops made. Its successor is simply a new embed key.
  if (old.scope === 'embed')
    throw new DomainError(
      'conflict',
      `key ${old.id} is an embed key, which is not rolled: create a new embed key, sign with it, then revoke this one`,
    );
  if (old.revokedAt) throw new DomainError('conflict', `key ${old.id} is revoked, so it cannot be rolled: create a new key instead`);
  if (old.expiresAt && old.expiresAt.getTime() <= nowMs) {
    throw new DomainError(
      'conflict',
      `key ${old.id} expired at ${old.expiresAt.toISOString()}, so it cannot be rolled: create a new key instead`,
    );
  }
  if (old.replacedBy)
    throw new DomainError('conflict', `key ${old.id} was already rolled: roll its replacement, ${old.replacedBy}, instead`);
  const material = newKeyMaterial(old.scope);
  const lifetimeMs = old.expiresAt ? old.expiresAt.getTime() - old.createdAt.getTime() : null;
  const created = await insertKey(
    trx,
    {
      hubId: input.hubId,
      name: old.name,
      scope: old.scope,
      now: input.now,
      expiresAt: lifetimeMs === null ? null : new Date(nowMs + lifetimeMs),
    },
    material,
  );
  const graceEnds = new Date(Math.min(nowMs + input.graceMs, old.expiresAt?.getTime() ?? Infinity));
  await keys.markKeyRolled(trx, { hubId: input.hubId, keyId: old.id, replacedBy: created.id, expiresAt: graceEnds });
  return { ...created, key: material.secret, replaces: { id: old.id, expiresAt: graceEnds.toISOString() } };
}

/** Rolls a key by its id alone (the operator CLI, which is not acting in one hub): see rollKeyInTransaction. */
export async function rollKey(db: Db, input: { keyId: string; graceMs: number; now: Date }): Promise<RolledKey> {
  return db.kysely.transaction().execute(async (trx) => {
    const hubId = await keys.hubOfKey(trx, input.keyId);
    if (!hubId) throw new DomainError('not_found', `key ${input.keyId} does not exist`);
    return rollKeyInTransaction(trx, { ...input, hubId });
  });
}

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

/** The hub's keys, oldest first, with their usage totals. */
export async function listKeys(db: Db, hubId: string): Promise<KeySummary[]> {
  return (await keys.listKeys(db, hubId)).map(({ hasPublicKey, ...key }) => ({
    ...key,
    legacyEmbed: key.scope === 'embed' && !hasPublicKey,
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
  const rows = await keys.dailyKeyUsageRows(db, hubId, days[0]!, days.at(-1)!);
  const counts = new Map<string, number[]>();
  const notModified = new Map<string, number[]>();
  const seriesOf = (map: Map<string, number[]>, keyId: string) => {
    let series = map.get(keyId);
    if (!series) map.set(keyId, (series = days.map(() => 0)));
    return series;
  };
  for (const row of rows) {
    const day = days.indexOf(row.day);
    seriesOf(counts, row.keyId)[day] = row.requests;
    seriesOf(notModified, row.keyId)[day] = row.notModified;
  }
  return { days, counts, notModified };
}

/** A revoked key, and the older secrets it had replaced that were still working and now end with it. */
export interface RevokedKey {
  id: string;
  revokedAt: string;
  /** Keys it replaced by rolls (and those they replaced) still in their grace period, revoked with it. */
  predecessors: string[];
}

/**
 * Revokes a key, of this hub when one is given (idempotent: revoking again keeps the first
 * revocation time). A roll's old secret works during its grace period only so that tools can
 * switch to its replacement: revoking the replacement ends it too (and any older one still working).
 * Revoking a rolled key ends only its old secret, early; the key that replaced it keeps working.
 */
export async function revokeKey(db: Db, keyId: string, options: { hubId?: string; now?: Date } = {}): Promise<RevokedKey> {
  const revoked = await keys.revokeKeyAndPredecessors(db, { keyId, hubId: options.hubId, now: options.now ?? new Date() });
  if (!revoked) throw new DomainError('not_found', `key ${keyId} does not exist`);
  return revoked;
}

/** The statement that reads a key's verdict by its hash (for RideAlongCheck). */
export function keyVerdictStatement(hash: Buffer): Statement {
  return keys.keyVerdictStatement(hash);
}

/** The verdict in the rows of keyVerdictStatement; undefined for an unknown key. */
export function keyVerdictOf(rows: unknown[]): KeyVerdict | undefined {
  return keys.keyVerdictOf(rows);
}

/** A key's verdict by its hash, in a round trip of its own; undefined for an unknown key. */
export async function findKeyByHash(db: Db, hash: Buffer): Promise<KeyVerdict | undefined> {
  return keys.findKeyByHash(db, hash);
}

/** The key an embed token names (by id: the token carries it as `kid`); undefined for an unknown id. */
export async function findEmbedKey(db: Db, keyId: string): Promise<EmbedKeyRecord | undefined> {
  return keys.findEmbedKey(db, keyId);
}

/** A key's usage since the last flush: by UTC day (YYYY-MM-DD), and the latest request. */
export interface KeyUsage {
  keyId: string;
  days: Map<string, DayUsage>;
  lastUsedAt: Date;
}

/**
 * Adds batched usage for any number of keys in one statement, and keeps only the KEY_USAGE_DAYS
 * days counted back from the newest day in the batch, so a key never holds more days than that.
 */
export async function addKeyUsage(db: Db, usage: KeyUsage[]): Promise<void> {
  const rows = usage.flatMap((u) =>
    [...u.days].map(([day, { requests, notModified }]) => ({
      keyId: u.keyId,
      day,
      requests,
      notModified,
      lastUsedAt: u.lastUsedAt.toISOString(),
    })),
  );
  if (rows.length === 0) return;
  const newest = rows.reduce((max, r) => (r.day > max ? r.day : max), rows[0]!.day);
  await keys.addKeyUsage(db, rows, utcDay(new Date(Date.parse(newest) - (KEY_USAGE_DAYS - 1) * DAY_MS)));
}
