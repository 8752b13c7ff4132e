// Ad accounts as a hub admin manages them (web admin, CLI): connect with a platform token (sealed
// at rest), list with a status a person can act on, sync now, disconnect, choose a default
// workspace, and fix unattributed spend by mapping a campaign or ad set to a workspace. The
// caller (a surface) has already checked that the person is the hub's admin.
import { setTimeout as delay } from 'node:timers/promises';
import type { Db } from '../../db/database.ts';
import type { AdPlatform, PlatformFailureKind } from '../../db/schema.ts';
import { PlatformError, PlatformThrottled, type PlatformAdAccount } from '../../integrations/ad-platform.ts';
import type { MetaOAuth } from '../../integrations/meta/client.ts';
import type { Clock } from '../../platform/clock.ts';
import { DomainError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { isTimeZoneName } from '../../platform/time.ts';
import { AD_TOKEN_EXPIRY_WARNING_MS, SPEND_SYNC_LEASE_MS } from '../../policy.ts';
import { AD_PLATFORMS } from '../spend/spend.ts';
import {
  claimDue,
  disconnect,
  findAccountRow,
  findHub,
  insertConnection,
  listAccountRows,
  markSyncRequested,
  unattributed,
  updateDefaultWorkspace,
  updateReportingCurrency,
  syncBacklog as readSyncBacklog,
  upsertMapping,
  workspaceExists,
  type AccountRow,
  type SyncBacklogRow,
} from './ad-account.repository.ts';
import { newClaimant } from './sync-loop.ts';
import { runSync, shownName, type EngineDeps, type SyncOutcome } from './sync-engine.ts';

export type { SyncOutcome } from './sync-engine.ts';

/** What the service, the loop and the surfaces share; built once by app.ts (App.adSync). */
export type AdSyncDeps = Omit<EngineDeps, 'leaseMs'> & { leaseMs?: number };

export type ConnectionKind = 'oauth' | 'system_user' | 'api_key';
/**
 * How each platform's accounts connect: Meta by Facebook Login or a system-user token; Google Ads
 * by Google's OAuth (a refresh token); ChatGPT Ads by an API key (the platform has no OAuth).
 */
export const CONNECTION_KINDS_OF: Record<AdPlatform, readonly ConnectionKind[]> = {
  meta: ['oauth', 'system_user'],
  google_ads: ['oauth'],
  chatgpt_ads: ['api_key'],
};

export type AdAccountStatus =
  | 'connected'
  | 'syncing'
  | 'rescheduled'
  | 'retrying'
  | 'needs_reconnect'
  | 'missing_permission'
  | 'failed'
  | 'never_synced'
  | 'disconnected';

export interface AdAccountView {
  id: string;
  platform: AdPlatform;
  externalId: string;
  name: string;
  currency: string;
  timeZone: string;
  /** null once disconnected (the credential is gone). */
  connectionKind: ConnectionKind | null;
  status: AdAccountStatus;
  /** A sentence a person acts on, e.g. "Needs reconnect: the token expired on 3 Nov 2026." */
  statusText: string;
  lastCompleteSyncAt: Date | null;
  /** The last account-local day fully read, YYYY-MM-DD. */
  completeThrough: string | null;
  failureKind: PlatformFailureKind | null;
  /** The platform's own words. */
  failureMessage: string | null;
  /** When a retry (or a rescheduled sync) is due. */
  retryAt: Date | null;
  tokenExpiresAt: Date | null;
  tokenExpiresSoon: boolean;
  defaultWorkspaceId: string | null;
}

export interface UnattributedLine {
  adAccountId: string;
  accountName: string;
  campaignId: string;
  campaignName: string;
  adSetId: string;
  adSetName: string;
  spendCents: number;
  reason: 'no_match' | 'unknown_workspace_token';
}

export interface ConnectInput {
  platform: AdPlatform;
  kind: ConnectionKind;
  accessToken: string;
  tokenExpiresAt: Date | null;
  externalIds: string[];
  label: string;
}

/** Accounts one connection may add at once. */
export const MAX_ACCOUNTS_PER_CONNECT = 50;
/** The longest access token accepted (Meta's run to a few hundred characters). */
export const TOKEN_MAX_LENGTH = 4_096;
const EXTERNAL_ID: Record<AdPlatform, RegExp> = {
  meta: /^act_[0-9]{1,20}$/,
  google_ads: /^[0-9]{10}$/,
  chatgpt_ads: /^[A-Za-z0-9_-]{1,64}$/,
};
const EXTERNAL_ID_HINT: Record<AdPlatform, string> = {
  meta: 'act_ followed by the account number, e.g. act_1234567890',
  google_ads: 'the 10-digit customer id, e.g. 123-456-7890 or 1234567890',
  chatgpt_ads: 'letters, digits, _ and -',
};
/** Each ad platform as people name it. */
export const PLATFORM_NAMES: Record<AdPlatform, string> = { meta: 'Meta', google_ads: 'Google Ads', chatgpt_ads: 'ChatGPT Ads' };
/** What each platform's connection keeps, as the admin knows it. */
const CREDENTIAL: Record<AdPlatform, string> = { meta: 'token', google_ads: 'sign-in', chatgpt_ads: 'API key' };
/** What a credential needs before the platform lets it read an account's spend. */
const ACCESS_NEEDED: Record<AdPlatform, string> = {
  meta: 'The token needs ads_read and access to the account',
  google_ads: 'The Google user needs access to the account (directly or through a manager account)',
  chatgpt_ads: "The API key must be the ad account's own key with read access to its insights",
};

/** An account id as the platform stores it: Google Ads shows customer ids as 123-456-7890 and takes them without dashes. */
function canonicalId(platform: AdPlatform, id: string): string {
  const t = id.trim();
  return platform === 'google_ads' && /^\d{3}-\d{3}-\d{4}$/.test(t) ? t.replaceAll('-', '') : t;
}

function clientOf(deps: AdSyncDeps, platform: unknown) {
  if (typeof platform !== 'string' || !(AD_PLATFORMS as readonly string[]).includes(platform)) {
    throw new DomainError('invalid', `platform must be one of ${AD_PLATFORMS.join(', ')}`, {
      issues: [{ field: 'platform', message: `must be one of ${AD_PLATFORMS.join(', ')}` }],
    });
  }
  const client = deps.clients[platform as AdPlatform];
  if (!client)
    throw new DomainError('invalid', `${PLATFORM_NAMES[platform as AdPlatform]} accounts cannot be connected on this server yet`, {
      issues: [{ field: 'platform', message: 'not available on this server' }],
    });
  return client;
}

/** A pasted token: one line of printable ASCII. Never echoed. */
function checkToken(token: unknown): string {
  const bad = (message: string) => new DomainError('invalid', `token: ${message}`, { issues: [{ field: 'token', message }] });
  if (typeof token !== 'string' || token.trim() === '') throw bad('is required');
  const t = token.trim();
  if (t.length > TOKEN_MAX_LENGTH) throw bad(`is longer than ${TOKEN_MAX_LENGTH} characters; paste the access token alone`);
  if (!/^[\x21-\x7e]+$/.test(t)) throw bad('must be one line of printable characters without spaces; paste the access token alone');
  return t;
}

/** A platform's refusal, as the admin should read it at connect time. */
function refusalOf(platform: AdPlatform, error: unknown, what: string): never {
  const name = PLATFORM_NAMES[platform];
  if (error instanceof PlatformThrottled) {
    const minutes = Math.max(1, Math.ceil(error.retryAfterMs / 60_000));
    const when = minutes < 120 ? `${minutes} minute${minutes === 1 ? '' : 's'}` : `${Math.ceil(minutes / 60)} hours`;
    throw new DomainError(
      'rejected',
      `${name} is busy and asked hubops to wait before asking for ${what} again: try again in about ${when}`,
    );
  }
  if (!(error instanceof PlatformError)) throw error;
  const words = error.platformMessage ?? error.message;
  if (error.kind === 'needs_reconnect')
    throw new DomainError(
      'invalid',
      `${name} did not accept the ${CREDENTIAL[platform]} (${words}): use a valid, unexpired ${CREDENTIAL[platform]}`,
    );
  if (error.kind === 'missing_permission')
    throw new DomainError('invalid', `${name} refused ${what} (${words}). ${ACCESS_NEEDED[platform]}.`);
  if (error.kind === 'invalid_request') throw new DomainError('invalid', `${name} refused ${what}: ${words}`);
  throw new DomainError('rejected', `${name} could not be asked for ${what} right now (${words}); try again in a few minutes`);
}

/** What "Connect Meta" by OAuth needs of the Meta client. */
export type MetaOAuthExchange = Pick<MetaOAuth, 'exchangeCode' | 'exchangeForLongLived'>;

/**
 * Connect Meta by OAuth, after the dialog: the code Meta sent back becomes a short-lived token,
 * then a long-lived one (about 60 days) for the connection. Refusals as at connect time.
 */
export async function completeMetaOAuth(
  oauth: MetaOAuthExchange,
  input: { code: string; redirectUri: string; appId: string; appSecret: string },
): Promise<{ accessToken: string; expiresAt: Date | null }> {
  const app = { appId: input.appId, appSecret: input.appSecret };
  try {
    const short = await oauth.exchangeCode({ ...app, redirectUri: input.redirectUri, code: input.code });
    return await oauth.exchangeForLongLived({ ...app, accessToken: short.accessToken });
  } catch (error) {
    refusalOf('meta', error, 'a token for the sign-in');
  }
}

/** What "Connect Google Ads" needs of the Google client: the code exchange after the consent screen. */
export interface GoogleOAuthExchange {
  exchangeCode(p: { redirectUri: string; code: string }): Promise<{ refreshToken: string | undefined }>;
}

/**
 * Connect Google Ads by OAuth, after the consent screen: the code becomes a refresh token, which
 * the connection keeps (sealed) and the client trades for short-lived access tokens. Google omits
 * the refresh token when it believes hubops already holds one; then nothing is stored or replaced
 * (an existing connection keeps its working token: an empty one never overwrites it) and the
 * admin is told how to get a fresh one.
 */
export async function completeGoogleOAuth(
  oauth: GoogleOAuthExchange,
  input: { code: string; redirectUri: string },
): Promise<{ refreshToken: string }> {
  let answer: { refreshToken: string | undefined };
  try {
    answer = await oauth.exchangeCode({ redirectUri: input.redirectUri, code: input.code });
  } catch (error) {
    refusalOf('google_ads', error, 'a token for the sign-in');
  }
  if (typeof answer.refreshToken !== 'string' || answer.refreshToken.trim() === '')
    throw new DomainError(
      'rejected',
      'Google did not give hubops offline access this time (its answer had no refresh token), so nothing was changed: connected accounts keep their current access. Remove hubops under "Third-party apps & services" at https://myaccount.google.com/connections, then connect again.',
      { code: 'no_refresh_token' },
    );
  return { refreshToken: answer.refreshToken.trim() };
}

/**
 * Connects the one ad account an API key reads (ChatGPT Ads: a key per account), under a new
 * connection; the same checks as connectAdAccounts.
 */
export async function connectApiKeyAccount(
  deps: AdSyncDeps,
  hubId: string,
  input: { platform: AdPlatform; apiKey: string; label?: string; expectedId?: string },
): Promise<AdAccountView> {
  const accounts = await listPlatformAccounts(deps, input.platform, input.apiKey);
  const [account] = accounts;
  if (!account || accounts.length !== 1)
    throw new DomainError(
      'invalid',
      `${PLATFORM_NAMES[input.platform]} answered the key with ${accounts.length} ad accounts; expected one`,
    );
  if (input.expectedId !== undefined && canonicalId(input.platform, input.expectedId) !== account.externalId)
    throw new DomainError(
      'invalid',
      `account: the key reads ad account ${account.externalId}, not ${JSON.stringify(input.expectedId.slice(0, 64))}`,
      { issues: [{ field: 'account', message: `the key reads ${account.externalId}` }] },
    );
  const [view] = await connectAdAccounts(deps, hubId, {
    platform: input.platform,
    kind: 'api_key',
    accessToken: input.apiKey,
    tokenExpiresAt: null,
    externalIds: [account.externalId],
    label: input.label?.trim() || `${PLATFORM_NAMES[input.platform]} API key`,
  });
  return view!;
}

/** The ad accounts a token can read, for the admin to choose from. */
export async function listPlatformAccounts(deps: AdSyncDeps, platform: AdPlatform, accessToken: string): Promise<PlatformAdAccount[]> {
  const client = clientOf(deps, platform);
  const token = checkToken(accessToken);
  try {
    return await client.listAccounts({ secret: token });
  } catch (error) {
    refusalOf(platform, error, 'the list of ad accounts');
  }
}

/**
 * Connects the chosen accounts under one new connection (the token sealed, AAD its id). Every
 * account is checked with the platform first (readable, a known time zone, the hub's reporting
 * currency); one refusal connects none. Each is due for its first sync (a backfill) at once.
 */
export async function connectAdAccounts(deps: AdSyncDeps, hubId: string, input: ConnectInput): Promise<AdAccountView[]> {
  const client = clientOf(deps, input.platform);
  const kinds = CONNECTION_KINDS_OF[input.platform];
  if (!kinds.includes(input.kind))
    throw new DomainError('invalid', `kind: ${PLATFORM_NAMES[input.platform]} connects by ${kinds.join(' or ')}`, {
      issues: [{ field: 'kind', message: `must be one of ${kinds.join(', ')}` }],
    });
  const token = checkToken(input.accessToken);
  const label = typeof input.label === 'string' ? input.label.trim() : '';
  if (label.length < 1 || label.length > 200)
    throw new DomainError('invalid', 'label: must be 1 to 200 characters', {
      issues: [{ field: 'label', message: 'must be 1 to 200 characters' }],
    });
  if (input.tokenExpiresAt !== null && !(input.tokenExpiresAt instanceof Date && !Number.isNaN(input.tokenExpiresAt.getTime()))) {
    throw new DomainError('invalid', 'tokenExpiresAt: must be a date or null');
  }
  const ids = [
    ...new Set(
      Array.isArray(input.externalIds)
        ? input.externalIds.map((id) => (typeof id === 'string' ? canonicalId(input.platform, id) : id))
        : [],
    ),
  ];
  if (ids.length === 0)
    throw new DomainError('invalid', 'account: choose at least one ad account', {
      issues: [{ field: 'account', message: 'choose at least one ad account' }],
    });
  if (ids.length > MAX_ACCOUNTS_PER_CONNECT)
    throw new DomainError('invalid', `account: at most ${MAX_ACCOUNTS_PER_CONNECT} ad accounts at once`);
  const wrong = ids.filter((id) => typeof id !== 'string' || !EXTERNAL_ID[input.platform].test(id));
  if (wrong.length > 0) {
    const shown = wrong
      .slice(0, 3)
      .map((id) => JSON.stringify(String(id).slice(0, 40)))
      .join(', ');
    throw new DomainError(
      'invalid',
      `account: ${shown} is not a ${PLATFORM_NAMES[input.platform]} ad account id (${EXTERNAL_ID_HINT[input.platform]})`,
      { issues: [{ field: 'account', message: `expected ${EXTERNAL_ID_HINT[input.platform]}` }] },
    );
  }
  const hub = await findHub(deps.db, hubId);
  if (!hub) throw new DomainError('not_found', 'No such hub.');

  const described: PlatformAdAccount[] = [];
  for (const id of ids as string[]) {
    let account: PlatformAdAccount;
    try {
      account = await client.describeAccount({ secret: token }, { externalId: id, accessVia: null });
    } catch (error) {
      refusalOf(input.platform, error, `ad account ${id}`);
    }
    if (account.currency !== hub.reporting_currency) {
      throw new DomainError(
        'invalid',
        `ad account ${id} reports spend in ${account.currency}, but this hub reports in ${hub.reporting_currency}: spend in another currency is never summed with it, so the account cannot be connected to this hub`,
        { code: 'currency_mismatch' },
      );
    }
    if (!isTimeZoneName(account.timeZone))
      throw new DomainError(
        'invalid',
        `ad account ${id} has a time zone this server does not know (${JSON.stringify(account.timeZone.slice(0, 64))})`,
      );
    described.push({ ...account, externalId: id });
  }

  const connectionId = newId('adc');
  const now = deps.clock.now();
  const accountIds = await insertConnection(
    deps.db,
    {
      id: connectionId,
      hubId,
      platform: input.platform,
      kind: input.kind,
      label,
      tokenSealed: deps.sealer.seal(token, connectionId),
      tokenExpiresAt: input.tokenExpiresAt,
      now,
    },
    described.map((a) => ({
      id: newId('aa'),
      externalId: a.externalId,
      name: shownName(a.name) || a.externalId,
      currency: a.currency,
      timeZone: a.timeZone,
      accessVia: a.accessVia,
    })),
  );
  deps.log?.info({ hubId, connectionId, platform: input.platform, accounts: accountIds.length }, 'ad accounts connected');
  const views = await listAdAccounts(deps, hubId);
  return views.filter((v) => accountIds.includes(v.id));
}

export async function listAdAccounts(deps: AdSyncDeps, hubId: string): Promise<AdAccountView[]> {
  const now = deps.clock.now();
  return (await listAccountRows(deps.db, hubId)).map((row) => viewOf(row, now));
}

/**
 * The one currency the hub's spend is reported in (an operator setting, default USD). Refused
 * while a connected account reports in another: spend in two currencies is never summed.
 */
/** Returns the code set (upper-cased). */
export async function setReportingCurrency(deps: AdSyncDeps, hubId: string, currency: string): Promise<string> {
  const code = typeof currency === 'string' ? currency.trim().toUpperCase() : '';
  if (!/^[A-Z]{3}$/.test(code))
    throw new DomainError('invalid', 'currency: must be an ISO 4217 code of three letters, e.g. USD', {
      issues: [{ field: 'currency', message: 'must be an ISO 4217 code of three letters' }],
    });
  const result = await updateReportingCurrency(deps.db, hubId, code);
  if (result.conflicting.length > 0) {
    throw new DomainError(
      'rejected',
      `ad account${result.conflicting.length > 1 ? 's' : ''} ${result.conflicting.slice(0, 5).join(', ')} report${result.conflicting.length > 1 ? '' : 's'} in another currency than ${code}: disconnect ${result.conflicting.length > 1 ? 'them' : 'it'} first`,
    );
  }
  if (!result.updated) throw new DomainError('not_found', 'No such hub.');
  return code;
}

/** Asks for a sync of one account (or every connected account of the hub) as soon as a loop is free. */
export async function requestSync(deps: AdSyncDeps, hubId: string, accountId?: string): Promise<void> {
  const count = await markSyncRequested(deps.db, hubId, accountId, deps.clock.now());
  if (accountId !== undefined && count === 0) await connectedAccount(deps, hubId, accountId);
}

/**
 * Syncs the account now, in this process, and says how it ended; when another instance holds it,
 * waits for that sync to end and reports it.
 */
export async function syncNow(deps: AdSyncDeps, hubId: string, accountId: string): Promise<SyncOutcome> {
  await connectedAccount(deps, hubId, accountId);
  const leaseMs = deps.leaseMs ?? SPEND_SYNC_LEASE_MS;
  const owner = newClaimant();
  // Held elsewhere: wait (in real time) until that instance releases the account (then report its
  // outcome) or its lease runs out (a dead instance: then take the account over and run it here).
  const deadline = Date.now() + leaseMs + 5_000;
  for (;;) {
    const now = deps.clock.now();
    const [claimed] = await claimDue(deps.db, owner, now, new Date(now.getTime() + leaseMs), 1, accountId);
    if (claimed) return runSync({ ...deps, leaseMs }, claimed, owner);
    if (Date.now() > deadline) return { status: 'skipped', message: 'another instance is still syncing the account' };
    await delay(250);
    const row = await findAccountRow(deps.db.kysely, hubId, accountId);
    if (!row || row.connection_id === null) return { status: 'skipped', message: 'the account was disconnected' };
    if (row.lease_until === null) return outcomeOf(row, deps.clock.now());
  }
}

export async function disconnectAdAccount(deps: AdSyncDeps, hubId: string, accountId: string): Promise<void> {
  const done = await disconnect(deps.db, hubId, accountId, deps.clock.now());
  if (!done) {
    const row = await findAccountRow(deps.db.kysely, hubId, accountId);
    if (!row) throw new DomainError('not_found', 'No such ad account in this hub.');
  }
}

/** The workspace that gets the account's spend nothing else attributes (null: none); re-attributes at once. */
export async function setDefaultWorkspace(deps: AdSyncDeps, hubId: string, accountId: string, workspaceId: string | null): Promise<void> {
  if (workspaceId !== null && !(await workspaceExists(deps.db.kysely, hubId, workspaceId))) {
    throw new DomainError('invalid', 'workspace: no such workspace in this hub', {
      issues: [{ field: 'workspace', message: 'no such workspace in this hub' }],
    });
  }
  if (!(await updateDefaultWorkspace(deps.db, hubId, accountId, workspaceId)))
    throw new DomainError('not_found', 'No such ad account in this hub.');
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const isDay = (d: string) => DAY.test(d) && new Date(`${d}T00:00:00Z`).toISOString().slice(0, 10) === d;

/** Spend that matched no workspace, per campaign and ad set, largest first, with the reason. */
export async function listUnattributed(
  deps: AdSyncDeps,
  hubId: string,
  range: { since?: string; until?: string } = {},
): Promise<UnattributedLine[]> {
  for (const [field, value] of Object.entries(range)) {
    if (value !== undefined && (typeof value !== 'string' || !isDay(value)))
      throw new DomainError('invalid', `${field}: must be a date, YYYY-MM-DD`, {
        issues: [{ field, message: 'must be a date, YYYY-MM-DD' }],
      });
  }
  const since = range.since ?? '0001-01-01';
  const until = range.until ?? '9999-12-31';
  if (since > until) throw new DomainError('invalid', 'since: must not be after until');
  const rows = await unattributed(deps.db, hubId, range.since === undefined && range.until === undefined ? null : { since, until });
  return rows.map((r) => ({
    adAccountId: r.ad_account_id,
    accountName: r.account_name,
    campaignId: r.campaign_id,
    campaignName: r.campaign_name,
    adSetId: r.ad_set_id,
    adSetName: r.ad_set_name,
    spendCents: Number(r.spend_cents),
    reason: r.reason,
  }));
}

/** Maps a campaign or an ad set of an account to a workspace; its past spend moves at once, nothing is fetched. */
export async function mapToWorkspace(
  deps: AdSyncDeps,
  hubId: string,
  input: { adAccountId: string; level: 'campaign' | 'ad_set'; externalId: string; workspaceId: string },
): Promise<void> {
  if (input.level !== 'campaign' && input.level !== 'ad_set')
    throw new DomainError('invalid', 'level: must be campaign or ad_set', {
      issues: [{ field: 'level', message: 'must be campaign or ad_set' }],
    });
  const externalId = typeof input.externalId === 'string' ? input.externalId.trim() : '';
  if (externalId.length < 1 || externalId.length > 200)
    throw new DomainError('invalid', `${input.level === 'campaign' ? 'campaign' : 'ad set'} id: must be 1 to 200 characters`);
  if (typeof input.workspaceId !== 'string' || !(await workspaceExists(deps.db.kysely, hubId, input.workspaceId))) {
    throw new DomainError('invalid', 'workspace: no such workspace in this hub', {
      issues: [{ field: 'workspace', message: 'no such workspace in this hub' }],
    });
  }
  if (!(await findAccountRow(deps.db.kysely, hubId, input.adAccountId)))
    throw new DomainError('not_found', 'No such ad account in this hub.');
  await upsertMapping(deps.db, {
    hubId,
    adAccountId: input.adAccountId,
    level: input.level,
    externalId,
    workspaceId: input.workspaceId,
    now: deps.clock.now(),
  });
}

async function connectedAccount(deps: AdSyncDeps, hubId: string, accountId: string): Promise<AccountRow> {
  const row = await findAccountRow(deps.db.kysely, hubId, accountId);
  if (!row) throw new DomainError('not_found', 'No such ad account in this hub.');
  if (row.connection_id === null) throw new DomainError('rejected', 'The ad account is disconnected: connect it again to sync it.');
  return row;
}

/** How the last run of an account ended, read from its row (a sync another instance ran). */
function outcomeOf(row: AccountRow, now: Date): SyncOutcome {
  if (row.throttled_until && row.throttled_until > now)
    return { status: 'rescheduled', until: row.throttled_until, message: 'the platform asked us to slow down' };
  if (row.failure_kind) {
    const message = row.failure_message ?? row.failure_kind;
    return row.sync_state === 'failed' || row.next_sync_at === null
      ? { status: 'failed', failureKind: row.failure_kind, message }
      : { status: 'retrying', failureKind: row.failure_kind, message, retryAt: row.next_sync_at };
  }
  return row.last_synced_at
    ? { status: 'done', completeThrough: row.complete_through, syncedAt: row.last_synced_at }
    : { status: 'skipped', message: 'the account has not synced yet' };
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const day = (d: Date) => `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
const time = (d: Date) => `${day(d)} ${d.toISOString().slice(11, 16)} UTC`;
const localDay = (date: string) => day(new Date(`${date}T00:00:00Z`));

function viewOf(row: AccountRow, now: Date): AdAccountView {
  const leased = row.lease_until !== null && row.lease_until > now;
  const tokenExpired = row.token_expires_at !== null && row.token_expires_at <= now;
  const platform = PLATFORM_NAMES[row.platform];
  const words = row.failure_message ? `: ${row.failure_message.replace(/[.\s]+$/, '')}` : '';
  let status: AdAccountStatus;
  let statusText: string;
  let retryAt: Date | null = null;
  if (row.disconnected_at !== null) {
    status = 'disconnected';
    statusText = `Disconnected on ${day(row.disconnected_at)}: no longer synced; its past spend stays in the figures.`;
  } else if (leased && row.sync_state === 'syncing') {
    status = 'syncing';
    statusText = 'Syncing now.';
  } else if (row.failure_kind === 'needs_reconnect' || tokenExpired) {
    status = 'needs_reconnect';
    statusText =
      tokenExpired && row.token_expires_at
        ? `Needs reconnect: the token expired on ${day(row.token_expires_at)}. Connect the account again.`
        : `Needs reconnect${words || `: ${platform} no longer accepts the token`}. Connect the account again.`;
  } else if (row.failure_kind === 'missing_permission') {
    status = 'missing_permission';
    statusText = `Missing permission${words}. ${ACCESS_NEEDED[row.platform]}; then connect it again.`;
  } else if (row.sync_state === 'failed') {
    status = 'failed';
    statusText = `Sync failed${words}.${row.next_sync_at ? ` Next try ${time(row.next_sync_at)}.` : ' Fix the cause, then use Sync now.'}`;
    retryAt = row.next_sync_at;
  } else if (row.throttled_until !== null && row.throttled_until > now) {
    status = 'rescheduled';
    retryAt = row.throttled_until;
    statusText = `Rescheduled until ${time(row.throttled_until)}: ${platform} asked us to slow down.`;
  } else if (row.failure_kind !== null) {
    status = 'retrying';
    retryAt = row.next_sync_at;
    statusText = `Retrying${row.next_sync_at ? ` at ${time(row.next_sync_at)}` : ''} after a temporary failure${words}.`;
  } else if (row.last_synced_at === null) {
    status = 'never_synced';
    statusText = 'Connected; the first sync has not finished yet.';
  } else {
    status = 'connected';
    statusText = `Connected; last complete sync ${time(row.last_synced_at)}${row.complete_through ? `, complete through ${localDay(row.complete_through)}` : ''}.`;
  }
  const tokenExpiresSoon =
    row.token_expires_at !== null &&
    row.disconnected_at === null &&
    row.token_expires_at.getTime() - now.getTime() < AD_TOKEN_EXPIRY_WARNING_MS;
  if (tokenExpiresSoon && !tokenExpired && row.token_expires_at)
    statusText += ` The token expires on ${day(row.token_expires_at)}: connect again before then.`;
  return {
    id: row.id,
    platform: row.platform,
    externalId: row.external_id,
    name: row.name,
    currency: row.currency,
    timeZone: row.time_zone,
    connectionKind: row.connection_kind,
    status,
    statusText,
    lastCompleteSyncAt: row.last_synced_at,
    completeThrough: row.complete_through,
    failureKind: row.failure_kind,
    failureMessage: row.failure_message,
    retryAt,
    tokenExpiresAt: row.token_expires_at,
    tokenExpiresSoon,
    defaultWorkspaceId: row.default_workspace_id,
  };
}

/** The spend sync's backlog (for /metrics), one row per platform, zeros for a platform with no connected account. */
export async function syncBacklog(db: Db, clock: Clock): Promise<(SyncBacklogRow & { platform: AdPlatform })[]> {
  const rows = new Map((await readSyncBacklog(db, clock.now())).map((r) => [r.platform, r]));
  return AD_PLATFORMS.map(
    (platform) =>
      ({
        ...(rows.get(platform) ?? { accounts: 0, due: 0, lag_seconds: 0, failing: 0, complete_through_age_days: null }),
        platform,
      }) as SyncBacklogRow & {
        platform: AdPlatform;
      },
  );
}
