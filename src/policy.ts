// Every rate limit, size limit, lifetime and timeout hubops promises, in one place. Each line says what it
// affects; the docs pages state the same numbers, and test/docs/policy.test.ts fails when the two
// disagree. Change a number here, then the sentence the test names.

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** A rolling-window rate limit: at most `limit` counted requests in any `windowMs`. */
export interface RatePolicy {
  /** The name clients see in `RateLimit-Policy` and in 429 messages. */
  readonly policy: string;
  readonly limit: number;
  readonly windowMs: number;
}

const window = (policy: string, limit: number, windowMs: number): RatePolicy => Object.freeze({ policy, limit, windowMs });

// --- Hub API (API keys) ---------------------------------------------------------------------

/** Requests per API key, every Hub API and Hub MCP request counted. */
export const HUB_KEY_LIMIT = window('per-key', 120, MINUTE);
/** On top of the per-key window, for each of the two aggregate reports (REST and MCP alike). */
export const HUB_SUMMARY_LIMIT = window('opt-in-summary', 20, MINUTE);
export const HUB_SPEND_LIMIT = window('spend-by-workspace', 20, MINUTE);
/**
 * On top of the per-key window, for /playbook-opt-ins.csv: a whole-hub export is one request
 * whatever its rows (a spreadsheet refreshing every 15 minutes uses 1 of these and 1 of 120),
 * and this bounds how many whole-hub reads a key starts per minute.
 */
export const HUB_EXPORT_LIMIT = window('csv-export', 10, MINUTE);
/**
 * Conditional requests per key, answered 304 or not: a 304 is not counted against the per-key
 * window, but each is still a database read (the validator), so a key gets a ceiling — one that
 * lets a poller revalidate a full pull of a million opt-ins (2,000 pages of 500) within a minute.
 */
export const HUB_CONDITIONAL_LIMIT = window('per-key-conditional', 3_000, MINUTE);
/** Failed key checks per client address; beyond it the address gets 429 without a key check. */
export const FAILED_AUTH_LIMIT = window('failed-auth', 30, MINUTE);
/** How often counted key usage (request count, last used) is written to the database. */
export const USAGE_FLUSH_MS = 10 * SECOND;
/** The lifetimes a new key may be given, in days (or none: it never expires). */
export const KEY_LIFETIME_DAYS = Object.freeze([30, 90, 365] as const);
/** How long a rolled key's old secret keeps working, as the admin chooses: at once, an hour or a day. */
export const KEY_ROLL_GRACE_MS = Object.freeze([0, HOUR, DAY] as const);
/** The grace period a roll gets unless the admin chooses another, in the web admin and the CLI alike: a day to switch the tool over. */
export const KEY_ROLL_GRACE_DEFAULT_MS: (typeof KEY_ROLL_GRACE_MS)[number] = DAY;
/** Days of per-key request counts kept and charted: today (UTC) and the days before it. */
export const KEY_USAGE_DAYS = 30;

// --- Requests and lists (every surface) ----------------------------------------------------

/** The largest JSON or form body a request may carry (a media upload has its own limits below). */
export const JSON_BODY_MAX_BYTES = 1024 * 1024;
/** How deep objects and arrays may nest in a JSON body or tool arguments. */
export const JSON_MAX_DEPTH = 32;
/** Rows per page when a list request names no `limit`, and the largest `limit` a list accepts. */
export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 500;

// --- Connections (every surface) -----------------------------------------------------------

/** A connection must deliver a request's head (request line and headers) within this of its first byte; one that sends nothing is closed after it too. */
export const HEADERS_TIMEOUT_MS = 10 * SECOND;
/** A request's body must have arrived whole within this of its headers (an upload: UPLOAD_TIMEOUT_MS). */
export const REQUEST_BODY_TIMEOUT_MS = 30 * SECOND;
/** An upload's body (POST /media, once the caller is authenticated) must have arrived within this: a 200 MB video at about 1.9 Mbit/s. */
export const UPLOAD_TIMEOUT_MS = 15 * MINUTE;
/**
 * A kept-alive connection waiting for its next request is closed after this: longer than the 60 s
 * idle timeout of nginx's upstream keepalive and of cloud load balancers, so the proxy closes first
 * and never sends a request on a connection we are closing.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 72 * SECOND;
/** Open connections per instance; one beyond them is closed as soon as it is accepted. */
export const MAX_CONNECTIONS = 1_000;

// --- Response compression (every surface's JSON and CSV) ----------------------------------

/** Bodies shorter than this go uncompressed: the saving would not pay for the coding's header and CPU. */
export const COMPRESSION_MIN_BYTES = 1024;
/**
 * Levels per coding: the fast ones, because a full pull compresses every 500-row page on its way
 * out and must keep its throughput. On a real 250 KB page of the benchmark's data set (CPU ms on
 * one thread → ratio): zstd 1 0.52 ms → 7.3× (3: 1.1 ms → 6.7×); br 1 0.59 ms → 6.7× (4: 1.9 ms →
 * 7.6×); gzip 3 1.3 ms → 6.3× (1: 1.2 ms → 5.9×, too close to the 5× the pull promises; 6: 2.5 ms
 * → 7.3×). Measured levels over pages: `npm run bench:compression`; the pull: `npm run bench`.
 */
export const GZIP_LEVEL = 3;
export const BROTLI_LEVEL = 1;
export const ZSTD_LEVEL = 1;
/** Compressed bodies at least this long, with a strong ETag, are kept and reused while their tag stays the same. */
export const COMPRESSED_CACHE_MIN_BYTES = 64 * 1024;
/** The cache of compressed bodies holds at most this many bytes per instance (least recently used out first). */
export const COMPRESSED_CACHE_MAX_BYTES = 16 * 1024 * 1024;
/** A streamed body of known length up to this is collected and compressed in one piece (and may be cached); longer ones, or of unknown length, are compressed as they stream. */
export const COMPRESSED_COLLECT_MAX_BYTES = 8 * 1024 * 1024;

// --- Hub API reports ------------------------------------------------------------------------

/** Spend whose oldest ad-account sync is older than this is reported as stale. */
export const SPEND_STALE_AFTER_MS = 6 * HOUR;
/** Workspaces plus playbooks an instance keeps ready for embedding in opt-in rows (least recently used hub out first). */
export const HUB_CATALOG_MAX_ENTRIES = 100_000;

// --- Ad-platform spend sync -------------------------------------------------------------------

/** The Meta Graph API version every call names (the path's /vNN.0/). v26.0 is current as of 2026-07. */
export const META_GRAPH_API_VERSION = 'v26.0';
/** Days a new ad account's first sync reads back from today (account-local). */
export const SPEND_BACKFILL_DAYS = 90;
/** Days each later sync re-reads before its last complete day, because platforms restate spend (Meta: up to 28). */
export const SPEND_LOOKBACK_DAYS = Object.freeze({ meta: 28, google_ads: 30, chatgpt_ads: 28 } as const);
/** How often each connected ad account syncs by itself, and the random spread added to spread the load. */
export const SPEND_SYNC_INTERVAL_MS = HOUR;
export const SPEND_SYNC_JITTER_MS = 5 * MINUTE;
/** A sync claims its account for this long; a claim older than this (its instance died) is taken over. */
export const SPEND_SYNC_LEASE_MS = 10 * MINUTE;
/** A platform throttle shorter than this is waited out inside the sync; a longer one reschedules the account. */
export const SPEND_THROTTLE_WAIT_MAX_MS = 2 * MINUTE;
/** A token that expires within this is flagged to the admin. */
export const AD_TOKEN_EXPIRY_WARNING_MS = 7 * DAY;

// --- Google Ads ------------------------------------------------------------------------------

/** The Google Ads API version every call names (the path's /vNN/). v26 is current as of 2026-11 (Google's "latest" reference). */
export const GOOGLE_ADS_API_VERSION = 'v26';

// --- Google Business Profile reviews ------------------------------------------------------------

/** How often each connected Business Profile location's reviews sync (new and changed ones), and the spread added. */
export const REVIEW_SYNC_INTERVAL_MS = HOUR;
export const REVIEW_SYNC_JITTER_MS = 5 * MINUTE;
/** Every this long a location's reviews are read whole, which is how a review Google removed leaves our counts. */
export const REVIEW_FULL_READ_MS = 7 * DAY;
/** A review sync claims its location for this long; an older claim (its instance died) is taken over. */
export const REVIEW_SYNC_LEASE_MS = 10 * MINUTE;
/** After a failure the connection itself must mend (reconnect, approval, permission): try again this much later. */
export const REVIEW_SYNC_STUCK_RETRY_MS = DAY;

// --- Main API and main MCP server (OAuth tokens) --------------------------------------------

/** Requests (REST) and tool calls (MCP) per user and OAuth client, by the account's plan. */
export const PLAN_LIMITS = Object.freeze({ standard: 60, partner: 300 });
export const PLAN_WINDOW_MS = MINUTE;
/** How long an instance may reuse a token's checked identity: revocation reaches it within this. */
export const TOKEN_CHECK_CACHE_MS = 30 * SECOND;
/** How long an Idempotency-Key is remembered for a user and client. */
export const IDEMPOTENCY_KEY_TTL_MS = DAY;

// --- Media and publishing ------------------------------------------------------------------

const MB = 1024 * 1024;
/** Largest upload, by kind; an upload is refused (413) as soon as its stream passes the limit. */
export const IMAGE_MAX_BYTES = 10 * MB;
export const VIDEO_MAX_BYTES = 200 * MB;
/** add_media's inline base64 content, decoded (larger files go by url). */
export const BASE64_MEDIA_MAX_BYTES = 5 * MB;
/** add_media's url: the whole download must finish within this, following at most so many redirects. */
export const URL_FETCH_TIMEOUT_MS = MINUTE;
export const URL_FETCH_MAX_REDIRECTS = 3;
/** A publisher claims due posts for this long; a claim older than this is taken over by another. */
export const PUBLISH_LEASE_MS = 5 * MINUTE;
/**
 * The longest wait for one network call (publish or lookup), from the attempt's start; past it a
 * publish is `unconfirmed` (it may have been made) and abandoned: nothing more of it is sent.
 */
export const PUBLISH_TIMEOUT_MS = MINUTE;
/** Claims of a post that ended with its publisher gone (lease run out) before the post is given up. */
export const PUBLISH_MAX_CLAIMS = 5;
/**
 * An unconfirmed delivery is looked up no sooner than this after its attempt began, so that a
 * publication the network made shows in its lists (Page feed, IG media, local posts) before a
 * "none found" lets the post be sent again.
 */
export const RECONCILE_SETTLE_MS = 2 * MINUTE;
/** The lookup searches from this long before the attempt began: the network's clock and ours may differ. */
export const RECONCILE_SKEW_MS = 5 * MINUTE;
/** Waits after lookups that could not tell (the network failed or did not answer), one per failed lookup. */
export const RECONCILE_BACKOFF_MS = Object.freeze([MINUTE, 5 * MINUTE, 15 * MINUTE, HOUR, 3 * HOUR, 6 * HOUR] as const);
/** After this many lookups that could not tell, the delivery fails as "could not confirm; check the channel" (never sent blindly). */
export const RECONCILE_MAX_CHECKS = RECONCILE_BACKOFF_MS.length;
/**
 * Waits before a delivery is sent again after a send that published nothing and may succeed later:
 * the network failed on its side (its 5xx, or an error it documents as temporary) or could not be
 * reached before anything was sent; also counted: a lookup that found an unconfirmed send never landed.
 */
export const PUBLISH_RETRY_BACKOFF_MS = Object.freeze([MINUTE, 5 * MINUTE, 15 * MINUTE, HOUR] as const);
/** Sends of a delivery after the first before it fails with the network's words: the retries are bounded. */
export const PUBLISH_MAX_RETRIES = PUBLISH_RETRY_BACKOFF_MS.length;
/** How long a signed public media URL (what Instagram and Meta fetch media from) stays valid. */
export const MEDIA_URL_TTL_MS = DAY;

// --- OAuth authorization server -------------------------------------------------------------

export const ACCESS_TOKEN_TTL_S = HOUR / SECOND;
/** Authorization codes are also single-use. */
export const AUTHORIZATION_CODE_TTL_S = MINUTE / SECOND;
/** Refresh tokens rotate on every use; the grant they belong to lives as long. */
export const REFRESH_TOKEN_TTL_S = (30 * DAY) / SECOND;
/**
 * For this long after a refresh token rotated, the same client presenting it again gets the same
 * new pair (parallel workers refreshing at once); later, or from another client, it is a theft and
 * the grant is revoked.
 */
export const REFRESH_TOKEN_REUSE_LEEWAY_S = 10;
/** The browser session at the authorization server (sign in once, consent per client). */
export const OAUTH_SESSION_TTL_S = (14 * DAY) / SECOND;
/** How long a sign-in + consent interaction may take. */
export const OAUTH_INTERACTION_TTL_S = HOUR / SECOND;
/** Failed client authentications per client id and address; then even the right secret is refused. */
export const CLIENT_AUTH_FAILURE_LIMIT = window('client-auth-failures', 20, 15 * MINUTE);
/** Dynamic client registrations per client address. */
export const REGISTRATION_LIMIT = window('registrations', 30, HOUR);

// --- Sign-in (OAuth pages and web admin share the same windows) ------------------------------

/** Failed sign-ins per email and per client address; while either is full, even the right password is refused. */
export const SIGN_IN_LIMITS = Object.freeze({ perEmail: 5, perAddress: 50, windowMs: 15 * MINUTE });

// --- Web admin and embeds -------------------------------------------------------------------

export const WEB_SESSION_TTL_MS = 12 * HOUR;
/** A "Create key" form token: the one-time reveal of the new key is possible for this long. */
export const FORM_TOKEN_TTL_MS = HOUR;
/** The longest an embed token may live (`exp - iat`), and the clock skew allowed on `iat`. */
export const EMBED_TOKEN_MAX_LIFETIME_S = HOUR / SECOND;
export const EMBED_CLOCK_SKEW_S = MINUTE / SECOND;

// --- Database -------------------------------------------------------------------------------

/** PostgreSQL ends any statement after this (server side). */
export const STATEMENT_TIMEOUT_MS = 15 * SECOND;
/** A connection on which a running statement has heard nothing for this long is dropped. */
export const READ_TIMEOUT_MS = 20 * SECOND;
export const CONNECT_TIMEOUT_MS = 5 * SECOND;
/** The OAuth revocation listener asks its connection for an answer this often, and drops it when none comes within CONNECT_TIMEOUT_MS. */
export const REVOCATION_HEARTBEAT_MS = 10 * SECOND;
/** Reconnection waits of the revocation listener: the first, doubled each failure up to the last. */
export const REVOCATION_RECONNECT_MS = Object.freeze({ first: SECOND, max: 30 * SECOND });
/** The Retry-After of a 503 while the database is unreachable. */
export const DATABASE_RETRY_AFTER_S = 5;

// --- Redis (REDIS_URL) ----------------------------------------------------------------------

/** A rate-limit command unanswered this long means Redis is down: the limits are counted per instance. */
export const REDIS_COMMAND_TIMEOUT_MS = SECOND / 2;
/** While Redis is down, it is tried again at most this often. */
export const REDIS_RETRY_MS = SECOND;
/** A start waits this long for Redis before serving with per-instance limits. */
export const REDIS_START_WAIT_MS = 5 * SECOND;

// --- Process --------------------------------------------------------------------------------

/** On SIGINT/SIGTERM: in-flight requests get this long to finish. */
export const STOP_GRACE_MS = 20 * SECOND;
/** Then the final steps (usage flush, closing the database) get this long; the process exits regardless. */
export const STOP_STEPS_MS = 15 * SECOND;
/**
 * The last usage write gives up after this, whatever it waits on (a database that stopped answering
 * holds each attempt for its connect or read timeout): inside STOP_STEPS_MS, so what is lost is said
 * before the process must exit.
 */
export const USAGE_STOP_DEADLINE_MS = 10 * SECOND;
/** A repeat of the stop signal within this is taken as the same keypress (npm forwards it) and ignored. */
export const DUPLICATE_SIGNAL_MS = 3 * SECOND;

// --- ChatGPT Ads (OpenAI Ads API) -----------------------------------------------------------

/**
 * The unit of `spend` in OpenAI Ads Insights answers, as hubops reads it: 'major' is a decimal in
 * the account currency's unit (18.42 = $18.42), as the Insights reference's examples show it; 'cents'
 * and 'micros' would be whole numbers. The reference names no unit (the Advertiser API's budgets and
 * bids are `*_micros` integers), so this is our assumption, in one place: a figure that does not fit
 * it (more decimals than the currency has, an exponent, a row naming another unit) fails the sync as
 * a bad answer rather than being stored wrong.
 */
export const CHATGPT_ADS_SPEND_UNIT: 'major' | 'cents' | 'micros' = 'major';

// --- Metrics and traces (/metrics, OpenTelemetry) ---------------------------------------------

/**
 * Hub API keys with series of their own in hubops_hub_api_requests_total, per process: the first
 * ones admitted; later keys are counted under key_id="other" (5 series a key).
 */
export const METRICS_HUB_KEY_SERIES = 100;
/** The buckets of hubops_http_request_duration_seconds, in seconds (a request over the last lands in +Inf). */
export const METRICS_LATENCY_BUCKETS_S = Object.freeze([0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const);
/** What the scrape-time reads of the database (the background jobs' backlogs) may take before they are left out. */
export const METRICS_QUERY_TIMEOUT_MS = 2 * SECOND;
/** The shortest METRICS_TOKEN accepted. */
export const METRICS_TOKEN_MIN_CHARS = 16;
