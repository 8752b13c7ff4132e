// The Google Ads API wire client (REST): the accounts a Google login can reach, directly or through
// manager accounts, and hourly spend from GoogleAdsService.SearchStream (per ad group, and per
// campaign for the campaign types without ad groups, ./wire.ts); plus the OAuth 2.0
// web-server flow that gives us the refresh token we keep. It follows Google's documented wire
// format, so the same code talks to googleads.googleapis.com / oauth2.googleapis.com and to the
// loopback sandbox (./sandbox.ts). Every answer is checked before it is believed: a wrong type, a
// missing field, a redirect, a body over the cap or past the deadline is a
// PlatformError('bad_answer'), never a crash (an error page without JSON is judged by its HTTP
// status). The refresh token, access tokens, the client secret, an OAuth code and the developer
// token are never written into an error message.
//
// A read holds one window's two SearchStream answers at a time: REST delivers the whole stream as
// ONE JSON array (one HTTP body), so a range is read in windows of days sized to keep each body
// well under the cap (a window too large is halved and asked again, nothing of it having been
// handed on). Both bodies are checked whole before any of the window's rows are handed on, so an
// error element at the end of a stream (quota, a transient failure) is seen first: a quota error
// is waited out and the same query asked again, and no row ever reaches the caller twice.
import { GOOGLE_ADS_API_VERSION } from '../../policy.ts';
import { isTimeZoneName } from '../../platform/time.ts';
import {
  PlatformError,
  type AdPlatformClient,
  type LocalDayRange,
  type PlatformAdAccount,
  type PlatformCredential,
  type PlatformFailureKind,
  type PlatformSpendRow,
} from '../ad-platform.ts';
import {
  CAMPAIGN_LEVEL_CHANNEL_TYPES,
  campaignAdSetId,
  campaignSpendQuery,
  customerClientQuery,
  customerQuery,
  durationMs,
  RETRY_INFO_TYPE,
  spendQuery,
  type RpcStatus,
} from './wire.ts';
import {
  AnswerTooLarge,
  createGoogleTransport,
  googleAuthorizeUrl,
  isObject,
  LONG_QUOTA_WAIT_MS,
  MAX_QUOTA_WAIT_MS,
  SHORT_QUOTA_WAIT_MS,
  TOKEN_TEXT,
  type Session,
} from '../google/transport.ts';

export interface GoogleAdsClientOptions {
  /** https://googleads.googleapis.com in production (GOOGLE_ADS_URL), the sandbox's url in tests and the demo. */
  adsUrl?: string;
  /** The OAuth token endpoint's origin: https://oauth2.googleapis.com in production (GOOGLE_OAUTH_URL). */
  oauthUrl?: string;
  /** The operator's OAuth client (GOOGLE_OAUTH_CLIENT_ID / GOOGLE_OAUTH_CLIENT_SECRET). */
  clientId: string;
  clientSecret: string;
  /** Sent as the `developer-token` header only when set: Google retired developer tokens on 2026-09-09. */
  developerToken?: string;
  apiVersion?: string;
  /** Waits out quota errors; tests inject one that does not really wait. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** The clock access-token lifetimes are measured with. */
  now?: () => Date;
  /** Per request, from sending it to the last byte of the answer. */
  timeoutMs?: number;
  /** An answer larger than this is refused as soon as it passes the cap (a spend window that does is read again in halves). */
  maxBodyBytes?: number;
}

export interface GoogleOAuth {
  /** {accountsUrl}/o/oauth2/v2/auth?client_id&redirect_uri&response_type=code&scope&access_type=offline&prompt=consent&state */
  authorizeUrl(p: { accountsUrl: string; clientId: string; redirectUri: string; state: string }): string;
  /**
   * POST {oauthUrl}/token, grant_type=authorization_code. `refreshToken` is undefined when Google
   * leaves it out (it does on a consent the user gave before, unless prompt=consent): the caller
   * then keeps the refresh token it has, never an empty one.
   */
  exchangeCode(p: {
    redirectUri: string;
    code: string;
  }): Promise<{ refreshToken: string | undefined; accessToken: string; expiresAt: Date }>;
}

/** The one scope the Google Ads API takes (OAuth 2.0 Scopes for Google APIs › Google Ads API). */
export const GOOGLE_ADS_SCOPES = ['https://www.googleapis.com/auth/adwords'];

const DEFAULT_ADS_URL = 'https://googleads.googleapis.com';
/** A SearchStream answer comes whole at the end of the request: more time than a Graph page. */
const DEFAULT_TIMEOUT_MS = 120_000;
const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;
/**
 * Spend windows: the first is a week; later ones are sized from the bytes per day seen so far to
 * fill about WINDOW_TARGET_BYTES (at most a quarter of the body cap), between one day and
 * MAX_WINDOW_DAYS. A window's body is held and parsed whole, so its size is what a read costs in
 * memory (bench:sync's mixed row: 8 MiB windows, two accounts at once, passed 300 MB). Google refuses
 * date-segmented reads of some resources over 31 days (QueryError DATE_RANGE_TOO_WIDE, "a range
 * smaller than 31 days"), so no window is that long.
 */
const FIRST_WINDOW_DAYS = 7;
const WINDOW_TARGET_BYTES = 2 * 1024 * 1024;
const MAX_WINDOW_DAYS = 30;
/** Accounts described at once when listing (one SearchStream each). */
const LOOKUP_CONCURRENCY = 4;
/** listAccessibleCustomers and customer_client lists longer than this are not believed. */
const MAX_ACCOUNTS = 10_000;
const CUSTOMER_ID = /^\d{10}$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const DAY_MS = 86_400_000;

/** A customer as GAQL describes it (resource `customer` or `customer_client`). */
interface Customer extends Omit<PlatformAdAccount, 'accessVia'> {
  manager: boolean;
}

export function createGoogleAdsClient(options: GoogleAdsClientOptions): AdPlatformClient & GoogleOAuth {
  const adsBase = (options.adsUrl ?? DEFAULT_ADS_URL).replace(/\/+$/, '');
  const version = options.apiVersion ?? GOOGLE_ADS_API_VERSION;
  const { clientId, clientSecret, developerToken } = options;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const windowTarget = Math.min(WINDOW_TARGET_BYTES, maxBodyBytes / 4);
  const transport = createGoogleTransport({
    oauthUrl: options.oauthUrl,
    clientId,
    clientSecret,
    secrets: developerToken ? [developerToken] : [],
    platform: 'google_ads',
    sleep: options.sleep,
    now: options.now,
    timeoutMs,
    maxBodyBytes,
  });
  const { scrub, send, parseJson, statusOnly, retryAfterMs, waitOrThrottle, accessToken } = transport;

  // --- The Google Ads API

  /**
   * One API call under the quota and token rules: returns the answer's JSON (an object, or a
   * stream's array with no error in it) or throws PlatformError / PlatformThrottled.
   */
  async function ads(
    s: Session,
    what: string,
    method: 'GET' | 'POST',
    path: string,
    body: string | undefined,
    loginCustomerId: string | null,
  ): Promise<{ json: unknown; bytes: number }> {
    const who = 'Google Ads';
    let fresh = false;
    for (;;) {
      const token = await accessToken(s, fresh);
      const headers: Record<string, string> = { authorization: `Bearer ${token}` };
      // Developer tokens were retired on 2026-09-09: the header goes only where one is configured.
      if (developerToken) headers['developer-token'] = developerToken;
      // The manager the login reaches the account through ("Call structure › login-customer-id":
      // required when accessing a client account through a manager; digits, no dashes).
      if (loginCustomerId !== null) headers['login-customer-id'] = loginCustomerId;
      if (body !== undefined) headers['content-type'] = 'application/json';
      const answer = await send(s, who, what, method, new URL(`${adsBase}/${version}/${path}`), headers, body);
      const json = parseJson(answer);
      if (json === undefined) {
        // No JSON to read Google's error from: the HTTP status is all there is (429: a wait, as RESOURCE_EXHAUSTED).
        if (answer.status === 429) {
          const ms = Math.min(retryAfterMs(answer.retryAfter) ?? SHORT_QUOTA_WAIT_MS, MAX_QUOTA_WAIT_MS);
          await waitOrThrottle(s, ms, `Google Ads asks to slow down for ${what}: try again in ${Math.ceil(ms / 1000)} s`, undefined);
          continue;
        }
        const error = statusOnly(answer, who, what, 'needs_reconnect');
        if (error.kind === 'needs_reconnect' && !fresh) {
          fresh = true;
          continue;
        }
        throw error;
      }
      const status = errorIn(json);
      if (status !== undefined) {
        const failure = readFailure(status, answer.status, what, s);
        if (failure.waitMs !== undefined) {
          const ms = failure.waitMs;
          await waitOrThrottle(
            s,
            ms,
            `Google Ads quota is exhausted for ${what}: try again in ${Math.ceil(ms / 1000)} s`,
            failure.error.platformMessage,
          );
          continue;
        }
        // An access token from memory that Google no longer takes (revoked early): one new one, then the verdict stands.
        if (failure.error.kind === 'needs_reconnect' && !fresh) {
          fresh = true;
          continue;
        }
        throw failure.error;
      }
      if (answer.status < 200 || answer.status >= 300) throw statusOnly(answer, who, what, 'needs_reconnect');
      return { json, bytes: answer.bytes };
    }
  }

  /** The google.rpc.Status of an error answer: `{error}` alone, or an `{error}` element anywhere in a stream's array. */
  function errorIn(json: unknown): unknown {
    if (isObject(json)) return 'error' in json ? (json.error ?? null) : undefined;
    if (Array.isArray(json)) for (const element of json) if (isObject(element) && 'error' in element) return element.error ?? null;
    return undefined;
  }

  /** What an error answer means: a failure kind, or a quota wait. */
  function readFailure(value: unknown, httpStatus: number, what: string, s: Session): { error: PlatformError; waitMs?: number } {
    if (!isObject(value) || typeof value.message !== 'string' || (typeof value.status !== 'string' && typeof value.code !== 'number')) {
      return { error: new PlatformError('bad_answer', `Google Ads answered ${what} with an error that has no status or message`) };
    }
    const code = typeof value.code === 'number' ? value.code : httpStatus;
    const status = (typeof value.status === 'string' ? value.status.slice(0, 64) : statusOfHttp(code)) as RpcStatus | string;
    // details: GoogleAdsFailure { errors: [{ errorCode: { <family>: <VALUE> }, message, details }] },
    // and possibly google.rpc.RetryInfo { retryDelay }.
    const errors: { family: string; value: string; message: string | undefined; retryMs: number | undefined }[] = [];
    let retryMs: number | undefined;
    const details = Array.isArray(value.details) ? value.details : [];
    for (const detail of details) {
      if (!isObject(detail) || typeof detail['@type'] !== 'string') continue;
      if (detail['@type'] === RETRY_INFO_TYPE) retryMs = durationMs(detail.retryDelay) ?? retryMs;
      if (!/^type\.googleapis\.com\/google\.ads\.googleads\.v\d+\.errors\.GoogleAdsFailure$/.test(detail['@type'])) continue;
      if (!Array.isArray(detail.errors)) continue;
      for (const entry of detail.errors) {
        if (!isObject(entry) || !isObject(entry.errorCode)) continue;
        const [family, codeValue] = Object.entries(entry.errorCode)[0] ?? [];
        if (typeof family !== 'string' || typeof codeValue !== 'string') continue;
        const quota = isObject(entry.details) && isObject(entry.details.quotaErrorDetails) ? entry.details.quotaErrorDetails : undefined;
        errors.push({
          family: family.slice(0, 64),
          value: codeValue.slice(0, 64),
          message: typeof entry.message === 'string' && entry.message !== '' ? entry.message.slice(0, 2000) : undefined,
          retryMs: durationMs(quota?.retryDelay),
        });
      }
    }
    const first = errors[0];
    const words = {
      platformMessage: scrub(first?.message ?? value.message.slice(0, 2000), s),
      platformCode: scrub(first ? `${status}/${first.value}` : status, s),
    };
    const says = `Google Ads refused ${what}`;
    const prohibited = errors.some((e) => e.family === 'quotaError' && e.value === 'ACCESS_PROHIBITED');
    if (!prohibited && (status === 'RESOURCE_EXHAUSTED' || errors.some((e) => e.family === 'quotaError'))) {
      const asked = Math.max(retryMs ?? -1, ...errors.map((e) => e.retryMs ?? -1));
      const waitMs =
        asked >= 0
          ? Math.min(Math.max(asked, 1000), MAX_QUOTA_WAIT_MS)
          : errors.some((e) => e.value === 'RESOURCE_TEMPORARILY_EXHAUSTED')
            ? SHORT_QUOTA_WAIT_MS
            : LONG_QUOTA_WAIT_MS;
      return { error: new PlatformError('platform_error', `${says}: quota exhausted (${words.platformCode})`, words), waitMs };
    }
    let kind: PlatformFailureKind;
    let why: string;
    if (status === 'UNAUTHENTICATED' || errors.some((e) => e.family === 'authenticationError')) {
      kind = 'needs_reconnect';
      why = 'the Google login is no longer valid';
    } else if (status === 'PERMISSION_DENIED' || prohibited) {
      kind = 'missing_permission';
      why = 'the Google login lacks access to the account';
    } else if (
      ['INTERNAL', 'UNAVAILABLE', 'DEADLINE_EXCEEDED', 'UNKNOWN', 'ABORTED', 'CANCELLED', 'DATA_LOSS'].includes(status) ||
      code >= 500
    ) {
      kind = 'platform_error';
      why = 'a temporary error';
    } else {
      kind = 'invalid_request';
      why = 'the request as made';
    }
    return { error: new PlatformError(kind, `${says}: ${why} (${words.platformCode})`, words) };
  }

  /** GoogleAdsService.SearchStream: the rows of every batch, after checking the stream has no error element. */
  async function searchStream(
    s: Session,
    what: string,
    customerId: string,
    query: string,
    loginCustomerId: string | null,
  ): Promise<{ batches: unknown[][]; bytes: number }> {
    const { json, bytes } = await ads(
      s,
      what,
      'POST',
      `customers/${customerId}/googleAds:searchStream`,
      JSON.stringify({ query }),
      loginCustomerId,
    );
    // REST streams the SearchGoogleAdsStreamResponse messages as one JSON array, each with `results`
    // (absent when empty), `fieldMask` and `requestId`.
    if (!Array.isArray(json))
      throw new PlatformError('bad_answer', `Google Ads' answer to ${what} is not a stream (a JSON array of batches)`);
    const batches: unknown[][] = [];
    for (const element of json) {
      if (!isObject(element)) throw new PlatformError('bad_answer', `Google Ads' answer to ${what} has a batch that is not an object`);
      if (element.results === undefined) continue;
      if (!Array.isArray(element.results))
        throw new PlatformError('bad_answer', `Google Ads' answer to ${what} has a batch whose results are not a list`);
      batches.push(element.results);
    }
    return { batches, bytes };
  }

  function credentialSession(credential: PlatformCredential, signal?: AbortSignal): Session {
    if (typeof credential.secret !== 'string' || !TOKEN_TEXT.test(credential.secret)) {
      throw new PlatformError('invalid_request', 'The Google refresh token must be 1 to 4096 printable characters without spaces');
    }
    return transport.session(credential.secret, signal);
  }

  /** customers:listAccessibleCustomers: the customers the login reaches directly (managers among them). */
  async function accessibleCustomers(s: Session): Promise<string[]> {
    const what = 'the accessible customers';
    const { json } = await ads(s, what, 'GET', 'customers:listAccessibleCustomers', undefined, null);
    if (!isObject(json)) throw new PlatformError('bad_answer', `Google Ads' answer to ${what} is not a JSON object`);
    // An empty repeated field is left out of proto3 JSON: no resourceNames is no customer.
    const names = json.resourceNames ?? [];
    if (!Array.isArray(names) || names.length > MAX_ACCOUNTS)
      throw new PlatformError('bad_answer', `Google Ads' answer to ${what} has no valid resourceNames list`);
    return [
      ...new Set(
        names.map((name) => {
          const m = typeof name === 'string' ? /^customers\/(\d{10})$/.exec(name) : null;
          if (!m) throw new PlatformError('bad_answer', `Google Ads' answer to ${what} has a resource name that is not customers/{id}`);
          return m[1]!;
        }),
      ),
    ];
  }

  /** The customer, read as itself (GAQL on `customer`), through `via` when set. */
  async function customer(s: Session, customerId: string, via: string | null): Promise<Customer> {
    const what = `the customer ${customerId}${via === null ? '' : ` (through manager ${via})`}`;
    const { batches } = await searchStream(s, what, customerId, customerQuery(), via);
    const rows = batches.flat();
    if (rows.length !== 1) throw new PlatformError('bad_answer', `Google Ads answered ${what} with ${rows.length} customers, not one`);
    const row = rows[0];
    const found = parseCustomer(isObject(row) ? row.customer : undefined, what);
    if (found.externalId !== customerId) throw new PlatformError('bad_answer', `Google Ads answered ${what} with another customer`);
    return found;
  }

  /** Every account below a manager, at any depth (one customer_client query, login-customer-id = the manager). */
  async function clientsOf(s: Session, managerId: string): Promise<Customer[]> {
    const what = `the accounts under manager ${managerId}`;
    const { batches } = await searchStream(s, what, managerId, customerClientQuery(), managerId);
    const rows = batches.flat();
    if (rows.length > MAX_ACCOUNTS)
      throw new PlatformError('bad_answer', `Google Ads' answer to ${what} lists more than ${MAX_ACCOUNTS} accounts`);
    return rows.map((row) => parseCustomer(isObject(row) ? row.customerClient : undefined, what));
  }

  /** A manager account has no campaigns, so no spend: it is never offered or synced itself. */
  function asAdAccount(c: Customer, accessVia: string | null): PlatformAdAccount {
    if (c.manager)
      throw new PlatformError(
        'invalid_request',
        `Google Ads customer ${c.externalId} is a manager account: it has no spend of its own; connect the accounts under it`,
      );
    const { manager: _manager, ...account } = c;
    return { ...account, accessVia };
  }

  async function* readSpend(
    credential: PlatformCredential,
    account: PlatformAdAccount,
    range: LocalDayRange,
    signal?: AbortSignal,
  ): AsyncGenerator<PlatformSpendRow[]> {
    const s = credentialSession(credential, signal);
    checkCustomerId(account.externalId);
    if (account.accessVia !== null) checkCustomerId(account.accessVia);
    const days = dayCount(range);
    let windowDays = Math.min(days, FIRST_WINDOW_DAYS);
    let bytesSeen = 0;
    let daysSeen = 0;
    for (let since = range.since; since <= range.until; ) {
      const until = minDate(addDays(since, windowDays - 1), range.until);
      const what = `the spend of ${account.externalId} (${since} to ${until})`;
      const campaignsWhat = `the campaign-level spend of ${account.externalId} (${since} to ${until})`;
      // Both queries of a window are read whole before any of its rows goes out: a quota wait on the
      // second asks only the second again (the first is held), a failure or a throttle past the
      // budget ends the read with nothing of the window handed on, and the two answers are checked
      // against each other first.
      let adGroups: { batches: unknown[][]; bytes: number };
      let campaigns: { batches: unknown[][]; bytes: number };
      try {
        adGroups = await searchStream(s, what, account.externalId, spendQuery(since, until), account.accessVia);
        campaigns = await searchStream(s, campaignsWhat, account.externalId, campaignSpendQuery(since, until), account.accessVia);
      } catch (error) {
        // Nothing of this window was handed on: ask again for half as many days.
        if (error instanceof AnswerTooLarge && windowDays > 1) {
          windowDays = Math.ceil(windowDays / 2);
          continue;
        }
        throw error;
      }
      bytesSeen += adGroups.bytes + campaigns.bytes;
      daysSeen += dayCount({ since, until });
      const campaignCheck: RowCheck = { account, since, until, what: campaignsWhat, checkedDate: NOT_CHECKED };
      const campaignBatches = campaigns.batches.map((batch) => batch.map((row) => spendRow(row, 'campaign', campaignCheck)));
      // The queries split campaigns by type, so a campaign in both answers would be counted twice.
      const campaignLevel = new Set(campaignBatches.flatMap((batch) => batch.map((r) => r.campaignId)));
      if (campaignLevel.size > 0)
        for (const batch of adGroups.batches)
          for (const row of batch)
            if (isObject(row) && isObject(row.campaign) && campaignLevel.has(row.campaign.id as string))
              throw new PlatformError(
                'bad_answer',
                `Google Ads answered ${what} with campaign ${row.campaign.id as string} both by ad group and at campaign level`,
              );
      const check: RowCheck = { account, since, until, what, checkedDate: NOT_CHECKED };
      const { batches } = adGroups;
      for (let i = 0; i < batches.length; i++) {
        const rows = batches[i]!.map((row) => spendRow(row, 'ad_group', check));
        // Let the parsed batch go as soon as it is converted: the rest of the window is all that is held.
        batches[i] = [];
        if (rows.length > 0) yield rows;
      }
      for (const rows of campaignBatches) if (rows.length > 0) yield rows;
      const perDay = bytesSeen / daysSeen;
      windowDays = Math.max(1, Math.min(MAX_WINDOW_DAYS, Math.floor(windowTarget / Math.max(perDay, 1))));
      since = addDays(until, 1);
    }
  }

  return {
    platform: 'google_ads',

    async describeAccount(credential, { externalId, accessVia }) {
      const s = credentialSession(credential);
      checkCustomerId(externalId);
      if (accessVia !== null) checkCustomerId(accessVia);
      let refused: PlatformError | undefined;
      if (accessVia !== null) {
        try {
          return asAdAccount(await customer(s, externalId, accessVia), accessVia);
        } catch (error) {
          // The manager link may have moved: look for the way in again below.
          if (!(error instanceof PlatformError) || error.kind !== 'missing_permission') throw error;
          refused = error;
        }
      }
      const accessible = await accessibleCustomers(s);
      if (accessible.includes(externalId)) return asAdAccount(await customer(s, externalId, null), null);
      // Through a manager the login reaches: the first that lets us read the account as its client.
      // Only a manager can be a login-customer-id ("Call structure"), so each accessible customer is
      // read as itself first (customer.manager) and an ordinary account is never tried as the way in.
      for (const candidate of accessible) {
        if (candidate === accessVia) continue;
        try {
          if (!(await customer(s, candidate, null)).manager) continue;
          return asAdAccount(await customer(s, externalId, candidate), candidate);
        } catch (error) {
          if (!(error instanceof PlatformError) || error.kind !== 'missing_permission') throw error;
          refused ??= error;
        }
      }
      throw (
        refused ??
        new PlatformError(
          'missing_permission',
          `The Google login reaches Google Ads customer ${externalId} neither directly nor through a manager account it can access`,
        )
      );
    },

    async listAccounts(credential) {
      const s = credentialSession(credential);
      const accessible = await accessibleCustomers(s);
      // A customer that refuses to be read (a cancelled one answers CUSTOMER_NOT_ENABLED) is not offered.
      const skipRefused = async <T>(read: Promise<T>): Promise<T | undefined> => {
        try {
          return await read;
        } catch (error) {
          if (error instanceof PlatformError && error.kind === 'missing_permission') return undefined;
          throw error;
        }
      };
      const direct = await mapLimit(accessible, LOOKUP_CONCURRENCY, (id) => skipRefused(customer(s, id, null)));
      const accounts = new Map<string, PlatformAdAccount>();
      for (const c of direct) if (c && !c.manager) accounts.set(c.externalId, asAdAccount(c, null));
      const managers = direct.filter((c): c is Customer => c?.manager === true);
      const below = await mapLimit(managers, LOOKUP_CONCURRENCY, (m) => skipRefused(clientsOf(s, m.externalId)));
      managers.forEach((m, i) => {
        for (const c of below[i] ?? []) {
          // Reached directly or through an earlier manager already: the first way in is kept.
          if (!c.manager && !accounts.has(c.externalId)) accounts.set(c.externalId, asAdAccount(c, m.externalId));
        }
      });
      return [...accounts.values()];
    },

    readSpend,

    authorizeUrl: (p) => googleAuthorizeUrl({ ...p, scopes: GOOGLE_ADS_SCOPES }),

    exchangeCode: transport.exchangeCode,
  };
}

function statusOfHttp(code: number): RpcStatus {
  if (code === 401) return 'UNAUTHENTICATED';
  if (code === 403) return 'PERMISSION_DENIED';
  if (code === 404) return 'NOT_FOUND';
  if (code === 429) return 'RESOURCE_EXHAUSTED';
  if (code === 503) return 'UNAVAILABLE';
  if (code === 504) return 'DEADLINE_EXCEEDED';
  if (code >= 500) return 'INTERNAL';
  return 'INVALID_ARGUMENT';
}

/** Runs `fn` over the items, `limit` at a time, in order of the items; the first failure ends it. */
async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < items.length) {
      const i = next++;
      try {
        results[i] = await fn(items[i]!);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

function checkCustomerId(id: string): void {
  if (typeof id !== 'string' || !CUSTOMER_ID.test(id)) {
    throw new PlatformError('invalid_request', 'A Google Ads customer id is its ten digits without dashes (1234567890)');
  }
}

const dayNumber = (date: string) => (DATE.test(date) ? Date.parse(`${date}T00:00:00Z`) / DAY_MS : NaN);
const addDays = (date: string, days: number) => new Date((dayNumber(date) + days) * DAY_MS).toISOString().slice(0, 10);
const minDate = (a: string, b: string) => (a < b ? a : b);

function dayCount(range: LocalDayRange): number {
  const since = dayNumber(range.since);
  const until = dayNumber(range.until);
  if (!(since <= until)) throw new PlatformError('invalid_request', `The range ${range.since} to ${range.until} is not two dates in order`);
  return until - since + 1;
}

function parseCustomer(value: unknown, what: string): Customer {
  const bad = (field: string) => new PlatformError('bad_answer', `Google Ads' answer to ${what} has a customer with no valid ${field}`);
  if (!isObject(value)) throw bad('object');
  const { id, descriptiveName: name, currencyCode: currency, timeZone: zone, manager, status } = value;
  // int64 is a JSON string (proto3 JSON mapping).
  if (typeof id !== 'string' || !CUSTOMER_ID.test(id)) throw bad('id');
  // An account without a name has none in the answer (an unset optional string).
  if (name !== undefined && typeof name !== 'string') throw bad('descriptiveName');
  if (typeof currency !== 'string' || !/^[A-Z]{3}$/.test(currency)) throw bad('currencyCode');
  if (typeof zone !== 'string' || !isTimeZoneName(zone)) throw bad('timeZone');
  if (manager !== undefined && typeof manager !== 'boolean') throw bad('manager');
  if (typeof status !== 'string' || !/^[A-Z_]{1,32}$/.test(status)) throw bad('status');
  return {
    externalId: id,
    name: name ?? '',
    currency,
    timeZone: zone,
    active: status === 'ENABLED',
    status,
    manager: manager === true,
  };
}

/** A string of 1 to 20 ASCII digits (an int64 id), without a regular expression: it runs twice per row. */
function isNumericId(text: unknown): text is string {
  if (typeof text !== 'string' || text.length === 0 || text.length > 20) return false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

const NOT_CHECKED = Symbol('no date checked yet');

interface RowCheck {
  account: PlatformAdAccount;
  since: string;
  until: string;
  what: string;
  /** The last date that passed (rows come day by day): the same one passes again without a full check. */
  checkedDate: unknown;
}

/**
 * One GoogleAdsRow of a spend query: `{ segments: { date, hour }, campaign: { id, name }, adGroup:
 * { id, name }, metrics: { costMicros } }` from `ad_group` (plus resourceName fields Google adds);
 * from `campaign`, no adGroup but `campaign.advertisingChannelType`, one of the campaign-level
 * types, and the campaign stands in for its ad set.
 */
function spendRow(value: unknown, level: 'ad_group' | 'campaign', c: RowCheck): PlatformSpendRow {
  const bad = (field: string) => new PlatformError('bad_answer', `Google Ads' answer to ${c.what} has a row with no valid ${field}`);
  if (!isObject(value)) throw bad('object');
  const { segments, campaign, adGroup, metrics } = value;
  if (!isObject(segments)) throw bad('segments');
  const date = segments.date;
  if (date !== c.checkedDate) {
    if (typeof date !== 'string' || !DATE.test(date) || date < c.since || date > c.until) throw bad('segments.date');
    c.checkedDate = date;
  }
  // segments.hour is `optional int32` (segments.proto): present whenever selected, 0 included.
  const hour = segments.hour;
  if (typeof hour !== 'number' || !Number.isInteger(hour) || hour < 0 || hour > 23) throw bad('segments.hour');
  if (!isObject(campaign) || !isNumericId(campaign.id)) throw bad('campaign.id');
  if (typeof campaign.name !== 'string') throw bad('campaign.name');
  let adSetId: string;
  let adSetName: string;
  if (level === 'ad_group') {
    if (!isObject(adGroup) || !isNumericId(adGroup.id)) throw bad('ad_group.id');
    if (typeof adGroup.name !== 'string') throw bad('ad_group.name');
    adSetId = adGroup.id;
    adSetName = adGroup.name;
  } else {
    // Enums are their names in proto3 JSON; another type here would be read by the ad_group query too.
    if (typeof campaign.advertisingChannelType !== 'string' || !CAMPAIGN_LEVEL_CHANNEL_TYPES.includes(campaign.advertisingChannelType))
      throw bad('campaign.advertising_channel_type');
    adSetId = campaignAdSetId(campaign.id);
    adSetName = campaign.name;
  }
  // metrics.cost_micros is an `optional int64`, so a JSON string of digits; unset (no cost recorded)
  // it is left out, which is zero.
  let spendMicros = 0n;
  if (metrics !== undefined) {
    if (!isObject(metrics)) throw bad('metrics');
    const cost = metrics.costMicros;
    if (cost !== undefined) {
      if (!isNumericId(cost) || (cost.length > 1 && cost.charCodeAt(0) === 48)) throw bad('metrics.cost_micros');
      spendMicros = BigInt(cost);
    }
  }
  return { date: date as string, hour, campaignId: campaign.id, campaignName: campaign.name, adSetId, adSetName, spendMicros };
}
