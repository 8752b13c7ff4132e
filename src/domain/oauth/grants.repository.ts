import { createHash } from 'node:crypto';
import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../../db/database.ts';
import { REVOCATION_CHANNEL } from '../../db/revocation-feed.ts';

// OAuth grants as connected apps: the live grants of a user or of hubs, their last use, and the
// one way a grant is revoked (reuse detection, the revocation endpoint and the Connected apps page
// all end in revokeGrant). A grant is named outside the server by its reference: the hex SHA-256
// of its id, which is also the key of its row in oauth_artifacts (ids are stored only hashed).

export interface GrantRow {
  ref: string;
  client_id: string;
  client_name: string | null;
  user_id: string;
  email: string;
  firstname: string;
  lastname: string;
  hub_id: string;
  hub_name: string;
  workspace_id: string | null;
  workspace_name: string | null;
  resources: Record<string, unknown> | null;
  created_at: Date;
  last_used_at: Date | null;
}

/**
 * Grants that `where` selects and that still have a live token: an unexpired access token, or an
 * unexpired refresh token not yet used (a used one was rotated, or its reuse revoked the grant).
 * The token decides, not the grant row's own expiry: an access token can outlive it by its hour.
 * Newest first, at most `limit`.
 */
export async function liveGrants(db: Db, where: RawBuilder<unknown>, limit: number): Promise<GrantRow[]> {
  const { rows } = await sql<GrantRow>`
    SELECT encode(ga.id_hash, 'hex') AS ref, ga.payload->>'clientId' AS client_id, c.metadata->>'client_name' AS client_name,
           g.user_id, u.email, u.firstname, u.lastname, g.hub_id, h.name AS hub_name, g.workspace_id, w.name AS workspace_name,
           ga.payload->'resources' AS resources, g.created_at, gu.last_used_at
      FROM oauth_grant_contexts g
      JOIN oauth_artifacts ga ON ga.model = 'Grant' AND ga.id_hash = sha256(convert_to(g.grant_id, 'UTF8'))
      JOIN users u ON u.id = g.user_id
      JOIN hubs h ON h.id = g.hub_id
      LEFT JOIN workspaces w ON w.hub_id = g.hub_id AND w.id = g.workspace_id
      LEFT JOIN oauth_clients c ON c.client_id = ga.payload->>'clientId'
      LEFT JOIN oauth_grant_usage gu ON gu.grant_id = g.grant_id
     WHERE ${where}
       AND EXISTS (SELECT 1 FROM oauth_artifacts t
                    WHERE t.grant_id = g.grant_id AND t.model IN ('AccessToken', 'RefreshToken')
                      AND (t.expires_at IS NULL OR t.expires_at > now())
                      AND (t.model = 'AccessToken' OR t.consumed_at IS NULL))
     ORDER BY g.created_at DESC, g.grant_id
     LIMIT ${limit}`.execute(db.kysely);
  return rows;
}

/** The grants of one user. */
export const ofUser = (userId: string): RawBuilder<unknown> => sql`g.user_id = ${userId}`;

/** The grants of other users than `userId` acting in these hubs. */
export const ofHubsExceptUser = (hubIds: string[], userId: string): RawBuilder<unknown> =>
  sql`g.hub_id = ANY(${hubIds}::text[]) AND g.user_id <> ${userId}`;

/**
 * The id of the grant with this reference, if it belongs to `userId` or acts in one of `hubIds`
 * (live or not: revoking twice is not an error); undefined otherwise.
 */
export async function grantIdOf(db: Db, ref: string, viewer: { userId: string; hubIds: string[] }): Promise<string | undefined> {
  const { rows } = await sql<{ grant_id: string }>`
    SELECT grant_id FROM oauth_grant_contexts g
     WHERE sha256(convert_to(g.grant_id, 'UTF8')) = decode(${ref}, 'hex')
       AND (g.user_id = ${viewer.userId} OR g.hub_id = ANY(${viewer.hubIds}::text[]))`.execute(db.kysely);
  return rows[0]?.grant_id;
}

/**
 * Revokes a grant and everything issued from it, and tells every instance (NOTIFY in the same
 * transaction; `signal` at once on this one). The grant row goes first (in its own statement,
 * waiting for inserts that hold its key-share lock: see the OAuth storage adapter's upsert); the
 * second statement then sees every token those inserts committed, and later inserts find no grant.
 */
export async function revokeGrant(db: Db, grantId: string, signal: { revoked(): void } | undefined): Promise<void> {
  await db.kysely.transaction().execute(async (trx) => {
    await sql`DELETE FROM oauth_artifacts WHERE model = 'Grant' AND id_hash = ${createHash('sha256').update(grantId).digest()}`.execute(
      trx,
    );
    await sql`WITH gone AS (DELETE FROM oauth_artifacts WHERE grant_id = ${grantId} RETURNING 1)
              SELECT pg_notify(${REVOCATION_CHANNEL}, '') FROM (SELECT count(*) FROM gone) AS n`.execute(trx);
  });
  signal?.revoked();
}

/** Raises each grant's last use to the time given (never lowers it); unknown grants are skipped. */
export async function addGrantUses(db: Db, uses: { grantId: string; at: Date }[]): Promise<void> {
  if (uses.length === 0) return;
  await sql`
    INSERT INTO oauth_grant_usage AS a (grant_id, last_used_at)
    SELECT u.id, u.at
      FROM unnest(${uses.map((u) => u.grantId)}::text[], ${uses.map((u) => u.at.toISOString())}::timestamptz[]) AS u(id, at)
      JOIN oauth_grant_contexts g ON g.grant_id = u.id
     ORDER BY u.id
    ON CONFLICT (grant_id) DO UPDATE SET last_used_at = greatest(a.last_used_at, excluded.last_used_at)`.execute(db.kysely);
}
