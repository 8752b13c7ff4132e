import type { DeliveryStatus, PostStatus, SocialPlatform } from '../../db/schema.ts';
import { characters } from '../../integrations/channel-platform.ts';
import type { Issue } from '../../platform/errors.ts';
import type { Channel } from '../channels/channel.ts';
import type { MediaAsset } from '../media/media.ts';
import { MAX_IMAGES_ON, NEEDS_MEDIA, NETWORK_RULES, TEXT_LIMITS } from './platform-rules.ts';

export { TEXT_LIMITS } from './platform-rules.ts';

export const POST_STATUSES: readonly PostStatus[] = ['draft', 'scheduled', 'publishing', 'published', 'failed'];
/** What a new post can be: kept as a draft, or scheduled (for a time, or for now). */
export const NEW_POST_STATUSES = ['draft', 'scheduled'] as const;

export const MAX_TEXT_LENGTH = Math.max(...Object.values(TEXT_LIMITS));
export const MAX_IMAGES = 10;
export const MAX_CHANNELS = 20;
/** How far ahead a post can be scheduled. */
const MAX_SCHEDULE_AHEAD_MS = 366 * 24 * 60 * 60 * 1000;

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

/** What the rules read of a target channel: its platform and state, and its name to say which one breaks a rule. */
export type ChannelToCheck = Pick<Channel, 'platform' | 'connected'> & { name?: string };
/** What the rules read of a media asset; without its type (an import), the networks' rules on types are left to the connector. */
export type MediaToCheck = Pick<MediaAsset, 'kind'> & { contentType?: string };

/**
 * Every reason the post cannot be saved, one issue per field (all reported at once). `channels`
 * and `media` are those of the post's workspace among the ids it names; an id missing from them
 * is in another workspace or hub, or does not exist (the same words either way). `networkRules:
 * false` leaves out the networks' further rules (image types, hashtags, …; their text limits and
 * need of media still apply): for an imported record of a post published elsewhere, never sent.
 */
export function postProblems(
  post: PostDraft,
  channels: Map<string, ChannelToCheck>,
  media: Map<string, MediaToCheck>,
  now: Date,
  o: { networkRules?: boolean } = {},
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

  const length = characters(post.text);
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
  if (unknownMedia < 0 && o.networkRules !== false)
    issues.push(...networkIssues(post, channels, attached, new Set(issues.map((i) => i.field))));

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

/**
 * The networks' own rules (platform-rules.ts) the post breaks on its target channels, each naming
 * the channel, the network and the rule: "Instagram channel ch_1 (Brewline Denver) cannot take
 * it: An Instagram caption has at most 30 hashtags (this one has 31)". A field the post's own rules
 * already refused (`taken`: a text over the limit, too many images) keeps that one issue.
 */
function networkIssues(post: PostDraft, channels: Map<string, ChannelToCheck>, attached: MediaToCheck[], taken: Set<string>): Issue[] {
  // field → the rule's words → the network and the channels it refuses the post for
  const found = new Map<string, Map<string, { network: string; names: string[] }>>();
  const toCheck = { text: post.text, media: attached.map((m) => ({ kind: m.kind, contentType: m.contentType })) };
  for (const id of new Set(post.channelIds)) {
    const channel = channels.get(id);
    const rules = channel && NETWORK_RULES[channel.platform];
    if (!rules) continue;
    for (const broken of rules.broken(toCheck)) {
      const field = broken.part === 'text' ? 'text' : broken.mediaIndex === undefined ? 'mediaIds' : `mediaIds.${broken.mediaIndex}`;
      if (taken.has(field)) continue;
      if (!found.has(field)) found.set(field, new Map());
      const refusals = found.get(field)!;
      if (!refusals.has(broken.message)) refusals.set(broken.message, { network: rules.network, names: [] });
      refusals.get(broken.message)!.names.push(channel.name ? `${id} (${channel.name})` : id);
    }
  }
  return [...found].map(([field, refusals]) => ({
    field,
    message: [...refusals]
      .map(([words, { network, names }]) => `${network} channel${names.length > 1 ? 's' : ''} ${names.join(', ')} cannot take it: ${words}`)
      .join('; '),
  }));
}
