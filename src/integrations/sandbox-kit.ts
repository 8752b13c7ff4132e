// What the loopback sandboxes of the ad platforms share (meta/, google-ads/, openai-ads/): a
// cheap deterministic hash for generated spend, UTC day numbers, and which local hours a day has
// in an account's time zone. Sandboxes only: the wire clients do not use it.

const DAY_MS = 86_400_000;

/** A 32-bit integer hash (lowbias32): cheap, well mixed, deterministic. */
export function mix(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d);
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b);
  return (x ^ (x >>> 16)) >>> 0;
}

export function hashText(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export const dayNumber = (date: string) => Date.parse(`${date}T00:00:00Z`) / DAY_MS;
export const dateOf = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);
export const isDate = (text: unknown): text is string =>
  typeof text === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(text) && dateOf(dayNumber(text)) === text;

// --- Time zones: the account-local "now", and which local hours a date has (23 on a spring-forward day).

const formatters = new Map<string, Intl.DateTimeFormat>();
export function localParts(zone: string, ms: number): { day: number; hour: number; minute: number } {
  let format = formatters.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
    });
    formatters.set(zone, format);
  }
  const p: Record<string, number> = {};
  for (const part of format.formatToParts(ms)) if (part.type !== 'literal') p[part.type] = Number(part.value);
  return { day: Date.UTC(p.year!, p.month! - 1, p.day!) / DAY_MS, hour: p.hour!, minute: p.minute! };
}

const offsetMs = (zone: string, ms: number) => {
  const local = localParts(zone, ms);
  return local.day * DAY_MS + local.hour * 3_600_000 + local.minute * 60_000 - Math.floor(ms / 60_000) * 60_000;
};

export const ALL_HOURS = Array.from({ length: 24 }, (_, h) => h);
const hoursCache = new Map<string, number[]>();
/** The local hours that exist on a local day: all 24, except the hour skipped when clocks spring forward. */
export function hoursOf(zone: string, day: number): number[] {
  const key = `${zone}|${day}`;
  let hours = hoursCache.get(key);
  if (!hours) {
    const midnight = day * DAY_MS;
    if (offsetMs(zone, midnight - offsetMs(zone, midnight)) === offsetMs(zone, midnight + DAY_MS - offsetMs(zone, midnight + DAY_MS))) {
      hours = ALL_HOURS;
    } else {
      hours = ALL_HOURS.filter((h) => {
        const wall = midnight + h * 3_600_000;
        return [offsetMs(zone, wall - 14 * 3_600_000), offsetMs(zone, wall + 14 * 3_600_000)].some((offset) => {
          const local = localParts(zone, wall - offset);
          return local.day === day && local.hour === h;
        });
      });
    }
    if (hoursCache.size > 100_000) hoursCache.clear();
    hoursCache.set(key, hours);
  }
  return hours;
}
