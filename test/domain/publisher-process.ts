// The app's publisher in a process of its own, for the crash test and the bench's crash round,
// which kill it with SIGKILL mid-batch. It runs createPublisher against DATABASE_URL until SIGTERM,
// through the SandboxConnector, or through the connector CONNECTOR_MODULE's `benchConnector(db,
// clock)` makes (the bench's switch to the networks' loopback sandboxes). Each network answers up to ANSWER_MS after it has
// published: the window in which a crash loses the answer (sent, not recorded), which the next
// publisher finds as `publishing`, makes `unconfirmed` and looks up. Not a test file itself.
//
//   DATABASE_URL=… LEASE_MS=1500 SETTLE_MS=200 BATCH=20 ANSWER_MS=40 node test/domain/publisher-process.ts
import { connect } from '../../src/db/database.ts';
import { SandboxConnector, type Connector } from '../../src/domain/posts/connector.ts';
import { createPublisher } from '../../src/domain/posts/publisher.ts';
import { systemClock } from '../../src/platform/clock.ts';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const answerMs = env('ANSWER_MS', 0);
const db = connect(process.env.DATABASE_URL!, { max: env('POOL', 10) });
const inner: Connector = process.env.CONNECTOR_MODULE
  ? ((await import(process.env.CONNECTOR_MODULE)) as { benchConnector: (d: typeof db, c: typeof systemClock) => Connector }).benchConnector(
      db,
      systemClock,
    )
  : new SandboxConnector(db, systemClock);
const connector: Connector = {
  async publish(post, channel) {
    const result = await inner.publish(post, channel);
    if (answerMs > 0) await new Promise((resolve) => setTimeout(resolve, Math.random() * answerMs));
    return result;
  },
  find: (post, channel, since) => inner.find(post, channel, since),
};
const publisher = createPublisher({
  db,
  clock: systemClock,
  connectors: connector,
  intervalMs: env('INTERVAL_MS', 20),
  batchSize: env('BATCH', 20),
  leaseMs: env('LEASE_MS', 5 * 60_000),
  settleMs: env('SETTLE_MS', 2 * 60_000),
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
