import type { ColumnType, Generated } from 'kysely';

// Row types of the tables in migrations/, as Kysely sees them. Timestamps come back as Date,
// bigint columns as string (pg's default), dates as 'YYYY-MM-DD' text (parser set in database.ts).

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type Int8 = ColumnType<string, string | number | bigint, string | number | bigint>;
// Columns with a database default: optional on insert.
type DefaultTimestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type DefaultInt8 = ColumnType<string, string | number | bigint | undefined, string | number | bigint>;
type DefaultJson<T> = ColumnType<T, string | undefined, string>;
// Nullable columns added later: optional on insert.
type Nullable<T> = ColumnType<T | null, T | null | undefined, T | null>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export interface AccountsTable {
  id: string;
  name: string;
  plan: Generated<'standard' | 'partner'>;
  api_access: Generated<boolean>;
  created_at: DefaultTimestamp;
}

export interface HubsTable {
  id: string;
  account_id: string;
  name: string;
  suspended: Generated<boolean>;
  report_version: DefaultInt8;
  catalog_version: DefaultInt8;
  /** Bumped by the opt-in statements that change /opt-in-summary's figures (migration 015). */
  opt_in_summary_version: DefaultInt8;
  /** When those figures last changed. */
  opt_ins_changed_at: DefaultTimestamp;
  /** ISO 4217: the one currency the hub's spend is reported in (migration 017). */
  reporting_currency: Generated<string>;
  created_at: DefaultTimestamp;
}

export interface WorkspacesTable {
  id: string;
  hub_id: string;
  name: string;
  timezone: Generated<string>;
  fields: DefaultJson<Record<string, FieldValue>>;
  created_at: DefaultTimestamp;
}

export type FieldValue = string | number | boolean;

export interface WorkspaceFieldsTable {
  hub_id: string;
  key: string;
  label: string;
  archived: Generated<boolean>;
}

export interface UsersTable {
  id: string;
  account_id: string;
  email: string;
  password_hash: string;
  firstname: string;
  lastname: string;
  is_staff: Generated<boolean>;
  created_at: DefaultTimestamp;
}

export interface MembershipsTable {
  user_id: string;
  hub_id: string;
  role: 'hub_admin' | 'member';
  workspace_id: string | null;
}

export interface PlaybooksTable {
  id: string;
  hub_id: string;
  name: string;
  solutions: string[];
  variants: DefaultJson<Record<string, string[]>>;
  questions: DefaultJson<unknown[]>;
  created_at: DefaultTimestamp;
}

export interface OptInsTable {
  id: string;
  hub_id: string;
  playbook_id: string;
  workspace_id: string;
  status: string;
  opted_in_at: DefaultTimestamp;
  updated_at: DefaultTimestamp;
  budget_cents: Int8 | null;
  budget_type: 'lifetime' | 'daily' | null;
  variant: DefaultJson<Record<string, string>>;
  responses: DefaultJson<{ question: string; answer: string }[]>;
}

export interface AdAccountsTable {
  id: string;
  hub_id: string;
  platform: string;
  name: string;
  sync_state: Generated<'idle' | 'syncing' | 'failed'>;
  last_synced_at: Timestamp | null;
  created_at: DefaultTimestamp;
  // Sync state of a connected account (migration 017); null on imported accounts.
  connection_id: ColumnType<string | null, string | null | undefined, string | null>;
  external_id: ColumnType<string | null, string | null | undefined, string | null>;
  currency: ColumnType<string | null, string | null | undefined, string | null>;
  time_zone: ColumnType<string | null, string | null | undefined, string | null>;
  /** How the credential reaches the account: Google Ads' manager customer id (login-customer-id), or null. */
  access_via: ColumnType<string | null, string | null | undefined, string | null>;
  default_workspace_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** The last account-local day fully read and stored, 'YYYY-MM-DD'. */
  complete_through: ColumnType<string | null, string | null | undefined, string | null>;
  next_sync_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  lease_until: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  lease_owner: ColumnType<string | null, string | null | undefined, string | null>;
  sync_requested_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  last_attempt_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  failure_kind: ColumnType<PlatformFailureKind | null, PlatformFailureKind | null | undefined, PlatformFailureKind | null>;
  failure_message: ColumnType<string | null, string | null | undefined, string | null>;
  failure_code: ColumnType<string | null, string | null | undefined, string | null>;
  failing_since: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  failure_count: Generated<number>;
  throttled_until: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  disconnected_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export type PlatformFailureKind =
  | 'needs_reconnect'
  | 'missing_permission'
  | 'invalid_request'
  | 'platform_error'
  | 'bad_answer'
  | 'unreachable';

export interface AdConnectionsTable {
  id: string;
  hub_id: string;
  platform: AdPlatform;
  kind: 'oauth' | 'system_user' | 'api_key';
  label: string;
  /** AES-256-GCM under the server's secrets key, the connection id as additional data. */
  token_sealed: Buffer;
  token_expires_at: Timestamp | null;
  created_at: DefaultTimestamp;
}

/** The platform's spend per UTC day, account, campaign and ad set (migration 017). */
export interface AdSpendRowsTable {
  hub_id: string;
  ad_account_id: string;
  date: string;
  campaign_id: string;
  campaign_name: string;
  ad_set_id: string;
  ad_set_name: string;
  spend_micros: Int8;
  spend_cents: Int8;
}

export interface AdAttributionMappingsTable {
  hub_id: string;
  ad_account_id: string;
  level: 'campaign' | 'ad_set';
  external_id: string;
  workspace_id: string;
  created_at: DefaultTimestamp;
}

export interface SpendTable {
  hub_id: string;
  ad_account_id: string;
  workspace_id: string | null;
  date: string;
  spend_cents: Int8;
}

/** Running spend totals in 64-day blocks (migration 009), kept by triggers on spend. */
export interface SpendPrefixSumsTable {
  hub_id: string;
  /** The workspace, or '' for unattributed spend. */
  workspace_key: string;
  block: number;
  sums: string[];
}

export interface ApiKeysTable {
  id: string;
  hub_id: string;
  name: string;
  scope: 'read' | 'embed';
  start: string;
  /** SHA-256 of a read key, or of an embed key made before key pairs; null for an embed key pair. */
  key_hash: Buffer | null;
  /** An embed key pair's raw Ed25519 public key (migration 012); the private key is never stored. */
  public_key: Buffer | null;
  created_at: DefaultTimestamp;
  revoked_at: Timestamp | null;
  /** When the key stops working (migration 013); null: never. A rolled key's is the end of its grace period. */
  expires_at: Timestamp | null;
  /** The key that replaced this one when it was rolled (migration 013). */
  replaced_by: string | null;
}

/** Requests per key and UTC day, added by the batched usage flush (migration 013). */
export interface ApiKeyDailyUsageTable {
  key_id: string;
  day: string;
  request_count: Int8;
  /** Of those, answered 304 Not Modified (migration 016). */
  not_modified_count: DefaultInt8;
}

/** Batched usage per key, apart from the key row every request reads (migration 007). */
export interface ApiKeyUsageTable {
  key_id: string;
  request_count: Int8;
  /** Of those, answered 304 Not Modified (migration 016). */
  not_modified_count: DefaultInt8;
  last_used_at: Timestamp;
}

/** Opt-ins per hub and UTC day of opted_in_at, kept by triggers (migration 006). */
export interface OptInDayCountsTable {
  hub_id: string;
  day: string;
  opt_ins: number;
}

/** Opt-ins per hub and status, kept by triggers (migration 006). */
export interface OptInStatusCountsTable {
  hub_id: string;
  status: string;
  opt_ins: number;
}

export type SocialPlatform = 'instagram' | 'facebook' | 'linkedin' | 'x' | 'tiktok' | 'google_business';
export type PostStatus = 'draft' | 'scheduled' | 'publishing' | 'published' | 'failed';
/** queued (`pending`) → `publishing` → `published` | `failed` | `unconfirmed` (sent, no answer: reconciled by lookup). */
export type DeliveryStatus = 'pending' | 'publishing' | 'published' | 'failed' | 'unconfirmed';
export type MediaKind = 'image' | 'video';
export type MediaContentType = 'image/jpeg' | 'image/png' | 'image/webp' | 'image/gif' | 'video/mp4' | 'video/quicktime';
export type AdPlatform = 'meta' | 'google_ads' | 'chatgpt_ads';

export interface SocialChannelsTable {
  id: string;
  hub_id: string;
  workspace_id: string;
  platform: SocialPlatform;
  name: string;
  handle: string | null;
  connected: Generated<boolean>;
  created_at: DefaultTimestamp;
  /** Migration 020: the channel's way into its network (null: the sandbox connector). */
  connection_id: Nullable<string>;
  external_id: Nullable<string>;
  /** A token of the channel's own (a Page token), sealed with the channel id as additional data. */
  token_sealed: Nullable<Buffer>;
  token_expires_at: NullableTimestamp;
  last_published_at: NullableTimestamp;
  failure_kind: Nullable<string>;
  failure_message: Nullable<string>;
  failure_code: Nullable<string>;
  failing_since: NullableTimestamp;
}

/** A connection to an organic network (migration 020): Meta's user token, Google's refresh token. */
export interface ChannelConnectionsTable {
  id: string;
  hub_id: string;
  platform: 'meta' | 'google_business';
  label: string;
  /** AES-256-GCM under the server's secrets key, the connection id as additional data. */
  token_sealed: Buffer;
  token_expires_at: Timestamp | null;
  created_at: DefaultTimestamp;
}

export interface MediaAssetsTable {
  id: string;
  hub_id: string;
  workspace_id: string;
  kind: MediaKind;
  content_type: MediaContentType;
  filename: string;
  byte_size: Int8;
  width: number;
  height: number;
  duration_ms: number | null;
  sha256: Buffer;
  storage_key: string | null;
  created_by: string | null;
  created_at: DefaultTimestamp;
}

export interface PostsTable {
  id: string;
  hub_id: string;
  workspace_id: string;
  text: string;
  status: PostStatus;
  scheduled_at: Timestamp | null;
  published_at: Timestamp | null;
  error: string | null;
  attempts: Generated<number>;
  claimed_at: Timestamp | null;
  claimed_by: string | null;
  /** Migration 023: when a publishing post no publisher holds wants the publisher back (a throttle, a lookup). */
  retry_at: NullableTimestamp;
  created_by: string | null;
  created_at: DefaultTimestamp;
  updated_at: DefaultTimestamp;
  calendar_at: ColumnType<Date, never, never>;
}

export interface PostMediaTable {
  hub_id: string;
  workspace_id: string;
  post_id: string;
  media_id: string;
  position: number;
}

export interface PostDeliveriesTable {
  hub_id: string;
  workspace_id: string;
  post_id: string;
  channel_id: string;
  position: number;
  status: Generated<DeliveryStatus>;
  external_id: string | null;
  error: string | null;
  delivered_at: Timestamp | null;
  /** When the current send began: the lower bound of an unconfirmed delivery's lookup. */
  attempt_started_at: NullableTimestamp;
  failure_kind: Nullable<string>;
  platform_message: Nullable<string>;
  platform_code: Nullable<string>;
  /** The publication's public address, when the platform gives one. */
  url: Nullable<string>;
  /** Migration 023: lookups of this unconfirmed delivery that could not tell (backoff, then give up). */
  checks: Generated<number>;
  /** Migration 024: sends of this delivery after one that published nothing (a transient failure, a lookup that found none). */
  retries: Generated<number>;
  /** Migration 025: what the network prepared for the next attempt (an Instagram container still processing). */
  prepared: Nullable<string>;
}

export interface SandboxPublicationsTable {
  id: string;
  hub_id: string;
  post_id: string;
  channel_id: string;
  platform: SocialPlatform;
  text: string;
  media_count: number;
  published_at: Timestamp;
}

export interface OrganicMetricsTable {
  hub_id: string;
  workspace_id: string;
  date: string;
  platform: SocialPlatform;
  posts: number;
  impressions: Int8;
  reach: Int8;
  likes: Int8;
  comments: Int8;
  shares: Int8;
  saves: Int8;
}

/** Migration 021: a publication's synced lifetime figures and its refresh schedule. */
export interface OrganicPostInsightsTable {
  hub_id: string;
  workspace_id: string;
  post_id: string;
  channel_id: string;
  platform: 'facebook' | 'instagram';
  external_id: string;
  published_at: Timestamp;
  date: string;
  has_figures: Generated<boolean>;
  impressions: DefaultInt8;
  reach: DefaultInt8;
  likes: DefaultInt8;
  comments: DefaultInt8;
  shares: DefaultInt8;
  saves: DefaultInt8;
  clicks: DefaultInt8;
  engagements: DefaultInt8;
  fetches: Generated<number>;
  fetched_at: NullableTimestamp;
  next_fetch_at: NullableTimestamp;
  lease_owner: Nullable<string>;
  lease_until: NullableTimestamp;
  failure_kind: Nullable<string>;
  failure_message: Nullable<string>;
  failure_code: Nullable<string>;
  failed_at: NullableTimestamp;
}

export interface HubCpmTable {
  hub_id: string;
  platform: SocialPlatform;
  cpm_cents: number;
}

export interface PaidMetricsTable {
  hub_id: string;
  workspace_id: string;
  date: string;
  platform: AdPlatform;
  campaign_id: string;
  campaign_name: string;
  spend_cents: Int8;
  impressions: Int8;
  clicks: Int8;
  results: Int8;
}

export interface ReviewDaysTable {
  hub_id: string;
  workspace_id: string;
  date: string;
  new_1: number;
  new_2: number;
  new_3: number;
  new_4: number;
  new_5: number;
  responded: number;
  total_1: Int8;
  total_2: Int8;
  total_3: Int8;
  total_4: Int8;
  total_5: Int8;
  total_responded: Int8;
}

/** One Google review of a connected Business Profile location (migration 022). */
export interface GoogleReviewsTable {
  hub_id: string;
  workspace_id: string;
  channel_id: string;
  review_id: string;
  star_rating: number;
  created_at: Date;
  updated_at: Date;
  replied: boolean;
}

/** A location's review sync: its job row and state (migration 022). */
export interface ReviewSyncsTable {
  channel_id: string;
  hub_id: string;
  high_water: NullableTimestamp;
  last_full_at: NullableTimestamp;
  last_synced_at: NullableTimestamp;
  next_sync_at: Timestamp;
  lease_until: NullableTimestamp;
  lease_owner: Nullable<string>;
  failure_kind: Nullable<string>;
  failure_message: Nullable<string>;
  failure_code: Nullable<string>;
  failing_since: NullableTimestamp;
  failure_count: Generated<number>;
}

export interface IdempotencyKeysTable {
  user_id: string;
  client_id: string;
  key: string;
  request_hash: Buffer;
  response_body: ColumnType<unknown, string | null, string | null>;
  created_at: Timestamp;
  expires_at: Timestamp;
}

export interface Database {
  accounts: AccountsTable;
  hubs: HubsTable;
  workspaces: WorkspacesTable;
  workspace_fields: WorkspaceFieldsTable;
  users: UsersTable;
  memberships: MembershipsTable;
  playbooks: PlaybooksTable;
  opt_ins: OptInsTable;
  ad_accounts: AdAccountsTable;
  ad_connections: AdConnectionsTable;
  ad_spend_rows: AdSpendRowsTable;
  ad_attribution_mappings: AdAttributionMappingsTable;
  spend: SpendTable;
  spend_prefix_sums: SpendPrefixSumsTable;
  api_keys: ApiKeysTable;
  api_key_usage: ApiKeyUsageTable;
  api_key_daily_usage: ApiKeyDailyUsageTable;
  opt_in_day_counts: OptInDayCountsTable;
  opt_in_status_counts: OptInStatusCountsTable;
  social_channels: SocialChannelsTable;
  channel_connections: ChannelConnectionsTable;
  media_assets: MediaAssetsTable;
  posts: PostsTable;
  post_media: PostMediaTable;
  post_deliveries: PostDeliveriesTable;
  sandbox_publications: SandboxPublicationsTable;
  organic_metrics: OrganicMetricsTable;
  organic_post_insights: OrganicPostInsightsTable;
  hub_cpm: HubCpmTable;
  paid_metrics: PaidMetricsTable;
  review_days: ReviewDaysTable;
  google_reviews: GoogleReviewsTable;
  review_syncs: ReviewSyncsTable;
  idempotency_keys: IdempotencyKeysTable;
  oauth_artifacts: OAuthArtifactsTable;
  oauth_clients: OAuthClientsTable;
  oauth_grant_contexts: OAuthGrantContextsTable;
  oauth_grant_usage: OAuthGrantUsageTable;
  server_secrets: ServerSecretsTable;
}

export interface OAuthArtifactsTable {
  model: string;
  id_hash: Buffer;
  payload: ColumnType<Record<string, unknown>, string, string>;
  grant_id: string | null;
  uid_hash: Buffer | null;
  expires_at: Date | null;
  consumed_at: Date | null;
}

export interface OAuthClientsTable {
  client_id: string;
  metadata: ColumnType<Record<string, unknown>, string, string>;
  provisioned: Generated<boolean>;
  created_at: DefaultTimestamp;
}

export interface OAuthGrantContextsTable {
  grant_id: string;
  user_id: string;
  hub_id: string;
  workspace_id: string | null;
  created_at: DefaultTimestamp;
}

export interface OAuthGrantUsageTable {
  grant_id: string;
  last_used_at: Date;
}

export interface ServerSecretsTable {
  name: string;
  value: ColumnType<unknown, string, string>;
  created_at: DefaultTimestamp;
}
