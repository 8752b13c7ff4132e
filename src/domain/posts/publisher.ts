import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Db } from '../../db/database.ts';
import type { Clock } from '../../platform/clock.ts';
import { PUBLISH_LEASE_MS } from '../../policy.ts';
import type { Connector, OutgoingChannel, OutgoingPost } from './connector.ts';
import {
  claimDue,
  loadPending,
  reclaimExpired,
  recordDelivery,
  recordOutcome,
  type Claim,
  type DeliveryResult,
} from './publisher.repository.ts';

// The background publisher. Each round claims a small batch of due posts
// (FOR UPDATE SKIP LOCKED: any number of loops and instances share the queue), marks them
// publishing under a lease, sends each to each of its pending channels through the connector,
// recording each delivery before the next is sent, then the post's outcome. A post whose
// publisher died mid-way is claimed again once its lease runs out; only its still-pending
// channels are sent, each under the idempotency key of its first attempt, so a delivery the
// platform made but the dead publisher had not recorded yet is answered, not made again.

export interface PublisherOptions {
  db: Db;
  clock: Clock;
  connector: Connector;
  /** Pause between rounds when there was nothing (or not a full batch) to do. */
  intervalMs: number;
  /** Posts claimed per round. */
  batchSize: number;
  /** How long a claim holds before another publisher may take the post over. Default PUBLISH_LEASE_MS. */
  leaseMs?: number;
  /** Longest wait for one connector call; keep well below the lease. Default 60 s. */
  publishTimeoutMs?: number;
  /** Claims of one post before it is given up as failed. Default 5. */
  maxAttempts?: number;
  /** A round that failed (e.g. the database is down); the loop carries on. */
  onError?: (error: unknown) => void;
}

export interface Publisher {
  /** Starts the loop (a no-op when running). */
  start(): void;
  /** Stops the loop and waits for the round in flight to finish. */
  stop(): Promise<void>;
  /** One round: claims and publishes up to a batch; resolves with the number of posts claimed. */
  runOnce(): Promise<number>;
}

const MAX_ERROR_LENGTH = 1_000;

function reasonOf(error: unknown): string {
  const text = (error instanceof Error ? error.message : String(error)).trim() || 'the platform refused the post';
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH - 1)}…` : text;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the platform did not answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export function createPublisher(options: PublisherOptions): Publisher {
  const { db, clock, connector, intervalMs, batchSize } = options;
  const leaseMs = options.leaseMs ?? PUBLISH_LEASE_MS;
  const publishTimeoutMs = options.publishTimeoutMs ?? 60_000;
  const maxAttempts = options.maxAttempts ?? 5;
  const claimant = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;

  async function deliver(post: OutgoingPost, channel: OutgoingChannel & { connected: boolean }): Promise<DeliveryResult> {
    if (!channel.connected)
      return { channelId: channel.id, error: 'the channel is disconnected; reconnect it and schedule the post again' };
    try {
      const target = {
        id: channel.id,
        platform: channel.platform,
        name: channel.name,
        handle: channel.handle,
        externalId: null,
        secret: null,
      };
      const { externalId } = await withTimeout(connector.publish(post, target), publishTimeoutMs);
      return { channelId: channel.id, externalId };
    } catch (error) {
      return { channelId: channel.id, error: reasonOf(error) };
    }
  }

  async function runOnce(): Promise<number> {
    const claim: Claim = { claimant, claimedAt: clock.now() };
    const reclaimed = await reclaimExpired(db, claim, new Date(claim.claimedAt.getTime() - leaseMs), maxAttempts, batchSize);
    const due = reclaimed.length < batchSize ? await claimDue(db, claim, batchSize - reclaimed.length) : [];
    const claimed = [...reclaimed, ...due];
    const posts = await loadPending(db, claimed);
    // Settled, not raced: a round (and so stop()) ends only when every post's work has.
    const outcomes = await Promise.allSettled(
      posts.map(async ({ post, pending }) => {
        // One channel after another: a platform sees a post's deliveries in the order chosen.
        for (const channel of pending) await recordDelivery(db, post.id, await deliver(post, channel), clock.now());
        await recordOutcome(db, post.id, claim, clock.now());
      }),
    );
    const failed = outcomes.find((o) => o.status === 'rejected');
    if (failed) throw failed.reason;
    return claimed.length;
  }

  let running = false;
  let timer: NodeJS.Timeout | undefined;
  let round: Promise<void> = Promise.resolve();

  const tick = () => {
    round = runOnce()
      .then(
        (claimed) => claimed,
        (error: unknown) => {
          options.onError?.(error);
          return 0;
        },
      )
      .then((claimed) => {
        // A full batch means more may be waiting: go again at once.
        if (running) timer = setTimeout(tick, claimed >= batchSize ? 0 : intervalMs);
      });
  };

  return {
    start() {
      if (running) return;
      running = true;
      tick();
    },
    async stop() {
      running = false;
      clearTimeout(timer);
      await round;
    },
    runOnce,
  };
}
