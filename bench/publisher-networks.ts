// The CONNECTOR_MODULE of bench/publisher.ts's publisher processes (test/domain/publisher-process.ts):
// the real networks' connectors, built as src/app.ts builds them (networkConnectors: Meta's Pages
// connector for Facebook and Instagram, the Business Profile connector for google_business), on
// the loopback fakes the bench runs in processes of their own; the Sealer that opens the channels'
// sealed tokens and the signer of the media URLs, under the keys the bench sealed and signed with.
//
// Environment (set by bench/publisher.ts): BENCH_META_URL, BENCH_GOOGLE_URL, BENCH_GOOGLE_CLIENT_ID,
// BENCH_GOOGLE_CLIENT_SECRET, BENCH_SECRETS_KEY (32 bytes, base64), BENCH_COOKIE_KEY, BENCH_BASE_URL.
import type { Db } from '../src/db/database.ts';
import { MediaUrlSigner, mediaUrlKey } from '../src/domain/media/media-url.ts';
import { networkConnectors } from '../src/domain/posts/network-connectors.ts';
import { createGoogleBusinessClient } from '../src/integrations/google-business/client.ts';
import { createMetaPagesClient } from '../src/integrations/meta-pages/client.ts';
import { createMetaPagesConnector } from '../src/integrations/meta-pages/connector.ts';
import type { Clock } from '../src/platform/clock.ts';
import { Sealer, secretsKey } from '../src/platform/sealing.ts';
import { MEDIA_URL_TTL_MS } from '../src/policy.ts';
import type { PublisherDeps } from '../test/domain/publisher-process.ts';

const need = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (bench/publisher.ts sets it)`);
  return value;
};

export function publisherDeps(_db: Db, clock: Clock): PublisherDeps {
  const metaPages = createMetaPagesConnector({ client: createMetaPagesClient({ graphUrl: need('BENCH_META_URL') }) });
  const business = createGoogleBusinessClient({
    businessUrl: need('BENCH_GOOGLE_URL'),
    oauthUrl: need('BENCH_GOOGLE_URL'),
    clientId: need('BENCH_GOOGLE_CLIENT_ID'),
    clientSecret: need('BENCH_GOOGLE_CLIENT_SECRET'),
    now: () => clock.now(),
  });
  return {
    platforms: networkConnectors(metaPages, business),
    sealer: new Sealer([secretsKey(Buffer.from(need('BENCH_SECRETS_KEY'), 'base64'))]),
    mediaUrls: new MediaUrlSigner(mediaUrlKey(need('BENCH_COOKIE_KEY')), need('BENCH_BASE_URL'), MEDIA_URL_TTL_MS),
  };
}
