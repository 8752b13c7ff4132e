import type { Db } from '../../db/database.ts';
import { deleteUnusedConnections } from '../channels/channel-connection.repository.ts';

// Meta channel connections' SQL: a connection (the sealed user token) made with the Facebook Page /
// Instagram channels mapped to workspaces, each with its sealed Page token.

export interface MetaChannelRow {
  id: string;
  workspaceId: string;
  workspaceName: string;
  platform: 'facebook' | 'instagram';
  externalId: string;
  name: string;
  connectionId: string | null;
  failureKind: string | null;
  failureMessage: string | null;
  lastPublishedAt: Date | null;
}

export async function findMetaChannels(db: Db, hubId: string): Promise<MetaChannelRow[]> {
  const rows = await db.kysely
    .selectFrom('social_channels as c')
    .innerJoin('workspaces as w', (j) => j.onRef('w.hub_id', '=', 'c.hub_id').onRef('w.id', '=', 'c.workspace_id'))
    .select([
      'c.id',
      'c.workspace_id',
      'w.name as workspace_name',
      'c.platform',
      'c.external_id',
      'c.name',
      'c.connection_id',
      'c.failure_kind',
      'c.failure_message',
      'c.last_published_at',
    ])
    .where('c.hub_id', '=', hubId)
    .where('c.platform', 'in', ['facebook', 'instagram'])
    .where('c.external_id', 'is not', null)
    .orderBy('c.platform')
    .orderBy('c.name')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    workspaceId: r.workspace_id,
    workspaceName: r.workspace_name,
    platform: r.platform as 'facebook' | 'instagram',
    externalId: r.external_id!,
    name: r.name,
    connectionId: r.connection_id,
    failureKind: r.failure_kind,
    failureMessage: r.failure_message,
    lastPublishedAt: r.last_published_at,
  }));
}

export async function workspaceExists(db: Db, hubId: string, workspaceId: string): Promise<boolean> {
  return (
    (await db.kysely.selectFrom('workspaces').select('id').where('hub_id', '=', hubId).where('id', '=', workspaceId).executeTakeFirst()) !==
    undefined
  );
}

/**
 * A new connection (the sealed user token) and the Pages / Instagram accounts mapped with it, in one
 * transaction: a channel already made for a Page or account (same hub, platform and network id)
 * takes the new connection and token and keeps its workspace (its deliveries name it); otherwise a
 * channel is made in the chosen workspace. A connection the moved channels leave unused is deleted
 * with its user token.
 */
export async function saveMetaConnection(
  db: Db,
  connection: { id: string; hubId: string; label: string; tokenSealed: Buffer; tokenExpiresAt: Date | null },
  channels: {
    newId: string;
    workspaceId: string;
    platform: 'facebook' | 'instagram';
    externalId: string;
    name: string;
    handle: string | null;
    seal(channelId: string): Buffer;
  }[],
): Promise<{ id: string; created: boolean }[]> {
  const { hubId, id: connectionId } = connection;
  return db.kysely.transaction().execute(async (trx) => {
    await trx
      .insertInto('channel_connections')
      .values({
        id: connectionId,
        hub_id: hubId,
        platform: 'meta',
        label: connection.label,
        token_sealed: connection.tokenSealed,
        token_expires_at: connection.tokenExpiresAt,
      })
      .execute();
    const out: { id: string; created: boolean }[] = [];
    for (const c of channels) {
      const existing = await trx
        .selectFrom('social_channels')
        .select('id')
        .where('hub_id', '=', hubId)
        .where('platform', '=', c.platform)
        .where('external_id', '=', c.externalId)
        .forUpdate()
        .executeTakeFirst();
      if (existing) {
        await trx
          .updateTable('social_channels')
          .set({
            connection_id: connectionId,
            token_sealed: c.seal(existing.id),
            connected: true,
            name: c.name,
            failure_kind: null,
            failure_message: null,
            failure_code: null,
            failing_since: null,
          })
          .where('id', '=', existing.id)
          .execute();
        out.push({ id: existing.id, created: false });
      } else {
        await trx
          .insertInto('social_channels')
          .values({
            id: c.newId,
            hub_id: hubId,
            workspace_id: c.workspaceId,
            platform: c.platform,
            name: c.name,
            handle: c.handle,
            connected: true,
            connection_id: connectionId,
            external_id: c.externalId,
            token_sealed: c.seal(c.newId),
          })
          .execute();
        out.push({ id: c.newId, created: true });
      }
    }
    await deleteUnusedConnections(trx, hubId);
    return out;
  });
}
