// Reads a `workspaceField` line: a custom field a hub defines for its workspaces.

import { ID_PATTERN } from '../../../platform/ids.ts';
import { shown, type FieldReader } from '../field-reader.ts';
import type { FieldRecord } from '../records.ts';

export function readWorkspaceField(r: FieldReader): FieldRecord {
  const key = r.text('key');
  if (typeof r.raw('key') === 'string' && !ID_PATTERN.test(key)) r.fail('key', `must match ${ID_PATTERN.source}, got ${shown(key)}`);
  return { type: 'workspaceField', line: r.line, hubId: r.ref('hubId'), key, label: r.name('label'), archived: r.bool('archived', false) };
}
