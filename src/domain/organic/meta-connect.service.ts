// Connect Facebook Pages / Instagram: after Facebook Login, the user token is kept sealed in a
// channel connection (the connection id as additional data); the admin maps each Page and each
// Instagram account linked to a Page to a workspace, which makes (or reconnects) a channel with the
// Page token Meta derives from the user token, sealed with the channel id as additional data. The
// tokens never reach a page or a log.
import type { Db } from '../../db/database.ts';
import { PlatformError } from '../../integrations/ad-platform.ts';
import type { Clock } from '../../platform/clock.ts';
import { DomainError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { Sealer } from '../../platform/sealing.ts';
import {
  findConnection,
  findMetaChannels,
  insertConnection,
  upsertMetaChannels,
  workspaceExists,
  type MetaChannelRow,
} from './meta-connect.repository.ts';

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

/** Keeps the user token sealed in a new connection; returns the connection id. */
export async function createMetaConnection(
  deps: MetaConnectDeps,
  hubId: string,
  token: { accessToken: string; expiresAt: Date | null },
): Promise<string> {
  const id = newId('cc');
  await insertConnection(deps.db, {
    id,
    hubId,
    label: 'Meta (signed in with Facebook)',
    tokenSealed: deps.sealer.seal(token.accessToken, id),
    tokenExpiresAt: token.expiresAt,
  });
  return id;
}

async function listedPages(deps: MetaConnectDeps, hubId: string, connectionId: string): Promise<ListedPage[]> {
  const connection = await findConnection(deps.db, hubId, connectionId);
  if (!connection) throw new DomainError('not_found', 'This hub has no such Meta connection: connect again.');
  const userToken = deps.sealer.open(connection.token_sealed, connection.id);
  try {
    return await deps.pages.listPages(userToken);
  } catch (error) {
    if (error instanceof PlatformError)
      throw new DomainError('rejected', `Meta did not list the Pages: ${error.platformMessage ?? error.message}`);
    throw error;
  }
}

export async function choosablePages(deps: MetaConnectDeps, hubId: string, connectionId: string): Promise<ChoosablePage[]> {
  return (await listedPages(deps, hubId, connectionId)).map(({ id, name, instagram }) => ({ id, name, instagram }));
}

export async function metaChannels(db: Db, hubId: string): Promise<MetaChannelRow[]> {
  return findMetaChannels(db, hubId);
}

/**
 * Maps the chosen Pages / Instagram accounts to workspaces. The Page tokens are read afresh from
 * Meta (never carried by the form); a choice naming a Page the token does not list is refused.
 */
export async function mapMetaChannels(
  deps: MetaConnectDeps,
  hubId: string,
  connectionId: string,
  choices: { platform: 'facebook' | 'instagram'; externalId: string; workspaceId: string }[],
): Promise<{ id: string; created: boolean }[]> {
  if (choices.length === 0) throw new DomainError('invalid', 'Choose a workspace for at least one Page or Instagram account.');
  for (const c of choices)
    if (!(await workspaceExists(deps.db, hubId, c.workspaceId))) throw new DomainError('invalid', 'A chosen workspace is not in this hub.');
  const pages = await listedPages(deps, hubId, connectionId);
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
  return upsertMetaChannels(deps.db, hubId, connectionId, channels);
}
