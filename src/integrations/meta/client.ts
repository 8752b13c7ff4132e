// The Meta Marketing API (Graph) wire client: ad accounts, hourly ad-set spend from the Insights
// API, the OAuth code exchanges. It follows Meta's documented wire format, so the same code talks
// to graph.facebook.com and to the loopback sandbox (./sandbox.ts). Every answer is checked before
// it is believed: a wrong type, a missing field, HTML, a redirect, a body over the cap or past the
// deadline is a PlatformError('bad_answer'), never a crash. Credentials travel in the
// Authorization header (or, for the OAuth exchanges, in the documented query) and are never
// written into an error message.
import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import zlib from 'node:zlib';
import { META_GRAPH_API_VERSION, SPEND_THROTTLE_WAIT_MAX_MS } from '../../policy.ts';
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
import { parseSpendMicros } from './spend.ts';
import { HOURLY_BREAKDOWN, parseHourLabel, type AsyncStatus, type GraphErrorBody } from './wire.ts';

export interface MetaClientOptions {
  /** https://graph.facebook.com in production (META_GRAPH_URL), the sandbox's url in tests and the demo. */
  graphUrl: string;
  apiVersion?: string;
  /** Waits out throttles and report-run polls; tests inject one that does not really wait. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Per request, from sending it to the last byte of the answer. */
  timeoutMs?: number;
  /** An answer larger than this is refused (bad_answer) as soon as it passes the cap. */
  maxBodyBytes?: number;
  /** Ranges of more account-local days than this are read through an async report run. */
  asyncAfterDays?: number;
}

export interface MetaOAuth {
  /** {dialogUrl}/{v}/dialog/oauth?client_id&redirect_uri&state&scope&response_type=code (dialogUrl is META_DIALOG_URL). */
  authorizeUrl(p: { dialogUrl: string; appId: string; redirectUri: string; state: string; scopes: string[] }): string;
  /** GET {graph}/{v}/oauth/access_token?client_id&redirect_uri&client_secret&code */
  exchangeCode(p: {
    appId: string;
    appSecret: string;
    redirectUri: string;
    code: string;
  }): Promise<{ accessToken: string; expiresAt: Date | null }>;
  /** GET {graph}/{v}/oauth/access_token?grant_type=fb_exchange_token&client_id&client_secret&fb_exchange_token */
  exchangeForLongLived(p: {
    appId: string;
    appSecret: string;
    accessToken: string;
  }): Promise<{ accessToken: string; expiresAt: Date | null }>;
}

/** What the connect dialog asks for: reading ads and their insights, and the business's ad accounts. */
export const META_SCOPES = ['ads_read', 'business_management'];

const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024;
/**
 * Up to a week of hourly ad-set rows (100 ad sets: 16,800 rows, 34 pages) is read synchronously;
 * longer ranges go through an async report run, which Meta recommends for large reads and which
 * does not time out (a synchronous read that does answers 100/1504018, and we switch then too).
 */
const DEFAULT_ASYNC_AFTER_DAYS = 7;
/** Rows per Insights page. Meta's default is 25; a larger page means far fewer round trips. */
const INSIGHTS_PAGE_LIMIT = 500;
const ACCOUNTS_PAGE_LIMIT = 100;
/** No real read has this many pages (25 million Insights rows); an answer that does is looping. */
const MAX_PAGES = 50_000;
/** A throttle answer without a usable usage header is waited out this long. */
const DEFAULT_THROTTLE_WAIT_MS = 60_000;
/**
 * Report-run polls: the first after this, then doubling up to the cap, giving up after the total.
 * A short first wait: every chunk of a sync waits for its run, and a run done quickly should not
 * hold it (from 500 ms, a run done by the second poll cost 1.5 s of waiting per 30 days of an
 * account); a long run costs only a few more polls.
 */
const FIRST_POLL_MS = 100;
const MAX_POLL_DELAY_MS = 10_000;
const MAX_POLL_TOTAL_MS = 5 * 60_000;

/** A run in these states is polled again ("Job Completed" below 100 % too: the SDK's AdReportRun is done only at 100). */
const STILL_RUNNING: AsyncStatus[] = ['Job Not Started', 'Job Started', 'Job Running', 'Job Completed'];

const ACCOUNT_FIELDS = 'id,name,currency,timezone_name,account_status';
const INSIGHTS_FIELDS = [
  'account_id',
  'account_currency',
  'campaign_id',
  'campaign_name',
  'adset_id',
  'adset_name',
  'spend',
  'date_start',
  'date_stop',
].join(',');

/** Ad Account reference, `account_status`. */
const ACCOUNT_STATUS: Record<number, string> = {
  1: 'ACTIVE',
  2: 'DISABLED',
  3: 'UNSETTLED',
  7: 'PENDING_RISK_REVIEW',
  8: 'PENDING_SETTLEMENT',
  9: 'IN_GRACE_PERIOD',
  100: 'PENDING_CLOSURE',
  101: 'CLOSED',
  201: 'ANY_ACTIVE',
  202: 'ANY_CLOSED',
};

const ACCOUNT_ID = /^act_\d{1,20}$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** Connections are kept between requests, as fetch keeps them: a sync is hundreds of pages. */
const httpAgent = new http.Agent({ keepAlive: true });
const httpsAgent = new https.Agent({ keepAlive: true });
/** The content encodings we ask for, and identity (null: nothing to undo). */
const DECODERS = new Map<string, (() => zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress) | null>([
  ['identity', null],
  ['gzip', () => zlib.createGunzip()],
  ['x-gzip', () => zlib.createGunzip()],
  ['deflate', () => zlib.createInflate()],
  ['br', () => zlib.createBrotliDecompress()],
]);

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Throttling codes: 4 (app), 17 (user), 613 (ad account), 80000–80014 (Business Use Case, 80000 = ads_insights, 80004 = ads_management). Graph API › Rate Limiting; Marketing API › Rate Limiting. */
const isThrottle = (code: number) => code === 4 || code === 17 || code === 613 || (code >= 80000 && code <= 80014);

/**
 * "Request timed out: try a smaller date range, fetch less data, or use async jobs" — Marketing API
 * › Insights › Error Codes lists it as 100/1504018 and 2/1504038 (both sync only).
 */
const TOO_MUCH_FOR_SYNC = new Set(['100/1504018', '2/1504038']);

/** One caller's sequence of requests: its credential, its abort signal and the throttle time it has spent. */
interface Session {
  token: string | undefined;
  /** Texts that must never appear in an error (the token, an app secret, an OAuth code). */
  secrets: string[];
  signal: AbortSignal | undefined;
  waitedMs: number;
  /** A wait the platform asked for (usage header) before the next request. */
  pendingWaitMs: number;
}

interface Answer {
  status: number;
  body: unknown;
  /** How long the usage headers say to stay away, or undefined when they say nothing. */
  regainMs: number | undefined;
}

export function createMetaClient(options: MetaClientOptions): AdPlatformClient & MetaOAuth {
  const base = options.graphUrl.replace(/\/+$/, '');
  const version = options.apiVersion ?? META_GRAPH_API_VERSION;
  const sleep =
    options.sleep ??
    (async (ms: number, signal?: AbortSignal) => {
      // A cancelled wait ends with the caller's own reason, as a cancelled request does.
      await delay(ms, undefined, signal ? { signal } : {}).catch((error: unknown) => {
        throw signal?.aborted ? signal.reason : error;
      });
    });
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const asyncAfterDays = options.asyncAfterDays ?? DEFAULT_ASYNC_AFTER_DAYS;

  const scrub = (text: string, session: Session) =>
    session.secrets.reduce((out, secret) => (secret.length >= 4 ? out.split(secret).join('[redacted]') : out), text);

  /** One HTTP exchange: the answer's status, its parsed JSON body and its usage headers. */
  async function exchange(
    session: Session,
    what: string,
    method: 'GET' | 'POST',
    path: string,
    params: Record<string, string>,
  ): Promise<Answer> {
    session.signal?.throwIfAborted();
    const url = new URL(`${base}/${version}/${path}`);
    const form = new URLSearchParams(params);
    if (method === 'GET') url.search = form.toString();
    // What fetch asks for by default: Graph compresses large answers.
    const headers: Record<string, string> = { accept: 'application/json', 'accept-encoding': 'gzip, deflate, br' };
    // The header, not the access_token parameter the SDKs use, for every call that can take one. The
    // token exchanges (tokenExchange) are the exception: Meta documents /oauth/access_token as a GET
    // with client_secret and the code or token in the query, so they travel there; our own logs and
    // errors never carry this URL (failures name `what`, and the secrets are masked out of messages).
    if (session.token !== undefined) headers.authorization = `Bearer ${session.token}`;
    const body = method === 'POST' ? form.toString() : undefined;
    if (body !== undefined) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = session.signal ? AbortSignal.any([session.signal, timeout]) : timeout;
    // node:http rather than fetch: a page is read as plain Buffer chunks, without fetch's web-stream
    // machinery per chunk, which was most of the client's time per row in bench:sync. Redirects are
    // not followed by node:http at all.
    let answered = false;
    const answer = await traceOutbound(
      'meta',
      method,
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
            { method, headers, signal, agent: url.protocol === 'https:' ? httpsAgent : httpAgent },
            (response) => {
              answered = true;
              const status = response.statusCode ?? 0;
              if (status >= 300 && status < 400)
                return settle(
                  new PlatformError('bad_answer', `Meta answered ${what} with a redirect (HTTP ${status}); the Graph API never redirects`),
                );
              // Graph answers application/json; older versions said text/javascript for the same JSON.
              const type = (response.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
              if (type !== 'application/json' && type !== 'text/javascript')
                return settle(
                  new PlatformError('bad_answer', `Meta answered ${what} with ${type || 'no content type'} (HTTP ${status}), not JSON`),
                );
              const tooLarge = () => new PlatformError('bad_answer', `Meta's answer to ${what} is larger than ${maxBodyBytes} bytes`);
              if (Number(response.headers['content-length'] ?? 0) > maxBodyBytes) return settle(tooLarge());
              const encoding = (response.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
              const decode = DECODERS.get(encoding);
              if (decode === undefined)
                return settle(new PlatformError('bad_answer', `Meta answered ${what} in an unknown content encoding`));
              // The cap counts the bytes we hold, after decompression (a small zip bomb is refused too).
              const stream: Readable = decode ? response.pipe(decode()) : response;
              const chunks: Buffer[] = [];
              let total = 0;
              const cutOff = () => settle(signal.aborted ? signal.reason : new Error('cut off'));
              stream.on('data', (chunk: Buffer) => {
                total += chunk.length;
                if (total > maxBodyBytes) return settle(tooLarge());
                chunks.push(chunk);
              });
              stream.on('end', () =>
                settle(undefined, {
                  status,
                  headers: response.headers,
                  text: (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total)).toString('utf8'),
                }),
              );
              stream.on('error', cutOff);
              response.on('error', cutOff);
              response.on('close', () => {
                if (!response.complete) cutOff();
              });
            },
          );
          request.on('error', (error) => settle(error));
          request.end(body);
        }),
    ).catch((error: unknown) => {
      if (error instanceof PlatformError) throw error;
      if (session.signal?.aborted) throw session.signal.reason;
      if (!answered) {
        if (timeout.aborted) throw new PlatformError('unreachable', `Meta did not answer ${what} within ${timeoutMs / 1000} s`);
        const code = (error as { code?: unknown }).code;
        throw new PlatformError('unreachable', `Meta could not be reached for ${what}${typeof code === 'string' ? ` (${code})` : ''}`);
      }
      if (timeout.aborted) throw new PlatformError('bad_answer', `Meta's answer to ${what} did not finish within ${timeoutMs / 1000} s`);
      throw new PlatformError('bad_answer', `Meta's answer to ${what} was cut off`);
    });
    let json: unknown;
    try {
      json = JSON.parse(answer.text);
    } catch {
      throw new PlatformError(
        'bad_answer',
        `Meta's answer to ${what} is not valid JSON (HTTP ${answer.status}, ${Buffer.byteLength(answer.text)} bytes)`,
      );
    }
    const usage = answer.headers['x-business-use-case-usage'];
    return { status: answer.status, body: json, regainMs: regainMs(typeof usage === 'string' ? usage : undefined) };
  }

  /** A Graph request under the throttle rules; returns the answer's JSON object or throws PlatformError / PlatformThrottled. */
  async function graph(
    session: Session,
    what: string,
    method: 'GET' | 'POST',
    path: string,
    params: Record<string, string>,
  ): Promise<Json> {
    let throttleMessage: string | undefined;
    for (;;) {
      if (session.pendingWaitMs > 0) {
        const ms = session.pendingWaitMs;
        if (session.waitedMs + ms > SPEND_THROTTLE_WAIT_MAX_MS) {
          throw new PlatformThrottled(ms, `Meta is throttling ${what}: try again in ${Math.ceil(ms / 1000)} s`, throttleMessage);
        }
        session.waitedMs += ms;
        session.pendingWaitMs = 0;
        await sleep(ms, session.signal);
      }
      const answer = await exchange(session, what, method, path, params);
      if (isObject(answer.body) && 'error' in answer.body) {
        const error = graphError(answer.body.error, what);
        if (isThrottle(error.code)) {
          session.pendingWaitMs = answer.regainMs || DEFAULT_THROTTLE_WAIT_MS;
          throttleMessage = platformWords(error, session);
          continue;
        }
        throw classify(error, answer.status, what, session);
      }
      if (answer.status < 200 || answer.status >= 300)
        throw new PlatformError('bad_answer', `Meta answered ${what} with HTTP ${answer.status} and no Graph error`);
      if (!isObject(answer.body)) throw new PlatformError('bad_answer', `Meta's answer to ${what} is not a JSON object`);
      // A usage header may announce a throttle on a successful answer: the next request waits first.
      if (answer.regainMs) session.pendingWaitMs = answer.regainMs;
      return answer.body;
    }
  }

  const platformWords = (error: GraphErrorBody, session: Session) => scrub(error.error_user_msg || error.message, session);

  function classify(error: GraphErrorBody, status: number, what: string, session: Session): PlatformError {
    const details = {
      platformMessage: platformWords(error, session),
      platformCode: error.error_subcode === undefined ? String(error.code) : `${error.code}/${error.error_subcode}`,
    };
    const says = `Meta refused ${what}`;
    // Graph API › Handling Errors: 190 and 102 are a token that expired or was invalidated; 10 and
    // 200–299 a missing permission; 1 and 2 (or is_transient) a temporary problem on Meta's side.
    if (error.code === 190 || error.code === 102)
      return new PlatformError('needs_reconnect', `${says}: the access token is no longer valid (${details.platformCode})`, details);
    if (error.code === 10 || (error.code >= 200 && error.code <= 299))
      return new PlatformError(
        'missing_permission',
        `${says}: the token lacks a permission or access to the account (${details.platformCode})`,
        details,
      );
    if (error.is_transient || error.code === 1 || error.code === 2 || error.code === -2 || status >= 500)
      return new PlatformError('platform_error', `${says} with a temporary error (${details.platformCode})`, details);
    return new PlatformError('invalid_request', `${says} (${details.platformCode})`, details);
  }

  const session = (token: string | undefined, secrets: string[], signal?: AbortSignal): Session => ({
    token,
    secrets,
    signal,
    waitedMs: 0,
    pendingWaitMs: 0,
  });

  /** Follows a paged edge (Graph API › Pagination: continue while `paging.next` is present, with `paging.cursors.after`). */
  async function* pages(s: Session, what: string, path: string, params: Record<string, string>): AsyncGenerator<unknown[]> {
    let after: string | undefined;
    for (let count = 1; ; count++) {
      if (count > MAX_PAGES) throw new PlatformError('bad_answer', `Meta's answer to ${what} goes on for more than ${MAX_PAGES} pages`);
      const page = await graph(s, what, 'GET', path, after === undefined ? params : { ...params, after });
      if (!Array.isArray(page.data)) throw new PlatformError('bad_answer', `Meta's answer to ${what} has no data list`);
      yield page.data;
      const next = nextCursor(page.paging, what);
      if (next === undefined) return;
      if (next === after) throw new PlatformError('bad_answer', `Meta's answer to ${what} points to the same page again`);
      after = next;
    }
  }

  function credentialSession(credential: PlatformCredential, signal?: AbortSignal): Session {
    if (typeof credential.secret !== 'string' || !/^[\x21-\x7e]{1,4096}$/.test(credential.secret)) {
      throw new PlatformError('invalid_request', 'The Meta access token must be 1 to 4096 printable characters without spaces');
    }
    return session(credential.secret, [credential.secret], signal);
  }

  async function* readSpend(
    credential: PlatformCredential,
    account: PlatformAdAccount,
    range: LocalDayRange,
    signal?: AbortSignal,
  ): AsyncGenerator<PlatformSpendRow[]> {
    const s = credentialSession(credential, signal);
    checkAccountId(account.externalId);
    const days = dayCount(range);
    const params = {
      level: 'adset',
      time_increment: '1',
      time_range: JSON.stringify({ since: range.since, until: range.until }),
      breakdowns: HOURLY_BREAKDOWN,
      fields: INSIGHTS_FIELDS,
    };
    const rowsOf = (data: unknown[], what: string) => {
      const check: RowCheck = { account, accountNumber: account.externalId.slice(4), range, what, checkedDate: NOT_CHECKED };
      return data.map((row) => spendRow(row, check));
    };
    if (days <= asyncAfterDays) {
      const what = `the spend of ${account.externalId} (${range.since} to ${range.until})`;
      let yielded = false;
      try {
        for await (const data of pages(s, what, `${account.externalId}/insights`, { ...params, limit: String(INSIGHTS_PAGE_LIMIT) })) {
          const rows = rowsOf(data, what);
          if (rows.length > 0) {
            yielded = true;
            yield rows;
          }
        }
        return;
      } catch (error) {
        // Meta says the read is too large for a synchronous answer: ask again as a report run. Once
        // rows were handed on they cannot be taken back (they would arrive twice): a temporary failure.
        if (!(error instanceof PlatformError) || !TOO_MUCH_FOR_SYNC.has(error.platformCode ?? '')) throw error;
        if (yielded) {
          throw new PlatformError('platform_error', `Meta stopped ${what} half-way as too large`, {
            platformMessage: error.platformMessage ?? '',
            platformCode: error.platformCode ?? '',
          });
        }
      }
    }
    const runId = await runReport(s, account, range, params);
    const what = `report run ${runId} of ${account.externalId}`;
    for await (const data of pages(s, what, `${runId}/insights`, { limit: String(INSIGHTS_PAGE_LIMIT) })) {
      const rows = rowsOf(data, what);
      if (rows.length > 0) yield rows;
    }
  }

  /**
   * Starts an async report run and polls it until it is done (Marketing API › Insights ›
   * Asynchronous Jobs: POST /act_{id}/insights answers {report_run_id}; GET /{report_run_id} has
   * async_status and async_percent_completion; done when "Job Completed" and 100).
   */
  async function runReport(s: Session, account: PlatformAdAccount, range: LocalDayRange, params: Record<string, string>): Promise<string> {
    const created = await graph(
      s,
      `the report run request for ${account.externalId} (${range.since} to ${range.until})`,
      'POST',
      `${account.externalId}/insights`,
      params,
    );
    const runId = created.report_run_id;
    if (!isNumericId(runId))
      throw new PlatformError('bad_answer', `Meta's answer to the report run request for ${account.externalId} has no valid report_run_id`);
    const what = `report run ${runId} of ${account.externalId}`;
    for (let waited = 0, next = FIRST_POLL_MS; ; next = Math.min(next * 2, MAX_POLL_DELAY_MS)) {
      if (waited >= MAX_POLL_TOTAL_MS)
        throw new PlatformError('platform_error', `Meta's ${what} did not finish within ${MAX_POLL_TOTAL_MS / 60_000} min`);
      await sleep(next, s.signal);
      waited += next;
      const run = await graph(s, what, 'GET', runId, { fields: 'id,async_status,async_percent_completion' });
      const status = run.async_status;
      const percent = run.async_percent_completion;
      if (typeof status !== 'string' || typeof percent !== 'number')
        throw new PlatformError('bad_answer', `Meta's answer about ${what} has no async_status or async_percent_completion`);
      if (status === 'Job Completed' && percent === 100) return runId;
      if (status === 'Job Failed' || status === 'Job Skipped') {
        throw new PlatformError('platform_error', `Meta's ${what} ended as "${status}"`, { platformMessage: status, platformCode: status });
      }
      if (!STILL_RUNNING.includes(status as AsyncStatus))
        throw new PlatformError('bad_answer', `Meta's ${what} has an unknown async_status`);
    }
  }

  async function tokenExchange(
    what: string,
    params: Record<string, string>,
    secrets: string[],
  ): Promise<{ accessToken: string; expiresAt: Date | null }> {
    const answer = await graph(session(undefined, secrets), what, 'GET', 'oauth/access_token', params);
    const token = answer.access_token;
    const expiresIn = answer.expires_in;
    if (typeof token !== 'string' || !/^[\x21-\x7e]{1,4096}$/.test(token))
      throw new PlatformError('bad_answer', `Meta's answer to ${what} has no valid access_token`);
    if (expiresIn !== undefined && (typeof expiresIn !== 'number' || !Number.isSafeInteger(expiresIn) || expiresIn < 0)) {
      throw new PlatformError('bad_answer', `Meta's answer to ${what} has an invalid expires_in`);
    }
    // Without expires_in (or with 0) the token does not expire (system-user tokens, Facebook Login's "never").
    return { accessToken: token, expiresAt: expiresIn ? new Date(Date.now() + expiresIn * 1000) : null };
  }

  return {
    platform: 'meta',

    async describeAccount(credential, { externalId }) {
      const s = credentialSession(credential);
      checkAccountId(externalId);
      const what = `the ad account ${externalId}`;
      const account = parseAccount(await graph(s, what, 'GET', externalId, { fields: ACCOUNT_FIELDS }), what);
      if (account.externalId !== externalId) throw new PlatformError('bad_answer', `Meta answered ${what} with another account`);
      return account;
    },

    async listAccounts(credential) {
      const s = credentialSession(credential);
      const what = "the token's ad accounts";
      const accounts: PlatformAdAccount[] = [];
      for await (const data of pages(s, what, 'me/adaccounts', { fields: ACCOUNT_FIELDS, limit: String(ACCOUNTS_PAGE_LIMIT) })) {
        for (const value of data) accounts.push(parseAccount(value, what));
      }
      return accounts;
    },

    readSpend,

    authorizeUrl(p) {
      const url = new URL(`${p.dialogUrl.replace(/\/+$/, '')}/${version}/dialog/oauth`);
      url.search = new URLSearchParams({
        client_id: p.appId,
        redirect_uri: p.redirectUri,
        state: p.state,
        scope: p.scopes.join(','),
        response_type: 'code',
      }).toString();
      return url.toString();
    },

    exchangeCode(p) {
      return tokenExchange(
        'the authorization code exchange',
        { client_id: p.appId, redirect_uri: p.redirectUri, client_secret: p.appSecret, code: p.code },
        [p.appSecret, p.code],
      );
    },

    exchangeForLongLived(p) {
      return tokenExchange(
        'the long-lived token exchange',
        { grant_type: 'fb_exchange_token', client_id: p.appId, client_secret: p.appSecret, fb_exchange_token: p.accessToken },
        [p.appSecret, p.accessToken],
      );
    },
  };
}

function checkAccountId(externalId: string): void {
  if (typeof externalId !== 'string' || !ACCOUNT_ID.test(externalId)) {
    throw new PlatformError('invalid_request', 'A Meta ad account id is "act_" followed by its number (act_1234567890)');
  }
}

function dayCount(range: LocalDayRange): number {
  const since = DATE.test(range.since) ? Date.parse(`${range.since}T00:00:00Z`) : NaN;
  const until = DATE.test(range.until) ? Date.parse(`${range.until}T00:00:00Z`) : NaN;
  if (!(since <= until)) throw new PlatformError('invalid_request', `The range ${range.since} to ${range.until} is not two dates in order`);
  return (until - since) / 86_400_000 + 1;
}

/** Milliseconds X-Business-Use-Case-Usage asks us to wait (Graph API › Rate Limiting › Business Use Case Rate Limits), or undefined. */
function regainMs(header: string | undefined): number | undefined {
  let ms: number | undefined;
  const consider = (minutes: unknown) => {
    if (typeof minutes === 'number' && Number.isFinite(minutes) && minutes >= 0)
      ms = Math.max(ms ?? 0, Math.min(minutes * 60_000, 24 * 3_600_000));
  };
  // {"<business id>": [{"type": "ads_insights", "call_count": 28, …, "estimated_time_to_regain_access": 0}]}, in minutes.
  const buc = parseHeader(header);
  if (isObject(buc)) {
    for (const entries of Object.values(buc)) {
      if (Array.isArray(entries)) for (const entry of entries) if (isObject(entry)) consider(entry.estimated_time_to_regain_access);
    }
  }
  // X-App-Usage has percentages but no time; X-Ad-Account-Usage is for Ads API v3.3 and older
  // (Graph API › Rate Limiting › Headers), so neither can say how long to wait.
  return ms;
}

function parseHeader(value: string | undefined): unknown {
  if (value === undefined || value.length > 65_536) return undefined;
  try {
    return JSON.parse(value);
  } catch {
    return undefined;
  }
}

function graphError(value: unknown, what: string): GraphErrorBody {
  if (!isObject(value) || typeof value.code !== 'number' || !Number.isSafeInteger(value.code) || typeof value.message !== 'string') {
    throw new PlatformError('bad_answer', `Meta answered ${what} with an error that has no code or message`);
  }
  const text = (key: string) => (typeof value[key] === 'string' && value[key] !== '' ? (value[key] as string).slice(0, 2000) : undefined);
  const subcode = value.error_subcode;
  return {
    message: value.message.slice(0, 2000),
    type: text('type') ?? '',
    code: value.code,
    ...(typeof subcode === 'number' && Number.isSafeInteger(subcode) ? { error_subcode: subcode } : {}),
    ...(value.is_transient === true ? { is_transient: true } : {}),
    ...(text('error_user_msg') === undefined ? {} : { error_user_msg: text('error_user_msg')! }),
  };
}

function nextCursor(paging: unknown, what: string): string | undefined {
  if (paging === undefined) return undefined;
  if (!isObject(paging)) throw new PlatformError('bad_answer', `Meta's answer to ${what} has a paging that is not an object`);
  // "next: … If not included, this is the last page of data" — a short page does not mean the end.
  if (paging.next === undefined) return undefined;
  const after = isObject(paging.cursors) ? paging.cursors.after : undefined;
  if (typeof paging.next !== 'string' || typeof after !== 'string' || after === '' || after.length > 2048) {
    throw new PlatformError('bad_answer', `Meta's answer to ${what} has a next page without a cursor`);
  }
  return after;
}

function parseAccount(value: unknown, what: string): PlatformAdAccount {
  const bad = (field: string) => new PlatformError('bad_answer', `Meta's answer to ${what} has an account with no valid ${field}`);
  if (!isObject(value)) throw bad('object');
  const { id, name, currency, timezone_name: zone, account_status: status } = value;
  if (typeof id !== 'string' || !ACCOUNT_ID.test(id)) throw bad('id');
  if (typeof name !== 'string') throw bad('name');
  if (typeof currency !== 'string' || !/^[A-Z]{3}$/.test(currency)) throw bad('currency');
  if (typeof zone !== 'string' || !isTimeZoneName(zone)) throw bad('timezone_name');
  if (typeof status !== 'number' || !Number.isSafeInteger(status)) throw bad('account_status');
  return {
    externalId: id,
    name,
    currency,
    timeZone: zone,
    active: status === 1,
    status: ACCOUNT_STATUS[status] ?? String(status),
    accessVia: null,
  };
}

/** A string of 1 to 32 ASCII digits (Graph ids), without a regular expression: it runs twice per row. */
function isNumericId(text: unknown): text is string {
  if (typeof text !== 'string' || text.length === 0 || text.length > 32) return false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

const NOT_CHECKED = Symbol('no date checked yet');

/** What each row of a page is checked against, and the last date that passed (a page's rows come day by day). */
interface RowCheck {
  account: PlatformAdAccount;
  /** The account id without "act_", as rows carry it. */
  accountNumber: string;
  range: LocalDayRange;
  what: string;
  checkedDate: unknown;
}

function spendRow(value: unknown, c: RowCheck): PlatformSpendRow {
  const bad = (field: string) => new PlatformError('bad_answer', `Meta's answer to ${c.what} has a row with no valid ${field}`);
  if (!isObject(value)) throw bad('object');
  const {
    account_id: accountId,
    account_currency: currency,
    campaign_id: campaignId,
    campaign_name: campaignName,
    adset_id: adSetId,
    adset_name: adSetName,
    spend,
    date_start: date,
    date_stop: dateStop,
  } = value;
  if (accountId !== c.accountNumber) throw bad('account_id');
  if (typeof currency !== 'string') throw bad('account_currency');
  if (currency !== c.account.currency) {
    throw new PlatformError(
      'invalid_request',
      `Meta reports ${c.account.externalId} in ${currency.slice(0, 8)} now, not ${c.account.currency}: reconnect the account to change its currency`,
    );
  }
  if (!isNumericId(campaignId)) throw bad('campaign_id');
  if (!isNumericId(adSetId)) throw bad('adset_id');
  if (typeof campaignName !== 'string') throw bad('campaign_name');
  if (typeof adSetName !== 'string') throw bad('adset_name');
  const spendMicros = typeof spend === 'string' ? parseSpendMicros(spend) : undefined;
  if (spendMicros === undefined) throw bad('spend');
  // A date equal to the one the previous row passed with passes too; any other is checked in full.
  if (date !== c.checkedDate) {
    if (typeof date !== 'string' || !DATE.test(date) || date < c.range.since || date > c.range.until) throw bad('date_start');
    c.checkedDate = date;
  }
  if (dateStop !== date) throw bad('date_stop');
  const label = value[HOURLY_BREAKDOWN];
  // A row without the hourly breakdown is a whole account-local day (the engine's documented fallback).
  const hour = label === undefined ? null : typeof label === 'string' ? parseHourLabel(label) : undefined;
  if (hour === undefined) throw bad(HOURLY_BREAKDOWN);
  return { date: date as string, hour, campaignId, campaignName, adSetId, adSetName, spendMicros };
}
