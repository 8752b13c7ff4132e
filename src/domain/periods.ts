// Reporting periods in UTC days, with D = today:
//   today [D, D] · yesterday [D-1, D-1] · last_7_days [D-6, D] · last_30_days [D-29, D]
// and `prior` the same number of days immediately before.

export const PERIODS = ['today', 'yesterday', 'last_7_days', 'last_30_days'] as const;
export type Period = (typeof PERIODS)[number];

export interface DateRange {
  startDate: string; // YYYY-MM-DD, inclusive
  endDate: string; // YYYY-MM-DD, inclusive
}

export interface PeriodRanges {
  current: DateRange;
  prior: DateRange;
}

const DAY_MS = 86_400_000;
const SHAPE: Record<Period, { endOffset: number; days: number }> = {
  today: { endOffset: 0, days: 1 },
  yesterday: { endOffset: 1, days: 1 },
  last_7_days: { endOffset: 0, days: 7 },
  last_30_days: { endOffset: 0, days: 30 },
};

/** The UTC date of an instant, as YYYY-MM-DD. */
export function utcDate(at: Date): string {
  return at.toISOString().slice(0, 10);
}

export function addDays(date: string, days: number): string {
  return utcDate(new Date(Date.parse(`${date}T00:00:00Z`) + days * DAY_MS));
}

export function periodRanges(period: Period, now: Date): PeriodRanges {
  const { endOffset, days } = SHAPE[period];
  const endDate = addDays(utcDate(now), -endOffset);
  const startDate = addDays(endDate, -(days - 1));
  return {
    current: { startDate, endDate },
    prior: { startDate: addDays(startDate, -days), endDate: addDays(startDate, -1) },
  };
}
