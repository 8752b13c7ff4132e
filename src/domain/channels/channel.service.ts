import type { Db } from '../../db/database.ts';
import type { SocialPlatform } from '../../db/schema.ts';
import type { Caller } from '../caller.ts';
import { DEFAULT_PAGE_SIZE } from '../../policy.ts';
import { toPage, type ListCursor, type Page, type Position } from '../keyset.ts';
import { narrowScope, scopeOf } from '../scope.ts';
import type { Channel } from './channel.ts';
import { findChannelPage } from './channel.repository.ts';

/** The kind of this list's cursors (the surface's cursor parameter is declared with it). */
export const CHANNEL_CURSOR = 'channels';

export interface ListChannelsInput {
  workspaceId?: string;
  platform?: SocialPlatform;
  limit?: number;
  cursor: ListCursor<Position>;
}

/** The social channels the caller can post to, oldest first. */
export async function listChannels(db: Db, caller: Caller, input: ListChannelsInput): Promise<Page<Channel>> {
  const limit = input.limit ?? DEFAULT_PAGE_SIZE;
  const scope = narrowScope(scopeOf(caller), input.workspaceId);
  if (!scope) return { data: [], nextCursor: null };
  return toPage(input.cursor, await findChannelPage(db, { scope, platform: input.platform, after: input.cursor.after, limit }), limit);
}
