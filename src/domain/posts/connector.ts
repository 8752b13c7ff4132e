import type { Db } from '../../db/database.ts';
import type { MediaContentType, MediaKind, SocialPlatform } from '../../db/schema.ts';
import type { Clock } from '../../platform/clock.ts';
import { newId } from '../../platform/ids.ts';

/** A post on its way out, as a connector needs it. */
export interface OutgoingPost {
  id: string;
  hubId: string;
  workspaceId: string;
  text: string;
  media: { id: string; kind: MediaKind; contentType: MediaContentType; width: number; height: number; storageKey: string | null }[];
}

export interface OutgoingChannel {
  id: string;
  platform: SocialPlatform;
  name: string;
  handle: string | null;
}

/**
 * Sends a post to one social channel. Resolves with the platform's id for the publication, or
 * throws with a reason people can act on (the message is stored as the delivery's error).
 * The publisher calls it at most once per post and channel, unless a publisher dies between the
 * call and recording its result (then the post is retried after its lease); connectors whose
 * platform takes an idempotency key should pass `${post.id}:${channel.id}`.
 */
export interface Connector {
  publish(post: OutgoingPost, channel: OutgoingChannel): Promise<{ externalId: string }>;
}

/**
 * The default connector: publishes nowhere, records each publication in sandbox_publications and
 * answers with a `sandbox_…` id. Tests can make a channel fail.
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

  async publish(post: OutgoingPost, channel: OutgoingChannel): Promise<{ externalId: string }> {
    const reason = this.#failing.get(channel.id);
    if (reason !== undefined) throw new Error(reason);
    const externalId = newId('sandbox');
    await this.#db.kysely
      .insertInto('sandbox_publications')
      .values({
        id: externalId,
        hub_id: post.hubId,
        post_id: post.id,
        channel_id: channel.id,
        platform: channel.platform,
        text: post.text,
        media_count: post.media.length,
        published_at: this.#clock.now(),
      })
      .execute();
    return { externalId };
  }
}
