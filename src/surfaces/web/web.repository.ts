// Storage of the web admin: sessions (only SHA-256 of the id), one-time "Create key" form tokens,
// and the reads its pages need. Plain SQL on tables of migration 005.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { newKeyMaterial, type KeyScope } from '../../domain/api-keys/api-key.ts';
import { newId } from '../../platform/ids.ts';
import type { EmbedKeyRecord } from './embed-token.ts';

export const SESSION_LIFETIME_MS = 12 * 60 * 60_000;
export const FORM_TOKEN_LIFETIME_MS = 60 * 60_000;

export const sha256 = (text: string): Buffer => createHash('sha256').update(text).digest();
export const randomToken = (): string => randomBytes(32).toString('base64url');

export interface Membership {
  hubId: string;
  hubName: string;
  role: 'hub_admin' | 'member';
  workspaceId: string | null;
  workspaceName: string | null;
}

export interface SessionUser {
  id: string;
  email: string;
  firstname: string;
  lastname: string;
  memberships: Membership[];
}

/** Creates a session; returns the raw id for the cookie (the table keeps its hash). */
export async function createSession(db: Db, userId: string, now: Date): Promise<string> {
  const id = randomToken();
  await sql`DELETE FROM web_sessions WHERE expires_at < ${now}`.execute(db.kysely);
  await sql`INSERT INTO web_sessions (id_hash, user_id, created_at, expires_at)
            VALUES (${sha256(id)}, ${userId}, ${now}, ${new Date(now.getTime() + SESSION_LIFETIME_MS)})`.execute(db.kysely);
  return id;
}

export async function deleteSession(db: Db, sessionId: string): Promise<void> {
  await sql`DELETE FROM web_sessions WHERE id_hash = ${sha256(sessionId)}`.execute(db.kysely);
}

/** The signed-in user with their memberships, or undefined for an unknown or expired session. */
export async function sessionUser(db: Db, sessionId: string, now: Date): Promise<SessionUser | undefined> {
  const result = await sql<{ id: string; email: string; firstname: string; lastname: string; hub_id: string | null; hub_name: string | null; role: 'hub_admin' | 'member' | null; workspace_id: string | null; workspace_name: string | null }>`
    SELECT u.id, u.email, u.firstname, u.lastname, m.hub_id, h.name AS hub_name, m.role, m.workspace_id, w.name AS workspace_name
      FROM web_sessions s
      JOIN users u ON u.id = s.user_id
      LEFT JOIN memberships m ON m.user_id = u.id
      LEFT JOIN hubs h ON h.id = m.hub_id
      LEFT JOIN workspaces w ON w.id = m.workspace_id
     WHERE s.id_hash = ${sha256(sessionId)} AND s.expires_at > ${now}
     ORDER BY h.name, m.hub_id`.execute(db.kysely);
  const first = result.rows[0];
  if (!first) return undefined;
  return {
    id: first.id,
    email: first.email,
    firstname: first.firstname,
    lastname: first.lastname,
    memberships: result.rows.filter((r) => r.hub_id !== null).map((r) => ({
      hubId: r.hub_id!, hubName: r.hub_name!, role: r.role!, workspaceId: r.workspace_id, workspaceName: r.workspace_name,
    })),
  };
}

// ── Create key: one-time form tokens ────────────────────────────────────────────────────────

function sealKey(sessionId: string, key: string): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sha256(`hubops-web-seal:${sessionId}`), iv);
  const body = Buffer.concat([cipher.update(key, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

function unsealKey(sessionId: string, sealed: Buffer): string | undefined {
  try {
    const decipher = createDecipheriv('aes-256-gcm', sha256(`hubops-web-seal:${sessionId}`), sealed.subarray(0, 12));
    decipher.setAuthTag(sealed.subarray(12, 28));
    return Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}

export async function issueFormToken(db: Db, sessionId: string, hubId: string, now: Date): Promise<string> {
  const token = randomToken();
  await sql`DELETE FROM web_form_tokens WHERE expires_at < ${now}`.execute(db.kysely);
  await sql`INSERT INTO web_form_tokens (token_hash, session_hash, hub_id, created_at, expires_at)
            VALUES (${sha256(token)}, ${sha256(sessionId)}, ${hubId}, ${now}, ${new Date(now.getTime() + FORM_TOKEN_LIFETIME_MS)})`.execute(db.kysely);
  return token;
}

export type CreateOutcome = { kind: 'created' | 'already'; keyId: string } | { kind: 'expired' };

/**
 * Consumes the form token and inserts the key in one transaction. The token row is locked, so a
 * second submit of the same form waits, then finds the key already made and creates nothing.
 */
export async function createKeyOnce(db: Db, input: { sessionId: string; formToken: string; hubId: string; name: string; scope: KeyScope; now: Date }): Promise<CreateOutcome> {
  return db.kysely.transaction().execute(async (trx) => {
    const token = await sql<{ key_id: string | null }>`
      SELECT key_id FROM web_form_tokens
       WHERE token_hash = ${sha256(input.formToken)} AND session_hash = ${sha256(input.sessionId)}
         AND hub_id = ${input.hubId} AND expires_at > ${input.now}
       FOR UPDATE`.execute(trx);
    const row = token.rows[0];
    if (!row) return { kind: 'expired' as const };
    if (row.key_id) return { kind: 'already' as const, keyId: row.key_id };
    const key = newKeyMaterial(input.scope);
    const id = newId('key');
    await sql`INSERT INTO api_keys (id, hub_id, name, scope, start, key_hash, public_key)
              VALUES (${id}, ${input.hubId}, ${input.name}, ${input.scope}, ${key.start}, ${key.keyHash}, ${key.publicKey})`.execute(trx);
    await sql`UPDATE web_form_tokens SET key_id = ${id}, key_sealed = ${sealKey(input.sessionId, key.secret)}
               WHERE token_hash = ${sha256(input.formToken)}`.execute(trx);
    return { kind: 'created' as const, keyId: id };
  });
}

/** The new key, once: the sealed copy is erased as it is read. */
export async function revealKeyOnce(db: Db, sessionId: string, formToken: string, hubId: string): Promise<{ keyId: string; key: string | undefined } | undefined> {
  const result = await sql<{ key_id: string | null; key_sealed: Buffer | null }>`
    UPDATE web_form_tokens t SET key_sealed = NULL
      FROM (SELECT token_hash, key_sealed FROM web_form_tokens
             WHERE token_hash = ${sha256(formToken)} AND session_hash = ${sha256(sessionId)} AND hub_id = ${hubId}
             FOR UPDATE) old
     WHERE t.token_hash = old.token_hash
     RETURNING t.key_id, old.key_sealed`.execute(db.kysely);
  const row = result.rows[0];
  if (!row?.key_id) return undefined;
  return { keyId: row.key_id, key: row.key_sealed ? unsealKey(sessionId, row.key_sealed) : undefined };
}

// ── Reads for pages and embeds ──────────────────────────────────────────────────────────────

export async function findEmbedKey(db: Db, keyId: string): Promise<EmbedKeyRecord | undefined> {
  const result = await sql<{ id: string; hub_id: string; scope: KeyScope; revoked_at: Date | null; suspended: boolean; public_key: Buffer | null; key_hash: Buffer | null }>`
    SELECT k.id, k.hub_id, k.scope, k.revoked_at, h.suspended, k.public_key, k.key_hash
      FROM api_keys k JOIN hubs h ON h.id = k.hub_id WHERE k.id = ${keyId}`.execute(db.kysely);
  const r = result.rows[0];
  return r && { id: r.id, hubId: r.hub_id, scope: r.scope, revoked: r.revoked_at !== null, hubSuspended: r.suspended, publicKey: r.public_key, keyHash: r.key_hash };
}

export async function hubName(db: Db, hubId: string): Promise<string | undefined> {
  const result = await sql<{ name: string }>`SELECT name FROM hubs WHERE id = ${hubId}`.execute(db.kysely);
  return result.rows[0]?.name;
}

/** The hub's non-archived custom field keys, in byte order (the CSV's field_<key> columns). */
export async function visibleFieldKeys(db: Db, hubId: string): Promise<string[]> {
  const result = await sql<{ key: string }>`SELECT key FROM workspace_fields WHERE hub_id = ${hubId} AND NOT archived ORDER BY key`.execute(db.kysely);
  return result.rows.map((r) => r.key);
}

export async function hubPlaybooks(db: Db, hubId: string): Promise<{ id: string; name: string }[]> {
  const result = await sql<{ id: string; name: string }>`SELECT id, name FROM playbooks WHERE hub_id = ${hubId} ORDER BY name, id LIMIT 1000`.execute(db.kysely);
  return result.rows;
}

export async function hubWorkspaces(db: Db, hubId: string, limit = 1000): Promise<{ id: string; name: string }[]> {
  const result = await sql<{ id: string; name: string }>`SELECT id, name FROM workspaces WHERE hub_id = ${hubId} ORDER BY name, id LIMIT ${limit}`.execute(db.kysely);
  return result.rows;
}
