import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

// Values sealed at rest with AES-256-GCM under the server's secrets key (HUBOPS_SECRETS_KEY or
// the key file under DATA_DIR), never under anything stored in the database. A sealed value names
// its key by id, so keys can rotate (the current key first, earlier ones still open what they
// sealed), and authenticates additional data (the row it belongs to), so a value copied to
// another row does not open.

/** A 32-byte key and its id (the first 8 bytes of its SHA-256, hex: names it without revealing it). */
export interface SecretsKey {
  id: string;
  key: Buffer;
}

export const secretsKey = (key: Buffer): SecretsKey => ({ id: createHash('sha256').update(key).digest('hex').slice(0, 16), key });

/** One AES-256-GCM encryption: what server-secrets.ts stores as JSON and Sealer packs into bytes. */
export interface SealedParts {
  kid: string;
  iv: Buffer;
  tag: Buffer;
  ct: Buffer;
}

export function sealParts(key: SecretsKey, plaintext: Buffer, aad: string): SealedParts {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key.key, iv).setAAD(Buffer.from(aad));
  const ct = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return { kid: key.id, iv, tag: cipher.getAuthTag(), ct };
}

/** The plaintext, or undefined when no key of `keys` opens it with this additional data. */
export function openParts(keys: SecretsKey[], parts: SealedParts, aad: string): Buffer | undefined {
  const key = keys.find((k) => k.id === parts.kid);
  if (!key) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key.key, parts.iv).setAAD(Buffer.from(aad));
    decipher.setAuthTag(parts.tag);
    return Buffer.concat([decipher.update(parts.ct), decipher.final()]);
  } catch {
    return undefined;
  }
}

const VERSION = 1;
const KID_BYTES = 8;

export class SealingError extends Error {}

/**
 * Seals short secrets (ad platform tokens) into bytes: version (1) · key id (8) · IV (12) · tag (16)
 * · ciphertext. `aad` is the id of the row that holds the value.
 */
export class Sealer {
  readonly #keys: SecretsKey[];
  constructor(keys: SecretsKey[]) {
    if (keys.length === 0) throw new Error('a Sealer needs at least one secrets key');
    this.#keys = keys;
  }

  seal(plaintext: string, aad: string): Buffer {
    const p = sealParts(this.#keys[0]!, Buffer.from(plaintext, 'utf8'), aad);
    return Buffer.concat([Buffer.from([VERSION]), Buffer.from(p.kid, 'hex'), p.iv, p.tag, p.ct]);
  }

  /** Throws SealingError (naming the key id, never the value) when the value does not open. */
  open(sealed: Buffer, aad: string): string {
    if (sealed.length < 1 + KID_BYTES + 12 + 16 || sealed[0] !== VERSION)
      throw new SealingError('the sealed value is not in a known format');
    const kid = sealed.subarray(1, 1 + KID_BYTES).toString('hex');
    const parts = { kid, iv: sealed.subarray(9, 21), tag: sealed.subarray(21, 37), ct: sealed.subarray(37) };
    const plain = openParts(this.#keys, parts, aad);
    if (plain === undefined) {
      throw new SealingError(
        `a sealed value under key ${kid} does not open with the secrets key ${this.#keys.map((k) => k.id).join(', ')}: every instance must share HUBOPS_SECRETS_KEY`,
      );
    }
    return plain.toString('utf8');
  }
}
