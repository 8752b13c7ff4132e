import type { FastifyReply, FastifyRequest } from 'fastify';
import { RideAlongCheck, type Db } from '../../db/database.ts';
import { hashKey, isWellFormedKey } from '../../domain/api-keys/api-key.ts';
import { findKeyByHash, keyVerdictOf, keyVerdictStatement, type KeyVerdict } from '../../domain/api-keys/api-key.service.ts';
import type { UsageRecorder } from '../../domain/api-keys/usage-recorder.ts';
import type { Clock } from '../../platform/clock.ts';
import { LruCache } from '../../platform/lru.ts';
import { allowedCharge, type RateCharge, type RateDecision, type RateLimiter, type RateWindow } from '../../platform/rate-limit.ts';
import { FAILED_AUTH_LIMIT, HUB_CONDITIONAL_LIMIT, HUB_KEY_LIMIT, type RatePolicy } from '../../policy.ts';
import { ApiError } from '../shared/errors.ts';
import { hubApiReceivedMessage } from '../shared/received-credential.ts';
import { rateLimitHeaders, rateLimited, toolCallWindows } from '../shared/rate-limit.ts';

// Who may call the Hub API, and how often.

export interface CallerKey {
  keyId: string;
  hubId: string;
}

/**
 * An authenticated request: who calls, and the database handle its reads go through (inside
 * `whileAdmitted`, it may carry the key's verdict along with the first query).
 */
export interface Admission {
  caller: CallerKey;
  db: Db;
  /** What this request was counted as (given back if a tool call in it is refused, or if it is answered 304). */
  charge: RateCharge;
  /** When it was admitted (its usage is counted at this time). */
  admittedAt: Date;
}

/**
 * How many keys' ids and hubs are remembered. The first admission places a key; later uses do not
 * move it, so the key remembered longest ago is forgotten first.
 */
const KNOWN_KEYS = 50_000;

/** `extra`: the operation's own limit; `charge: false`: a conditional read, charged later or answered 304 free. */
export interface AdmitOptions {
  extra?: RatePolicy | undefined;
  charge?: boolean;
}

export class HubApiGuard {
  readonly #db: Db;
  readonly #limiter: RateLimiter;
  readonly #usage: UsageRecorder;
  readonly #clock: Clock;
  readonly #onLimiterError: (error: unknown) => void;
  readonly #known = new LruCache<string, CallerKey>({ max: KNOWN_KEYS });

  constructor(deps: { db: Db; limiter: RateLimiter; usage: UsageRecorder; clock: Clock; onLimiterError?: (error: unknown) => void }) {
    this.#db = deps.db;
    this.#limiter = deps.limiter;
    this.#usage = deps.usage;
    this.#clock = deps.clock;
    this.#onLimiterError = deps.onLimiterError ?? (() => {});
  }

  /**
   * Refuses requests made from browser code: they would expose the key, which belongs on a server only. A browser
   * marks them with `Origin`, a CORS preflight, or Fetch Metadata. Node's fetch (undici) also
   * sends `Sec-Fetch-Mode: cors` but never `Sec-Fetch-Site`, so that header alone does not count:
   * server-side Node clients, the MCP SDK among them, must get through (see docs/hub-api.md).
   * A same-origin fetch (no Origin on a GET, `Sec-Fetch-Site: same-origin`) comes from a page of
   * this server, the API reference's "Try it out" (/docs/api/hub): the key goes nowhere else.
   */
  refuseBrowsers(request: FastifyRequest): void {
    const { origin } = request.headers;
    const fetchSite = request.headers['sec-fetch-site'];
    const fromBrowserFetch = request.headers['sec-fetch-mode'] === 'cors' && fetchSite !== undefined && fetchSite !== 'same-origin';
    if (request.method === 'OPTIONS' || origin !== undefined || fromBrowserFetch) {
      throw new ApiError(
        403,
        'browser_request_rejected',
        'The Hub API is for server-side code only: a browser request would expose the API key. Call it from your server.',
      );
    }
  }

  /**
   * Authenticates the bearer key and applies the per-key limit; sets the RateLimit headers on
   * the reply. Counts the request towards the key's usage. The key's verdict (revoked?
   * suspended?) is read fresh, before this returns: it throws the 401/403.
   *
   * `extra` is the operation's own limit: the request is counted in both windows or in neither.
   * With `charge: false` (a conditional read) it is counted in neither yet: `chargeLater` counts
   * it, or `notModified` answers it free.
   *
   * An address over its failed-authentication limit gets 429 for every key this instance has not
   * admitted before, without a database read; keys it has admitted (real keys, in use) still
   * work, so one misconfigured tool behind a shared address (an office NAT, an automation
   * platform's egress) does not lock out everyone else there (see docs/hub-api.md, Limits).
   */
  async authenticate(request: FastifyRequest, reply: FastifyReply, options: AdmitOptions): Promise<Admission> {
    return (await this.#admission(request, reply, options, false)).admission;
  }

  /**
   * Authenticates as `authenticate` does, runs `work` as the admitted caller, and gives back what
   * it returns (or throws) only once the key's verdict holds: a refused key's 401/403 wins over
   * work's result and over its error. For a key this instance has admitted before (its id and hub
   * never change), the verdict read rides along with work's first prepared query, one round trip
   * for both; the handle that carries it never leaves this method unsettled. The one way to ride
   * along: nothing can answer before the verdict.
   */
  async whileAdmitted<T>(
    request: FastifyRequest,
    reply: FastifyReply,
    options: AdmitOptions,
    work: (admission: Admission) => Promise<T>,
  ): Promise<T> {
    const { admission, check } = await this.#admission(request, reply, options, true);
    if (!check) return work(admission);
    let result: T;
    try {
      result = await work(admission);
    } catch (error) {
      await check.settle(this.#db.pool);
      throw error;
    }
    await check.settle(this.#db.pool);
    return result;
  }

  /**
   * The admission of a request, and with `rideAlong` for a known key the check it still owes
   * (its verdict read, carried by the admission's `db`). Without it (and for a key not seen
   * before) the verdict is read before this returns.
   */
  async #admission(
    request: FastifyRequest,
    reply: FastifyReply,
    options: AdmitOptions,
    rideAlong: boolean,
  ): Promise<{ admission: Admission; check?: RideAlongCheck }> {
    const nowMs = this.#clock.now().getTime();
    const addressKey = `auth-fail:${request.clientAddress}`;
    const key = bearerToken(request.headers.authorization);
    // The checksum first: a mistyped or invented key costs no database read.
    const hash = key !== undefined && isWellFormedKey(key) ? hashKey(key) : undefined;
    const seen = hash && this.#known.peek(hash.toString('latin1'));
    // Its requests are counted by key id in /metrics (never the key), whatever the answer.
    if (seen) request.hubKeyId = seen.keyId;
    if (!seen) {
      // Key guessing is limited even without Redis (the limiter then counts per instance): never fails open.
      const failures = await this.#limiter.count(addressKey, FAILED_AUTH_LIMIT.windowMs, nowMs);
      if (failures >= FAILED_AUTH_LIMIT.limit) {
        const decision = await this.#limit(addressKey, FAILED_AUTH_LIMIT, nowMs);
        throw rateLimited(
          'Too many failed authentications from this address; wait a minute before trying again.',
          decision,
          rateLimitHeaders([{ policy: FAILED_AUTH_LIMIT, decision }]),
        );
      }
    }
    if (key === undefined || hash === undefined) {
      // No well-formed key: the refusal says what arrived instead (Basic, X-API-Key, an OAuth token…).
      throw await this.#refusal(key, undefined, addressKey, nowMs, hubApiReceivedMessage(request.headers));
    }
    const known = rideAlong ? seen : undefined;
    const charging = options.charge ?? true;
    const admittedAt = new Date(nowMs);
    if (known) {
      const charge = charging ? await this.#charge(known, reply, nowMs, options.extra) : await this.#chargeConditional(known, nowMs);
      const check = new RideAlongCheck(keyVerdictStatement(hash), async (rows) => {
        await this.#admit(key, hash, keyVerdictOf(rows), addressKey, nowMs);
      });
      // Over its limit: the verdict first all the same, so a revoked key still hears 401.
      if (!charge.allowed) {
        await check.settle(this.#db.pool);
        throw refusedBy(charge);
      }
      return { admission: { caller: known, db: { ...this.#db, check }, charge, admittedAt }, check };
    }
    const caller = await this.#admit(key, hash, await findKeyByHash(this.#db, hash), addressKey, nowMs);
    request.hubKeyId = caller.keyId;
    const charge = charging ? await this.#charge(caller, reply, nowMs, options.extra) : await this.#chargeConditional(caller, nowMs);
    if (!charge.allowed) throw refusedBy(charge);
    return { admission: { caller, db: this.#db, charge, admittedAt } };
  }

  /**
   * A conditional request counts only against the key's conditional ceiling until its validator
   * is compared: what it is charged in the per-key windows comes later, and only if it is not
   * answered 304 (`chargeLater`). Its charge is not kept: it stays counted in the ceiling.
   */
  async #chargeConditional(caller: CallerKey, nowMs: number): Promise<RateCharge> {
    const charge = await this.#limitAll(caller, [HUB_CONDITIONAL_LIMIT], nowMs);
    return charge.allowed ? NOT_CHARGED : charge;
  }

  /**
   * Admits a key by its verdict and counts the request towards its usage, or throws: 401 (unknown,
   * revoked, expired — at the request's time, so no job has to mark it —, embed) or 403 (hub suspended).
   */
  async #admit(key: string, hash: Buffer, verdict: KeyVerdict | undefined, addressKey: string, nowMs: number): Promise<CallerKey> {
    const hashId = hash.toString('latin1');
    if (!verdict || verdict.revoked || verdict.scope !== 'read' || isExpired(verdict, nowMs)) {
      this.#known.delete(hashId);
      throw await this.#refusal(key, verdict, addressKey, nowMs);
    }
    const caller = { keyId: verdict.keyId, hubId: verdict.hubId };
    this.#remember(hashId, caller);
    this.#usage.record(caller.keyId, new Date(nowMs));
    if (verdict.hubSuspended)
      throw new ApiError(403, 'hub_access_suspended', "This hub's API access is suspended. Contact your account manager.");
    return caller;
  }

  /**
   * Counts a request that `authenticate` admitted with `charge: false` (its conditions did not
   * match); throws 429 when over a limit. Returns what it counted (given back if a 304 follows).
   */
  async chargeLater(admission: Admission, reply: FastifyReply, extra: RatePolicy | undefined): Promise<RateCharge> {
    const charge = await this.#charge(admission.caller, reply, this.#clock.now().getTime(), extra);
    if (!charge.allowed) throw refusedBy(charge);
    return charge;
  }

  /**
   * A request answered 304 Not Modified: counted in the key's usage as a conditional hit, and not
   * against its limits (GitHub's rule; `charged`: what `authenticate` counted is given back); its
   * RateLimit headers say where the windows stand.
   */
  async notModified(admission: Admission, reply: FastifyReply, extra: RatePolicy | undefined, charged: boolean): Promise<void> {
    const now = this.#clock.now();
    if (charged) await this.#safe(() => this.#limiter.refund(admission.charge), undefined);
    this.#usage.recordNotModified(admission.caller.keyId, admission.admittedAt);
    const policies = extra ? [HUB_KEY_LIMIT, extra] : [HUB_KEY_LIMIT];
    const windows = this.#windows(admission.caller, policies);
    const decisions = await this.#safe(() => this.#limiter.peekAll(windows, now.getTime()), allowedCharge(windows).decisions);
    reply.headers(rateLimitHeaders(policies.map((policy, i) => ({ policy, decision: decisions[i]! }))));
  }

  /** Counts the request against the per-key limit (and `extra`) and sets the RateLimit headers. */
  async #charge(caller: CallerKey, reply: FastifyReply, nowMs: number, extra: RatePolicy | undefined): Promise<RateCharge> {
    const policies = extra ? [HUB_KEY_LIMIT, extra] : [HUB_KEY_LIMIT];
    const charge = await this.#limitAll(caller, policies, nowMs);
    reply.headers(rateLimitHeaders(policies.map((policy, i) => ({ policy, decision: charge.decisions[i]! }))));
    return charge;
  }

  async #refusal(
    key: string | undefined,
    verdict: KeyVerdict | undefined,
    addressKey: string,
    nowMs: number,
    received?: string,
  ): Promise<ApiError> {
    const decision = await this.#limit(addressKey, FAILED_AUTH_LIMIT, nowMs);
    // A plain Bearer challenge (RFC 6750), deliberately without resource_metadata: this endpoint
    // takes fixed keys, and an MCP client that saw OAuth metadata would start a sign-in dance.
    const headers = { ...rateLimitHeaders([{ policy: FAILED_AUTH_LIMIT, decision }]), 'www-authenticate': 'Bearer realm="hubops-hub-api"' };
    const expiredAt = verdict && !verdict.revoked && isExpired(verdict, nowMs) ? verdict.expiresAt!.toISOString() : undefined;
    const message =
      received ??
      (key === undefined
        ? 'Missing API key: send `Authorization: Bearer <HUB_API_KEY>`.'
        : expiredAt && verdict!.replacedBy
          ? `This API key was rolled and its grace period ended at ${expiredAt}: use the key that replaced it (${verdict!.replacedBy}).`
          : expiredAt
            ? `This API key expired at ${expiredAt}. Create a new key in the web admin (Manage Hub → API).`
            : verdict?.scope === 'embed' && !verdict.revoked
              ? 'This is an embed key: it only signs embedded views. Create a read key for the Hub API.'
              : 'The API key is not valid: it is mistyped, revoked or unknown.');
    return new ApiError(401, 'invalid_api_key', message, { headers });
  }

  /** Keys admitted before, by hash: only their id and hub, which never change (never a verdict). */
  #remember(hashId: string, caller: CallerKey): void {
    if (this.#known.peek(hashId) === undefined) this.#known.set(hashId, caller);
  }

  /**
   * Charges the `nth` tool call of one MCP POST, which `authenticate` counted once per-key. The
   * first call uses that count and adds only its operation's limit; later calls (a JSON-RPC
   * batch) count per-key again, in the same atomic step. A refused call consumes nothing: when
   * the first is refused, the POST's own count is given back. Throws 429 when refused.
   */
  async chargeToolCall(admission: Admission, extra: RatePolicy | undefined, nth: number): Promise<void> {
    const policies = toolCallWindows<RatePolicy>(HUB_KEY_LIMIT, extra, nth);
    if (policies.length === 0) return;
    const charge = await this.#limitAll(admission.caller, policies, this.#clock.now().getTime());
    if (charge.allowed) return;
    if (nth === 1) await this.#safe(() => this.#limiter.refund(admission.charge), undefined);
    throw refusedBy(charge);
  }

  /** Counts one request against the caller's windows for these policies (all or none). */
  async #limitAll(caller: CallerKey, policies: RatePolicy[], nowMs: number): Promise<RateCharge> {
    const windows = this.#windows(caller, policies);
    // Usage limits alone may fail open: a limiter error (never an outage of Redis, counted per
    // instance) must not take the API down with it.
    return this.#safe(() => this.#limiter.hitAll(windows, nowMs), allowedCharge(windows));
  }

  /** The caller's windows for these policies: the per-key one, and one per operation limit. */
  #windows(caller: CallerKey, policies: RatePolicy[]): RateWindow[] {
    return policies.map((p) => ({
      key: p === HUB_KEY_LIMIT ? `key:${caller.keyId}` : `op:${p.policy}:${caller.keyId}`,
      limit: p.limit,
      windowMs: p.windowMs,
    }));
  }

  /** Counts a failed authentication; never fails open (it protects keys from guessing). */
  async #limit(key: string, policy: RatePolicy, nowMs: number): Promise<RateDecision> {
    return this.#limiter.hit(key, policy.limit, policy.windowMs, nowMs);
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

/** What a request admitted with `charge: false` has been counted as so far: nothing. */
const NOT_CHARGED: RateCharge = { allowed: true, decisions: [], counted: [] };

/** The 429 of a refused charge: Retry-After is when every window that refused has room again. */
function refusedBy(charge: RateCharge): ApiError {
  const refusing = charge.decisions.filter((d) => !d.allowed);
  const decision = refusing.reduce((a, b) => (b.resetSeconds > a.resetSeconds ? b : a), refusing[0] ?? charge.decisions[0]!);
  return rateLimited(`Too many requests for this key; retry in ${decision.resetSeconds} s.`, decision);
}

/** A key stops working at its expiry instant itself. */
const isExpired = (verdict: KeyVerdict, nowMs: number): boolean => verdict.expiresAt !== null && verdict.expiresAt.getTime() <= nowMs;

function bearerToken(header: string | undefined): string | undefined {
  const match = header?.match(/^Bearer[ ]+(\S+)\s*$/i);
  return match?.[1];
}
