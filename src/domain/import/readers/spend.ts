// Reads a `spend` line: one day's spend of an ad account, for a workspace or unattributed.

import type { FieldReader } from '../field-reader.ts';
import type { SpendRecord } from '../records.ts';

export function readSpend(r: FieldReader): SpendRecord {
  return {
    type: 'spend',
    line: r.line,
    adAccountId: r.ref('adAccountId'),
    // Required even when null: unattributed spend must be said, not implied by a typo.
    workspaceId: r.refOrNull('workspaceId', false),
    date: r.date('date'),
    spendCents: r.cents('spendCents'),
  };
}
