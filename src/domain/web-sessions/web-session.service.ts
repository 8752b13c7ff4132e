// The web admin's sessions and its one-time "Create key" forms. A session id is 256 random bits
// that only the browser's cookie holds. Each rendering of the Create key form carries a one-time
// token; the submit that consumes it creates the key in the same transaction, so a double submit
// makes one key. The new key waits sealed (AES-256-GCM under a key derived from the raw session
// id) until the page that shows it once reads it, and is erased as it is read.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import { FORM_TOKEN_TTL_MS, WEB_SESSION_TTL_MS } from '../../policy.ts';
import { createKeyInTransaction, rollKeyInTransaction, type CreatedKey } from '../api-keys/api-key.service.ts';
import type { KeyScope } from '../api-keys/api-key.ts';
import {
  deleteSession,
  findSessionUser,
  insertFormToken,
  insertSession,
  lockFormToken,
  recordKeyOfFormToken,
  takeSealedKey,
  type SessionUser,
} from './web-session.repository.ts';

export type { Membership, SessionUser } from './web-session.repository.ts';

const sha256 = (text: string): Buffer => createHash('sha256').update(text).digest();
const randomToken = (): string => randomBytes(32).toString('base64url');

/** Starts a session; returns the raw id for the cookie (the table keeps its hash). */
export async function createSession(db: Db, userId: string, now: Date): Promise<string> {
  const id = randomToken();
  await insertSession(db, { idHash: sha256(id), userId, now, expiresAt: new Date(now.getTime() + WEB_SESSION_TTL_MS) });
  return id;
}

export async function endSession(db: Db, sessionId: string): Promise<void> {
  await deleteSession(db, sha256(sessionId));
}

/** The signed-in user with their memberships, or undefined for an unknown or expired session. */
export async function sessionUser(db: Db, sessionId: string, now: Date): Promise<SessionUser | undefined> {
  return findSessionUser(db, sha256(sessionId), now);
}

/** A one-time token for one rendering of the Create key form of this session and hub. */
export async function issueFormToken(db: Db, sessionId: string, hubId: string, now: Date): Promise<string> {
  const token = randomToken();
  await insertFormToken(db, {
    tokenHash: sha256(token),
    sessionHash: sha256(sessionId),
    hubId,
    now,
    expiresAt: new Date(now.getTime() + FORM_TOKEN_TTL_MS),
  });
  return token;
}

export type CreateOutcome = { kind: 'created' | 'already'; keyId: string } | { kind: 'expired' };

/**
 * Consumes the form token and creates the key in one transaction: the first submit of a form
 * creates it, a second finds it already made and creates nothing; an expired or foreign token
 * creates nothing. The name is checked by the api-keys rules (refused as invalid); the scope is
 * a KeyScope by its type.
 */
export async function createKeyOnce(
  db: Db,
  input: { sessionId: string; formToken: string; hubId: string; name: string; scope: KeyScope; expiresInDays: number | null; now: Date },
): Promise<CreateOutcome> {
  return onceWithFormToken(db, input, (trx) =>
    createKeyInTransaction(trx, {
      hubId: input.hubId,
      name: input.name,
      scope: input.scope,
      expiresInDays: input.expiresInDays,
      now: input.now,
    }),
  );
}

/**
 * Rolls a key with a form token, as createKeyOnce creates one: the first submit rolls it and seals
 * the new secret for the one-time reveal; a second finds the successor already made. The roll's
 * refusals (revoked, expired, already rolled) throw, and leave the form token unused.
 */
export async function rollKeyOnce(
  db: Db,
  input: { sessionId: string; formToken: string; hubId: string; keyId: string; graceMs: number; now: Date },
): Promise<CreateOutcome> {
  return onceWithFormToken(db, input, (trx) =>
    rollKeyInTransaction(trx, { hubId: input.hubId, keyId: input.keyId, graceMs: input.graceMs, now: input.now }),
  );
}

async function onceWithFormToken(
  db: Db,
  input: { sessionId: string; formToken: string; hubId: string; now: Date },
  make: (trx: Transaction<Database>) => Promise<CreatedKey>,
): Promise<CreateOutcome> {
  const token = { tokenHash: sha256(input.formToken), sessionHash: sha256(input.sessionId), hubId: input.hubId };
  return db.kysely.transaction().execute(async (trx): Promise<CreateOutcome> => {
    const locked = await lockFormToken(trx, { ...token, now: input.now });
    if (!locked) return { kind: 'expired' };
    if (locked.keyId) return { kind: 'already', keyId: locked.keyId };
    const key = await make(trx);
    await recordKeyOfFormToken(trx, token.tokenHash, key.id, sealKey(input.sessionId, key.key));
    return { kind: 'created', keyId: key.id };
  });
}

/**
 * The key made with the form token, and its secret the first time only (undefined after: it
 * was erased as it was read). Undefined when the token made no key in this session and hub.
 */
export async function revealKeyOnce(
  db: Db,
  sessionId: string,
  formToken: string,
  hubId: string,
): Promise<{ keyId: string; key: string | undefined } | undefined> {
  const taken = await takeSealedKey(db, { tokenHash: sha256(formToken), sessionHash: sha256(sessionId), hubId });
  return taken && { keyId: taken.keyId, key: taken.sealed ? unsealKey(sessionId, taken.sealed) : undefined };
}

const sealingKey = (sessionId: string) => sha256(`hubops-web-seal:${sessionId}`);

function sealKey(sessionId: string, key: string): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealingKey(sessionId), iv);
  const body = Buffer.concat([cipher.update(key, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

function unsealKey(sessionId: string, sealed: Buffer): string | undefined {
  try {
    const decipher = createDecipheriv('aes-256-gcm', sealingKey(sessionId), sealed.subarray(0, 12));
    decipher.setAuthTag(sealed.subarray(12, 28));
    return Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}
