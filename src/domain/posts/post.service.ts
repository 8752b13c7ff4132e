import type { PostStatus } from '../../db/schema.ts';
import { ApiError, invalidRequest } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { parseDate, parseTimestamp } from '../../platform/time.ts';
import { scopeOf, type MainContext } from '../../surfaces/main-api/context.ts';
import { findWorkspaceChannels } from '../channels/channel.repository.ts';
import { withIdempotency } from '../idempotency/idempotency.ts';
import { DEFAULT_PAGE_SIZE, decodePosition, toPage, type Page } from '../keyset.ts';
import { findWorkspaceMedia } from '../media/media.repository.ts';
import { narrowScope, targetWorkspace } from '../scope.ts';
import { postProblems, type NEW_POST_STATUSES, type Post } from './post.ts';
import { findPost, findPostPage, insertPost } from './post.repository.ts';

export const POST_CURSOR = 'posts';
const DAY_MS = 86_400_000;

export interface CreatePostInput {
  workspaceId?: string;
  text: string;
  channelIds?: string[];
  mediaIds?: string[];
  status: (typeof NEW_POST_STATUSES)[number];
  scheduledAt?: string;
  publishNow?: boolean;
}

/**
 * Creates a draft or a scheduled post in the caller's workspace (or, hub-wide, the one named),
 * after checking it against every rule at once. Honours the request's Idempotency-Key.
 */
export async function createPost(ctx: MainContext, input: CreatePostInput): Promise<Post> {
  const scope = scopeOf(ctx.principal);
  const workspaceId = await targetWorkspace(ctx.db, scope, input.workspaceId);
  const draft = {
    workspaceId,
    text: input.text,
    status: input.status,
    scheduledAt: input.scheduledAt === undefined ? null : parseTimestamp(input.scheduledAt)!,
    publishNow: input.publishNow ?? false,
    channelIds: input.channelIds ?? [],
    mediaIds: input.mediaIds ?? [],
  };
  return withIdempotency(ctx, 'create_post', { ...input, workspaceId }, async (trx) => {
    const now = ctx.clock.now();
    const channels = await findWorkspaceChannels(trx, scope.hubId, workspaceId, draft.channelIds);
    const media = await findWorkspaceMedia(trx, scope.hubId, workspaceId, draft.mediaIds);
    const issues = postProblems(draft, new Map(channels.map((c) => [c._id, c])), new Map(media.map((m) => [m._id, m])), now);
    if (issues.length > 0) throw invalidRequest(issues);
    const id = newId('post');
    await insertPost(trx, {
      id,
      hubId: scope.hubId,
      workspaceId,
      text: draft.text,
      status: draft.status,
      scheduledAt: draft.publishNow ? now : draft.scheduledAt,
      createdBy: ctx.principal.user.id,
      createdAt: now.toISOString(),
      channelIds: draft.channelIds,
      mediaIds: draft.mediaIds,
    });
    return (await findPost(trx, scope, id))!;
  });
}

export async function getPost(ctx: MainContext, id: string): Promise<Post> {
  const post = await findPost(ctx.db.kysely, scopeOf(ctx.principal), id);
  if (!post) throw new ApiError(404, 'not_found', `No post ${id}.`);
  return post;
}

export interface ListPostsInput {
  workspaceId?: string;
  status?: PostStatus;
  from?: string;
  to?: string;
  limit?: number;
  cursor?: string;
}

/** `from`: a timestamp, or a date meaning its first instant (00:00 UTC). */
function rangeStart(text: string): Date {
  return parseTimestamp(text) ?? parseDate(text)!;
}

/** `to` (inclusive): a timestamp, or a date meaning up to the end of that UTC day. */
function rangeEndExclusive(text: string): Date {
  const at = parseTimestamp(text);
  if (at) return new Date(at.getTime() + 1);
  return new Date(parseDate(text)!.getTime() + DAY_MS);
}

/** Posts in scope ordered by (calendarAt, _id), optionally by workspace, status and date range. */
export async function listPosts(ctx: MainContext, input: ListPostsInput): Promise<Page<Post>> {
  const limit = input.limit ?? DEFAULT_PAGE_SIZE;
  const from = input.from === undefined ? undefined : rangeStart(input.from);
  const before = input.to === undefined ? undefined : rangeEndExclusive(input.to);
  if (from && before && before.getTime() <= from.getTime()) throw invalidRequest([{ field: 'to', message: 'must not be before from' }]);
  const scope = narrowScope(scopeOf(ctx.principal), input.workspaceId);
  if (!scope) return { data: [], nextCursor: null };
  const after = input.cursor === undefined ? undefined : decodePosition(POST_CURSOR, input.cursor);
  return toPage(POST_CURSOR, await findPostPage(ctx.db, { scope, status: input.status, from, before, after, limit }), limit);
}
