// The spend sync loop in a process of its own, for the crash test, which kills it with SIGKILL
// mid-run. It syncs against the in-test ad platform (ad-sync-fake.ts, the rows crashWorld() makes),
// slowed per batch so a run lasts seconds, on a fixed clock. Not a test file itself.
//
//   DATABASE_URL=… SECRETS_KEY=… NOW=… LEASE_MS=… node test/domain/ad-sync-process.ts
import { connect } from '../../src/db/database.ts';
import { createSpendSyncLoop } from '../../src/domain/ad-sync/sync-loop.ts';
import { FixedClock } from '../../src/platform/clock.ts';
import { Sealer, secretsKey } from '../../src/platform/sealing.ts';
import { crashPlatform } from './ad-sync-fake.ts';

const db = connect(process.env.DATABASE_URL!, { max: 4 });
const platform = crashPlatform();
platform.beforeBatch = () => new Promise((resolve) => setTimeout(resolve, Number(process.env.BATCH_MS ?? 10)));
const loop = createSpendSyncLoop({
  deps: {
    db,
    clock: new FixedClock(process.env.NOW!),
    clients: { meta: platform },
    sealer: new Sealer([secretsKey(Buffer.from(process.env.SECRETS_KEY!, 'base64url'))]),
    leaseMs: Number(process.env.LEASE_MS),
  },
  intervalMs: 20,
  batchSize: 1,
  onError: (error) => console.error('spend sync round failed:', error),
});
loop.start();
process.stdout.write('syncing\n');
process.once('SIGTERM', () => {
  void loop
    .stop()
    .then(() => db.close())
    .then(() => process.exit(0));
});
