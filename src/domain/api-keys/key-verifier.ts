import type { Db } from '../../db/database.ts';
import { hashKey, isWellFormedKey } from './api-key.ts';
import { findKeyByHash, type KeyVerdict } from './api-key.repository.ts';

/**
 * Verifies a Hub API key: the checksum first, so a mistyped or invented key costs no database
 * read; then one indexed read by the key's SHA-256 hash. Verdicts are deliberately not cached:
 * revocation and suspension must hold on the very next request on every instance, and a cache
 * invalidated by NOTIFY leaves a window of a few milliseconds in which they would not.
 * The hash is looked up by equality in a unique index, so no comparison of secrets happens in
 * our code; what an attacker could time is the index walk over hashes, which reveals nothing
 * about any key.
 */
export async function verifyKey(db: Db, key: string): Promise<KeyVerdict | null> {
  if (!isWellFormedKey(key)) return null;
  return (await findKeyByHash(db, hashKey(key))) ?? null;
}
