// Reads an `adAccount` line: a hub's account on an ad platform, and how its last sync went.

import { AD_ACCOUNT_SYNC_STATES, AD_PLATFORMS } from '../../spend/spend.ts';
import type { FieldReader } from '../field-reader.ts';
import type { AdAccountRecord } from '../records.ts';

export function readAdAccount(r: FieldReader): AdAccountRecord {
  return {
    type: 'adAccount',
    line: r.line,
    id: r.id('adAccount'),
    hubId: r.ref('hubId'),
    platform: r.oneOf('platform', AD_PLATFORMS),
    name: r.name('name'),
    syncState: r.oneOf('syncState', AD_ACCOUNT_SYNC_STATES, 'idle'),
    lastSyncedAt: r.timestampOrNull('lastSyncedAt'),
  };
}
