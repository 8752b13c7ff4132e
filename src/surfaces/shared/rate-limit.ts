import type { RateDecision } from '../../platform/rate-limit.ts';
import { ApiError } from './errors.ts';

/** A limit as clients see it: its name, how many requests, in what rolling window. */
export interface Policy {
  policy: string;
  limit: number;
  windowMs: number;
}

/** RateLimit-Policy and RateLimit header values (draft-ietf-httpapi-ratelimit-headers). */
export function rateLimitHeaders(entries: { policy: Policy; decision: RateDecision }[]): Record<string, string> {
  return {
    'ratelimit-policy': entries.map((e) => `"${e.policy.policy}";q=${e.policy.limit};w=${e.policy.windowMs / 1000}`).join(', '),
    ratelimit: entries.map((e) => `"${e.policy.policy}";r=${e.decision.remaining};t=${e.decision.resetSeconds}`).join(', '),
  };
}

/** The 429 answer to a request over a limit: Retry-After is when the refusing window has room again. */
export function rateLimited(message: string, decision: RateDecision, headers: Record<string, string> = {}): ApiError {
  return new ApiError(429, 'rate_limited', message, { headers: { ...headers, 'retry-after': String(decision.resetSeconds) } });
}
