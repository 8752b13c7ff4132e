import { createHash } from 'node:crypto';
import { sameSecret } from '../../platform/constant-time.ts';

// Client secrets are stored as `sha256:<hex>`: a 512-bit random secret needs no slow hash, and
// comparing digests of equal length in constant time reveals nothing.
const PREFIX = 'sha256:';

export function hashClientSecret(secret: string): string {
  return PREFIX + createHash('sha256').update(secret).digest('hex');
}

export function isHashedClientSecret(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(PREFIX) && value.length === PREFIX.length + 64;
}

export function clientSecretMatches(storedHash: string | undefined, presented: string | undefined): boolean {
  if (!storedHash || typeof presented !== 'string') return false;
  return sameSecret(storedHash, hashClientSecret(presented));
}
