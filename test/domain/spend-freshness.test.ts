import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { spendFreshness } from '../../src/domain/spend/spend.ts';

describe('spend freshness (first match wins)', () => {
  const now = new Date('2026-11-21T12:00:00Z');
  const synced = (hoursAgo: number) => new Date(now.getTime() - hoursAgo * 3_600_000);
  const cases: [string, Parameters<typeof spendFreshness>[0], string, Date | null][] = [
    ['no accounts', [], 'no_accounts', null],
    [
      'syncing beats failed',
      [
        { syncState: 'failed', lastSyncedAt: synced(1) },
        { syncState: 'syncing', lastSyncedAt: null },
      ],
      'syncing',
      synced(1),
    ],
    [
      'failed beats never synced',
      [
        { syncState: 'failed', lastSyncedAt: synced(1) },
        { syncState: 'idle', lastSyncedAt: null },
      ],
      'failed',
      synced(1),
    ],
    ['never synced', [{ syncState: 'idle', lastSyncedAt: null }], 'never_synced', null],
    [
      'stale after 6 hours',
      [
        { syncState: 'idle', lastSyncedAt: synced(1) },
        { syncState: 'idle', lastSyncedAt: synced(6.01) },
      ],
      'stale',
      synced(6.01),
    ],
    ['fresh at exactly 6 hours', [{ syncState: 'idle', lastSyncedAt: synced(6) }], 'fresh', synced(6)],
  ];
  for (const [label, accounts, freshness, asOf] of cases) {
    test(label, () => assert.deepEqual(spendFreshness(accounts, now), { freshness, asOf }));
  }
});
