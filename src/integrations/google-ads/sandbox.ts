// A sandbox Google Ads on loopback: the OAuth 2.0 consent page and token endpoint, and the Google
// Ads API calls hubops makes (customers:listAccessibleCustomers, GoogleAdsService.SearchStream on
// `customer`, `customer_client`, and hourly spend from `ad_group` and `campaign`, filtered by
// campaign.advertising_channel_type), in Google's documented REST wire
// format (./wire.ts): a stream is ONE JSON array of batches of up to 10,000 rows, int64 values are
// strings, errors are google.rpc.Status with a GoogleAdsFailure in their details, as a whole answer
// or as an element at the end of a stream. Its GAQL parser is strict: a field, resource or clause
// it does not know is refused with INVALID_ARGUMENT / queryError, as Google would.
//
// One manager account reaches a client account that the login cannot reach directly: reading it
// needs login-customer-id = the manager, anything else is PERMISSION_DENIED. Ordinary customers
// have a Performance Max campaign (no ad groups) besides their Search ad groups. Spend is generated,
// deterministic per seed, in each account's own local hours (a spring-forward day has 23), in
// micros with sub-cent parts. A scenario control (in JS, and POST /__sandbox/scenario) throttles a
// customer (also inside a stream after some batches), expires or revokes a refresh token, denies a
// permission, fails the next calls with any status, answers something hostile, restates a day or
// leaves the refresh token out of a later consent. Tests compute expectations from its ground
// truth (`hourlySpend`). It serves ~100k rows/s: a row is one hash and one string template.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { GOOGLE_ADS_API_VERSION } from '../../policy.ts';
import {
  CAMPAIGN_LEVEL_CHANNEL_TYPES,
  campaignAdSetId,
  googleAdsFailureType,
  RPC_HTTP_STATUS,
  type GoogleStatusJson,
  type RpcStatus,
} from './wire.ts';
import { ALL_HOURS, dateOf, dayNumber, hashText, hoursOf, isDate, localParts, mix } from '../sandbox-kit.ts';

export interface SandboxAdGroup {
  id: string;
  name: string;
  campaignId: string;
  campaignName: string;
}

/**
 * A campaign without ad groups of its own: Performance Max (asset groups, no ad group), or Smart
 * (one automatic ad group, whose rows `ad_group` serves too unless the query leaves Smart out).
 */
export interface SandboxCampaign {
  id: string;
  name: string;
  channelType: 'PERFORMANCE_MAX' | 'SMART';
}

export interface SandboxCustomer {
  /** Ten digits. */
  id: string;
  name: string;
  currency: string;
  timeZone: string;
  manager: boolean;
  /** CustomerStatus: only ENABLED customers can be read (others answer CUSTOMER_NOT_ENABLED). */
  status: 'ENABLED' | 'CANCELED' | 'SUSPENDED' | 'CLOSED';
  /** A manager's direct client accounts (they may be managers with clients of their own). */
  clients: string[];
  /** Whether a default login reaches it directly (listAccessibleCustomers); false: only through its manager. */
  direct: boolean;
  /** Ad groups of Search campaigns (advertising_channel_type SEARCH). */
  adGroups: SandboxAdGroup[];
  campaigns: SandboxCampaign[];
}

export type SandboxCustomerInput = Partial<SandboxCustomer> & { id: string /** Adds it to this manager's clients. */; managerId?: string };

export interface SandboxSpendRow {
  date: string;
  hour: number;
  campaignId: string;
  /** The ad group's id (an ad set, in the sync engine's words); a campaign read at campaign level: `campaign:<id>` (wire.ts). */
  adSetId: string;
  spendMicros: bigint;
}

/** A Google Ads error to answer with: a status, and the GoogleAdsFailure entry inside it. */
export interface SandboxError {
  status: RpcStatus;
  /** Google's words for a person (the GoogleAdsError's message). */
  message?: string;
  /** `{ authorizationError: 'USER_PERMISSION_DENIED' }`; a family matching the status when left out. */
  errorCode?: Record<string, string>;
  /** QuotaErrorDetails.retryDelay, for a quota error. */
  retryDelayMs?: number;
}

const MALFORMED = ['html', 'wrong_types', 'missing_fields', 'truncated', 'redirect', 'huge', 'slow', 'not_a_stream', 'bad_error'] as const;
type SandboxMalformed = (typeof MALFORMED)[number];

export interface GoogleAdsSandbox {
  /** Serves the consent page (/o/oauth2/v2/auth), the token endpoint (/token) and the API (/v26/…): accounts URL, OAuth URL and Ads URL at once. */
  url: string;
  clientId: string;
  clientSecret: string;
  close(): Promise<void>;
  customers(): SandboxCustomer[];
  /** The spend the sandbox serves for a customer (account-local date and hour), restatements, zero-cost rows and today's partial hour included. */
  hourlySpend(customerId: string, range?: { since: string; until: string }): SandboxSpendRow[];
  /**
   * A refresh token of a login that reaches `customers` and `managers` directly (default: every
   * customer with `direct`, also those added later).
   */
  issueRefreshToken(o?: { customers?: string[]; managers?: string[] }): string;
  addCustomer(c: SandboxCustomerInput): void;
  scenario: {
    /** SearchStream on the customer answers RESOURCE_EXHAUSTED (quotaError, retryDelay = the time left) until `ms` from now; after `afterBatches` batches of rows when set. */
    throttle(customerId: string, ms: number, o?: { afterBatches?: number }): void;
    /** The refresh token answers invalid_grant "Token has been expired or revoked." from now on (its access tokens live on). */
    expireRefreshToken(token: string): void;
    /** As expired, and every access token it gave answers UNAUTHENTICATED. */
    revokeRefreshToken(token: string): void;
    /** Every access token issued so far answers UNAUTHENTICATED (OAUTH_TOKEN_EXPIRED): the client must refresh. */
    expireAccessTokens(): void;
    /** Every call on the customer answers PERMISSION_DENIED (USER_PERMISSION_DENIED). */
    denyPermission(customerId: string): void;
    /**
     * The next `times` (default 1) calls on the customer ('accessible' for listAccessibleCustomers) answer this error, after
     * `afterBatches` batches when set; with `resource`, only SearchStream calls whose query is FROM that resource.
     */
    fail(key: string, error: SandboxError, o?: { times?: number; afterBatches?: number; resource?: string }): void;
    /** The next `times` (default 1) token requests answer this OAuth error. */
    failToken(error: string, description: string, times?: number): void;
    /** The next call on the customer ('accessible' for listAccessibleCustomers) gets a hostile answer. */
    malformed(key: string, kind: SandboxMalformed): void;
    /** Code exchanges leave refresh_token out (as Google does on a consent given before, without prompt=consent). */
    omitRefreshToken(): void;
    /** The customer's spend on that local day becomes `factor` times what it was. */
    restate(customerId: string, date: string, factor: number): void;
    /** Back to normal: no throttles, failures, denials, restatements; tokens valid again. */
    reset(): void;
  };
  /** What was asked, oldest first; the last 100,000. */
  requests: {
    method: string;
    path: string;
    /** The headers that decide access, as sent (null: absent). */
    loginCustomerId: string | null;
    developerToken: string | null;
    /** The GAQL of a SearchStream, the grant_type of a token request. */
    query: string | null;
    grantType: string | null;
  }[];
}

/** The sandbox's customers when none are given; each ordinary one also has a Performance Max campaign (the default). */
const GOOGLE_ADS_SANDBOX_CUSTOMERS: SandboxCustomerInput[] = [
  { id: '1234567890', name: 'Brewline Search (sandbox)', currency: 'USD', timeZone: 'America/New_York' },
  { id: '2345678901', name: 'Brewline Europe (sandbox)', currency: 'EUR', timeZone: 'Europe/Berlin' },
  {
    id: '9876543210',
    name: 'Brewline Agency (sandbox manager)',
    currency: 'USD',
    timeZone: 'America/Los_Angeles',
    manager: true,
    clients: ['3456789012'],
  },
  { id: '3456789012', name: 'Brewline Sydney (sandbox, via manager)', currency: 'AUD', timeZone: 'Australia/Sydney', direct: false },
];

const CLIENT_ID = '123456789012-sandbox.apps.googleusercontent.com';
const CLIENT_SECRET = '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6789';
const ADWORDS_SCOPE = 'https://www.googleapis.com/auth/adwords';
const ACCESS_TOKEN_S = 3599;
const CODE_TTL_MS = 10 * 60_000;
/** Rows per SearchStream batch: Google's streams carry up to 10,000 rows per response message. */
const DEFAULT_BATCH_SIZE = 10_000;
/** Rows written to the socket at a time. */
const PIECE_ROWS = 500;
const MAX_REQUESTS_KEPT = 100_000;
/** Share of an ad group's spend by account-local hour of day, in percent: quiet nights, busy evenings. */
const HOUR_WEIGHT = [30, 20, 15, 12, 12, 20, 40, 70, 90, 100, 105, 110, 115, 110, 105, 105, 110, 120, 135, 150, 145, 120, 80, 50];

/** The GAQL the sandbox knows: each resource's selectable fields (Google Ads Fields reference, the ones we use and a few more). */
const RESOURCE_FIELDS: Record<string, Set<string>> = {
  customer: new Set([
    'customer.resource_name',
    'customer.id',
    'customer.descriptive_name',
    'customer.currency_code',
    'customer.time_zone',
    'customer.manager',
    'customer.status',
    'customer.test_account',
  ]),
  customer_client: new Set([
    'customer_client.resource_name',
    'customer_client.client_customer',
    'customer_client.id',
    'customer_client.descriptive_name',
    'customer_client.currency_code',
    'customer_client.time_zone',
    'customer_client.manager',
    'customer_client.status',
    'customer_client.level',
    'customer_client.hidden',
    'customer_client.test_account',
  ]),
  ad_group: new Set([
    'segments.date',
    'segments.hour',
    'campaign.resource_name',
    'campaign.id',
    'campaign.name',
    'campaign.advertising_channel_type',
    'ad_group.resource_name',
    'ad_group.id',
    'ad_group.name',
    'metrics.cost_micros',
  ]),
  campaign: new Set([
    'segments.date',
    'segments.hour',
    'campaign.resource_name',
    'campaign.id',
    'campaign.name',
    'campaign.advertising_channel_type',
    'metrics.cost_micros',
  ]),
};
/** AdvertisingChannelTypeEnum (v26). */
const CHANNEL_TYPES = new Set([
  'UNSPECIFIED',
  'UNKNOWN',
  'SEARCH',
  'DISPLAY',
  'SHOPPING',
  'HOTEL',
  'VIDEO',
  'MULTI_CHANNEL',
  'LOCAL',
  'SMART',
  'PERFORMANCE_MAX',
  'LOCAL_SERVICES',
  'TRAVEL',
  'DEMAND_GEN',
]);
/** The sandbox's metric resources: served with one segments.date BETWEEN and at most one filter on the channel type. */
const METRIC_RESOURCES = new Set(['ad_group', 'campaign']);

/** The top-level message Google gives each status (the GoogleAdsFailure inside says more). */
const STATUS_MESSAGES: Partial<Record<RpcStatus, string>> = {
  INVALID_ARGUMENT: 'Request contains an invalid argument.',
  UNAUTHENTICATED:
    'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.',
  PERMISSION_DENIED: 'The caller does not have permission',
  RESOURCE_EXHAUSTED: 'Resource has been exhausted (e.g. check quota).',
  INTERNAL: 'Internal error encountered.',
  UNAVAILABLE: 'The service is currently unavailable.',
  DEADLINE_EXCEEDED: 'The request deadline was exceeded.',
};
/** The GoogleAdsFailure error family a status's error comes from, when a scenario names none. */
const FAMILY: Partial<Record<RpcStatus, [string, string]>> = {
  INVALID_ARGUMENT: ['requestError', 'UNKNOWN'],
  UNAUTHENTICATED: ['authenticationError', 'AUTHENTICATION_ERROR'],
  PERMISSION_DENIED: ['authorizationError', 'USER_PERMISSION_DENIED'],
  RESOURCE_EXHAUSTED: ['quotaError', 'RESOURCE_EXHAUSTED'],
  INTERNAL: ['internalError', 'INTERNAL_ERROR'],
  UNAVAILABLE: ['internalError', 'TRANSIENT_ERROR'],
  DEADLINE_EXCEEDED: ['internalError', 'DEADLINE_EXCEEDED'],
};

// --- State

/** What spends, hour by hour: an ad group of a Search campaign, a Performance Max campaign (no ad group), a Smart campaign's one ad group. */
interface SpendUnit {
  campaignId: string;
  campaignName: string;
  channelType: string;
  adGroup: { id: string; name: string } | null;
}

interface Customer extends SandboxCustomer {
  units: SpendUnit[];
  /** Per unit: its hash key and base cents per hour. */
  keys: number[];
  bases: number[];
  window?: { minute: number; value: { first: number; today: number; hour: number; minute: number } };
}

interface Grant {
  /** The customers reached directly; null: every customer with `direct`. */
  customers: Set<string> | null;
  expired: boolean;
  revoked: boolean;
}

/** An error answer: a google.rpc.Status (Ads API) or an RFC 6749 error (token endpoint). */
class SandboxFailure extends Error {
  readonly httpStatus: number;
  readonly body: unknown;
  constructor(httpStatus: number, body: unknown) {
    super(String(httpStatus));
    this.httpStatus = httpStatus;
    this.body = body;
  }
}

/** A parsed GAQL query: what the sandbox serves. */
interface Query {
  resource: string;
  fields: string[];
  /** BETWEEN's value is its two ends; IN and NOT IN's the list. */
  conditions: { field: string; op: string; value: string | number | boolean | string[] }[];
  limit: number | undefined;
}

export async function startGoogleAdsSandbox(
  o: {
    host?: '127.0.0.1';
    port?: number;
    now?: () => Date;
    /** Same seed, same spend (default 1). */
    seed?: number;
    /** The customers to start with; missing fields get defaults (USD, America/New_York, three ad groups in two campaigns, direct). */
    customers?: SandboxCustomerInput[];
    /** Or this many generated customers with this many ad groups each (zones and currencies alternate), e.g. for the benchmark. */
    generate?: { customers: number; adGroupsPerCustomer: number };
    /** Account-local days before today that have spend (default 120). */
    historyDays?: number;
    /** Rows per stream batch (default Google's 10,000). */
    batchSize?: number;
  } = {},
): Promise<GoogleAdsSandbox> {
  const now = () => (o.now ? o.now().getTime() : Date.now());
  const seed = o.seed ?? 1;
  const historyDays = o.historyDays ?? 120;
  const batchSize = Math.max(1, o.batchSize ?? DEFAULT_BATCH_SIZE);
  const v = GOOGLE_ADS_API_VERSION;
  const failureType = googleAdsFailureType(v);

  const customers = new Map<string, Customer>();
  const grants = new Map<string, Grant>();
  const refreshTokens = new Map<string, string>();
  const accessTokens = new Map<string, { grant: string; refreshToken: string | null; expiresAt: number; expired: boolean }>();
  const codes = new Map<string, { redirectUri: string; expiresAt: number; refreshToken: boolean }>();
  let consentedBefore = false;
  let omitRefreshToken = false;
  const throttles = new Map<string, { until: number; afterBatches: number }>();
  const failures = new Map<string, { error: SandboxError; times: number; afterBatches: number; resource: string | undefined }[]>();
  const tokenFailures: { error: string; description: string; times: number }[] = [];
  const denied = new Set<string>();
  const malformed = new Map<string, SandboxMalformed[]>();
  const restatements = new Map<string, number>();
  const requests: GoogleAdsSandbox['requests'] = [];

  function addCustomer(c: SandboxCustomerInput): void {
    if (!/^\d{10}$/.test(c.id)) throw new Error(`a sandbox customer id is ten digits, not ${c.id}`);
    if (c.timeZone !== undefined) new Intl.DateTimeFormat('en-US', { timeZone: c.timeZone });
    const adGroups =
      c.adGroups ??
      (c.manager
        ? []
        : [0, 1, 2].map((i) => ({
            id: `${c.id.slice(0, 6)}${String(i + 1).padStart(4, '0')}`,
            name: `Ad group ${i + 1}`,
            campaignId: `${c.id.slice(0, 6)}9${i < 2 ? 1 : 2}`,
            campaignName: `Campaign ${i < 2 ? 'A' : 'B'}`,
          })));
    const campaigns =
      c.campaigns ??
      (c.manager || c.adGroups !== undefined
        ? []
        : [{ id: `${c.id.slice(0, 6)}93`, name: 'Performance Max', channelType: 'PERFORMANCE_MAX' as const }]);
    const units: SpendUnit[] = [
      ...adGroups.map((g) => ({
        campaignId: g.campaignId,
        campaignName: g.campaignName,
        channelType: 'SEARCH',
        adGroup: { id: g.id, name: g.name },
      })),
      ...campaigns.map((k) => ({
        campaignId: k.id,
        campaignName: k.name,
        channelType: k.channelType,
        adGroup: k.channelType === 'SMART' ? { id: `${k.id}0`, name: 'Smart campaign ad group' } : null,
      })),
    ];
    // Ad groups keep the keys they always had: the same seed serves the same figures as before.
    const keys = units.map((u) =>
      mix(seed ^ hashText(u.channelType === 'SEARCH' ? `${c.id}/${u.adGroup!.id}` : `${c.id}/campaign/${u.campaignId}`)),
    );
    customers.set(c.id, {
      id: c.id,
      name: c.name ?? `Sandbox customer ${c.id}`,
      currency: c.currency ?? 'USD',
      timeZone: c.timeZone ?? 'America/New_York',
      manager: c.manager ?? false,
      status: c.status ?? 'ENABLED',
      clients: [...(c.clients ?? [])],
      direct: c.direct ?? true,
      adGroups,
      campaigns: campaigns.map((k) => ({ ...k })),
      units,
      keys,
      bases: keys.map((k) => 50 + (k % 1950)),
    });
    if (c.managerId !== undefined) {
      const manager = customers.get(c.managerId);
      if (!manager?.manager) throw new Error(`${c.managerId} is no sandbox manager account`);
      if (!manager.clients.includes(c.id)) manager.clients.push(c.id);
    }
  }

  if (o.generate) {
    for (let n = 0; n < o.generate.customers; n++) {
      const id = String(2_000_000_001 + n);
      addCustomer({
        id,
        name: `Generated customer ${n + 1}`,
        currency: n % 2 === 0 ? 'USD' : 'EUR',
        timeZone: n % 2 === 0 ? 'America/Los_Angeles' : 'Europe/Berlin',
        adGroups: Array.from({ length: o.generate.adGroupsPerCustomer }, (_, i) => ({
          id: `${id}${String(i + 1).padStart(4, '0')}`,
          name: `Ad group ${i + 1}`,
          campaignId: `${id}9${Math.floor(i / 10)}`,
          campaignName: `Campaign ${Math.floor(i / 10) + 1}`,
        })),
      });
    }
  }
  for (const c of o.customers ?? (o.generate ? [] : GOOGLE_ADS_SANDBOX_CUSTOMERS)) addCustomer(c);

  // --- Spend

  /** Micros a unit spent in a local hour; undefined for about one hour in twelve (no impression: Google has no row). */
  function micros(customer: Customer, adGroup: number, day: number, hour: number): number | undefined {
    const r = mix(customer.keys[adGroup]! ^ mix(day * 24 + hour));
    if (r % 12 === 0) return undefined;
    // Impressions without a click: a row whose cost is zero.
    if (r % 12 === 1) return 0;
    const cents = Math.floor((customer.bases[adGroup]! * HOUR_WEIGHT[hour]! * (500 + ((r >>> 8) % 1000))) / 100_000);
    return cents * 10_000 + ((r >>> 18) % 10_000);
  }

  /** The local days that have spend, today partly: [first, today], and today's hour and minute. */
  function window(customer: Customer) {
    const minute = Math.floor(now() / 60_000);
    if (customer.window?.minute !== minute) {
      const local = localParts(customer.timeZone, minute * 60_000);
      customer.window = { minute, value: { first: local.day - historyDays, today: local.day, hour: local.hour, minute: local.minute } };
    }
    return customer.window.value;
  }

  /** Calls `emit` for each row of [fromDay, toDay] from position `start` on, until it returns false. */
  function eachRow(
    customer: Customer,
    fromDay: number,
    toDay: number,
    start: number,
    emit: (position: number, day: number, unit: number, hour: number, micros: number) => boolean,
  ): void {
    const w = window(customer);
    const first = Math.max(fromDay, w.first);
    const last = Math.min(toDay, w.today);
    const n = customer.units.length;
    if (n === 0) return;
    for (let day = first + Math.max(0, Math.floor(start / (24 * n)) - (first - fromDay)); day <= last; day++) {
      const factor = restatements.get(`${customer.id}|${dateOf(day)}`);
      const hours = hoursOf(customer.timeZone, day);
      const dayBase = (day - fromDay) * n * 24;
      for (let g = 0; g < n; g++) {
        const base = dayBase + g * 24;
        if (base + 23 < start) continue;
        for (const hour of hours) {
          const position = base + hour;
          if (position < start) continue;
          if (day === w.today && hour > w.hour) break;
          let m = micros(customer, g, day, hour);
          if (m === undefined) continue;
          if (factor !== undefined) m = Math.round(m * factor);
          if (day === w.today && hour === w.hour) m = Math.floor((m * w.minute) / 60);
          if (!emit(position, day, g, hour, m)) return;
        }
      }
    }
  }

  function hourlySpend(customerId: string, range?: { since: string; until: string }): SandboxSpendRow[] {
    const customer = customers.get(customerId);
    if (!customer) throw new Error(`no sandbox customer ${customerId}`);
    const rows: SandboxSpendRow[] = [];
    // Campaign-level types: one row per campaign and hour, whatever ad group a Smart campaign has.
    const campaignLevel = new Map<string, SandboxSpendRow>();
    const from = range ? dayNumber(range.since) : window(customer).first;
    eachRow(customer, from, range ? dayNumber(range.until) : 1e9, 0, (_, day, g, hour, m) => {
      const unit = customer.units[g]!;
      const date = dateOf(day);
      if (!CAMPAIGN_LEVEL_CHANNEL_TYPES.includes(unit.channelType)) {
        rows.push({ date, hour, campaignId: unit.campaignId, adSetId: unit.adGroup!.id, spendMicros: BigInt(m) });
        return true;
      }
      const key = `${date}|${hour}|${unit.campaignId}`;
      const row = campaignLevel.get(key);
      if (row) row.spendMicros += BigInt(m);
      else
        campaignLevel.set(key, {
          date,
          hour,
          campaignId: unit.campaignId,
          adSetId: campaignAdSetId(unit.campaignId),
          spendMicros: BigInt(m),
        });
      return true;
    });
    return [...rows, ...campaignLevel.values()];
  }

  // --- HTTP

  function send(res: http.ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
    const bytes = Buffer.from(body);
    res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', 'content-length': bytes.length, ...headers });
    res.end(bytes);
  }

  const requestId = () => randomBytes(16).toString('base64url').slice(0, 22);

  /** google.rpc.Status with one GoogleAdsError in a GoogleAdsFailure ("Understand API errors"). */
  function statusJson(e: SandboxError): { error: GoogleStatusJson } {
    const [family, value] = e.errorCode ? Object.entries(e.errorCode)[0]! : (FAMILY[e.status] ?? ['requestError', 'UNKNOWN']);
    const entry: Record<string, unknown> = {
      errorCode: { [family]: value },
      message: e.message ?? STATUS_MESSAGES[e.status] ?? e.status,
    };
    if (e.retryDelayMs !== undefined)
      entry.details = {
        quotaErrorDetails: { rateScope: 'ACCOUNT', rateName: 'Requests per account', retryDelay: `${Math.ceil(e.retryDelayMs / 1000)}s` },
      };
    return {
      error: {
        code: RPC_HTTP_STATUS[e.status],
        message: STATUS_MESSAGES[e.status] ?? e.message ?? e.status,
        status: e.status,
        details: [{ '@type': failureType, errors: [entry as never], requestId: requestId() }],
      },
    };
  }

  const adsFailure = (e: SandboxError) => new SandboxFailure(RPC_HTTP_STATUS[e.status], statusJson(e));
  const queryError = (value: string, message: string) =>
    adsFailure({ status: 'INVALID_ARGUMENT', errorCode: { queryError: value }, message });
  const permissionDenied = () =>
    adsFailure({
      status: 'PERMISSION_DENIED',
      errorCode: { authorizationError: 'USER_PERMISSION_DENIED' },
      message:
        "User doesn't have permission to access customer. Note: If you're accessing a client customer, the manager's customer id must be set in the 'login-customer-id' header. See https://developers.google.com/google-ads/api/docs/concepts/call-structure#cid",
    });

  async function readBody(req: http.IncomingMessage): Promise<string> {
    let text = '';
    for await (const chunk of req) {
      text += chunk;
      if (text.length > 65_536) throw queryError('QUERY_ERROR', 'The request body is too large.');
    }
    return text;
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://sandbox');
    const method = req.method ?? 'GET';
    const header = (name: string) => (typeof req.headers[name] === 'string' ? (req.headers[name] as string) : null);
    const entry: GoogleAdsSandbox['requests'][number] = {
      method,
      path: url.pathname,
      loginCustomerId: header('login-customer-id'),
      developerToken: header('developer-token'),
      query: null,
      grantType: null,
    };
    requests.push(entry);
    if (requests.length > MAX_REQUESTS_KEPT) requests.splice(0, MAX_REQUESTS_KEPT / 2);

    if (url.pathname === '/__sandbox/scenario' && method === 'POST') return scenarioRequest(req, res);
    if (url.pathname === '/o/oauth2/v2/auth') {
      const params = method === 'POST' ? new URLSearchParams(await readBody(req)) : url.searchParams;
      return consent(method, params, res);
    }
    if (url.pathname === '/token' && method === 'POST') {
      const params = new URLSearchParams(await readBody(req));
      entry.grantType = params.get('grant_type');
      return token(params, res);
    }

    const prefix = `/${v}/`;
    if (!url.pathname.startsWith(prefix))
      throw adsFailure({
        status: 'NOT_FOUND',
        errorCode: { requestError: 'UNKNOWN' },
        message: `The sandbox serves Google Ads API ${v} only, not ${url.pathname.slice(0, 40)}`,
      });
    const route = url.pathname.slice(prefix.length);
    const grant = authenticate(req);

    if (route === 'customers:listAccessibleCustomers' && method === 'GET') {
      if (await scenarioAnswer(res, 'accessible', undefined)) return;
      const names = [...customers.values()].filter((c) => reaches(grant, c.id)).map((c) => `customers/${c.id}`);
      return send(res, 200, JSON.stringify(names.length > 0 ? { resourceNames: names } : {}));
    }
    const match = /^customers\/([^/]+)\/googleAds:searchStream$/.exec(route);
    if (!match || method !== 'POST')
      throw adsFailure({
        status: 'NOT_FOUND',
        errorCode: { requestError: 'UNKNOWN' },
        message: `The sandbox does not serve ${method.slice(0, 8)} ${url.pathname.slice(0, 100)}`,
      });
    const customerId = match[1]!;
    if (!/^\d{10}$/.test(customerId))
      throw adsFailure({ status: 'INVALID_ARGUMENT', errorCode: { requestError: 'INVALID_CUSTOMER_ID' }, message: 'Invalid customer ID.' });
    const login = entry.loginCustomerId;
    if (login !== null && !/^\d{10}$/.test(login))
      throw adsFailure({
        status: 'INVALID_ARGUMENT',
        errorCode: { requestError: 'INVALID_CUSTOMER_ID' },
        message: "Invalid login-customer-id: it is the manager's ten digits without dashes.",
      });
    // "Call structure › login-customer-id": the login reaches the operating customer directly, or
    // the manager named in login-customer-id, which the customer must be under.
    const customer = customers.get(customerId);
    if (!customer || denied.has(customerId)) throw permissionDenied();
    if (login === null ? !reaches(grant, customerId) : !reaches(grant, login) || !(login === customerId || isBelow(login, customerId)))
      throw permissionDenied();
    if (customer.status !== 'ENABLED')
      throw adsFailure({
        status: 'PERMISSION_DENIED',
        errorCode: { authorizationError: 'CUSTOMER_NOT_ENABLED' },
        message: "The customer account can't be accessed because it is not yet enabled or has been deactivated.",
      });
    if ((req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase() !== 'application/json')
      throw queryError('QUERY_ERROR', 'The request body must be JSON (content-type: application/json).');
    let body: unknown;
    try {
      body = JSON.parse(await readBody(req));
    } catch {
      throw queryError('QUERY_ERROR', 'Invalid JSON payload received.');
    }
    const text = typeof body === 'object' && body !== null ? (body as { query?: unknown }).query : undefined;
    if (typeof text !== 'string' || text.trim() === '') throw queryError('EXPECTED_SELECT', 'A query is required.');
    entry.query = text;
    const query = parseQuery(text);
    if (await scenarioAnswer(res, customerId, { customer, query })) return;
    return stream(res, customer, query, 0, undefined);
  }

  // --- Access

  function authenticate(req: http.IncomingMessage): string {
    const bearer = /^Bearer (\S+)$/i.exec(req.headers.authorization ?? '');
    const info = bearer ? accessTokens.get(bearer[1]!) : undefined;
    const unauthenticated = (value: string) =>
      adsFailure({ status: 'UNAUTHENTICATED', errorCode: { authenticationError: value }, message: STATUS_MESSAGES.UNAUTHENTICATED! });
    if (!bearer) throw unauthenticated('NOT_ADS_USER');
    if (!info) throw unauthenticated('OAUTH_TOKEN_INVALID');
    if (grants.get(info.grant)!.revoked) throw unauthenticated('OAUTH_TOKEN_REVOKED');
    if (info.expired || info.expiresAt <= now()) throw unauthenticated('OAUTH_TOKEN_EXPIRED');
    return info.grant;
  }

  /** Whether the grant's login reaches the customer directly. */
  function reaches(grantId: string, customerId: string): boolean {
    const grant = grants.get(grantId)!;
    const customer = customers.get(customerId);
    return customer !== undefined && (grant.customers === null ? customer.direct : grant.customers.has(customerId));
  }

  /** Whether `id` is a client of `managerId`, at any depth. */
  function isBelow(managerId: string, id: string, seen = new Set<string>()): boolean {
    const manager = customers.get(managerId);
    if (!manager?.manager || seen.has(managerId)) return false;
    seen.add(managerId);
    return manager.clients.some((c) => c === id || isBelow(c, id, seen));
  }

  // --- GAQL

  /** SELECT f, … FROM resource [WHERE cond AND …] [LIMIT n], as far as the sandbox serves it. */
  function parseQuery(text: string): Query {
    const m = /^\s*SELECT\s+(.+?)\s+FROM\s+([a-z_]+)(?:\s+WHERE\s+(.+?))?(?:\s+LIMIT\s+(\d+))?\s*$/is.exec(text);
    if (!m) {
      if (!/^\s*SELECT\s/i.test(text)) throw queryError('EXPECTED_SELECT', 'Error in query: expected SELECT.');
      if (!/\sFROM\s/i.test(text)) throw queryError('EXPECTED_FROM', 'Error in query: expected FROM.');
      throw queryError('UNEXPECTED_INPUT', `Error in query: unexpected input ${JSON.stringify(text.slice(0, 80))}.`);
    }
    const resource = m[2]!;
    const allowed = RESOURCE_FIELDS[resource];
    if (!allowed)
      throw queryError('BAD_RESOURCE_TYPE_IN_FROM_CLAUSE', `Error in FROM clause: invalid resource name '${resource.slice(0, 40)}'.`);
    const fields = m[1]!.split(',').map((f) => f.trim());
    for (const field of fields) {
      if (!/^[a-z_]+\.[a-z_.]+$/.test(field))
        throw queryError('BAD_FIELD_NAME', `Error in SELECT clause: invalid field name '${field.slice(0, 60)}'.`);
      if (!allowed.has(field))
        throw queryError(
          'PROHIBITED_FIELD_IN_SELECT_CLAUSE',
          `Error in SELECT clause: the sandbox does not serve '${field.slice(0, 60)}' from resource '${resource}'.`,
        );
    }
    if (new Set(fields).size !== fields.length)
      throw queryError('DUPLICATE_FIELD_IN_SELECT_CLAUSE', 'Error in SELECT clause: a field is selected twice.');
    const conditions: Query['conditions'] = [];
    if (m[3] !== undefined) {
      // Split on AND outside quotes; BETWEEN's own AND is joined back.
      const parts = m[3].split(/\s+AND\s+(?=(?:[^']*'[^']*')*[^']*$)/i);
      for (let i = 0; i < parts.length; i++) {
        let part = parts[i]!.trim();
        if (/\sBETWEEN\s/i.test(part) && i + 1 < parts.length) part = `${part} AND ${parts[++i]!.trim()}`;
        const between = /^([a-z_.]+)\s+BETWEEN\s+'([^']*)'\s+AND\s+'([^']*)'$/i.exec(part);
        const compare = /^([a-z_.]+)\s*(=|!=|<=|>=|<|>)\s*('([^']*)'|-?\d+|TRUE|FALSE)$/i.exec(part);
        // IN / NOT IN a StringList or a LiteralList (GAQL grammar).
        const list = /^([a-z_.]+)\s+(IN|NOT\s+IN)\s*\(\s*((?:'[^']*'|[A-Za-z0-9_]+)(?:\s*,\s*(?:'[^']*'|[A-Za-z0-9_]+))*)\s*\)$/i.exec(
          part,
        );
        const field = (between ?? compare ?? list)?.[1];
        if (!field)
          throw queryError(
            'UNEXPECTED_INPUT',
            `Error in WHERE clause: the sandbox does not understand ${JSON.stringify(part.slice(0, 80))}.`,
          );
        if (!allowed.has(field)) throw queryError('BAD_FIELD_NAME', `Error in WHERE clause: invalid field name '${field.slice(0, 60)}'.`);
        if (between) {
          conditions.push({ field, op: 'BETWEEN', value: [between[2]!, between[3]!] });
        } else if (list) {
          const values = list[3]!.split(',').map((v) => v.trim().replace(/^'(.*)'$/, '$1'));
          conditions.push({ field, op: list[2]!.toUpperCase().replace(/\s+/, ' '), value: values });
        } else {
          const raw = compare![3]!;
          const value = compare![4] !== undefined ? compare![4] : /^(TRUE|FALSE)$/i.test(raw) ? raw.toUpperCase() === 'TRUE' : Number(raw);
          conditions.push({ field, op: compare![2]!, value });
        }
      }
    }
    const query: Query = { resource, fields, conditions, limit: m[4] === undefined ? undefined : Number(m[4]) };
    if (METRIC_RESOURCES.has(resource)) {
      const dates = conditions.filter((c) => c.field === 'segments.date');
      const range = dates[0]?.value;
      if (dates.length !== 1 || dates[0]!.op !== 'BETWEEN' || !Array.isArray(range))
        throw queryError(
          'EXPECTED_FILTERS_ON_DATE_RANGE',
          `Error in WHERE clause: the sandbox serves ${resource} metrics with one segments.date BETWEEN filter only.`,
        );
      if (!isDate(range[0]) || !isDate(range[1]))
        throw queryError('INVALID_VALUE_WITH_BETWEEN_OPERATOR', 'Error in WHERE clause: invalid date.');
      if (range[0] > range[1]) throw queryError('DATE_RANGE_TOO_NARROW', 'Error in WHERE clause: the date range is empty.');
      const types = conditions.filter((c) => c.field === 'campaign.advertising_channel_type');
      if (conditions.length !== 1 + types.length || types.length > 1 || (types[0] && !['=', '!=', 'IN', 'NOT IN'].includes(types[0].op)))
        throw queryError(
          'UNEXPECTED_INPUT',
          `Error in WHERE clause: the sandbox filters ${resource} by segments.date and at most one condition on campaign.advertising_channel_type.`,
        );
      const named = types[0] ? (Array.isArray(types[0].value) ? types[0].value : [String(types[0].value)]) : [];
      const unknown = named.find((t) => !CHANNEL_TYPES.has(t));
      if (unknown !== undefined)
        throw queryError(
          'BAD_ENUM_CONSTANT',
          `Error in WHERE clause: invalid enum value '${unknown.slice(0, 40)}' for campaign.advertising_channel_type.`,
        );
    }
    return query;
  }

  const camel = (field: string) => field.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
  const fieldMask = (q: Query) => q.fields.map(camel).join(',');

  /** The rows a query on `customer` or `customer_client` answers, as JSON texts. */
  function accountRows(customer: Customer, q: Query): string[] {
    const describe = (c: Customer, level: number, asClient: boolean): Record<string, unknown> => ({
      resource_name: asClient ? `customers/${customer.id}/customerClients/${c.id}` : `customers/${c.id}`,
      client_customer: `customers/${c.id}`,
      id: c.id,
      descriptive_name: c.name,
      currency_code: c.currency,
      time_zone: c.timeZone,
      manager: c.manager,
      status: c.status,
      level: String(level),
      hidden: false,
      test_account: false,
    });
    const pick = (values: Record<string, unknown>, prefix: string) => {
      const out: Record<string, unknown> = {};
      // Google adds the resource's resourceName to every row.
      out.resourceName = values.resource_name;
      for (const f of q.fields) out[camel(f.slice(prefix.length + 1))] = values[f.slice(prefix.length + 1)];
      return out;
    };
    if (q.resource === 'customer') return [JSON.stringify({ customer: pick(describe(customer, 0, false), 'customer') })];
    // customer_client: the manager itself (level 0) and every client below it, depth first.
    const found: { c: Customer; level: number }[] = [{ c: customer, level: 0 }];
    const seen = new Set([customer.id]);
    const walk = (c: Customer, level: number) => {
      if (!c.manager) return;
      for (const id of c.clients) {
        const client = customers.get(id);
        if (!client || seen.has(id)) continue;
        seen.add(id);
        found.push({ c: client, level });
        walk(client, level + 1);
      }
    };
    walk(customer, 1);
    return found
      .map(({ c, level }) => describe(c, level, true))
      .filter((values) =>
        q.conditions.every(({ field, op, value }) => {
          const raw = values[field.slice('customer_client.'.length)];
          const actual = field === 'customer_client.level' || field === 'customer_client.id' ? Number(raw) : raw;
          if (Array.isArray(value)) return false;
          switch (op) {
            case '=':
              return actual === value;
            case '!=':
              return actual !== value;
            case '<':
              return (actual as number) < (value as number);
            case '<=':
              return (actual as number) <= (value as number);
            case '>':
              return (actual as number) > (value as number);
            default:
              return (actual as number) >= (value as number);
          }
        }),
      )
      .map((values) => JSON.stringify({ customerClient: pick(values, 'customer_client') }));
  }

  /**
   * Answers a query as a stream: batches of rows written as they are made, each a
   * SearchGoogleAdsStreamResponse (results, fieldMask, requestId). With `stopAfter`, the stream
   * ends after that many batches with the error as its last element (HTTP 200 already sent).
   */
  async function stream(
    res: http.ServerResponse,
    customer: Customer,
    q: Query,
    stopAfter: number,
    error: SandboxError | undefined,
  ): Promise<void> {
    const id = requestId();
    const mask = fieldMask(q);
    res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
    let batches = 0;
    let rowsSent = 0;
    const limit = q.limit ?? Number.POSITIVE_INFINITY;
    // Rows go out in pieces of at most PIECE_ROWS: small strings keep the garbage collector's work
    // young (one 3 MB string per 10,000-row batch halved the rows served per second).
    let inBatch = 0;
    const closing = `],"fieldMask":"${mask}","requestId":"${id}"}`;
    const room = () => Math.min(PIECE_ROWS, batchSize - inBatch, limit - rowsSent);
    /** Rows into the open batch (opened here), never past its end; a full batch is closed. */
    const write = async (rows: string[]) => {
      let text = inBatch === 0 ? `${batches === 0 ? '[' : ','}{"results":[` : ',';
      text += rows.join(',');
      inBatch += rows.length;
      rowsSent += rows.length;
      if (inBatch === batchSize) {
        text += closing;
        batches++;
        inBatch = 0;
      }
      if (!res.write(text)) await new Promise<void>((resolve) => res.once('drain', resolve));
    };
    const stopHere = () => error !== undefined && batches >= stopAfter;
    const writeAll = async (rows: string[]) => {
      for (let i = 0; i < rows.length && !stopHere() && room() > 0; ) {
        const piece = rows.slice(i, i + room());
        await write(piece);
        i += piece.length;
      }
    };
    const finish = () => {
      if (inBatch > 0) {
        res.write(closing);
        batches++;
      }
      if (error !== undefined) res.end(`${batches === 0 ? '[' : ','}${JSON.stringify(statusJson(error))}]`);
      else if (batches === 0) res.end(`[{"fieldMask":"${mask}","requestId":"${id}"}]`);
      else res.end(']');
    };
    if (!METRIC_RESOURCES.has(q.resource)) {
      await writeAll(accountRows(customer, q));
      return finish();
    }
    const [since, until] = q.conditions.find((c) => c.field === 'segments.date')!.value as [string, string];
    const fromDay = dayNumber(since);
    const toDay = dayNumber(until);
    const want = new Set(q.fields);
    const hourly = want.has('segments.hour');
    const daily = want.has('segments.date');
    const byAdGroup = q.resource === 'ad_group';
    const typeFilter = q.conditions.find((c) => c.field === 'campaign.advertising_channel_type');
    const typeOk = (type: string) => {
      if (!typeFilter) return true;
      const listed = Array.isArray(typeFilter.value) ? typeFilter.value.includes(type) : typeFilter.value === type;
      return typeFilter.op === '=' || typeFilter.op === 'IN' ? listed : !listed;
    };
    // What the query serves: `ad_group` the units with an ad group (Performance Max has none), `campaign`
    // every unit summed into its campaign (the campaign's first unit stands for it).
    const served = customer.units.map((u) => typeOk(u.channelType) && (!byAdGroup || u.adGroup !== null));
    const leader = customer.units.map((u, g) => (byAdGroup ? g : customer.units.findIndex((v) => v.campaignId === u.campaignId)));
    const prefixes = customer.units.map((u) => {
      const parts: string[] = [];
      if (
        ['campaign.id', 'campaign.name', 'campaign.resource_name', 'campaign.advertising_channel_type'].some((f) => want.has(f)) ||
        !byAdGroup
      ) {
        const campaign = [`"resourceName":"customers/${customer.id}/campaigns/${u.campaignId}"`];
        if (want.has('campaign.id')) campaign.push(`"id":"${u.campaignId}"`);
        if (want.has('campaign.name')) campaign.push(`"name":${JSON.stringify(u.campaignName)}`);
        if (want.has('campaign.advertising_channel_type')) campaign.push(`"advertisingChannelType":"${u.channelType}"`);
        parts.push(`"campaign":{${campaign.join(',')}}`);
      }
      if (byAdGroup && u.adGroup) {
        const adGroup = [`"resourceName":"customers/${customer.id}/adGroups/${u.adGroup.id}"`];
        if (want.has('ad_group.id')) adGroup.push(`"id":"${u.adGroup.id}"`);
        if (want.has('ad_group.name')) adGroup.push(`"name":${JSON.stringify(u.adGroup.name)}`);
        parts.push(`"adGroup":{${adGroup.join(',')}}`);
      }
      return `{${parts.join(',')}`;
    });
    const withCost = want.has('metrics.cost_micros');
    const row = (g: number, m: number, segments: string) =>
      `${prefixes[g]}${withCost ? `,"metrics":{"costMicros":"${m}"}` : ''}${segments ? `,"segments":{${segments}}` : ''}}`;
    if (hourly && daily && byAdGroup) {
      // The fast path: rows straight from the generator, one batch at a time.
      let endings: string[] = [];
      let endingsDay = Number.NaN;
      for (let start = 0; !stopHere() && room() > 0; ) {
        const rows: string[] = [];
        const most = room();
        let next = -1;
        eachRow(customer, fromDay, toDay, start, (position, day, g, hour, m) => {
          if (rows.length === most) {
            next = position;
            return false;
          }
          if (!served[g]) return true;
          if (day !== endingsDay) {
            endingsDay = day;
            const date = dateOf(day);
            endings = ALL_HOURS.map((h) => `"date":"${date}","hour":${h}`);
          }
          rows.push(row(g, m, endings[hour]!));
          return true;
        });
        if (rows.length > 0) await write(rows);
        if (next < 0) break;
        start = next;
      }
      return finish();
    }
    // Coarser segments or whole campaigns: Google sums the rows into the segments and resource selected.
    const sums = new Map<string, { g: number; m: number; segments: string }>();
    eachRow(customer, fromDay, toDay, 0, (_, day, unit, hour, m) => {
      if (!served[unit]) return true;
      const g = leader[unit]!;
      const segments = [daily ? `"date":"${dateOf(day)}"` : '', hourly ? `"hour":${hour}` : ''].filter(Boolean).join(',');
      const key = `${g}|${segments}`;
      const sum = sums.get(key);
      if (sum) sum.m += m;
      else sums.set(key, { g, m, segments });
      return true;
    });
    await writeAll([...sums.values()].map((sum) => row(sum.g, sum.m, sum.segments)));
    finish();
  }

  // --- Scenarios on a call

  /** Scenario answers for a call on `key` (a customer id, or 'accessible'): true when one was sent. */
  async function scenarioAnswer(
    res: http.ServerResponse,
    key: string,
    search: { customer: Customer; query: Query } | undefined,
  ): Promise<boolean> {
    const throttle = throttles.get(key);
    if (throttle !== undefined && throttle.until > now()) {
      const error: SandboxError = {
        status: 'RESOURCE_EXHAUSTED',
        errorCode: { quotaError: 'RESOURCE_TEMPORARILY_EXHAUSTED' },
        message: 'Too many requests. Retry in 30 seconds.',
        retryDelayMs: throttle.until - now(),
      };
      error.message = `Too many requests. Retry in ${Math.ceil(error.retryDelayMs! / 1000)} seconds.`;
      if (search && throttle.afterBatches > 0) {
        await stream(res, search.customer, search.query, throttle.afterBatches, error);
        return true;
      }
      sendStatus(res, error, search !== undefined);
      return true;
    }
    const queue = failures.get(key);
    if (queue?.length && (queue[0]!.resource === undefined || queue[0]!.resource === search?.query.resource)) {
      const next = queue[0]!;
      if (--next.times <= 0) queue.shift();
      if (search && next.afterBatches > 0) await stream(res, search.customer, search.query, next.afterBatches, next.error);
      else sendStatus(res, next.error, search !== undefined);
      return true;
    }
    const kind = malformed.get(key)?.shift();
    if (kind) {
      sendMalformed(res, kind, search?.customer.id ?? '1234567890');
      return true;
    }
    return false;
  }

  /** An error answer; for SearchStream as REST streams one, an array holding the error. */
  function sendStatus(res: http.ServerResponse, error: SandboxError, asStream: boolean): void {
    const body = statusJson(error);
    send(res, RPC_HTTP_STATUS[error.status], JSON.stringify(asStream ? [body] : body));
  }

  function sendMalformed(res: http.ServerResponse, kind: SandboxMalformed, customerId: string): void {
    switch (kind) {
      case 'html':
        return send(res, 502, '<!DOCTYPE html><html lang=en><title>Error 502 (Server Error)!!1</title><p><b>502.</b> That’s an error.', {
          'content-type': 'text/html; charset=UTF-8',
        });
      case 'wrong_types':
        return send(
          res,
          200,
          JSON.stringify([
            {
              results: [
                {
                  customer: { id: Number(customerId), currencyCode: 840, timeZone: 5, status: 2, manager: 'no' },
                  customerClient: { id: Number(customerId), currencyCode: 840, level: 1 },
                  segments: { date: 20261120, hour: '5' },
                  campaign: { id: 7, name: 7 },
                  adGroup: { id: 8, name: 8 },
                  metrics: { costMicros: 12.5 },
                },
              ],
              resourceNames: [Number(customerId)],
            },
          ]),
        );
      case 'missing_fields':
        return send(
          res,
          200,
          JSON.stringify([{ results: [{ customer: {}, customerClient: {}, segments: { hour: 1 }, metrics: { costMicros: '1' } }] }]),
        );
      case 'truncated':
        return send(res, 200, `[{"results":[{"segments":{"date":"2026-11-20","hour":5},"metrics":{"costMicros":"12`);
      case 'redirect':
        res.writeHead(302, { location: 'https://accounts.google.com/ServiceLogin', 'content-length': 0 });
        return void res.end();
      case 'not_a_stream':
        return send(res, 200, JSON.stringify({ results: [], resourceNames: 'customers/1234567890' }));
      case 'bad_error':
        return send(res, 400, JSON.stringify([{ error: { code: 'four hundred', details: 'none' } }]));
      case 'huge': {
        res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
        const chunk = Buffer.from(`{"results":[{"segments":{"date":"2026-11-20","hour":1},"padding":"${'x'.repeat(65_000)}"}]},`);
        let sent = 0;
        const pump = () => {
          while (!res.destroyed && sent < 256 * 1024 * 1024) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        res.write('[');
        return pump();
      }
      case 'slow': {
        res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
        res.write('[');
        const timer = setTimeout(() => res.end(']'), 120_000);
        timer.unref();
        res.once('close', () => clearTimeout(timer));
        return;
      }
    }
  }

  // --- OAuth 2.0 (Using OAuth 2.0 for Web Server Applications)

  const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

  function consent(method: string, params: URLSearchParams, res: http.ServerResponse): void {
    const page = (status: number, body: string) => {
      const html = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Sign in - Sandbox Google Accounts</title></head><body style="font-family:sans-serif;max-width:32rem;margin:2rem auto;padding:0 1rem">${body}</body></html>`;
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(html) });
      res.end(html);
    };
    if (params.get('client_id') !== CLIENT_ID)
      return page(
        401,
        '<h1>Access blocked: authorization error</h1><p>The OAuth client was not found.</p><p>Error 401: invalid_client</p>',
      );
    const redirectUri = params.get('redirect_uri') ?? '';
    let target: URL;
    try {
      target = new URL(redirectUri);
      if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new Error('not http');
    } catch {
      return page(400, "<h1>Access blocked: This app's request is invalid</h1><p>Error 400: redirect_uri_mismatch</p>");
    }
    if (params.get('response_type') !== 'code')
      return page(400, '<h1>Access blocked: authorization error</h1><p>Error 400: invalid_request (response_type must be code)</p>');
    const scope = params.get('scope') ?? '';
    if (!scope.split(' ').includes(ADWORDS_SCOPE))
      return page(400, `<h1>Access blocked: authorization error</h1><p>Error 400: invalid_scope (the sandbox grants ${ADWORDS_SCOPE})</p>`);
    const state = params.get('state') ?? '';
    const accessType = params.get('access_type') ?? 'online';
    const prompt = params.get('prompt') ?? '';
    if (method === 'GET') {
      const hidden = (name: string, value: string) => `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`;
      return page(
        200,
        `<h1>Sandbox Google</h1><p>The app wants to <strong>see, edit, create and delete your Google Ads accounts and data</strong> (${escapeHtml(scope)}).</p>
<form method="post">${hidden('client_id', CLIENT_ID)}${hidden('redirect_uri', redirectUri)}${hidden('response_type', 'code')}${hidden('scope', scope)}${hidden('access_type', accessType)}${hidden('prompt', prompt)}${hidden('state', state)}
<button type="submit" name="decision" value="allow">Continue</button> <button type="submit" name="decision" value="deny">Cancel</button></form>`,
      );
    }
    if (params.get('decision') === 'allow') {
      const code = `4/0sandbox${randomBytes(24).toString('base64url')}`;
      // A refresh token comes with offline access, at the first consent or when prompt=consent asks again.
      const refreshToken = accessType === 'offline' && (!consentedBefore || prompt.split(' ').includes('consent'));
      consentedBefore = true;
      codes.set(code, { redirectUri, expiresAt: now() + CODE_TTL_MS, refreshToken });
      target.searchParams.set('code', code);
      target.searchParams.set('scope', scope);
    } else {
      target.searchParams.set('error', 'access_denied');
    }
    target.searchParams.set('state', state);
    res.writeHead(303, { location: target.toString(), 'content-length': 0 });
    res.end();
  }

  const oauthError = (status: number, error: string, description: string) =>
    new SandboxFailure(status, { error, error_description: description });

  function newGrant(customersOf: Set<string> | null): string {
    const id = randomBytes(8).toString('hex');
    grants.set(id, { customers: customersOf, expired: false, revoked: false });
    return id;
  }

  function newAccessToken(grant: string, refreshToken: string | null): string {
    const accessToken = `ya29.sandbox${randomBytes(24).toString('base64url')}`;
    accessTokens.set(accessToken, { grant, refreshToken, expiresAt: now() + ACCESS_TOKEN_S * 1000, expired: false });
    return accessToken;
  }

  function newRefreshToken(grant: string): string {
    const refreshToken = `1//0sandbox${randomBytes(32).toString('base64url')}`;
    refreshTokens.set(refreshToken, grant);
    return refreshToken;
  }

  function token(params: URLSearchParams, res: http.ServerResponse): void {
    const failure = tokenFailures[0];
    if (failure) {
      if (--failure.times <= 0) tokenFailures.shift();
      throw oauthError(
        failure.error === 'invalid_client' ? 401 : failure.error === 'server_error' ? 500 : 400,
        failure.error,
        failure.description,
      );
    }
    if (params.get('client_id') !== CLIENT_ID || params.get('client_secret') !== CLIENT_SECRET)
      throw oauthError(401, 'invalid_client', 'Unauthorized');
    const grantType = params.get('grant_type');
    if (grantType === 'authorization_code') {
      const code = params.get('code') ?? '';
      const issued = codes.get(code);
      if (!issued || issued.expiresAt <= now()) throw oauthError(400, 'invalid_grant', 'Malformed auth code.');
      if (params.get('redirect_uri') !== issued.redirectUri) throw oauthError(400, 'redirect_uri_mismatch', 'Bad Request');
      codes.delete(code);
      const grant = newGrant(null);
      const refreshToken = issued.refreshToken && !omitRefreshToken ? newRefreshToken(grant) : null;
      return send(
        res,
        200,
        JSON.stringify({
          access_token: newAccessToken(grant, refreshToken),
          expires_in: ACCESS_TOKEN_S,
          ...(refreshToken === null ? {} : { refresh_token: refreshToken }),
          scope: ADWORDS_SCOPE,
          token_type: 'Bearer',
        }),
      );
    }
    if (grantType === 'refresh_token') {
      const refreshToken = params.get('refresh_token') ?? '';
      const grant = refreshTokens.get(refreshToken);
      const info = grant === undefined ? undefined : grants.get(grant);
      if (!info || info.expired || info.revoked) throw oauthError(400, 'invalid_grant', 'Token has been expired or revoked.');
      return send(
        res,
        200,
        JSON.stringify({
          access_token: newAccessToken(grant!, refreshToken),
          expires_in: ACCESS_TOKEN_S,
          scope: ADWORDS_SCOPE,
          token_type: 'Bearer',
        }),
      );
    }
    throw oauthError(400, 'unsupported_grant_type', `Invalid grant_type: ${(grantType ?? '').slice(0, 40)}`);
  }

  // --- Scenario control

  const grantOf = (refreshToken: string) => {
    const grant = refreshTokens.get(refreshToken);
    return grant === undefined ? undefined : grants.get(grant);
  };

  const scenario: GoogleAdsSandbox['scenario'] = {
    throttle: (customerId, ms, opts = {}) => {
      if (!(ms > 0)) throw new Error('throttle takes a positive number of milliseconds');
      throttles.set(customerId, { until: now() + ms, afterBatches: opts.afterBatches ?? 0 });
    },
    expireRefreshToken: (refreshToken) => {
      const info = grantOf(refreshToken);
      if (info) info.expired = true;
    },
    revokeRefreshToken: (refreshToken) => {
      const info = grantOf(refreshToken);
      if (info) info.revoked = true;
    },
    expireAccessTokens: () => {
      for (const info of accessTokens.values()) info.expired = true;
    },
    denyPermission: (customerId) => void denied.add(customerId),
    fail: (key, error, opts = {}) => {
      if (!(error.status in RPC_HTTP_STATUS))
        throw new Error(`a failure needs a status: one of ${Object.keys(RPC_HTTP_STATUS).join(', ')}`);
      failures.set(key, [
        ...(failures.get(key) ?? []),
        { error, times: opts.times ?? 1, afterBatches: opts.afterBatches ?? 0, resource: opts.resource },
      ]);
    },
    failToken: (error, description, times = 1) => void tokenFailures.push({ error, description, times }),
    malformed: (key, kind) => {
      if (!MALFORMED.includes(kind)) throw new Error(`malformed answers are ${MALFORMED.join(', ')}`);
      malformed.set(key, [...(malformed.get(key) ?? []), kind]);
    },
    omitRefreshToken: () => {
      omitRefreshToken = true;
    },
    restate: (customerId, date, factor) => {
      if (!isDate(date) || !(factor >= 0)) throw new Error('restate takes a YYYY-MM-DD date and a factor ≥ 0');
      restatements.set(`${customerId}|${date}`, factor);
    },
    reset: () => {
      for (const map of [throttles, failures, malformed, restatements, denied]) map.clear();
      tokenFailures.length = 0;
      omitRefreshToken = false;
      for (const info of grants.values()) info.expired = info.revoked = false;
      for (const info of accessTokens.values()) info.expired = false;
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
      if (typeof command !== 'object' || command === null || Array.isArray(command)) throw new Error('not an object');
    } catch {
      return send(
        res,
        400,
        JSON.stringify({ error: 'send a JSON object: {"action": "throttle", "customerId": "1234567890", "ms": 60000} …' }),
      );
    }
    const text = (key: string) => (typeof command[key] === 'string' ? (command[key] as string) : '');
    const count = (key: string) => (typeof command[key] === 'number' ? (command[key] as number) : undefined);
    const list = (key: string) =>
      Array.isArray(command[key]) && (command[key] as unknown[]).every((x) => typeof x === 'string')
        ? (command[key] as string[])
        : undefined;
    try {
      switch (command.action) {
        case 'throttle':
          scenario.throttle(text('customerId'), Number(command.ms), { afterBatches: count('afterBatches') ?? 0 });
          break;
        case 'expireRefreshToken':
          scenario.expireRefreshToken(text('refreshToken'));
          break;
        case 'revokeRefreshToken':
          scenario.revokeRefreshToken(text('refreshToken'));
          break;
        case 'expireAccessTokens':
          scenario.expireAccessTokens();
          break;
        case 'denyPermission':
          scenario.denyPermission(text('customerId'));
          break;
        case 'fail': {
          const error = command.error as SandboxError;
          if (typeof error !== 'object' || error === null) throw new Error('fail takes an error: {"status": "INTERNAL", "message": "…"}');
          scenario.fail(text('key'), error, {
            times: count('times') ?? 1,
            afterBatches: count('afterBatches') ?? 0,
            ...(text('resource') ? { resource: text('resource') } : {}),
          });
          break;
        }
        case 'failToken':
          scenario.failToken(text('error'), text('description'), count('times') ?? 1);
          break;
        case 'malformed':
          scenario.malformed(text('key'), text('kind') as SandboxMalformed);
          break;
        case 'omitRefreshToken':
          scenario.omitRefreshToken();
          break;
        case 'restate':
          scenario.restate(text('customerId'), text('date'), Number(command.factor));
          break;
        case 'reset':
          scenario.reset();
          break;
        case 'addCustomer':
          addCustomer(command.customer as SandboxCustomerInput);
          break;
        case 'issueRefreshToken':
          return send(
            res,
            200,
            JSON.stringify({ refreshToken: sandbox.issueRefreshToken({ customers: list('customers'), managers: list('managers') }) }),
          );
        default:
          return send(
            res,
            400,
            JSON.stringify({
              error:
                'unknown action; one of throttle, expireRefreshToken, revokeRefreshToken, expireAccessTokens, denyPermission, fail, failToken, malformed, omitRefreshToken, restate, reset, addCustomer, issueRefreshToken',
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
      // REST answers a SearchStream's error as a stream too: an array holding it.
      const asStream = (req.url ?? '').split('?')[0]!.endsWith(':searchStream');
      if (error instanceof SandboxFailure) return send(res, error.httpStatus, JSON.stringify(asStream ? [error.body] : error.body));
      send(res, 500, JSON.stringify(statusJson({ status: 'INTERNAL' })));
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, o.host ?? '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;

  const sandbox: GoogleAdsSandbox = {
    url: `http://127.0.0.1:${port}`,
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
    customers: () =>
      [...customers.values()].map(({ id, name, currency, timeZone, manager, status, clients, direct, adGroups, campaigns }) => ({
        id,
        name,
        currency,
        timeZone,
        manager,
        status,
        clients: [...clients],
        direct,
        adGroups: adGroups.map((g) => ({ ...g })),
        campaigns: campaigns.map((k) => ({ ...k })),
      })),
    hourlySpend,
    addCustomer,
    issueRefreshToken: (t = {}) => {
      const reached =
        t.customers === undefined && t.managers === undefined ? null : new Set([...(t.customers ?? []), ...(t.managers ?? [])]);
      return newRefreshToken(newGrant(reached));
    },
    scenario,
    requests,
  };
  return sandbox;
}
