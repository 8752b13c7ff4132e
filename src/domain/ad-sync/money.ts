// Money is integer cents. Platforms give millionths of the unit (micros, exact); they are summed
// per (UTC day, account, campaign, ad set) and rounded to cents once, half away from zero
// (5,000 micros → 1 cent; −5,000 → −1), so no sum ever carries a rounding per hour.

const MICROS_PER_CENT = 10_000n;

export function microsToCents(micros: bigint): bigint {
  const magnitude = micros < 0n ? -micros : micros;
  const cents = (magnitude + MICROS_PER_CENT / 2n) / MICROS_PER_CENT;
  return micros < 0n ? -cents : cents;
}
