// The Connector (src/domain/posts/connector.ts) for channels connected to Meta: a Facebook Page
// (channel.externalId = the Page id) or an Instagram professional account (the IG user id), each
// with its Page token (channel.secret). Publishing and the reconciliation lookup go through the
// wire client; `insights` reads a publication's figures for the organic insights sync.
import { PlatformError } from '../ad-platform.ts';
import {
  createMetaPagesClient,
  type MetaInsights,
  type MetaMedia,
  type MetaPagesClient,
  type MetaPagesClientOptions,
  type Publication,
} from './client.ts';

// The shapes of src/domain/posts/connector.ts's OutgoingPost / OutgoingChannel that this connector
// reads, written here because integrations cannot import the domain; the domain's types fit them.
export interface OutgoingPost {
  text: string;
  media: { kind: 'image' | 'video'; url: string | null; contentType?: string }[];
}
export interface OutgoingChannel {
  id: string;
  platform: string;
  externalId: string | null;
  /** The unsealed Page token. Never logged. */
  secret: string | null;
}

/** src/domain/posts/connector.ts's Connector, structurally. */
export interface Connector {
  publish(post: OutgoingPost, channel: OutgoingChannel, signal?: AbortSignal, prepared?: string): Promise<Publication>;
  find(post: OutgoingPost, channel: OutgoingChannel, since: Date, signal?: AbortSignal): Promise<Publication | null>;
}

export interface MetaPagesConnector extends Connector {
  /** The publication's lifetime figures (Page post insights or Instagram media insights). */
  insights(channel: OutgoingChannel, externalId: string, signal?: AbortSignal): Promise<MetaInsights>;
}

export type MetaPagesConnectorOptions = MetaPagesClientOptions | { client: MetaPagesClient };

export function createMetaPagesConnector(options: MetaPagesConnectorOptions): MetaPagesConnector {
  const client = 'client' in options ? options.client : createMetaPagesClient(options);

  const way = (channel: OutgoingChannel): { token: string; id: string; platform: 'facebook' | 'instagram' } => {
    if (channel.platform !== 'facebook' && channel.platform !== 'instagram')
      throw new PlatformError('invalid_request', `The Meta connector publishes to Facebook and Instagram, not ${channel.platform}`);
    if (!channel.externalId || !channel.secret)
      throw new PlatformError('needs_reconnect', 'This channel has no Meta Page token: connect it again from Channels');
    return { token: channel.secret, id: channel.externalId, platform: channel.platform };
  };

  const mediaOf = (post: OutgoingPost): MetaMedia[] =>
    post.media.map((m) => {
      if (m.url === null) throw new PlatformError('rejected', 'A media file of this post has no stored bytes: Meta fetches media by URL');
      return m.contentType === undefined ? { kind: m.kind, url: m.url } : { kind: m.kind, url: m.url, contentType: m.contentType };
    });

  return {
    async publish(post: OutgoingPost, channel: OutgoingChannel, signal?: AbortSignal, prepared?: string): Promise<Publication> {
      const w = way(channel);
      const media = mediaOf(post);
      return w.platform === 'facebook'
        ? client.publishPage(w.token, w.id, { text: post.text, media }, signal)
        : client.publishInstagram(w.token, w.id, { caption: post.text, media }, signal, prepared);
    },

    async find(post: OutgoingPost, channel: OutgoingChannel, since: Date, signal?: AbortSignal): Promise<Publication | null> {
      const w = way(channel);
      return w.platform === 'facebook'
        ? client.findPagePost(w.token, w.id, post.text, since, signal)
        : client.findInstagramMedia(w.token, w.id, post.text, since, signal);
    },

    async insights(channel: OutgoingChannel, externalId: string, signal?: AbortSignal): Promise<MetaInsights> {
      const w = way(channel);
      return w.platform === 'facebook'
        ? client.pagePostInsights(w.token, externalId, signal)
        : client.instagramMediaInsights(w.token, externalId, signal);
    },
  };
}
