// Reads a `post` line: a workspace's post in any state but publishing, with its outcome when it has one.

import { MAX_CHANNELS, MAX_IMAGES, MAX_TEXT_LENGTH } from '../../posts/post.ts';
import type { FieldReader } from '../field-reader.ts';
import { IMPORT_POST_STATUSES, type PostRecord } from '../records.ts';

const MAX_ERROR_TEXT = 1_000;

/** The fields a post needs, or may only have, in its status. */
function checkStatusFields(r: FieldReader, post: PostRecord): void {
  const { status, channelIds, scheduledAt, publishedAt, error, externalIds } = post;
  if (status !== 'draft' && channelIds.length === 0 && r.raw('channelIds') !== undefined)
    r.fail('channelIds', `must name at least one channel of a ${status} post`);
  if (status !== 'draft' && r.raw('channelIds') === undefined) r.fail('channelIds', `is required for a ${status} post`);
  if ((status === 'scheduled' || status === 'failed') && scheduledAt === null) r.fail('scheduledAt', `is required for a ${status} post`);
  if (status === 'published' && publishedAt === null) r.fail('publishedAt', 'is required for a published post');
  if (status !== 'published' && publishedAt !== null) r.fail('publishedAt', 'is only for published posts');
  if (status === 'failed' && (error === null || error.trim() === '')) r.fail('error', 'is required for a failed post: say why it failed');
  if (status !== 'failed' && error !== null) r.fail('error', 'is only for failed posts');
  if (Object.keys(externalIds).length > 0 && status !== 'published') r.fail('externalIds', 'is only for published posts');
  for (const channelId of Object.keys(externalIds)) {
    if (!channelIds.includes(channelId)) r.fail(`externalIds.${channelId}`, 'is not one of the post’s channelIds');
  }
}

export function readPost(r: FieldReader): PostRecord {
  const post: PostRecord = {
    type: 'post',
    line: r.line,
    id: r.id('post'),
    workspaceId: r.ref('workspaceId'),
    text: r.textUpTo('text', MAX_TEXT_LENGTH, ''),
    status: r.oneOf('status', IMPORT_POST_STATUSES),
    channelIds: r.idList('channelIds', MAX_CHANNELS),
    mediaIds: r.idList('mediaIds', MAX_IMAGES),
    scheduledAt: r.timestampOrNull('scheduledAt'),
    publishedAt: r.timestampOrNull('publishedAt'),
    error: r.isNull('error') ? null : r.textUpTo('error', MAX_ERROR_TEXT),
    externalIds: r.stringMap('externalIds'),
    createdAt: r.timestampOrNull('createdAt'),
  };
  checkStatusFields(r, post);
  return post;
}
