// Storage of the web admin's sessions and one-time "Create key" form tokens (migration 005). Only
// SHA-256 hashes of session ids and form tokens are stored: a copy of the database replays nothing.
import { sql, type Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';

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

/** Stores a session, first dropping the expired ones. */
export async function insertSession(db: Db, session: { idHash: Buffer; userId: string; now: Date; expiresAt: Date }): Promise<void> {
  await sql`DELETE FROM web_sessions WHERE expires_at < ${session.now}`.execute(db.kysely);
  await sql`INSERT INTO web_sessions (id_hash, user_id, created_at, expires_at)
            VALUES (${session.idHash}, ${session.userId}, ${session.now}, ${session.expiresAt})`.execute(db.kysely);
}

export async function deleteSession(db: Db, idHash: Buffer): Promise<void> {
  await sql`DELETE FROM web_sessions WHERE id_hash = ${idHash}`.execute(db.kysely);
}

/** The user of a live session with their memberships (by hub name), or undefined. */
export async function findSessionUser(db: Db, idHash: Buffer, now: Date): Promise<SessionUser | undefined> {
  const result = await sql<{
    id: string;
    email: string;
    firstname: string;
    lastname: string;
    hub_id: string | null;
    hub_name: string | null;
    role: 'hub_admin' | 'member' | null;
    workspace_id: string | null;
    workspace_name: string | null;
  }>`
    SELECT u.id, u.email, u.firstname, u.lastname, m.hub_id, h.name AS hub_name, m.role, m.workspace_id, w.name AS workspace_name
      FROM web_sessions s
      JOIN users u ON u.id = s.user_id
      LEFT JOIN memberships m ON m.user_id = u.id
      LEFT JOIN hubs h ON h.id = m.hub_id
      LEFT JOIN workspaces w ON w.id = m.workspace_id
     WHERE s.id_hash = ${idHash} AND s.expires_at > ${now}
     ORDER BY h.name, m.hub_id`.execute(db.kysely);
  const first = result.rows[0];
  if (!first) return undefined;
  return {
    id: first.id,
    email: first.email,
    firstname: first.firstname,
    lastname: first.lastname,
    memberships: result.rows
      .filter((r) => r.hub_id !== null)
      .map((r) => ({
        hubId: r.hub_id!,
        hubName: r.hub_name!,
        role: r.role!,
        workspaceId: r.workspace_id,
        workspaceName: r.workspace_name,
      })),
  };
}

/** Stores a form token, first dropping the expired ones. */
export async function insertFormToken(
  db: Db,
  token: { tokenHash: Buffer; sessionHash: Buffer; hubId: string; now: Date; expiresAt: Date },
): Promise<void> {
  await sql`DELETE FROM web_form_tokens WHERE expires_at < ${token.now}`.execute(db.kysely);
  await sql`INSERT INTO web_form_tokens (token_hash, session_hash, hub_id, created_at, expires_at)
            VALUES (${token.tokenHash}, ${token.sessionHash}, ${token.hubId}, ${token.now}, ${token.expiresAt})`.execute(db.kysely);
}

/**
 * Locks a live form token of this session and hub until the transaction ends, so a second submit
 * of the same form waits for the first. Its key id once a key was made with it; undefined when
 * there is no such live token.
 */
export async function lockFormToken(
  trx: Transaction<Database>,
  token: { tokenHash: Buffer; sessionHash: Buffer; hubId: string; now: Date },
): Promise<{ keyId: string | null } | undefined> {
  const result = await sql<{ key_id: string | null }>`
    SELECT key_id FROM web_form_tokens
     WHERE token_hash = ${token.tokenHash} AND session_hash = ${token.sessionHash}
       AND hub_id = ${token.hubId} AND expires_at > ${token.now}
       FOR UPDATE`.execute(trx);
  const row = result.rows[0];
  return row && { keyId: row.key_id };
}

/** Marks the token used by the key, and keeps the key sealed until it is shown. */
export async function recordKeyOfFormToken(trx: Transaction<Database>, tokenHash: Buffer, keyId: string, sealedKey: Buffer): Promise<void> {
  await sql`UPDATE web_form_tokens SET key_id = ${keyId}, key_sealed = ${sealedKey} WHERE token_hash = ${tokenHash}`.execute(trx);
}

/** The key made with the token and its sealed copy, which is erased as it is read. */
export async function takeSealedKey(
  db: Db,
  token: { tokenHash: Buffer; sessionHash: Buffer; hubId: string },
): Promise<{ keyId: string; sealed: Buffer | null } | undefined> {
  const result = await sql<{ key_id: string | null; key_sealed: Buffer | null }>`
    UPDATE web_form_tokens t SET key_sealed = NULL
      FROM (SELECT token_hash, key_sealed FROM web_form_tokens
             WHERE token_hash = ${token.tokenHash} AND session_hash = ${token.sessionHash} AND hub_id = ${token.hubId}
             FOR UPDATE) old
     WHERE t.token_hash = old.token_hash
     RETURNING t.key_id, old.key_sealed`.execute(db.kysely);
  const row = result.rows[0];
  return row?.key_id ? { keyId: row.key_id, sealed: row.key_sealed } : undefined;
}
