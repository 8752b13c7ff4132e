// The OpenAI Ads API (ChatGPT Ads) wire client: the key's ad account and its hourly ad-group spend
// from the Insights API. It follows OpenAI's documented wire format (./wire.ts), so the same code
// talks to api.ads.openai.com and to the loopback sandbox (./sandbox.ts). Every answer is checked
// before it is believed: a wrong type, a missing field, HTML, a redirect, a body over the cap or past
// the deadline is a PlatformError('bad_answer'), never a crash. The API key travels only in the
// Authorization header and is never written into an error message.
//
// What the documentation says, and what we assume where it says nothing (developers.openai.com/ads):
// - API overview, Authentication: base URL https://api.ads.openai.com/v1; `Authorization: Bearer`
//   with an Ads API key issued in Ads Manager › Settings, each key scoped to one ad account. No OAuth:
//   the admin pastes the key. Its format is not documented; we accept what can travel as a bearer
//   token (isOpenAIAdsKey).
// - Ad Account reference: GET /ad_account → { id, name, url, preview_url, timezone, currency_code }.
//   The quickstart also shows `status` ("active"); when it is missing we take the account as active.
// - Insights reference: GET /ad_account/insights with time_granularity (hourly, daily, monthly,
//   none), aggregation_level=ad_group, fields[], one time_ranges[] object (we send `unix_range`,
//   bounds that "must be … not in the future, and normalize to valid full-hour boundaries"), limit
//   1–2000, and cursor paging: `after` = the previous page's `last_id` while `has_more`. Rows carry
//   `start_time` / `end_time` in Unix seconds; we place each bucket in the account's zone ourselves.
// - Assumed: `spend` is in the unit CHATGPT_ADS_SPEND_UNIT names (./spend.ts: the examples show a
//   decimal in the account currency), in the account's currency (a row naming another in
//   `currency` or `currency_code`, neither documented on rows, is refused); a window of at most 25 hours per hourly request (an
//   OpenAI-compatible API documents `hourly_range_too_wide` past that, and a local day is at most 25
//   hours, so we ask one local day per request); errors in OpenAI's shape `{error: {message, type,
//   param, code}}` with its HTTP statuses; rate-limit headers as on OpenAI's other APIs
//   (`retry-after`, `x-ratelimit-*-requests`).
import http from 'node:http';
import https from 'node:https';
import { agentFor, collectBody, deadline } from '../wire-http.ts';
import { setTimeout as delay } from 'node:timers/promises';
import { CHATGPT_ADS_SPEND_UNIT, SPEND_THROTTLE_WAIT_MAX_MS } from '../../policy.ts';
import {
  PlatformError,
  PlatformThrottled,
  type AdPlatformClient,
  type LocalDayRange,
  type PlatformAdAccount,
  type PlatformCredential,
  type PlatformSpendRow,
} from '../ad-platform.ts';
import { isTimeZoneName } from '../../platform/time.ts';
import { traceOutbound } from '../../platform/tracing.ts';
import { spendDecimals, spendToMicros } from './spend.ts';
import {
  API_PREFIX,
  INSIGHTS_FIELDS,
  INSIGHTS_MAX_LIMIT,
  parseGoDuration,
  RATE_HEADERS,
  CURRENCY_KEYS,
  UNIT_KEYS,
  type UnixRange,
} from './wire.ts';
import { dateOf, dayNumber, HOUR_MS, localHour, startOfLocalDay } from './zone.ts';

export interface OpenAIAdsClientOptions {
  /** https://api.ads.openai.com (with or without /v1) in production (OPENAI_ADS_URL), the sandbox's url in tests and the demo. */
  baseUrl?: string;
  /** Waits out throttles; tests inject one that does not really wait. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** The clock that says which hours are over (the API refuses a window that ends in the future). */
  now?: () => Date;
  /** Per request, from sending it to the last byte of the answer. */
  timeoutMs?: number;
  /** An answer larger than this is refused (bad_answer) as soon as it passes the cap. */
  maxBodyBytes?: number;
  /** Rows per Insights page (1–2000). */
  pageLimit?: number;
}

/** The real host (Authentication › Base URL, without the /v1 every path names). */
const OPENAI_ADS_DEFAULT_URL = 'https://api.ads.openai.com';

/** KEY below in words, for the error a key that cannot be one gets (the admin sees it when connecting fails). */
const KEY_RULE = '20 to 512 characters: letters, digits and - . _ ~ + / = (no spaces)';
/** RFC 6750's b64token, the text a bearer token may be: anything else cannot be the key. */
const KEY = /^[A-Za-z0-9._~+/-]{20,512}={0,2}$/;

/** Whether `text` can be an OpenAI Ads API key (checked before any request; the key is never echoed). */
export function isOpenAIAdsKey(text: unknown): text is string {
  return typeof text === 'string' && text.length <= 514 && KEY.test(text);
}

const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024;
/** No local day has this many pages (20 million ad-group hours); an answer that does is looping. */
const MAX_PAGES = 10_000;
/** A 429 without a usable header is waited out this long. */
const DEFAULT_THROTTLE_WAIT_MS = 60_000;
/**
 * The shortest wait after a 429, whatever its headers say: `retry-after: 0`, `retry-after-ms: 1` or
 * a date in the past would otherwise resend at once (the Google Ads client waits at least 1 s too).
 */
const MIN_THROTTLE_WAIT_MS = 1000;
/** 429s in a row for one request before it is handed to the engine as PlatformThrottled, to reschedule. */
const MAX_THROTTLE_RETRIES = 10;
/** No header makes us wait longer than a day (the engine reschedules anything past two minutes anyway). */
const MAX_THROTTLE_WAIT_MS = 86_400_000;
/** Our clock may run ahead of OpenAI's: a window ends this much before "now", then on the hour. */
const CLOCK_MARGIN_MS = 60_000;

/** Ad account and entity ids: letters, digits, _ and - (act_123, adacct_123, cmpn_101, adgrp_301). */
const ACCOUNT_ID = /^[A-Za-z0-9_-]{1,64}$/;

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** One caller's sequence of requests: its key, its abort signal and the throttle time it has spent. */
interface Session {
  key: string;
  signal: AbortSignal | undefined;
  waitedMs: number;
  /** A wait the rate-limit headers asked for before the next request. */
  pendingWaitMs: number;
  /** The `param` of the last error answer: which query parameter OpenAI refused. */
  refusedParam: string | undefined;
}

interface Answer {
  status: number;
  body: unknown;
  headers: http.IncomingHttpHeaders;
}

/** A bucket's place: its account-local day and hour, or the whole day (hour null); and its end_time. */
interface Bucket {
  date: string;
  hour: number | null;
  end: number;
}

export function createOpenAIAdsClient(options: OpenAIAdsClientOptions = {}): AdPlatformClient {
  // The host, or the documented base URL with its /v1: either names the same API.
  const base = (options.baseUrl ?? OPENAI_ADS_DEFAULT_URL).replace(/\/+$/, '').replace(/\/v1$/, '');
  const sleep =
    options.sleep ??
    (async (ms: number, signal?: AbortSignal) => {
      // A cancelled wait ends with the caller's own reason, as a cancelled request does.
      await delay(ms, undefined, signal ? { signal } : {}).catch((error: unknown) => {
        throw signal?.aborted ? signal.reason : error;
      });
    });
  const now = options.now ?? (() => new Date());
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const pageLimit = Math.min(Math.max(Math.floor(options.pageLimit ?? INSIGHTS_MAX_LIMIT), 1), INSIGHTS_MAX_LIMIT);

  const scrub = (text: string, session: Session) => text.split(session.key).join('[redacted]');

  /** One HTTP exchange: the answer's status, its parsed JSON body and its headers. */
  async function exchange(session: Session, what: string, path: string, params: URLSearchParams): Promise<Answer> {
    session.signal?.throwIfAborted();
    const url = new URL(`${base}${API_PREFIX}${path}`);
    url.search = params.toString();
    const headers = {
      accept: 'application/json',
      'accept-encoding': 'gzip, deflate, br',
      authorization: `Bearer ${session.key}`,
    };
    const due = deadline(timeoutMs, session.signal);
    const { signal } = due;
    // node:http rather than fetch, as in the Meta client: pages are read as plain Buffer chunks, and
    // redirects are never followed.
    let answered = false;
    const answer = await traceOutbound(
      'chatgpt_ads',
      'GET',
      url,
      () =>
        new Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }>((resolve, reject) => {
          let settled = false;
          const settle = (error: unknown, value?: { status: number; headers: http.IncomingHttpHeaders; text: string }) => {
            if (settled) return;
            settled = true;
            if (error === undefined) return resolve(value!);
            request.destroy();
            reject(error);
          };
          const request = (url.protocol === 'https:' ? https : http).request(
            url,
            { method: 'GET', headers, signal, agent: agentFor(url) },
            (response) => {
              answered = true;
              const status = response.statusCode ?? 0;
              if (status >= 300 && status < 400)
                return settle(
                  new PlatformError('bad_answer', `OpenAI Ads answered ${what} with a redirect (HTTP ${status}); the API never redirects`),
                );
              const type = (response.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
              if (type !== 'application/json') {
                // A gateway's HTML error page in front of the API is its failure, not a wrong answer.
                if (status >= 500)
                  return settle(
                    new PlatformError('platform_error', `OpenAI Ads failed on ${what} (HTTP ${status})`, { platformCode: String(status) }),
                  );
                return settle(
                  new PlatformError(
                    'bad_answer',
                    `OpenAI Ads answered ${what} with ${type || 'no content type'} (HTTP ${status}), not JSON`,
                  ),
                );
              }
              const tooLarge = () => new PlatformError('bad_answer', `OpenAI Ads' answer to ${what} is larger than ${maxBodyBytes} bytes`);
              collectBody(response, {
                maxBodyBytes,
                signal,
                tooLarge,
                unknownEncoding: () => new PlatformError('bad_answer', `OpenAI Ads answered ${what} in an unknown content encoding`),
                settle: (error, body) => settle(error, body && { status, headers: response.headers, text: body.text }),
              });
            },
          );
          request.on('error', (error) => settle(error));
          request.end();
        }),
    )
      .catch((error: unknown) => {
        if (error instanceof PlatformError) throw error;
        if (session.signal?.aborted) throw session.signal.reason;
        if (!answered) {
          if (due.timedOut()) throw new PlatformError('unreachable', `OpenAI Ads did not answer ${what} within ${timeoutMs / 1000} s`);
          const code = (error as { code?: unknown }).code;
          throw new PlatformError(
            'unreachable',
            `OpenAI Ads could not be reached for ${what}${typeof code === 'string' ? ` (${code})` : ''}`,
          );
        }
        if (due.timedOut())
          throw new PlatformError('bad_answer', `OpenAI Ads' answer to ${what} did not finish within ${timeoutMs / 1000} s`);
        throw new PlatformError('bad_answer', `OpenAI Ads' answer to ${what} was cut off`);
      })
      .finally(() => due.done());
    let body: unknown;
    try {
      body = JSON.parse(answer.text);
    } catch {
      if (answer.status >= 500)
        throw new PlatformError('platform_error', `OpenAI Ads failed on ${what} (HTTP ${answer.status})`, {
          platformCode: String(answer.status),
        });
      throw new PlatformError(
        'bad_answer',
        `OpenAI Ads' answer to ${what} is not valid JSON (HTTP ${answer.status}, ${Buffer.byteLength(answer.text)} bytes)`,
      );
    }
    return { status: answer.status, body, headers: answer.headers };
  }

  /** A GET under the rate-limit rules; returns the answer's JSON object or throws PlatformError / PlatformThrottled. */
  async function call(session: Session, what: string, path: string, params: URLSearchParams): Promise<Json> {
    let throttleMessage: string | undefined;
    for (let throttled = 0; ; ) {
      if (session.pendingWaitMs > 0) {
        const ms = session.pendingWaitMs;
        if (session.waitedMs + ms > SPEND_THROTTLE_WAIT_MAX_MS) {
          throw new PlatformThrottled(ms, `OpenAI Ads is rate-limiting ${what}: try again in ${Math.ceil(ms / 1000)} s`, throttleMessage);
        }
        session.waitedMs += ms;
        session.pendingWaitMs = 0;
        await sleep(ms, session.signal);
      }
      const answer = await exchange(session, what, path, params);
      if (answer.status >= 200 && answer.status < 300) {
        if (!isObject(answer.body)) throw new PlatformError('bad_answer', `OpenAI Ads' answer to ${what} is not a JSON object`);
        if ('error' in answer.body && answer.body.error !== null)
          throw new PlatformError('bad_answer', `OpenAI Ads answered ${what} with HTTP ${answer.status} and an error`);
        // The budget is spent: the next request waits for the window to refill.
        if (header(answer.headers, RATE_HEADERS.remaining) === '0') session.pendingWaitMs = resetMs(answer.headers) ?? 0;
        return answer.body;
      }
      const error = errorBody(answer.body, session);
      // 429 is a rate limit unless the quota is spent (OpenAI's `insufficient_quota`): that one does not
      // pass by waiting a minute, it is a state of the account's billing (see classify).
      if (answer.status === 429 && error.code !== 'insufficient_quota' && error.type !== 'insufficient_quota') {
        const waitMs = Math.min(
          Math.max(retryAfterMs(answer.headers) ?? DEFAULT_THROTTLE_WAIT_MS, MIN_THROTTLE_WAIT_MS),
          MAX_THROTTLE_WAIT_MS,
        );
        if (++throttled > MAX_THROTTLE_RETRIES) {
          throw new PlatformThrottled(
            waitMs,
            `OpenAI Ads rate-limited ${what} ${throttled} times in a row: try again in ${Math.ceil(waitMs / 1000)} s`,
            error.message,
          );
        }
        session.pendingWaitMs = waitMs;
        throttleMessage = error.message;
        continue;
      }
      session.refusedParam = error.param;
      throw classify(answer.status, error, what);
    }
  }

  /** The milliseconds `retry-after-ms`, `retry-after` (seconds or a date) or the reset header ask for. */
  function retryAfterMs(headers: http.IncomingHttpHeaders): number | undefined {
    const ms = header(headers, 'retry-after-ms');
    if (ms !== undefined && /^\d{1,12}(\.\d{1,6})?$/.test(ms)) return Math.ceil(Number(ms));
    const after = header(headers, 'retry-after');
    if (after !== undefined) {
      if (/^\d{1,9}$/.test(after)) return Number(after) * 1000;
      const at = Date.parse(after);
      if (!Number.isNaN(at)) return Math.max(0, at - now().getTime());
    }
    return resetMs(headers);
  }

  function resetMs(headers: http.IncomingHttpHeaders): number | undefined {
    const reset = header(headers, RATE_HEADERS.reset);
    const ms = reset === undefined ? undefined : parseGoDuration(reset);
    return ms === undefined ? undefined : Math.min(Math.ceil(ms), MAX_THROTTLE_WAIT_MS);
  }

  /** The error object's fields we can use; an error body of another shape still fails by its status. */
  function errorBody(
    body: unknown,
    session: Session,
  ): { message: string | undefined; type: string | undefined; code: string | undefined; param: string | undefined } {
    const error = isObject(body) ? body.error : undefined;
    const text = (value: unknown) => (typeof value === 'string' && value !== '' ? scrub(value.slice(0, 2000), session) : undefined);
    if (!isObject(error)) return { message: undefined, type: undefined, code: undefined, param: undefined };
    return { message: text(error.message), type: text(error.type), code: text(error.code), param: text(error.param) };
  }

  function classify(status: number, error: ReturnType<typeof errorBody>, what: string): PlatformError {
    const details = {
      ...(error.message === undefined ? {} : { platformMessage: error.message }),
      platformCode: error.code === undefined ? String(status) : `${status}/${error.code.slice(0, 64)}`,
    };
    const says = `OpenAI Ads refused ${what}`;
    if (status === 401)
      return new PlatformError('needs_reconnect', `${says}: the API key is not valid (revoked or mistyped); paste a new one`, details);
    if (status === 403) return new PlatformError('missing_permission', `${says}: the key may not read this ad account (HTTP 403)`, details);
    // A spent quota passes only when billing is sorted out in Ads Manager, not in seconds: a
    // temporary failure, retried with the engine's backoff, so syncing resumes by itself once it is.
    if (status === 429)
      return new PlatformError('platform_error', `${says}: the account's quota is used up; check its billing in Ads Manager`, details);
    if (status >= 500) return new PlatformError('platform_error', `${says} with a temporary error (HTTP ${status})`, details);
    if (status >= 400) return new PlatformError('invalid_request', `${says} (HTTP ${status})`, details);
    return new PlatformError('bad_answer', `OpenAI Ads answered ${what} with HTTP ${status}`);
  }

  function keySession(credential: PlatformCredential, signal?: AbortSignal): Session {
    if (!isOpenAIAdsKey(credential.secret)) {
      throw new PlatformError('invalid_request', `An OpenAI Ads API key is ${KEY_RULE}`);
    }
    return { key: credential.secret, signal, waitedMs: 0, pendingWaitMs: 0, refusedParam: undefined };
  }

  async function keyAccount(s: Session): Promise<PlatformAdAccount> {
    const what = "the API key's ad account";
    return parseAccount(await call(s, what, '/ad_account', new URLSearchParams()), what);
  }

  /** Follows Insights pages (`after` = the last page's `last_id` while `has_more`), each page's rows as they come. */
  async function* pages(s: Session, what: string, params: URLSearchParams): AsyncGenerator<unknown[]> {
    const seen = new Set<string>();
    let after: string | undefined;
    for (let count = 1; ; count++) {
      if (count > MAX_PAGES)
        throw new PlatformError('bad_answer', `OpenAI Ads' answer to ${what} goes on for more than ${MAX_PAGES} pages`);
      if (after !== undefined) params.set('after', after);
      const page = await call(s, what, '/ad_account/insights', params);
      if (!Array.isArray(page.data)) throw new PlatformError('bad_answer', `OpenAI Ads' answer to ${what} has no data list`);
      if (typeof page.has_more !== 'boolean') throw new PlatformError('bad_answer', `OpenAI Ads' answer to ${what} has no has_more`);
      yield page.data;
      if (!page.has_more) return;
      const next = page.last_id;
      if (typeof next !== 'string' || next === '' || next.length > 2048)
        throw new PlatformError('bad_answer', `OpenAI Ads' answer to ${what} says more follows but has no last_id`);
      if (seen.has(next)) throw new PlatformError('bad_answer', `OpenAI Ads' answer to ${what} points to a page it gave already`);
      seen.add(next);
      after = next;
    }
  }

  async function* readSpend(
    credential: PlatformCredential,
    account: PlatformAdAccount,
    range: LocalDayRange,
    signal?: AbortSignal,
  ): AsyncGenerator<PlatformSpendRow[]> {
    const s = keySession(credential, signal);
    checkAccountId(account.externalId);
    const first = dayNumber(range.since);
    const last = dayNumber(range.until);
    if (!(first <= last))
      throw new PlatformError('invalid_request', `The range ${range.since} to ${range.until} is not two dates in order`);
    if (!isTimeZoneName(account.timeZone)) throw new PlatformError('invalid_request', 'The ad account has no valid time zone');
    // Insights read whichever account the key belongs to, and GET /ad_account is not asked again
    // here: the engine calls describeAccount with this same key at the start of every run (the key
    // reads this account id, in the stored currency) and passes the key it opened then to every
    // chunk, and a key is issued in one ad account's settings and reads that one (Authentication).
    // Asking once per chunk would only repeat that check; a row naming another currency is still
    // refused (spendRow).
    const zone = account.timeZone;
    const decimals = spendDecimals(account.currency);
    // Only whole hours that are over: the API refuses a window that ends in the future.
    const clock = now().getTime() - CLOCK_MARGIN_MS;
    const lastHourEnd = clock - localHour(zone, clock).intoHourMs;
    let granularity: 'hourly' | 'daily' = 'hourly';
    for (let day = first; day <= last; day++) {
      const start = startOfLocalDay(zone, day);
      const end = Math.min(startOfLocalDay(zone, day + 1), lastHourEnd);
      if (end <= start) return;
      const date = dateOf(day);
      const what = `the spend of ${account.externalId} on ${date}`;
      for (;;) {
        let yielded = false;
        try {
          const params = insightsParams(granularity, start, end, pageLimit);
          const check: RowCheck = {
            what,
            zone,
            day,
            dayStart: start,
            dayEnd: startOfLocalDay(zone, day + 1),
            windowEnd: end,
            currency: account.currency,
            decimals,
            buckets: new Map(),
          };
          for await (const data of pages(s, what, params)) {
            const rows = data.map((row) => spendRow(row, check));
            if (rows.length > 0) {
              yielded = true;
              yield rows;
            }
          }
          break;
        } catch (error) {
          // Hours not offered (a 400 about time_granularity): this day and the rest are read in whole
          // days. Once rows were handed on they cannot be taken back, so only before the first.
          if (
            granularity === 'hourly' &&
            !yielded &&
            error instanceof PlatformError &&
            error.kind === 'invalid_request' &&
            s.refusedParam === 'time_granularity'
          ) {
            granularity = 'daily';
            continue;
          }
          throw error;
        }
      }
    }
  }

  return {
    platform: 'chatgpt_ads',

    async describeAccount(credential, { externalId }) {
      const s = keySession(credential);
      checkAccountId(externalId);
      const account = await keyAccount(s);
      checkSameAccount(account, externalId);
      return account;
    },

    async listAccounts(credential) {
      // A key reaches exactly one ad account (API overview › Authentication).
      return [await keyAccount(keySession(credential))];
    },

    readSpend,
  };
}

function header(headers: http.IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return typeof value === 'string' ? value.trim() : undefined;
}

function insightsParams(granularity: 'hourly' | 'daily', startMs: number, endMs: number, limit: number): URLSearchParams {
  const params = new URLSearchParams({ time_granularity: granularity, aggregation_level: 'ad_group', limit: String(limit) });
  for (const field of INSIGHTS_FIELDS) params.append('fields[]', field);
  const range: UnixRange = { type: 'unix_range', start: startMs / 1000, end: endMs / 1000 };
  params.append('time_ranges[]', JSON.stringify(range));
  return params;
}

function checkAccountId(externalId: string): void {
  if (typeof externalId !== 'string' || !ACCOUNT_ID.test(externalId)) {
    throw new PlatformError('invalid_request', 'An OpenAI Ads ad account id is letters, digits, _ and - (e.g. act_123)');
  }
}

function checkSameAccount(account: PlatformAdAccount, externalId: string): void {
  if (account.externalId !== externalId) {
    throw new PlatformError(
      'missing_permission',
      `This API key reads the OpenAI Ads account ${account.externalId}, not ${externalId}: use a key issued in ${externalId}'s settings`,
    );
  }
}

function parseAccount(value: Json, what: string): PlatformAdAccount {
  const bad = (field: string) => new PlatformError('bad_answer', `OpenAI Ads' answer to ${what} has no valid ${field}`);
  const { id, name, currency_code: currency, timezone: zone, status } = value;
  if (typeof id !== 'string' || !ACCOUNT_ID.test(id)) throw bad('id');
  if (typeof name !== 'string') throw bad('name');
  if (typeof currency !== 'string' || !/^[A-Z]{3}$/.test(currency)) throw bad('currency_code');
  if (typeof zone !== 'string' || !isTimeZoneName(zone)) throw bad('timezone');
  if (status !== undefined && (typeof status !== 'string' || status === '' || status.length > 64)) throw bad('status');
  return {
    externalId: id,
    name,
    currency,
    timeZone: zone,
    active: status === undefined || status === 'active',
    status: status ?? 'active',
    accessVia: null,
  };
}

/** What each row of a day's pages is checked against, and the places of the buckets seen so far. */
interface RowCheck {
  what: string;
  zone: string;
  day: number;
  dayStart: number;
  dayEnd: number;
  /** The end of the window asked for: the next midnight, or the last whole hour today. */
  windowEnd: number;
  /** The account's currency (ISO 4217, upper case), which a row naming one must agree with. */
  currency: string;
  decimals: number;
  buckets: Map<unknown, Bucket>;
}

/** An entity id of 1 to 128 letters, digits, _ - . and : — without a regular expression: it runs twice per row. */
function isEntityId(text: unknown): text is string {
  if (typeof text !== 'string' || text.length === 0 || text.length > 128) return false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (!((c >= 48 && c <= 58) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 45 || c === 46)) return false;
  }
  return true;
}

/**
 * Where a bucket lies: an hour that begins on a whole hour of the account's zone within the window
 * asked for, or the whole day (the API withheld hours). Anything else would put spend in the wrong hours.
 */
function bucketOf(start: unknown, end: unknown, c: RowCheck): Bucket | undefined {
  if (typeof start !== 'number' || typeof end !== 'number' || !Number.isSafeInteger(start) || !Number.isSafeInteger(end)) return undefined;
  const startMs = start * 1000;
  const endMs = end * 1000;
  if (startMs < c.dayStart || endMs <= startMs) return undefined;
  if (endMs - startMs === HOUR_MS && endMs <= c.windowEnd) {
    const local = localHour(c.zone, startMs);
    return local.day === c.day && local.intoHourMs === 0 ? { date: dateOf(c.day), hour: local.hour, end } : undefined;
  }
  return startMs === c.dayStart && (endMs === c.windowEnd || endMs === c.dayEnd) ? { date: dateOf(c.day), hour: null, end } : undefined;
}

function spendRow(value: unknown, c: RowCheck): PlatformSpendRow {
  const bad = (field: string) => new PlatformError('bad_answer', `OpenAI Ads' answer to ${c.what} has a row with no valid ${field}`);
  if (!isObject(value)) throw bad('object');
  const {
    start_time: start,
    end_time: end,
    campaign_id: campaignId,
    campaign_name: campaignName,
    ad_group_id: adSetId,
    ad_group_name: adSetName,
    spend,
  } = value;
  if (!isEntityId(campaignId)) throw bad('campaign_id');
  if (!isEntityId(adSetId)) throw bad('ad_group_id');
  if (typeof campaignName !== 'string') throw bad('campaign_name');
  if (typeof adSetName !== 'string') throw bad('ad_group_name');
  // Rows of one bucket share its start: each start is placed once per day.
  let bucket = c.buckets.get(start);
  if (bucket === undefined) {
    bucket = bucketOf(start, end, c);
    if (bucket === undefined) throw bad('start_time and end_time (an hour or the whole day asked for)');
    c.buckets.set(start, bucket);
  } else if (end !== bucket.end) {
    throw bad('end_time');
  }
  for (const key of UNIT_KEYS) {
    if (key in value) {
      throw new PlatformError(
        'bad_answer',
        `OpenAI Ads' answer to ${c.what} has a row with "${key}": spend is read as ${CHATGPT_ADS_SPEND_UNIT} of the account currency, and the answer disagrees`,
      );
    }
  }
  // A row in another currency than the account's: the answer contradicts GET /ad_account, so no
  // figure of it is stored (bad_answer, retried with backoff). Should the account's currency really
  // have changed, the next run's describeAccount finds it and the engine refuses that as it does
  // for every platform (invalid_request: reconnect). Null names no currency.
  for (const key of CURRENCY_KEYS) {
    const named = value[key];
    if (named === undefined || named === null) continue;
    if (typeof named !== 'string' || named.toUpperCase() !== c.currency) {
      const shown = typeof named === 'string' && /^[A-Za-z]{3}$/.test(named) ? named : 'something else';
      throw new PlatformError(
        'bad_answer',
        `OpenAI Ads' answer to ${c.what} has a row whose "${key}" is ${shown}, not the account's ${c.currency}`,
      );
    }
  }
  const spendMicros = spendToMicros(spend, CHATGPT_ADS_SPEND_UNIT, c.decimals);
  if (spendMicros === undefined)
    throw bad(
      `spend (${CHATGPT_ADS_SPEND_UNIT === 'major' ? `a decimal of at most ${c.decimals} places` : `whole ${CHATGPT_ADS_SPEND_UNIT}`})`,
    );
  return { date: bucket.date, hour: bucket.hour, campaignId, campaignName, adSetId, adSetName, spendMicros };
}
