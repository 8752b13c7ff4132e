import { type RawBuilder, sql } from 'kysely';
import { type Db, queryPrepared } from '../../db/database.ts';
import type { DeliveryStatus, MediaContentType, MediaKind, SocialPlatform } from '../../db/schema.ts';
import type { OutgoingPost, Publication } from './connector.ts';

// The publisher's SQL. Claims take rows with FOR UPDATE SKIP LOCKED, so any number of publishers
// (loops, instances) share the queue without waiting on or double-claiming each other's posts.
// Every write of a delivery names the state it leaves and the attempt it belongs to, so a
// publisher that lost its claim (stalled past its lease) cannot overwrite what another recorded.

export interface Claim {
  claimant: string;
  claimedAt: Date;
}

const DELIVERY_KEY = (postId: string, channelId: string) => sql`post_id = ${postId} AND channel_id = ${channelId}`;

/**
 * Posts whose lease ran out while publishing (their publisher died or stalled), claimed afresh.
 * Their deliveries still `publishing` become `unconfirmed`: the dead publisher may have sent them,
 * so they are looked up, never sent again blindly. A post claimed `maxClaims` times already is
 * given up instead: its pending deliveries fail, its unconfirmed ones wait for the reconciler.
 */
export async function reclaimExpired(db: Db, claim: Claim, leaseCutoff: Date, maxClaims: number, limit: number): Promise<string[]> {
  await sql`
    WITH exhausted AS (
      UPDATE posts SET claimed_at = NULL, claimed_by = NULL, retry_at = ${claim.claimedAt}
       WHERE id IN (SELECT id FROM posts
                     WHERE status = 'publishing' AND claimed_at <= ${leaseCutoff} AND attempts >= ${maxClaims}
                     ORDER BY claimed_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
      RETURNING id, attempts
    ), lost AS (
      UPDATE post_deliveries SET status = 'unconfirmed', failure_kind = 'publisher_stopped'
       WHERE post_id IN (SELECT id FROM exhausted) AND status = 'publishing'
    )
    UPDATE post_deliveries d
       SET status = 'failed', failure_kind = 'publisher_stopped', delivered_at = ${claim.claimedAt},
           error = 'not sent: the publisher stopped ' || e.attempts || ' times while publishing this post; schedule it again'
      FROM exhausted e
     WHERE d.post_id = e.id AND d.status = 'pending'`.execute(db.kysely);
  const result = await sql<{ id: string }>`
    WITH claimed AS (
      UPDATE posts SET claimed_at = ${claim.claimedAt}, claimed_by = ${claim.claimant}, attempts = attempts + 1, retry_at = NULL
       WHERE id IN (SELECT id FROM posts
                     WHERE status = 'publishing' AND claimed_at <= ${leaseCutoff}
                     ORDER BY claimed_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
      RETURNING id
    ), lost AS (
      UPDATE post_deliveries SET status = 'unconfirmed', failure_kind = 'publisher_stopped'
       WHERE post_id IN (SELECT id FROM claimed) AND status = 'publishing'
    )
    SELECT id FROM claimed`.execute(db.kysely);
  return result.rows.map((r) => r.id);
}

/**
 * Publishing posts no publisher holds whose wait is over (a throttled channel, an unconfirmed
 * delivery due for its lookup), claimed. A wait is not a crash: it does not count as an attempt.
 */
export async function claimRetries(db: Db, claim: Claim, limit: number): Promise<string[]> {
  const result = await sql<{ id: string }>`
    UPDATE posts SET claimed_at = ${claim.claimedAt}, claimed_by = ${claim.claimant}, retry_at = NULL
     WHERE id IN (SELECT id FROM posts
                   WHERE status = 'publishing' AND claimed_at IS NULL AND retry_at <= ${claim.claimedAt}
                   ORDER BY retry_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
    RETURNING id`.execute(db.kysely);
  return result.rows.map((r) => r.id);
}

/** Scheduled posts that are due, earliest first, now publishing under this claim. */
export async function claimDue(db: Db, claim: Claim, limit: number): Promise<string[]> {
  const result = await sql<{ id: string }>`
    UPDATE posts SET status = 'publishing', claimed_at = ${claim.claimedAt}, claimed_by = ${claim.claimant}, attempts = attempts + 1, retry_at = NULL
     WHERE id IN (SELECT id FROM posts
                   WHERE status = 'scheduled' AND scheduled_at <= ${claim.claimedAt}
                   ORDER BY scheduled_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
    RETURNING id`.execute(db.kysely);
  return result.rows.map((r) => r.id);
}

/** A delivery of a claimed post, with what choosing its connector and secret needs. */
export interface OpenDelivery {
  channelId: string;
  status: DeliveryStatus;
  /** Why it failed (our words), for the post's error. */
  error: string | null;
  attemptStartedAt: Date | null;
  checks: number;
  /** Sends after the first so far (PUBLISH_MAX_RETRIES bounds them). */
  retries: number;
  /** What the network prepared for this attempt when the last was given up (PublishNotReady); null: nothing. */
  prepared: string | null;
  platform: SocialPlatform;
  name: string;
  handle: string | null;
  connected: boolean;
  externalId: string | null;
  connectionId: string | null;
  /** Whether the channel's connection row exists (false also for a sandbox channel). */
  connectionFound: boolean;
  /** The channel's own sealed token (AAD: the channel id), else the connection's (AAD: the connection id). */
  channelTokenSealed: Buffer | null;
  connectionTokenSealed: Buffer | null;
  tokenExpiresAt: Date | null;
}

export interface ClaimedPost {
  post: OutgoingPost;
  /** Every delivery of the post, in its order (the publisher works the pending and unconfirmed ones). */
  deliveries: OpenDelivery[];
}

/** The claimed posts with their media (urls still null: the publisher signs them) and deliveries. */
export async function loadWork(db: Db, ids: string[]): Promise<ClaimedPost[]> {
  if (ids.length === 0) return [];
  const posts = await sql<{ id: string; hub_id: string; workspace_id: string; text: string; media: OutgoingPost['media'] }>`
    SELECT p.id, p.hub_id, p.workspace_id, p.text,
           coalesce((SELECT json_agg(json_build_object('id', m.id, 'kind', m.kind, 'contentType', m.content_type,
                                     'width', m.width, 'height', m.height, 'storageKey', m.storage_key, 'url', null) ORDER BY pm.position)
                       FROM post_media pm JOIN media_assets m ON m.id = pm.media_id WHERE pm.post_id = p.id), '[]') AS media
      FROM posts p
     WHERE p.id = ANY(${ids}::text[])`.execute(db.kysely);
  const deliveries = await sql<{
    post_id: string;
    channel_id: string;
    status: DeliveryStatus;
    error: string | null;
    attempt_started_at: Date | null;
    checks: number;
    retries: number;
    prepared: string | null;
    platform: SocialPlatform;
    name: string;
    handle: string | null;
    connected: boolean;
    external_id: string | null;
    connection_id: string | null;
    connection_found: boolean;
    channel_token_sealed: Buffer | null;
    connection_token_sealed: Buffer | null;
    token_expires_at: Date | null;
  }>`
    SELECT d.post_id, d.channel_id, d.status, d.error, d.attempt_started_at, d.checks, d.retries, d.prepared,
           c.platform, c.name, c.handle, c.connected, c.external_id, c.connection_id,
           cc.id IS NOT NULL AS connection_found, c.token_sealed AS channel_token_sealed,
           cc.token_sealed AS connection_token_sealed,
           CASE WHEN c.token_sealed IS NOT NULL THEN c.token_expires_at ELSE cc.token_expires_at END AS token_expires_at
      FROM post_deliveries d
      JOIN social_channels c ON c.id = d.channel_id
      LEFT JOIN channel_connections cc ON cc.hub_id = c.hub_id AND cc.id = c.connection_id
     WHERE d.post_id = ANY(${ids}::text[])
     ORDER BY d.post_id, d.position`.execute(db.kysely);
  const open = new Map<string, OpenDelivery[]>();
  for (const d of deliveries.rows) {
    const list = open.get(d.post_id) ?? [];
    list.push({
      channelId: d.channel_id,
      status: d.status,
      error: d.error,
      attemptStartedAt: d.attempt_started_at,
      checks: d.checks,
      retries: d.retries,
      prepared: d.prepared,
      platform: d.platform,
      name: d.name,
      handle: d.handle,
      connected: d.connected,
      externalId: d.external_id,
      connectionId: d.connection_id,
      connectionFound: d.connection_found,
      channelTokenSealed: d.channel_token_sealed,
      connectionTokenSealed: d.connection_token_sealed,
      tokenExpiresAt: d.token_expires_at,
    });
    open.set(d.post_id, list);
  }
  return posts.rows.map((r) => ({
    post: {
      id: r.id,
      hubId: r.hub_id,
      workspaceId: r.workspace_id,
      text: r.text,
      media: r.media.map((m) => ({ ...m, kind: m.kind as MediaKind, contentType: m.contentType as MediaContentType })),
    },
    deliveries: open.get(r.id) ?? [],
  }));
}

/** Which state (and attempt) a write expects the delivery in; it changes nothing otherwise. */
export interface DeliveryAt {
  postId: string;
  channelId: string;
  status: DeliveryStatus;
  /** The attempt the delivery is in (null for a pending one). */
  attemptStartedAt: Date | null;
}

/**
 * The delivery's attempt, as an indexable condition (not IS NOT DISTINCT FROM): a publishing or
 * unconfirmed delivery always has one, and the planner may reach such a row through the partial
 * index of publishing and unconfirmed deliveries (post_deliveries_unconfirmed_idx, keyed by the
 * attempt); with equality that reads the one entry, where a filter read every delivery in flight.
 */
const attemptIs = (attempt: Date | null) =>
  attempt === null ? sql`attempt_started_at IS NULL` : sql`attempt_started_at = ${attempt}::timestamptz`;

const expected = (at: DeliveryAt) =>
  sql`${DELIVERY_KEY(at.postId, at.channelId)} AND status = ${at.status} AND ${attemptIs(at.attemptStartedAt)}`;

/**
 * This claim still holds the post. A claimed post is always `publishing` (posts_publishing_check),
 * so the status is not asked for: asking made the partial index of publishing posts
 * (posts_lease_idx, keyed by claimed_at) a candidate, and reading it meant every post of the batch
 * claimed at that instant, where the primary key reads one.
 */
const claimHolds = (postId: string, claim: Claim) =>
  sql`p.id = ${postId} AND p.claimed_by = ${claim.claimant} AND p.claimed_at = ${claim.claimedAt}`;

/** The mark of a delivery as `publishing` (see markPublishing), as a data-modifying statement. */
const markWrite = (at: DeliveryAt, claim: Claim, attempt: Date, retry = false) => sql`
    UPDATE post_deliveries SET status = 'publishing', attempt_started_at = ${attempt}, checks = 0, retries = retries + ${retry ? 1 : 0}, prepared = NULL,
           failure_kind = NULL, platform_message = NULL, platform_code = NULL
     WHERE ${expected(at)}
       AND EXISTS (SELECT 1 FROM posts p WHERE ${claimHolds(at.postId, claim)})`;

/** A delivery to mark `publishing` from `attempt` on, while `claim` holds its post (see markMany). */
export interface Mark {
  at: DeliveryAt;
  claim: Claim;
  attempt: Date;
  /** This send follows one a lookup found never landed: it counts as a retry. */
  retry?: boolean;
}

const deliveryKey = (postId: string, channelId: string) => `${postId}\n${channelId}`;

/** Which of `keys` (post and channel ids) came back in `rows`. */
function returned(rows: { post_id: string; channel_id: string }[], keys: { postId: string; channelId: string }[]): boolean[] {
  const back = new Set(rows.map((r) => deliveryKey(r.post_id, r.channel_id)));
  return keys.map((k) => back.has(deliveryKey(k.postId, k.channelId)));
}

/**
 * Marks each delivery `publishing` from its `attempt` on, committed before its network is called:
 * a publisher that dies from here on leaves it `publishing`, which the next claimant reads as
 * "may have been sent". Only while the mark's claim still holds the post (a publisher whose lease
 * was taken over sends nothing). One statement for all (the publisher's group commit); whether
 * each was marked.
 */
export async function markMany(db: Db, marks: readonly Mark[]): Promise<boolean[]> {
  const rows = await queryPrepared<{ post_id: string; channel_id: string }>(
    db,
    sql`
    UPDATE post_deliveries d
       SET status = 'publishing', attempt_started_at = w.attempt, checks = 0, retries = d.retries + w.retry, prepared = NULL,
           failure_kind = NULL, platform_message = NULL, platform_code = NULL
      FROM unnest(${marks.map((m) => m.at.postId)}::text[], ${marks.map((m) => m.at.channelId)}::text[],
                  ${marks.map((m) => m.at.status)}::text[], ${marks.map((m) => m.at.attemptStartedAt)}::timestamptz[],
                  ${marks.map((m) => m.attempt)}::timestamptz[], ${marks.map((m) => (m.retry ? 1 : 0))}::int[],
                  ${marks.map((m) => m.claim.claimant)}::text[], ${marks.map((m) => m.claim.claimedAt)}::timestamptz[])
           AS w(post_id, channel_id, status, expected_attempt, attempt, retry, claimant, claimed_at)
     WHERE d.post_id = w.post_id AND d.channel_id = w.channel_id AND d.status = w.status
       AND (d.attempt_started_at = w.expected_attempt OR (w.expected_attempt IS NULL AND d.attempt_started_at IS NULL))
       AND EXISTS (SELECT 1 FROM posts p WHERE p.id = w.post_id AND p.claimed_by = w.claimant AND p.claimed_at = w.claimed_at)
    RETURNING d.post_id, d.channel_id`.compile(db.kysely),
  );
  return returned(
    rows,
    marks.map((m) => m.at),
  );
}

/** markMany for one delivery; whether it was marked. */
export async function markPublishing(db: Db, at: DeliveryAt, claim: Claim, attempt: Date, retry = false): Promise<boolean> {
  return (await markMany(db, [{ at, claim, attempt, retry }]))[0]!;
}

/**
 * What becomes of a delivery after its network call when it is not a publication (recordPublishedMany
 * writes those), as the body of a statement: CTEs, the one named `done` returning the delivery's
 * row if the write applied (recordWrite runs one alone; recordThenMark adds the post's next
 * delivery's mark to it).
 */
export type DeliveryWrite = RawBuilder<unknown>;

export const deliveryWrites = {
  /** The delivery failed (nothing was published); the channel shows the failure to the admin. */
  failed: (at: DeliveryAt, failure: DeliveryFailure, now: Date): DeliveryWrite => sql`
    done AS (
      UPDATE post_deliveries
         SET status = 'failed', error = ${failure.error}, failure_kind = ${failure.kind},
             platform_message = ${failure.platformMessage ?? null}, platform_code = ${failure.platformCode ?? null}, delivered_at = ${now}
       WHERE ${expected(at)}
      RETURNING channel_id
    ), channel AS (
      UPDATE social_channels
         SET failure_kind = ${failure.kind}, failure_message = ${failure.platformMessage ?? failure.error},
             failure_code = ${failure.platformCode ?? null}, failing_since = coalesce(failing_since, ${now}::timestamptz)
       WHERE id IN (SELECT channel_id FROM done)
    )`,

  /**
   * The send may have reached the network but no answer did: `unconfirmed`, for the reconciler.
   * `kind` says why (`no_answer`: the call timed out or the connection broke after sending).
   */
  unconfirmed: (at: DeliveryAt, kind: string): DeliveryWrite => sql`
    done AS (
      UPDATE post_deliveries SET status = 'unconfirmed', failure_kind = ${kind}, platform_message = NULL
       WHERE ${expected(at)}
      RETURNING channel_id
    )`,

  /**
   * The call was given up while the network was still preparing the post, before anything was
   * sent: pending again, with what was prepared for the next attempt (`processing`, the connector's words).
   */
  preparing: (at: DeliveryAt, prepared: string, message: string): DeliveryWrite => sql`
    done AS (
      UPDATE post_deliveries SET status = 'pending', attempt_started_at = NULL, prepared = ${prepared}, failure_kind = 'processing', platform_message = ${message}
       WHERE ${expected(at)}
      RETURNING channel_id
    )`,

  /** The network asked us to wait and published nothing: the delivery is pending again. */
  pending: (at: DeliveryAt, platformMessage: string | null): DeliveryWrite => sql`
    done AS (
      UPDATE post_deliveries SET status = 'pending', attempt_started_at = NULL, failure_kind = 'throttled', platform_message = ${platformMessage}
       WHERE ${expected(at)}
      RETURNING channel_id
    )`,
};

/** Runs a delivery write alone; whether it applied. */
export async function recordWrite(db: Db, write: DeliveryWrite): Promise<boolean> {
  const result = await sql<{ n: number }>`WITH ${write} SELECT count(*)::int AS n FROM done`.execute(db.kysely);
  return result.rows[0]!.n === 1;
}

/**
 * A delivery's write and the mark of the post's next delivery as `publishing` (from `attempt`,
 * only while `claim` holds, as markPublishing), in one statement: one commit where there were two,
 * and still each delivery is recorded, and the next one marked, before its network is called.
 */
export async function recordThenMark(
  db: Db,
  write: DeliveryWrite,
  next: { at: DeliveryAt; claim: Claim; attempt: Date },
): Promise<{ recorded: boolean; marked: boolean }> {
  const result = await sql<{ recorded: number; marked: number }>`
    WITH ${write}, marked AS (${markWrite(next.at, next.claim, next.attempt)} RETURNING 1)
    SELECT (SELECT count(*) FROM done)::int AS recorded, (SELECT count(*) FROM marked)::int AS marked`.execute(db.kysely);
  return { recorded: result.rows[0]!.recorded === 1, marked: result.rows[0]!.marked === 1 };
}

/** A delivery the network has: its attempt, the publication, and the post's next delivery to mark, if any. */
export interface PublishedWrite {
  at: DeliveryAt;
  publication: Publication;
  now: Date;
  /** The post's next delivery (pending, never attempted) to mark `publishing` in the same statement, as markMany. */
  next?: Mark | undefined;
}

/**
 * The network has each publication: the delivery is published (from `publishing`, or from
 * `unconfirmed` when a lookup found it or a late answer arrived), and its channel's last publish
 * is now, its failure cleared; the post's next delivery, when given, is marked `publishing` (as
 * markMany: still each delivery is recorded, and the next one marked, before its network is
 * called). One statement for all (the publisher's group commit). A channel row is written at most
 * once a second, as many posts publish to one channel at once, and the channels of one statement
 * are locked in id order, so two publishers' statements cannot deadlock on them.
 */
export async function recordPublishedMany(db: Db, writes: readonly PublishedWrite[]): Promise<{ recorded: boolean; marked: boolean }[]> {
  const rows = await queryPrepared(db, publishedStatement(writes).compile(db.kysely));
  const recorded = returned(
    rows.filter((r) => !r.marked),
    writes.map((w) => w.at),
  );
  const marked = returned(
    rows.filter((r) => r.marked),
    writes.map((w) => w.next?.at ?? { postId: '', channelId: '' }),
  );
  return writes.map((_, i) => ({ recorded: recorded[i]!, marked: marked[i]! }));
}

/** recordPublishedMany's statement: a row per delivery recorded (`marked` false) and per next one marked (true). */
const publishedStatement = (writes: readonly PublishedWrite[]) => sql<{ marked: boolean; post_id: string; channel_id: string }>`
    WITH w AS (
      SELECT * FROM unnest(${writes.map((w) => w.at.postId)}::text[], ${writes.map((w) => w.at.channelId)}::text[],
                           ${writes.map((w) => w.at.attemptStartedAt)}::timestamptz[], ${writes.map((w) => w.publication.externalId)}::text[],
                           ${writes.map((w) => w.publication.url ?? null)}::text[], ${writes.map((w) => w.now)}::timestamptz[],
                           ${writes.map((w) => w.next?.at.channelId ?? null)}::text[], ${writes.map((w) => w.next?.attempt ?? null)}::timestamptz[],
                           ${writes.map((w) => w.next?.claim.claimant ?? null)}::text[], ${writes.map((w) => w.next?.claim.claimedAt ?? null)}::timestamptz[])
               AS w(post_id, channel_id, attempt, external_id, url, now, next_channel, next_attempt, claimant, claimed_at)
    ), done AS (
      UPDATE post_deliveries d
         SET status = 'published', external_id = w.external_id, url = w.url, delivered_at = w.now,
             error = NULL, failure_kind = NULL, platform_message = NULL, platform_code = NULL
        FROM w
       WHERE d.post_id = w.post_id AND d.channel_id = w.channel_id AND d.status IN ('publishing', 'unconfirmed') AND d.attempt_started_at = w.attempt
      RETURNING d.post_id, d.channel_id, w.now
    ), channel AS (
      UPDATE social_channels c
         SET last_published_at = greatest(c.last_published_at, l.now),
             failure_kind = NULL, failure_message = NULL, failure_code = NULL, failing_since = NULL
        FROM (SELECT s.id, x.now
                FROM social_channels s JOIN (SELECT channel_id, max(now) AS now FROM done GROUP BY channel_id) x ON x.channel_id = s.id
               WHERE s.last_published_at IS NULL OR s.last_published_at < x.now - interval '1 second' OR s.failing_since IS NOT NULL
               ORDER BY s.id FOR UPDATE OF s) l
       WHERE c.id = l.id
    ), marked AS (
      UPDATE post_deliveries d
         SET status = 'publishing', attempt_started_at = w.next_attempt, checks = 0, prepared = NULL,
             failure_kind = NULL, platform_message = NULL, platform_code = NULL
        FROM w
       WHERE w.next_channel IS NOT NULL AND d.post_id = w.post_id AND d.channel_id = w.next_channel
         AND d.status = 'pending' AND d.attempt_started_at IS NULL
         AND EXISTS (SELECT 1 FROM posts p WHERE p.id = w.post_id AND p.claimed_by = w.claimant AND p.claimed_at = w.claimed_at)
      RETURNING d.post_id, d.channel_id
    )
    SELECT false AS marked, post_id, channel_id FROM done
     UNION ALL
    SELECT true, post_id, channel_id FROM marked`;

/** recordPublishedMany for one delivery, no next one; whether it was recorded. */
export async function recordPublished(db: Db, at: DeliveryAt, publication: Publication, now: Date): Promise<boolean> {
  return (await recordPublishedMany(db, [{ at, publication, now }]))[0]!.recorded;
}

/** Why a delivery failed: ours (`error`), the kind a person can act on, the network's own words and code. */
export interface DeliveryFailure {
  kind: string;
  error: string;
  platformMessage?: string | undefined;
  platformCode?: string | undefined;
}

export const recordFailed = (db: Db, at: DeliveryAt, failure: DeliveryFailure, now: Date): Promise<boolean> =>
  recordWrite(db, deliveryWrites.failed(at, failure, now));

/**
 * The send published nothing and may succeed later (the network's transient error, or it could not
 * be reached before anything was sent): pending again, with the kind and the network's words and
 * code for the admin, and counted; the new count of retries (0: not recorded).
 */
export async function retryLater(db: Db, at: DeliveryAt, failure: Omit<DeliveryFailure, 'error'>): Promise<number> {
  const result = await sql<{ retries: number }>`
    UPDATE post_deliveries SET status = 'pending', attempt_started_at = NULL, retries = retries + 1, failure_kind = ${failure.kind},
           platform_message = ${failure.platformMessage ?? null}, platform_code = ${failure.platformCode ?? null}
     WHERE ${expected(at)} RETURNING retries`.execute(db.kysely);
  return result.rows[0]?.retries ?? 0;
}

/**
 * Records what a lookup found for an unconfirmed delivery, unless another post's delivery on the
 * channel already holds that publication: a lookup matches by text, so it may find a twin post's
 * (same text, same channel). The check and the write run under the channel row's lock, so two
 * lookups of twin posts cannot both take one publication. Through the channel index: lookups only.
 */
export async function recordFound(
  db: Db,
  at: DeliveryAt,
  publication: Publication,
  now: Date,
): Promise<'recorded' | 'another_post' | 'not_applied'> {
  return db.kysely.transaction().execute(async (tx) => {
    await sql`SELECT 1 FROM social_channels WHERE id = ${at.channelId} FOR UPDATE`.execute(tx);
    const held = await sql<{ held: boolean }>`
      SELECT EXISTS (SELECT 1 FROM post_deliveries
                      WHERE channel_id = ${at.channelId} AND external_id = ${publication.externalId} AND post_id <> ${at.postId}) AS held`.execute(
      tx,
    );
    if (held.rows[0]!.held) return 'another_post';
    // The same write as a publication's answer (the attempt named; from unconfirmed), in this transaction.
    const written = await publishedStatement([{ at, publication, now }]).execute(tx);
    return written.rows.length === 1 ? 'recorded' : 'not_applied';
  });
}

/** A lookup of an unconfirmed delivery could not tell: counted, with the network's words if any; the new count (0: not recorded). */
export async function recordCheckFailed(db: Db, at: DeliveryAt, platformMessage: string | null): Promise<number> {
  const result = await sql<{ checks: number }>`
    UPDATE post_deliveries SET checks = checks + 1, platform_message = ${platformMessage}
     WHERE ${expected(at)} RETURNING checks`.execute(db.kysely);
  return result.rows[0]?.checks ?? 0;
}

/** The deliveries of a post as its outcome needs them, in order. */
export async function deliveryStates(
  db: Db,
  postId: string,
): Promise<{ status: DeliveryStatus; platform: SocialPlatform; name: string; error: string | null }[]> {
  return db.kysely
    .selectFrom('post_deliveries as d')
    .innerJoin('social_channels as c', 'c.id', 'd.channel_id')
    .select(['d.status', 'c.platform', 'c.name', 'd.error'])
    .where('d.post_id', '=', postId)
    .orderBy('d.position')
    .execute();
}

/** What became of a claimed post after a round worked it. */
export interface PostOutcome {
  postId: string;
  claim: Claim;
  status: 'publishing' | 'published' | 'failed';
  error: string | null;
  /** When a post still `publishing` (a delivery waits for a throttle or a lookup) is due again; null: now. */
  retryAt: Date | null;
  now: Date;
}

/**
 * Writes each post's outcome and lets its claim go, but only while that claim still holds it (a
 * publisher whose lease was taken over changes nothing; the claim alone, see claimHolds: a claimed
 * post is publishing). A post still `publishing` waits until its `retryAt`, held by no one. One
 * statement for all (the publisher's group commit); whether each was written.
 */
export async function recordOutcomes(db: Db, outcomes: readonly PostOutcome[]): Promise<boolean[]> {
  const rows = await queryPrepared<{ id: string }>(
    db,
    sql`
    UPDATE posts p
       SET status = w.status, published_at = CASE WHEN w.status = 'published' THEN w.now END, error = w.error,
           retry_at = CASE WHEN w.status = 'publishing' THEN coalesce(w.retry_at, w.now) END, claimed_at = NULL, claimed_by = NULL
      FROM unnest(${outcomes.map((o) => o.postId)}::text[], ${outcomes.map((o) => o.status)}::text[], ${outcomes.map((o) => o.error)}::text[],
                  ${outcomes.map((o) => o.retryAt)}::timestamptz[], ${outcomes.map((o) => o.now)}::timestamptz[],
                  ${outcomes.map((o) => o.claim.claimant)}::text[], ${outcomes.map((o) => o.claim.claimedAt)}::timestamptz[])
           AS w(id, status, error, retry_at, now, claimant, claimed_at)
     WHERE p.id = w.id AND p.claimed_by = w.claimant AND p.claimed_at = w.claimed_at
    RETURNING p.id`.compile(db.kysely),
  );
  const written = new Set(rows.map((r) => r.id));
  return outcomes.map((o) => written.has(o.postId));
}

/** recordOutcomes for one post; whether it was written. */
export async function recordOutcome(
  db: Db,
  postId: string,
  claim: Claim,
  outcome: Pick<PostOutcome, 'status' | 'error' | 'retryAt'>,
  now: Date,
): Promise<boolean> {
  return (await recordOutcomes(db, [{ postId, claim, ...outcome, now }]))[0]!;
}

export interface PublisherBacklog {
  /** Scheduled posts due and not yet claimed. */
  due: number;
  /** The earliest due time among them, or null. */
  oldestDue: Date | null;
  /** Posts being published now (claimed, lease running or expired). */
  publishing: number;
}

/** The publisher's queue, for /metrics: three index-only reads of the partial indexes on due and publishing posts. */
export async function publisherBacklog(db: Db, now: Date): Promise<PublisherBacklog> {
  const result = await sql<{ due: number; oldest_due: Date | null; publishing: number }>`
    SELECT (SELECT count(*) FROM posts WHERE status = 'scheduled' AND scheduled_at <= ${now})::int AS due,
           (SELECT min(scheduled_at) FROM posts WHERE status = 'scheduled' AND scheduled_at <= ${now}) AS oldest_due,
           (SELECT count(*) FROM posts WHERE status = 'publishing')::int AS publishing`.execute(db.kysely);
  const row = result.rows[0]!;
  return { due: row.due, oldestDue: row.oldest_due, publishing: row.publishing };
}
