// Storage of the tokens waiting for an admin's choice of ad accounts (migration 018). Only hashes
// of the handle and the session id are stored, and the token sealed (pending-connection.ts).
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';

export interface PendingRow {
  platform: string;
  kind: 'oauth' | 'system_user';
  tokenSealed: Buffer;
  tokenExpiresAt: Date | null;
}

/** Stores a pending token, first dropping the expired ones. */
export async function insertPending(
  db: Db,
  row: PendingRow & { handleHash: Buffer; sessionHash: Buffer; hubId: string; now: Date; expiresAt: Date },
): Promise<void> {
  await sql`DELETE FROM ad_pending_connections WHERE expires_at < ${row.now}`.execute(db.kysely);
  await sql`INSERT INTO ad_pending_connections (handle_hash, session_hash, hub_id, platform, kind, token_sealed, token_expires_at, created_at, expires_at)
            VALUES (${row.handleHash}, ${row.sessionHash}, ${row.hubId}, ${row.platform}, ${row.kind}, ${row.tokenSealed}, ${row.tokenExpiresAt}, ${row.now}, ${row.expiresAt})`.execute(
    db.kysely,
  );
}

type Key = { handleHash: Buffer; sessionHash: Buffer; hubId: string; now: Date };

const shape = (r: {
  platform: string;
  kind: 'oauth' | 'system_user';
  token_sealed: Buffer;
  token_expires_at: Date | null;
}): PendingRow => ({ platform: r.platform, kind: r.kind, tokenSealed: r.token_sealed, tokenExpiresAt: r.token_expires_at });

/** The live pending token of this handle, session and hub, left in place. */
export async function findPending(db: Db, key: Key): Promise<PendingRow | undefined> {
  const result = await sql<{ platform: string; kind: 'oauth' | 'system_user'; token_sealed: Buffer; token_expires_at: Date | null }>`
    SELECT platform, kind, token_sealed, token_expires_at FROM ad_pending_connections
     WHERE handle_hash = ${key.handleHash} AND session_hash = ${key.sessionHash} AND hub_id = ${key.hubId} AND expires_at > ${key.now}`.execute(
    db.kysely,
  );
  return result.rows[0] && shape(result.rows[0]);
}

/** Takes (deletes and returns) the live pending token: of two concurrent takes, one gets it. */
export async function takePending(db: Db, key: Key): Promise<(PendingRow & { expiresAt: Date }) | undefined> {
  const result = await sql<{
    platform: string;
    kind: 'oauth' | 'system_user';
    token_sealed: Buffer;
    token_expires_at: Date | null;
    expires_at: Date;
  }>`
    DELETE FROM ad_pending_connections
     WHERE handle_hash = ${key.handleHash} AND session_hash = ${key.sessionHash} AND hub_id = ${key.hubId} AND expires_at > ${key.now}
    RETURNING platform, kind, token_sealed, token_expires_at, expires_at`.execute(db.kysely);
  const row = result.rows[0];
  return row && { ...shape(row), expiresAt: row.expires_at };
}
