// The app's publisher in a process of its own, for the crash test and the bench's crash round,
// which kill it with SIGKILL mid-batch. It runs createPublisher against DATABASE_URL until SIGTERM.
//
// Without CONNECTOR_MODULE every channel publishes through the SandboxConnector (the crash test).
// CONNECTOR_MODULE=<path> names a module exporting `publisherDeps(db, clock)` that resolves with
// what src/app.ts gives the publisher: `platforms` (the connectors of connected channels, by
// platform: networkConnectors' Meta and Business Profile connectors), and the `sealer` that opens
// the channels' tokens and the `mediaUrls` signer. Channels without a connection still go to the
// SandboxConnector, as in the app (bench/publisher-networks.ts is the bench's).
//
// Each network answers up to ANSWER_MS after it has published: the window in which a crash loses
// the answer (sent, not recorded), which the next publisher finds as `publishing`, makes
// `unconfirmed` and looks up. Not a test file itself.
//
//   DATABASE_URL=… LEASE_MS=1500 SETTLE_MS=1000 TIMEOUT_MS=900 BATCH=20 ANSWER_MS=40 node test/domain/publisher-process.ts
import type { Db } from '../../src/db/database.ts';
import { connect } from '../../src/db/database.ts';
import type { SocialPlatform } from '../../src/db/schema.ts';
import type { MediaUrlSigner } from '../../src/domain/media/media-url.ts';
import { ChannelConnectors, SandboxConnector, type Connector } from '../../src/domain/posts/connector.ts';
import { createPublisher } from '../../src/domain/posts/publisher.ts';
import { systemClock, type Clock } from '../../src/platform/clock.ts';
import type { Sealer } from '../../src/platform/sealing.ts';
import { PUBLISH_LEASE_MS, PUBLISH_TIMEOUT_MS, RECONCILE_SETTLE_MS } from '../../src/policy.ts';

/** What a CONNECTOR_MODULE's `publisherDeps` gives the publisher. */
export interface PublisherDeps {
  platforms: Partial<Record<SocialPlatform, Connector>>;
  sealer?: Sealer;
  mediaUrls?: MediaUrlSigner;
}

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const answerMs = env('ANSWER_MS', 0);
const db = connect(process.env.DATABASE_URL!, { max: env('POOL', 10) });

/** The connector, answering up to ANSWER_MS after the network has published. */
const late = (inner: Connector): Connector =>
  answerMs > 0
    ? {
        async publish(post, channel, signal) {
          const result = await inner.publish(post, channel, signal);
          await new Promise((resolve) => setTimeout(resolve, Math.random() * answerMs));
          return result;
        },
        find: (post, channel, since, signal) => inner.find(post, channel, since, signal),
      }
    : inner;

const sandbox = late(new SandboxConnector(db, systemClock));
let connectors: ChannelConnectors;
let deps: Omit<PublisherDeps, 'platforms'> = {};
if (process.env.CONNECTOR_MODULE) {
  const module = (await import(process.env.CONNECTOR_MODULE)) as {
    publisherDeps: (d: Db, c: Clock) => PublisherDeps | Promise<PublisherDeps>;
  };
  const { platforms, ...rest } = await module.publisherDeps(db, systemClock);
  connectors = new ChannelConnectors(
    sandbox,
    Object.fromEntries(Object.entries(platforms).map(([platform, connector]) => [platform, late(connector)])),
  );
  deps = rest;
} else {
  connectors = ChannelConnectors.only(sandbox);
}

const publisher = createPublisher({
  db,
  clock: systemClock,
  connectors,
  ...deps,
  intervalMs: env('INTERVAL_MS', 20),
  batchSize: env('BATCH', 20),
  leaseMs: env('LEASE_MS', PUBLISH_LEASE_MS),
  settleMs: env('SETTLE_MS', RECONCILE_SETTLE_MS),
  publishTimeoutMs: env('TIMEOUT_MS', PUBLISH_TIMEOUT_MS),
  onError: (error) => console.error('publisher round failed:', error),
});
publisher.start();
process.stdout.write('publishing\n');
process.once('SIGTERM', () => {
  void publisher
    .stop()
    .then(() => db.close())
    .then(() => process.exit(0));
});
