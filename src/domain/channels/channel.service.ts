import type { Db } from '../../db/database.ts';
import type { SocialPlatform } from '../../db/schema.ts';
import type { Caller } from '../caller.ts';
import { DEFAULT_PAGE_SIZE } from '../../policy.ts';
import { decodePosition, toPage, type Page } from '../keyset.ts';
import { narrowScope, scopeOf } from '../scope.ts';
import type { Channel } from './channel.ts';
import { findChannelPage } from './channel.repository.ts';

export const CHANNEL_CURSOR = 'channels';

export interface ListChannelsInput {
  workspaceId?: string;
  platform?: SocialPlatform;
  limit?: number;
  cursor?: string;
}

/** The social channels the caller can post to, oldest first. */
export async function listChannels(db: Db, caller: Caller, input: ListChannelsInput): Promise<Page<Channel>> {
  const limit = input.limit ?? DEFAULT_PAGE_SIZE;
  const scope = narrowScope(scopeOf(caller), input.workspaceId);
  if (!scope) return { data: [], nextCursor: null };
  const after = input.cursor === undefined ? undefined : decodePosition(CHANNEL_CURSOR, input.cursor);
  return toPage(CHANNEL_CURSOR, await findChannelPage(db, { scope, platform: input.platform, after, limit }), limit);
}
