import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildApp, type App } from '../../src/app.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { createUser } from '../../src/domain/tenancy/tenancy.repository.ts';
import { createTestDb, type TestDb } from './db.ts';
import { account, adAccount, field, hub, optIns, playbook, spend, workspace } from './fixtures.ts';
import { freePort } from '../../src/platform/net.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'];
export const chromiumMissing = existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed (apt-get install -y chromium; .ci/run installs it)`;

export const ADMIN = { email: 'admin@web.test', password: 'admin password 1' };
export const MEMBER = { email: 'member@web.test', password: 'member password 1' };
export const HUB = 'hub_web';

export interface WebApp {
  app: App;
  db: TestDb;
  config: Config;
  baseUrl: string;
  close(): Promise<void>;
}

/** The whole app on a real port, system clock, key usage flushed every 200 ms. */
export async function startWebApp(options: { baseUrl?: string } = {}): Promise<WebApp> {
  const db = await createTestDb();
  const port = await freePort();
  const baseUrl = options.baseUrl ?? `http://127.0.0.1:${port}`;
  const config = loadConfig({ DATABASE_URL: db.url, LOG_LEVEL: 'silent', BASE_URL: baseUrl, PORT: String(port), DATA_DIR: await mkdtemp(path.join(tmpdir(), 'hubops-web-')) });
  const app = await buildApp({ config, db, logger: false, publisher: false, usageFlushMs: 200 });
  await app.fastify.listen({ port, host: '127.0.0.1' });
  return { app, db, config, baseUrl, close: async () => { await app.close(); await db.drop(); await rm(config.dataDir, { recursive: true, force: true }); } };
}

const day = (offset: number, time = '09:30:00.000') => `${new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10)}T${time}Z`;

/**
 * A hub with awkward names (commas, quotes, line breaks, a leading `=`), custom fields (one
 * archived), 130 opt-ins across statuses, an ad account with spend; a hub admin and a pinned member.
 */
export async function seedWebHub(db: TestDb): Promise<void> {
  await account(db);
  await hub(db, HUB);
  await hub(db, 'hub_other');
  await db.kysely.updateTable('hubs').set({ name: 'Acme Franchises' }).where('id', '=', HUB).execute();
  await field(db, HUB, 'region');
  await field(db, HUB, 'store_code');
  await field(db, HUB, 'old_field', true);
  await workspace(db, HUB, 'ws_a', { region: 'North, East', store_code: 101, old_field: 'hidden' });
  await workspace(db, HUB, 'ws_b', { region: '=HYPERLINK("http://evil")' });
  await workspace(db, HUB, 'ws_c');
  await db.kysely.updateTable('workspaces').set({ name: '=1+1 Downtown' }).where('id', '=', 'ws_a').execute();
  await db.kysely.updateTable('workspaces').set({ name: 'Uptown, "the big one"\nsecond line' }).where('id', '=', 'ws_b').execute();
  await workspace(db, 'hub_other', 'ws_other');
  await playbook(db, HUB, 'pb_1', 'Spring "Sale", 2026 ', ['meta', 'google_ads']);
  await playbook(db, HUB, 'pb_2', '@Summer\nlaunch', ['organic_social']);
  await playbook(db, 'hub_other', 'pb_other');
  const statuses = ['active', 'in_review', 'questions_only', 'paused', 'active'];
  const workspaces = ['ws_a', 'ws_b', 'ws_c'];
  await optIns(db, Array.from({ length: 130 }, (_, i) => ({
    id: `oi_${String(i).padStart(3, '0')}`,
    hubId: HUB,
    playbookId: i % 2 ? 'pb_2' : 'pb_1',
    workspaceId: workspaces[i % 3]!,
    status: statuses[i % statuses.length],
    optedInAt: day(-(i % 40), `0${i % 10}:15:00.000`),
    updatedAt: day(-(i % 40), `1${i % 10}:15:00.000`),
    budgetCents: i % 5 === 2 ? null : 1000 + i,
    budgetType: i % 5 === 2 ? null : i % 2 ? 'daily' : 'lifetime',
    variant: (i % 4 === 0 ? { audience: 'Families, "young"' } : {}) as Record<string, string>,
    responses: i % 3 === 0 ? [{ question: 'Notes?', answer: '-dash, "quoted"\nnew line' }] : [],
  })));
  await optIns(db, [{ id: 'oi_other', hubId: 'hub_other', playbookId: 'pb_other', workspaceId: 'ws_other', optedInAt: day(-1) }]);
  await adAccount(db, HUB, 'ads_1', 'idle', new Date(Date.now() - 8 * 3_600_000).toISOString());
  await spend(db, [
    ...Array.from({ length: 60 }, (_, i) => ({ hubId: HUB, adAccountId: 'ads_1', workspaceId: workspaces[i % 3]!, date: day(-(i % 30)).slice(0, 10), cents: 5000 + i * 37 })),
    { hubId: HUB, adAccountId: 'ads_1', workspaceId: null, date: day(-2).slice(0, 10), cents: 4321 },
  ]);
  await createUser(db, { ...ADMIN, firstname: 'Ada', lastname: 'Admin', hubId: HUB, role: 'hub_admin' });
  await createUser(db, { ...MEMBER, firstname: 'Max', lastname: 'Member', hubId: HUB, role: 'member', workspaceId: 'ws_a' });
}
