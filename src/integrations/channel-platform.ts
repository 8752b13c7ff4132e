// What every organic network's connector gives the publisher (src/domain/posts/): the post and
// channel as a connector needs them, the publication it answers with, and the Connector
// interface. Declared here, below the domain, so connectors (src/integrations/*) can implement it;
// src/domain/posts/connector.ts re-exports it.

/** A post on its way out, as a connector needs it. */
export interface OutgoingPost {
  id: string;
  hubId: string;
  workspaceId: string;
  text: string;
  media: OutgoingMedia[];
}

export interface OutgoingMedia {
  id: string;
  kind: 'image' | 'video';
  /** The sniffed type, e.g. image/jpeg or video/mp4. */
  contentType: string;
  width: number;
  height: number;
  storageKey: string | null;
  /**
   * Where the network fetches the bytes: a signed, expiring URL under BASE_URL that works without
   * a session and reveals nothing else (Instagram and Meta fetch media by URL). Null when the post
   * has no stored bytes (imported metadata).
   */
  url: string | null;
}

export interface OutgoingChannel {
  id: string;
  /** instagram, facebook, google_business, … (db/schema.ts's SocialPlatform). */
  platform: string;
  name: string;
  handle: string | null;
  /** The network's id of the channel (Page id, Instagram user id, `accounts/…/locations/…`); null: sandbox channel. */
  externalId: string | null;
  /** The unsealed token the network takes for this channel (a Page token, a Google refresh token). Never logged. */
  secret: string | null;
}

/** A publication as the network knows it. */
export interface Publication {
  externalId: string;
  /** Its public address, when the network gives one (a permalink, a search URL). */
  url?: string;
}

/**
 * Sends a post to one social channel. None of the networks documents an idempotency key for
 * publishing (Meta's Graph API, Instagram's content publishing and Business Profile's localPosts
 * take none), so exactly-once is the publisher's job: it sends a delivery once, and a delivery
 * that may or may not have been made is looked up with `find` before anything is sent again.
 *
 * `publish` resolves with the publication, or throws:
 * - `PlatformError` (src/integrations/ad-platform.ts): the network refused, with a kind a person
 *   can act on and the network's own message; nothing was published. Kinds `platform_error` (the
 *   network failed on its side or said the error is temporary) and `unreachable` are sent again
 *   after a backoff, so a connector throws them only when nothing can have been published: a
 *   failure before the publishing request could be sent (no connection opened, an earlier step of
 *   the flow), or an error the network documents as "not done, retry";
 * - `PlatformThrottled`: the network asked us to wait; nothing was published, send again later;
 * - `DeliveryUnconfirmed`: the request may have been made (written without an answer, or answered
 *   in a way that does not say whether it was done); the delivery is reconciled by `find`;
 * - `PublishNotReady` (when `signal` aborts while the network is still preparing the post, before
 *   the publishing request): nothing was published; the next attempt is given its `prepared`
 *   (what the network prepared, e.g. an Instagram container) and goes on from there.
 *
 * `signal` is aborted when the publisher gives the call up (its timeout): from then on the
 * connector sends no publishing request (an Instagram media_publish after its container steps, a
 * Page post, a local post) and abandons one in flight. The publisher relies on it: a delivery's
 * publication is requested within PUBLISH_TIMEOUT_MS of its attempt or never, so the lookup after
 * the settle delay (longer) sees every publication the attempt made, even one made by a publisher
 * that was still running when another took its post over.
 *
 * `find` looks for this post's publication on the channel made at or after `since` (the start of
 * the unconfirmed attempt): the Page's recent posts, the Instagram media list, the location's
 * local posts. It resolves with the publication or null when there is none; it throws as
 * `publish` does when it cannot tell, or LookupAmbiguous (ad-platform.ts) when more than one
 * publication could be this post's and nothing the network documents tells which.
 */
export interface Connector {
  publish(post: OutgoingPost, channel: OutgoingChannel, signal?: AbortSignal, prepared?: string): Promise<Publication>;
  find(post: OutgoingPost, channel: OutgoingChannel, since: Date, signal?: AbortSignal): Promise<Publication | null>;
}

/** What a network's pre-send rules read of a post: its text and its media's kind and type. */
export interface PostToCheck {
  text: string;
  /** `contentType` unknown (undefined): the rules on a media's type are not checked. */
  media: { kind: 'image' | 'video'; contentType?: string }[];
}

/** One documented rule of a network that a post breaks. */
export interface RuleBroken {
  /** What breaks it: the post's text, or its media (`mediaIndex`: the first item that does, when one item does). */
  part: 'text' | 'media';
  mediaIndex?: number;
  /** The rule and how the post breaks it, in words: "An Instagram caption has at most 30 hashtags (this one has 31)". */
  message: string;
}

/**
 * A network's rules for a post, as it documents them: declared once, with the network's client
 * (src/integrations/<network>/rules.ts), and checked twice with the same code: when a post is made
 * (src/domain/posts/post.ts, so a post scheduled for next week is refused now, not when it is due)
 * and by the connector before it sends anything (a post made before a rule changed, or imported).
 */
export interface NetworkPostRules {
  /** The network as a person names it: "Instagram". */
  network: string;
  /** The longest text it takes, in characters (Unicode code points, as every limit here counts them). */
  maxTextChars: number;
  /** A post needs an image or a video. */
  needsMedia: boolean;
  /** Every rule the post breaks, in the order they are checked; empty: the network would take it. */
  broken(post: PostToCheck): RuleBroken[];
}

/** Characters as the networks' limits count them (and as the post's own text limits do): code points, not UTF-16 units. */
export const characters = (text: string): number => {
  let n = 0;
  for (const _ of text) n++;
  return n;
};
