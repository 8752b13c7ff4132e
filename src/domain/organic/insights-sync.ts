// The organic insights sync, one loop per instance, like the spend sync (src/domain/ad-sync/
// sync-loop.ts): each round enrols newly published deliveries of connected Facebook / Instagram
// channels, claims due reads (FOR UPDATE SKIP LOCKED under a lease, so instances share the work
// without double reads), reads each publication's lifetime figures through the connector and
// stores them with the next read of the decaying schedule. A failure keeps the stored figures,
// records the kind and the platform's words, and tries again later; a throttle waits for the time
// the network asked; nothing in a read ever stops the loop.
import type { Db } from '../../db/database.ts';
import { PlatformError, PlatformThrottled } from '../../integrations/ad-platform.ts';
import type { Clock } from '../../platform/clock.ts';
import { SealingError, type Sealer } from '../../platform/sealing.ts';
import { createRoundLoop } from '../../platform/round-loop.ts';
import { newClaimant } from '../ad-sync/sync-loop.ts';
import type { OutgoingChannel } from '../posts/connector.ts';
import { claimDueReads, enrolPublished, saveFailure, saveFigures, type ClaimedRead, type Figures } from './insights.repository.ts';
import { INSIGHTS_LEASE_MS, INSIGHTS_RETRY_ADMIN_MS, INSIGHTS_RETRY_MS, INSIGHTS_SCHEDULE_MS, nextReadAt } from './insights-schedule.ts';

/** A publication's figures as a network reports them; null: not reported (stored as 0). */
export interface NetworkInsights {
  impressions: number | null;
  reach: number | null;
  likes: number | null;
  comments: number | null;
  shares: number | null;
  saves: number | null;
  clicks: number | null;
  engagements: number | null;
}

/** What the sync needs of a connector (createMetaPagesConnector gives it). */
export interface InsightsSource {
  insights(channel: OutgoingChannel, externalId: string, signal?: AbortSignal): Promise<NetworkInsights>;
}

export interface InsightsSyncDeps {
  db: Db;
  clock: Clock;
  sealer: Sealer;
  /** By platform: the Meta connector serves both facebook and instagram. */
  sources: Partial<Record<'facebook' | 'instagram', InsightsSource>>;
  leaseMs?: number;
  log?: { warn(obj: object, msg: string): void };
}

export type InsightsOutcome =
  | { postId: string; channelId: string; status: 'read'; next: Date | null }
  | { postId: string; channelId: string; status: 'failed'; kind: string; message: string; next: Date | null }
  | { postId: string; channelId: string; status: 'throttled'; next: Date };

export interface InsightsSyncLoop {
  start(): void;
  stop(): Promise<void>;
  /** One round: enrols, claims up to a batch, reads each; resolves with each read's outcome. */
  runOnce(): Promise<InsightsOutcome[]>;
}

const toFigures = (i: NetworkInsights): Figures => ({
  impressions: i.impressions ?? 0,
  reach: i.reach ?? 0,
  likes: i.likes ?? 0,
  comments: i.comments ?? 0,
  shares: i.shares ?? 0,
  saves: i.saves ?? 0,
  clicks: i.clicks ?? 0,
  engagements: i.engagements ?? 0,
});

export async function readOne(deps: InsightsSyncDeps, read: ClaimedRead, owner: string, signal?: AbortSignal): Promise<InsightsOutcome> {
  const now = deps.clock.now();
  const key = { postId: read.postId, channelId: read.channelId, owner };
  const ids = { postId: read.postId, channelId: read.channelId };
  const scheduled = nextReadAt(read.publishedAt, now);
  try {
    const source = deps.sources[read.platform];
    if (!source) throw new PlatformError('invalid_request', `This server reads no insights from ${read.platform}`);
    if (!read.tokenSealed || !read.channelExternalId)
      throw new PlatformError('needs_reconnect', 'The channel has no token: connect it again from Channels');
    // The Page token, sealed with the channel id as additional data; never logged.
    const secret = deps.sealer.open(read.tokenSealed, read.channelId);
    const channel: OutgoingChannel = {
      id: read.channelId,
      platform: read.platform,
      name: read.channelName,
      handle: read.handle,
      externalId: read.channelExternalId,
      secret,
    };
    const figures = toFigures(await source.insights(channel, read.externalId, signal));
    await saveFigures(deps.db, key, figures, now, scheduled);
    return { ...ids, status: 'read', next: scheduled };
  } catch (error) {
    if (error instanceof PlatformThrottled) {
      const next = new Date(now.getTime() + Math.max(error.retryAfterMs, 1_000));
      await saveFailure(deps.db, key, null, now, next);
      return { ...ids, status: 'throttled', next };
    }
    const failure =
      error instanceof SealingError
        ? {
            kind: 'needs_reconnect',
            message: "the channel's token cannot be opened with this server's secrets key; connect it again",
            code: null,
          }
        : error instanceof PlatformError
          ? { kind: error.kind, message: (error.platformMessage ?? error.message).slice(0, 1_000), code: error.platformCode ?? null }
          : { kind: 'platform_error', message: 'the insights read stopped on an unexpected error; it will be tried again', code: null };
    if (!(error instanceof PlatformError) && !(error instanceof SealingError))
      deps.log?.warn({ postId: read.postId, channelId: read.channelId, err: error }, 'insights read failed');
    const adminMust = failure.kind === 'needs_reconnect' || failure.kind === 'missing_permission';
    const retry = new Date(now.getTime() + (adminMust ? INSIGHTS_RETRY_ADMIN_MS : INSIGHTS_RETRY_MS));
    // Within the schedule: past its last point, a failed read is tried until a day after it, then given up.
    const last = read.publishedAt.getTime() + INSIGHTS_SCHEDULE_MS.at(-1)!;
    const next = retry.getTime() <= last + INSIGHTS_RETRY_ADMIN_MS ? retry : null;
    await saveFailure(deps.db, key, failure, now, next);
    return { ...ids, status: 'failed', kind: failure.kind, message: failure.message, next };
  }
}

export function createInsightsSyncLoop(options: {
  deps: InsightsSyncDeps;
  intervalMs: number;
  batchSize: number;
  onError?: (error: unknown) => void;
}): InsightsSyncLoop {
  const { deps } = options;
  const leaseMs = deps.leaseMs ?? INSIGHTS_LEASE_MS;
  const owner = newClaimant();

  async function runOnce(signal: AbortSignal = new AbortController().signal): Promise<InsightsOutcome[]> {
    await enrolPublished(deps.db, INSIGHTS_SCHEDULE_MS[0]!);
    const now = deps.clock.now();
    const reads = await claimDueReads(deps.db, owner, now, new Date(now.getTime() + leaseMs), options.batchSize);
    const outcomes = await Promise.allSettled(reads.map((read) => readOne(deps, read, owner, signal)));
    const failed = outcomes.find((o) => o.status === 'rejected');
    if (failed) throw failed.reason;
    return outcomes.map((o) => (o as PromiseFulfilledResult<InsightsOutcome>).value);
  }

  const loop = createRoundLoop({
    round: async (signal) => (await runOnce(signal)).length,
    intervalMs: options.intervalMs,
    batchSize: options.batchSize,
    stopReason: 'the insights sync is stopping',
    onError: options.onError,
  });
  return { ...loop, runOnce };
}
