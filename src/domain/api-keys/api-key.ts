import { createHash, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { randomBase62 } from '../../platform/ids.ts';
import { hasHiddenFormatCharacter } from '../../platform/text.ts';
import { KEY_LIFETIME_DAYS, KEY_ROLL_GRACE_MS } from '../../policy.ts';

// Hub API key format: `hubops_` + 43 base62 characters (256 bits) + 6 base62 characters of
// CRC-32 over the prefix and body. The prefix lets secret scanners spot leaked keys; the checksum
// lets the server refuse a mistyped or invented key without reading the database.

export const KEY_PREFIX = 'hubops_';
const BODY_LENGTH = 43;
const CHECKSUM_LENGTH = 6;
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_PATTERN = new RegExp(`^${KEY_PREFIX}[0-9A-Za-z]{${BODY_LENGTH + CHECKSUM_LENGTH}}$`);

function checksum(text: string): string {
  let n = crc32(text);
  let out = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = ALPHABET[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

export function generateKey(): string {
  const head = KEY_PREFIX + randomBase62(BODY_LENGTH);
  return head + checksum(head);
}

/** True when `key` has the shape and checksum of a key we issued (no database involved). */
export function isWellFormedKey(key: string): boolean {
  if (!KEY_PATTERN.test(key)) return false;
  const head = key.slice(0, -CHECKSUM_LENGTH);
  return checksum(head) === key.slice(-CHECKSUM_LENGTH);
}

/** SHA-256 is enough for a 256-bit random secret: there is nothing to brute-force. */
export function hashKey(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

/** What lists show so a person can recognise a key: the prefix and four characters. */
export function visibleStart(key: string): string {
  return key.slice(0, KEY_PREFIX.length + 4);
}

export const KEY_SCOPES = ['read', 'embed'] as const;
export type KeyScope = (typeof KEY_SCOPES)[number];
export const isKeyScope = (value: unknown): value is KeyScope => KEY_SCOPES.includes(value as KeyScope);

// A key is named after the tool that uses it, so a list of keys says which tool makes which requests.
export const KEY_NAME_MAX_LENGTH = 100;

/** What is wrong with a key name (surrounding spaces do not count), or undefined. */
export function keyNameProblem(name: string): 'blank' | 'too_long' | 'hidden_format' | undefined {
  const trimmed = name.trim();
  if (trimmed === '') return 'blank';
  if (trimmed.length > KEY_NAME_MAX_LENGTH) return 'too_long';
  return hasHiddenFormatCharacter(trimmed) ? 'hidden_format' : undefined;
}

// Embed keys are Ed25519 key pairs: the customer signs embed tokens with the private key and
// hubops stores only the public key, so nothing in the database is enough to sign. The private
// key is handed over once as `hubops_esk_` + base64url(PKCS#8 DER): one line for an environment
// variable, and a prefix secret scanners can recognise.
export const EMBED_SECRET_PREFIX = 'hubops_esk_';

/** What a new key stores, and the secret shown once (for a key pair: its private key). */
export interface KeyMaterial {
  secret: string;
  start: string;
  keyHash: Buffer | null;
  publicKey: Buffer | null;
}

/** Lists show an embed key pair by the start of its public key (the private key is not ours). */
const publicStart = (raw: Buffer) => `ed25519:${raw.toString('base64url').slice(0, 8)}`;

export function newKeyMaterial(scope: KeyScope): KeyMaterial {
  if (scope === 'read') {
    const key = generateKey();
    return { secret: key, start: visibleStart(key), keyHash: hashKey(key), publicKey: null };
  }
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = rawPublicKey(publicKey);
  const secret = EMBED_SECRET_PREFIX + privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64url');
  return { secret, start: publicStart(raw), keyHash: null, publicKey: raw };
}

/** An embed key pair whose private key the customer made and keeps: we are given the public key only. */
export function embedMaterialFromPublicKey(text: string): KeyMaterial | undefined {
  let key: KeyObject;
  try {
    const trimmed = text.trim();
    key = trimmed.startsWith('-----BEGIN')
      ? createPublicKey(trimmed)
      : createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: trimmed }, format: 'jwk' });
  } catch {
    return undefined;
  }
  if (key.asymmetricKeyType !== 'ed25519') return undefined;
  const raw = rawPublicKey(key);
  return raw.length === 32 ? { secret: '', start: publicStart(raw), keyHash: null, publicKey: raw } : undefined;
}

function rawPublicKey(key: KeyObject): Buffer {
  return Buffer.from(key.export({ format: 'jwk' }).x!, 'base64url');
}

// --- Lifecycle: expiry and rolling --------------------------------------------------------------

/** True for an allowed lifetime in days (KEY_LIFETIME_DAYS). */
export const isKeyLifetime = (days: unknown): days is number => (KEY_LIFETIME_DAYS as readonly unknown[]).includes(days);

/** True for an allowed grace period of a roll, in milliseconds (KEY_ROLL_GRACE_MS). */
export const isRollGrace = (ms: unknown): ms is number => (KEY_ROLL_GRACE_MS as readonly unknown[]).includes(ms);

export type KeyState = 'active' | 'rolled' | 'expired' | 'revoked';

/**
 * Where a key stands at `now`: revoked; expired (its expiry, or a rolled key's grace period, has
 * passed); rolled (replaced, its old secret still valid until its expiry); or active.
 */
export function keyState(key: { revokedAt: string | null; expiresAt: string | null; replacedBy: string | null }, now: Date): KeyState {
  if (key.revokedAt) return 'revoked';
  if (key.expiresAt && Date.parse(key.expiresAt) <= now.getTime()) return 'expired';
  return key.replacedBy ? 'rolled' : 'active';
}

/**
 * The keys a revocation of `keyId` ends besides itself (revokeKey's rule): the older secrets it
 * replaced by rolls, transitively, that still work at `now`. Oldest last.
 */
export function predecessorsStillWorking<
  K extends { id: string; revokedAt: string | null; expiresAt: string | null; replacedBy: string | null },
>(keyId: string, keys: readonly K[], now: Date): K[] {
  const found: K[] = [];
  for (let current = keys.find((k) => k.replacedBy === keyId); current; current = keys.find((k) => k.replacedBy === current!.id)) {
    if (keyState(current, now) === 'rolled') found.push(current);
  }
  return found;
}

/** The UTC day of an instant, as PostgreSQL's `date` reads it: YYYY-MM-DD. */
export const utcDay = (at: Date): string => at.toISOString().slice(0, 10);

/** The `count` UTC days ending with `last`, oldest first. */
export function daysEndingWith(last: Date, count: number): string[] {
  const end = Date.UTC(last.getUTCFullYear(), last.getUTCMonth(), last.getUTCDate());
  return Array.from({ length: count }, (_, i) => utcDay(new Date(end - (count - 1 - i) * 86_400_000)));
}
