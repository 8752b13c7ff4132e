import { sql } from 'kysely';
import type { Db } from '../../src/db/database.ts';
import { createUser } from '../../src/domain/tenancy/tenancy.service.ts';

// The tenancy world: accounts, hubs, workspaces (and their fields), playbooks, opt-ins, ad accounts
// and spend, written straight to the tables (the import path has its own tests); and the web
// app's hub (seedWebHub). Users, channels, posts and media: content-world.ts.

export async function account(db: Db, id = 'acc_1'): Promise<string> {
  await db.kysely
    .insertInto('accounts')
    .values({ id, name: `Account ${id}`, plan: 'standard', api_access: true })
    .execute();
  return id;
}

export async function hub(db: Db, id: string, accountId = 'acc_1', suspended = false): Promise<string> {
  await db.kysely
    .insertInto('hubs')
    .values({ id, account_id: accountId, name: `Hub ${id}`, suspended })
    .execute();
  return id;
}

export async function field(db: Db, hubId: string, key: string, archived = false): Promise<void> {
  await db.kysely.insertInto('workspace_fields').values({ hub_id: hubId, key, label: key, archived }).execute();
}

export async function workspace(
  db: Db,
  hubId: string,
  id: string,
  fields: Record<string, string | number | boolean> = {},
): Promise<string> {
  await db.kysely
    .insertInto('workspaces')
    .values({ id, hub_id: hubId, name: `Workspace ${id}`, fields: JSON.stringify(fields) })
    .execute();
  return id;
}

export async function playbook(db: Db, hubId: string, id: string, name = `Playbook ${id}`, solutions = ['meta']): Promise<string> {
  await db.kysely.insertInto('playbooks').values({ id, hub_id: hubId, name, solutions }).execute();
  return id;
}

export interface OptInSpec {
  id: string;
  hubId: string;
  playbookId: string;
  workspaceId: string;
  status?: string;
  optedInAt: string;
  updatedAt?: string;
  budgetCents?: number | null;
  budgetType?: 'lifetime' | 'daily' | null;
  variant?: Record<string, string>;
  responses?: { question: string; answer: string }[];
}

export async function optIns(db: Db, specs: OptInSpec[]): Promise<void> {
  if (specs.length === 0) return;
  await db.kysely
    .insertInto('opt_ins')
    .values(
      specs.map((s) => ({
        id: s.id,
        hub_id: s.hubId,
        playbook_id: s.playbookId,
        workspace_id: s.workspaceId,
        status: s.status ?? 'active',
        opted_in_at: s.optedInAt,
        updated_at: s.updatedAt ?? s.optedInAt,
        budget_cents: s.budgetCents === undefined ? 1000 : s.budgetCents,
        budget_type: s.budgetType === undefined ? 'lifetime' : s.budgetType,
        variant: JSON.stringify(s.variant ?? {}),
        responses: JSON.stringify(s.responses ?? []),
      })),
    )
    .execute();
}

export async function adAccount(
  db: Db,
  hubId: string,
  id: string,
  syncState: 'idle' | 'syncing' | 'failed' = 'idle',
  lastSyncedAt: string | null = null,
): Promise<string> {
  await db.kysely
    .insertInto('ad_accounts')
    .values({ id, hub_id: hubId, platform: 'meta', name: `Ads ${id}`, sync_state: syncState, last_synced_at: lastSyncedAt })
    .execute();
  return id;
}

export async function spend(
  db: Db,
  rows: { hubId: string; adAccountId: string; workspaceId: string | null; date: string; cents: number }[],
): Promise<void> {
  if (rows.length === 0) return;
  // One statement may not hit the same spend line twice: add duplicates up first, as import does.
  const lines = new Map<string, (typeof rows)[number]>();
  for (const r of rows) {
    const key = `${r.adAccountId}|${r.workspaceId ?? ''}|${r.date}`;
    const seen = lines.get(key);
    lines.set(key, seen ? { ...seen, cents: seen.cents + r.cents } : r);
  }
  await db.kysely
    .insertInto('spend')
    .values(
      [...lines.values()].map((r) => ({
        hub_id: r.hubId,
        ad_account_id: r.adAccountId,
        workspace_id: r.workspaceId,
        date: r.date,
        spend_cents: r.cents,
      })),
    )
    .onConflict((oc) =>
      oc
        .expression(sql`ad_account_id, date, (coalesce(workspace_id, ''))` as never)
        .doUpdateSet({ spend_cents: sql`spend.spend_cents + excluded.spend_cents` }),
    )
    .execute();
}

// The web app's world.

export const ADMIN = { email: 'admin@web.test', password: 'admin password 1' };
export const MEMBER = { email: 'member@web.test', password: 'member password 1' };
export const HUB = 'hub_web';

const day = (offset: number, time = '09:30:00.000') => `${new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10)}T${time}Z`;

/**
 * A hub with awkward names (commas, quotes, line breaks, a leading `=`), custom fields (one
 * archived), 130 opt-ins across statuses, an ad account with spend; a hub admin and a pinned member.
 */
export async function seedWebHub(db: Db): Promise<void> {
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
  await optIns(
    db,
    Array.from({ length: 130 }, (_, i) => ({
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
    })),
  );
  await optIns(db, [{ id: 'oi_other', hubId: 'hub_other', playbookId: 'pb_other', workspaceId: 'ws_other', optedInAt: day(-1) }]);
  await adAccount(db, HUB, 'ads_1', 'idle', new Date(Date.now() - 8 * 3_600_000).toISOString());
  await spend(db, [
    ...Array.from({ length: 60 }, (_, i) => ({
      hubId: HUB,
      adAccountId: 'ads_1',
      workspaceId: workspaces[i % 3]!,
      date: day(-(i % 30)).slice(0, 10),
      cents: 5000 + i * 37,
    })),
    { hubId: HUB, adAccountId: 'ads_1', workspaceId: null, date: day(-2).slice(0, 10), cents: 4321 },
  ]);
  await createUser(db, { ...ADMIN, firstname: 'Ada', lastname: 'Admin', hubId: HUB, role: 'hub_admin' });
  await createUser(db, { ...MEMBER, firstname: 'Max', lastname: 'Member', hubId: HUB, role: 'member', workspaceId: 'ws_a' });
}

// The OAuth tests' world.

/** The hub admin who signs in through OAuth. */
export const HUB_ADMIN = { email: 'ada@acme.test', password: 'correct horse battery' };

/** An account, one hub and `user` as its hub admin: `acc_api`, `h1`, Ada Lee unless told otherwise. */
export async function seedHubAdmin(
  db: Db,
  user: { email: string; password: string } = HUB_ADMIN,
  o: { accountId?: string; hubId?: string; firstname?: string; lastname?: string } = {},
): Promise<void> {
  const accountId = o.accountId ?? 'acc_api';
  const hubId = o.hubId ?? 'h1';
  await account(db, accountId);
  await hub(db, hubId, accountId);
  await createUser(db, { ...user, firstname: o.firstname ?? 'Ada', lastname: o.lastname ?? 'Lee', hubId, role: 'hub_admin' });
}

/** The key with its last character changed to one it is not already: a typo, never the key itself. */
export function mistyped(key: string): string {
  return `${key.slice(0, -1)}${key.endsWith('x') ? 'y' : 'x'}`;
}
