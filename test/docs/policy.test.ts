// The numbers the documentation promises are the ones in src/policy.ts: every sentence below is
// built from the policy values and names the page that states it, so changing a number there fails
// here until that page says the same. The same for the documents the server generates (both
// OpenAPI documents, both MCP servers' tool lists): their sentences must be built from policy too.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import * as policy from '../../src/policy.ts';
import { hubOpenApi } from '../../src/surfaces/hub-api/plugin.ts';
import { hubOperations } from '../../src/surfaces/hub-api/operations.ts';
import { mainOperations } from '../../src/surfaces/main-api/operations.ts';
import { mainOpenApi } from '../../src/surfaces/main-api/plugin.ts';
import { mainMcpTools } from '../../src/surfaces/mcp-main/tools.ts';
import type { OperationInfo } from '../../src/surfaces/operation.ts';

const s = (ms: number) => ms / 1000;
const minutes = (ms: number) => ms / 60_000;
const hours = (ms: number) => ms / 3_600_000;
const mb = (bytes: number) => bytes / (1024 * 1024);
const kb = (bytes: number) => bytes / 1024;

const PAGES = [
  'docs/hub-api.md',
  'docs/main-api.md',
  'docs/mcp.md',
  'docs/web-admin.md',
  'docs/operations.md',
  'docs/architecture.md',
  'docs/ad-accounts.md',
  'docs/spreadsheets.md',
  'docs/channels.md',
] as const;
type Page = (typeof PAGES)[number];
const text = Object.fromEntries(
  await Promise.all(
    PAGES.map(async (page) => [page, (await readFile(new URL(`../../${page}`, import.meta.url), 'utf8')).replace(/\s+/g, ' ')]),
  ),
) as Record<Page, string>;

type PolicyName = keyof typeof policy;

/** Each promise: its page, and its sentence built from the policy values it states. */
const promises: { what: string; page: Page; covers: PolicyName[]; sentence: string }[] = [
  {
    what: 'JSON bodies',
    page: 'docs/hub-api.md',
    covers: ['JSON_MAX_DEPTH', 'JSON_BODY_MAX_BYTES'],
    sentence: `nest objects and arrays at most ${policy.JSON_MAX_DEPTH} deep (\`issues\` names \`(body)\`) and weigh at most ${mb(policy.JSON_BODY_MAX_BYTES)} MiB`,
  },
  {
    what: 'compression threshold (Hub API)',
    page: 'docs/hub-api.md',
    covers: ['COMPRESSION_MIN_BYTES'],
    sentence: `JSON bodies of at least ${kb(policy.COMPRESSION_MIN_BYTES)} KB come compressed`,
  },
  {
    what: 'compression threshold (main API)',
    page: 'docs/main-api.md',
    covers: ['COMPRESSION_MIN_BYTES'],
    sentence: `JSON bodies of at least ${kb(policy.COMPRESSION_MIN_BYTES)} KB come compressed`,
  },
  {
    what: 'compression threshold (architecture)',
    page: 'docs/architecture.md',
    covers: ['COMPRESSION_MIN_BYTES'],
    sentence: `for JSON and CSV 200s of at least ${kb(policy.COMPRESSION_MIN_BYTES)} KB`,
  },
  {
    what: 'compressed body cache',
    page: 'docs/architecture.md',
    covers: ['COMPRESSED_CACHE_MIN_BYTES', 'COMPRESSED_CACHE_MAX_BYTES'],
    sentence: `Compressed bodies of ${kb(policy.COMPRESSED_CACHE_MIN_BYTES)} KB or more are kept, keyed by coding and ETag, in an LRU cache of ${mb(policy.COMPRESSED_CACHE_MAX_BYTES)} MB per instance`,
  },
  {
    what: 'Hub API page size',
    page: 'docs/hub-api.md',
    covers: ['DEFAULT_PAGE_SIZE', 'MAX_PAGE_SIZE'],
    sentence: `${policy.DEFAULT_PAGE_SIZE} per page (limit 1–${policy.MAX_PAGE_SIZE})`,
  },
  {
    what: 'main API page size',
    page: 'docs/main-api.md',
    covers: ['DEFAULT_PAGE_SIZE', 'MAX_PAGE_SIZE'],
    sentence: `\`limit\` 1–${policy.MAX_PAGE_SIZE} (default ${policy.DEFAULT_PAGE_SIZE})`,
  },
  {
    what: 'spend staleness',
    page: 'docs/web-admin.md',
    covers: ['SPEND_STALE_AFTER_MS'],
    sentence: `stale (oldest sync older than ${hours(policy.SPEND_STALE_AFTER_MS)} h)`,
  },
  {
    what: 'hub catalog bound',
    page: 'docs/architecture.md',
    covers: ['HUB_CATALOG_MAX_ENTRIES'],
    sentence: `Bounded at ${policy.HUB_CATALOG_MAX_ENTRIES.toLocaleString('en-US')} workspaces and playbooks per instance`,
  },
  {
    what: 'Hub API per-key limit',
    page: 'docs/hub-api.md',
    covers: ['HUB_KEY_LIMIT'],
    sentence: `${policy.HUB_KEY_LIMIT.limit} requests per key in any rolling ${s(policy.HUB_KEY_LIMIT.windowMs)} s`,
  },
  {
    what: 'Hub API report limits',
    page: 'docs/hub-api.md',
    covers: ['HUB_SUMMARY_LIMIT', 'HUB_SPEND_LIMIT'],
    sentence: `in addition ${policy.HUB_SUMMARY_LIMIT.limit} per key per rolling ${s(policy.HUB_SUMMARY_LIMIT.windowMs)} s on each of \`/opt-in-summary\` and \`/spend-by-workspace\``,
  },
  {
    what: 'Hub API CSV export limit',
    page: 'docs/spreadsheets.md',
    covers: ['HUB_EXPORT_LIMIT'],
    sentence: `${policy.HUB_EXPORT_LIMIT.limit} per key per rolling ${s(policy.HUB_EXPORT_LIMIT.windowMs)} s on \`/playbook-opt-ins.csv\` (policy \`"${policy.HUB_EXPORT_LIMIT.policy}"\``,
  },
  {
    what: 'RateLimit-Policy example',
    page: 'docs/hub-api.md',
    covers: ['HUB_KEY_LIMIT', 'HUB_SUMMARY_LIMIT'],
    sentence: `"${policy.HUB_KEY_LIMIT.policy}";q=${policy.HUB_KEY_LIMIT.limit};w=${s(policy.HUB_KEY_LIMIT.windowMs)}, "${policy.HUB_SUMMARY_LIMIT.policy}";q=${policy.HUB_SUMMARY_LIMIT.limit};w=${s(policy.HUB_SUMMARY_LIMIT.windowMs)}`,
  },
  {
    what: 'Hub MCP report limits',
    page: 'docs/mcp.md',
    covers: ['HUB_SPEND_LIMIT'],
    sentence: `\`get_opt_in_summary\` and \`get_spend_by_workspace\` are also limited to ${policy.HUB_SPEND_LIMIT.limit} calls a minute each`,
  },
  {
    what: 'Hub API conditional ceiling',
    page: 'docs/hub-api.md',
    covers: ['HUB_CONDITIONAL_LIMIT'],
    sentence: `at most ${policy.HUB_CONDITIONAL_LIMIT.limit.toLocaleString('en-US')} conditional requests per rolling ${s(policy.HUB_CONDITIONAL_LIMIT.windowMs)} s (policy \`"${policy.HUB_CONDITIONAL_LIMIT.policy}"\``,
  },
  {
    what: 'failed-auth limit',
    page: 'docs/hub-api.md',
    covers: ['FAILED_AUTH_LIMIT'],
    sentence: `Failed authentication** is limited to ${policy.FAILED_AUTH_LIMIT.limit} per client address per rolling ${s(policy.FAILED_AUTH_LIMIT.windowMs)} s`,
  },
  {
    what: 'failed-auth limit on the main API',
    page: 'docs/main-api.md',
    covers: ['FAILED_AUTH_LIMIT'],
    sentence: `${policy.FAILED_AUTH_LIMIT.limit} per client address per rolling ${s(policy.FAILED_AUTH_LIMIT.windowMs)} s, then 429`,
  },
  {
    what: 'usage flush',
    page: 'docs/hub-api.md',
    covers: ['USAGE_FLUSH_MS'],
    sentence: `written in one statement per instance every ${s(policy.USAGE_FLUSH_MS)} s and on shutdown`,
  },
  {
    what: 'plan limits',
    page: 'docs/main-api.md',
    covers: ['PLAN_LIMITS', 'PLAN_WINDOW_MS'],
    sentence: `${policy.PLAN_LIMITS.standard} requests per ${policy.PLAN_WINDOW_MS === 60_000 ? 'minute' : `${s(policy.PLAN_WINDOW_MS)} s`} per user and client on the Standard plan, ${policy.PLAN_LIMITS.partner} on Partner`,
  },
  {
    what: 'MCP plan limits',
    page: 'docs/mcp.md',
    covers: ['PLAN_LIMITS'],
    sentence: `(${policy.PLAN_LIMITS.standard} a minute on Standard, ${policy.PLAN_LIMITS.partner} on Partner, the same window as the REST API)`,
  },
  {
    what: 'token check cache',
    page: 'docs/main-api.md',
    covers: ['TOKEN_CHECK_CACHE_MS'],
    sentence: `cached on that instance for at most ${s(policy.TOKEN_CHECK_CACHE_MS)} s`,
  },
  {
    what: 'idempotency',
    page: 'docs/main-api.md',
    covers: ['IDEMPOTENCY_KEY_TTL_MS'],
    sentence: `key and body within ${hours(policy.IDEMPOTENCY_KEY_TTL_MS)} h returns the first result`,
  },
  {
    what: 'token lifetimes',
    page: 'docs/main-api.md',
    covers: ['ACCESS_TOKEN_TTL_S', 'AUTHORIZATION_CODE_TTL_S'],
    sentence: `access tokens live ${policy.ACCESS_TOKEN_TTL_S / 3600} hour; codes ${policy.AUTHORIZATION_CODE_TTL_S} s and single-use`,
  },
  {
    what: 'refresh token lifetime',
    page: 'docs/main-api.md',
    covers: ['REFRESH_TOKEN_TTL_S'],
    sentence: `rotate on every use and live ${policy.REFRESH_TOKEN_TTL_S / 86_400} days`,
  },
  {
    what: 'refresh token reuse leeway',
    page: 'docs/main-api.md',
    covers: ['REFRESH_TOKEN_REUSE_LEEWAY_S'],
    sentence: `a refresh token used again by its own client within ${policy.REFRESH_TOKEN_REUSE_LEEWAY_S} s of its rotation`,
  },
  {
    what: 'refresh token reuse leeway (the Refresh section)',
    page: 'docs/main-api.md',
    covers: ['REFRESH_TOKEN_REUSE_LEEWAY_S'],
    sentence: `except from the same client within ${policy.REFRESH_TOKEN_REUSE_LEEWAY_S} s of its rotation`,
  },
  {
    what: 'client authentication limit',
    page: 'docs/main-api.md',
    covers: ['CLIENT_AUTH_FAILURE_LIMIT'],
    sentence: `${policy.CLIENT_AUTH_FAILURE_LIMIT.limit} failed client authentications per client id and client address in ${minutes(policy.CLIENT_AUTH_FAILURE_LIMIT.windowMs)} minutes`,
  },
  {
    what: 'registration limit',
    page: 'docs/main-api.md',
    covers: ['REGISTRATION_LIMIT'],
    sentence: `${policy.REGISTRATION_LIMIT.limit} registrations per client address per ${policy.REGISTRATION_LIMIT.windowMs === 3_600_000 ? 'hour' : `${minutes(policy.REGISTRATION_LIMIT.windowMs)} minutes`}`,
  },
  {
    what: 'sign-in throttle',
    page: 'docs/main-api.md',
    covers: ['SIGN_IN_LIMITS'],
    sentence: `at most ${policy.SIGN_IN_LIMITS.perEmail} failed attempts per email and ${policy.SIGN_IN_LIMITS.perAddress} per address in ${minutes(policy.SIGN_IN_LIMITS.windowMs)} minutes`,
  },
  {
    what: 'web sign-in throttle',
    page: 'docs/web-admin.md',
    covers: ['SIGN_IN_LIMITS'],
    sentence: `(${policy.SIGN_IN_LIMITS.perEmail} failures per email, ${policy.SIGN_IN_LIMITS.perAddress} per address, per ${minutes(policy.SIGN_IN_LIMITS.windowMs)} minutes)`,
  },
  {
    what: 'web session',
    page: 'docs/web-admin.md',
    covers: ['WEB_SESSION_TTL_MS'],
    sentence: `it lasts ${hours(policy.WEB_SESSION_TTL_MS)} hours`,
  },
  {
    what: 'embed token lifetime',
    page: 'docs/web-admin.md',
    covers: ['EMBED_TOKEN_MAX_LIFETIME_S'],
    sentence: `\`exp\` at most ${policy.EMBED_TOKEN_MAX_LIFETIME_S / 3600} hour ahead`,
  },
  {
    what: 'key lifetimes',
    page: 'docs/web-admin.md',
    covers: ['KEY_LIFETIME_DAYS'],
    sentence: `when the key expires: never, ${policy.KEY_LIFETIME_DAYS.slice(0, -1).join(', ')} or ${policy.KEY_LIFETIME_DAYS.at(-1)} days`,
  },
  {
    what: 'key roll grace',
    page: 'docs/web-admin.md',
    covers: ['KEY_ROLL_GRACE_MS'],
    sentence: `the grace period you choose, ${policy.KEY_ROLL_GRACE_MS.slice(0, -1).map(hours).join(', ')} or ${hours(policy.KEY_ROLL_GRACE_MS.at(-1)!)} hours`,
  },
  {
    what: 'key roll grace default (web admin and CLI alike)',
    page: 'docs/web-admin.md',
    covers: ['KEY_ROLL_GRACE_DEFAULT_MS'],
    sentence: `${hours(policy.KEY_ROLL_GRACE_DEFAULT_MS)} hours unless you choose another, as with \`hubops keys roll\``,
  },
  {
    what: 'key usage chart',
    page: 'docs/web-admin.md',
    covers: ['KEY_USAGE_DAYS'],
    sentence: `requests per UTC day over the last ${policy.KEY_USAGE_DAYS} days`,
  },
  {
    what: 'database outage',
    page: 'docs/hub-api.md',
    covers: ['DATABASE_RETRY_AFTER_S', 'STATEMENT_TIMEOUT_MS', 'READ_TIMEOUT_MS'],
    sentence: `with \`Retry-After: ${policy.DATABASE_RETRY_AFTER_S}\`; a statement ends after ${s(policy.STATEMENT_TIMEOUT_MS)} s server-side, and a connection on which a statement has heard nothing for ${s(policy.READ_TIMEOUT_MS)} s is dropped`,
  },
  {
    what: 'upload sizes',
    page: 'docs/main-api.md',
    covers: ['IMAGE_MAX_BYTES', 'VIDEO_MAX_BYTES'],
    sentence: `images up to ${mb(policy.IMAGE_MAX_BYTES)} MB, videos up to ${mb(policy.VIDEO_MAX_BYTES)} MB`,
  },
  {
    what: 'add_media base64',
    page: 'docs/mcp.md',
    covers: ['BASE64_MEDIA_MAX_BYTES'],
    sentence: `\`base64\` content up to ${mb(policy.BASE64_MEDIA_MAX_BYTES)} MB`,
  },
  {
    what: 'add_media url',
    page: 'docs/mcp.md',
    covers: ['URL_FETCH_MAX_REDIRECTS', 'URL_FETCH_TIMEOUT_MS'],
    sentence: `at most ${policy.URL_FETCH_MAX_REDIRECTS} redirects, each checked again; the body streams into the media service (type sniffed from the bytes, ${mb(policy.IMAGE_MAX_BYTES)} MB images / ${mb(policy.VIDEO_MAX_BYTES)} MB videos, refused as soon as it passes) within ${s(policy.URL_FETCH_TIMEOUT_MS)} s`,
  },
  {
    what: 'publisher lease',
    page: 'docs/main-api.md',
    covers: ['PUBLISH_LEASE_MS'],
    sentence: `under a ${minutes(policy.PUBLISH_LEASE_MS)}-minute lease`,
  },
  {
    what: 'publisher lease (channels)',
    page: 'docs/channels.md',
    covers: ['PUBLISH_LEASE_MS'],
    sentence: `posts whose publisher's ${minutes(policy.PUBLISH_LEASE_MS)}-minute lease ran out`,
  },
  {
    what: 'publish timeout',
    page: 'docs/channels.md',
    covers: ['PUBLISH_TIMEOUT_MS'],
    sentence: `\`unconfirmed\` when no answer came within ${s(policy.PUBLISH_TIMEOUT_MS)} s`,
  },
  {
    what: 'publisher give-up',
    page: 'docs/channels.md',
    covers: ['PUBLISH_MAX_CLAIMS'],
    sentence: `A post whose publishers died while publishing it ${policy.PUBLISH_MAX_CLAIMS} times in a row is given up`,
  },
  {
    what: 'reconciliation settle delay and skew',
    page: 'docs/channels.md',
    covers: ['RECONCILE_SETTLE_MS', 'RECONCILE_SKEW_MS'],
    sentence: `from ${minutes(policy.RECONCILE_SKEW_MS)} minutes before the attempt began (the network's clock and ours may differ). - The lookup waits until ${minutes(policy.RECONCILE_SETTLE_MS)} minutes after the attempt began`,
  },
  {
    what: 'reconciliation backoff and give-up',
    page: 'docs/channels.md',
    covers: ['RECONCILE_BACKOFF_MS', 'RECONCILE_MAX_CHECKS'],
    sentence: `looked up again after ${policy.RECONCILE_BACKOFF_MS.slice(0, policy.RECONCILE_MAX_CHECKS - 1)
      .map(minutes)
      .join(', ')} minutes; after ${policy.RECONCILE_MAX_CHECKS} lookups that could not tell it fails as \`not_confirmed\``,
  },
  {
    what: 'publish retries after transient failures',
    page: 'docs/channels.md',
    covers: ['PUBLISH_RETRY_BACKOFF_MS', 'PUBLISH_MAX_RETRIES'],
    sentence: `sent again after ${policy.PUBLISH_RETRY_BACKOFF_MS.map(minutes).join(', ')} minutes, at most ${policy.PUBLISH_MAX_RETRIES} times`,
  },
  {
    what: 'signed media URL lifetime',
    page: 'docs/channels.md',
    covers: ['MEDIA_URL_TTL_MS'],
    sentence: `It is valid for ${hours(policy.MEDIA_URL_TTL_MS)} hours from when the post is sent`,
  },
  {
    what: 'channel token expiry warning',
    page: 'docs/channels.md',
    covers: ['AD_TOKEN_EXPIRY_WARNING_MS'],
    sentence: `**token's expiry date**, flagged ${policy.AD_TOKEN_EXPIRY_WARNING_MS / 86_400_000} days before it`,
  },
  {
    what: 'duplicate signal',
    page: 'docs/operations.md',
    covers: ['DUPLICATE_SIGNAL_MS'],
    sentence: `second signal within ${s(policy.DUPLICATE_SIGNAL_MS)} s of the first is ignored`,
  },
  {
    what: 'Meta Graph API version',
    page: 'docs/ad-accounts.md',
    covers: ['META_GRAPH_API_VERSION'],
    sentence: `(Facebook and Instagram ads, Graph API ${policy.META_GRAPH_API_VERSION})`,
  },
  {
    what: 'Google Ads API version',
    page: 'docs/ad-accounts.md',
    covers: ['GOOGLE_ADS_API_VERSION'],
    sentence: `**Google Ads** (API ${policy.GOOGLE_ADS_API_VERSION})`,
  },
  {
    what: 'spend backfill and lookback',
    page: 'docs/ad-accounts.md',
    covers: ['SPEND_BACKFILL_DAYS', 'SPEND_LOOKBACK_DAYS'],
    sentence: `The first sync of an account backfills ${policy.SPEND_BACKFILL_DAYS} days. Each later run re-reads from the last complete day minus the lookback (Meta: ${policy.SPEND_LOOKBACK_DAYS.meta} days, because Meta restates spend that far back; Google Ads: ${policy.SPEND_LOOKBACK_DAYS.google_ads} days; ChatGPT Ads: ${policy.SPEND_LOOKBACK_DAYS.chatgpt_ads} days) to today`,
  },
  {
    what: 'review sync schedule',
    page: 'docs/channels.md',
    covers: ['REVIEW_SYNC_INTERVAL_MS', 'REVIEW_SYNC_JITTER_MS', 'REVIEW_SYNC_LEASE_MS'],
    sentence: `Each connected location's reviews sync every ${hours(policy.REVIEW_SYNC_INTERVAL_MS)} hour, plus up to ${minutes(policy.REVIEW_SYNC_JITTER_MS)} minutes of spread, on whichever instance claims it first, under a ${minutes(policy.REVIEW_SYNC_LEASE_MS)}-minute lease`,
  },
  {
    what: 'review full reads and stuck retries',
    page: 'docs/channels.md',
    covers: ['REVIEW_FULL_READ_MS', 'REVIEW_SYNC_STUCK_RETRY_MS'],
    sentence: `Every ${hours(policy.REVIEW_FULL_READ_MS) / 24} days a location is read whole, and a review Google no longer lists leaves the counts. Failures only a person mends (needs reconnect, missing permission, API access not yet approved) are tried again every ${hours(policy.REVIEW_SYNC_STUCK_RETRY_MS)} hours`,
  },
  {
    what: 'spend sync schedule',
    page: 'docs/ad-accounts.md',
    covers: ['SPEND_SYNC_INTERVAL_MS', 'SPEND_SYNC_JITTER_MS', 'SPEND_SYNC_LEASE_MS'],
    sentence: `Each connected account syncs every ${hours(policy.SPEND_SYNC_INTERVAL_MS)} hour, plus up to ${minutes(policy.SPEND_SYNC_JITTER_MS)} minutes of jitter, and at once after *Sync now*. Any instance may run a sync; one account is synced by one instance at a time, under a ${minutes(policy.SPEND_SYNC_LEASE_MS)}-minute lease`,
  },
  {
    what: 'throttle wait',
    page: 'docs/ad-accounts.md',
    covers: ['SPEND_THROTTLE_WAIT_MAX_MS'],
    sentence: `hubops waits up to ${minutes(policy.SPEND_THROTTLE_WAIT_MAX_MS)} minutes and resumes; a longer wait reschedules the account`,
  },
  {
    what: 'token expiry warning',
    page: 'docs/ad-accounts.md',
    covers: ['AD_TOKEN_EXPIRY_WARNING_MS'],
    sentence: `**the token's expiry date**, flagged ${policy.AD_TOKEN_EXPIRY_WARNING_MS / 86_400_000} days before it`,
  },
  {
    what: 'spend staleness (ad accounts)',
    page: 'docs/ad-accounts.md',
    covers: ['SPEND_STALE_AFTER_MS'],
    sentence: `\`stale\` (oldest sync older than ${hours(policy.SPEND_STALE_AFTER_MS)} h)`,
  },
  {
    what: 'slow clients: head and silent connections',
    page: 'docs/operations.md',
    covers: ['HEADERS_TIMEOUT_MS'],
    sentence: `a new connection sends nothing, or a request's head (request line and headers) is not in within ${s(policy.HEADERS_TIMEOUT_MS)} s of its first byte | ${s(policy.HEADERS_TIMEOUT_MS)} s |`,
  },
  {
    what: 'slow clients: body',
    page: 'docs/operations.md',
    covers: ['REQUEST_BODY_TIMEOUT_MS'],
    sentence: `a request's body has not arrived whole ${s(policy.REQUEST_BODY_TIMEOUT_MS)} s after its headers | ${s(policy.REQUEST_BODY_TIMEOUT_MS)} s |`,
  },
  {
    what: 'slow clients: upload',
    page: 'docs/operations.md',
    covers: ['UPLOAD_TIMEOUT_MS', 'VIDEO_MAX_BYTES'],
    sentence: `has not arrived whole ${minutes(policy.UPLOAD_TIMEOUT_MS)} minutes after its headers | ${minutes(policy.UPLOAD_TIMEOUT_MS)} minutes (a ${mb(policy.VIDEO_MAX_BYTES)} MB video at about ${(Math.round((policy.VIDEO_MAX_BYTES * 8) / (policy.UPLOAD_TIMEOUT_MS / 1000) / 1e5) / 10).toFixed(1)} Mbit/s)`,
  },
  {
    what: 'slow clients: upload (main API)',
    page: 'docs/main-api.md',
    covers: ['UPLOAD_TIMEOUT_MS'],
    sentence: `the whole body must arrive within ${minutes(policy.UPLOAD_TIMEOUT_MS)} minutes of the request's headers`,
  },
  {
    what: 'slow clients: keep-alive',
    page: 'docs/operations.md',
    covers: ['KEEP_ALIVE_TIMEOUT_MS'],
    sentence: `a kept-alive connection waits for its next request | ${s(policy.KEEP_ALIVE_TIMEOUT_MS)} s`,
  },
  {
    what: 'connections per instance',
    page: 'docs/operations.md',
    covers: ['MAX_CONNECTIONS'],
    sentence: `open connections per instance | ${policy.MAX_CONNECTIONS.toLocaleString('en-US')} |`,
  },
  {
    what: 'usage write at stop',
    page: 'docs/operations.md',
    covers: ['USAGE_STOP_DEADLINE_MS'],
    sentence: `Its last usage write starts as soon as in-flight requests are done and gives up after ${s(policy.USAGE_STOP_DEADLINE_MS)} s`,
  },
  {
    what: 'stop deadline',
    page: 'docs/operations.md',
    covers: ['STOP_GRACE_MS', 'STOP_STEPS_MS'],
    sentence: `A stop that hangs (a database that stopped answering) ends after ${s(policy.STOP_GRACE_MS + policy.STOP_STEPS_MS)} s regardless`,
  },
  {
    what: 'ChatGPT Ads spend unit',
    page: 'docs/ad-accounts.md',
    covers: ['CHATGPT_ADS_SPEND_UNIT'],
    sentence: `reads ChatGPT Ads spend as ${{ major: 'a decimal amount in the account currency', cents: 'an integer of cents', micros: 'an integer of micros' }[policy.CHATGPT_ADS_SPEND_UNIT]}`,
  },
  {
    what: 'Redis outage',
    page: 'docs/operations.md',
    covers: ['REDIS_COMMAND_TIMEOUT_MS', 'REDIS_RETRY_MS'],
    sentence: `not answering within ${policy.REDIS_COMMAND_TIMEOUT_MS} ms), no limit is lifted: each instance counts the windows on its own until Redis answers again (tried at most every ${s(policy.REDIS_RETRY_MS)} s)`,
  },
  {
    what: 'Redis at start',
    page: 'docs/operations.md',
    covers: ['REDIS_START_WAIT_MS'],
    sentence: `A server started while Redis is down waits ${s(policy.REDIS_START_WAIT_MS)} s for it`,
  },
  {
    what: 'metrics: Hub API keys with series of their own',
    page: 'docs/operations.md',
    covers: ['METRICS_HUB_KEY_SERIES'],
    sentence: `The first ${policy.METRICS_HUB_KEY_SERIES} keys an instance admits get series of their own`,
  },
  {
    what: 'metrics: latency buckets',
    page: 'docs/operations.md',
    covers: ['METRICS_LATENCY_BUCKETS_S'],
    sentence: `histogram's buckets are ${policy.METRICS_LATENCY_BUCKETS_S.slice(0, -1).join(', ')} and ${policy.METRICS_LATENCY_BUCKETS_S.at(-1)} seconds`,
  },
  {
    what: 'metrics: scrape-time reads',
    page: 'docs/operations.md',
    covers: ['METRICS_QUERY_TIMEOUT_MS'],
    sentence: `its reads took over ${s(policy.METRICS_QUERY_TIMEOUT_MS)} s`,
  },
  {
    what: 'metrics: token length',
    page: 'docs/operations.md',
    covers: ['METRICS_TOKEN_MIN_CHARS'],
    sentence: `(${policy.METRICS_TOKEN_MIN_CHARS} to 512 characters without spaces`,
  },
];

/** Internal timings with no sentence in the docs: documented in src/policy.ts only. */
// Compression levels are tuning, measured in bench/ (bench/compression-levels.ts), not a promise.
const UNPROMISED: PolicyName[] = [
  'CONNECT_TIMEOUT_MS',
  'REVOCATION_HEARTBEAT_MS',
  'REVOCATION_RECONNECT_MS',
  'OAUTH_SESSION_TTL_S',
  'OAUTH_INTERACTION_TTL_S',
  'FORM_TOKEN_TTL_MS',
  'EMBED_CLOCK_SKEW_S',
  'GZIP_LEVEL',
  'BROTLI_LEVEL',
  'ZSTD_LEVEL',
  'COMPRESSED_COLLECT_MAX_BYTES',
];

test('every number the docs promise is the one in src/policy.ts', () => {
  // docs/hub-api.md states one number "on each of" the two reports.
  assert.deepEqual(policy.HUB_SPEND_LIMIT.limit, policy.HUB_SUMMARY_LIMIT.limit, 'the docs give both report limits as one number');
  const missing = promises.filter(({ page, sentence }) => !text[page].includes(sentence));
  assert.deepEqual(
    missing.map(({ what, page, sentence }) => `${what}: ${page} should say "${sentence}"`),
    [],
  );
});

test('every policy value is either promised in the docs or listed as internal', () => {
  const covered = new Set<string>([...promises.flatMap((p) => p.covers), ...UNPROMISED]);
  const values = Object.entries(policy)
    .filter(([, value]) => typeof value !== 'function')
    .map(([name]) => name);
  assert.deepEqual(
    values.filter((name) => !covered.has(name)),
    [],
  );
});

/** Every string in a value (descriptions, summaries, examples), one per line. */
function strings(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(strings).join('\n');
  if (typeof value === 'object' && value !== null) return Object.values(value).map(strings).join('\n');
  return '';
}

/** A tool list as tools/list describes it: each tool's MCP description and its schemas. */
const toolText = (operations: readonly OperationInfo[]) =>
  strings(operations.map((op) => ({ description: op.mcp?.description ?? op.description, input: op.input, output: op.output })));

const config = loadConfig({});
const generated = {
  'Hub API OpenAPI': strings(hubOpenApi(config, 'test')),
  'main API OpenAPI': strings(mainOpenApi(config, 'test', mainOperations)),
  'Hub MCP tools/list': toolText(hubOperations),
  'main MCP tools/list': toolText(mainMcpTools),
};
type Generated = keyof typeof generated;

/** Each promise of a generated document, built from the policy values it states. */
const generatedPromises: { what: string; in: Generated[]; sentence: string }[] = [
  {
    what: 'Hub API limits',
    in: ['Hub API OpenAPI'],
    sentence: `${policy.HUB_KEY_LIMIT.limit} requests per key in any rolling ${s(policy.HUB_KEY_LIMIT.windowMs)} s, and in addition ${policy.HUB_SUMMARY_LIMIT.limit} per key per ${s(policy.HUB_SUMMARY_LIMIT.windowMs)} s on each of /opt-in-summary and /spend-by-workspace`,
  },
  {
    what: 'Hub API conditional ceiling',
    in: ['Hub API OpenAPI'],
    sentence: `conditional requests have a ceiling of their own, ${policy.HUB_CONDITIONAL_LIMIT.limit} per key per ${s(policy.HUB_CONDITIONAL_LIMIT.windowMs)} s`,
  },
  {
    what: 'Hub API RateLimit-Policy example',
    in: ['Hub API OpenAPI'],
    sentence: `\`"${policy.HUB_KEY_LIMIT.policy}";q=${policy.HUB_KEY_LIMIT.limit};w=${s(policy.HUB_KEY_LIMIT.windowMs)}\``,
  },
  {
    what: 'Hub API report limits',
    in: ['Hub API OpenAPI', 'Hub MCP tools/list'],
    sentence: `Limited to ${policy.HUB_SUMMARY_LIMIT.limit} requests per minute per key.`,
  },
  {
    what: 'hub-wide report tools',
    in: ['main MCP tools/list'],
    sentence: `Limited to ${policy.HUB_SPEND_LIMIT.limit} requests per minute per user and client.`,
  },
  {
    what: 'compression threshold',
    in: ['Hub API OpenAPI', 'main API OpenAPI'],
    sentence: `bodies above about ${kb(policy.COMPRESSION_MIN_BYTES)} KB come compressed`,
  },
  {
    what: 'spend freshness',
    in: ['Hub API OpenAPI', 'Hub MCP tools/list', 'main MCP tools/list'],
    sentence: `stale: asOf is older than ${hours(policy.SPEND_STALE_AFTER_MS)} hours`,
  },
  {
    what: 'spend ETag',
    in: ['Hub API OpenAPI', 'Hub MCP tools/list'],
    sentence: `freshness (a sync ${hours(policy.SPEND_STALE_AFTER_MS)} hours old turns stale)`,
  },
  { what: 'page size', in: ['main API OpenAPI'], sentence: `\`limit\` (1–${policy.MAX_PAGE_SIZE}, default ${policy.DEFAULT_PAGE_SIZE})` },
  {
    what: 'page size per list',
    in: ['Hub API OpenAPI', 'main API OpenAPI', 'Hub MCP tools/list', 'main MCP tools/list'],
    sentence: `per page, 1 to ${policy.MAX_PAGE_SIZE}.`,
  },
  { what: 'access token lifetime', in: ['main API OpenAPI'], sentence: `Access tokens live ${policy.ACCESS_TOKEN_TTL_S / 3600} hour` },
  {
    what: 'plan limits',
    in: ['main API OpenAPI'],
    sentence: `${policy.PLAN_LIMITS.standard} requests per ${policy.PLAN_WINDOW_MS === 60_000 ? 'minute' : `${s(policy.PLAN_WINDOW_MS)} s`} per user and client on the Standard plan, ${policy.PLAN_LIMITS.partner} on Partner`,
  },
  {
    what: 'main API RateLimit-Policy example',
    in: ['main API OpenAPI'],
    sentence: `\`"per-user-client";q=${policy.PLAN_LIMITS.standard};w=${s(policy.PLAN_WINDOW_MS)}\``,
  },
  {
    what: 'create_post idempotency',
    in: ['main API OpenAPI'],
    sentence: `the same key and body within ${hours(policy.IDEMPOTENCY_KEY_TTL_MS)} hours returns the first post`,
  },
  {
    what: 'upload idempotency',
    in: ['main API OpenAPI'],
    sentence: `the same key with the same file within ${hours(policy.IDEMPOTENCY_KEY_TTL_MS)} hours returns the first asset`,
  },
  {
    what: 'upload sizes',
    in: ['main API OpenAPI'],
    sentence: `images up to ${mb(policy.IMAGE_MAX_BYTES)} MB, videos up to ${mb(policy.VIDEO_MAX_BYTES)} MB`,
  },
  {
    what: 'upload_media sizes',
    in: ['main API OpenAPI'],
    sentence: `an image (JPEG, PNG, WebP, GIF; up to ${mb(policy.IMAGE_MAX_BYTES)} MB) or a video (MP4, MOV; up to ${mb(policy.VIDEO_MAX_BYTES)} MB)`,
  },
  {
    what: 'add_media sizes',
    in: ['main MCP tools/list'],
    sentence: `images up to ${mb(policy.IMAGE_MAX_BYTES)} MB, videos up to ${mb(policy.VIDEO_MAX_BYTES)} MB`,
  },
  {
    what: 'add_media url',
    in: ['main MCP tools/list'],
    sentence: `at most ${policy.URL_FETCH_MAX_REDIRECTS} redirects, ${s(policy.URL_FETCH_TIMEOUT_MS)} s;`,
  },
  { what: 'add_media base64', in: ['main MCP tools/list'], sentence: `at most ${mb(policy.BASE64_MEDIA_MAX_BYTES)} MB decoded` },
];

test('every number the OpenAPI documents and the MCP tool lists promise is the one in src/policy.ts', () => {
  const missing = generatedPromises.flatMap(({ what, in: documents, sentence }) =>
    documents
      .filter((document) => !generated[document].includes(sentence))
      .map((document) => `${what}: the ${document} should say "${sentence}"`),
  );
  assert.deepEqual(missing, []);
});
