// The secrets every instance shares (the authorization server's cookie keys and signing keys):
// the one door to their storage. Sealing them is the OAuth surface's (src/surfaces/oauth/server-secrets.ts).
import type { Db } from '../../db/database.ts';
import {
  findServerSecret as readServerSecret,
  insertServerSecretIfAbsent as insertIfAbsent,
  replaceServerSecret as replaceIfUnchanged,
} from './server-secrets.repository.ts';

/** The stored (sealed) value of a secret, or undefined when none is stored yet. */
export async function findServerSecret(db: Db, name: string): Promise<unknown | undefined> {
  return readServerSecret(db, name);
}

/** Stores the value unless the secret exists already (the first instance to ask wins). */
export async function insertServerSecretIfAbsent(db: Db, name: string, value: unknown): Promise<void> {
  await insertIfAbsent(db, name, value);
}

/** Replaces the value only if it is still `expected`, so instances starting together cannot overwrite each other. */
export async function replaceServerSecret(db: Db, name: string, expected: unknown, value: unknown): Promise<void> {
  await replaceIfUnchanged(db, name, expected, value);
}
