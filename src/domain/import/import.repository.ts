// The import's reads and writes: the stored rows its lines refer to, and the multi-row inserts of its records.

import { sql, type Insertable, type Kysely } from 'kysely';
import type { Database, MediaKind, SocialPlatform } from '../../db/schema.ts';
import { hashPassword } from '../../platform/password.ts';
import { kindOf } from '../media/media-info.ts';
import { mediaRow } from '../media/media.repository.ts';
import { postRows } from '../posts/post.repository.ts';
import { saveReviewDays } from '../reviews/review.repository.ts';
import {
  IMPORT_TYPES,
  type ImportCounts,
  type ImportRecord,
  type ImportType,
  type Kind,
  type RecordOf,
  type SpendEffect,
} from './records.ts';

// PostgreSQL allows 65,535 bind parameters per statement; stay well below.
const MAX_PARAMS_PER_STATEMENT = 30_000;

/** What the reference checks need to know of a stored row. */
export interface StoredRow {
  hubId?: string;
  accountId?: string;
  /** Channels and media: where they belong and what posts need to know of them. */
  workspaceId?: string;
  platform?: SocialPlatform;
  connected?: boolean;
  mediaKind?: MediaKind;
  /** Media: its type, which a network's rules may refuse (Instagram takes JPEG images only). */
  contentType?: string;
  /** Ad accounts: connected to its platform now or before (spend derived from the platform's rows). */
  synced?: boolean;
}

/** The stored rows a file may refer to or collide with. */
export interface Wanted {
  ids: Map<Kind, Set<string>>;
  /** Hubs whose workspace field keys matter. */
  fieldHubs: Set<string>;
  emails: string[];
}

export interface StoredRows {
  byId: Map<Kind, Map<string, StoredRow>>;
  /** Field keys by hub. */
  fieldKeys: Map<string, Set<string>>;
  emails: Set<string>;
}

type Trx = Kysely<Database>;

const any = (values: Iterable<string>) => sql<string>`ANY(${[...values]}::text[])`;

/** Per kind: the stored rows among `ids`, with what the reference checks need of them. */
const STORED_BY_ID: Record<Kind, (trx: Trx, ids: Set<string>) => Promise<({ id: string } & StoredRow)[]>> = {
  account: (trx, ids) => trx.selectFrom('accounts').select('id').where('id', '=', any(ids)).execute(),
  hub: (trx, ids) => trx.selectFrom('hubs').select(['id', 'account_id as accountId']).where('id', '=', any(ids)).execute(),
  workspace: (trx, ids) => trx.selectFrom('workspaces').select(['id', 'hub_id as hubId']).where('id', '=', any(ids)).execute(),
  playbook: (trx, ids) => trx.selectFrom('playbooks').select(['id', 'hub_id as hubId']).where('id', '=', any(ids)).execute(),
  optIn: (trx, ids) => trx.selectFrom('opt_ins').select('id').where('id', '=', any(ids)).execute(),
  adAccount: async (trx, ids) =>
    (await trx.selectFrom('ad_accounts').select(['id', 'hub_id as hubId', 'external_id']).where('id', '=', any(ids)).execute()).map(
      ({ id, hubId, external_id }) => ({ id, hubId, synced: external_id !== null }),
    ),
  user: (trx, ids) => trx.selectFrom('users').select('id').where('id', '=', any(ids)).execute(),
  channel: (trx, ids) =>
    trx
      .selectFrom('social_channels')
      .select(['id', 'hub_id as hubId', 'workspace_id as workspaceId', 'platform', 'connected'])
      .where('id', '=', any(ids))
      .execute(),
  media: (trx, ids) =>
    trx
      .selectFrom('media_assets')
      .select(['id', 'hub_id as hubId', 'workspace_id as workspaceId', 'kind as mediaKind', 'content_type as contentType'])
      .where('id', '=', any(ids))
      .execute(),
  post: (trx, ids) => trx.selectFrom('posts').select('id').where('id', '=', any(ids)).execute(),
};

export async function findStoredRows(trx: Trx, wanted: Wanted): Promise<StoredRows> {
  const kinds = Object.keys(STORED_BY_ID) as Kind[];
  const [found, fields, emails] = await Promise.all([
    Promise.all(kinds.map((kind) => STORED_BY_ID[kind](trx, wanted.ids.get(kind) ?? new Set()))),
    trx.selectFrom('workspace_fields').select(['hub_id', 'key']).where('hub_id', '=', any(wanted.fieldHubs)).execute(),
    trx.selectFrom('users').select('email').where('email', '=', any(wanted.emails)).execute(),
  ]);
  const byId = new Map(kinds.map((kind, i) => [kind, new Map(found[i]!.map(({ id, ...row }) => [id, row]))]));
  const fieldKeys = new Map<string, Set<string>>();
  for (const row of fields) {
    if (!fieldKeys.has(row.hub_id)) fieldKeys.set(row.hub_id, new Set());
    fieldKeys.get(row.hub_id)!.add(row.key);
  }
  return { byId, fieldKeys, emails: new Set(emails.map((r) => r.email)) };
}

/** Runs `statement` over `rows` in slices that stay under the bind-parameter limit. */
async function inBatches<R extends object>(rows: R[], statement: (batch: R[]) => Promise<unknown>): Promise<void> {
  if (rows.length === 0) return;
  const perStatement = Math.max(1, Math.floor(MAX_PARAMS_PER_STATEMENT / Object.keys(rows[0]!).length));
  for (let i = 0; i < rows.length; i += perStatement) await statement(rows.slice(i, i + perStatement));
}

async function insertAll<T extends keyof Database & string>(trx: Trx, table: T, rows: Insertable<Database[T]>[]): Promise<void> {
  await inBatches(rows, (batch) =>
    trx
      .insertInto(table)
      .values(batch as never)
      .execute(),
  );
}

/**
 * Rows of `table` keyed by `key`: a row replaces the stored figures for its key. A stored row with
 * the same figures is not rewritten; returns how many rows were so left alone.
 */
async function upsertAll<T extends 'organic_metrics' | 'paid_metrics' | 'hub_cpm'>(
  trx: Trx,
  table: T,
  key: string[],
  rows: Insertable<Database[T]>[],
): Promise<number> {
  if (rows.length === 0) return 0;
  const columns = Object.keys(rows[0]!).filter((c) => !key.includes(c));
  const replace = Object.fromEntries(columns.map((c) => [c, sql.ref(`excluded.${c}`)]));
  const stored = sql.join(columns.map((c) => sql.ref(`${table}.${c}`)));
  const given = sql.join(columns.map((c) => sql.ref(`excluded.${c}`)));
  let unchanged = 0;
  await inBatches(rows, async (batch) => {
    const written = await trx
      .insertInto(table)
      .values(batch as never)
      .onConflict((oc) =>
        oc
          .columns(key as never)
          .doUpdateSet(replace as never)
          .where(sql<boolean>`(${stored}) IS DISTINCT FROM (${given})`),
      )
      .returning(sql<number>`1`.as('written'))
      .execute();
    unchanged += batch.length - written.length;
  });
  return unchanged;
}

async function writeUsers(trx: Trx, users: RecordOf<'user'>[]): Promise<void> {
  // scrypt runs on libuv's thread pool, so hashing in parallel uses every pool thread.
  const hashes = await Promise.all(users.map((u) => hashPassword(u.password)));
  await insertAll(
    trx,
    'users',
    users.map((u, i) => ({
      id: u.id,
      account_id: u.accountId!,
      email: u.email,
      password_hash: hashes[i]!,
      firstname: u.firstname,
      lastname: u.lastname,
      is_staff: u.staff,
    })),
  );
  await insertAll(
    trx,
    'memberships',
    users.map((u) => ({ user_id: u.id, hub_id: u.hubId, role: u.role, workspace_id: u.workspaceId })),
  );
}

/**
 * Lines for the same (ad account, workspace, date) add up with each other: that sum is the file's
 * spend for the key. It replaces the stored spend for the key (so a re-run changes nothing), or
 * with `add` is added to it. Summed here first, as one INSERT may not touch the same row twice,
 * even through ON CONFLICT. Sums are BigInt: many safe integers can add up to an unsafe one. The
 * spend triggers keep the running totals (spend_prefix_sums) right either way, from the rows'
 * old and new values.
 */
async function writeSpend(trx: Trx, lines: RecordOf<'spend'>[], options: WriteOptions): Promise<void> {
  const spend = new Map<
    string,
    { hub_id: string; ad_account_id: string; workspace_id: string | null; date: string; cents: bigint; lines: number }
  >();
  const keyOf = (adAccountId: string, date: string, workspaceId: string | null) => `${adAccountId}\u0000${date}\u0000${workspaceId ?? ''}`;
  for (const s of lines) {
    const key = keyOf(s.adAccountId, s.date, s.workspaceId);
    const sum = spend.get(key);
    if (sum) {
      sum.cents += BigInt(s.spendCents);
      sum.lines += 1;
    } else {
      spend.set(key, {
        hub_id: s.hubId!,
        ad_account_id: s.adAccountId,
        workspace_id: s.workspaceId,
        date: s.date,
        cents: BigInt(s.spendCents),
        lines: 1,
      });
    }
  }
  const rows = [...spend.values()].map(({ cents, lines: _, ...row }) => ({ ...row, spend_cents: cents.toString() }));
  const spendCents =
    options.spendMode === 'add' ? sql<string>`spend.spend_cents + excluded.spend_cents` : sql<string>`excluded.spend_cents`;
  await inBatches(rows, async (batch) => {
    const written = await trx
      .insertInto('spend')
      .values(batch)
      .onConflict((oc) =>
        oc
          .expression(sql`ad_account_id, date, (coalesce(workspace_id, ''))`)
          .doUpdateSet({ spend_cents: spendCents })
          // A row whose figure stays the same is not rewritten.
          .where(sql<boolean>`spend.spend_cents IS DISTINCT FROM ${spendCents}`),
      )
      // xmax is 0 on a row this statement inserted, set on one it updated.
      .returning(['ad_account_id', 'date', 'workspace_id', sql<boolean>`xmax = 0`.as('inserted')])
      .execute();
    const inserted = written.filter((row) => row.inserted).length;
    options.spend.new += inserted;
    options.spend.changed += written.length - inserted;
    options.spend.unchanged += batch.length - written.length;
    // The lines of a key left as it was are unchanged lines.
    const writtenKeys = new Set(written.map((row) => keyOf(row.ad_account_id, row.date, row.workspace_id)));
    for (const row of batch) {
      const key = keyOf(row.ad_account_id, row.date, row.workspace_id);
      if (!writtenKeys.has(key)) options.unchanged.spend += spend.get(key)!.lines;
    }
  });
}

async function writePosts(trx: Trx, records: RecordOf<'post'>[]): Promise<void> {
  const posts = records.map(postRowsOf);
  await insertAll(
    trx,
    'posts',
    posts.map((p) => p.post),
  );
  await insertAll(
    trx,
    'post_deliveries',
    posts.flatMap((p) => p.deliveries),
  );
  await insertAll(
    trx,
    'post_media',
    posts.flatMap((p) => p.media),
  );
}

/**
 * The row each id'd type's line writes (a user's and a post's are in writeUsers and postRowsOf):
 * the writers insert them, and a line whose id is stored is compared with the stored row by them.
 */
export const ROWS = {
  account: (a: RecordOf<'account'>) => ({ id: a.id, name: a.name, plan: a.plan, api_access: a.apiAccess }),
  hub: (h: RecordOf<'hub'>) => ({ id: h.id, account_id: h.accountId, name: h.name, suspended: h.suspended }),
  workspace: (w: RecordOf<'workspace'>) => ({
    id: w.id,
    hub_id: w.hubId,
    name: w.name,
    timezone: w.timezone,
    fields: JSON.stringify(w.fields),
  }),
  playbook: (p: RecordOf<'playbook'>) => ({
    id: p.id,
    hub_id: p.hubId,
    name: p.name,
    solutions: p.solutions,
    variants: JSON.stringify(p.variants),
    questions: JSON.stringify(p.questions),
  }),
  adAccount: (a: RecordOf<'adAccount'>) => ({
    id: a.id,
    hub_id: a.hubId,
    platform: a.platform,
    name: a.name,
    sync_state: a.syncState,
    last_synced_at: a.lastSyncedAt,
  }),
  optIn: (o: RecordOf<'optIn'>) => ({
    id: o.id,
    hub_id: o.hubId!,
    playbook_id: o.playbookId,
    workspace_id: o.workspaceId,
    status: o.status,
    opted_in_at: o.optedInAt,
    updated_at: o.updatedAt,
    budget_cents: o.budgetCents,
    budget_type: o.budgetType,
    variant: JSON.stringify(o.variant),
    responses: JSON.stringify(o.responses),
  }),
  channel: (c: RecordOf<'channel'>) => ({
    id: c.id,
    hub_id: c.hubId!,
    workspace_id: c.workspaceId,
    platform: c.platform,
    name: c.name,
    handle: c.handle,
    connected: c.connected,
  }),
  media: (m: RecordOf<'media'>) =>
    mediaRow({
      ...m,
      hubId: m.hubId!,
      kind: kindOf(m.contentType),
      storageKey: null,
      createdBy: null,
      createdAt: m.createdAt ?? undefined,
    }),
  workspaceField: (f: RecordOf<'workspaceField'>) => ({ hub_id: f.hubId, key: f.key, label: f.label, archived: f.archived }),
} as const;

/** The rows of an imported post: the post, a delivery per channel (with the imported outcome), its media. */
export function postRowsOf(p: RecordOf<'post'>) {
  const rows = postRows({ ...p, hubId: p.hubId!, createdBy: null, createdAt: p.createdAt ?? undefined });
  // Imported outcomes: every channel of a published post has it; every channel of a failed one failed.
  const deliveries = rows.deliveries.map((d) =>
    p.status === 'published'
      ? { ...d, status: 'published' as const, external_id: p.externalIds[d.channel_id] ?? 'imported', delivered_at: p.publishedAt }
      : p.status === 'failed'
        ? { ...d, status: 'failed' as const, error: p.error, delivered_at: p.scheduledAt }
        : { ...d, status: 'pending' as const },
  );
  return { ...rows, deliveries };
}

type RecordsOf = { [T in ImportType]: RecordOf<T>[] };

/**
 * What a spend line does to the spend stored for its key: `replace` (the default; re-importing a
 * file changes nothing) or `add` (`hubops import --add`, for spend that comes in parts).
 */
export type SpendMode = 'replace' | 'add';

interface WriteOptions {
  spendMode: SpendMode;
  /** Filled in by the spend writer. */
  spend: SpendEffect;
  /** Lines per type that wrote nothing, their figures being stored already: filled in by the figure writers. */
  unchanged: ImportCounts;
}

/** How each type's records are written, in this order: a type after every type it refers to. */
const WRITERS: { [T in ImportType]: (trx: Trx, records: RecordsOf[T], options: WriteOptions) => Promise<void> } = {
  account: (trx, accounts) => insertAll(trx, 'accounts', accounts.map(ROWS.account)),
  hub: (trx, hubs) => insertAll(trx, 'hubs', hubs.map(ROWS.hub)),
  workspaceField: (trx, fields) => insertAll(trx, 'workspace_fields', fields.map(ROWS.workspaceField)),
  workspace: (trx, workspaces) => insertAll(trx, 'workspaces', workspaces.map(ROWS.workspace)),
  playbook: (trx, playbooks) => insertAll(trx, 'playbooks', playbooks.map(ROWS.playbook)),
  adAccount: (trx, accounts) => insertAll(trx, 'ad_accounts', accounts.map(ROWS.adAccount)),
  user: writeUsers,
  optIn: (trx, optIns) => insertAll(trx, 'opt_ins', optIns.map(ROWS.optIn)),
  spend: writeSpend,
  channel: (trx, channels) => insertAll(trx, 'social_channels', channels.map(ROWS.channel)),
  media: (trx, media) => insertAll(trx, 'media_assets', media.map(ROWS.media)),
  post: writePosts,
  organicMetrics: async (trx, metrics, options) => {
    options.unchanged.organicMetrics += await upsertAll(
      trx,
      'organic_metrics',
      ['hub_id', 'workspace_id', 'date', 'platform'],
      metrics.map((m) => ({
        hub_id: m.hubId!,
        workspace_id: m.workspaceId,
        date: m.date,
        platform: m.platform,
        posts: m.posts,
        impressions: m.impressions,
        reach: m.reach,
        likes: m.likes,
        comments: m.comments,
        shares: m.shares,
        saves: m.saves,
      })),
    );
  },
  paidMetrics: async (trx, metrics, options) => {
    options.unchanged.paidMetrics += await upsertAll(
      trx,
      'paid_metrics',
      ['hub_id', 'workspace_id', 'date', 'platform', 'campaign_id'],
      metrics.map((m) => ({
        hub_id: m.hubId!,
        workspace_id: m.workspaceId,
        date: m.date,
        platform: m.platform,
        campaign_id: m.campaignId,
        campaign_name: m.campaignName,
        spend_cents: m.spendCents,
        impressions: m.impressions,
        clicks: m.clicks,
        results: m.results,
      })),
    );
  },
  hubCpm: async (trx, cpms, options) => {
    options.unchanged.hubCpm += await upsertAll(
      trx,
      'hub_cpm',
      ['hub_id', 'platform'],
      cpms.map((c) => ({ hub_id: c.hubId, platform: c.platform, cpm_cents: c.cpmCents })),
    );
  },
  reviewDay: writeReviewDays,
};

/**
 * Review days replace the stored day of their key; a day stored with the same counts is left
 * alone (found first with one SELECT), so a re-run does not recompute the running totals.
 */
async function writeReviewDays(trx: Trx, days: RecordOf<'reviewDay'>[], options: WriteOptions): Promise<void> {
  if (days.length === 0) return;
  const stored = await trx
    .selectFrom('review_days')
    .select(['hub_id', 'workspace_id', 'date', 'new_1', 'new_2', 'new_3', 'new_4', 'new_5', 'responded'])
    .where('workspace_id', '=', any(new Set(days.map((d) => d.workspaceId))))
    .where('date', '=', sql<string>`ANY(${[...new Set(days.map((d) => d.date))]}::date[])`)
    .execute();
  const figures = new Map(
    stored.map((r) => [
      `${r.hub_id}\u0000${r.workspace_id}\u0000${r.date}`,
      [r.new_1, r.new_2, r.new_3, r.new_4, r.new_5, r.responded].map(Number).join(),
    ]),
  );
  const changed = days.filter(
    (d) => figures.get(`${d.hubId}\u0000${d.workspaceId}\u0000${d.date}`) !== [...d.newReviews, d.responded].join(),
  );
  options.unchanged.reviewDay += days.length - changed.length;
  await saveReviewDays(
    trx,
    changed.map((d) => ({ hubId: d.hubId!, workspaceId: d.workspaceId, date: d.date, newReviews: d.newReviews, responded: d.responded })),
  );
}

function recordsOf<T extends ImportType>(records: ImportRecord[], type: T): RecordsOf[T] {
  return records.filter((record): record is RecordOf<T> => record.type === type) as RecordsOf[T];
}

async function writeType<T extends ImportType>(trx: Trx, records: ImportRecord[], type: T, options: WriteOptions): Promise<void> {
  await WRITERS[type](trx, recordsOf(records, type), options);
}

/**
 * Writes checked records, type after type in the order of WRITERS; returns what the spend did and
 * how many lines of each figure type were stored already (and so not written).
 */
export async function writeRecords(
  trx: Trx,
  records: ImportRecord[],
  spendMode: SpendMode,
): Promise<{ spend: SpendEffect; unchanged: ImportCounts }> {
  const unchanged = Object.fromEntries(IMPORT_TYPES.map((t) => [t, 0])) as ImportCounts;
  const options: WriteOptions = { spendMode, spend: { new: 0, changed: 0, unchanged: 0 }, unchanged };
  for (const type of Object.keys(WRITERS) as ImportType[]) await writeType(trx, records, type, options);
  return { spend: options.spend, unchanged };
}
