// Ad platforms report spend in the ad account's time zone; hubops counts spend in UTC days. Each
// account-local hour is placed at its UTC instant with the account's IANA zone, DST included: a
// spring-forward day has 23 hours, a fall-back day 25, and each hour lands on the UTC day it was
// spent in. An hour that does not exist (spring forward) is read with the offset before the
// change; an hour that happens twice (fall back) is placed at its first occurrence (the platform
// reports it as one bucket).

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(zone, f);
  }
  return f;
}

/** The wall-clock fields of `ms` in `zone`, read as if they were UTC: minus `ms`, the zone's offset. */
function wallClockAsUtc(ms: number, zone: string): number {
  const p: Record<string, number> = {};
  for (const part of formatter(zone).formatToParts(new Date(ms))) if (part.type !== 'literal') p[part.type] = Number(part.value);
  return Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!);
}

const offsetAt = (ms: number, zone: string) => wallClockAsUtc(ms, zone) - ms;

/** The UTC instant at which account-local `date` `hour`:00 began in `zone`. */
export function localHourToUtc(date: string, hour: number, zone: string): Date {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const wall = Date.UTC(y, m - 1, d, hour);
  // A zone changes its offset at most once around a given hour: the offsets a day before and a
  // day after are the only candidates. Those that give back the wall time are real instants (two
  // when the hour happens twice: the first wins); none when the hour does not exist.
  const before = offsetAt(wall - 86_400_000, zone);
  const after = offsetAt(wall + 86_400_000, zone);
  const real = [wall - before, wall - after].filter((t) => wallClockAsUtc(t, zone) === wall);
  return new Date(real.length > 0 ? Math.min(...real) : wall - before);
}

/** Account-local day of an instant in `zone`, YYYY-MM-DD. */
export function localDate(at: Date, zone: string): string {
  return new Date(wallClockAsUtc(at.getTime(), zone)).toISOString().slice(0, 10);
}

/** `date` plus `days` (negative: minus), YYYY-MM-DD. */
export function addDays(date: string, days: number): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
}

export const minDate = (a: string, b: string) => (a < b ? a : b);
export const maxDate = (a: string, b: string) => (a > b ? a : b);

/**
 * The UTC day of an account-local hour, memoised per zone (a backfill asks the same few thousand
 * hours millions of times). A row without an hour (the platform withheld hours) counts on the UTC
 * day equal to its local day: the documented fallback.
 */
export class UtcDayMapper {
  readonly #zone: string;
  /** Per local date, the UTC day of each of its 24 hours (filled as asked). */
  readonly #memo = new Map<string, (string | undefined)[]>();
  /** The last date asked and its hours: rows come grouped by day, so most skip the map. */
  #lastDate = '';
  #lastHours: (string | undefined)[] = [];
  constructor(zone: string) {
    this.#zone = zone;
  }
  utcDay(date: string, hour: number | null): string {
    if (hour === null) return date;
    if (date !== this.#lastDate) {
      let hours = this.#memo.get(date);
      if (hours === undefined) this.#memo.set(date, (hours = new Array<string | undefined>(24)));
      this.#lastDate = date;
      this.#lastHours = hours;
    }
    return (this.#lastHours[hour] ??= localHourToUtc(date, hour, this.#zone).toISOString().slice(0, 10));
  }
}
