// Account-local days and hours for the OpenAI Ads API, which buckets insights in the ad account's
// time zone but bounds and labels them with Unix instants (`time_ranges[]` of type `unix_range`,
// each row's `start_time` / `end_time`). The client turns local days into the instants of their
// midnights and each bucket's instant back into a local date and hour; the sandbox builds its
// buckets the same way. DST included: a spring-forward day has 23 hourly buckets, a fall-back day 25
// (its repeated hour twice), and a day whose midnight is skipped begins at the jump.

export const DAY_MS = 86_400_000;
export const HOUR_MS = 3_600_000;

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, f);
  }
  return f;
}

/** The wall clock of `ms` in `zone`, in whole seconds, as milliseconds read as if it were UTC. */
function wallClock(zone: string, ms: number): number {
  const p: Record<string, number> = {};
  for (const part of formatter(zone).formatToParts(ms)) if (part.type !== 'literal') p[part.type] = Number(part.value);
  return Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!);
}

/** Account-local day (days since 1970-01-01), hour and the milliseconds past that hour of an instant. */
export function localHour(zone: string, ms: number): { day: number; hour: number; intoHourMs: number } {
  const wall = wallClock(zone, ms) + (((ms % 1000) + 1000) % 1000);
  const day = Math.floor(wall / DAY_MS);
  const sinceMidnight = wall - day * DAY_MS;
  return { day, hour: Math.floor(sinceMidnight / HOUR_MS), intoHourMs: sinceMidnight % HOUR_MS };
}

const dayStarts = new Map<string, number>();

/**
 * The instant account-local `day` begins: its midnight; the first of two when midnight happens twice;
 * the moment clocks jump when midnight is skipped (America/Santiago, Asia/Beirut). Memoised.
 */
export function startOfLocalDay(zone: string, day: number): number {
  const key = `${zone}|${day}`;
  let start = dayStarts.get(key);
  if (start === undefined) {
    const wall = day * DAY_MS;
    // A zone changes its offset at most once around a midnight: the offsets a day before and a day
    // after are the only candidates; those that give back the wall time are real instants.
    const before = wallClock(zone, wall - DAY_MS) - (wall - DAY_MS);
    const after = wallClock(zone, wall + DAY_MS) - (wall + DAY_MS);
    const real = [wall - before, wall - after].filter((t) => wallClock(zone, t) === wall);
    start = real.length > 0 ? Math.min(...real) : wall - before;
    if (dayStarts.size > 100_000) dayStarts.clear();
    dayStarts.set(key, start);
  }
  return start;
}

/** "2026-03-08" → its day number; NaN for anything that is not a real calendar date. */
export function dayNumber(date: string): number {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) return Number.NaN;
  const ms = Date.parse(`${date}T00:00:00Z`);
  return Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== date ? Number.NaN : ms / DAY_MS;
}

export const dateOf = (day: number): string => new Date(day * DAY_MS).toISOString().slice(0, 10);
