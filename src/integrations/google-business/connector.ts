// Publishing to a Google Business Profile location (accounts.locations.localPosts). The API takes
// no idempotency key, so a create that went out without an answer is DeliveryUnconfirmed and the
// publisher reconciles it with `find`: the location's local posts, matched by their summary
// (exactly the post's text) and created at or after the attempt began.
import { DeliveryUnconfirmed, PlatformError } from '../ad-platform.ts';
import type { Connector, OutgoingChannel, OutgoingPost, Publication } from '../channel-platform.ts';
import { NoAnswer } from '../google/transport.ts';
import { type GoogleBusinessClient, LOCATION_NAME } from './client.ts';

/**
 * A local post's summary holds at most 1,500 characters (Business Profile Help › "Create posts":
 * "up to 1,500 characters"); the API refuses longer ones with INVALID_ARGUMENT.
 */
export const GOOGLE_BUSINESS_SUMMARY_MAX = 1500;
/** Photos per local post we send (the API takes a list; the Business Profile shows up to 10). */
export const GOOGLE_BUSINESS_PHOTOS_MAX = 10;

/**
 * Why Business Profile would refuse this post, before anything is sent (null: it would take it):
 * local posts carry photos, not video, and a summary of at most 1,500 characters.
 */
export function googleBusinessRefusal(post: { text: string; media: { kind: string }[] }): string | null {
  if (post.media.some((m) => m.kind === 'video')) return 'Google Business Profile posts take photos, not video';
  if ([...post.text].length > GOOGLE_BUSINESS_SUMMARY_MAX)
    return `Google Business Profile posts hold at most ${GOOGLE_BUSINESS_SUMMARY_MAX} characters (this one has ${[...post.text].length})`;
  if (post.text.trim() === '' && post.media.length === 0) return 'a Google Business Profile post needs text or a photo';
  if (post.media.length > GOOGLE_BUSINESS_PHOTOS_MAX)
    return `Google Business Profile posts take at most ${GOOGLE_BUSINESS_PHOTOS_MAX} photos`;
  return null;
}

function target(channel: OutgoingChannel): { location: string; refreshToken: string } {
  if (channel.externalId === null || !LOCATION_NAME.test(channel.externalId) || !channel.secret)
    throw new PlatformError(
      'needs_reconnect',
      'The channel is not connected to a Business Profile location; connect Google Business Profile again',
    );
  return { location: channel.externalId, refreshToken: channel.secret };
}

export function createGoogleBusinessConnector(client: GoogleBusinessClient): Connector {
  return {
    async publish(post: OutgoingPost, channel: OutgoingChannel, signal?: AbortSignal): Promise<Publication> {
      const refusal = googleBusinessRefusal(post);
      if (refusal) throw new PlatformError('invalid_request', refusal, { platformMessage: refusal });
      const { location, refreshToken } = target(channel);
      const photoUrls = post.media.map((m) => m.url).filter((url): url is string => url !== null);
      if (photoUrls.length < post.media.length)
        throw new PlatformError('invalid_request', 'a photo of the post has no stored bytes to send to Google');
      let created;
      try {
        created = await client.createLocalPost(refreshToken, location, { summary: post.text, photoUrls }, signal);
      } catch (error) {
        if (error instanceof NoAnswer) throw new DeliveryUnconfirmed(error.message);
        throw error;
      }
      // localPosts.create answers 200 with the post, whose state may be REJECTED ("This post was
      // rejected due to content policy violation", LocalPostState): a refusal, not a publication.
      if (created.state === 'REJECTED')
        throw new PlatformError('rejected', 'Google rejected the post for a content policy violation', {
          platformMessage: 'This post was rejected due to content policy violation',
          platformCode: 'REJECTED',
        });
      // PROCESSING: Google took it and reviews it before it shows; it is published as far as we can act.
      return { externalId: created.name, ...(created.searchUrl ? { url: created.searchUrl } : {}) };
    },

    async find(post: OutgoingPost, channel: OutgoingChannel, since: Date, signal?: AbortSignal): Promise<Publication | null> {
      const { location, refreshToken } = target(channel);
      const found = await client.findLocalPost(
        refreshToken,
        location,
        (p) => p.summary === post.text && Date.parse(p.createTime) >= since.getTime() && p.state !== 'REJECTED',
        signal,
      );
      return found ? { externalId: found.name, ...(found.searchUrl ? { url: found.searchUrl } : {}) } : null;
    },
  };
}
