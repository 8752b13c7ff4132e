import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { saveReviewDays, type ReviewDay } from './review.repository.ts';
import type { RatingCounts } from './review.ts';

// The review sync's SQL: claiming locations (their review_syncs rows are the jobs), the sealed
// token of a location's channel, and storing a read: the reviews, the workspace's review days
// recomputed from them, and the new high-water mark, in one transaction.

export interface ClaimedLocation {
  channelId: string;
  hubId: string;
  workspaceId: string;
  /** `accounts/{a}/locations/{l}`. */
  location: string;
  highWater: Date | null;
  lastFullAt: Date | null;
  failureCount: number;
  failingSince: Date | null;
  /** The channel's own sealed token (AAD: channel id), else the connection's (AAD: connection id). */
  sealed: { token: Buffer; aad: string } | null;
}

/** Adds the sync rows of connected Business Profile channels that have none yet (due now). */
export async function enrolLocations(db: Db, now: Date): Promise<void> {
  await sql`
    INSERT INTO review_syncs (channel_id, hub_id, next_sync_at)
    SELECT c.id, c.hub_id, ${now}::timestamptz FROM social_channels c
     WHERE c.platform = 'google_business' AND c.connection_id IS NOT NULL AND c.connected
    ON CONFLICT (channel_id) DO NOTHING`.execute(db.kysely);
}

/** Due locations, leased to `owner` until `leaseUntil`. */
export async function claimDueLocations(db: Db, owner: string, now: Date, leaseUntil: Date, limit: number): Promise<ClaimedLocation[]> {
  const result = await sql<{
    channel_id: string;
    hub_id: string;
    workspace_id: string;
    external_id: string | null;
    connection_id: string | null;
    channel_token: Buffer | null;
    connection_token: Buffer | null;
    high_water: Date | null;
    last_full_at: Date | null;
    failure_count: number;
    failing_since: Date | null;
  }>`
    WITH claimed AS (
      UPDATE review_syncs SET lease_owner = ${owner}, lease_until = ${leaseUntil}
       WHERE channel_id IN (SELECT channel_id FROM review_syncs
                             WHERE next_sync_at <= ${now} AND (lease_until IS NULL OR lease_until <= ${now})
                             ORDER BY next_sync_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
      RETURNING *
    )
    SELECT s.channel_id, s.hub_id, c.workspace_id, c.external_id, c.connection_id, c.token_sealed AS channel_token,
           k.token_sealed AS connection_token, s.high_water, s.last_full_at, s.failure_count, s.failing_since
      FROM claimed s
      JOIN social_channels c ON c.id = s.channel_id AND c.hub_id = s.hub_id
      LEFT JOIN channel_connections k ON k.hub_id = c.hub_id AND k.id = c.connection_id`.execute(db.kysely);
  return result.rows.map((r) => ({
    channelId: r.channel_id,
    hubId: r.hub_id,
    workspaceId: r.workspace_id,
    location: r.external_id ?? '',
    highWater: r.high_water,
    lastFullAt: r.last_full_at,
    failureCount: r.failure_count,
    failingSince: r.failing_since,
    sealed: r.channel_token
      ? { token: r.channel_token, aad: r.channel_id }
      : r.connection_token && r.connection_id
        ? { token: r.connection_token, aad: r.connection_id }
        : null,
  }));
}

export interface SyncedReview {
  reviewId: string;
  starRating: 1 | 2 | 3 | 4 | 5;
  createdAt: Date;
  updatedAt: Date;
  replied: boolean;
}

/**
 * Stores one read of a location under its lease: upserts the reviews (on a full read, deletes
 * those Google no longer lists), recomputes the workspace's review days that any of them touch
 * from all its synced reviews, and moves the high-water mark. Nothing is written when the lease
 * was lost: it returns false.
 */
export async function storeRead(
  db: Db,
  claim: ClaimedLocation,
  owner: string,
  read: { reviews: SyncedReview[]; full: boolean; now: Date; nextSyncAt: Date },
): Promise<boolean> {
  return db.kysely.transaction().execute(async (trx) => {
    const held = await trx
      .updateTable('review_syncs')
      .set({ lease_until: null, lease_owner: null })
      .where('channel_id', '=', claim.channelId)
      .where('lease_owner', '=', owner)
      .returning('channel_id')
      .executeTakeFirst();
    if (!held) return false;
    const days = new Set<string>();
    if (read.full) {
      const ids = read.reviews.map((r) => r.reviewId);
      const gone = await sql<{ day: string }>`
        DELETE FROM google_reviews WHERE channel_id = ${claim.channelId} AND NOT (review_id = ANY(${ids}::text[]))
        RETURNING to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day`.execute(trx);
      for (const r of gone.rows) days.add(r.day);
    }
    for (let i = 0; i < read.reviews.length; i += 1_000) {
      const chunk = read.reviews.slice(i, i + 1_000);
      await trx
        .insertInto('google_reviews')
        .values(
          chunk.map((r) => ({
            hub_id: claim.hubId,
            workspace_id: claim.workspaceId,
            channel_id: claim.channelId,
            review_id: r.reviewId,
            star_rating: r.starRating,
            created_at: r.createdAt,
            updated_at: r.updatedAt,
            replied: r.replied,
          })),
        )
        .onConflict((oc) =>
          oc.columns(['channel_id', 'review_id']).doUpdateSet((eb) => ({
            star_rating: eb.ref('excluded.star_rating'),
            created_at: eb.ref('excluded.created_at'),
            updated_at: eb.ref('excluded.updated_at'),
            replied: eb.ref('excluded.replied'),
          })),
        )
        .execute();
      for (const r of chunk) days.add(r.createdAt.toISOString().slice(0, 10));
    }
    if (days.size > 0) {
      // Every location of the workspace counts: two locations mapped to one workspace add up.
      const counted = await sql<{ day: string; n1: number; n2: number; n3: number; n4: number; n5: number; responded: number }>`
        SELECT d.day,
               count(*) FILTER (WHERE r.star_rating = 1)::int AS n1, count(*) FILTER (WHERE r.star_rating = 2)::int AS n2,
               count(*) FILTER (WHERE r.star_rating = 3)::int AS n3, count(*) FILTER (WHERE r.star_rating = 4)::int AS n4,
               count(*) FILTER (WHERE r.star_rating = 5)::int AS n5, count(*) FILTER (WHERE r.replied)::int AS responded
          FROM unnest(${[...days]}::date[]) AS d(day)
          LEFT JOIN google_reviews r
            ON r.hub_id = ${claim.hubId} AND r.workspace_id = ${claim.workspaceId}
           AND (r.created_at AT TIME ZONE 'UTC')::date = d.day
         GROUP BY d.day`.execute(trx);
      const reviewDays: ReviewDay[] = counted.rows.map((r) => ({
        hubId: claim.hubId,
        workspaceId: claim.workspaceId,
        date: typeof r.day === 'string' ? r.day : new Date(r.day).toISOString().slice(0, 10),
        newReviews: [r.n1, r.n2, r.n3, r.n4, r.n5] as RatingCounts,
        responded: r.responded,
      }));
      await saveReviewDays(trx, reviewDays);
    }
    const newest = read.reviews.reduce<Date | null>((max, r) => (max === null || r.updatedAt > max ? r.updatedAt : max), claim.highWater);
    await trx
      .updateTable('review_syncs')
      .set({
        high_water: newest,
        last_synced_at: read.now,
        ...(read.full ? { last_full_at: read.now } : {}),
        next_sync_at: read.nextSyncAt,
        failure_kind: null,
        failure_message: null,
        failure_code: null,
        failing_since: null,
        failure_count: 0,
      })
      .where('channel_id', '=', claim.channelId)
      .execute();
    return true;
  });
}

/** Ends a run that failed or was throttled: no review or figure changes; the state says why and when next. */
export async function endFailedRun(
  db: Db,
  claim: ClaimedLocation,
  owner: string,
  outcome: { nextSyncAt: Date; failure?: { kind: string; message: string; code: string | null }; now: Date },
): Promise<void> {
  await db.kysely
    .updateTable('review_syncs')
    .set({
      lease_until: null,
      lease_owner: null,
      next_sync_at: outcome.nextSyncAt,
      ...(outcome.failure
        ? {
            failure_kind: outcome.failure.kind,
            failure_message: outcome.failure.message,
            failure_code: outcome.failure.code,
            failing_since: claim.failingSince ?? outcome.now,
            failure_count: claim.failureCount + 1,
          }
        : {}),
    })
    .where('channel_id', '=', claim.channelId)
    .where('lease_owner', '=', owner)
    .execute();
}

export interface LocationSyncState {
  channelId: string;
  lastSyncedAt: Date | null;
  nextSyncAt: Date;
  failureKind: string | null;
  failureMessage: string | null;
  failingSince: Date | null;
  reviews: number;
}

/** What the admin sees per Business Profile channel of a hub. */
export async function locationSyncStates(db: Db, hubId: string): Promise<LocationSyncState[]> {
  const rows = await db.kysely
    .selectFrom('review_syncs as s')
    .select((eb) => [
      's.channel_id',
      's.last_synced_at',
      's.next_sync_at',
      's.failure_kind',
      's.failure_message',
      's.failing_since',
      eb
        .selectFrom('google_reviews as r')
        .whereRef('r.channel_id', '=', 's.channel_id')
        .select(eb.fn.countAll<string>().as('n'))
        .as('reviews'),
    ])
    .where('s.hub_id', '=', hubId)
    .execute();
  return rows.map((r) => ({
    channelId: r.channel_id,
    lastSyncedAt: r.last_synced_at,
    nextSyncAt: r.next_sync_at,
    failureKind: r.failure_kind,
    failureMessage: r.failure_message,
    failingSince: r.failing_since,
    reviews: Number(r.reviews ?? 0),
  }));
}
