// Storage of the secrets every instance shares (the authorization server's cookie keys and
// signing keys), as the sealed JSON values src/surfaces/oauth/server-secrets.ts makes.
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';

export async function findServerSecret(db: Db, name: string): Promise<unknown | undefined> {
  const row = await db.kysely.selectFrom('server_secrets').select('value').where('name', '=', name).executeTakeFirst();
  return row?.value;
}

/** Stores the value unless the secret exists already (the first instance to ask wins). */
export async function insertServerSecretIfAbsent(db: Db, name: string, value: unknown): Promise<void> {
  await sql`INSERT INTO server_secrets (name, value) VALUES (${name}, ${JSON.stringify(value)}) ON CONFLICT (name) DO NOTHING`.execute(
    db.kysely,
  );
}

/** Replaces the value only if it is still `expected`, so instances starting together cannot overwrite each other. */
export async function replaceServerSecret(db: Db, name: string, expected: unknown, value: unknown): Promise<void> {
  await sql`UPDATE server_secrets SET value = ${JSON.stringify(value)}
             WHERE name = ${name} AND value = ${JSON.stringify(expected)}::jsonb`.execute(db.kysely);
}
