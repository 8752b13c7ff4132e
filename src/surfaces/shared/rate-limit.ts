import type { RateDecision } from '../../platform/rate-limit.ts';
import type { RatePolicy } from '../../policy.ts';
import { ApiError } from './errors.ts';

/** RateLimit-Policy and RateLimit header values (draft-ietf-httpapi-ratelimit-headers). */
export function rateLimitHeaders(entries: { policy: RatePolicy; decision: RateDecision }[]): Record<string, string> {
  return {
    'ratelimit-policy': entries.map((e) => `"${e.policy.policy}";q=${e.policy.limit};w=${e.policy.windowMs / 1000}`).join(', '),
    ratelimit: entries.map((e) => `"${e.policy.policy}";r=${e.decision.remaining};t=${e.decision.resetSeconds}`).join(', '),
  };
}

/** The 429 answer to a request over a limit: Retry-After is when the refusing window has room again. */
export function rateLimited(message: string, decision: RateDecision, headers: Record<string, string> = {}): ApiError {
  return new ApiError(429, 'rate_limited', message, { headers: { ...headers, 'retry-after': String(decision.resetSeconds) } });
}

/**
 * The windows one MCP tool call is charged in, as the `nth` call of its HTTP request: the
 * request's own charge covers its first call, so a JSON-RPC batch is charged the request window
 * once more for every call after the first; an operation's extra limit counts every call. When
 * the first call is refused, the caller gives the request's charge back (a refusal consumes nothing).
 */
export function toolCallWindows<W>(requestWindow: W, extraWindow: W | undefined, nth: number): W[] {
  return [...(nth > 1 ? [requestWindow] : []), ...(extraWindow ? [extraWindow] : [])];
}
