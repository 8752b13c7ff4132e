import { sql, type Kysely } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database, SocialPlatform } from '../../db/schema.ts';

// Connections of a hub to an organic network (a sealed Meta user token or Google refresh token)
// and the channels they reach, each mapped to a workspace.

export interface ConnectedChannelInput {
  /** Our id for a channel new to the hub (an existing channel of this external id keeps its own). */
  id: string;
  workspaceId: string;
  platform: SocialPlatform;
  name: string;
  externalId: string;
}

/**
 * Deletes the hub's connections no channel references any more, their sealed tokens with them: a
 * reconnect moves channels to a new connection and leaves the old one behind. Run in the
 * transaction that moved them. Nothing else holds a connection: only social_channels references
 * channel_connections (migration 020); insights rows and review syncs hang off the channels and
 * reach a token through the channel's current connection, and a channel never goes back to an old
 * connection (each connect makes a new one), so a connection found unused stays unused.
 */
export async function deleteUnusedConnections(q: Kysely<Database>, hubId: string): Promise<number> {
  const result = await sql`
    DELETE FROM channel_connections k
     WHERE k.hub_id = ${hubId}
       AND NOT EXISTS (SELECT 1 FROM social_channels c WHERE c.hub_id = k.hub_id AND c.connection_id = k.id)`.execute(q);
  return Number(result.numAffectedRows ?? 0);
}

/**
 * Stores a connection and its channels in one transaction: a channel the hub already has for the
 * same network id moves to the new connection (a reconnect: connected again, failure cleared);
 * the others are added, and a connection left with no channel is deleted with its token.
 * Business Profile channels are enrolled in the review sync, due now. Returns the channel ids in
 * the order given.
 */
export async function saveConnection(
  db: Db,
  c: { id: string; hubId: string; platform: 'meta' | 'google_business'; label: string; tokenSealed: Buffer; tokenExpiresAt: Date | null },
  channels: ConnectedChannelInput[],
  now: Date,
): Promise<string[]> {
  return db.kysely.transaction().execute(async (trx) => {
    await trx
      .insertInto('channel_connections')
      .values({
        id: c.id,
        hub_id: c.hubId,
        platform: c.platform,
        label: c.label,
        token_sealed: c.tokenSealed,
        token_expires_at: c.tokenExpiresAt,
      })
      .execute();
    const ids: string[] = [];
    for (const ch of channels) {
      const row = await trx
        .insertInto('social_channels')
        .values({
          id: ch.id,
          hub_id: c.hubId,
          workspace_id: ch.workspaceId,
          platform: ch.platform,
          name: ch.name,
          connection_id: c.id,
          external_id: ch.externalId,
        })
        .onConflict((oc) =>
          oc.columns(['hub_id', 'platform', 'external_id']).where('external_id', 'is not', null).doUpdateSet({
            connection_id: c.id,
            name: ch.name,
            connected: true,
            failure_kind: null,
            failure_message: null,
            failure_code: null,
            failing_since: null,
          }),
        )
        .returning(['id', 'workspace_id'])
        .executeTakeFirstOrThrow();
      ids.push(row.id);
    }
    if (c.platform === 'google_business' && ids.length > 0)
      await sql`
        INSERT INTO review_syncs (channel_id, hub_id, next_sync_at)
        SELECT id, ${c.hubId}, ${now}::timestamptz FROM unnest(${ids}::text[]) AS t(id)
        ON CONFLICT (channel_id) DO UPDATE SET next_sync_at = excluded.next_sync_at, failure_kind = NULL,
          failure_message = NULL, failure_code = NULL, failing_since = NULL, failure_count = 0`.execute(trx);
    await deleteUnusedConnections(trx, c.hubId);
    return ids;
  });
}

export interface NetworkChannelRow {
  id: string;
  workspaceId: string;
  workspaceName: string;
  platform: SocialPlatform;
  name: string;
  externalId: string | null;
  connected: boolean;
  connectionLabel: string | null;
  tokenExpiresAt: Date | null;
  lastPublishedAt: Date | null;
  failureKind: string | null;
  failureMessage: string | null;
  failingSince: Date | null;
}

/** The hub's channels that reach a network (those with a connection), by workspace then name. */
export async function networkChannels(db: Db, hubId: string, platforms: SocialPlatform[]): Promise<NetworkChannelRow[]> {
  const rows = await db.kysely
    .selectFrom('social_channels as c')
    .innerJoin('workspaces as w', (j) => j.onRef('w.hub_id', '=', 'c.hub_id').onRef('w.id', '=', 'c.workspace_id'))
    .leftJoin('channel_connections as k', (j) => j.onRef('k.hub_id', '=', 'c.hub_id').onRef('k.id', '=', 'c.connection_id'))
    .select([
      'c.id',
      'c.workspace_id',
      'w.name as workspace_name',
      'c.platform',
      'c.name',
      'c.external_id',
      'c.connected',
      'k.label',
      'k.token_expires_at',
      'c.last_published_at',
      'c.failure_kind',
      'c.failure_message',
      'c.failing_since',
    ])
    .where('c.hub_id', '=', hubId)
    .where('c.connection_id', 'is not', null)
    .where('c.platform', 'in', platforms)
    .orderBy('w.name')
    .orderBy('c.name')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    workspaceId: r.workspace_id,
    workspaceName: r.workspace_name,
    platform: r.platform,
    name: r.name,
    externalId: r.external_id,
    connected: r.connected,
    connectionLabel: r.label,
    tokenExpiresAt: r.token_expires_at,
    lastPublishedAt: r.last_published_at,
    failureKind: r.failure_kind,
    failureMessage: r.failure_message,
    failingSince: r.failing_since,
  }));
}
