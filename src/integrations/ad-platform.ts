// What every ad platform's wire client gives the sync engine (src/domain/ad-sync/). A client knows
// the platform's documented requests and answers, its paging, its throttling and its errors; it
// knows nothing of hubs, workspaces or our tables. Its base URL is injected, so the same code
// talks to the real host in production and to a loopback sandbox in tests and the demo.

/** Why a platform call failed, in terms a person can act on. */
export const PLATFORM_FAILURE_KINDS = [
  /** The token expired or was revoked: an admin must connect the account again. */
  'needs_reconnect',
  /** The token works but lacks a permission or access to the account. */
  'missing_permission',
  /** The platform refused the request as it was made (bad id, bad parameter): not worth retrying as is. */
  'invalid_request',
  /** The platform failed on its side or said the error is transient: retry later. */
  'platform_error',
  /** The answer was not what the documentation promises (wrong types, HTML, a redirect, too large, too slow). */
  'bad_answer',
  /** The platform could not be reached (DNS, connection refused, timeout before any answer). */
  'unreachable',
  /** Publishing: the network took the post and refused its content (Business Profile's REJECTED, an Instagram container in ERROR). */
  'rejected',
  /** Publishing: the channel's documented cap is used up (Instagram's posts per 24 hours); later posts go through. */
  'limit_reached',
  /** The platform has not granted our project access yet (Business Profile APIs answer with a quota of 0). */
  'not_approved',
] as const;
export type PlatformFailureKind = (typeof PLATFORM_FAILURE_KINDS)[number];

/**
 * A platform call that failed. `message` is ours (one line, no token); `platformMessage` is the
 * platform's own words for a person (Meta's `error_user_msg`, else its `message`), shown to the
 * admin as it is. Never carries a token or a full URL with a token in it.
 */
export class PlatformError extends Error {
  readonly kind: PlatformFailureKind;
  readonly platformMessage: string | undefined;
  /** The platform's own code(s), for logs and support (e.g. `190/463`, `UNAUTHENTICATED`). */
  readonly platformCode: string | undefined;
  constructor(kind: PlatformFailureKind, message: string, details: { platformMessage?: string; platformCode?: string } = {}) {
    super(message);
    this.name = 'PlatformError';
    this.kind = kind;
    this.platformMessage = details.platformMessage;
    this.platformCode = details.platformCode;
  }
}

/**
 * The platform asked us to slow down. Not a failure: the engine waits `retryAfterMs` (or
 * reschedules the account until then when the wait is long) and resumes where it was.
 */
export class PlatformThrottled extends Error {
  readonly retryAfterMs: number;
  readonly platformMessage: string | undefined;
  constructor(retryAfterMs: number, message: string, platformMessage?: string) {
    super(message);
    this.name = 'PlatformThrottled';
    this.retryAfterMs = retryAfterMs;
    this.platformMessage = platformMessage;
  }
}

/**
 * Organic publishing: the request may have reached the network but no answer did (a timeout after
 * the request was written, a connection cut mid-answer, an answer that cannot be read). Nothing may
 * be sent again blindly: the delivery is reconciled by looking the publication up. The same name
 * and meaning as src/domain/posts/connector.ts's DeliveryUnconfirmed, which re-exports this one
 * (integrations cannot import the domain).
 */
export class DeliveryUnconfirmed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeliveryUnconfirmed';
  }
}

/**
 * Organic publishing: the publisher gave the call up (its deadline) while the network was still
 * preparing the post (an Instagram container still IN_PROGRESS: a reel can take minutes), before
 * the publishing request was sent, so nothing was published. The delivery waits `retryAfterMs`
 * and its next attempt is given `prepared` (opaque to the publisher: the container and when it was
 * made) to go on waiting for the same preparation instead of starting a new one. Re-exported by
 * src/domain/posts/connector.ts.
 */
export class PublishNotReady extends Error {
  readonly prepared: string;
  readonly retryAfterMs: number;
  constructor(message: string, prepared: string, retryAfterMs: number) {
    super(message);
    this.name = 'PublishNotReady';
    this.prepared = prepared;
    this.retryAfterMs = retryAfterMs;
  }
}

/**
 * Organic publishing, reconciliation: the lookup cannot tell which publication, if any, is this
 * post's (several the network lists could be, and nothing it documents tells them apart). The
 * delivery stays unconfirmed and is looked up again, at last failing as "could not confirm";
 * it is never taken as published, nor sent again, on a guess. The same class as
 * src/domain/posts/connector.ts's LookupAmbiguous, which re-exports it.
 */
export class LookupAmbiguous extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LookupAmbiguous';
  }
}

/** An ad account as the platform describes it. */
export interface PlatformAdAccount {
  /** The platform's id, as the platform writes it (Meta: `act_123`; Google Ads: `1234567890`). */
  externalId: string;
  name: string;
  /** ISO 4217, upper case. */
  currency: string;
  /** IANA time zone name (`America/Los_Angeles`): the zone the platform's days and hours are in. */
  timeZone: string;
  /** Whether the platform lets the account run ads (Meta account_status 1 = active, etc.). */
  active: boolean;
  /** The platform's own status word or code, for display. */
  status: string;
  /**
   * The account through which the credential reaches this one, or null when it reaches it
   * directly. Google Ads: the manager account's customer id, sent as `login-customer-id`.
   */
  accessVia: string | null;
}

/**
 * Which account to read, as stored: its id and, when known, the way in (`accessVia`). With
 * `accessVia: null` a client whose platform has indirect access (Google Ads' manager accounts)
 * finds the way in itself and says which in the answer's `accessVia`.
 */
export interface AccountRef {
  externalId: string;
  accessVia: string | null;
}

/**
 * Spend of one ad set (ad group) in one account-local hour, or in one whole account-local day when
 * the platform withholds hours (`hour: null`).
 */
export interface PlatformSpendRow {
  /** Account-local date, YYYY-MM-DD. */
  date: string;
  /** Account-local hour 0–23, or null for a whole day. */
  hour: number | null;
  campaignId: string;
  campaignName: string;
  adSetId: string;
  adSetName: string;
  /**
   * Millionths of the account currency's unit, exact (no float ever held it): Meta's "12.34"
   * becomes 12_340_000n, Google's costMicros "12340000" the same.
   */
  spendMicros: bigint;
}

/** A window of account-local days, both ends included. */
export interface LocalDayRange {
  since: string;
  until: string;
}

/**
 * The sealed-at-rest secret a client is given for each call (never logged): Meta's access token,
 * Google's refresh token (the client trades it for short-lived access tokens itself), or a
 * ChatGPT Ads API key.
 */
export interface PlatformCredential {
  secret: string;
}

/** What the sync engine needs of an ad platform. */
export interface AdPlatformClient {
  readonly platform: 'meta' | 'google_ads' | 'chatgpt_ads';
  /** One account's currency, time zone and status: checked at connect and at the start of each sync. */
  describeAccount(credential: PlatformCredential, account: AccountRef): Promise<PlatformAdAccount>;
  /** The accounts the credential can read (for the admin to choose from at connect). */
  listAccounts(credential: PlatformCredential): Promise<PlatformAdAccount[]>;
  /**
   * The account's spend over the range, in batches as they arrive (pages, report chunks), so a
   * large backfill is never held whole. Throws PlatformError or PlatformThrottled; a client may
   * wait out a short throttle itself (with `signal`) before throwing PlatformThrottled for a long one.
   */
  readSpend(
    credential: PlatformCredential,
    account: PlatformAdAccount,
    range: LocalDayRange,
    signal?: AbortSignal,
  ): AsyncIterable<PlatformSpendRow[]>;
}
