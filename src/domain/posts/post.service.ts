import type { Db } from '../../db/database.ts';
import type { PostStatus } from '../../db/schema.ts';
import type { Clock } from '../../platform/clock.ts';
import { invalid, notFound } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { parseDate, parseTimestamp } from '../../platform/time.ts';
import type { Caller } from '../caller.ts';
import { findWorkspaceChannels } from '../channels/channel.repository.ts';
import type { Replayable } from '../idempotency/idempotency.ts';
import { withIdempotency } from '../idempotency/idempotency.service.ts';
import { DEFAULT_PAGE_SIZE } from '../../policy.ts';
import { toPage, type ListCursor, type Page, type Position } from '../keyset.ts';
import { findWorkspaceMedia } from '../media/media.repository.ts';
import { narrowScope, scopeOf, targetWorkspace } from '../scope.ts';
import { postProblems, type NEW_POST_STATUSES, type Post } from './post.ts';
import { findPost, findPostPage, insertPost } from './post.repository.ts';
import { publisherBacklog as readPublisherBacklog, type PublisherBacklog } from './publisher.repository.ts';

/** The kind of this list's cursors (the surface's cursor parameter is declared with it). */
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
 * after checking it against every rule at once. With an idempotency key, a retry gets the first post.
 */
export async function createPost(
  deps: { db: Db; clock: Clock },
  caller: Caller,
  input: CreatePostInput,
  idempotencyKey?: string,
): Promise<Replayable<Post>> {
  const scope = scopeOf(caller);
  const workspaceId = await targetWorkspace(deps.db, scope, input.workspaceId);
  const draft = {
    workspaceId,
    text: input.text,
    status: input.status,
    scheduledAt: input.scheduledAt === undefined ? null : parseTimestamp(input.scheduledAt)!,
    publishNow: input.publishNow ?? false,
    channelIds: input.channelIds ?? [],
    mediaIds: input.mediaIds ?? [],
  };
  return withIdempotency(deps, caller, idempotencyKey, 'create_post', { ...input, workspaceId }, async (trx) => {
    const now = deps.clock.now();
    const channels = await findWorkspaceChannels(trx, scope.hubId, workspaceId, draft.channelIds);
    const media = await findWorkspaceMedia(trx, scope.hubId, workspaceId, draft.mediaIds);
    const issues = postProblems(draft, new Map(channels.map((c) => [c._id, c])), new Map(media.map((m) => [m._id, m])), now);
    if (issues.length > 0) throw invalid(issues);
    const id = newId('post');
    await insertPost(trx, {
      id,
      hubId: scope.hubId,
      workspaceId,
      text: draft.text,
      status: draft.status,
      scheduledAt: draft.publishNow ? now : draft.scheduledAt,
      createdBy: caller.user.id,
      createdAt: now.toISOString(),
      channelIds: draft.channelIds,
      mediaIds: draft.mediaIds,
    });
    return (await findPost(trx, scope, id))!;
  });
}

export async function getPost(db: Db, caller: Caller, id: string): Promise<Post> {
  const post = await findPost(db.kysely, scopeOf(caller), id);
  if (!post) throw notFound(`No post ${id}.`);
  return post;
}

export interface ListPostsInput {
  workspaceId?: string;
  status?: PostStatus;
  from?: string;
  to?: string;
  limit?: number;
  cursor: ListCursor<Position>;
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
export async function listPosts(db: Db, caller: Caller, input: ListPostsInput): Promise<Page<Post>> {
  const limit = input.limit ?? DEFAULT_PAGE_SIZE;
  const from = input.from === undefined ? undefined : rangeStart(input.from);
  const before = input.to === undefined ? undefined : rangeEndExclusive(input.to);
  if (from && before && before.getTime() <= from.getTime()) throw invalid([{ field: 'to', message: 'must not be before from' }]);
  const scope = narrowScope(scopeOf(caller), input.workspaceId);
  if (!scope) return { data: [], nextCursor: null };
  return toPage(
    input.cursor,
    await findPostPage(db, { scope, status: input.status, from, before, after: input.cursor.after, limit }),
    limit,
  );
}

/** The publisher's queue now (for /metrics): posts due and waiting, the oldest one's due time, posts publishing. */
export async function publisherBacklog(db: Db, clock: Clock): Promise<PublisherBacklog> {
  return readPublisherBacklog(db, clock.now());
}
