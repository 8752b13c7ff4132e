// The time formats every API accepts, registered once: validation names them in its refusals and
// OpenAPI publishes them as `format`. Use the constants in schemas, so a name cannot drift.
import { isValidDate } from '../../domain/analytics/date-range.ts';
import { parseDate, parseTimestamp } from '../../platform/time.ts';
import { defineFormat } from '../operation.ts';

const RANGE = 'between 1970-01-01 and 9999-12-31';

/** An ISO 8601 timestamp with Z or an offset. */
export const INSTANT = 'instant';
/** A timestamp, or a date (the API says which instant of the day it stands for). */
export const TIMESTAMP_OR_DATE = 'timestamp-or-date';
/** A UTC day, YYYY-MM-DD. */
export const CALENDAR_DATE = 'calendar-date';

defineFormat(INSTANT, (text) => parseTimestamp(text) !== undefined,
  `must be an ISO 8601 timestamp with Z or an offset, like 2026-11-02T09:00:00Z, ${RANGE}`);
defineFormat(TIMESTAMP_OR_DATE, (text) => (parseTimestamp(text) ?? parseDate(text)) !== undefined,
  `must be an ISO 8601 timestamp with Z or an offset (2026-11-02T09:00:00Z) or a date (2026-11-02), ${RANGE}`);
defineFormat(CALENDAR_DATE, isValidDate, `must be a real date YYYY-MM-DD (a UTC day) ${RANGE}`);
