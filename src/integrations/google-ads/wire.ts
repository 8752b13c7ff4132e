// Google Ads' wire format where the client and the sandbox must agree: written once, from Google's
// documentation, so the sandbox cannot drift from what the client expects of the real API. The
// sandbox parses the GAQL it is sent on its own (it refuses what Google would refuse); these are
// only the names both sides spell the same.

/**
 * The `@type` of the error detail that carries Google Ads' own error codes (google.rpc.Status
 * .details; "Understand API errors" and errors.proto, GoogleAdsFailure). Any API version's.
 */
export const googleAdsFailureType = (version: string) => `type.googleapis.com/google.ads.googleads.${version}.errors.GoogleAdsFailure`;
export const RETRY_INFO_TYPE = 'type.googleapis.com/google.rpc.RetryInfo';

/** The canonical gRPC status names and the HTTP codes Google maps them to (google.rpc.Code; "Understand API errors"). */
export const RPC_HTTP_STATUS = {
  INVALID_ARGUMENT: 400,
  FAILED_PRECONDITION: 400,
  OUT_OF_RANGE: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  ABORTED: 409,
  ALREADY_EXISTS: 409,
  RESOURCE_EXHAUSTED: 429,
  CANCELLED: 499,
  UNKNOWN: 500,
  INTERNAL: 500,
  DATA_LOSS: 500,
  UNIMPLEMENTED: 501,
  UNAVAILABLE: 503,
  DEADLINE_EXCEEDED: 504,
} as const;
export type RpcStatus = keyof typeof RPC_HTTP_STATUS;

/** One entry of GoogleAdsFailure.errors, as REST writes it (lowerCamelCase JSON of errors.proto GoogleAdsError). */
export interface GoogleAdsErrorJson {
  /** One key, the error's family, and its enum value: `{ "authorizationError": "USER_PERMISSION_DENIED" }`. */
  errorCode: Record<string, string>;
  message: string;
  trigger?: { stringValue?: string };
  location?: unknown;
  /** ErrorDetails: `quotaErrorDetails: { rateScope, rateName, retryDelay: "30s" }` for a quota error. */
  details?: { quotaErrorDetails?: { rateScope?: string; rateName?: string; retryDelay?: string } };
}

/** google.rpc.Status in REST: `{ "error": { code, message, status, details } }`. */
export interface GoogleStatusJson {
  code: number;
  message: string;
  status: RpcStatus;
  details?: ({ '@type': string; errors?: GoogleAdsErrorJson[]; requestId?: string } | { '@type': string; retryDelay?: string })[];
}

/** The columns we read of a customer (GAQL resource `customer`), in the order we select them. */
const CUSTOMER_FIELDS = [
  'customer.id',
  'customer.descriptive_name',
  'customer.currency_code',
  'customer.time_zone',
  'customer.manager',
  'customer.status',
] as const;

/** The same of every account under a manager (GAQL resource `customer_client`). */
const CUSTOMER_CLIENT_FIELDS = [
  'customer_client.id',
  'customer_client.descriptive_name',
  'customer_client.currency_code',
  'customer_client.time_zone',
  'customer_client.manager',
  'customer_client.status',
  'customer_client.level',
] as const;

/** Hourly spend per ad group (GAQL resource `ad_group`): the issue's query. */
const SPEND_FIELDS = [
  'segments.date',
  'segments.hour',
  'campaign.id',
  'campaign.name',
  'ad_group.id',
  'ad_group.name',
  'metrics.cost_micros',
] as const;

/**
 * Campaign types whose cost an `ad_group` query does not hold, read from `campaign` instead.
 * Performance Max has no ad groups: "querying resources such as ad_group or ad_group_ad won't
 * return any data for your Performance Max campaigns" (Performance Max › Reporting). A Smart
 * campaign has one automatic ad group, and "Smart campaign metrics are available from the
 * campaign resource" (Smart campaigns › Reporting). Each type is read by exactly one of the two
 * queries: the ad_group query leaves these out (NOT IN), the campaign query takes only these (IN),
 * so no cost is counted twice whatever Google's ad_group rows hold for them.
 */
export const CAMPAIGN_LEVEL_CHANNEL_TYPES: readonly string[] = ['PERFORMANCE_MAX', 'SMART'];
const channelTypes = `(${CAMPAIGN_LEVEL_CHANNEL_TYPES.map((t) => `'${t}'`).join(', ')})`;

/** Hourly spend per campaign (GAQL resource `campaign`), for the campaign types above. */
const CAMPAIGN_SPEND_FIELDS = [
  'segments.date',
  'segments.hour',
  'campaign.id',
  'campaign.name',
  'campaign.advertising_channel_type',
  'metrics.cost_micros',
] as const;

/**
 * The ad set a campaign-level row is kept under: the campaign stands in for its own ad set, so its
 * name (and a [ws:…] token in it) attributes the spend. Not digits, so never an ad group's id.
 */
export const campaignAdSetId = (campaignId: string) => `campaign:${campaignId}`;

export const customerQuery = () => `SELECT ${CUSTOMER_FIELDS.join(', ')} FROM customer`;
/**
 * Every account below a manager, at every depth: "All direct and indirect client customers are
 * included, as well as the manager itself" (customer_client reference), so one query covers the
 * whole hierarchy and `level` says how deep each is; the manager itself (level 0) is left out.
 */
export const customerClientQuery = () => `SELECT ${CUSTOMER_CLIENT_FIELDS.join(', ')} FROM customer_client WHERE customer_client.level > 0`;
export const spendQuery = (since: string, until: string) =>
  `SELECT ${SPEND_FIELDS.join(', ')} FROM ad_group WHERE segments.date BETWEEN '${since}' AND '${until}' AND campaign.advertising_channel_type NOT IN ${channelTypes}`;
export const campaignSpendQuery = (since: string, until: string) =>
  `SELECT ${CAMPAIGN_SPEND_FIELDS.join(', ')} FROM campaign WHERE segments.date BETWEEN '${since}' AND '${until}' AND campaign.advertising_channel_type IN ${channelTypes}`;

/**
 * A google.protobuf.Duration in its JSON form ("30s", "1.5s", "0.250s": seconds with up to nine
 * fraction digits and the suffix "s"; protobuf JSON mapping) → milliseconds, rounded up; undefined
 * for anything else.
 */
export function durationMs(text: unknown): number | undefined {
  if (typeof text !== 'string') return undefined;
  const m = /^(\d{1,12})(?:\.(\d{1,9}))?s$/.exec(text);
  if (!m) return undefined;
  return Number(m[1]) * 1000 + Math.ceil(Number((m[2] ?? '').padEnd(9, '0')) / 1_000_000);
}
