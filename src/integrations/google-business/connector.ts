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
import { GOOGLE_BUSINESS_POST_RULES } from './rules.ts';

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
      // Refused before anything is sent: what Business Profile refuses (./rules.ts).
      const refusal = GOOGLE_BUSINESS_POST_RULES.broken(post)[0]?.message;
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
