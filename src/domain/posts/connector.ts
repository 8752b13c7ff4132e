import type { Db } from '../../db/database.ts';
import type { SocialPlatform } from '../../db/schema.ts';
import type { Clock } from '../../platform/clock.ts';
import { PlatformError } from '../../integrations/ad-platform.ts';
import type { Connector, OutgoingChannel, OutgoingPost, Publication } from '../../integrations/channel-platform.ts';
import { newId } from '../../platform/ids.ts';

/**
 * The request may have reached the network, but no answer did (a timeout after the request was
 * written, a connection reset mid-answer, a process that died after sending). The delivery
 * becomes `unconfirmed`: never sent again blindly, reconciled with `find`. Declared with the
 * platform errors, where the connectors (which cannot import the domain) throw it.
 */
export { DeliveryUnconfirmed } from '../../integrations/ad-platform.ts';
/**
 * A lookup that cannot tell which publication, if any, is the post's (connectors throw it from
 * `find`): like any lookup that cannot tell, it is looked up again and at last fails as
 * `not_confirmed`; never taken as published nor sent again on a guess.
 */
export { LookupAmbiguous } from '../../integrations/ad-platform.ts';
/**
 * The call was given up while the network was still preparing the post, before anything was
 * sent: the delivery is pending again, and its next attempt goes on from what was prepared.
 */
export { PublishNotReady } from '../../integrations/ad-platform.ts';
// What a network's connector takes and gives: declared with the integrations, which cannot import the domain.
export type { Connector, OutgoingChannel, OutgoingMedia, OutgoingPost, Publication } from '../../integrations/channel-platform.ts';

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
        platform: channel.platform as SocialPlatform,
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
