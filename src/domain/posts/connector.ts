import type { Db } from '../../db/database.ts';
import type { MediaContentType, MediaKind, SocialPlatform } from '../../db/schema.ts';
import type { Clock } from '../../platform/clock.ts';
import { PlatformError } from '../../integrations/ad-platform.ts';
import { newId } from '../../platform/ids.ts';

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
  kind: MediaKind;
  contentType: MediaContentType;
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
  platform: SocialPlatform;
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
 * The request may have reached the network, but no answer did (a timeout after the request was
 * written, a connection reset mid-answer, a process that died after sending). The delivery
 * becomes `unconfirmed`: never sent again blindly, reconciled with `find`. Declared with the
 * platform errors, where the connectors (which cannot import the domain) throw it.
 */
export { DeliveryUnconfirmed } from '../../integrations/ad-platform.ts';

/**
 * Sends a post to one social channel. None of the networks documents an idempotency key for
 * publishing (Meta's Graph API, Instagram's content publishing and Business Profile's localPosts
 * take none), so exactly-once is the publisher's job: it sends a delivery once, and a delivery
 * that may or may not have been made is looked up with `find` before anything is sent again.
 *
 * `publish` resolves with the publication, or throws:
 * - `PlatformError` (src/integrations/ad-platform.ts): the network refused, with a kind a person
 *   can act on and the network's own message; nothing was published;
 * - `PlatformThrottled`: the network asked us to wait; nothing was published, send again later;
 * - `DeliveryUnconfirmed`: the request may have been made; the delivery is reconciled by `find`.
 *
 * `find` looks for this post's publication on the channel made at or after `since` (the start of
 * the unconfirmed attempt): the Page's recent posts, the Instagram media list, the location's
 * local posts. It resolves with the publication or null when there is none; it throws as
 * `publish` does when it cannot tell.
 */
export interface Connector {
  publish(post: OutgoingPost, channel: OutgoingChannel): Promise<Publication>;
  find(post: OutgoingPost, channel: OutgoingChannel, since: Date): Promise<Publication | null>;
}

/**
 * The default connector, for channels not connected to a network: publishes nowhere, records each
 * publication in sandbox_publications and answers with a `sandbox_…` id. Like the networks, it
 * takes no idempotency key: a repeated call publishes again, so a double publication shows.
 * `find` looks the publication up as the real connectors do. Tests can make a channel fail.
 */
export class SandboxConnector implements Connector {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #failing = new Map<string, string>();

  constructor(db: Db, clock: Clock) {
    this.#db = db;
    this.#clock = clock;
  }

  /** Every publication to this channel fails with `reason` until `restoreChannel`. */
  failChannel(channelId: string, reason: string): void {
    this.#failing.set(channelId, reason);
  }

  restoreChannel(channelId: string): void {
    this.#failing.delete(channelId);
  }

  async publish(post: OutgoingPost, channel: OutgoingChannel): Promise<Publication> {
    const reason = this.#failing.get(channel.id);
    if (reason !== undefined) throw new PlatformError('invalid_request', reason, { platformMessage: reason });
    const row = await this.#db.kysely
      .insertInto('sandbox_publications')
      .values({
        id: newId('sandbox'),
        hub_id: post.hubId,
        post_id: post.id,
        channel_id: channel.id,
        platform: channel.platform,
        text: post.text,
        media_count: post.media.length,
        published_at: this.#clock.now(),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return { externalId: row.id };
  }

  async find(post: OutgoingPost, channel: OutgoingChannel, since: Date): Promise<Publication | null> {
    const row = await this.#db.kysely
      .selectFrom('sandbox_publications')
      .select('id')
      .where('hub_id', '=', post.hubId)
      .where('post_id', '=', post.id)
      .where('channel_id', '=', channel.id)
      .where('published_at', '>=', since)
      .orderBy('published_at')
      .limit(1)
      .executeTakeFirst();
    return row ? { externalId: row.id } : null;
  }
}

/** What the registry needs to know of a channel to choose its connector. */
export interface ChannelRoute {
  platform: SocialPlatform;
  /** The channel's connection to a network (channel_connections), or null: a sandbox channel. */
  connectionId: string | null;
}

/**
 * Which connector publishes to a channel: a channel connected to a network (it has a
 * connection_id) goes through that platform's connector ('facebook' and 'instagram': Meta's Pages
 * connector; 'google_business': the Business Profile connector); every other channel (made through
 * the API, imported, the demo's) through the sandbox connector. A connected channel whose platform
 * has no connector on this server gets undefined, and its delivery fails saying so.
 */
export class ChannelConnectors {
  readonly sandbox: Connector;
  readonly #platforms: Partial<Record<SocialPlatform, Connector>>;

  constructor(sandbox: Connector, platforms: Partial<Record<SocialPlatform, Connector>> = {}) {
    this.sandbox = sandbox;
    this.#platforms = { ...platforms };
  }

  /** One connector for every channel, connected or not (tests, the bench). */
  static only(connector: Connector): ChannelConnectors {
    const all = new ChannelConnectors(connector);
    all.#every = connector;
    return all;
  }

  #every: Connector | undefined;

  for(channel: ChannelRoute): Connector | undefined {
    if (this.#every) return this.#every;
    return channel.connectionId === null ? this.sandbox : this.#platforms[channel.platform];
  }
}
