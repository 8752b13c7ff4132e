import type { Db } from '../../db/database.ts';
import { PlatformError, PlatformThrottled } from '../../integrations/ad-platform.ts';
import { type GoogleBusinessClient, LOCATION_NAME } from '../../integrations/google-business/client.ts';
import type { Clock } from '../../platform/clock.ts';
import { createRoundLoop, type RoundLoop } from '../../platform/round-loop.ts';
import { SealingError, type Sealer } from '../../platform/sealing.ts';
import {
  REVIEW_FULL_READ_MS,
  REVIEW_SYNC_INTERVAL_MS,
  REVIEW_SYNC_JITTER_MS,
  REVIEW_SYNC_LEASE_MS,
  REVIEW_SYNC_STUCK_RETRY_MS,
} from '../../policy.ts';
import { newClaimant } from '../ad-sync/sync-loop.ts';
import { RETRY_BACKOFF_MS } from '../ad-sync/sync-engine.ts';
import {
  claimDueLocations,
  endFailedRun,
  enrolLocations,
  storeRead,
  type ClaimedLocation,
  type SyncedReview,
} from './review-sync.repository.ts';

// Google reviews that come back by themselves. Each connected Business Profile location syncs
// hourly: its reviews are read newest update first (reviews.list, orderBy updateTime desc) and the
// read stops at the first review older than the newest one stored, so an hourly read costs one
// page; once a week a location is read whole, which is how a review Google removed leaves the
// counts. A read is stored in one transaction (reviews, the workspace's review days, the mark), so
// a failure or a throttle changes no stored figure. Failures keep the platform's words for the
// admin; a throttle waits; "API access not yet approved", a revoked login or a missing permission
// are retried daily until the operator or an admin mends them.

export interface ReviewSyncDeps {
  db: Db;
  clock: Clock;
  client: GoogleBusinessClient;
  sealer: Sealer;
  log?: { warn(o: object, m: string): void; info(o: object, m: string): void };
  random?: () => number;
}

export type ReviewSyncOutcome =
  | { channelId: string; status: 'synced'; reviews: number; full: boolean }
  | { channelId: string; status: 'rescheduled'; until: Date }
  | { channelId: string; status: 'failed'; failureKind: string; message: string }
  | { channelId: string; status: 'lease_lost' };

/** Kinds only a person mends: retried daily, not on the backoff. */
const STUCK = ['needs_reconnect', 'missing_permission', 'not_approved', 'invalid_request'];

async function syncLocation(deps: ReviewSyncDeps, claim: ClaimedLocation, owner: string, signal: AbortSignal): Promise<ReviewSyncOutcome> {
  const { channelId } = claim;
  const now = deps.clock.now();
  try {
    if (!LOCATION_NAME.test(claim.location) || claim.sealed === null)
      throw new PlatformError(
        'needs_reconnect',
        'the channel has no Business Profile location or token; connect Google Business Profile again',
      );
    const refreshToken = deps.sealer.open(claim.sealed.token, claim.sealed.aad);
    const full = claim.lastFullAt === null || claim.highWater === null || now.getTime() - claim.lastFullAt.getTime() >= REVIEW_FULL_READ_MS;
    const reviews: SyncedReview[] = [];
    let pageToken: string | null = null;
    read: do {
      const page = await deps.client.reviewPage(refreshToken, claim.location, pageToken, signal);
      for (const r of page.reviews) {
        const updatedAt = new Date(r.updateTime);
        // Newest update first: everything from here on is stored already (equal times are read again, harmlessly).
        if (!full && claim.highWater && updatedAt < claim.highWater) break read;
        reviews.push({
          reviewId: r.reviewId,
          starRating: r.starRating,
          createdAt: new Date(r.createTime),
          updatedAt,
          replied: r.repliedAt !== null,
        });
      }
      pageToken = page.nextPageToken;
    } while (pageToken);
    const jitter = Math.floor((deps.random ?? Math.random)() * REVIEW_SYNC_JITTER_MS);
    const stored = await storeRead(deps.db, claim, owner, {
      reviews,
      full,
      now,
      nextSyncAt: new Date(now.getTime() + REVIEW_SYNC_INTERVAL_MS + jitter),
    });
    if (!stored) return { channelId, status: 'lease_lost' };
    return { channelId, status: 'synced', reviews: reviews.length, full };
  } catch (error) {
    if (error instanceof PlatformThrottled) {
      const until = new Date(now.getTime() + error.retryAfterMs);
      await endFailedRun(deps.db, claim, owner, { nextSyncAt: until, now });
      deps.log?.info({ channelId, until }, 'review sync rescheduled: Google asked us to slow down');
      return { channelId, status: 'rescheduled', until };
    }
    const failure =
      error instanceof PlatformError
        ? { kind: error.kind, message: (error.platformMessage ?? error.message).slice(0, 1_000), code: error.platformCode ?? null }
        : error instanceof SealingError
          ? {
              kind: 'needs_reconnect',
              message: "the stored token cannot be opened with this server's secrets key; connect again",
              code: null,
            }
          : { kind: 'platform_error', message: 'the review sync stopped on an unexpected error; it will be retried', code: null };
    // Ours, for the admin's status line: Google's own words are kept in `message` above when it gave some.
    const ours = error instanceof PlatformError ? error.message : failure.message;
    if (!(error instanceof PlatformError || error instanceof SealingError))
      deps.log?.warn({ channelId, err: error }, 'review sync failed unexpectedly');
    else deps.log?.warn({ channelId, failureKind: failure.kind, code: failure.code }, 'review sync failed');
    const wait = STUCK.includes(failure.kind)
      ? REVIEW_SYNC_STUCK_RETRY_MS
      : RETRY_BACKOFF_MS[Math.min(claim.failureCount, RETRY_BACKOFF_MS.length - 1)]!;
    await endFailedRun(deps.db, claim, owner, { nextSyncAt: new Date(now.getTime() + wait), failure, now });
    return { channelId, status: 'failed', failureKind: failure.kind, message: ours };
  }
}

export interface ReviewSyncLoop extends RoundLoop {
  /** One round: enrols new locations, claims due ones and syncs them. */
  runOnce(signal?: AbortSignal): Promise<ReviewSyncOutcome[]>;
}

export function createReviewSyncLoop(o: {
  deps: ReviewSyncDeps;
  intervalMs: number;
  batchSize: number;
  leaseMs?: number;
  onError?: (error: unknown) => void;
}): ReviewSyncLoop {
  const owner = newClaimant();
  const leaseMs = o.leaseMs ?? REVIEW_SYNC_LEASE_MS;
  async function runOnce(signal: AbortSignal = new AbortController().signal): Promise<ReviewSyncOutcome[]> {
    const now = o.deps.clock.now();
    await enrolLocations(o.deps.db, now);
    const claims = await claimDueLocations(o.deps.db, owner, now, new Date(now.getTime() + leaseMs), o.batchSize);
    const outcomes = await Promise.allSettled(claims.map((claim) => syncLocation(o.deps, claim, owner, signal)));
    const failed = outcomes.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    return outcomes.map((r) => (r as PromiseFulfilledResult<ReviewSyncOutcome>).value);
  }
  const loop = createRoundLoop({
    round: async (signal) => (await runOnce(signal)).length,
    intervalMs: o.intervalMs,
    batchSize: o.batchSize,
    stopReason: 'the review sync is stopping',
    onError: o.onError,
  });
  return { ...loop, runOnce };
}
