// The transport every Google API client here shares (Google Ads, Business Profile): one HTTP
// exchange under a body cap and a deadline, no redirect followed, answers that are not what the
// documentation promises turned into PlatformError('bad_answer'); and the OAuth 2.0 token
// endpoint (Using OAuth 2.0 for Web Server Applications): the code exchange and access tokens from
// a refresh token, kept in memory keyed by a hash of the refresh token. Tokens, the client secret
// and a code never reach an error message (`scrub`).
import { createHash } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { agentFor, collectBody, deadline } from '../wire-http.ts';
import { setTimeout as delay } from 'node:timers/promises';
import { SPEND_THROTTLE_WAIT_MAX_MS } from '../../policy.ts';
import { PlatformError, PlatformThrottled, type PlatformFailureKind } from '../ad-platform.ts';
import { traceOutbound } from '../../platform/tracing.ts';

export interface GoogleTransportOptions {
  /** The OAuth token endpoint's origin: https://oauth2.googleapis.com in production (GOOGLE_OAUTH_URL). */
  oauthUrl?: string;
  /** The operator's OAuth client (GOOGLE_OAUTH_CLIENT_ID / GOOGLE_OAUTH_CLIENT_SECRET). */
  clientId: string;
  clientSecret: string;
  /** Which API the calls are for, as traces name it. */
  platform: 'google_ads' | 'google_business';
  /** Other texts never to show in an error (a developer token). */
  secrets?: string[];
  /** Waits out quota errors; tests inject one that does not really wait. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** The clock access-token lifetimes are measured with. */
  now?: () => Date;
  /** Per request, from sending it to the last byte of the answer. */
  timeoutMs: number;
  /** An answer larger than this is refused as soon as it passes the cap. */
  maxBodyBytes: number;
}

const DEFAULT_OAUTH_URL = 'https://oauth2.googleapis.com';
/** An access token is renewed this long before Google says it expires (they live an hour). */
const ACCESS_TOKEN_MARGIN_MS = 5 * 60_000;
/** Access tokens kept in memory, one per refresh token (oldest out first). */
const TOKEN_CACHE_MAX = 10_000;
/**
 * A quota error without a retryDelay: RESOURCE_TEMPORARILY_EXHAUSTED is a short-term rate ("too many
 * requests in a short amount of time"), waited out briefly; RESOURCE_EXHAUSTED is most often the
 * daily operations quota, which no short wait mends (QuotaErrorEnum; "API limits and quotas").
 */
export const SHORT_QUOTA_WAIT_MS = 30_000;
export const LONG_QUOTA_WAIT_MS = 60 * 60_000;
export const MAX_QUOTA_WAIT_MS = 24 * 60 * 60_000;
export const TOKEN_TEXT = /^[\x21-\x7e]{1,4096}$/;

export type Json = Record<string, unknown>;
export const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * An answer whose status came but whose body could not be read whole (cut off, past the deadline,
 * over the cap, in an unknown encoding): a `bad_answer` that keeps the status, which still says
 * what the platform did. A 2xx to a request that creates something means it was created.
 */
export class UnreadAnswer extends PlatformError {
  readonly status: number;
  constructor(status: number, message: string) {
    super('bad_answer', message);
    this.status = status;
  }
}

/** An answer past the body cap: a spend window that gets one is asked again in halves. */
export class AnswerTooLarge extends UnreadAnswer {}

/** One caller's sequence of requests: its refresh token, its abort signal and the quota time it has waited. */
export interface Session {
  refreshToken: string | undefined;
  /** Texts that must never appear in an error (tokens, the client secret, a code, the developer token). */
  secrets: string[];
  signal: AbortSignal | undefined;
  waitedMs: number;
}

export interface Answer {
  status: number;
  /** Whether the answer says it is JSON (content-type application/json). */
  json: boolean;
  /** The Retry-After header, as sent. */
  retryAfter: string | undefined;
  text: string;
  bytes: number;
}

/**
 * A POST that went out whole and got no answer (a timeout, a reset), or, for a request that creates
 * something, an answer that does not say whether it was done, or says it was (a 2xx) without a body
 * that says what was made: the platform may have acted on it. A reader may send it again; a
 * publisher must not (it looks the publication up instead).
 */
export class NoAnswer extends PlatformError {
  constructor(message: string, details: { platformMessage?: string; platformCode?: string } = {}) {
    super('unreachable', message, details);
  }
}

export const possessive = (who: string) => (who.endsWith('s') ? `${who}'` : `${who}'s`);

/** `promise`, or the signal's reason as soon as it is aborted. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const stop = () => reject(signal.reason);
    signal.addEventListener('abort', stop, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', stop));
  });
}

export type GoogleTransport = ReturnType<typeof createGoogleTransport>;

export function createGoogleTransport(options: GoogleTransportOptions) {
  const oauthBase = (options.oauthUrl ?? DEFAULT_OAUTH_URL).replace(/\/+$/, '');
  const { clientId, clientSecret, timeoutMs, maxBodyBytes } = options;
  const fixedSecrets = [clientSecret, ...(options.secrets ?? [])];
  const now = () => (options.now ? options.now().getTime() : Date.now());
  const sleep =
    options.sleep ??
    (async (ms: number, signal?: AbortSignal) => {
      // A cancelled wait ends with the caller's own reason, as a cancelled request does.
      await delay(ms, undefined, signal ? { signal } : {}).catch((error: unknown) => {
        throw signal?.aborted ? signal.reason : error;
      });
    });

  /** Access tokens by a hash of the refresh token they came from: the refresh token itself is never a key. */
  const accessTokens = new Map<string, { token: string; expiresAt: number }>();
  const cacheKey = (refreshToken: string) => createHash('sha256').update(`${clientId}\0${refreshToken}`).digest('base64url');
  const remember = (refreshToken: string, token: string, expiresAt: number) => {
    const key = cacheKey(refreshToken);
    accessTokens.delete(key);
    if (accessTokens.size >= TOKEN_CACHE_MAX) accessTokens.delete(accessTokens.keys().next().value!);
    accessTokens.set(key, { token, expiresAt });
  };

  const scrub = (text: string, s: Session) =>
    s.secrets.reduce((out, secret) => (secret.length >= 4 ? out.split(secret).join('[redacted]') : out), text);

  /** A session for calls made with `refreshToken` (undefined: the code exchange). */
  const session = (refreshToken: string | undefined, signal?: AbortSignal, extraSecrets: string[] = []): Session => ({
    refreshToken,
    secrets: [...(refreshToken ? [refreshToken] : []), ...fixedSecrets, ...extraSecrets],
    signal,
    waitedMs: 0,
  });

  /** One HTTP exchange: the answer's status and its body as text (JSON only; a redirect, another type or a body over the cap is a bad_answer). */
  async function send(
    s: Session,
    who: string,
    what: string,
    method: 'GET' | 'POST',
    url: URL,
    extraHeaders: Record<string, string>,
    body: string | undefined,
  ): Promise<Answer> {
    s.signal?.throwIfAborted();
    const headers: Record<string, string> = { accept: 'application/json', 'accept-encoding': 'gzip, deflate, br', ...extraHeaders };
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    const due = deadline(timeoutMs, s.signal);
    const { signal } = due;
    // node:http rather than fetch, as in the Meta client: plain Buffer chunks, and no redirect is followed.
    let answered = false;
    let status = 0;
    let written = false;
    const answer = await traceOutbound(
      options.platform,
      method,
      url,
      () =>
        new Promise<Answer>((resolve, reject) => {
          let settled = false;
          const settle = (error: unknown, value?: Answer) => {
            if (settled) return;
            settled = true;
            if (error === undefined) return resolve(value!);
            request.destroy();
            reject(error);
          };
          const request = (url.protocol === 'https:' ? https : http).request(
            url,
            { method, headers, signal, agent: agentFor(url) },
            (response) => {
              answered = true;
              status = response.statusCode ?? 0;
              if (status >= 300 && status < 400)
                return settle(
                  new PlatformError('bad_answer', `${who} answered ${what} with a redirect (HTTP ${status}); the API never redirects`),
                );
              const type = (response.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
              // Another type (an HTML error page) is read too, under the same cap: its status still says what happened.
              const json = type === 'application/json';
              const retryAfter = typeof response.headers['retry-after'] === 'string' ? response.headers['retry-after'] : undefined;
              const tooLarge = () =>
                new AnswerTooLarge(status, `${possessive(who)} answer to ${what} is larger than ${maxBodyBytes} bytes`);
              collectBody(response, {
                maxBodyBytes,
                signal,
                tooLarge,
                unknownEncoding: () => new UnreadAnswer(status, `${who} answered ${what} in an unknown content encoding`),
                settle: (error, body) => settle(error, body && { status, json, retryAfter, ...body }),
              });
            },
          );
          request.on('error', (error) => settle(error));
          request.on('finish', () => {
            written = true;
          });
          request.end(body);
        }),
    )
      .catch((error: unknown) => {
        if (error instanceof PlatformError) throw error;
        if (s.signal?.aborted) throw s.signal.reason;
        if (!answered) {
          // The whole request went out and no answer came: the platform may have acted on it.
          if (written && method === 'POST')
            throw new NoAnswer(`${who} did not answer ${what}${due.timedOut() ? ` within ${timeoutMs / 1000} s` : ''} after it was sent`);
          if (due.timedOut()) throw new PlatformError('unreachable', `${who} did not answer ${what} within ${timeoutMs / 1000} s`);
          const code = (error as { code?: unknown }).code;
          throw new PlatformError('unreachable', `${who} could not be reached for ${what}${typeof code === 'string' ? ` (${code})` : ''}`);
        }
        if (due.timedOut())
          throw new UnreadAnswer(status, `${possessive(who)} answer to ${what} did not finish within ${timeoutMs / 1000} s`);
        throw new UnreadAnswer(status, `${possessive(who)} answer to ${what} was cut off`);
      })
      .finally(() => due.done());
    return answer;
  }

  /** The answer's JSON, or undefined when it has none: a body of another type, or not valid JSON (see statusOnly). */
  function parseJson(answer: Answer): unknown {
    if (!answer.json) return undefined;
    try {
      return JSON.parse(answer.text);
    } catch {
      return undefined;
    }
  }

  /**
   * What an answer without a documented error means (an HTML error page from a proxy or a front
   * end, a body that is not valid JSON, JSON without an error): its HTTP status still tells. A server error is temporary; 404 is a wrong base URL or a
   * retired API version ("Sunset" versions answer 404), which no retry mends; 401 and 403 are
   * their google.rpc equivalents (UNAUTHENTICATED, PERMISSION_DENIED); a 2xx that is not JSON is
   * not what the documentation promises. 429 is handled by the callers (a wait).
   */
  function statusOnly(answer: Answer, who: string, what: string, unauthenticated: PlatformFailureKind): PlatformError {
    const words = `${who} answered ${what} with HTTP ${answer.status} and ${answer.json ? 'no error in a form it documents' : 'no JSON'}`;
    if (answer.status >= 500) return new PlatformError('platform_error', `${words}: a temporary error`);
    if (answer.status === 404) return new PlatformError('invalid_request', `${words}: check the base URL and the API version`);
    if (answer.status === 401) return new PlatformError(unauthenticated, `${words}: the credentials were refused`);
    if (answer.status === 403) return new PlatformError('missing_permission', `${words}: access was refused`);
    return new PlatformError('bad_answer', `${words} (${answer.bytes} bytes)`);
  }

  /** A Retry-After header (delta-seconds or an HTTP-date; RFC 9110 §10.2.3) in milliseconds; undefined when absent or unreadable. */
  function retryAfterMs(header: string | undefined): number | undefined {
    if (header === undefined) return undefined;
    const text = header.trim();
    if (/^\d{1,9}$/.test(text)) return Number(text) * 1000;
    const at = Date.parse(text);
    return Number.isNaN(at) || !/[a-z]/i.test(text) ? undefined : Math.max(0, at - now());
  }

  /** Waits `ms` within the session's budget (SPEND_THROTTLE_WAIT_MAX_MS in all), or throws PlatformThrottled for the caller to reschedule. */
  async function waitOrThrottle(s: Session, ms: number, message: string, platformMessage: string | undefined): Promise<void> {
    if (s.waitedMs + ms > SPEND_THROTTLE_WAIT_MAX_MS) throw new PlatformThrottled(ms, message, platformMessage);
    s.waitedMs += ms;
    await sleep(ms, s.signal);
  }

  // --- OAuth 2.0 (Using OAuth 2.0 for Web Server Applications)

  /** POST {oauthUrl}/token with the client's credentials in the form (client_secret_post, as Google's own samples do). */
  async function tokenRequest(
    s: Session,
    what: string,
    params: Record<string, string>,
    invalidGrant: PlatformFailureKind,
  ): Promise<{ accessToken: string; expiresAt: number; refreshToken: string | undefined }> {
    const who = "Google's token endpoint";
    const body = new URLSearchParams({ client_id: clientId, client_secret: clientSecret, ...params }).toString();
    let answer: Answer;
    let json: unknown;
    for (;;) {
      try {
        answer = await send(
          s,
          who,
          what,
          'POST',
          new URL(`${oauthBase}/token`),
          { 'content-type': 'application/x-www-form-urlencoded' },
          body,
        );
      } catch (error) {
        // A token request sent without an answer (or one cut off) made nothing anyone waits on:
        // unreachable (tried again later), never NoAnswer, which the publishing connectors read
        // as "the post may have been made".
        if (error instanceof NoAnswer || error instanceof UnreadAnswer) throw new PlatformError('unreachable', error.message);
        throw error;
      }
      json = parseJson(answer);
      const code = isObject(json) && typeof json.error === 'string' ? json.error.slice(0, 64) : undefined;
      // Too many requests (HTTP 429, or the rate-limit words of RFC 8628 §3.5 and Google's own):
      // a pause, not a broken login. Retry-After says how long when Google sends it.
      if (answer.status === 429 || code === 'slow_down' || code === 'rate_limit_exceeded') {
        const description =
          isObject(json) && typeof json.error_description === 'string' ? json.error_description.slice(0, 2000) : undefined;
        const ms = Math.min(retryAfterMs(answer.retryAfter) ?? SHORT_QUOTA_WAIT_MS, MAX_QUOTA_WAIT_MS);
        await waitOrThrottle(
          s,
          ms,
          `${who} asks to slow down for ${what}: try again in ${Math.ceil(ms / 1000)} s`,
          description === undefined ? undefined : scrub(description, s),
        );
        continue;
      }
      break;
    }
    if (!isObject(json)) {
      if (answer.json && answer.status >= 200 && answer.status < 300 && json !== undefined)
        throw new PlatformError('bad_answer', `${possessive(who)} answer to ${what} is not a JSON object`);
      // A 401 without an OAuth error is the client being refused, as invalid_client is (RFC 6749 §5.2).
      throw statusOnly(answer, who, what, 'invalid_request');
    }
    if (json.error !== undefined || answer.status < 200 || answer.status >= 300) {
      // RFC 6749 §5.2: { error, error_description }. Google's invalid_grant says why in its
      // description ("Token has been expired or revoked.", "Bad Request", "Malformed auth code.").
      if (typeof json.error !== 'string' || json.error === '') {
        if (answer.status >= 500) throw statusOnly(answer, who, what, 'invalid_request');
        throw new PlatformError('bad_answer', `${who} answered ${what} with HTTP ${answer.status} and no OAuth error`);
      }
      const code = json.error.slice(0, 64);
      const description = typeof json.error_description === 'string' ? json.error_description.slice(0, 2000) : '';
      const details = { platformMessage: scrub(description || code, s), platformCode: scrub(code, s) };
      if (code === 'invalid_grant')
        throw new PlatformError(
          invalidGrant,
          invalidGrant === 'needs_reconnect'
            ? `Google refused ${what}: the refresh token expired or was revoked (invalid_grant); connect the account again`
            : `Google refused ${what} (invalid_grant)`,
          details,
        );
      // The operator's OAuth client itself is refused: nothing an account admin's retry mends.
      if (code === 'invalid_client' || code === 'unauthorized_client')
        throw new PlatformError(
          'invalid_request',
          `Google refused ${what}: it does not accept the OAuth client id or secret (${code})`,
          details,
        );
      if (code === 'server_error' || code === 'temporarily_unavailable' || answer.status >= 500)
        throw new PlatformError('platform_error', `Google refused ${what} with a temporary error (${code})`, details);
      throw new PlatformError('invalid_request', `Google refused ${what} (${details.platformCode})`, details);
    }
    const { access_token: accessToken, expires_in: expiresIn, refresh_token: refreshToken } = json;
    if (typeof accessToken !== 'string' || !TOKEN_TEXT.test(accessToken))
      throw new PlatformError('bad_answer', `${possessive(who)} answer to ${what} has no valid access_token`);
    s.secrets.push(accessToken);
    if (typeof expiresIn !== 'number' || !Number.isSafeInteger(expiresIn) || expiresIn <= 0)
      throw new PlatformError('bad_answer', `${possessive(who)} answer to ${what} has no valid expires_in`);
    if (refreshToken !== undefined && (typeof refreshToken !== 'string' || !TOKEN_TEXT.test(refreshToken)))
      throw new PlatformError('bad_answer', `${possessive(who)} answer to ${what} has a refresh_token that is not a token`);
    if (refreshToken !== undefined) s.secrets.push(refreshToken);
    return { accessToken, expiresAt: now() + expiresIn * 1000, refreshToken };
  }

  /** Refreshes under way, by the cache key: calls that need a new access token at once share one. */
  const refreshing = new Map<string, Promise<{ accessToken: string }>>();

  /**
   * An access token for the session's refresh token: the one in memory while it has more than a
   * few minutes left, else a new one. Calls that find none at the same moment (a publisher's batch
   * of posts to the locations of one login) wait for one refresh rather than each asking Google.
   */
  async function accessToken(s: Session, fresh: boolean): Promise<string> {
    const refreshToken = s.refreshToken!;
    const key = cacheKey(refreshToken);
    const cached = accessTokens.get(key);
    if (!fresh && cached && cached.expiresAt - ACCESS_TOKEN_MARGIN_MS > now()) {
      s.secrets.push(cached.token);
      return cached.token;
    }
    let shared = refreshing.get(key);
    if (!shared) {
      // Under a session of its own: one caller giving up does not fail the others' refresh.
      shared = tokenRequest(
        session(refreshToken),
        'the access token refresh',
        { grant_type: 'refresh_token', refresh_token: refreshToken },
        'needs_reconnect',
      )
        .then((tokens) => {
          remember(refreshToken, tokens.accessToken, tokens.expiresAt);
          return tokens;
        })
        .finally(() => refreshing.delete(key));
      refreshing.set(key, shared);
    }
    const tokens = await abortable(shared, s.signal);
    s.secrets.push(tokens.accessToken);
    return tokens.accessToken;
  }

  /** POST {oauthUrl}/token, grant_type=authorization_code; `refreshToken` is undefined when Google leaves it out. */
  async function exchangeCode(p: { redirectUri: string; code: string }) {
    const s = session(undefined, undefined, [p.code]);
    const tokens = await tokenRequest(
      s,
      'the authorization code exchange',
      { grant_type: 'authorization_code', code: p.code, redirect_uri: p.redirectUri },
      'invalid_request',
    );
    if (tokens.refreshToken !== undefined) remember(tokens.refreshToken, tokens.accessToken, tokens.expiresAt);
    return { refreshToken: tokens.refreshToken, accessToken: tokens.accessToken, expiresAt: new Date(tokens.expiresAt) };
  }

  return { now, sleep, scrub, session, send, parseJson, statusOnly, retryAfterMs, waitOrThrottle, accessToken, exchangeCode };
}

/**
 * Google's consent screen for `scopes`: offline, so a refresh token lets syncs run without the
 * admin; consent every time, since Google issues a refresh token only at a consent, so a reconnect
 * gets one too.
 */
export function googleAuthorizeUrl(p: {
  accountsUrl: string;
  clientId: string;
  redirectUri: string;
  state: string;
  scopes: string[];
}): string {
  const url = new URL(`${p.accountsUrl.replace(/\/+$/, '')}/o/oauth2/v2/auth`);
  url.search = new URLSearchParams({
    client_id: p.clientId,
    redirect_uri: p.redirectUri,
    response_type: 'code',
    scope: p.scopes.join(' '),
    access_type: 'offline',
    prompt: 'consent',
    state: p.state,
  }).toString();
  return url.toString();
}
