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
 * `idempotencyKey` is the same for every attempt at one post and channel
 * (`${post.id}:${channel.id}`): a publisher that died between a platform's answer and recording
 * it sends again after the post's lease, and the platform must then publish nothing and answer
 * with the first result. Connectors pass it to platforms that take one (Stripe's and Meta's
 * `Idempotency-Key`); for others they look the publication up by it before sending.
 */
export interface Connector {
  publish(post: OutgoingPost, channel: OutgoingChannel, idempotencyKey: string): Promise<{ externalId: string }>;
}

/** The key of a post's delivery to one channel, the same on every attempt. */
export const deliveryKey = (postId: string, channelId: string): string => `${postId}:${channelId}`;

/**
 * The default connector: publishes nowhere, records each publication in sandbox_publications and
 * answers with a `sandbox_…` id. It honours idempotency keys as the real networks do: a call that
 * repeats a key already published publishes nothing and answers with the first id (and counts
 * the call in `requests`); a failed call stores nothing, so it may be tried again. Tests can make
 * a channel fail.
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

  async publish(post: OutgoingPost, channel: OutgoingChannel, idempotencyKey: string): Promise<{ externalId: string }> {
    const reason = this.#failing.get(channel.id);
    if (reason !== undefined) throw new Error(reason);
    // One statement, so concurrent calls with one key wait for each other and agree on the id.
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
        idempotency_key: idempotencyKey,
      })
      .onConflict((oc) =>
        oc.columns(['hub_id', 'idempotency_key']).doUpdateSet((eb) => ({ requests: eb('sandbox_publications.requests', '+', 1) })),
      )
      .returning('id')
      .executeTakeFirstOrThrow();
    return { externalId: row.id };
  }
}
