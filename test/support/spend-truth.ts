// What the spend report must say, computed from a sandbox's hourly ground truth without the
// engine's code: each account-local (date, hour) shifted to its UTC day by this file's own Intl
// offset code, summed in micros per (UTC day, account, campaign, ad set), rounded once half away
// from zero to cents, attributed by the first `[ws:…]` token naming a workspace of the hub (ad
// set's name, then campaign's), else the account's default workspace, else unattributed, then
// summed over the documented UTC date ranges (docs/hub-api.md).
import assert from 'node:assert/strict';

const offsetFormats = new Map<string, Intl.DateTimeFormat>();
/** The zone's UTC offset at an instant, in ms, from Intl's "GMT+01:00" name. */
function zoneOffsetMs(zone: string, instant: number): number {
  let format = offsetFormats.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' });
    offsetFormats.set(zone, format);
  }
  const name = format.formatToParts(instant).find((p) => p.type === 'timeZoneName')!.value;
  if (name === 'GMT') return 0;
  const m = /^GMT([+-])(\d{2}):(\d{2})$/.exec(name);
  assert.ok(m, `unexpected offset name ${name}`);
  return (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) * 60_000;
}

/**
 * The UTC day in which the account-local hour (date, hour) starts: the instants that read that wall
 * clock are wall − offset for an offset the zone has at that instant; on a fall-back day there are
 * two (both in the same UTC day for the zones tested), the earlier is taken; a skipped hour has none.
 */
export function utcDayOf(zone: string, date: string, hour: number): string {
  const wall = Date.parse(`${date}T${String(hour).padStart(2, '0')}:00:00Z`);
  const offsets = new Set([zoneOffsetMs(zone, wall - 86_400_000), zoneOffsetMs(zone, wall), zoneOffsetMs(zone, wall + 86_400_000)]);
  const starts = [...offsets].map((o) => wall - o).filter((u) => zoneOffsetMs(zone, u) === wall - u);
  assert.ok(starts.length > 0, `${date} ${hour}:00 does not exist in ${zone}`);
  return new Date(Math.min(...starts)).toISOString().slice(0, 10);
}

/** Micros to cents, half away from zero. */
export function roundCents(micros: bigint): number {
  const sign = micros < 0n ? -1n : 1n;
  const abs = micros * sign;
  return Number(((abs + 5_000n) / 10_000n) * sign);
}

export interface TruthAccount {
  id: string;
  zone: string;
  adSets: { id: string; name: string; campaignId: string; campaignName: string }[];
  /** The account's default workspace: spend no token claims goes there. */
  defaultWorkspace?: string;
  /** The sandbox's hourly spend of the account (account-local date and hour). */
  hourly: { date: string; hour: number; campaignId: string; adSetId: string; spendMicros: bigint }[];
}

export interface TruthLine {
  day: string;
  /** '' when unattributed. */
  workspace: string;
  cents: number;
}

const TOKEN = /\[ws:([^\]\s]+)\]/;

/** Cents per (UTC day, account, campaign, ad set) with the workspace each goes to. */
export function expectedLines(accounts: TruthAccount[], workspaces: readonly string[]): TruthLine[] {
  const micros = new Map<string, { day: string; workspace: string; micros: bigint }>();
  for (const a of accounts) {
    const adSets = new Map(a.adSets.map((s) => [s.id, s]));
    for (const r of a.hourly) {
      const adSet = adSets.get(r.adSetId);
      assert.ok(adSet, `${a.id}: the sandbox served an unknown ad set ${r.adSetId}`);
      assert.equal(r.campaignId, adSet.campaignId);
      const day = utcDayOf(a.zone, r.date, r.hour);
      const key = `${day}|${a.id}|${r.campaignId}|${r.adSetId}`;
      let line = micros.get(key);
      if (!line) {
        // The first token naming a workspace of the hub (ad set's, then campaign's), else the default.
        const named = [TOKEN.exec(adSet.name)?.[1], TOKEN.exec(adSet.campaignName)?.[1]].find(
          (w) => w !== undefined && workspaces.includes(w),
        );
        line = { day, workspace: named ?? a.defaultWorkspace ?? '', micros: 0n };
        micros.set(key, line);
      }
      line.micros += r.spendMicros;
    }
  }
  return [...micros.values()].map((l) => ({ day: l.day, workspace: l.workspace, cents: roundCents(l.micros) }));
}

export type Range = { startDate: string; endDate: string };

/** The documented ranges (docs/hub-api.md): UTC days, D = today; prior = the same number of days just before. */
export function documentedRanges(
  period: 'today' | 'yesterday' | 'last_7_days' | 'last_30_days',
  now: string,
): { current: Range; prior: Range } {
  const days = { today: 1, yesterday: 1, last_7_days: 7, last_30_days: 30 }[period];
  const end = period === 'yesterday' ? -1 : 0;
  const d = Date.parse(`${now.slice(0, 10)}T00:00:00Z`);
  const date = (offset: number) => new Date(d + offset * 86_400_000).toISOString().slice(0, 10);
  return {
    current: { startDate: date(end - (days - 1)), endDate: date(end) },
    prior: { startDate: date(end - (2 * days - 1)), endDate: date(end - days) },
  };
}

/** Cents of the lines in the range, of one workspace ('' = unattributed) or all (null). */
export const sumLines = (lines: TruthLine[], workspace: string | null, range: Range): number =>
  lines
    .filter((l) => (workspace === null || l.workspace === workspace) && l.day >= range.startDate && l.day <= range.endDate)
    .reduce((s, l) => s + l.cents, 0);
