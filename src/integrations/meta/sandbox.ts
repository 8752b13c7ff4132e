// A sandbox Meta on loopback: the Graph API calls hubops makes (ad accounts, Insights with paging
// and async report runs, the OAuth dialog and token exchanges), in Meta's documented wire format
// (./wire.ts), with usage headers and Graph error bodies. Spend is generated, deterministic per seed:
// every ad set spends something in most account-local hours, whole cents, served as Meta's decimal
// strings. A scenario control (in JS, and POST /__sandbox/scenario for the demo or a terminal)
// throttles an account, expires or de-permissions a token, restates a day, fails the next calls or
// answers them with something hostile. Tests compute expectations from its ground truth
// (`hourlySpend`). It serves ~100k rows/s: a row is one hash and one string template.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { META_GRAPH_API_VERSION } from '../../policy.ts';
import { formatSpend } from './spend.ts';
import { HOURLY_BREAKDOWN, hourLabel, type AsyncStatus, type GraphErrorBody } from './wire.ts';
import { ALL_HOURS, dateOf, dayNumber, hashText, hoursOf, isDate, localParts, mix } from '../sandbox-kit.ts';

interface SandboxAdSet {
  id: string;
  name: string;
  campaignId: string;
  campaignName: string;
}

export interface SandboxAccount {
  /** 'act_' and digits. */
  id: string;
  name: string;
  currency: string;
  timezone_name: string;
  /** 1 = ACTIVE (Ad Account reference). */
  account_status: number;
  adSets: SandboxAdSet[];
}

export interface SandboxSeed {
  /** Same seed, same spend (default 1). */
  seed?: number;
  /** The accounts to start with; missing fields get defaults (USD, America/Los_Angeles, three ad sets in two campaigns). */
  accounts?: (Partial<SandboxAccount> & { id: string })[];
  /** Or this many generated accounts with this many ad sets each (zones and currencies alternate), e.g. for the benchmark. */
  generate?: { accounts: number; adSetsPerAccount: number };
  /** Account-local days before today that have spend (default 120). */
  historyDays?: number;
}

export interface SandboxSpendRow {
  date: string;
  hour: number;
  campaignId: string;
  adSetId: string;
  spendMicros: bigint;
}

const MALFORMED = ['html', 'wrong_types', 'missing_fields', 'truncated', 'redirect', 'huge', 'slow'] as const;
type SandboxMalformed = (typeof MALFORMED)[number];
type ErrorFields = Partial<GraphErrorBody> & { code: number };

/**
 * More Graph routes served by the same sandbox (the Pages and Instagram publishing sandbox,
 * ../meta-pages/sandbox.ts): one Meta, one OAuth dialog and one set of user tokens for both.
 */
export interface MetaSandboxPlugin {
  /** Answers a route this sandbox does not serve; false when it is not the plugin's either. Throws GraphFailure to answer an error. */
  handle(c: {
    method: string;
    route: string;
    params: URLSearchParams;
    token: string;
    res: http.ServerResponse;
    baseUrl: string;
    /** Throws the sandbox's Graph error for a user token that is unknown, expired or without permission. */
    checkUserToken(token: string): void;
  }): Promise<boolean> | boolean;
  /** A scenario command this sandbox does not know: the JSON answer, or undefined when it is not the plugin's either. */
  scenario?(command: Record<string, unknown>): unknown;
  reset?(): void;
}

export interface MetaSandbox {
  /** Serves the Graph API (/v26.0/…) and the OAuth dialog (/v26.0/dialog/oauth). */
  url: string;
  appId: string;
  appSecret: string;
  close(): Promise<void>;
  accounts(): SandboxAccount[];
  /** The spend the sandbox serves for an account (account-local date and hour), restatements and today's partial hour included. */
  hourlySpend(accountId: string, range?: { since: string; until: string }): SandboxSpendRow[];
  addAccount(a: Partial<SandboxAccount> & { id: string }): void;
  /** A token that can read those accounts (default: all, also those added later); expires in expiresInS (default 60 days; a system user's never). */
  issueToken(o?: { accounts?: string[]; expiresInS?: number; systemUser?: boolean }): string;
  scenario: {
    /** Calls on the account answer 80000 (ads_insights throttle) with estimated_time_to_regain_access for `ms` from now. */
    throttle(accountId: string, ms: number): void;
    /** The token answers 190/463 (session expired) from now on. */
    expireToken(token: string): void;
    /** The token answers 200 (permission missing) from now on. */
    revokePermission(token: string): void;
    /** The account's spend on that local day becomes `factor` times what it was. */
    restate(accountId: string, date: string, factor: number): void;
    /** The next `times` (default 1) calls on the account ('me' for /me/adaccounts) answer this Graph error. */
    fail(accountId: string, body: ErrorFields, times?: number): void;
    /** The next call on the account ('me' for /me/adaccounts) gets a hostile answer. */
    malformed(accountId: string, kind: SandboxMalformed): void;
    /** The account's next report run ends as 'Job Failed' or 'Job Skipped'. */
    failReport(accountId: string, status: 'Job Failed' | 'Job Skipped'): void;
    /** The account's Insights come without the hourly breakdown: one row per ad set and local day (the day's sum). */
    withholdHours(accountId: string): void;
    /** Back to normal: no throttles, failures, restatements; tokens valid again. */
    reset(): void;
  };
  /** What was asked (path without the query), oldest first; the last 100,000. */
  requests: { method: string; path: string }[];
}

const APP_ID = '1234567890123456';
const APP_SECRET = 'sandbox-app-secret-0123456789abcdef';
const DEFAULT_PAGE_SIZE = 25;
const MAX_PAGE_SIZE = 5000;
/** Polls of a report run before it completes: the first sees it running. */
const REPORT_POLLS = 2;
const LONG_LIVED_S = 5_183_944;
const SHORT_LIVED_S = 7200;
const MAX_REQUESTS_KEPT = 100_000;
const INSIGHTS_FIELDS = new Set([
  'account_id',
  'account_currency',
  'account_name',
  'campaign_id',
  'campaign_name',
  'adset_id',
  'adset_name',
  'spend',
  'date_start',
  'date_stop',
]);
const ACCOUNT_FIELDS = new Set(['id', 'account_id', 'name', 'currency', 'timezone_name', 'account_status']);
/** Share of an ad set's spend by account-local hour of day, in percent: quiet nights, busy evenings. */
const HOUR_WEIGHT = [30, 20, 15, 12, 12, 20, 40, 70, 90, 100, 105, 110, 115, 110, 105, 105, 110, 120, 135, 150, 145, 120, 80, 50];

/** Cents as Meta's decimal string ("12.3", "12"), remembered: a row costs an array lookup, not BigInt arithmetic. */
const centsTexts: string[] = [];
const centsText = (c: number) => (c < 1_000_000 ? (centsTexts[c] ??= formatSpend(BigInt(c) * 10_000n)) : formatSpend(BigInt(c) * 10_000n));

// --- State

interface Account extends SandboxAccount {
  number: string;
  /** Per ad set: its hash key and base cents per hour. */
  keys: number[];
  bases: number[];
  /** window()'s answer for one minute. */
  window?: { minute: number; value: { first: number; today: number; hour: number; minute: number } };
}

interface TokenInfo {
  accounts: Set<string> | null;
  expiresAt: number | null;
  expired: boolean;
  revoked: boolean;
}

interface ReportRun {
  id: string;
  accountId: string;
  query: InsightsQuery;
  polls: number;
  outcome: AsyncStatus;
}

interface InsightsQuery {
  since: string;
  until: string;
  fields: string[];
}

/** A Graph error answer: thrown by a route (or a plugin's), sent as `{ "error": body }` with `status`. */
export class GraphFailure extends Error {
  readonly status: number;
  readonly body: ErrorFields;
  constructor(status: number, body: ErrorFields) {
    super(body.message ?? String(body.code));
    this.status = status;
    this.body = body;
  }
}

const fail = (code: number, message: string, extra: Partial<GraphErrorBody> = {}, status = 400) =>
  new GraphFailure(status, { code, message, type: 'OAuthException', ...extra });

export async function startMetaSandbox(
  o: { port?: number; host?: '127.0.0.1'; now?: () => Date; pageSize?: number; seed?: SandboxSeed; plugins?: MetaSandboxPlugin[] } = {},
): Promise<MetaSandbox> {
  const now = () => (o.now ? o.now().getTime() : Date.now());
  const seed = o.seed?.seed ?? 1;
  const historyDays = o.seed?.historyDays ?? 120;
  const defaultPageSize = Math.min(o.pageSize ?? DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE);
  const v = META_GRAPH_API_VERSION;

  const accounts = new Map<string, Account>();
  const tokens = new Map<string, TokenInfo>();
  const codes = new Map<string, { redirectUri: string; expiresAt: number }>();
  const runs = new Map<string, ReportRun>();
  const throttles = new Map<string, number>();
  const failures = new Map<string, { body: ErrorFields; times: number }[]>();
  const malformed = new Map<string, SandboxMalformed[]>();
  const reportOutcomes = new Map<string, AsyncStatus>();
  const restatements = new Map<string, number>();
  const withheld = new Set<string>();
  const callCounts = new Map<string, number>();
  const requests: { method: string; path: string }[] = [];
  let runCounter = 0;

  function addAccount(a: Partial<SandboxAccount> & { id: string }): void {
    if (!/^act_\d{1,20}$/.test(a.id)) throw new Error(`a sandbox account id is act_ and digits, not ${a.id}`);
    const number = a.id.slice(4);
    const adSets =
      a.adSets ??
      [0, 1, 2].map((i) => ({
        id: `${number}${String(i + 1).padStart(3, '0')}`,
        name: `Ad set ${i + 1}`,
        campaignId: `${number}9${i < 2 ? 1 : 2}`,
        campaignName: `Campaign ${i < 2 ? 'A' : 'B'}`,
      }));
    const keys = adSets.map((s) => mix(seed ^ hashText(`${a.id}/${s.id}`)));
    accounts.set(a.id, {
      id: a.id,
      number,
      name: a.name ?? `Sandbox account ${number}`,
      currency: a.currency ?? 'USD',
      timezone_name: a.timezone_name ?? 'America/Los_Angeles',
      account_status: a.account_status ?? 1,
      adSets,
      keys,
      bases: keys.map((k) => 50 + (k % 1950)),
    });
  }

  if (o.seed?.generate) {
    const { accounts: count, adSetsPerAccount } = o.seed.generate;
    for (let n = 0; n < count; n++) {
      const number = String(2_000_001 + n);
      addAccount({
        id: `act_${number}`,
        name: `Generated account ${n + 1}`,
        currency: n % 2 === 0 ? 'USD' : 'EUR',
        timezone_name: n % 2 === 0 ? 'America/Los_Angeles' : 'Europe/Berlin',
        adSets: Array.from({ length: adSetsPerAccount }, (_, i) => ({
          id: `${number}${String(i + 1).padStart(4, '0')}`,
          name: `Ad set ${i + 1}`,
          campaignId: `${number}9${Math.floor(i / 10)}`,
          campaignName: `Campaign ${Math.floor(i / 10) + 1}`,
        })),
      });
    }
  }
  for (const a of o.seed?.accounts ??
    (o.seed?.generate
      ? []
      : [
          { id: 'act_1001', name: 'West Coast (sandbox)', currency: 'USD', timezone_name: 'America/Los_Angeles' },
          { id: 'act_1002', name: 'Europe (sandbox)', currency: 'EUR', timezone_name: 'Europe/Berlin' },
        ]))
    addAccount(a);

  // --- Spend

  /** Cents an ad set spent in a local hour: 0 in about one hour in twelve (Meta then has no row). */
  function cents(account: Account, adSet: number, day: number, hour: number): number {
    const r = mix(account.keys[adSet]! ^ mix(day * 24 + hour));
    if (r % 12 === 0) return 0;
    return Math.floor((account.bases[adSet]! * HOUR_WEIGHT[hour]! * (500 + ((r >>> 8) % 1000))) / 100_000);
  }

  /** The local days that have spend, today partly: [first, today], and today's hour and minute. */
  function window(account: Account) {
    // Local day, hour and minute change only with the minute (zones are whole minutes today): worked out once per minute.
    const minute = Math.floor(now() / 60_000);
    if (account.window?.minute !== minute) {
      const local = localParts(account.timezone_name, minute * 60_000);
      account.window = { minute, value: { first: local.day - historyDays, today: local.day, hour: local.hour, minute: local.minute } };
    }
    return account.window.value;
  }

  /** Calls `emit` for each row with spend of [fromDay, toDay] starting at position `start`, until it returns false. */
  function eachRow(
    account: Account,
    fromDay: number,
    toDay: number,
    start: number,
    emit: (position: number, day: number, adSet: number, hour: number, cents: number) => boolean,
  ): void {
    const w = window(account);
    const first = Math.max(fromDay, w.first);
    const last = Math.min(toDay, w.today);
    const n = account.adSets.length;
    if (n === 0) return;
    for (let day = first + Math.max(0, Math.floor(start / (24 * n)) - (first - fromDay)); day <= last; day++) {
      const date = dateOf(day);
      const factor = restatements.get(`${account.id}|${date}`);
      const hours = hoursOf(account.timezone_name, day);
      const dayBase = (day - fromDay) * n * 24;
      for (let s = 0; s < n; s++) {
        const base = dayBase + s * 24;
        if (base + 23 < start) continue;
        for (const hour of hours) {
          const position = base + hour;
          if (position < start) continue;
          if (day === w.today && hour > w.hour) break;
          let c = cents(account, s, day, hour);
          if (factor !== undefined) c = Math.round(c * factor);
          if (day === w.today && hour === w.hour) c = Math.floor((c * w.minute) / 60);
          if (c > 0 && !emit(position, day, s, hour, c)) return;
        }
      }
    }
  }

  function hourlySpend(accountId: string, range?: { since: string; until: string }): SandboxSpendRow[] {
    const account = accounts.get(accountId);
    if (!account) throw new Error(`no sandbox account ${accountId}`);
    const rows: SandboxSpendRow[] = [];
    const from = range ? dayNumber(range.since) : -1e9;
    eachRow(account, range ? from : window(account).first, range ? dayNumber(range.until) : 1e9, 0, (_, day, s, hour, c) => {
      const adSet = account.adSets[s]!;
      rows.push({ date: dateOf(day), hour, campaignId: adSet.campaignId, adSetId: adSet.id, spendMicros: BigInt(c) * 10_000n });
      return true;
    });
    return rows;
  }

  // --- HTTP

  function send(res: http.ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
    // Encoded once: measuring a page's length and then writing it as a string encodes it twice.
    const bytes = Buffer.from(body);
    res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', 'content-length': bytes.length, ...headers });
    res.end(bytes);
  }

  function usageHeader(account: Account, regainMinutes = 0): Record<string, string> {
    const count = (callCounts.get(account.id) ?? 0) + 1;
    callCounts.set(account.id, count);
    const pct = regainMinutes > 0 ? 100 : count % 100;
    return {
      'x-business-use-case-usage': JSON.stringify({
        [account.number]: [
          {
            type: 'ads_insights',
            call_count: pct,
            total_cputime: Math.floor(pct / 2),
            total_time: Math.floor(pct / 2),
            estimated_time_to_regain_access: regainMinutes,
            ads_api_access_tier: 'standard_access',
          },
        ],
      }),
    };
  }

  function sendError(res: http.ServerResponse, failure: GraphFailure, headers: Record<string, string> = {}): void {
    const body: GraphErrorBody = {
      type: 'OAuthException',
      fbtrace_id: randomBytes(8).toString('base64url'),
      ...failure.body,
      message: failure.body.message ?? `Sandbox error ${failure.body.code}`,
    };
    send(res, failure.status, JSON.stringify({ error: body }), {
      'www-authenticate': `OAuth "Facebook Platform" "${body.type}" "${body.message.replace(/"/g, "'")}"`,
      ...headers,
    });
  }

  function tokenOf(req: http.IncomingMessage, params: URLSearchParams): { token: string; inQuery: boolean } {
    const header = /^(?:Bearer|OAuth) (\S+)$/i.exec(req.headers.authorization ?? '');
    if (header) return { token: header[1]!, inQuery: false };
    const param = params.get('access_token');
    if (param) return { token: param, inQuery: true };
    throw fail(104, 'An access token is required to request this resource.');
  }

  function checkToken(token: string, accountId?: string): void {
    const info = tokens.get(token);
    if (!info) throw fail(190, 'Invalid OAuth access token - Cannot parse access token');
    if (info.expired || (info.expiresAt !== null && info.expiresAt <= now())) {
      throw fail(190, 'Error validating access token: Session has expired.', {
        error_subcode: 463,
        error_user_title: 'Session expired',
        error_user_msg: 'Your Facebook session has expired. Connect the ad account again.',
      });
    }
    if (info.revoked) throw fail(200, '(#200) Ad account owner has NOT grant ads_management or ads_read permission', {}, 403);
    if (accountId !== undefined && !accounts.has(accountId)) throw unknownObject(accountId);
    if (accountId !== undefined && info.accounts !== null && !info.accounts.has(accountId)) throw unknownObject(accountId);
  }

  const unknownObject = (id: string) =>
    fail(
      100,
      `Unsupported get request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
      { error_subcode: 33, type: 'GraphMethodException' },
    );

  /** Scenario answers for a call on `key` (an account id, or 'me'): true when one was sent. */
  function scenarioAnswer(res: http.ServerResponse, key: string, account: Account | undefined): boolean {
    const until = throttles.get(key);
    if (until !== undefined && until > now() && account) {
      sendError(
        res,
        fail(
          80000,
          'There have been too many calls from this ad-account. Wait a bit and try again. For more info, please refer to https://developers.facebook.com/docs/graph-api/overview/rate-limiting.',
          {
            error_subcode: 2446079,
            is_transient: true,
            error_user_title: 'Ad Account Has Too Many API Calls',
            error_user_msg: 'There have been too many calls from this ad-account. Please wait a bit and try again.',
          },
        ),
        usageHeader(account, Math.ceil((until - now()) / 60_000)),
      );
      return true;
    }
    const queue = failures.get(key);
    if (queue?.length) {
      const next = queue[0]!;
      if (--next.times <= 0) queue.shift();
      sendError(
        res,
        new GraphFailure(next.body.code === 1 || next.body.code === 2 ? 500 : 400, next.body),
        account ? usageHeader(account) : {},
      );
      return true;
    }
    const kind = malformed.get(key)?.shift();
    if (kind) {
      sendMalformed(res, kind, account);
      return true;
    }
    return false;
  }

  function sendMalformed(res: http.ServerResponse, kind: SandboxMalformed, account: Account | undefined): void {
    const number = account?.number ?? '1';
    switch (kind) {
      case 'html':
        return send(res, 200, '<!DOCTYPE html><html><body><h1>Sorry, something went wrong.</h1></body></html>', {
          'content-type': 'text/html; charset=utf-8',
        });
      case 'wrong_types':
        return send(
          res,
          200,
          JSON.stringify({
            data: [{ account_id: Number(number), spend: 12.34, campaign_id: 7, adset_id: 8, date_start: 20261101 }],
            id: Number(number),
            currency: 840,
            report_run_id: 6001,
            async_status: 1,
          }),
        );
      case 'missing_fields':
        return send(res, 200, JSON.stringify({ data: [{ account_id: number, spend: '1.00' }], id: `act_${number}` }));
      case 'truncated':
        return send(res, 200, `{"data":[{"account_id":"${number}","campaign_id":"1","spend":"1`);
      case 'redirect':
        res.writeHead(302, { location: 'https://www.facebook.com/login.php', 'content-length': 0 });
        return void res.end();
      case 'huge': {
        res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
        const chunk = Buffer.from(`{"account_id":"${number}","spend":"1.00","padding":"${'x'.repeat(65_000)}"},`);
        let sent = 0;
        const pump = () => {
          while (!res.destroyed && sent < 256 * 1024 * 1024) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        res.write('{"data":[');
        return pump();
      }
      case 'slow': {
        res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
        res.write('{"data":[');
        const timer = setTimeout(() => res.end(']}'), 120_000);
        timer.unref();
        res.once('close', () => clearTimeout(timer));
        return;
      }
    }
  }

  function insightsQuery(params: URLSearchParams): InsightsQuery {
    const level = params.get('level');
    if (level !== 'adset') throw fail(100, `(#100) The sandbox serves level=adset only, not ${level ?? 'no level'}`);
    if (params.get('time_increment') !== '1') throw fail(100, '(#100) The sandbox serves time_increment=1 only');
    if (params.get('breakdowns') !== HOURLY_BREAKDOWN) throw fail(100, `(#100) The sandbox serves breakdowns=${HOURLY_BREAKDOWN} only`);
    let range: unknown;
    try {
      range = JSON.parse(params.get('time_range') ?? '');
    } catch {
      range = undefined;
    }
    const { since, until } = (typeof range === 'object' && range !== null ? range : {}) as { since?: unknown; until?: unknown };
    if (!isDate(since) || !isDate(until) || since > until)
      throw fail(100, '(#100) time_range must be {"since":"YYYY-MM-DD","until":"YYYY-MM-DD"}, since not after until');
    const fields = (params.get('fields') ?? 'spend').split(',').filter(Boolean);
    const unknown = fields.find((f) => !INSIGHTS_FIELDS.has(f));
    if (unknown !== undefined) throw fail(100, `(#100) ${unknown.slice(0, 64)} is not valid for fields param.`);
    return { since, until, fields };
  }

  /** One page of Insights rows, from `after` on (the cursor is the last row's position, base64 like Meta's). */
  function sendInsightsPage(
    res: http.ServerResponse,
    account: Account,
    q: InsightsQuery,
    params: URLSearchParams,
    nextPath: string,
    tokenInQuery: URLSearchParams | undefined,
  ): void {
    const limit = Math.min(Math.max(Number.parseInt(params.get('limit') ?? '', 10) || defaultPageSize, 1), MAX_PAGE_SIZE);
    const afterText = params.get('after');
    let start = 0;
    if (afterText !== null) {
      const position = Number(Buffer.from(afterText, 'base64').toString());
      if (!Number.isSafeInteger(position) || position < 0) throw fail(100, '(#100) The after cursor is not valid');
      start = position + 1;
    }
    const want = new Set(q.fields);
    const prefixes = account.adSets.map((s) => {
      const parts: string[] = [];
      if (want.has('account_id')) parts.push(`"account_id":"${account.number}"`);
      if (want.has('account_currency')) parts.push(`"account_currency":"${account.currency}"`);
      if (want.has('account_name')) parts.push(`"account_name":${JSON.stringify(account.name)}`);
      if (want.has('campaign_id')) parts.push(`"campaign_id":"${s.campaignId}"`);
      if (want.has('campaign_name')) parts.push(`"campaign_name":${JSON.stringify(s.campaignName)}`);
      if (want.has('adset_id')) parts.push(`"adset_id":"${s.id}"`);
      if (want.has('adset_name')) parts.push(`"adset_name":${JSON.stringify(s.name)}`);
      return `{${parts.map((p) => `${p},`).join('')}`;
    });
    const withSpend = want.has('spend');
    const rows: string[] = [];
    let first = -1;
    let last = -1;
    // A row's text after its spend, per day: its dates, then each hour's label (index 24: no hour).
    let endings: string[] = [];
    let dayOfEndings = NaN;
    const row = (s: number, c: number, hour: number) =>
      withSpend ? `${prefixes[s]}"spend":"${centsText(c)}",${endings[hour]}` : `${prefixes[s]}${endings[hour]}`;
    const setDay = (day: number) => {
      if (day !== dayOfEndings) {
        dayOfEndings = day;
        const dates = `"date_start":"${dateOf(day)}","date_stop":"${dateOf(day)}"`;
        endings = [...ALL_HOURS.map((h) => `${dates},"${HOURLY_BREAKDOWN}":"${hourLabel(h)}"}`), `${dates}}`];
      }
    };
    if (!withheld.has(account.id)) {
      eachRow(account, dayNumber(q.since), dayNumber(q.until), start, (position, day, s, hour, c) => {
        if (rows.length === limit) return false;
        setDay(day);
        rows.push(row(s, c, hour));
        if (first < 0) first = position;
        last = position;
        return true;
      });
    } else {
      // Hours withheld: one row per ad set and day, the day's sum, at the position of its last hour.
      let block = -1;
      let sum = 0;
      let blockAdSet = 0;
      const flush = () => {
        if (block < 0) return;
        rows.push(row(blockAdSet, sum, 24));
        if (first < 0) first = block + 23;
        last = block + 23;
      };
      eachRow(account, dayNumber(q.since), dayNumber(q.until), start, (position, day, s, _hour, c) => {
        const here = position - (position % 24);
        if (here !== block) {
          flush();
          if (rows.length === limit) return false;
          block = here;
          blockAdSet = s;
          sum = 0;
          setDay(day);
        }
        sum += c;
        return true;
      });
      if (rows.length < limit) flush();
    }
    const cursor = (p: number) => Buffer.from(String(p)).toString('base64');
    let paging = '';
    if (rows.length > 0) {
      const cursors = `"cursors":{"before":"${cursor(first)}","after":"${cursor(last)}"}`;
      let next = '';
      if (rows.length === limit) {
        const nextParams = new URLSearchParams(params);
        nextParams.delete('access_token');
        if (tokenInQuery) nextParams.set('access_token', tokenInQuery.get('access_token')!);
        nextParams.set('limit', String(limit));
        nextParams.set('after', cursor(last));
        next = `,"next":${JSON.stringify(`${sandbox.url}/${v}/${nextPath}?${nextParams}`)}`;
      }
      paging = `,"paging":{${cursors}${next}}`;
    }
    send(res, 200, `{"data":[${rows.join(',')}]${paging}}`, usageHeader(account));
  }

  function accountJson(account: Account, fields: string | null): string {
    const want = (fields ?? 'id').split(',');
    const unknown = want.find((f) => !ACCOUNT_FIELDS.has(f));
    if (unknown !== undefined)
      throw fail(100, `(#100) Tried accessing nonexisting field (${unknown.slice(0, 64)}) on node type (AdAccount)`);
    const all: Record<string, unknown> = {
      id: account.id,
      account_id: account.number,
      name: account.name,
      currency: account.currency,
      timezone_name: account.timezone_name,
      account_status: account.account_status,
    };
    return JSON.stringify(Object.fromEntries(want.map((f) => [f, all[f]])));
  }

  async function readBody(req: http.IncomingMessage): Promise<string> {
    let text = '';
    for await (const chunk of req) {
      text += chunk;
      if (text.length > 65_536) throw fail(100, '(#100) The request body is too large');
    }
    return text;
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://sandbox');
    const method = req.method ?? 'GET';
    requests.push({ method, path: url.pathname });
    if (requests.length > MAX_REQUESTS_KEPT) requests.splice(0, MAX_REQUESTS_KEPT / 2);
    if (url.pathname === '/__sandbox/scenario' && method === 'POST') return scenarioRequest(req, res);
    const parts = url.pathname.split('/').filter(Boolean);
    if (parts[0] !== v)
      throw fail(2635, `The sandbox serves Graph API ${v} only, not ${(parts[0] ?? '').slice(0, 16) || 'an unversioned path'}`);
    const params = method === 'POST' ? new URLSearchParams(await readBody(req)) : url.searchParams;
    if (method === 'POST') for (const [k, value] of url.searchParams) if (!params.has(k)) params.set(k, value);
    const route = parts.slice(1).join('/');

    if (route === 'dialog/oauth') return dialog(method, params, res);
    if (route === 'oauth/access_token' && method === 'GET') return accessToken(params, res);

    const { token, inQuery } = tokenOf(req, params);
    const tokenParams = inQuery ? params : undefined;
    if (route === 'me/adaccounts' && method === 'GET') {
      checkToken(token);
      if (scenarioAnswer(res, 'me', undefined)) return;
      const info = tokens.get(token)!;
      const list = [...accounts.values()].filter((a) => info.accounts === null || info.accounts.has(a.id));
      const limit = Math.min(Math.max(Number.parseInt(params.get('limit') ?? '', 10) || DEFAULT_PAGE_SIZE, 1), MAX_PAGE_SIZE);
      const afterText = params.get('after');
      const start = afterText === null ? 0 : Number(Buffer.from(afterText, 'base64').toString()) + 1;
      if (!Number.isSafeInteger(start) || start < 0) throw fail(100, '(#100) The after cursor is not valid');
      const page = list.slice(start, start + limit);
      const fields = params.get('fields');
      const cursor = (p: number) => Buffer.from(String(p)).toString('base64');
      let paging = '';
      if (page.length > 0) {
        let next = '';
        if (start + limit < list.length) {
          const nextParams = new URLSearchParams(params);
          nextParams.set('after', cursor(start + page.length - 1));
          if (!tokenParams) nextParams.delete('access_token');
          next = `,"next":${JSON.stringify(`${sandbox.url}/${v}/me/adaccounts?${nextParams}`)}`;
        }
        paging = `,"paging":{"cursors":{"before":"${cursor(start)}","after":"${cursor(start + page.length - 1)}"}${next}}`;
      }
      return send(res, 200, `{"data":[${page.map((a) => accountJson(a, fields)).join(',')}]${paging}}`);
    }

    for (const plugin of o.plugins ?? []) {
      const checkUserToken = (t: string) => checkToken(t);
      if (await plugin.handle({ method, route, params, token, res, baseUrl: sandbox.url, checkUserToken })) return;
    }
    const match = /^(act_\d{1,20}|\d{1,32})(?:\/(insights))?$/.exec(route);
    if (!match) throw fail(2500, `Unknown path components: /${route.slice(0, 100)}`);
    const [, node, edge] = match;
    const run = node!.startsWith('act_') ? undefined : runs.get(node!);
    if (!node!.startsWith('act_') && !run) throw unknownObject(node!);
    const accountId = run ? run.accountId : node!;
    checkToken(token, accountId);
    const account = accounts.get(accountId)!;
    if (scenarioAnswer(res, accountId, account)) return;

    if (!run && !edge && method === 'GET') return send(res, 200, accountJson(account, params.get('fields')), usageHeader(account));
    if (!run && edge && method === 'GET')
      return sendInsightsPage(res, account, insightsQuery(params), params, `${account.id}/insights`, tokenParams);
    if (!run && edge && method === 'POST') {
      const query = insightsQuery(params);
      const id = String(6_000_000_000_000 + ++runCounter);
      runs.set(id, { id, accountId, query, polls: 0, outcome: reportOutcomes.get(accountId) ?? 'Job Completed' });
      reportOutcomes.delete(accountId);
      return send(res, 200, JSON.stringify({ report_run_id: id }), usageHeader(account));
    }
    if (run && !edge && method === 'GET') {
      run.polls++;
      const done = run.polls >= REPORT_POLLS;
      const status: AsyncStatus = done ? run.outcome : 'Job Running';
      const percent = done && run.outcome === 'Job Completed' ? 100 : Math.floor((100 * run.polls) / (REPORT_POLLS + 1));
      return send(
        res,
        200,
        JSON.stringify({
          id: run.id,
          account_id: account.number,
          time_ref: 1,
          async_status: status,
          async_percent_completion: percent,
          date_start: run.query.since,
          date_stop: run.query.until,
        }),
        usageHeader(account),
      );
    }
    if (run && edge && method === 'GET') {
      if (run.polls < REPORT_POLLS || run.outcome !== 'Job Completed')
        throw fail(100, `(#100) Report ${run.id} is not ready: its async_status is not Job Completed`);
      return sendInsightsPage(res, account, run.query, params, `${run.id}/insights`, tokenParams);
    }
    throw fail(100, `(#100) Unsupported ${method.slice(0, 8)} request.`, { error_subcode: 33, type: 'GraphMethodException' });
  }

  // --- OAuth (Facebook Login "manually build a login flow")

  const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

  function dialog(method: string, params: URLSearchParams, res: http.ServerResponse): void {
    const page = (status: number, body: string) => {
      const html = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Sandbox Facebook Login</title></head><body style="font-family:sans-serif;max-width:32rem;margin:2rem auto;padding:0 1rem">${body}</body></html>`;
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(html) });
      res.end(html);
    };
    const redirectUri = params.get('redirect_uri') ?? '';
    let target: URL;
    try {
      target = new URL(redirectUri);
      if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new Error();
    } catch {
      return page(400, '<h1>Invalid redirect_uri</h1><p>The app asked to return to an address that is not an absolute http(s) URL.</p>');
    }
    if (params.get('client_id') !== APP_ID)
      return page(400, '<h1>Invalid App ID</h1><p>The provided app ID does not look like a valid app ID.</p>');
    const state = params.get('state') ?? '';
    const scope = params.get('scope') ?? '';
    if (method === 'GET') {
      const hidden = (name: string, value: string) => `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`;
      return page(
        200,
        `<h1>Sandbox Facebook Login</h1><p>The app wants to read your ads: <strong>${escapeHtml(scope || 'public_profile')}</strong>.</p>
<form method="post">${hidden('client_id', APP_ID)}${hidden('redirect_uri', redirectUri)}${hidden('state', state)}${hidden('scope', scope)}
<button type="submit" name="decision" value="allow">Continue</button> <button type="submit" name="decision" value="deny">Cancel</button></form>`,
      );
    }
    if (params.get('decision') === 'allow') {
      const code = randomBytes(24).toString('base64url');
      codes.set(code, { redirectUri, expiresAt: now() + 10 * 60_000 });
      target.searchParams.set('code', code);
    } else {
      target.searchParams.set('error', 'access_denied');
      target.searchParams.set('error_code', '200');
      target.searchParams.set('error_description', 'Permissions error');
      target.searchParams.set('error_reason', 'user_denied');
    }
    target.searchParams.set('state', state);
    res.writeHead(303, { location: target.toString(), 'content-length': 0 });
    res.end();
  }

  function newToken(info: TokenInfo): string {
    const token = `EAAsandbox${randomBytes(24).toString('base64url')}`;
    tokens.set(token, info);
    return token;
  }

  function accessToken(params: URLSearchParams, res: http.ServerResponse): void {
    if (params.get('client_id') !== APP_ID) throw fail(101, 'Error validating application. Invalid application ID.');
    if (params.get('client_secret') !== APP_SECRET) throw fail(1, 'Error validating client secret.', {}, 400);
    let expiresIn: number;
    let accountsOf: Set<string> | null = null;
    if (params.get('grant_type') === 'fb_exchange_token') {
      const short = params.get('fb_exchange_token') ?? '';
      checkToken(short);
      accountsOf = tokens.get(short)!.accounts;
      expiresIn = LONG_LIVED_S;
    } else {
      const code = params.get('code') ?? '';
      const issued = codes.get(code);
      if (!issued || issued.expiresAt <= now()) throw fail(100, 'Invalid verification code format.', { error_subcode: 36007 });
      if (params.get('redirect_uri') !== issued.redirectUri)
        throw fail(
          100,
          'Error validating verification code. Please make sure your redirect_uri is identical to the one you used in the OAuth dialog request',
          { error_subcode: 36008 },
        );
      codes.delete(code);
      expiresIn = SHORT_LIVED_S;
    }
    const token = newToken({ accounts: accountsOf, expiresAt: now() + expiresIn * 1000, expired: false, revoked: false });
    send(res, 200, JSON.stringify({ access_token: token, token_type: 'bearer', expires_in: expiresIn }));
  }

  // --- Scenario control

  const scenario: MetaSandbox['scenario'] = {
    throttle: (accountId, ms) => void throttles.set(accountId, now() + ms),
    expireToken: (token) => {
      const info = tokens.get(token);
      if (info) info.expired = true;
    },
    revokePermission: (token) => {
      const info = tokens.get(token);
      if (info) info.revoked = true;
    },
    restate: (accountId, date, factor) => {
      if (!isDate(date) || !(factor >= 0)) throw new Error('restate takes a YYYY-MM-DD date and a factor ≥ 0');
      restatements.set(`${accountId}|${date}`, factor);
    },
    fail: (accountId, body, times = 1) => {
      if (!Number.isSafeInteger(body.code)) throw new Error('a failure needs a numeric code');
      failures.set(accountId, [...(failures.get(accountId) ?? []), { body, times }]);
    },
    malformed: (accountId, kind) => {
      if (!MALFORMED.includes(kind)) throw new Error(`malformed answers are ${MALFORMED.join(', ')}`);
      malformed.set(accountId, [...(malformed.get(accountId) ?? []), kind]);
    },
    failReport: (accountId, status) => void reportOutcomes.set(accountId, status),
    withholdHours: (accountId) => void withheld.add(accountId),
    reset: () => {
      for (const map of [throttles, failures, malformed, reportOutcomes, restatements, withheld]) map.clear();
      for (const info of tokens.values()) info.expired = info.revoked = false;
      for (const plugin of o.plugins ?? []) plugin.reset?.();
    },
  };

  async function scenarioRequest(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    // JSON only: a web page can POST text/plain to loopback without a preflight, never application/json.
    if ((req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase() !== 'application/json') {
      return send(res, 415, JSON.stringify({ error: 'send the command as content-type: application/json' }));
    }
    let command: Record<string, unknown>;
    try {
      command = JSON.parse(await readBody(req)) as Record<string, unknown>;
      if (typeof command !== 'object' || command === null) throw new Error('not an object');
    } catch {
      return send(
        res,
        400,
        JSON.stringify({ error: 'send a JSON object: {"action": "throttle", "accountId": "act_1001", "ms": 60000} …' }),
      );
    }
    const text = (key: string) => (typeof command[key] === 'string' ? (command[key] as string) : '');
    try {
      switch (command.action) {
        case 'throttle':
          scenario.throttle(text('accountId'), Number(command.ms));
          break;
        case 'expireToken':
          scenario.expireToken(text('token'));
          break;
        case 'revokePermission':
          scenario.revokePermission(text('token'));
          break;
        case 'restate':
          scenario.restate(text('accountId'), text('date'), Number(command.factor));
          break;
        case 'fail':
          scenario.fail(text('accountId'), command.body as ErrorFields, typeof command.times === 'number' ? command.times : 1);
          break;
        case 'malformed':
          scenario.malformed(text('accountId'), text('kind') as SandboxMalformed);
          break;
        case 'failReport':
          scenario.failReport(text('accountId'), text('status') === 'Job Skipped' ? 'Job Skipped' : 'Job Failed');
          break;
        case 'withholdHours':
          scenario.withholdHours(text('accountId'));
          break;
        case 'reset':
          scenario.reset();
          break;
        case 'addAccount':
          addAccount(command.account as SandboxAccount);
          break;
        case 'issueToken':
          return send(res, 200, JSON.stringify({ token: sandbox.issueToken(command as { accounts?: string[] }) }));
        default: {
          for (const plugin of o.plugins ?? []) {
            const answer = plugin.scenario?.(command);
            if (answer !== undefined) return send(res, 200, JSON.stringify(answer));
          }
          return send(
            res,
            400,
            JSON.stringify({
              error:
                'unknown action; one of throttle, expireToken, revokePermission, restate, fail, malformed, failReport, withholdHours, reset, addAccount, issueToken',
            }),
          );
        }
      }
    } catch (error) {
      return send(res, 400, JSON.stringify({ error: (error as Error).message }));
    }
    send(res, 200, '{"ok":true}');
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) return void res.destroy();
      sendError(res, error instanceof GraphFailure ? error : fail(1, 'An unknown error occurred', { is_transient: true }, 500));
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, o.host ?? '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;

  const sandbox: MetaSandbox = {
    url: `http://127.0.0.1:${port}`,
    appId: APP_ID,
    appSecret: APP_SECRET,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
    accounts: () =>
      [...accounts.values()].map(({ id, name, currency, timezone_name, account_status, adSets }) => ({
        id,
        name,
        currency,
        timezone_name,
        account_status,
        adSets: adSets.map((s) => ({ ...s })),
      })),
    hourlySpend,
    addAccount,
    issueToken: (t = {}) =>
      newToken({
        accounts: t.accounts ? new Set(t.accounts) : null,
        expiresAt: t.systemUser ? null : now() + (t.expiresInS ?? LONG_LIVED_S) * 1000,
        expired: false,
        revoked: false,
      }),
    scenario,
    requests,
  };
  return sandbox;
}
