import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';

// The organic insights sync's SQL: enrolling published deliveries of connected Meta channels,
// claiming due reads under a lease (FOR UPDATE SKIP LOCKED, as the spend sync claims accounts),
// and writing a read's figures or its failure, only while the lease is still ours.

export interface ClaimedRead {
  postId: string;
  channelId: string;
  hubId: string;
  platform: 'facebook' | 'instagram';
  externalId: string;
  publishedAt: Date;
  channelExternalId: string | null;
  tokenSealed: Buffer | null;
  channelName: string;
  handle: string | null;
}

export interface Figures {
  impressions: number;
  reach: number;
  likes: number;
  comments: number;
  shares: number;
  saves: number;
  clicks: number;
  engagements: number;
}

/**
 * Adds the published deliveries of connected Facebook / Instagram channels that have no insights
 * row yet. Only the networks' ids (digits, Page post ids with "_") are enrolled: a delivery made by
 * the sandbox connector before the channel was connected has nothing to read.
 */
export async function enrolPublished(db: Db, firstReadDelayMs: number): Promise<number> {
  const result = await sql`
    INSERT INTO organic_post_insights (hub_id, workspace_id, post_id, channel_id, platform, external_id, published_at, date, next_fetch_at)
    SELECT d.hub_id, d.workspace_id, d.post_id, d.channel_id, c.platform, d.external_id, d.delivered_at,
           (d.delivered_at AT TIME ZONE 'UTC')::date, d.delivered_at + ${`${firstReadDelayMs} milliseconds`}::interval
      FROM post_deliveries d
      JOIN social_channels c ON c.id = d.channel_id AND c.hub_id = d.hub_id
     WHERE d.status = 'published' AND c.platform IN ('facebook', 'instagram') AND c.connection_id IS NOT NULL
       AND d.external_id ~ '^[0-9]{1,32}(_[0-9]{1,32})?$'
       AND NOT EXISTS (SELECT 1 FROM organic_post_insights i WHERE i.post_id = d.post_id AND i.channel_id = d.channel_id)
    ON CONFLICT DO NOTHING`.execute(db.kysely);
  return Number(result.numAffectedRows ?? 0);
}

export async function claimDueReads(db: Db, owner: string, now: Date, leaseUntil: Date, limit: number): Promise<ClaimedRead[]> {
  const result = await sql<{
    post_id: string;
    channel_id: string;
    hub_id: string;
    platform: 'facebook' | 'instagram';
    external_id: string;
    published_at: Date;
    channel_external_id: string | null;
    token_sealed: Buffer | null;
    name: string;
    handle: string | null;
  }>`
    WITH claimed AS (
      UPDATE organic_post_insights SET lease_owner = ${owner}, lease_until = ${leaseUntil}
       WHERE (post_id, channel_id) IN (
               SELECT post_id, channel_id FROM organic_post_insights
                WHERE next_fetch_at <= ${now} AND (lease_until IS NULL OR lease_until <= ${now})
                ORDER BY next_fetch_at
                LIMIT ${limit} FOR UPDATE SKIP LOCKED)
      RETURNING post_id, channel_id, hub_id, platform, external_id, published_at)
    SELECT k.*, c.external_id AS channel_external_id, c.token_sealed, c.name, c.handle
      FROM claimed k JOIN social_channels c ON c.id = k.channel_id AND c.hub_id = k.hub_id`.execute(db.kysely);
  return result.rows.map((r) => ({
    postId: r.post_id,
    channelId: r.channel_id,
    hubId: r.hub_id,
    platform: r.platform,
    externalId: r.external_id,
    publishedAt: r.published_at,
    channelExternalId: r.channel_external_id,
    tokenSealed: r.token_sealed,
    channelName: r.name,
    handle: r.handle,
  }));
}

/** Stores a read's figures; false when the lease was lost (another instance took the read over). */
export async function saveFigures(
  db: Db,
  key: { postId: string; channelId: string; owner: string },
  figures: Figures,
  at: Date,
  next: Date | null,
): Promise<boolean> {
  const result = await db.kysely
    .updateTable('organic_post_insights')
    .set({
      ...figures,
      has_figures: true,
      fetches: sql`fetches + 1`,
      fetched_at: at,
      next_fetch_at: next,
      lease_owner: null,
      lease_until: null,
      failure_kind: null,
      failure_message: null,
      failure_code: null,
      failed_at: null,
    })
    .where('post_id', '=', key.postId)
    .where('channel_id', '=', key.channelId)
    .where('lease_owner', '=', key.owner)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Records a failed read and when to try again; the stored figures stay as they were. */
export async function saveFailure(
  db: Db,
  key: { postId: string; channelId: string; owner: string },
  failure: { kind: string; message: string; code: string | null } | null,
  at: Date,
  next: Date | null,
): Promise<void> {
  await db.kysely
    .updateTable('organic_post_insights')
    .set({
      next_fetch_at: next,
      lease_owner: null,
      lease_until: null,
      ...(failure ? { failure_kind: failure.kind, failure_message: failure.message, failure_code: failure.code, failed_at: at } : {}),
    })
    .where('post_id', '=', key.postId)
    .where('channel_id', '=', key.channelId)
    .where('lease_owner', '=', key.owner)
    .execute();
}
