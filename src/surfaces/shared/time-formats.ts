// The time formats every API accepts: validation (InputValidator) names them in its refusals and
// OpenAPI publishes them as `format`. Use the constants in schemas, so a name cannot drift.
import { isValidDate } from '../../domain/analytics/date-range.ts';
import { parseDate, parseTimestamp } from '../../platform/time.ts';
import type { StringFormat } from './inputs.ts';

const RANGE = 'between 1970-01-01 and 9999-12-31';

/** An ISO 8601 timestamp with Z or an offset. */
export const INSTANT = 'instant';
/** A timestamp, or a date (the API says which instant of the day it stands for). */
export const TIMESTAMP_OR_DATE = 'timestamp-or-date';
/** A UTC day, YYYY-MM-DD. */
export const CALENDAR_DATE = 'calendar-date';

/** Each with what a refusal says the field accepts. */
export const TIME_FORMATS: readonly StringFormat[] = [
  { name: INSTANT, check: (text) => parseTimestamp(text) !== undefined,
    message: `must be an ISO 8601 timestamp with Z or an offset, like 2026-11-02T09:00:00Z, ${RANGE}` },
  { name: TIMESTAMP_OR_DATE, check: (text) => (parseTimestamp(text) ?? parseDate(text)) !== undefined,
    message: `must be an ISO 8601 timestamp with Z or an offset (2026-11-02T09:00:00Z) or a date (2026-11-02), ${RANGE}` },
  { name: CALENDAR_DATE, check: isValidDate, message: `must be a real date YYYY-MM-DD (a UTC day) ${RANGE}` },
];
