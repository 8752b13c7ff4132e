// Reads an `account` line: a franchise group's account.

import { PLANS } from '../../tenancy/tenancy.ts';
import type { FieldReader } from '../field-reader.ts';
import type { AccountRecord } from '../records.ts';

export function readAccount(r: FieldReader): AccountRecord {
  return {
    type: 'account',
    line: r.line,
    id: r.id('account'),
    name: r.name('name'),
    plan: r.oneOf('plan', PLANS, 'standard'),
    apiAccess: r.bool('apiAccess', false),
  };
}
