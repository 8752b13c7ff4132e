import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';

/**
 * A secret every instance must share, created by whichever instance asks first (insert-if-absent,
 * then read what won), so N instances started together agree on one value. Once it exists, a
 * start only reads it: nothing is generated to be thrown away.
 */
async function sharedSecret<T>(db: Db, name: string, create: () => T): Promise<T> {
  const read = () => db.kysely.selectFrom('server_secrets').select('value').where('name', '=', name).executeTakeFirst();
  const existing = await read();
  if (existing) return existing.value as T;
  await sql`INSERT INTO server_secrets (name, value) VALUES (${name}, ${JSON.stringify(create())})
            ON CONFLICT (name) DO NOTHING`.execute(db.kysely);
  return (await read())!.value as T;
}

export interface AuthorizationServerSecrets {
  /** Keys that sign the authorization server's cookies (newest first). */
  cookieKeys: string[];
  /** The private JSON Web Key Set the server signs with. */
  jwks: { keys: Record<string, unknown>[] };
}

export async function loadServerSecrets(db: Db): Promise<AuthorizationServerSecrets> {
  const cookieKeys = await sharedSecret(db, 'oauth_cookie_keys', () => [randomBytes(32).toString('base64url')]);
  const jwks = await sharedSecret(db, 'oauth_jwks', () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = privateKey.export({ format: 'jwk' });
    return { keys: [{ ...jwk, kid: randomBytes(8).toString('hex'), alg: 'ES256', use: 'sig' }] };
  });
  return { cookieKeys, jwks };
}
