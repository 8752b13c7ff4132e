import { timingSafeEqual } from 'node:crypto';

/**
 * Whether `presented` equals the `expected` secret (a CSRF token, a MAC, a signature), in time
 * that does not depend on where they differ. Anything but a string or bytes is not equal, and
 * nothing equals an empty secret (an empty expected value is a missing secret, never a match).
 * Only the length can show, and every secret we compare this way has a fixed length.
 */
export function sameSecret(expected: string | Uint8Array, presented: unknown): boolean {
  if (typeof presented !== 'string' && !(presented instanceof Uint8Array)) return false;
  const a = typeof expected === 'string' ? Buffer.from(expected) : expected;
  if (a.length === 0) return false;
  const b = typeof presented === 'string' ? Buffer.from(presented) : presented;
  return a.length === b.length && timingSafeEqual(a, b);
}
