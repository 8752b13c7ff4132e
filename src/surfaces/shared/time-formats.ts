// The time formats every API accepts, checked by the server (shared/formats.ts): validation names
// them in its refusals; published schemas state their shape as a pattern (or the standard `date`).
// Use these in schemas (checkedString), so a name or a message cannot drift.
import { isValidDate } from '../../domain/analytics/date-range.ts';
import { parseDate, parseTimestamp } from '../../platform/time.ts';
import type { CheckedFormat } from './formats.ts';

const RANGE = 'between 1970-01-01 and 9999-12-31';

// The shapes parseTimestamp and parseDate read (platform/time.ts); they check the rest (a real
// day, hours and offsets in range, the years).
const DATE = '[0-9]{4}-[0-9]{2}-[0-9]{2}';
const TIME = 'T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\\.[0-9]{1,9})?)?(Z|[+-][0-9]{2}:?[0-9]{2})';

// A timestamp whose offset's + became a space: in a query string `+` means a space, so an
// unencoded `2026-01-01T00:00:00+00:00` arrives as `2026-01-01T00:00:00 00:00`.
const PLUS_AS_SPACE = new RegExp(`^${DATE}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\\.[0-9]{1,9})?)? [0-9]{2}:?[0-9]{2}$`);

/** The refusal of a timestamp whose + arrived as a space, saying so. */
function plusAsSpace(text: string): string | undefined {
  if (!PLUS_AS_SPACE.test(text)) return undefined;
  const meant = text.replace(' ', '+');
  return `the + of the offset arrived as a space (in a query string + means a space): encode it as %2B (${meant.replace('+', '%2B')}) or use Z, like 2026-11-02T09:00:00Z`;
}

/** An ISO 8601 timestamp with Z or an offset. */
export const INSTANT: CheckedFormat = {
  name: 'instant',
  check: (text) => parseTimestamp(text) !== undefined,
  explain: plusAsSpace,
  message: `must be an ISO 8601 timestamp with Z or an offset, like 2026-11-02T09:00:00Z, ${RANGE}`,
  published: { pattern: `^${DATE}${TIME}$` },
};

/** A timestamp, or a date (the API says which instant of the day it stands for). */
export const TIMESTAMP_OR_DATE: CheckedFormat = {
  name: 'timestamp-or-date',
  check: (text) => (parseTimestamp(text) ?? parseDate(text)) !== undefined,
  explain: plusAsSpace,
  message: `must be an ISO 8601 timestamp with Z or an offset (2026-11-02T09:00:00Z) or a date (2026-11-02), ${RANGE}`,
  published: { pattern: `^${DATE}(${TIME})?$` },
};

/** A UTC day, YYYY-MM-DD: JSON Schema's standard `date` (RFC 3339 full-date), within our range. */
export const CALENDAR_DATE: CheckedFormat = {
  name: 'calendar-date',
  check: isValidDate,
  message: `must be a real date YYYY-MM-DD (a UTC day) ${RANGE}`,
  published: { format: 'date' },
};
