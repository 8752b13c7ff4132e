// A sandbox OpenAI Ads API on loopback: the calls hubops makes (GET /v1/ad_account, GET
// /v1/ad_account/insights at aggregation_level=ad_group with hourly or daily buckets and cursor
// paging) in OpenAI's documented wire format (./wire.ts), with rate-limit headers and OpenAI error
// bodies. Each issued key reads exactly one ad account; any other key answers 401. Spend is
// generated, deterministic per seed: every ad group spends something in most account-local hours,
// whole cents, written in the unit CHATGPT_ADS_SPEND_UNIT says; a bucket appears once its hour is
// over. A scenario control (in JS, and POST /__sandbox/scenario for the demo or a terminal) throttles
// an account, revokes a key, restates a day, withholds hours, fails the next calls or answers them
// with something hostile. Tests compute expectations from its ground truth (`hourlySpend`). It serves
// ~100k rows/s: a row is two hashes and one string template.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CHATGPT_ADS_SPEND_UNIT } from '../../policy.ts';
import { isTimeZoneName } from '../../platform/time.ts';
import { centsToSpendJson } from './spend.ts';
import { API_PREFIX, goDuration, INSIGHTS_MAX_LIMIT, RATE_HEADERS, ROW_KEY, type OpenAIErrorBody } from './wire.ts';
import { DAY_MS, dateOf, dayNumber, HOUR_MS, localHour, startOfLocalDay } from './zone.ts';
import { hashText, mix } from '../sandbox-kit.ts';

export interface OpenAIAdsSandboxAdGroup {
  id: string;
  name: string;
  campaignId: string;
  campaignName: string;
}

export interface OpenAIAdsSandboxAccount {
  /** Letters, digits, _ and - (the reference's examples: act_123, adacct_123). */
  id: string;
  name: string;
  currency_code: string;
  timezone: string;
  /** 'active' unless said otherwise (the quickstart's `status`). */
  status: string;
  adGroups: OpenAIAdsSandboxAdGroup[];
}

export interface OpenAIAdsSandboxOptions {
  host?: '127.0.0.1';
  port?: number;
  now?: () => Date;
  /** Same seed, same spend (default 1). */
  seed?: number;
  /** The accounts to start with; missing fields get defaults (USD, America/New_York, three ad groups in two campaigns). */
  accounts?: (Partial<OpenAIAdsSandboxAccount> & { id: string })[];
  /** Or this many generated accounts with this many ad groups each (zones and currencies alternate), e.g. for the benchmark. */
  generate?: { accounts: number; adGroupsPerAccount: number };
  /** Account-local days before today that have spend (default 120). */
  historyDays?: number;
  /** The most rows one page holds, whatever `limit` asks (default and at most 2000, the API's maximum). */
  pageSize?: number;
}

export interface OpenAIAdsSandboxSpendRow {
  /** Account-local date and hour of the bucket (a fall-back day has its repeated hour twice). */
  date: string;
  hour: number;
  campaignId: string;
  /** The ad group's id (the engine's ad set). */
  adSetId: string;
  spendMicros: bigint;
  /** The bucket's start_time, Unix seconds. */
  startTime: number;
}

const MALFORMED = [
  'html',
  'wrong_types',
  'missing_fields',
  'truncated',
  'redirect',
  'huge',
  'slow',
  /** has_more with a last_id the client already followed. */
  'cursor_loop',
  /** A spend with more decimals than the currency has (a float sum). */
  'spend_precision',
  /** A row that names its own spend unit. */
  'spend_unit',
  /** A bucket that starts half an hour off the account's hours. */
  'shifted_hours',
] as const;
export type OpenAIAdsSandboxMalformed = (typeof MALFORMED)[number];
/** Kinds that only make sense as an Insights answer. */
const INSIGHTS_ONLY = new Set<OpenAIAdsSandboxMalformed>(['cursor_loop', 'spend_precision', 'spend_unit', 'shifted_hours']);

/** Which calls a scenario answer applies to: any call on the account, or only its Insights. */
export type OpenAIAdsSandboxTarget = 'any' | 'insights';

export interface OpenAIAdsSandboxFailure {
  status: number;
  /** The `error` object of the body (message, type, param, code). */
  body: Partial<OpenAIErrorBody>;
  headers?: Record<string, string>;
  on?: OpenAIAdsSandboxTarget;
}

export interface OpenAIAdsSandbox {
  /** Serves /v1/ad_account and /v1/ad_account/insights. */
  url: string;
  close(): Promise<void>;
  accounts(): OpenAIAdsSandboxAccount[];
  /** The spend the sandbox serves for an account: every bucket that is over, restatements included. */
  hourlySpend(accountId: string, range?: { since: string; until: string }): OpenAIAdsSandboxSpendRow[];
  addAccount(a: Partial<OpenAIAdsSandboxAccount> & { id: string }): void;
  /** A new key that reads exactly that account. */
  issueKey(o: { accountId: string }): string;
  scenario: {
    /** Calls on the account answer 429 rate_limit_exceeded, with retry-after, for `ms` from now. */
    throttle(accountId: string, ms: number): void;
    /** The key answers 401 invalid_api_key from now on. */
    revokeKey(key: string): void;
    /** The next `times` (default 1) calls on the account answer this error. */
    fail(accountId: string, failure: OpenAIAdsSandboxFailure, times?: number): void;
    /** The next call on the account (Insights only, for the kinds that are about rows) gets a hostile answer. */
    malformed(accountId: string, kind: OpenAIAdsSandboxMalformed, on?: OpenAIAdsSandboxTarget): void;
    /** The account's spend on that local day becomes `factor` times what it was. */
    restate(accountId: string, date: string, factor: number): void;
    /** Hours are not offered: hourly Insights come as whole days ('daily', default) or are refused (400 on time_granularity). */
    withholdHours(accountId: string, mode?: 'daily' | 'refuse'): void;
    /** Back to normal: no throttles, failures, restatements; keys valid again. */
    reset(): void;
  };
  /** What was asked (path, and the query string), oldest first; the last 100,000. */
  requests: { method: string; path: string; query: string }[];
}

const MAX_REQUESTS_KEPT = 100_000;
const RATE_LIMIT = 600;
/** Insights › time_ranges: bounds within 5 years. An hourly window of at most 25 hours (see client.ts). */
const MAX_HISTORY_MS = 5 * 366 * DAY_MS;
const MAX_HOURLY_WINDOW_MS = 25 * HOUR_MS;
/** Share of an ad group's spend by account-local hour of day, in percent: quiet nights, busy evenings. */
const HOUR_WEIGHT = [30, 20, 15, 12, 12, 20, 40, 70, 90, 100, 105, 110, 115, 110, 105, 105, 110, 120, 135, 150, 145, 120, 80, 50];
const ID = /^[A-Za-z0-9_-]{1,64}$/;

/** One hourly bucket of a local day. */
interface HourBucket {
  start: number;
  end: number;
  hour: number;
  day: number;
}

const bucketCache = new Map<string, HourBucket[]>();
/** The hourly buckets of a local day: 24, or 23 / 25 when clocks change. */
function hourBuckets(zone: string, day: number): HourBucket[] {
  const key = `${zone}|${day}`;
  let buckets = bucketCache.get(key);
  if (!buckets) {
    buckets = [];
    const end = startOfLocalDay(zone, day + 1);
    for (let t = startOfLocalDay(zone, day); t < end; t += HOUR_MS) {
      buckets.push({ start: t, end: Math.min(t + HOUR_MS, end), hour: localHour(zone, t).hour, day });
    }
    if (bucketCache.size > 100_000) bucketCache.clear();
    bucketCache.set(key, buckets);
  }
  return buckets;
}

interface Account extends OpenAIAdsSandboxAccount {
  /** Per ad group: its hash key and base cents per hour. */
  keys: number[];
  bases: number[];
  index: Map<string, number>;
}

/** A bucket as served: its bounds, the hour its weight comes from, and the restatement factor of its day. */
interface ServedBucket {
  start: number;
  end: number;
  /** The hourly buckets it sums (one, or a day's). */
  hours: HourBucket[];
  factor: number | undefined;
}

class ApiFailure extends Error {
  readonly status: number;
  readonly body: OpenAIErrorBody;
  readonly headers: Record<string, string>;
  constructor(status: number, body: Partial<OpenAIErrorBody>, headers: Record<string, string> = {}) {
    super(body.message ?? String(status));
    this.status = status;
    this.body = {
      message: body.message ?? `Sandbox error ${status}`,
      type: body.type ?? (status >= 500 ? 'server_error' : 'invalid_request_error'),
      param: body.param ?? null,
      code: body.code ?? null,
    };
    this.headers = headers;
  }
}

const invalid = (param: string | null, message: string, code: string | null = 'invalid_value') =>
  new ApiFailure(400, { message, type: 'invalid_request_error', param, code });

export async function startOpenAIAdsSandbox(o: OpenAIAdsSandboxOptions = {}): Promise<OpenAIAdsSandbox> {
  const now = () => (o.now ? o.now().getTime() : Date.now());
  const seed = o.seed ?? 1;
  const historyDays = o.historyDays ?? 120;
  const pageSize = Math.min(Math.max(o.pageSize ?? INSIGHTS_MAX_LIMIT, 1), INSIGHTS_MAX_LIMIT);

  const accounts = new Map<string, Account>();
  const keys = new Map<string, { accountId: string; revoked: boolean }>();
  const throttles = new Map<string, number>();
  const failures = new Map<string, { failure: OpenAIAdsSandboxFailure; times: number }[]>();
  const malformed = new Map<string, { kind: OpenAIAdsSandboxMalformed; on: OpenAIAdsSandboxTarget }[]>();
  const restatements = new Map<string, number>();
  const withheld = new Map<string, 'daily' | 'refuse'>();
  const callCounts = new Map<string, number>();
  const requests: { method: string; path: string; query: string }[] = [];

  function addAccount(a: Partial<OpenAIAdsSandboxAccount> & { id: string }): void {
    if (typeof a.id !== 'string' || !ID.test(a.id)) throw new Error('a sandbox account id is 1 to 64 letters, digits, _ and -');
    const timezone = a.timezone ?? 'America/New_York';
    if (!isTimeZoneName(timezone)) throw new Error('a sandbox account needs an IANA time zone');
    const currency = a.currency_code ?? 'USD';
    if (!/^[A-Z]{3}$/.test(currency)) throw new Error('a sandbox account needs an ISO 4217 currency code');
    const adGroups =
      a.adGroups ??
      [0, 1, 2].map((i) => ({
        id: `adgrp_${a.id}_${i + 1}`,
        name: `Ad group ${i + 1}`,
        campaignId: `cmpn_${a.id}_${i < 2 ? 'a' : 'b'}`,
        campaignName: `Campaign ${i < 2 ? 'A' : 'B'}`,
      }));
    const hashKeys = adGroups.map((g) => mix(seed ^ hashText(`${a.id}/${g.id}`)));
    accounts.set(a.id, {
      id: a.id,
      name: a.name ?? `Sandbox account ${a.id}`,
      currency_code: currency,
      timezone,
      status: a.status ?? 'active',
      adGroups,
      keys: hashKeys,
      bases: hashKeys.map((k) => 50 + (k % 1950)),
      index: new Map(adGroups.map((g, i) => [g.id, i])),
    });
  }

  if (o.generate) {
    for (let n = 0; n < o.generate.accounts; n++) {
      const number = String(4_000_001 + n);
      addAccount({
        id: `adacct_${number}`,
        name: `Generated account ${n + 1}`,
        currency_code: n % 2 === 0 ? 'USD' : 'EUR',
        timezone: n % 2 === 0 ? 'America/New_York' : 'Europe/Paris',
        adGroups: Array.from({ length: o.generate.adGroupsPerAccount }, (_, i) => ({
          id: `adgrp_${number}_${i + 1}`,
          name: `Ad group ${i + 1}`,
          campaignId: `cmpn_${number}_${Math.floor(i / 10) + 1}`,
          campaignName: `Campaign ${Math.floor(i / 10) + 1}`,
        })),
      });
    }
  }
  for (const a of o.accounts ??
    (o.generate
      ? []
      : [
          { id: 'adacct_3001', name: 'ChatGPT Ads US (sandbox)', currency_code: 'USD', timezone: 'America/New_York' },
          { id: 'adacct_3002', name: 'ChatGPT Ads UK (sandbox)', currency_code: 'GBP', timezone: 'Europe/London' },
        ]))
    addAccount(a);

  // --- Spend

  /** Cents an ad group spent in an hourly bucket: 0 in about one hour in twelve (then it has no row). */
  function cents(account: Account, adGroup: number, bucket: HourBucket, factor: number | undefined): number {
    const r = mix(account.keys[adGroup]! ^ mix(bucket.start / 60_000));
    if (r % 12 === 0) return 0;
    const c = Math.floor((account.bases[adGroup]! * HOUR_WEIGHT[bucket.hour]! * (500 + ((r >>> 8) % 1000))) / 100_000);
    return factor === undefined ? c : Math.round(c * factor);
  }

  /** The hourly buckets with spend in [from, to): days of the history window, hours that are over. */
  function servedHours(account: Account, from: number, to: number): HourBucket[] {
    const clock = now();
    const zone = account.timezone;
    const today = localHour(zone, clock).day;
    const out: HourBucket[] = [];
    const firstDay = Math.max(localHour(zone, from).day, today - historyDays);
    const lastDay = Math.min(localHour(zone, to - 1).day, today);
    for (let day = firstDay; day <= lastDay; day++) {
      for (const b of hourBuckets(zone, day)) if (b.start >= from && b.end <= to && b.end <= clock) out.push(b);
    }
    return out;
  }

  const factorOf = (account: Account, day: number) => restatements.get(`${account.id}|${dateOf(day)}`);

  function hourlySpend(accountId: string, range?: { since: string; until: string }): OpenAIAdsSandboxSpendRow[] {
    const account = accounts.get(accountId);
    if (!account) throw new Error(`no sandbox account ${accountId}`);
    const zone = account.timezone;
    const from = range ? startOfLocalDay(zone, dayNumber(range.since)) : 0;
    const to = range ? startOfLocalDay(zone, dayNumber(range.until) + 1) : now() + DAY_MS;
    const rows: OpenAIAdsSandboxSpendRow[] = [];
    const hours = servedHours(account, from, to);
    account.adGroups.forEach((g, s) => {
      for (const b of hours) {
        const c = cents(account, s, b, factorOf(account, b.day));
        if (c > 0)
          rows.push({
            date: dateOf(b.day),
            hour: b.hour,
            campaignId: g.campaignId,
            adSetId: g.id,
            spendMicros: BigInt(c) * 10_000n,
            startTime: b.start / 1000,
          });
      }
    });
    return rows;
  }

  // --- HTTP

  function send(res: http.ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
    const bytes = Buffer.from(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': bytes.length, ...headers });
    res.end(bytes);
  }

  /** The request budget left, never 0 unless throttled: the sandbox reports limits, it does not slow a benchmark down. */
  function rateHeaders(accountId: string): Record<string, string> {
    const count = (callCounts.get(accountId) ?? 0) + 1;
    callCounts.set(accountId, count);
    return {
      [RATE_HEADERS.limit]: String(RATE_LIMIT),
      [RATE_HEADERS.remaining]: String(RATE_LIMIT - 1 - (count % (RATE_LIMIT - 1))),
      [RATE_HEADERS.reset]: goDuration(60_000 - (now() % 60_000)),
    };
  }

  function sendError(res: http.ServerResponse, failure: ApiFailure): void {
    send(res, failure.status, JSON.stringify({ error: failure.body }), failure.headers);
  }

  /** Which account the request's key reads, or a 401 as OpenAI's APIs answer it. */
  function accountOf(req: http.IncomingMessage): Account {
    const header = /^Bearer (\S+)$/i.exec(req.headers.authorization ?? '');
    if (!header)
      throw new ApiFailure(401, {
        message:
          "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        type: 'invalid_request_error',
      });
    const key = header[1]!;
    const info = keys.get(key);
    const account = info && !info.revoked ? accounts.get(info.accountId) : undefined;
    if (!account) {
      const masked = key.length > 12 ? `${key.slice(0, 3)}${'*'.repeat(8)}${key.slice(-4)}` : '****';
      throw new ApiFailure(401, {
        message: `Incorrect API key provided: ${masked}. You can find your API key in Ads Manager under Settings.`,
        type: 'invalid_request_error',
        code: 'invalid_api_key',
      });
    }
    return account;
  }

  /** Scenario answers for a call on the account: true when one was sent. */
  function scenarioAnswer(res: http.ServerResponse, account: Account, insights: boolean, params: URLSearchParams): boolean {
    const until = throttles.get(account.id);
    if (until !== undefined && until > now()) {
      const left = until - now();
      sendError(
        res,
        new ApiFailure(
          429,
          {
            message: `Rate limit reached for requests on ad account ${account.id}: limit ${RATE_LIMIT} per minute. Please try again in ${goDuration(left)}.`,
            type: 'requests',
            code: 'rate_limit_exceeded',
          },
          {
            'retry-after': String(Math.ceil(left / 1000)),
            [RATE_HEADERS.limit]: String(RATE_LIMIT),
            [RATE_HEADERS.remaining]: '0',
            [RATE_HEADERS.reset]: goDuration(left),
          },
        ),
      );
      return true;
    }
    const applies = (on: OpenAIAdsSandboxTarget) => on === 'any' || insights;
    const queue = failures.get(account.id);
    const next = queue?.find((f) => applies(f.failure.on ?? 'any'));
    if (queue && next) {
      if (--next.times <= 0) queue.splice(queue.indexOf(next), 1);
      sendError(res, new ApiFailure(next.failure.status, next.failure.body, next.failure.headers));
      return true;
    }
    const hostile = malformed.get(account.id);
    const at = hostile?.findIndex((m) => applies(m.on)) ?? -1;
    if (hostile && at >= 0) {
      const { kind } = hostile.splice(at, 1)[0]!;
      sendMalformed(res, kind, account, params);
      return true;
    }
    return false;
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://sandbox');
    const method = req.method ?? 'GET';
    requests.push({ method, path: url.pathname, query: url.search });
    if (requests.length > MAX_REQUESTS_KEPT) requests.splice(0, MAX_REQUESTS_KEPT / 2);
    if (url.pathname === '/__sandbox/scenario' && method === 'POST') return scenarioRequest(req, res);
    const route = method === 'GET' ? url.pathname.replace(/\/+$/, '') : '';
    if (route !== `${API_PREFIX}/ad_account` && route !== `${API_PREFIX}/ad_account/insights`) {
      throw new ApiFailure(404, {
        message: `Invalid URL (${method.slice(0, 8)} ${url.pathname.slice(0, 100)})`,
        type: 'invalid_request_error',
      });
    }
    const account = accountOf(req);
    const insights = route.endsWith('/insights');
    if (scenarioAnswer(res, account, insights, url.searchParams)) return;
    if (!insights) return send(res, 200, accountJson(account), rateHeaders(account.id));
    sendInsightsPage(res, account, url.searchParams);
  }

  function accountJson(account: Account): string {
    return JSON.stringify({
      id: account.id,
      name: account.name,
      url: 'https://www.example.com',
      preview_url: null,
      status: account.status,
      timezone: account.timezone,
      currency_code: account.currency_code,
    });
  }

  interface InsightsQuery {
    granularity: 'hourly' | 'daily';
    start: number;
    end: number;
    fields: string[];
    limit: number;
  }

  function insightsQuery(account: Account, params: URLSearchParams): InsightsQuery {
    const granularity = params.get('time_granularity') ?? 'daily';
    if (granularity !== 'hourly' && granularity !== 'daily')
      throw invalid('time_granularity', `The sandbox serves time_granularity hourly and daily, not ${granularity.slice(0, 16)}`);
    if (granularity === 'hourly' && withheld.get(account.id) === 'refuse')
      throw invalid('time_granularity', 'Hourly insights are not available for this ad account', 'unsupported_time_granularity');
    const level = params.get('aggregation_level');
    if (level !== 'ad_group')
      throw invalid('aggregation_level', `The sandbox serves aggregation_level=ad_group only, not ${(level ?? 'none').slice(0, 16)}`);
    const fields = params.getAll('fields[]');
    const unknown = fields.find((f) => !(f in ROW_KEY));
    if (unknown !== undefined) throw invalid('fields', `Unknown field: ${unknown.slice(0, 64)}`, 'unknown_field');
    const ranges = params.getAll('time_ranges[]');
    if (ranges.length !== 1) throw invalid('time_ranges', 'Send exactly one time_ranges[] object');
    let range: unknown;
    try {
      range = JSON.parse(ranges[0]!);
    } catch {
      range = undefined;
    }
    const { type, start, end } = (typeof range === 'object' && range !== null ? range : {}) as Record<string, unknown>;
    if (type !== 'unix_range' || !Number.isSafeInteger(start) || !Number.isSafeInteger(end))
      throw invalid('time_ranges', 'The sandbox reads time_ranges[] of type unix_range with integer start and end', 'invalid_time_range');
    const startMs = (start as number) * 1000;
    const endMs = (end as number) * 1000;
    if (!(startMs < endMs)) throw invalid('time_ranges', 'end must be after start', 'invalid_time_range');
    if (endMs > now()) throw invalid('time_ranges', 'time_ranges must not end in the future', 'invalid_time_range');
    if (startMs < now() - MAX_HISTORY_MS) throw invalid('time_ranges', 'time_ranges must be within 5 years', 'invalid_time_range');
    const zone = account.timezone;
    const onHour = (ms: number) => localHour(zone, ms).intoHourMs === 0;
    if (!onHour(startMs) || !onHour(endMs))
      throw invalid('time_ranges', `time_ranges bounds must be whole hours in the ad account's time zone (${zone})`, 'invalid_time_range');
    if (granularity === 'hourly' && endMs - startMs > MAX_HOURLY_WINDOW_MS)
      throw invalid('time_ranges', 'With time_granularity=hourly a window may span at most 25 hours', 'hourly_range_too_wide');
    const limitText = params.get('limit') ?? '20';
    const limit = /^\d{1,5}$/.test(limitText) ? Number(limitText) : Number.NaN;
    if (!(limit >= 1 && limit <= INSIGHTS_MAX_LIMIT)) throw invalid('limit', `limit must be between 1 and ${INSIGHTS_MAX_LIMIT}`);
    if (params.has('before')) throw invalid('before', 'The sandbox pages forward only (after)');
    return { granularity, start: startMs, end: endMs, fields: fields.length > 0 ? fields : ['ad_group.name', 'ad_group.spend'], limit };
  }

  /** The buckets an Insights call is answered in: each hour, or each local day's sum (hours withheld or daily asked). */
  function servedBuckets(account: Account, q: InsightsQuery): ServedBucket[] {
    const hours = servedHours(account, q.start, q.end);
    if (q.granularity === 'hourly' && !withheld.has(account.id))
      return hours.map((b) => ({ start: b.start, end: b.end, hours: [b], factor: factorOf(account, b.day) }));
    const days: ServedBucket[] = [];
    for (const b of hours) {
      const last = days.at(-1);
      if (last && last.hours[0]!.day === b.day) last.hours.push(b);
      else {
        const zone = account.timezone;
        const start = Math.max(startOfLocalDay(zone, b.day), q.start);
        days.push({ start, end: Math.min(startOfLocalDay(zone, b.day + 1), q.end), hours: [b], factor: factorOf(account, b.day) });
      }
    }
    return days;
  }

  /** One page of rows from the cursor on: ad group by ad group, bucket by bucket; a row's id is its cursor. */
  function sendInsightsPage(res: http.ServerResponse, account: Account, params: URLSearchParams): void {
    const q = insightsQuery(account, params);
    const buckets = servedBuckets(account, q);
    const n = buckets.length;
    let position = 0;
    const after = params.get('after');
    if (after !== null) {
      const m = /^start=(\d+):end=(\d+):entity_id=([A-Za-z0-9_-]+)$/.exec(after);
      const group = m ? account.index.get(m[3]!) : undefined;
      const bucket = m ? buckets.findIndex((b) => b.start === Number(m[1]) * 1000) : -1;
      if (group === undefined || bucket < 0)
        throw invalid('after', 'The after cursor does not name a row of this report', 'invalid_cursor');
      position = group * n + bucket + 1;
    }
    const want = new Set(q.fields);
    const has = Object.fromEntries(Object.entries(ROW_KEY).map(([field, key]) => [key, want.has(field)]));
    const prefixes = account.adGroups.map((g) => {
      const parts: string[] = [];
      if (has.campaign_id) parts.push(`"campaign_id":${JSON.stringify(g.campaignId)}`);
      if (has.campaign_name) parts.push(`"campaign_name":${JSON.stringify(g.campaignName)}`);
      if (has.ad_group_id) parts.push(`"ad_group_id":${JSON.stringify(g.id)}`);
      if (has.ad_group_name) parts.push(`"ad_group_name":${JSON.stringify(g.name)}`);
      return parts.map((p) => `,${p}`).join('');
    });
    const heads = buckets.map((b) => `"start_time":${b.start / 1000},"end_time":${b.end / 1000}`);
    const spendOf = (s: number, b: ServedBucket) => {
      let c = 0;
      for (const h of b.hours) c += cents(account, s, h, b.factor);
      return c;
    };
    const limit = Math.min(q.limit, pageSize);
    const rows: string[] = [];
    let firstId: string | null = null;
    let lastId: string | null = null;
    let hasMore = false;
    const total = account.adGroups.length * n;
    for (; position < total; position++) {
      const s = Math.floor(position / n);
      const b = buckets[position % n]!;
      const c = spendOf(s, b);
      if (c === 0) continue;
      if (rows.length === limit) {
        hasMore = true;
        break;
      }
      const id = `start=${b.start / 1000}:end=${b.end / 1000}:entity_id=${account.adGroups[s]!.id}`;
      firstId ??= id;
      lastId = id;
      rows.push(
        `{"id":"${id}",${heads[position % n]}${prefixes[s]}${has.spend ? `,"spend":${centsToSpendJson(c, CHATGPT_ADS_SPEND_UNIT)}` : ''}}`,
      );
    }
    send(
      res,
      200,
      `{"object":"list","data":[${rows.join(',')}],"count":${rows.length},"first_id":${JSON.stringify(firstId)},"last_id":${JSON.stringify(lastId)},"has_more":${hasMore}}`,
      rateHeaders(account.id),
    );
  }

  function sendMalformed(res: http.ServerResponse, kind: OpenAIAdsSandboxMalformed, account: Account, params: URLSearchParams): void {
    // A well-formed row of the window asked for, for the kinds that spoil one thing in it.
    const row = () => {
      const q = insightsQuery(account, params);
      const start = q.start / 1000;
      const g = account.adGroups[0]!;
      return {
        id: `start=${start}:end=${start + 3600}:entity_id=${g.id}`,
        start_time: start,
        end_time: start + 3600,
        campaign_id: g.campaignId,
        campaign_name: g.campaignName,
        ad_group_id: g.id,
        ad_group_name: g.name,
        spend: 1.25,
      };
    };
    const page = (data: unknown[], more = false, lastId: string | null = null) =>
      JSON.stringify({ object: 'list', data, count: data.length, first_id: null, last_id: lastId, has_more: more });
    switch (kind) {
      case 'html':
        return send(res, 200, '<!DOCTYPE html><html><body><h1>Something went wrong</h1></body></html>', {
          'content-type': 'text/html; charset=utf-8',
        });
      case 'wrong_types':
        return send(
          res,
          200,
          JSON.stringify({
            id: 3001,
            name: ['x'],
            currency_code: 840,
            timezone: -5,
            object: 'list',
            data: [{ start_time: '1777075200', campaign_id: 7, ad_group_id: 8, spend: '12,34' }],
            has_more: 'no',
          }),
        );
      case 'missing_fields':
        return send(
          res,
          200,
          JSON.stringify({ id: account.id, object: 'list', data: [{ ad_group_id: account.adGroups[0]!.id, spend: 1 }], has_more: false }),
        );
      case 'truncated':
        return send(res, 200, `{"object":"list","data":[{"id":"start=1:end=2","campaign_id":"cmpn_1","spend":1`);
      case 'redirect':
        res.writeHead(302, { location: 'https://ads.openai.com/login', 'content-length': 0 });
        return void res.end();
      case 'huge': {
        res.writeHead(200, { 'content-type': 'application/json' });
        const chunk = Buffer.from(`{"ad_group_id":"adgrp_1","spend":1,"padding":"${'x'.repeat(65_000)}"},`);
        let sent = 0;
        const pump = () => {
          while (!res.destroyed && sent < 256 * 1024 * 1024) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        res.write('{"object":"list","data":[');
        return pump();
      }
      case 'slow': {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"object":"list","data":[');
        const timer = setTimeout(() => res.end('],"has_more":false}'), 120_000);
        timer.unref();
        res.once('close', () => clearTimeout(timer));
        return;
      }
      case 'cursor_loop': {
        // The same last_id however far the client follows it.
        const r = row();
        return send(res, 200, page([r], true, r.id));
      }
      case 'spend_precision':
        return send(res, 200, page([{ ...row(), spend: 0.1 + 0.2 }]));
      case 'spend_unit':
        return send(res, 200, page([{ ...row(), spend_micros: 1_250_000 }]));
      case 'shifted_hours': {
        const r = row();
        return send(res, 200, page([{ ...r, start_time: r.start_time + 1800, end_time: r.end_time + 1800 }]));
      }
    }
  }

  async function readBody(req: http.IncomingMessage): Promise<string> {
    let text = '';
    for await (const chunk of req) {
      text += chunk;
      if (text.length > 65_536) throw invalid(null, 'The request body is too large');
    }
    return text;
  }

  // --- Scenario control

  const scenario: OpenAIAdsSandbox['scenario'] = {
    throttle: (accountId, ms) => {
      if (!(ms >= 0)) throw new Error('a throttle lasts ms ≥ 0');
      throttles.set(accountId, now() + ms);
    },
    revokeKey: (key) => {
      const info = keys.get(key);
      if (info) info.revoked = true;
    },
    fail: (accountId, failure, times = 1) => {
      if (!Number.isInteger(failure?.status) || failure.status < 400 || failure.status > 599)
        throw new Error('a failure needs an HTTP status from 400 to 599');
      if (typeof failure.body !== 'object' || failure.body === null) throw new Error('a failure needs a body: the error object');
      failures.set(accountId, [...(failures.get(accountId) ?? []), { failure, times }]);
    },
    malformed: (accountId, kind, on = 'any') => {
      if (!MALFORMED.includes(kind)) throw new Error(`malformed answers are ${MALFORMED.join(', ')}`);
      const target = INSIGHTS_ONLY.has(kind) ? 'insights' : on;
      // A loop needs the same answer twice: once to hand out the cursor, once to hand it out again.
      const entries = Array.from({ length: kind === 'cursor_loop' ? 2 : 1 }, () => ({ kind, on: target }));
      malformed.set(accountId, [...(malformed.get(accountId) ?? []), ...entries]);
    },
    restate: (accountId, date, factor) => {
      if (Number.isNaN(dayNumber(date)) || !(factor >= 0)) throw new Error('restate takes a YYYY-MM-DD date and a factor ≥ 0');
      restatements.set(`${accountId}|${date}`, factor);
    },
    withholdHours: (accountId, mode = 'daily') => {
      if (mode !== 'daily' && mode !== 'refuse') throw new Error("withholdHours' mode is daily or refuse");
      withheld.set(accountId, mode);
    },
    reset: () => {
      for (const map of [throttles, failures, malformed, restatements, withheld]) map.clear();
      for (const info of keys.values()) info.revoked = false;
    },
  };

  function issueKey({ accountId }: { accountId: string }): string {
    if (!accounts.has(accountId)) throw new Error(`no sandbox account ${accountId}`);
    const key = `sk-ads-sandbox-${randomBytes(24).toString('base64url')}`;
    keys.set(key, { accountId, revoked: false });
    return key;
  }

  async function scenarioRequest(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    // JSON only: a web page can POST text/plain to loopback without a preflight, never application/json.
    if ((req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase() !== 'application/json') {
      return send(res, 415, JSON.stringify({ error: 'send the command as content-type: application/json' }));
    }
    let command: Record<string, unknown>;
    try {
      command = JSON.parse(await readBody(req)) as Record<string, unknown>;
      if (typeof command !== 'object' || command === null || Array.isArray(command)) throw new Error('not an object');
    } catch {
      return send(
        res,
        400,
        JSON.stringify({ error: 'send a JSON object: {"action": "throttle", "accountId": "adacct_3001", "ms": 60000} …' }),
      );
    }
    const text = (key: string) => (typeof command[key] === 'string' ? (command[key] as string) : '');
    const target = (): OpenAIAdsSandboxTarget => (command.on === 'insights' ? 'insights' : 'any');
    try {
      switch (command.action) {
        case 'throttle':
          scenario.throttle(text('accountId'), Number(command.ms));
          break;
        case 'revokeKey':
          scenario.revokeKey(text('key'));
          break;
        case 'fail':
          scenario.fail(
            text('accountId'),
            {
              status: Number(command.status),
              body: command.body as Partial<OpenAIErrorBody>,
              ...(typeof command.headers === 'object' && command.headers !== null
                ? { headers: command.headers as Record<string, string> }
                : {}),
              on: target(),
            },
            typeof command.times === 'number' ? command.times : 1,
          );
          break;
        case 'malformed':
          scenario.malformed(text('accountId'), text('kind') as OpenAIAdsSandboxMalformed, target());
          break;
        case 'restate':
          scenario.restate(text('accountId'), text('date'), Number(command.factor));
          break;
        case 'withholdHours':
          scenario.withholdHours(text('accountId'), text('mode') === 'refuse' ? 'refuse' : 'daily');
          break;
        case 'reset':
          scenario.reset();
          break;
        case 'addAccount':
          addAccount(command.account as OpenAIAdsSandboxAccount);
          break;
        case 'issueKey':
          return send(res, 200, JSON.stringify({ key: issueKey({ accountId: text('accountId') }) }));
        default:
          return send(
            res,
            400,
            JSON.stringify({
              error: 'unknown action; one of throttle, revokeKey, fail, malformed, restate, withholdHours, reset, addAccount, issueKey',
            }),
          );
      }
    } catch (error) {
      return send(res, 400, JSON.stringify({ error: (error as Error).message }));
    }
    send(res, 200, '{"ok":true}');
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) return void res.destroy();
      sendError(
        res,
        error instanceof ApiFailure ? error : new ApiFailure(500, { message: 'The server had an error while processing your request.' }),
      );
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, o.host ?? '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
    accounts: () =>
      [...accounts.values()].map(({ id, name, currency_code, timezone, status, adGroups }) => ({
        id,
        name,
        currency_code,
        timezone,
        status,
        adGroups: adGroups.map((g) => ({ ...g })),
      })),
    hourlySpend,
    addAccount,
    issueKey,
    scenario,
    requests,
  };
}
