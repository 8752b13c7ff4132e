// The OpenAI Ads API's wire format where the client and the sandbox must agree, written once from
// OpenAI's documentation (developers.openai.com/ads: API overview, Authentication, Ad Account and
// Insights references), so the sandbox cannot drift from what the client expects of the real host.

/** The path prefix of every call: https://api.ads.openai.com/v1 (Authentication › Base URL). */
export const API_PREFIX = '/v1';

/**
 * What one Insights call reads: ad-group rows of the key's account, their campaign, and the spend.
 * Canonical names go in `fields[]`; the answer carries them flat (Insights › Projection:
 * `campaign.id` comes back as `campaign_id`, `ad_group.spend` as `spend`). Each row also carries
 * its bucket's `id`, `start_time` and `end_time` (Unix seconds) unasked.
 */
export const INSIGHTS_FIELDS = ['campaign.id', 'campaign.name', 'ad_group.id', 'ad_group.name', 'ad_group.spend'] as const;

/** `fields[]` canonical name → the key it has in a row. */
export const ROW_KEY: Record<string, string> = {
  'campaign.id': 'campaign_id',
  'campaign.name': 'campaign_name',
  'ad_group.id': 'ad_group_id',
  'ad_group.name': 'ad_group_name',
  'ad_group.spend': 'spend',
};

/** Insights › Request parameters: `limit` is 1 through 2000 (default 20). */
export const INSIGHTS_MAX_LIMIT = 2000;

/**
 * Keys a row never has when `spend` is in the unit we assume: the API naming another unit
 * contradicts the assumption, and the client refuses the answer.
 */
export const UNIT_KEYS = ['spend_micros', 'spend_cents', 'spend_unit'] as const;

/**
 * Keys a row may name its currency by. Neither is documented on Insights rows; when one is there
 * it must be the account's `currency_code` (any letter case: OpenAI's Costs API writes "usd").
 */
export const CURRENCY_KEYS = ['currency', 'currency_code'] as const;

/** `time_ranges[]` of type `unix_range`: start and end in Unix seconds, on whole hours of the account's zone. */
export interface UnixRange {
  type: 'unix_range';
  start: number;
  end: number;
}

/**
 * The body of every error, as across OpenAI's APIs: `{ "error": { message, type, param, code } }`.
 * `message` is for a person; `code` (`invalid_api_key`, `rate_limit_exceeded`,
 * `insufficient_quota`, …) and `param` (the query parameter at fault) may be null.
 */
export interface OpenAIErrorBody {
  message: string;
  type: string | null;
  param: string | null;
  code: string | null;
}

/**
 * Rate-limit headers, as on OpenAI's other APIs: the request budget left in the window and when it
 * refills as a Go-style duration ("1s", "6m0s", "20ms"); `retry-after` (seconds) on a 429. The Ads
 * API's limits: 600 requests a minute per endpoint, 1,200 overall, per ad account and per IP address
 * (API overview › Rate limits).
 */
export const RATE_HEADERS = {
  limit: 'x-ratelimit-limit-requests',
  remaining: 'x-ratelimit-remaining-requests',
  reset: 'x-ratelimit-reset-requests',
} as const;

/** 90_500 → "1m30.5s", as the reset headers write it. */
export function goDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`;
  const hours = Math.floor(ms / 3_600_000);
  const minutes = Math.floor((ms % 3_600_000) / 60_000);
  const seconds = (ms % 60_000) / 1000;
  return `${hours ? `${hours}h` : ''}${hours || minutes ? `${minutes}m` : ''}${Number(seconds.toFixed(3))}s`;
}

/** "1m30.5s" → 90_500; undefined for anything else. */
export function parseGoDuration(text: string): number | undefined {
  if (text.length === 0 || text.length > 64) return undefined;
  const unit: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001, µs: 0.001, ns: 0.000001 };
  let ms = 0;
  let rest = text;
  while (rest.length > 0) {
    const m = /^(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)/.exec(rest);
    if (!m) return undefined;
    ms += Number(m[1]) * unit[m[2]!]!;
    rest = rest.slice(m[0].length);
  }
  return Number.isFinite(ms) ? ms : undefined;
}
