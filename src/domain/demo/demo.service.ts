// The demo data set's one door: seeding it (once, whoever asks first) and whether a database is
// new enough to get it. The data set itself is seed.ts.
import type { Db } from '../../db/database.ts';
import { systemClock, type Clock } from '../../platform/clock.ts';
import { importObjects } from '../import/import.service.ts';
import { accountExists, anyAccount, insertMembership, lockDemoSeed } from './demo.repository.ts';
import { BREWLINE_IMPORTED_META, dataSet, DEMO_ACCOUNT_ID, SEED, type DataSetOptions, type DemoSeed } from './seed.ts';

export { DEMO_HUB_ID, type DemoSeed } from './seed.ts';

/**
 * Adds the demo data set unless it is already there; either way returns its ids. With
 * `brewlineMetaSynced` (the demo's Meta sandbox connects Brewline's Meta accounts), without
 * Brewline's imported Meta account (seed.ts says why).
 */
export async function seedDemo(db: Db, clock: Clock = systemClock, options: DataSetOptions = {}): Promise<DemoSeed> {
  return db.kysely.transaction().execute(async (trx) => {
    await lockDemoSeed(trx);
    if (await accountExists(trx, DEMO_ACCOUNT_ID)) return { created: false, ...SEED };
    await importObjects(trx, dataSet(clock.now().getTime(), options));
    // The demo hub admin administers both hubs, so the web admin's hub switcher and Pulse
    // Fitness's freshness banners (an account mid-sync, one whose sync failed) are one click away.
    await insertMembership(trx, { userId: SEED.userIds[0]!, hubId: SEED.hubIds[1]!, role: 'hub_admin', workspaceId: null });
    const adAccountIds = options.brewlineMetaSynced ? SEED.adAccountIds.filter((id) => id !== BREWLINE_IMPORTED_META) : SEED.adAccountIds;
    return { created: true, ...SEED, adAccountIds };
  });
}

/** True before anything exists: the server seeds demo data at its first start only then. */
export async function isDatabaseEmpty(db: Db): Promise<boolean> {
  return !(await anyAccount(db));
}
