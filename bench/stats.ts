// Small numeric helpers for latency samples, and how the report prints figures.

export interface Summary {
  n: number;
  p50: number;
  p99: number;
  mean: number;
  max: number;
}

/** Nearest-rank percentile of an ascending-sorted array. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export function summarize(samples: number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    n: sorted.length,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    mean: sorted.reduce((sum, x) => sum + x, 0) / (sorted.length || 1),
    max: sorted[sorted.length - 1] ?? Number.NaN,
  };
}

export const ms = (value: number) => `${value < 10 ? value.toFixed(2) : value < 100 ? value.toFixed(1) : value.toFixed(0)} ms`;
export const int = (value: number) => Math.round(value).toLocaleString('en-US');
/** Bytes in MB or kB (10^6, 10^3). */
export const size = (bytes: number) =>
  bytes >= 1e6 ? `${(bytes / 1e6).toFixed(bytes >= 1e8 ? 0 : 2)} MB` : `${(bytes / 1e3).toFixed(1)} kB`;
