// The OpenAI Ads Insights API's `spend`, to exact micros. The reference shows it as a JSON number in
// the account currency ("spend": 18.42) and names no unit, while every money field of the Advertiser
// API's resources is an integer `*_micros`; which unit we read is one policy value
// (CHATGPT_ADS_SPEND_UNIT). Whatever the unit, a figure that does not fit it is refused rather than
// stored wrong: a negative, an exponent, text that is not a plain decimal, or — in 'major' — more
// decimals than the currency's cents (0.30000000000000004 is a float sum, 12.345 not a USD amount).
//
// No fraction is ever held in a float on the way to micros. A JSON number is read through its
// shortest round-trip decimal (String(18.42) is "18.42", what any serializer wrote for it), then
// digit by digit; a 17-digit float artefact keeps its 17 digits and is refused.

export type SpendUnit = 'major' | 'cents' | 'micros';

const SCALE = [1_000_000, 100_000, 10_000, 1_000, 100, 10, 1];

/** "12.34" → 12_340_000n with at most `maxDecimals` (≤ 6) decimals and 15 integer digits; undefined otherwise. */
export function decimalToMicros(text: string, maxDecimals: number): bigint | undefined {
  const length = text.length;
  let units = 0;
  let i = 0;
  for (; i < length; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) break;
    units = units * 10 + digit;
  }
  if (i === 0 || i > 15) return undefined;
  let fraction = 0;
  let places = 0;
  if (i < length) {
    if (text.charCodeAt(i) !== 46 /* . */) return undefined;
    for (i++; i < length; i++, places++) {
      const digit = text.charCodeAt(i) - 48;
      if (digit < 0 || digit > 9) return undefined;
      fraction = fraction * 10 + digit;
    }
    if (places === 0 || places > maxDecimals || places > 6) return undefined;
  }
  const micros = fraction * SCALE[places]!;
  return units < 9_000_000_000 ? BigInt(units * 1_000_000 + micros) : BigInt(units) * 1_000_000n + BigInt(micros);
}

/** A whole number as a JSON number (a safe integer) or a string of up to `maxDigits` digits; undefined otherwise. */
function wholeNumber(value: unknown, maxDigits: number): bigint | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? BigInt(value) : undefined;
  if (typeof value !== 'string' || value.length === 0 || value.length > maxDigits) return undefined;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 48 || c > 57) return undefined;
  }
  return BigInt(value);
}

/**
 * A `spend` value in `unit` → micros of the account currency, or undefined when it does not fit the
 * unit. 'major': a decimal number or decimal string with at most `maxDecimals` decimals; 'cents' and
 * 'micros': whole numbers.
 */
export function spendToMicros(value: unknown, unit: SpendUnit, maxDecimals: number): bigint | undefined {
  if (unit === 'major') {
    if (typeof value === 'number') return value >= 0 && value <= 1e15 ? decimalToMicros(String(value), maxDecimals) : undefined;
    return typeof value === 'string' ? decimalToMicros(value, maxDecimals) : undefined;
  }
  const whole = wholeNumber(value, unit === 'cents' ? 17 : 21);
  return whole === undefined ? undefined : unit === 'cents' ? whole * 10_000n : whole;
}

const currencyDecimals = new Map<string, number>();

/**
 * The decimals a 'major' figure may have in `currency`: its ISO 4217 minor unit (USD 2, KWD 3) and
 * never fewer than 2, so a fractional cent (or yen) is refused while every real cent passes.
 */
export function spendDecimals(currency: string): number {
  let decimals = currencyDecimals.get(currency);
  if (decimals === undefined) {
    try {
      decimals = new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
    } catch {
      decimals = 2;
    }
    decimals = Math.min(Math.max(decimals, 2), 6);
    if (currencyDecimals.size < 1_000) currencyDecimals.set(currency, decimals);
  }
  return decimals;
}

const centsTexts: string[] = [];

/** Whole cents as the JSON text of `spend` in `unit` ("12.3", "12", 1230, 12300000), for the sandbox; remembered, it runs per row. */
export function centsToSpendJson(cents: number, unit: SpendUnit): string {
  if (unit === 'cents') return String(cents);
  if (unit === 'micros') return String(cents * 10_000);
  if (cents < 1_000_000) {
    const known = centsTexts[cents];
    if (known !== undefined) return known;
  }
  const units = Math.floor(cents / 100);
  const rest = cents % 100;
  const text = rest === 0 ? String(units) : rest % 10 === 0 ? `${units}.${rest / 10}` : `${units}.${String(rest).padStart(2, '0')}`;
  if (cents < 1_000_000) centsTexts[cents] = text;
  return text;
}
