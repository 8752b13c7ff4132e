import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../../db/database.ts';
import { verifyKey } from '../../domain/api-keys/key-verifier.ts';
import type { UsageRecorder } from '../../domain/api-keys/usage-recorder.ts';
import type { Clock } from '../../platform/clock.ts';
import { ApiError } from '../../platform/errors.ts';
import type { RateDecision, RateLimiter } from '../../platform/rate-limit.ts';

// Who may call the Hub API, and how often (contract §4).

export const KEY_LIMIT = { policy: 'per-key', limit: 120, windowMs: 60_000 };
/** Failed authentications per client address, so keys cannot be guessed at speed. */
export const FAILED_AUTH_LIMIT = { policy: 'failed-auth', limit: 30, windowMs: 60_000 };

export interface Policy {
  policy: string;
  limit: number;
  windowMs: number;
}

export interface CallerKey {
  keyId: string;
  hubId: string;
}

/** RateLimit-Policy and RateLimit header values (draft-ietf-httpapi-ratelimit-headers). */
export function rateLimitHeaders(entries: { policy: Policy; decision: RateDecision }[]): Record<string, string> {
  return {
    'ratelimit-policy': entries.map((e) => `"${e.policy.policy}";q=${e.policy.limit};w=${e.policy.windowMs / 1000}`).join(', '),
    ratelimit: entries.map((e) => `"${e.policy.policy}";r=${e.decision.remaining};t=${e.decision.resetSeconds}`).join(', '),
  };
}

export class HubApiGuard {
  readonly #db: Db;
  readonly #limiter: RateLimiter;
  readonly #usage: UsageRecorder;
  readonly #clock: Clock;
  readonly #onLimiterError: (error: unknown) => void;

  constructor(deps: { db: Db; limiter: RateLimiter; usage: UsageRecorder; clock: Clock; onLimiterError?: (error: unknown) => void }) {
    this.#db = deps.db;
    this.#limiter = deps.limiter;
    this.#usage = deps.usage;
    this.#clock = deps.clock;
    this.#onLimiterError = deps.onLimiterError ?? (() => {});
  }

  /**
   * Refuses requests made from browser code: they would expose the key (client rule 1). A browser
   * marks them with `Origin`, a CORS preflight, or Fetch Metadata. Node's fetch (undici) also
   * sends `Sec-Fetch-Mode: cors` but never `Sec-Fetch-Site`, so that header alone does not count:
   * server-side Node clients, the MCP SDK among them, must get through (see README).
   */
  refuseBrowsers(request: FastifyRequest): void {
    const { origin } = request.headers;
    const fetchSite = request.headers['sec-fetch-site'];
    const fromBrowserFetch = request.headers['sec-fetch-mode'] === 'cors' && fetchSite !== undefined;
    if (request.method === 'OPTIONS' || origin !== undefined || fromBrowserFetch) {
      throw new ApiError(403, 'browser_request_rejected',
        'The Hub API is for server-side code only: a browser request would expose the API key. Call it from your server.');
    }
  }

  /**
   * Authenticates the bearer key and applies the per-key limit; sets the RateLimit headers on
   * the reply. Counts the request towards the key's usage.
   */
  async authenticate(request: FastifyRequest, reply: FastifyReply): Promise<CallerKey> {
    const nowMs = this.#clock.now().getTime();
    const addressKey = `auth-fail:${request.ip}`;
    const failures = await this.#safe(() => this.#limiter.count(addressKey, FAILED_AUTH_LIMIT.windowMs, nowMs), 0);
    if (failures >= FAILED_AUTH_LIMIT.limit) {
      const decision = await this.#limit(addressKey, FAILED_AUTH_LIMIT, nowMs);
      throw new ApiError(429, 'rate_limited', 'Too many failed authentications from this address; wait a minute before trying again.', {
        headers: { ...rateLimitHeaders([{ policy: FAILED_AUTH_LIMIT, decision }]), 'retry-after': String(decision.resetSeconds) },
      });
    }
    const key = bearerToken(request.headers.authorization);
    const verdict = key === undefined ? null : await verifyKey(this.#db, key);
    if (!verdict || verdict.revoked || verdict.scope !== 'read') {
      const decision = await this.#limit(addressKey, FAILED_AUTH_LIMIT, nowMs);
      // A plain Bearer challenge (RFC 6750), deliberately without resource_metadata: this endpoint
      // takes fixed keys, and an MCP client that saw OAuth metadata would start a sign-in dance.
      const headers = { ...rateLimitHeaders([{ policy: FAILED_AUTH_LIMIT, decision }]), 'www-authenticate': 'Bearer realm="hubops-hub-api"' };
      const message =
        key === undefined ? 'Missing API key: send `Authorization: Bearer <HUB_API_KEY>`.'
        : verdict?.scope === 'embed' && !verdict.revoked ? 'This is an embed key: it only signs embedded views. Create a read key for the Hub API.'
        : 'The API key is not valid: it is mistyped, revoked or unknown.';
      throw new ApiError(401, 'invalid_api_key', message, { headers });
    }
    this.#usage.record(verdict.keyId, new Date(nowMs));
    const decision = await this.#limit(`key:${verdict.keyId}`, KEY_LIMIT, nowMs);
    reply.headers(rateLimitHeaders([{ policy: KEY_LIMIT, decision }]));
    if (!decision.allowed) throw rateLimited(decision);
    if (verdict.hubSuspended) throw new ApiError(403, 'hub_access_suspended', "This hub's API access is suspended. Contact your account manager.");
    return { keyId: verdict.keyId, hubId: verdict.hubId };
  }

  /**
   * Counts one more request against the per-key limit: for the second and later tool calls of
   * one MCP POST (a JSON-RPC batch), which `authenticate` counted once. Throws 429 when over.
   */
  async chargeKey(caller: CallerKey): Promise<void> {
    const decision = await this.#limit(`key:${caller.keyId}`, KEY_LIMIT, this.#clock.now().getTime());
    if (!decision.allowed) throw rateLimited(decision);
  }

  /** The extra per-operation limit (e.g. 20/min on the summaries); headers list both policies. */
  async limitOperation(caller: CallerKey, policy: Policy, reply: FastifyReply | undefined): Promise<RateDecision> {
    const nowMs = this.#clock.now().getTime();
    const decision = await this.#limit(`op:${policy.policy}:${caller.keyId}`, policy, nowMs);
    if (reply) {
      const current = reply.getHeader('ratelimit-policy');
      const currentValue = reply.getHeader('ratelimit');
      const extra = rateLimitHeaders([{ policy, decision }]);
      reply.header('ratelimit-policy', current ? `${current}, ${extra['ratelimit-policy']}` : extra['ratelimit-policy']);
      reply.header('ratelimit', currentValue ? `${currentValue}, ${extra.ratelimit}` : extra.ratelimit);
    }
    return decision;
  }

  async #limit(key: string, policy: Policy, nowMs: number): Promise<RateDecision> {
    // A limiter outage (Redis down) must not take the API down with it: fail open, and say so.
    return this.#safe(() => this.#limiter.hit(key, policy.limit, policy.windowMs, nowMs), {
      allowed: true,
      limit: policy.limit,
      remaining: policy.limit,
      resetSeconds: policy.windowMs / 1000,
    });
  }

  async #safe<T>(fn: () => Promise<T>, fallback: T): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      this.#onLimiterError(error);
      return fallback;
    }
  }
}

export function rateLimited(decision: RateDecision): ApiError {
  return new ApiError(429, 'rate_limited', `Too many requests for this key; retry in ${decision.resetSeconds} s.`, {
    headers: { 'retry-after': String(decision.resetSeconds) },
  });
}

function bearerToken(header: string | undefined): string | undefined {
  const match = header?.match(/^Bearer[ ]+(\S+)\s*$/i);
  return match?.[1];
}
