import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdir, open, readFile } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError, type Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import { findServerSecret, insertServerSecretIfAbsent, replaceServerSecret } from '../../domain/oauth/server-secrets.service.ts';
import { openParts, sealParts, secretsKey, type SecretsKey } from '../../platform/sealing.ts';

// Server secrets are encrypted at rest (AES-256-GCM) under a key that is not in the database:
// HUBOPS_SECRETS_KEY, or a key file under DATA_DIR made on first start (mode 0600). Each stored
// value names its key's id, so a key can rotate: list the new key first and the old one after it,
// and every value still under the old key is re-encrypted under the new one at start.

export { secretsKey, type SecretsKey };

export const SECRETS_KEY_FILE = 'secrets.key';

/**
 * The keys from the configuration, or the key file under DATA_DIR (created with mode 0600 on the
 * first start). `fromFile` tells the caller to warn when several instances may share the database.
 */
export async function resolveSecretsKeys(config: Config): Promise<{ keys: SecretsKey[]; fromFile?: string }> {
  if (config.secretsKeys.length > 0) return { keys: config.secretsKeys.map(secretsKey) };
  const file = path.resolve(config.dataDir, SECRETS_KEY_FILE);
  await mkdir(config.dataDir, { recursive: true });
  try {
    const handle = await open(file, 'wx', 0o600);
    await handle.writeFile(`${randomBytes(32).toString('base64url')}\n`);
    await handle.close();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST')
      throw new ConfigError(`cannot create the secrets key file ${file}: ${(error as Error).message}`);
  }
  const text = (await readFile(file, 'utf8')).trim();
  if (!/^[A-Za-z0-9_-]{43}$/.test(text))
    throw new ConfigError(`the secrets key file ${file} does not hold 32 bytes in base64url (43 characters)`);
  return { keys: [secretsKey(Buffer.from(text, 'base64url'))], fromFile: file };
}

interface Sealed {
  enc: 'A256GCM';
  kid: string;
  iv: string;
  tag: string;
  ct: string;
}

const isSealed = (value: unknown): value is Sealed =>
  !!value && typeof value === 'object' && (value as Sealed).enc === 'A256GCM' && typeof (value as Sealed).kid === 'string';

/** The row's name is authenticated too, so a value cannot be moved to another row. */
function seal(name: string, plaintext: unknown, key: SecretsKey): Sealed {
  const p = sealParts(key, Buffer.from(JSON.stringify(plaintext), 'utf8'), name);
  return { enc: 'A256GCM', kid: p.kid, iv: p.iv.toString('base64url'), tag: p.tag.toString('base64url'), ct: p.ct.toString('base64url') };
}

function unseal(name: string, sealed: Sealed, keys: SecretsKey[]): unknown {
  const plain = openParts(
    keys,
    {
      kid: sealed.kid,
      iv: Buffer.from(sealed.iv, 'base64url'),
      tag: Buffer.from(sealed.tag, 'base64url'),
      ct: Buffer.from(sealed.ct, 'base64url'),
    },
    name,
  );
  if (plain === undefined) {
    throw new ConfigError(
      `server secret ${name} is encrypted under key ${sealed.kid}, but the secrets key is ${keys.map((k) => k.id).join(', ')}: start with the key the database was made with (HUBOPS_SECRETS_KEY, or the key file under DATA_DIR); every instance must share it`,
    );
  }
  return JSON.parse(plain.toString('utf8'));
}

/**
 * A secret every instance must share, created by whichever instance asks first (insert-if-absent,
 * then read what won), so N instances started together agree on one value. Once it exists, a
 * start only reads it: nothing is generated to be thrown away. A value stored in plain text (before
 * encryption at rest) or under an earlier key is re-sealed under the current key, conditionally,
 * so instances starting together cannot overwrite each other.
 */
async function sharedSecret<T>(db: Db, keys: SecretsKey[], name: string, create: () => T): Promise<T> {
  let stored = await findServerSecret(db, name);
  if (stored === undefined) {
    await insertServerSecretIfAbsent(db, name, seal(name, create(), keys[0]!));
    stored = await findServerSecret(db, name);
  }
  const value = isSealed(stored) ? unseal(name, stored, keys) : stored;
  if (!isSealed(stored) || stored.kid !== keys[0]!.id) await replaceServerSecret(db, name, stored, seal(name, value, keys[0]!));
  return value as T;
}

export interface AuthorizationServerSecrets {
  /** Keys that sign the authorization server's cookies (newest first). */
  cookieKeys: string[];
  /** The private JSON Web Key Set the server signs with. */
  jwks: { keys: Record<string, unknown>[] };
}

export async function loadServerSecrets(db: Db, options: { keys: SecretsKey[] }): Promise<AuthorizationServerSecrets> {
  if (options.keys.length === 0) throw new Error('loadServerSecrets needs a secrets key');
  const cookieKeys = await sharedSecret(db, options.keys, 'oauth_cookie_keys', () => [randomBytes(32).toString('base64url')]);
  const jwks = await sharedSecret(db, options.keys, 'oauth_jwks', () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = privateKey.export({ format: 'jwk' });
    return { keys: [{ ...jwk, kid: randomBytes(8).toString('hex'), alg: 'ES256', use: 'sig' }] };
  });
  return { cookieKeys, jwks };
}
