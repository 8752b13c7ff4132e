// A platform token between "Connect" (the OAuth callback, or a token an admin pasted) and the
// admin's choice of ad accounts. It never goes into a page: the page carries an opaque handle, and
// the token waits server-side, sealed (platform/sealing.ts) under a key derived from the raw web session id
// (which only the admin's browser holds) with the hub and handle authenticated, so neither a copy
// of the database nor another session or hub can use it. Taken once when the accounts are chosen.
import { createHash, randomBytes } from 'node:crypto';
import type { Db } from '../../db/database.ts';
import type { AdPlatformClient } from '../../integrations/ad-platform.ts';
import { openParts, sealParts, secretsKey } from '../../platform/sealing.ts';
import { FORM_TOKEN_TTL_MS } from '../../policy.ts';
import { findPending, insertPending, takePending, type PendingRow } from './pending-connection.repository.ts';

export interface PendingToken<P extends string = AdPlatformClient['platform']> {
  /** Whose token it is: an ad platform's, or another connection's (Business Profile's refresh token). */
  platform: P;
  kind: 'oauth' | 'system_user';
  accessToken: string;
  tokenExpiresAt: Date | null;
}

interface Where {
  sessionId: string;
  hubId: string;
  handle: string;
  now: Date;
}

const sha256 = (text: string): Buffer => createHash('sha256').update(text).digest();
const keyOf = (sessionId: string) => secretsKey(sha256(`hubops-ad-pending:${sessionId}`));
const aadOf = (hubId: string, handleHash: Buffer) => `${hubId}\0${handleHash.toString('hex')}`;

/** Stored as IV (12) · tag (16) · ciphertext: the key needs no id, the session names it. */
function seal(where: { sessionId: string; hubId: string }, handleHash: Buffer, token: string): Buffer {
  const p = sealParts(keyOf(where.sessionId), Buffer.from(token, 'utf8'), aadOf(where.hubId, handleHash));
  return Buffer.concat([p.iv, p.tag, p.ct]);
}

function unseal(where: { sessionId: string; hubId: string }, handleHash: Buffer, sealed: Buffer): string | undefined {
  const key = keyOf(where.sessionId);
  const parts = { kid: key.id, iv: sealed.subarray(0, 12), tag: sealed.subarray(12, 28), ct: sealed.subarray(28) };
  return openParts([key], parts, aadOf(where.hubId, handleHash))?.toString('utf8');
}

const keyOfRow = (where: Where) => ({
  handleHash: sha256(where.handle),
  sessionHash: sha256(where.sessionId),
  hubId: where.hubId,
  now: where.now,
});

/** What the ad-account chooser takes: a token held for another connection is not its to use. */
const AD_PLATFORMS: readonly AdPlatformClient['platform'][] = ['meta', 'google_ads', 'chatgpt_ads'];

function opened<P extends string>(where: Where, row: PendingRow, platforms: readonly P[]): PendingToken<P> | undefined {
  if (!(platforms as readonly string[]).includes(row.platform)) return undefined;
  const accessToken = unseal(where, sha256(where.handle), row.tokenSealed);
  return accessToken === undefined
    ? undefined
    : { platform: row.platform as P, kind: row.kind, accessToken, tokenExpiresAt: row.tokenExpiresAt };
}

/** Keeps the token for this session and hub for FORM_TOKEN_TTL_MS; returns the handle the page may carry. */
export async function holdPendingToken<P extends string>(
  db: Db,
  input: { sessionId: string; hubId: string; now: Date; token: PendingToken<P> },
): Promise<string> {
  const handle = randomBytes(24).toString('base64url');
  const handleHash = sha256(handle);
  await insertPending(db, {
    handleHash,
    sessionHash: sha256(input.sessionId),
    hubId: input.hubId,
    now: input.now,
    expiresAt: new Date(input.now.getTime() + FORM_TOKEN_TTL_MS),
    platform: input.token.platform,
    kind: input.token.kind,
    tokenSealed: seal(input, handleHash, input.token.accessToken),
    tokenExpiresAt: input.token.tokenExpiresAt,
  });
  return handle;
}

/** The token behind a handle of this session and hub, left in place (to list its accounts); undefined when unknown or expired. */
export async function readPendingToken(db: Db, where: Where): Promise<PendingToken | undefined>;
export async function readPendingToken<P extends string>(
  db: Db,
  where: Where,
  platforms: readonly P[],
): Promise<PendingToken<P> | undefined>;
export async function readPendingToken(db: Db, where: Where, platforms: readonly string[] = AD_PLATFORMS) {
  const row = await findPending(db, keyOfRow(where));
  return row && opened(where, row, platforms);
}

/**
 * Takes the token behind a handle: of two submits of one choice, only one gets it. `putBack`
 * returns it (same handle, same expiry) when the connection it was taken for was refused, so the
 * admin can choose again.
 */
export async function takePendingToken(db: Db, where: Where): Promise<{ token: PendingToken; putBack(): Promise<void> } | undefined>;
export async function takePendingToken<P extends string>(
  db: Db,
  where: Where,
  platforms: readonly P[],
): Promise<{ token: PendingToken<P>; putBack(): Promise<void> } | undefined>;
export async function takePendingToken(db: Db, where: Where, platforms: readonly string[] = AD_PLATFORMS) {
  const key = keyOfRow(where);
  const row = await takePending(db, key);
  if (!row) return undefined;
  const putBack = () =>
    insertPending(db, { ...row, handleHash: key.handleHash, sessionHash: key.sessionHash, hubId: where.hubId, now: where.now });
  const token = opened(where, row, platforms);
  if (!token) {
    // Held for another chooser: left for it.
    if ((platforms as readonly string[]).includes(row.platform) === false) await putBack();
    return undefined;
  }
  return { token, putBack };
}
