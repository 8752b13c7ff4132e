// How the web admin writes money, counts, dates and times: one way on every page, in every
// locale. Money in US dollars with thousands separators (`$1,265.00`, `-$12.50`); dates and
// instants as ISO 8601 in UTC (`2026-11-24`, `2026-11-24 09:30 UTC`); times in words relative
// to the app's clock ("3 hours ago"), with the exact instant in a tooltip.
import { escapeHtml as h } from '../../shared/html.ts';

const DOLLARS = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 2 });
const COUNT = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

/** `$1,265.00`; `-$12.50`; `$0.00` (never `-$0.00`). */
export function money(cents: number): string {
  return DOLLARS.format(cents === 0 ? 0 : cents / 100);
}

const CURRENCIES = new Map<string, Intl.NumberFormat>();

/** Cents of an ISO 4217 currency: `€1,265.00`, `$12.50` (money() for the hub's US dollars). */
export function moneyIn(cents: number, currency: string): string {
  let format = CURRENCIES.get(currency);
  if (!format) {
    format = new Intl.NumberFormat('en-US', { style: 'currency', currency, minimumFractionDigits: 2, maximumFractionDigits: 2 });
    CURRENCIES.set(currency, format);
  }
  return format.format(cents === 0 ? 0 : cents / 100);
}

/** `1,234`. */
export function count(n: number): string {
  return COUNT.format(n);
}

/** `1 opt-in`, `1,234 opt-ins`. */
export function counted(n: number, singular: string, plural = `${singular}s`): string {
  return `${count(n)} ${n === 1 ? singular : plural}`;
}

/** An ISO instant as `2026-11-24 09:30 UTC`; `—` for none. */
export function when(iso: string | null): string {
  if (!iso) return '—';
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

/** The UTC time of day of an instant: `14:05 UTC`. */
export function timeOfDay(at: Date): string {
  return `${at.toISOString().slice(11, 16)} UTC`;
}

const UNITS: [number, string][] = [
  [365 * 86_400_000, 'year'],
  [30 * 86_400_000, 'month'],
  [7 * 86_400_000, 'week'],
  [86_400_000, 'day'],
  [3_600_000, 'hour'],
  [60_000, 'minute'],
];

/** How long before `now` an instant was, in words: "just now", "20 minutes ago", "3 hours ago", "in 5 minutes". */
function ago(at: Date, now: Date): string {
  const ms = now.getTime() - at.getTime();
  const size = Math.abs(ms);
  const unit = UNITS.find(([length]) => size >= length);
  if (!unit) return 'just now';
  const n = Math.floor(size / unit[0]);
  const words = `${n} ${unit[1]}${n === 1 ? '' : 's'}`;
  return ms >= 0 ? `${words} ago` : `in ${words}`;
}

/** `<time>` with the words of `ago`, and the exact instant (ISO, UTC) as its datetime and tooltip. */
export function agoTag(at: Date, now: Date, prefix = ''): string {
  const iso = at.toISOString();
  return `<time datetime="${iso}" title="${h(when(iso))}">${h(prefix)}${h(ago(at, now))}</time>`;
}
