import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { inSpan } from '../../platform/tracing.ts';
import { SPEND_SYNC_LEASE_MS } from '../../policy.ts';
import { createRoundLoop } from '../../platform/round-loop.ts';
import { claimDue } from './ad-account.repository.ts';
import { runSync, type EngineDeps, type SyncOutcome } from './sync-engine.ts';

// The background spend sync, one loop per instance, like the post publisher: each round claims
// due ad accounts (FOR UPDATE SKIP LOCKED on the account rows, which are the jobs: any number of
// loops and instances share them without waiting on or double-claiming each other's), leases
// them, and syncs each. A sync whose instance died is claimed again once its lease runs out;
// its committed chunks stay, and it resumes from complete_through.

export interface SpendSyncLoopOptions {
  deps: Omit<EngineDeps, 'leaseMs'> & { leaseMs?: number };
  /** Pause between rounds when there was nothing (or not a full batch) to do. */
  intervalMs: number;
  /** Accounts claimed (and synced at once) per round. */
  batchSize: number;
  /** A round that failed (e.g. the database is down); the loop carries on. */
  onError?: (error: unknown) => void;
}

export interface SpendSyncLoop {
  start(): void;
  /** Stops the loop: syncs in flight are aborted (their committed chunks stay) and awaited. */
  stop(): Promise<void>;
  /** One round: claims and syncs up to a batch; resolves with what each claimed account's run gave. */
  runOnce(): Promise<SyncOutcome[]>;
}

/** A claimant name: which instance holds a lease, for logs and support. */
export const newClaimant = () => `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;

export function createSpendSyncLoop(options: SpendSyncLoopOptions): SpendSyncLoop {
  const deps: EngineDeps = { ...options.deps, leaseMs: options.deps.leaseMs ?? SPEND_SYNC_LEASE_MS };
  const owner = newClaimant();

  async function runOnce(signal: AbortSignal = new AbortController().signal): Promise<SyncOutcome[]> {
    const now = deps.clock.now();
    const ids = await claimDue(deps.db, owner, now, new Date(now.getTime() + deps.leaseMs), options.batchSize);
    // Settled, not raced: a round (and so stop()) ends only when every claimed sync has.
    // Each account's sync a trace of its own (with tracing on): its queries and platform calls under it.
    const outcomes = await Promise.allSettled(
      ids.map((id) => inSpan('spend-sync account', { 'hubops.ad_account.id': id }, () => runSync(deps, id, owner, signal))),
    );
    const failed = outcomes.find((o) => o.status === 'rejected');
    if (failed) throw failed.reason;
    return outcomes.map((o) => (o as PromiseFulfilledResult<SyncOutcome>).value);
  }

  const loop = createRoundLoop({
    round: async (signal) => (await runOnce(signal)).length,
    intervalMs: options.intervalMs,
    batchSize: options.batchSize,
    stopReason: 'the spend sync is stopping',
    onError: options.onError,
  });
  return { ...loop, runOnce };
}
