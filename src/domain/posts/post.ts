import type { DeliveryStatus, PostStatus, SocialPlatform } from '../../db/schema.ts';
import type { Issue } from '../../platform/errors.ts';
import type { Channel } from '../channels/channel.ts';
import type { MediaAsset } from '../media/media.ts';

export const POST_STATUSES: readonly PostStatus[] = ['draft', 'scheduled', 'publishing', 'published', 'failed'];
/** What a new post can be: kept as a draft, or scheduled (for a time, or for now). */
export const NEW_POST_STATUSES = ['draft', 'scheduled'] as const;

/** Post text limits per platform, in characters (Unicode code points). */
export const TEXT_LIMITS: Record<SocialPlatform, number> = {
  instagram: 2_200,
  facebook: 63_206,
  linkedin: 3_000,
  x: 280,
  tiktok: 2_200,
  google_business: 1_500,
};
export const MAX_TEXT_LENGTH = Math.max(...Object.values(TEXT_LIMITS));
export const MAX_IMAGES = 10;
export const MAX_CHANNELS = 20;
/** How far ahead a post can be scheduled. */
const MAX_SCHEDULE_AHEAD_MS = 366 * 24 * 60 * 60 * 1000;

// Platforms that cannot carry a text-only post, and X's smaller image limit.
const NEEDS_MEDIA: ReadonlySet<SocialPlatform> = new Set(['instagram', 'tiktok']);
const MAX_IMAGES_ON: Partial<Record<SocialPlatform, number>> = { x: 4 };

export interface Delivery {
  channelId: string;
  platform: SocialPlatform;
  status: DeliveryStatus;
  externalId: string | null;
  error: string | null;
  deliveredAt: string | null;
  /** Why it failed (a kind a person can act on), or why it waits (throttled, no_answer, publisher_stopped). */
  failureKind: string | null;
  /** The network's own words about the failure or the wait. */
  platformMessage: string | null;
  /** The publication's public address, when the network gives one. */
  url: string | null;
  /** When the current (or last) attempt to send began. */
  attemptedAt: string | null;
}

/** A post as the main API presents it. */
export interface Post {
  _id: string;
  workspaceId: string;
  text: string;
  channelIds: string[];
  mediaIds: string[];
  status: PostStatus;
  scheduledAt: string | null;
  publishedAt: string | null;
  error: string | null;
  calendarAt: string;
  deliveries: Delivery[];
  createdBy: string | null;
  createdAt: string;
  updatedAt: string;
}

function textLength(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

export interface PostDraft {
  workspaceId: string;
  text: string;
  status: (typeof NEW_POST_STATUSES)[number];
  /** As requested; null for a draft without a date or a post to publish now. */
  scheduledAt: Date | null;
  /** Schedule for the current instant: the publisher sends it on its next round. */
  publishNow: boolean;
  channelIds: string[];
  mediaIds: string[];
}

/**
 * Every reason the post cannot be saved, one issue per field (all reported at once). `channels`
 * and `media` are those of the post's workspace among the ids it names; an id missing from them
 * is in another workspace or hub, or does not exist (the same words either way).
 */
export function postProblems(
  post: PostDraft,
  channels: Map<string, Pick<Channel, 'platform' | 'connected'>>,
  media: Map<string, Pick<MediaAsset, 'kind'>>,
  now: Date,
): Issue[] {
  const issues: Issue[] = [];

  const unknownChannel = post.channelIds.findIndex((id) => !channels.has(id));
  if (unknownChannel >= 0) {
    issues.push({ field: `channelIds.${unknownChannel}`, message: `is not a channel of workspace ${post.workspaceId}` });
  }
  const unknownMedia = post.mediaIds.findIndex((id) => !media.has(id));
  if (unknownMedia >= 0) {
    issues.push({ field: `mediaIds.${unknownMedia}`, message: `is not a media asset of workspace ${post.workspaceId}` });
  }
  const targets = post.channelIds.flatMap((id) => channels.get(id) ?? []);
  const attached = post.mediaIds.flatMap((id) => media.get(id) ?? []);
  const platforms = [...new Set(targets.map((c) => c.platform))];

  const length = textLength(post.text);
  const over = platforms.filter((p) => length > TEXT_LIMITS[p]);
  if (over.length > 0) {
    const limits = over.map((p) => `${p} allows ${TEXT_LIMITS[p].toLocaleString('en-US')}`).join(', ');
    issues.push({ field: 'text', message: `is ${length.toLocaleString('en-US')} characters; ${limits}` });
  } else if (post.text.trim() === '' && post.mediaIds.length === 0) {
    issues.push({ field: 'text', message: 'must not be blank when the post has no media' });
  }

  const videos = attached.filter((m) => m.kind === 'video').length;
  const images = attached.length - videos;
  const needsMedia = platforms.filter((p) => NEEDS_MEDIA.has(p));
  const imageCap = platforms.filter((p) => (MAX_IMAGES_ON[p] ?? MAX_IMAGES) < images);
  if (videos > 0 && images > 0) {
    issues.push({ field: 'mediaIds', message: `cannot mix images and a video: attach up to ${MAX_IMAGES} images or exactly one video` });
  } else if (videos > 1) {
    issues.push({ field: 'mediaIds', message: 'can hold only one video' });
  } else if (images > MAX_IMAGES) {
    issues.push({ field: 'mediaIds', message: `can hold at most ${MAX_IMAGES} images` });
  } else if (imageCap.length > 0) {
    issues.push({ field: 'mediaIds', message: imageCap.map((p) => `${p} allows at most ${MAX_IMAGES_ON[p]} images`).join(', ') });
  } else if (unknownMedia < 0 && attached.length === 0 && needsMedia.length > 0) {
    issues.push({ field: 'mediaIds', message: `must hold an image or a video: ${needsMedia.join(' and ')} posts cannot be text only` });
  }

  if (post.status === 'scheduled') {
    if (post.channelIds.length === 0) issues.push({ field: 'channelIds', message: 'must name at least one channel to schedule a post' });
    const disconnected = post.channelIds.findIndex((id) => channels.get(id)?.connected === false);
    if (disconnected >= 0 && unknownChannel < 0) {
      issues.push({ field: `channelIds.${disconnected}`, message: 'is disconnected; reconnect it or save the post as a draft' });
    }
  }
  if (post.publishNow) {
    if (post.status !== 'scheduled') issues.push({ field: 'publishNow', message: 'applies only to status scheduled' });
    else if (post.scheduledAt !== null) issues.push({ field: 'publishNow', message: 'cannot be combined with scheduledAt' });
  } else if (post.status === 'scheduled') {
    if (post.scheduledAt === null) {
      issues.push({ field: 'scheduledAt', message: 'is required to schedule a post (or set publishNow: true)' });
    } else if (post.scheduledAt.getTime() <= now.getTime()) {
      issues.push({
        field: 'scheduledAt',
        message: `must be in the future (it is now ${now.toISOString()}); use publishNow: true to publish at once`,
      });
    } else if (post.scheduledAt.getTime() - now.getTime() > MAX_SCHEDULE_AHEAD_MS) {
      issues.push({ field: 'scheduledAt', message: 'must be at most 366 days ahead' });
    }
  }
  return issues;
}
