// Ad accounts and their spend: the ad platforms, an account's sync state, and how fresh a hub's
// spend is. Freshness, first match wins:
// no_accounts → syncing → failed → never_synced → stale (asOf older than 6 h) → fresh.

import type { AdPlatform } from '../../db/schema.ts';
import { SPEND_STALE_AFTER_MS } from '../../policy.ts';
import { utcDate } from '../periods.ts';

export const AD_PLATFORMS: readonly AdPlatform[] = ['meta', 'google_ads', 'chatgpt_ads'];

export const AD_ACCOUNT_SYNC_STATES = ['idle', 'syncing', 'failed'] as const;
export type AdAccountSyncState = (typeof AD_ACCOUNT_SYNC_STATES)[number];

export const FRESHNESS = ['fresh', 'stale', 'syncing', 'failed', 'never_synced', 'no_accounts'] as const;
export type Freshness = (typeof FRESHNESS)[number];

export interface AdAccountSync {
  syncState: AdAccountSyncState;
  lastSyncedAt: Date | null;
}

/** An ad account as the web admin's freshness banner names it. */
export interface AdAccountStatus extends AdAccountSync {
  id: string;
  name: string;
}

/** Why an account's figures may be incomplete or out of date, worst first. */
export const ACCOUNT_CONCERNS = ['failed', 'never_synced', 'syncing', 'stale'] as const;
export type AccountConcern = (typeof ACCOUNT_CONCERNS)[number];

/** What is wrong with one account's figures at `now`, or undefined when they are up to date. */
export function accountConcern(account: AdAccountSync, now: Date): AccountConcern | undefined {
  if (account.syncState === 'failed') return 'failed';
  if (account.syncState === 'syncing') return 'syncing';
  if (account.lastSyncedAt === null) return 'never_synced';
  return now.getTime() - account.lastSyncedAt.getTime() > SPEND_STALE_AFTER_MS ? 'stale' : undefined;
}

const DAY_MS = 86_400_000;

/**
 * A day's spend scaled to the share of the UTC day gone by at `now`. Spend is recorded per day,
 * so "yesterday by this time of day" cannot be counted, only estimated pro rata.
 */
export function proRataToTimeOfDay(cents: number, now: Date): number {
  const elapsed = now.getTime() - Date.parse(`${utcDate(now)}T00:00:00Z`);
  return Math.round((cents * elapsed) / DAY_MS);
}

export function spendFreshness(accounts: AdAccountSync[], now: Date): { freshness: Freshness; asOf: Date | null } {
  const synced = accounts.map((a) => a.lastSyncedAt).filter((d): d is Date => d !== null);
  const asOf = synced.length === 0 ? null : new Date(Math.min(...synced.map((d) => d.getTime())));
  let freshness: Freshness;
  if (accounts.length === 0) freshness = 'no_accounts';
  else if (accounts.some((a) => a.syncState === 'syncing')) freshness = 'syncing';
  else if (accounts.some((a) => a.syncState === 'failed')) freshness = 'failed';
  else if (accounts.some((a) => a.lastSyncedAt === null)) freshness = 'never_synced';
  else if (now.getTime() - asOf!.getTime() > SPEND_STALE_AFTER_MS) freshness = 'stale';
  else freshness = 'fresh';
  return { freshness, asOf };
}
