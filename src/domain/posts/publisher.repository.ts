import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { OutgoingChannel, OutgoingPost } from './connector.ts';

// The publisher's SQL. Claims take rows with FOR UPDATE SKIP LOCKED, so any number of publishers
// (loops, instances) share the queue without waiting on or double-claiming each other's posts.

export interface Claim {
  claimant: string;
  claimedAt: Date;
}

/**
 * Posts whose lease ran out while publishing (their publisher died or stalled) and that may be
 * tried again, claimed afresh; those that used up their attempts are marked failed instead.
 */
export async function reclaimExpired(db: Db, claim: Claim, leaseCutoff: Date, maxAttempts: number, limit: number): Promise<string[]> {
  await sql`
    WITH exhausted AS (
      UPDATE posts SET status = 'failed', claimed_at = NULL, claimed_by = NULL,
             error = 'gave up after ' || attempts || ' attempts: the publisher stopped while publishing'
       WHERE id IN (SELECT id FROM posts
                     WHERE status = 'publishing' AND claimed_at <= ${leaseCutoff} AND attempts >= ${maxAttempts}
                     ORDER BY claimed_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
      RETURNING id
    )
    UPDATE post_deliveries SET status = 'failed', error = 'not sent: the post was given up', delivered_at = ${claim.claimedAt}
     WHERE post_id IN (SELECT id FROM exhausted) AND status = 'pending'`.execute(db.kysely);
  const result = await sql<{ id: string }>`
    UPDATE posts SET claimed_at = ${claim.claimedAt}, claimed_by = ${claim.claimant}, attempts = attempts + 1
     WHERE id IN (SELECT id FROM posts
                   WHERE status = 'publishing' AND claimed_at <= ${leaseCutoff}
                   ORDER BY claimed_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
    RETURNING id`.execute(db.kysely);
  return result.rows.map((r) => r.id);
}

/** Scheduled posts that are due, earliest first, now publishing under this claim. */
export async function claimDue(db: Db, claim: Claim, limit: number): Promise<string[]> {
  const result = await sql<{ id: string }>`
    UPDATE posts SET status = 'publishing', claimed_at = ${claim.claimedAt}, claimed_by = ${claim.claimant}, attempts = attempts + 1
     WHERE id IN (SELECT id FROM posts
                   WHERE status = 'scheduled' AND scheduled_at <= ${claim.claimedAt}
                   ORDER BY scheduled_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
    RETURNING id`.execute(db.kysely);
  return result.rows.map((r) => r.id);
}

export interface PendingPost {
  post: OutgoingPost;
  /** Channels not delivered yet, in the post's order. */
  pending: (OutgoingChannel & { connected: boolean })[];
}

/** The claimed posts with their media and the deliveries still to make. */
export async function loadPending(db: Db, ids: string[]): Promise<PendingPost[]> {
  if (ids.length === 0) return [];
  const result = await sql<{
    id: string;
    hub_id: string;
    workspace_id: string;
    text: string;
    media: OutgoingPost['media'];
    pending: PendingPost['pending'];
  }>`
    SELECT p.id, p.hub_id, p.workspace_id, p.text,
           coalesce((SELECT json_agg(json_build_object('id', m.id, 'kind', m.kind, 'contentType', m.content_type,
                                     'width', m.width, 'height', m.height, 'storageKey', m.storage_key, 'url', null) ORDER BY pm.position)
                       FROM post_media pm JOIN media_assets m ON m.id = pm.media_id WHERE pm.post_id = p.id), '[]') AS media,
           coalesce((SELECT json_agg(json_build_object('id', c.id, 'platform', c.platform, 'name', c.name,
                                     'handle', c.handle, 'connected', c.connected, 'externalId', c.external_id, 'secret', null) ORDER BY d.position)
                       FROM post_deliveries d JOIN social_channels c ON c.id = d.channel_id
                      WHERE d.post_id = p.id AND d.status = 'pending'), '[]') AS pending
      FROM posts p
     WHERE p.id = ANY(${ids}::text[])`.execute(db.kysely);
  return result.rows.map((r) => ({
    post: { id: r.id, hubId: r.hub_id, workspaceId: r.workspace_id, text: r.text, media: r.media },
    pending: r.pending,
  }));
}

export type DeliveryResult = { channelId: string; externalId: string } | { channelId: string; error: string };

/**
 * Records one channel's delivery as soon as it is known, before the next channel is sent, so a
 * publisher that dies mid-post re-sends only what was not yet recorded (and that under the same
 * idempotency key). Written only while still pending: the first result recorded wins.
 */
export async function recordDelivery(db: Db, postId: string, result: DeliveryResult, now: Date): Promise<void> {
  const published = 'externalId' in result;
  await db.kysely
    .updateTable('post_deliveries')
    .set({
      status: published ? 'published' : 'failed',
      external_id: published ? result.externalId : null,
      error: published ? null : result.error,
      delivered_at: now,
    })
    .where('post_id', '=', postId)
    .where('channel_id', '=', result.channelId)
    .where('status', '=', 'pending')
    .execute();
}

/**
 * Records a post's outcome from its recorded deliveries: failed (with every failed channel's
 * reason) or published, but only while this claim still holds it — a publisher whose lease was
 * taken over changes nothing. A post with a delivery still pending is left as it is.
 */
export async function recordOutcome(db: Db, postId: string, claim: Claim, now: Date): Promise<void> {
  await sql`
    WITH outcome AS (
      SELECT count(*) FILTER (WHERE d.status = 'pending') AS pending,
             count(*) FILTER (WHERE d.status = 'failed') AS failed,
             string_agg(c.platform || ' channel ' || c.name || ': ' || d.error, '; ' ORDER BY d.position)
               FILTER (WHERE d.status = 'failed') AS errors
        FROM post_deliveries d
        JOIN social_channels c ON c.id = d.channel_id
       WHERE d.post_id = ${postId}
    )
    UPDATE posts p
       SET status = CASE WHEN o.failed > 0 THEN 'failed' ELSE 'published' END,
           published_at = CASE WHEN o.failed > 0 THEN NULL ELSE ${now}::timestamptz END,
           error = o.errors,
           claimed_at = NULL, claimed_by = NULL
      FROM outcome o
     WHERE p.id = ${postId} AND o.pending = 0
       AND p.status = 'publishing' AND p.claimed_by = ${claim.claimant} AND p.claimed_at = ${claim.claimedAt}`.execute(db.kysely);
}
