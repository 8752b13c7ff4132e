import { invalid } from '../../platform/errors.ts';
import { MIN_INSTANT, parseDate } from '../../platform/time.ts';
import { addDays, utcDate, type DateRange } from '../periods.ts';

// The date range of every analytics report: UTC days from `from` to `to`, both inclusive, at most
// 366 days; by default the last 30 days (today and the 29 before). With only `from`, up to today;
// with only `to`, the 30 days ending then, never before 1970-01-01 (the first day any date may
// name: a derived `from` is clamped to it rather than refused, as the caller asked for no `from`).

export const MAX_RANGE_DAYS = 366;
export const DEFAULT_RANGE_DAYS = 30;
const DAY_MS = 86_400_000;

export function isValidDate(text: string): boolean {
  return parseDate(text) !== undefined;
}

export function reportRange(input: { from?: string; to?: string }, now: Date): DateRange {
  const endDate = input.to ?? (input.from === undefined ? utcDate(now) : maxDate(input.from, utcDate(now)));
  const startDate = input.from ?? maxDate(addDays(endDate, -(DEFAULT_RANGE_DAYS - 1)), utcDate(new Date(MIN_INSTANT)));
  const days = (Date.parse(endDate) - Date.parse(startDate)) / DAY_MS + 1;
  if (days < 1) throw invalid([{ field: 'to', message: `must not be before from (${startDate})` }]);
  if (days > MAX_RANGE_DAYS)
    throw invalid([{ field: 'from', message: `must be at most ${MAX_RANGE_DAYS} days before to (${endDate}); this range has ${days}` }]);
  return { startDate, endDate };
}

function maxDate(a: string, b: string): string {
  return a > b ? a : b;
}
