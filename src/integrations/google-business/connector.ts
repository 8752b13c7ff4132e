// Publishing to a Google Business Profile location (accounts.locations.localPosts). The API takes
// no idempotency key, so a create that went out without an answer, whose answer is a temporary
// failure that does not say the post was not made, or a 200 whose body cannot be read (cut off, not
// the post: Google made it all the same) (client.ts: NoAnswer), is DeliveryUnconfirmed and
// the publisher reconciles it with `find`: the location's local posts, matched by their summary
// (exactly the post's text) and created at or after the attempt began. A `platform_error` or
// `unreachable` this connector throws comes before the create was sent (the token refresh, a
// connection that never opened): nothing was made, and the publisher sends it again later.
import { DeliveryUnconfirmed, PlatformError } from '../ad-platform.ts';
import type { Connector, OutgoingChannel, OutgoingPost, Publication } from '../channel-platform.ts';
import { NoAnswer } from '../google/transport.ts';
import { type GoogleBusinessClient, LOCATION_NAME } from './client.ts';

/**
 * A local post's summary holds at most 1,500 characters: the description limit of a post in the
 * Business Profile (Business Profile Help, "Create & manage posts",
 * https://support.google.com/business/answer/7342169; 1,500 characters since 2018, when Google
 * replaced the 100–300 word rule). Surprising for an API: the LocalPost reference's `summary`
 * states no length, yet a longer one is refused with INVALID_ARGUMENT.
 */
export const GOOGLE_BUSINESS_SUMMARY_MAX = 1500;
/**
 * Photos per local post we send. Google documents no count (LocalPost.media is a list, "sourceUrl
 * is the only supported data field"); 10 is the post's own limit here (src/domain/posts/post.ts
 * MAX_IMAGES), so no post that could be scheduled is refused for its photos alone.
 */
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
