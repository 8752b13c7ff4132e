// Reads a `hub` line: a brand within an account.

import type { FieldReader } from '../field-reader.ts';
import type { HubRecord } from '../records.ts';

export function readHub(r: FieldReader): HubRecord {
  return {
    type: 'hub',
    line: r.line,
    id: r.id('hub'),
    accountId: r.ref('accountId'),
    name: r.name('name'),
    suspended: r.bool('suspended', false),
  };
}
