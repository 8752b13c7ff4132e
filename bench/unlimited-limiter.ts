import { allowedCharge, type RateCharge, type RateDecision, type RateLimiter, type RateWindow } from '../src/platform/rate-limit.ts';

/** Bench-only: a limiter that lets everything through, to measure the API without its limits. */
export class UnlimitedRateLimiter implements RateLimiter {
  async hit(_key: string, limit: number, windowMs: number): Promise<RateDecision> {
    return { allowed: true, limit, remaining: limit, resetSeconds: windowMs / 1000 };
  }
  async hitAll(windows: RateWindow[]): Promise<RateCharge> {
    return allowedCharge(windows);
  }
  async refund(): Promise<void> {}
  async count(): Promise<number> {
    return 0;
  }
  async peekAll(windows: RateWindow[]): Promise<RateDecision[]> {
    return allowedCharge(windows).decisions;
  }
  async close(): Promise<void> {}
}
