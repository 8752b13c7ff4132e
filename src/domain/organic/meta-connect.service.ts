// Connect Facebook Pages / Instagram: after Facebook Login, the user token waits for the admin's
// choice in the session-bound pending store (src/domain/ad-sync/pending-connection.ts, kind
// META_PAGES_PENDING), as the ad accounts' and Business Profile's tokens do: no connection exists
// before the choice. The admin maps each Page and each Instagram account linked to a Page to a
// workspace; only then is a channel connection made, holding the user token sealed with the
// connection id as additional data, with a channel per mapped Page or account (made, or
// reconnected) holding the Page token Meta derives from the user token, sealed with the channel id.
// The tokens never reach a page or a log.
import type { Db } from '../../db/database.ts';
import { PlatformError } from '../../integrations/ad-platform.ts';
import type { Clock } from '../../platform/clock.ts';
import { DomainError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { Sealer } from '../../platform/sealing.ts';
import { findMetaChannels, saveMetaConnection, workspaceExists, type MetaChannelRow } from './meta-connect.repository.ts';

/**
 * The pending store's platform for a Facebook user token waiting for the Pages chooser: the ad
 * accounts' chooser does not take it (its platforms are the ad platforms), nor this one theirs.
 */
export const META_PAGES_PENDING = 'meta_pages';

/** A Page as the user's token lists it (MetaPagesClient.listPages). */
export interface ListedPage {
  id: string;
  name: string;
  accessToken: string;
  instagram: { id: string; username: string } | null;
}

export interface MetaConnectDeps {
  db: Db;
  clock: Clock;
  sealer: Sealer;
  pages: { listPages(userToken: string): Promise<ListedPage[]> };
}

/** What the chooser shows: each Page and Instagram account, without tokens. */
export interface ChoosablePage {
  id: string;
  name: string;
  instagram: { id: string; username: string } | null;
}

export type { MetaChannelRow };

/** The Facebook sign-in the admin chooses from: the long-lived user token and its expiry. Never logged. */
export interface MetaSignIn {
  userToken: string;
  expiresAt: Date | null;
}

async function listedPages(deps: MetaConnectDeps, signIn: MetaSignIn): Promise<ListedPage[]> {
  try {
    return await deps.pages.listPages(signIn.userToken);
  } catch (error) {
    if (error instanceof PlatformError)
      throw new DomainError('rejected', `Meta did not list the Pages: ${error.platformMessage ?? error.message}`);
    throw error;
  }
}

export async function choosablePages(deps: MetaConnectDeps, signIn: MetaSignIn): Promise<ChoosablePage[]> {
  return (await listedPages(deps, signIn)).map(({ id, name, instagram }) => ({ id, name, instagram }));
}

export async function metaChannels(db: Db, hubId: string): Promise<MetaChannelRow[]> {
  return findMetaChannels(db, hubId);
}

/**
 * Maps the chosen Pages / Instagram accounts to workspaces: one new connection holding the user
 * token, and the chosen channels, in one transaction. The Page tokens are read afresh from Meta
 * (never carried by the form); a choice naming a Page the token does not list is refused, and then
 * nothing is stored.
 */
export async function mapMetaChannels(
  deps: MetaConnectDeps,
  hubId: string,
  signIn: MetaSignIn,
  choices: { platform: 'facebook' | 'instagram'; externalId: string; workspaceId: string }[],
): Promise<{ connectionId: string; channels: { id: string; created: boolean }[] }> {
  if (choices.length === 0) throw new DomainError('invalid', 'Choose a workspace for at least one Page or Instagram account.');
  for (const c of choices)
    if (!(await workspaceExists(deps.db, hubId, c.workspaceId))) throw new DomainError('invalid', 'A chosen workspace is not in this hub.');
  const pages = await listedPages(deps, signIn);
  const channels = choices.map((c) => {
    const page = pages.find((p) => (c.platform === 'facebook' ? p.id === c.externalId : p.instagram?.id === c.externalId));
    if (!page) throw new DomainError('invalid', 'A chosen Page or Instagram account is not one this Facebook sign-in can manage.');
    return {
      newId: newId('ch'),
      workspaceId: c.workspaceId,
      platform: c.platform,
      externalId: c.externalId,
      name: c.platform === 'facebook' ? page.name : `@${page.instagram!.username}`,
      handle: c.platform === 'instagram' ? page.instagram!.username : null,
      seal: (channelId: string) => deps.sealer.seal(page.accessToken, channelId),
    };
  });
  const connectionId = newId('cc');
  const made = await saveMetaConnection(
    deps.db,
    {
      id: connectionId,
      hubId,
      label: 'Meta (signed in with Facebook)',
      tokenSealed: deps.sealer.seal(signIn.userToken, connectionId),
      tokenExpiresAt: signIn.expiresAt,
    },
    channels,
  );
  return { connectionId, channels: made };
}
