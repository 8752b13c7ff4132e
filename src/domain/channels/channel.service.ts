import type { SocialPlatform } from '../../db/schema.ts';
import { scopeOf, type MainContext } from '../../surfaces/main-api/context.ts';
import { DEFAULT_PAGE_SIZE, decodePosition, toPage, type Page } from '../keyset.ts';
import { narrowScope } from '../scope.ts';
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
export async function listChannels(ctx: MainContext, input: ListChannelsInput): Promise<Page<Channel>> {
  const limit = input.limit ?? DEFAULT_PAGE_SIZE;
  const scope = narrowScope(scopeOf(ctx.principal), input.workspaceId);
  if (!scope) return { data: [], nextCursor: null };
  const after = input.cursor === undefined ? undefined : decodePosition(CHANNEL_CURSOR, input.cursor);
  return toPage(CHANNEL_CURSOR, await findChannelPage(ctx.db, { scope, platform: input.platform, after, limit }), limit);
}
