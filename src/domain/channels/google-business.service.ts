import type { Db } from '../../db/database.ts';
import { PlatformError, PlatformThrottled } from '../../integrations/ad-platform.ts';
import type { BusinessLocation, GoogleBusinessClient } from '../../integrations/google-business/client.ts';
import type { Clock } from '../../platform/clock.ts';
import { DomainError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { Sealer } from '../../platform/sealing.ts';
import { shownName } from '../ad-sync/sync-engine.ts';
import type { ReviewSyncLoop } from '../reviews/review-sync.ts';
import { locationSyncStates } from '../reviews/review-sync.repository.ts';
import { networkChannels, saveConnection } from './channel-connection.repository.ts';

// Connecting a hub's Business Profile locations: the admin signs in with Google (business.manage,
// offline), picks which location is which workspace's channel, and the refresh token is sealed
// under the new connection. The rule of Google Ads holds: a consent that comes back without a
// refresh token stores and replaces nothing.

export interface GoogleBusinessDeps {
  db: Db;
  clock: Clock;
  sealer: Sealer;
  client: GoogleBusinessClient;
}

/** Business Profile as this server reaches it: the services' dependencies and where its consent screen is. */
export interface GoogleBusinessSetup {
  deps: GoogleBusinessDeps;
  accountsUrl: string;
  clientId: string;
  reviewSync: ReviewSyncLoop;
}

const NAME = 'Google Business Profile';

/** A platform failure at connect time, as a refusal the admin can act on. */
function refusal(error: unknown, what: string): never {
  if (error instanceof PlatformThrottled)
    throw new DomainError(
      'rejected',
      `${NAME} is busy and asked hubops to wait before asking for ${what} again: try again in a few minutes`,
    );
  if (!(error instanceof PlatformError)) throw error;
  const words = error.platformMessage ?? error.message;
  if (error.kind === 'not_approved')
    throw new DomainError(
      'rejected',
      `${NAME} API access is not yet approved for this server's Google Cloud project (${words}). The operator requests access from Google (Business Profile APIs › Prerequisites); connect again once it is granted.`,
      { code: 'not_approved' },
    );
  if (error.kind === 'needs_reconnect')
    throw new DomainError('invalid', `${NAME} did not accept the sign-in (${words}): sign in with Google again`);
  if (error.kind === 'missing_permission')
    throw new DomainError('invalid', `${NAME} refused ${what} (${words}). Sign in with a Google account that manages the locations.`);
  if (error.kind === 'invalid_request') throw new DomainError('invalid', `${NAME} refused ${what}: ${words}`);
  throw new DomainError('rejected', `${NAME} could not be asked for ${what} right now (${words}); try again in a few minutes`);
}

/** The refresh token of a consent; refuses (changing nothing) when Google gave none. */
export async function completeGoogleBusinessOAuth(
  client: Pick<GoogleBusinessClient, 'exchangeCode'>,
  input: { code: string; redirectUri: string },
): Promise<{ refreshToken: string }> {
  let answer: { refreshToken: string | undefined };
  try {
    answer = await client.exchangeCode(input);
  } catch (error) {
    refusal(error, 'a token for the sign-in');
  }
  if (typeof answer.refreshToken !== 'string' || answer.refreshToken.trim() === '')
    throw new DomainError(
      'rejected',
      'Google did not give hubops offline access this time (its answer had no refresh token), so nothing was changed: connected locations keep their current access. Remove hubops under "Third-party apps & services" at https://myaccount.google.com/connections, then connect again.',
      { code: 'no_refresh_token' },
    );
  return { refreshToken: answer.refreshToken.trim() };
}

/** The locations the sign-in manages, names cleaned for display. */
export async function listBusinessLocations(deps: Pick<GoogleBusinessDeps, 'client'>, refreshToken: string): Promise<BusinessLocation[]> {
  try {
    const locations = await deps.client.listLocations(refreshToken);
    return locations.map((l) => ({ ...l, title: shownName(l.title) || l.name, address: l.address && (shownName(l.address) || null) }));
  } catch (error) {
    refusal(error, 'the locations');
  }
}

/**
 * Connects the chosen locations, each as the channel of a workspace of the hub. Every chosen
 * location must be one the sign-in manages (looked up again here: a form cannot add one) and each
 * workspace must be the hub's.
 */
export async function connectBusinessLocations(
  deps: GoogleBusinessDeps,
  hubId: string,
  input: { refreshToken: string; mappings: { location: string; workspaceId: string }[] },
): Promise<{ connectionId: string; channelIds: string[] }> {
  if (input.mappings.length === 0) throw new DomainError('invalid', 'choose at least one location to connect');
  const seen = new Set<string>();
  for (const m of input.mappings) {
    if (seen.has(m.location)) throw new DomainError('invalid', `the location ${m.location} is chosen twice`);
    seen.add(m.location);
  }
  const managed = new Map((await listBusinessLocations(deps, input.refreshToken)).map((l) => [l.name, l]));
  const workspaces = new Set(
    (
      await deps.db.kysely
        .selectFrom('workspaces')
        .select('id')
        .where('hub_id', '=', hubId)
        .where(
          'id',
          'in',
          input.mappings.map((m) => m.workspaceId),
        )
        .execute()
    ).map((w) => w.id),
  );
  const channels = input.mappings.map((m) => {
    const location = managed.get(m.location);
    if (!location) throw new DomainError('invalid', `the sign-in does not manage the location ${m.location}`);
    if (!workspaces.has(m.workspaceId)) throw new DomainError('invalid', `the hub has no workspace ${m.workspaceId}`);
    return {
      id: newId('ch'),
      workspaceId: m.workspaceId,
      platform: 'google_business' as const,
      name: location.title,
      externalId: location.name,
    };
  });
  const connectionId = newId('chc');
  const channelIds = await saveConnection(
    deps.db,
    {
      id: connectionId,
      hubId,
      platform: 'google_business',
      label: `Google Business Profile (${channels.length} location${channels.length === 1 ? '' : 's'})`,
      tokenSealed: deps.sealer.seal(input.refreshToken, connectionId),
      // Google refresh tokens do not expire on a date (they are revoked, or lapse unused for six months).
      tokenExpiresAt: null,
    },
    channels,
    deps.clock.now(),
  );
  return { connectionId, channelIds };
}

export interface BusinessChannelStatus {
  id: string;
  name: string;
  externalId: string | null;
  workspaceName: string;
  connected: boolean;
  lastPublishedAt: Date | null;
  failureKind: string | null;
  failureMessage: string | null;
  reviews: number;
  reviewsSyncedAt: Date | null;
}

/** The hub's connected locations with what the admin acts on: the channel's failure first, else its review sync's. */
export async function businessChannels(db: Db, hubId: string): Promise<BusinessChannelStatus[]> {
  const [channels, syncs] = await Promise.all([networkChannels(db, hubId, ['google_business']), locationSyncStates(db, hubId)]);
  const syncOf = new Map(syncs.map((s) => [s.channelId, s]));
  return channels.map((c) => {
    const sync = syncOf.get(c.id);
    return {
      id: c.id,
      name: c.name,
      externalId: c.externalId,
      workspaceName: c.workspaceName,
      connected: c.connected,
      lastPublishedAt: c.lastPublishedAt,
      failureKind: c.failureKind ?? sync?.failureKind ?? null,
      failureMessage: c.failureKind ? c.failureMessage : (sync?.failureMessage ?? null),
      reviews: sync?.reviews ?? 0,
      reviewsSyncedAt: sync?.lastSyncedAt ?? null,
    };
  });
}
