// Meta writes money as decimal strings in the account currency's unit ("12.34"; AdsInsights'
// `spend` is typed 'string' in facebook-python-business-sdk facebook_business/adobjects/adsinsights.py).
// A float would round "0.29" to 0.28999…; these turn the text into integer millionths and back by
// string arithmetic only.

const DECIMAL = /^(\d{1,15})(?:\.(\d{1,6}))?$/;

/** "12.34" → 12_340_000n; undefined for anything but a plain non-negative decimal of at most 6 places. */
export function parseSpendMicros(text: string): bigint | undefined {
  const match = DECIMAL.exec(text);
  if (!match) return undefined;
  return BigInt(match[1]!) * 1_000_000n + BigInt((match[2] ?? '').padEnd(6, '0'));
}

/** 12_340_000n → "12.34", 12_000_000n → "12": the shortest decimal that parses back to the same micros. */
export function formatSpend(micros: bigint): string {
  const units = micros / 1_000_000n;
  const fraction = (micros % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  return fraction === '' ? units.toString() : `${units}.${fraction}`;
}
