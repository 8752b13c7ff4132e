// Reads a `workspace` line: a location of a hub, its time zone and its custom field values.

import type { FieldValue } from '../../../db/schema.ts';
import { isObject, setEntry, shown, type FieldReader } from '../field-reader.ts';
import type { WorkspaceRecord } from '../records.ts';
import { isTimeZoneName } from '../../../platform/time.ts';

const MAX_FIELD_TEXT = 2_000;

function isFieldValue(value: unknown): value is FieldValue {
  return (
    (typeof value === 'string' && value.length <= MAX_FIELD_TEXT) ||
    typeof value === 'boolean' ||
    (typeof value === 'number' && Number.isFinite(value))
  );
}

export function readWorkspace(r: FieldReader): WorkspaceRecord {
  const id = r.id('workspace');
  const hubId = r.ref('hubId');
  const name = r.name('name');
  const zone = r.raw('timezone');
  let timezone = 'UTC';
  if (zone !== undefined) {
    if (typeof zone === 'string' && isTimeZoneName(zone)) timezone = zone;
    else r.fail('timezone', `must be an IANA time zone like America/Denver, got ${shown(zone)}`);
  }
  const raw = r.raw('fields');
  const fields: Record<string, FieldValue> = {};
  if (raw !== undefined && !isObject(raw)) {
    r.fail('fields', `must be an object of field values, got ${shown(raw)}`);
  } else if (raw) {
    for (const [key, value] of Object.entries(raw)) {
      if (isFieldValue(value)) setEntry(fields, key, value);
      else r.fail(`fields.${key}`, `must be a string (up to ${MAX_FIELD_TEXT} characters), a number or a boolean; got ${shown(value)}`);
    }
  }
  return { type: 'workspace', line: r.line, id, hubId, name, timezone, fields };
}
