import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { randomBase62 } from '../../platform/ids.ts';

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
