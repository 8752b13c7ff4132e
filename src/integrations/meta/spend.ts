// Meta writes money as decimal strings in the account currency's unit ("12.34"; AdsInsights'
// `spend` is typed 'string' in facebook-python-business-sdk facebook_business/adobjects/adsinsights.py).
// A float would round "0.29" to 0.28999…; these turn the text into integer millionths and back by
// digit and integer arithmetic only (no fraction is ever held in a float).

/** Powers of ten that scale 0 to 6 fraction digits to millionths. */
const SCALE = [1_000_000, 100_000, 10_000, 1_000, 100, 10, 1];

/**
 * "12.34" → 12_340_000n; undefined for anything but a plain non-negative decimal of at most 15
 * digits before the point and 6 after. Read digit by digit (it runs for every row of a sync): the
 * parts are exact integers as numbers, and only a figure past 2^53 micros is put together as BigInt.
 */
export function parseSpendMicros(text: string): bigint | undefined {
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
    if (places === 0 || places > 6) return undefined;
  }
  const micros = fraction * SCALE[places]!;
  return units < 9_000_000_000 ? BigInt(units * 1_000_000 + micros) : BigInt(units) * 1_000_000n + BigInt(micros);
}

/** 12_340_000n → "12.34", 12_000_000n → "12": the shortest decimal that parses back to the same micros. */
export function formatSpend(micros: bigint): string {
  const units = micros / 1_000_000n;
  const fraction = (micros % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  return fraction === '' ? units.toString() : `${units}.${fraction}`;
}
