// The Meta Marketing API (Graph) wire client: ad accounts, hourly ad-set spend from the Insights
// API, the OAuth code exchanges. It follows Meta's documented wire format, so the same code talks
// to graph.facebook.com and to the loopback sandbox (./sandbox.ts). Every answer is checked before
// it is believed: a wrong type, a missing field, HTML, a redirect, a body over the cap or past the
// deadline is a PlatformError('bad_answer'), never a crash. Credentials travel in the
// Authorization header (or, for the OAuth exchanges, in the documented query) and are never
// written into an error message.
import { META_GRAPH_API_VERSION } from '../../policy.ts';
import {
  PlatformError,
  type AdPlatformClient,
  type LocalDayRange,
  type PlatformAdAccount,
  type PlatformCredential,
  type PlatformSpendRow,
} from '../ad-platform.ts';
import { isTimeZoneName } from '../../platform/time.ts';
import { parseSpendMicros } from './spend.ts';
import { createGraphTransport, isObject, type GraphSession } from './graph.ts';
import { HOURLY_BREAKDOWN, parseHourLabel, type AsyncStatus } from './wire.ts';

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

/**
 * "Request timed out: try a smaller date range, fetch less data, or use async jobs" — Marketing API
 * › Insights › Error Codes lists it as 100/1504018 and 2/1504038 (both sync only).
 */
const TOO_MUCH_FOR_SYNC = new Set(['100/1504018', '2/1504038']);

export function createMetaClient(options: MetaClientOptions): AdPlatformClient & MetaOAuth {
  const version = options.apiVersion ?? META_GRAPH_API_VERSION;
  const asyncAfterDays = options.asyncAfterDays ?? DEFAULT_ASYNC_AFTER_DAYS;
  const { session, graph, pages, sleep } = createGraphTransport({
    graphUrl: options.graphUrl,
    apiVersion: version,
    ...(options.sleep ? { sleep: options.sleep } : {}),
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
  });

  function credentialSession(credential: PlatformCredential, signal?: AbortSignal): GraphSession {
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
  async function runReport(
    s: GraphSession,
    account: PlatformAdAccount,
    range: LocalDayRange,
    params: Record<string, string>,
  ): Promise<string> {
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
