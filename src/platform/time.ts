// Strict parsers for the two time formats every API accepts: ISO 8601 timestamps with `Z` or
// an offset, and calendar dates `YYYY-MM-DD` (UTC days), both within 1970-01-01 … 9999-12-31. `Date.parse` is not used because it
// accepts far more (no zone = local time, `2026-02-30` rolls over to March).

// The one range every date and timestamp we accept must fall in (inclusive). Outside it
// PostgreSQL or JavaScript disagree (year 0, five-digit years) and no real record lives there.
export const MIN_INSTANT = Date.UTC(1970, 0, 1);
const MAX_INSTANT = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
export const DATE_RANGE_MESSAGE = 'must be between 1970-01-01 and 9999-12-31 (UTC)';
const inRange = (at: number): Date | undefined => (at >= MIN_INSTANT && at <= MAX_INSTANT ? new Date(at) : undefined);

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:(Z)|([+-])(\d{2}):?(\d{2}))$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** Milliseconds since the epoch of a real UTC calendar day, or undefined (e.g. 2026-02-30). */
function utcDay(year: number, month: number, day: number): number | undefined {
  if (year < 1 || month < 1 || month > 12 || day < 1) return undefined;
  const date = new Date(0);
  // setUTCFullYear, unlike Date.UTC, does not map years 0–99 to 1900–1999.
  date.setUTCFullYear(year, month - 1, day);
  return date.getUTCMonth() === month - 1 && date.getUTCDate() === day ? date.getTime() : undefined;
}

/**
 * Parses `2026-11-01T10:00:00Z`, `2026-11-01T10:00:00.123+02:00`, `2026-11-01T10:00Z`, …;
 * digits beyond milliseconds are truncated (the API speaks milliseconds). Undefined when invalid.
 */
export function parseTimestamp(text: string): Date | undefined {
  const m = TIMESTAMP.exec(text);
  if (!m) return undefined;
  const day = utcDay(Number(m[1]), Number(m[2]), Number(m[3]));
  const [hour, minute, second] = [Number(m[4]), Number(m[5]), Number(m[6] ?? 0)];
  if (day === undefined || hour > 23 || minute > 59 || second > 59) return undefined;
  const millis = Number((m[7] ?? '').padEnd(3, '0').slice(0, 3));
  let offsetMinutes = 0;
  if (!m[8]) {
    const [offsetHours, offsetMins] = [Number(m[10]), Number(m[11])];
    if (offsetHours > 23 || offsetMins > 59) return undefined;
    offsetMinutes = (m[9] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMins);
  }
  return inRange(day + ((hour * 60 + minute - offsetMinutes) * 60 + second) * 1000 + millis);
}

/** Parses a real calendar date `YYYY-MM-DD` to its 00:00 UTC instant; undefined when invalid or out of range. */
export function parseDate(text: string): Date | undefined {
  const m = DATE.exec(text);
  if (!m) return undefined;
  const day = utcDay(Number(m[1]), Number(m[2]), Number(m[3]));
  return day === undefined ? undefined : inRange(day);
}

const knownZones = new Map<string, boolean>();

/**
 * Whether `name` is an IANA time zone name this runtime knows (`America/Los_Angeles`). Intl also
 * accepts offsets such as "+01:00"; a location's or an ad account's zone must be a name, whose
 * offset follows its DST rules. Answers are memoised (at most 1,000 names).
 */
export function isTimeZoneName(name: string): boolean {
  let known = knownZones.get(name);
  if (known === undefined) {
    known = name.length <= 64 && /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(name);
    if (known) {
      try {
        new Intl.DateTimeFormat('en-US', { timeZone: name });
      } catch {
        known = false;
      }
    }
    if (knownZones.size < 1_000) knownZones.set(name, known);
  }
  return known;
}
