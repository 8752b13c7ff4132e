import { sql } from 'kysely';
import type { Db } from '../../src/db/database.ts';

// Small, explicit fixtures written straight to the tables (the import path has its own tests).

export async function account(db: Db, id = 'acc_1'): Promise<string> {
  await db.kysely.insertInto('accounts').values({ id, name: `Account ${id}`, plan: 'standard', api_access: true }).execute();
  return id;
}

export async function hub(db: Db, id: string, accountId = 'acc_1', suspended = false): Promise<string> {
  await db.kysely.insertInto('hubs').values({ id, account_id: accountId, name: `Hub ${id}`, suspended }).execute();
  return id;
}

export async function field(db: Db, hubId: string, key: string, archived = false): Promise<void> {
  await db.kysely.insertInto('workspace_fields').values({ hub_id: hubId, key, label: key, archived }).execute();
}

export async function workspace(db: Db, hubId: string, id: string, fields: Record<string, string | number | boolean> = {}): Promise<string> {
  await db.kysely.insertInto('workspaces').values({ id, hub_id: hubId, name: `Workspace ${id}`, fields: JSON.stringify(fields) }).execute();
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

export async function adAccount(db: Db, hubId: string, id: string, syncState: 'idle' | 'syncing' | 'failed' = 'idle', lastSyncedAt: string | null = null): Promise<string> {
  await db.kysely.insertInto('ad_accounts').values({ id, hub_id: hubId, platform: 'meta', name: `Ads ${id}`, sync_state: syncState, last_synced_at: lastSyncedAt }).execute();
  return id;
}

export async function spend(db: Db, rows: { hubId: string; adAccountId: string; workspaceId: string | null; date: string; cents: number }[]): Promise<void> {
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
    .values([...lines.values()].map((r) => ({ hub_id: r.hubId, ad_account_id: r.adAccountId, workspace_id: r.workspaceId, date: r.date, spend_cents: r.cents })))
    .onConflict((oc) => oc.expression(sql`ad_account_id, date, (coalesce(workspace_id, ''))` as never).doUpdateSet({ spend_cents: sql`spend.spend_cents + excluded.spend_cents` }))
    .execute();
}
