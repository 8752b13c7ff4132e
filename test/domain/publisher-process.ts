// The app's publisher in a process of its own, for the crash test and the bench's crash round,
// which kill it with SIGKILL mid-batch. It runs createPublisher with the SandboxConnector against
// DATABASE_URL until SIGTERM; each platform answers up to ANSWER_MS after it has published, the
// window in which a crash loses the answer (sent, not recorded). Not a test file itself.
//
//   DATABASE_URL=… LEASE_MS=1500 BATCH=20 ANSWER_MS=40 node test/domain/publisher-process.ts
import { connect } from '../../src/db/database.ts';
import { SandboxConnector, type Connector } from '../../src/domain/posts/connector.ts';
import { createPublisher } from '../../src/domain/posts/publisher.ts';
import { systemClock } from '../../src/platform/clock.ts';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const answerMs = env('ANSWER_MS', 0);
const db = connect(process.env.DATABASE_URL!, { max: env('POOL', 10) });
const sandbox = new SandboxConnector(db, systemClock);
const connector: Connector = {
  async publish(post, channel, key) {
    const result = await sandbox.publish(post, channel, key);
    if (answerMs > 0) await new Promise((resolve) => setTimeout(resolve, Math.random() * answerMs));
    return result;
  },
};
const publisher = createPublisher({
  db,
  clock: systemClock,
  connector,
  intervalMs: env('INTERVAL_MS', 20),
  batchSize: env('BATCH', 20),
  leaseMs: env('LEASE_MS', 5 * 60_000),
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
