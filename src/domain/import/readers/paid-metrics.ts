// Reads a `paidMetrics` line: one day of one campaign's figures for a workspace on an ad platform.

import { AD_PLATFORMS } from '../../spend/spend.ts';
import type { FieldReader } from '../field-reader.ts';
import type { PaidRecord } from '../records.ts';

export function readPaidMetrics(r: FieldReader): PaidRecord {
  return {
    type: 'paidMetrics',
    line: r.line,
    workspaceId: r.ref('workspaceId'),
    date: r.date('date'),
    platform: r.oneOf('platform', AD_PLATFORMS),
    campaignId: r.name('campaignId'),
    campaignName: r.name('campaignName'),
    spendCents: r.cents('spendCents'),
    impressions: r.count('impressions'),
    clicks: r.count('clicks'),
    results: r.count('results'),
  };
}
