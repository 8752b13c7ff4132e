import type { FastifyReply, FastifyRequest } from 'fastify';
import type Provider from 'oidc-provider';
import type { Db } from '../../db/database.ts';
import { createHash } from 'node:crypto';
import type { Caller } from '../../domain/caller.ts';
import type { GrantUseRecorder } from '../../domain/oauth/grant-usage.ts';
import { grantIdentity, type GrantIdentity } from '../../domain/oauth/identity.service.ts';
import type { Clock } from '../../platform/clock.ts';
import { LruCache } from '../../platform/lru.ts';
import { allowedCharge, type RateCharge, type RateDecision, type RateLimiter, type RateWindow } from '../../platform/rate-limit.ts';
import { FAILED_AUTH_LIMIT, PLAN_LIMITS, PLAN_WINDOW_MS, TOKEN_CHECK_CACHE_MS, type RatePolicy } from '../../policy.ts';
import { ApiError } from '../shared/errors.ts';
import { SCOPE, type RevocationSignal } from '../shared/oauth.ts';
import { oauthSurfaceReceivedMessage } from '../shared/received-credential.ts';
import { rateLimitHeaders, rateLimited, toolCallWindows } from '../shared/rate-limit.ts';

export interface BearerAuthDeps {
  provider: Provider;
  db: Db;
  limiter: RateLimiter;
  clock: Clock;
  /** Revocation signals; without a reliable feed nothing is cached. */
  revocations?: RevocationSignal;
  /** Where each accepted token's grant is marked used (Connected apps' last use). */
  grantUse?: Pick<GrantUseRecorder, 'record'>;
  onLimiterError?: (error: unknown) => void;
}

/** How many tokens' verdicts are kept; the least recently used goes first. */
const TOKEN_CACHE_MAX = 10_000;

interface TokenVerdict {
  grantId: string;
  audiences: string[];
  scopes: Set<string>;
  identity: GrantIdentity;
  clientId: string;
}

/**
 * Resolves the caller of the main API (REST and MCP) from `Authorization: Bearer <token>` — only
 * from that header — and counts the request against the plan's limit. Tokens are checked by the
 * authorization server's own model (expiry, revocation), then their audience and scope, then the
 * grant's user, hub and workspace are read fresh so removed access takes effect at once.
 */
export class BearerAuth {
  readonly #deps: BearerAuthDeps;
  // Verdicts by token hash. Emptied on every revocation (synchronously on this instance, by NOTIFY
  // on the others) and used only while the revocation feed is connected; identity changes
  // (membership, suspension, API access) reach a cached token within TOKEN_CHECK_CACHE_MS. A
  // verdict is reused until then at most, and never past the token's expiry.
  readonly #cache = new LruCache<string, TokenVerdict>({ max: TOKEN_CACHE_MAX });
  #generation = 0;
  /** What each authenticated request was counted as (given back if its first tool call is refused). */
  readonly #charges = new WeakMap<Caller, RateCharge>();

  constructor(deps: BearerAuthDeps) {
    this.#deps = deps;
    deps.revocations?.onRevocation(() => {
      this.#generation += 1;
      this.#cache.clear();
    });
  }

  /** The token's verdict from the cache, or resolved (token model, then the grant's identity). */
  async #verdict(token: string, invalid: (message: string) => ApiError): Promise<TokenVerdict> {
    const cacheKey = createHash('sha256').update(token).digest('base64');
    const useCache = this.#deps.revocations?.reliable === true;
    const cached = useCache ? this.#cache.get(cacheKey) : undefined;
    if (cached) return cached;
    const generation = this.#generation;
    const found = await this.#deps.provider.AccessToken.find(token);
    if (!found?.grantId || !found.accountId) throw invalid('The access token is invalid, expired or revoked.');
    const identity = await grantIdentity(this.#deps.db, found.grantId, found.accountId);
    if (!identity) throw invalid('The user no longer has access to the hub or workspace this token was granted for.');
    const verdict: TokenVerdict = {
      grantId: found.grantId,
      audiences: (Array.isArray(found.aud) ? found.aud : [found.aud]).filter((a): a is string => typeof a === 'string'),
      scopes: new Set(String(found.scope ?? '').split(' ')),
      identity,
      clientId: String(found.clientId),
    };
    if (useCache && generation === this.#generation) {
      this.#cache.set(cacheKey, verdict, { expiresAt: Math.min(Number(found.exp) * 1000, Date.now() + TOKEN_CHECK_CACHE_MS) });
    }
    return verdict;
  }

  async authenticate(
    request: FastifyRequest,
    reply: FastifyReply,
    options: { audience: string; challenge?: Record<string, string> },
  ): Promise<Caller> {
    const challenge = (params: Record<string, string>) =>
      `Bearer ${Object.entries({ realm: 'hubops', ...options.challenge, ...params })
        .map(([k, v]) => `${k}="${v.replace(/["\\]/g, '')}"`)
        .join(', ')}`;
    const invalid = (message: string) =>
      new ApiError(401, 'invalid_token', message, {
        headers: { 'www-authenticate': challenge({ error: 'invalid_token', error_description: message }) },
      });

    const match = request.headers.authorization?.match(/^Bearer[ ]+([A-Za-z0-9._~+/-]+=*)\s*$/i);
    if (!match) {
      // No token is how a client discovers the authorization server: shown the window, not counted
      // in it; the message says what came instead (Basic, X-API-Key), if anything did.
      const message = oauthSurfaceReceivedMessage(request.headers) ?? 'Missing access token: send `Authorization: Bearer <ACCESS_TOKEN>`.';
      throw new ApiError(401, 'invalid_token', message, {
        headers: { 'www-authenticate': challenge({}), ...(await this.#failedAuthHeaders(request.clientAddress)) },
      });
    }
    let verdict: TokenVerdict;
    try {
      // A Hub API key (hubops_…) is never an access token: said so, without a lookup.
      const received = match[1]!.startsWith('hubops_') ? oauthSurfaceReceivedMessage(request.headers) : undefined;
      if (received) throw invalid(received);
      verdict = await this.#verdict(match[1]!, invalid);
      if (!verdict.audiences.includes(options.audience))
        throw invalid(`The access token was issued for another resource, not ${options.audience}.`);
    } catch (error) {
      throw error instanceof ApiError && error.status === 401 ? await this.#failedAuthentication(error, request.clientAddress) : error;
    }
    const { grantId, scopes, identity, clientId } = verdict;
    if (!scopes.has(SCOPE)) {
      throw new ApiError(403, 'insufficient_scope', `The access token lacks the ${SCOPE} scope.`, {
        headers: { 'www-authenticate': challenge({ error: 'insufficient_scope', scope: SCOPE }) },
      });
    }
    if (!identity.account.apiAccess && !identity.user.isStaff)
      throw await this.#failedAuthentication(invalid('API access is no longer enabled for this account.'), request.clientAddress);
    if (identity.hub.suspended)
      throw new ApiError(403, 'hub_access_suspended', "This hub's access is suspended. Contact your account manager.");
    // The token is accepted: that is a use of its grant, whether or not the plan's limit lets it through.
    this.#deps.grantUse?.record(grantId, this.#deps.clock.now());

    const plan = this.#planWindow(identity.user.id, clientId, identity.account.plan);
    const charge = await this.#count([plan]);
    const decision = charge.decisions[0]!;
    reply.headers(rateLimitHeaders([{ policy: { policy: 'per-user-client', limit: decision.limit, windowMs: PLAN_WINDOW_MS }, decision }]));
    if (!charge.allowed)
      throw this.#refused(decision, `the ${identity.account.plan} plan allows ${decision.limit} per minute per user and client`);
    const caller: Caller = {
      user: identity.user,
      account: { id: identity.account.id, plan: identity.account.plan },
      hub: { id: identity.hub.id, name: identity.hub.name },
      workspace: identity.workspace,
      role: identity.role,
      clientId,
    };
    this.#charges.set(caller, charge);
    return caller;
  }

  /**
   * Charges the `nth` tool call of one MCP request, which `authenticate` counted once against the
   * plan. The first call uses that count and adds only its operation's extra policy (e.g. 20/min
   * on a report); later calls (a JSON-RPC batch) count against the plan again, in the same
   * atomic step. A refused call consumes nothing: when the first is refused, the request's own
   * count is given back. Throws 429 `rate_limited` when refused.
   */
  async chargeToolCall(caller: Caller, extra: RatePolicy | undefined, nth: number): Promise<void> {
    const plan = this.#planWindow(caller.user.id, caller.clientId, caller.account.plan);
    const windows = toolCallWindows<RateWindow>(
      plan,
      extra && { key: `${plan.key}:${extra.policy}`, limit: extra.limit, windowMs: extra.windowMs },
      nth,
    );
    if (windows.length === 0) return;
    const charge = await this.#count(windows);
    if (charge.allowed) return;
    const first = this.#charges.get(caller);
    if (nth === 1 && first) await this.#deps.limiter.refund(first).catch((error: unknown) => this.#deps.onLimiterError?.(error));
    const at = charge.decisions.findIndex((d) => !d.allowed);
    const refusedBy = windows[at]!;
    throw this.#refused(
      charge.decisions[at]!,
      refusedBy === plan
        ? `the ${caller.account.plan} plan allows ${plan.limit} per minute per user and client`
        : `${extra!.policy} allows ${extra!.limit} per ${extra!.windowMs / 1000} s per user and client`,
    );
  }

  /**
   * Gives back the plan charge of a request answered 304 Not Modified (GitHub's rule: a
   * conditional request that finds nothing new does not count), and says so in its RateLimit header.
   */
  async giveBack(caller: Caller, reply: FastifyReply): Promise<void> {
    const charge = this.#charges.get(caller);
    if (!charge || charge.counted.length === 0) return;
    this.#charges.delete(caller);
    await this.#deps.limiter.refund(charge).catch((error: unknown) => this.#deps.onLimiterError?.(error));
    const plan = this.#planWindow(caller.user.id, caller.clientId, caller.account.plan);
    const [decision] = await this.#deps.limiter.peekAll([plan], this.#deps.clock.now().getTime()).catch(() => charge.decisions);
    reply.headers(
      rateLimitHeaders([{ policy: { policy: 'per-user-client', limit: plan.limit, windowMs: PLAN_WINDOW_MS }, decision: decision! }]),
    );
  }

  /** The client address's window of failed authentications (FAILED_AUTH_LIMIT, as on the Hub API). */
  #failedAuthWindow(address: string): RateWindow {
    return { key: `main-auth-fail:${address}`, limit: FAILED_AUTH_LIMIT.limit, windowMs: FAILED_AUTH_LIMIT.windowMs };
  }

  /** The RateLimit headers of the address's failed-authentication window, without counting; none while the limiter is down. */
  async #failedAuthHeaders(address: string): Promise<Record<string, string>> {
    const decisions = await this.#deps.limiter
      .peekAll([this.#failedAuthWindow(address)], this.#deps.clock.now().getTime())
      .catch((error: unknown) => {
        this.#deps.onLimiterError?.(error);
        return undefined;
      });
    return decisions ? rateLimitHeaders([{ policy: FAILED_AUTH_LIMIT, decision: decisions[0]! }]) : {};
  }

  /**
   * A token refused (401) counts against its address's failed-authentication window, whose
   * RateLimit headers the 401 carries; past the window's limit the answer is 429 instead.
   */
  async #failedAuthentication(refusal: ApiError, address: string): Promise<ApiError> {
    const charge = await this.#count([this.#failedAuthWindow(address)]);
    const decision = charge.decisions[0]!;
    const headers = rateLimitHeaders([{ policy: FAILED_AUTH_LIMIT, decision }]);
    if (!charge.allowed)
      return rateLimited('Too many failed authentications from this address; wait a minute before trying again.', decision, headers);
    return new ApiError(refusal.status, refusal.code, refusal.message, { headers: { ...refusal.headers, ...headers } });
  }

  #planWindow(userId: string, clientId: string, plan: keyof typeof PLAN_LIMITS): RateWindow {
    return { key: `main:${userId}:${clientId}`, limit: PLAN_LIMITS[plan], windowMs: PLAN_WINDOW_MS };
  }

  /** Counts one request in every window or in none; fails open when the limiter is down. */
  async #count(windows: RateWindow[]): Promise<RateCharge> {
    const nowMs = this.#deps.clock.now().getTime();
    return this.#deps.limiter.hitAll(windows, nowMs).catch((error: unknown) => {
      this.#deps.onLimiterError?.(error);
      return allowedCharge(windows);
    });
  }

  #refused(decision: RateDecision, rule: string): ApiError {
    return rateLimited(`Too many requests: ${rule}; retry in ${decision.resetSeconds} s.`, decision);
  }
}
