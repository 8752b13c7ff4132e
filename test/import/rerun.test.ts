import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { runCli } from '../../src/cli/cli.ts';
import { createKey } from '../../src/domain/api-keys/api-key.service.ts';
import { ImportError, importNdjson, IMPORT_TYPES } from '../../src/domain/import/import.service.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { snapshot } from '../support/snapshot.ts';
import * as fx from '../support/world.ts';

// What re-running `hubops import FILE` does: the same file again changes nothing — not the rows,
// not the running totals the spend report reads, not the report — and `--add` adds the file's
// spend once more, which the report then shows. Lines with an id (a field's hub and key, a user's
// email) that is stored are unchanged when they match the stored row, refused when they differ.

let t: TestApp;
let key: string;
let dir: string;

const HUB = 'hub_rerun';
const DAY_MS = 86_400_000;

before(async () => {
  t = await startApp({ now: '2026-11-24T12:00:00Z' });
  await fx.account(t.db, 'acc_rerun');
  await fx.hub(t.db, HUB, 'acc_rerun');
  await fx.workspace(t.db, HUB, 'ws_a');
  await fx.workspace(t.db, HUB, 'ws_b');
  await fx.adAccount(t.db, HUB, 'aa_rerun', 'idle', '2026-11-24T11:00:00Z');
  // Spend already stored, on a day the file also names and on one it does not.
  await fx.spend(t.db, [
    { hubId: HUB, adAccountId: 'aa_rerun', workspaceId: 'ws_a', date: '2026-11-20', cents: 5_000 },
    { hubId: HUB, adAccountId: 'aa_rerun', workspaceId: 'ws_b', date: '2026-11-01', cents: 700 },
  ]);
  key = (await createKey(t.db, { hubId: HUB, name: 'rerun' })).key;
  dir = await mkdtemp(path.join(tmpdir(), 'hubops-rerun-'));
});
after(async () => {
  await t.close();
  await rm(dir, { recursive: true, force: true });
});

const spendLine = (workspaceId: string | null, date: string, spendCents: number) => ({
  type: 'spend',
  adAccountId: 'aa_rerun',
  workspaceId,
  date,
  spendCents,
});
// Two lines for ws_a on 11-20 (they add up within the file), unattributed spend, and days in two
// 64-day blocks of the running totals (one starts on 2026-10-10), in the report's current and prior ranges.
const FILE = [
  spendLine('ws_a', '2026-11-20', 1_200),
  spendLine('ws_a', '2026-11-20', 34),
  spendLine('ws_b', '2026-11-21', 400),
  spendLine(null, '2026-11-22', 90),
  spendLine('ws_b', '2026-10-09', 11),
  {
    type: 'organicMetrics',
    workspaceId: 'ws_a',
    date: '2026-11-20',
    platform: 'instagram',
    posts: 1,
    impressions: 900,
    reach: 700,
    likes: 40,
    comments: 3,
    shares: 2,
    saves: 5,
  },
];

/** Runs `hubops import` on `lines`; its exit code and output. */
async function cli(lines: unknown[], ...flags: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const file = path.join(dir, 'file.ndjson');
  await writeFile(file, lines.map((line) => JSON.stringify(line)).join('\n'));
  let stdout = '';
  let stderr = '';
  const io = {
    stdout: (text: string) => (stdout += text),
    stderr: (text: string) => (stderr += text),
    env: { PATH: process.env.PATH, DATABASE_URL: t.db.url },
    stdin: Readable.from([]),
  };
  const code = await runCli(['import', file, ...flags], io);
  return { code, stdout, stderr };
}

async function importFile(...flags: string[]): Promise<string> {
  const { code, stdout, stderr } = await cli(FILE, ...flags);
  assert.equal(code, 0, stderr);
  return stdout.split('\n')[1]!;
}

async function report(): Promise<any> {
  const response = await t.hubGet('/spend-by-workspace?period=last_30_days', key);
  assert.equal(response.status, 200);
  return response.body;
}

async function spendRows(): Promise<Record<string, string>> {
  const rows = await t.db.kysely.selectFrom('spend').select(['workspace_id', 'date', 'spend_cents']).where('hub_id', '=', HUB).execute();
  return Object.fromEntries(rows.map((r) => [`${r.workspace_id ?? '-'} ${r.date}`, r.spend_cents]));
}

/** The running totals as stored, and as they must be for the stored spend rows (migration 009). */
async function runningTotals(): Promise<{ stored: Record<string, string[]>; expected: Record<string, string[]> }> {
  const rows = await t.db.kysely.selectFrom('spend').select(['workspace_id', 'date', 'spend_cents']).where('hub_id', '=', HUB).execute();
  const expected: Record<string, bigint[]> = {};
  for (const row of rows) {
    const day = Math.round(Date.parse(`${row.date}T00:00:00Z`) / DAY_MS);
    const block = Math.floor(day / 64);
    const sums = (expected[`${row.workspace_id ?? ''}|${block}`] ??= Array.from({ length: 64 }, () => 0n));
    for (let i = day - 64 * block; i < 64; i += 1) sums[i]! += BigInt(row.spend_cents);
  }
  const stored = await t.db.kysely
    .selectFrom('spend_prefix_sums')
    .select(['workspace_key', 'block', 'sums'])
    .where('hub_id', '=', HUB)
    .execute();
  const nonZero = (sums: (string | bigint)[]) => sums.some((s) => BigInt(s) !== 0n);
  return {
    stored: Object.fromEntries(stored.filter((r) => nonZero(r.sums)).map((r) => [`${r.workspace_key}|${r.block}`, r.sums.map(String)])),
    expected: Object.fromEntries(
      Object.entries(expected)
        .filter(([, sums]) => nonZero(sums))
        .map(([k, sums]) => [k, sums.map(String)]),
    ),
  };
}

test('importing the same file again changes nothing; --add adds its spend once more, and the report follows', async () => {
  assert.equal(await importFile(), 'Spend per ad account, workspace and date: 3 new, 1 replaced, 0 unchanged.');
  assert.deepEqual(await spendRows(), {
    'ws_a 2026-11-20': '1234', // replaced the stored 5,000 with the file's 1,200 + 34
    'ws_b 2026-11-01': '700', // a key the file does not name is left alone
    'ws_b 2026-11-21': '400',
    '- 2026-11-22': '90',
    'ws_b 2026-10-09': '11',
  });
  const once = { db: await snapshot(t.db), report: await report(), totals: await runningTotals() };
  assert.deepEqual(once.totals.stored, once.totals.expected);
  assert.equal(once.report.totals.spendCents, 1234 + 400 + 90 + 700);
  assert.equal(once.report.totals.priorSpendCents, 11);

  assert.equal(await importFile(), 'Spend per ad account, workspace and date: 0 new, 0 replaced, 4 unchanged.');
  assert.deepEqual(await snapshot(t.db), once.db, 'the second run wrote nothing (report versions included)');
  assert.deepEqual(await report(), once.report);
  assert.deepEqual(await runningTotals(), once.totals);

  assert.equal(await importFile('--add'), 'Spend per ad account, workspace and date: 0 new, 4 added to, 0 unchanged.');
  assert.deepEqual(await spendRows(), {
    'ws_a 2026-11-20': '2468',
    'ws_b 2026-11-01': '700',
    'ws_b 2026-11-21': '800',
    '- 2026-11-22': '180',
    'ws_b 2026-10-09': '22',
  });
  const added = await report();
  assert.equal(added.totals.spendCents, once.report.totals.spendCents + 1234 + 400 + 90);
  assert.equal(added.totals.priorSpendCents, 22);
  assert.equal(added.totals.unattributedSpendCents, 180);
  assert.deepEqual(
    added.workspaces.map((w: { id: string; spendCents: number }) => [w.id, w.spendCents]),
    [
      ['ws_a', 2468],
      ['ws_b', 700 + 800],
    ],
  );
  const totals = await runningTotals();
  assert.deepEqual(totals.stored, totals.expected);
  // Organic metrics replace in both modes: --add concerns spend only.
  const metrics = await t.db.kysely.selectFrom('organic_metrics').select(['impressions']).where('hub_id', '=', HUB).execute();
  assert.deepEqual(metrics, [{ impressions: '900' }]);
});

// One line of every type, ids given, in a hub of its own (next to the other account's hub_rerun).
const EVERY = [
  { type: 'account', id: 'acc_all', name: 'All Types Co', plan: 'partner', apiAccess: true },
  { type: 'hub', id: 'hub_all', accountId: 'acc_all', name: 'All Types', suspended: false },
  { type: 'workspaceField', hubId: 'hub_all', key: 'region', label: 'Region' },
  { type: 'workspaceField', hubId: 'hub_all', key: 'legacy', label: 'Legacy', archived: true },
  {
    type: 'workspace',
    id: 'ws_all',
    hubId: 'hub_all',
    name: 'All Denver',
    timezone: 'America/Denver',
    fields: { region: 'West', legacy: 7 },
  },
  { type: 'workspace', id: 'ws_all2', hubId: 'hub_all', name: 'All Boise' },
  {
    type: 'playbook',
    id: 'pb_all',
    hubId: 'hub_all',
    name: 'Spring ',
    solutions: ['meta', 'organic_social'],
    variants: { audience: ['Families', 'Students'], size: ['S'] },
    questions: [{ question: 'Hours?' }, { question: 'Flavour?', type: 'single_select', required: true, options: ['Vanilla', 'Mocha'] }],
  },
  {
    type: 'optIn',
    id: 'oi_all',
    playbookId: 'pb_all',
    workspaceId: 'ws_all',
    status: 'active',
    optedInAt: '2026-11-01T10:00:00Z',
    updatedAt: '2026-11-02T10:00:00.123456+01:00',
    budgetCents: 50_000,
    budgetType: 'lifetime',
    variant: { size: 'S', audience: 'Families' },
    responses: [{ question: 'Hours?', answer: '9-5' }],
  },
  {
    type: 'optIn',
    id: 'oi_all2',
    playbookId: 'pb_all',
    workspaceId: 'ws_all2',
    status: 'questions_only',
    optedInAt: '2026-11-03T08:30:00-05:00',
  },
  { type: 'adAccount', id: 'aa_all', hubId: 'hub_all', platform: 'meta', name: 'All Meta', lastSyncedAt: '2026-11-21T06:00:00Z' },
  { type: 'spend', adAccountId: 'aa_all', workspaceId: 'ws_all', date: '2026-11-20', spendCents: 1_000 },
  { type: 'spend', adAccountId: 'aa_all', workspaceId: 'ws_all', date: '2026-11-20', spendCents: 234 },
  {
    type: 'user',
    id: 'usr_all',
    email: 'All@Example.com',
    password: 'correct horse',
    firstname: 'Ada',
    lastname: 'Lovelace',
    hubId: 'hub_all',
    role: 'hub_admin',
    staff: true,
  },
  // No id: a user's natural key is the email.
  {
    type: 'user',
    email: 'member@all.example',
    password: 'battery staple',
    firstname: 'Bob',
    lastname: 'B',
    hubId: 'hub_all',
    role: 'member',
    workspaceId: 'ws_all2',
  },
  { type: 'channel', id: 'chn_all_fb', workspaceId: 'ws_all', platform: 'facebook', name: 'All FB' },
  { type: 'channel', id: 'chn_all_ig', workspaceId: 'ws_all', platform: 'instagram', name: 'All IG', handle: '@all', connected: true },
  {
    type: 'media',
    id: 'med_all',
    workspaceId: 'ws_all',
    contentType: 'image/jpeg',
    filename: 'latte.jpg',
    byteSize: 482_113,
    width: 1080,
    height: 1080,
    sha256: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
    createdAt: '2026-10-02T08:00:00Z',
  },
  // No createdAt: "now" on the first run, not compared on the next.
  {
    type: 'media',
    id: 'med_all2',
    workspaceId: 'ws_all',
    contentType: 'video/mp4',
    filename: 'clip.mp4',
    byteSize: 1_000_000,
    width: 720,
    height: 1280,
    durationMs: 15_000,
    sha256: 'a'.repeat(64),
  },
  { type: 'post', id: 'post_draft', workspaceId: 'ws_all', text: 'Draft', status: 'draft' },
  {
    type: 'post',
    id: 'post_sched',
    workspaceId: 'ws_all',
    text: 'Soon',
    status: 'scheduled',
    channelIds: ['chn_all_fb'],
    scheduledAt: '2027-01-01T09:00:00Z',
  },
  {
    type: 'post',
    id: 'post_pub',
    workspaceId: 'ws_all',
    text: 'Pumpkin Spice is back!',
    status: 'published',
    channelIds: ['chn_all_ig', 'chn_all_fb'],
    mediaIds: ['med_all'],
    scheduledAt: '2026-11-10T09:00:00Z',
    publishedAt: '2026-11-10T09:00:04Z',
    externalIds: { chn_all_ig: '178961' },
    createdAt: '2026-11-09T08:00:00Z',
  },
  {
    type: 'post',
    id: 'post_fail',
    workspaceId: 'ws_all',
    text: 'Oops',
    status: 'failed',
    channelIds: ['chn_all_fb'],
    scheduledAt: '2026-11-11T09:00:00Z',
    error: 'token expired',
  },
  {
    type: 'organicMetrics',
    workspaceId: 'ws_all',
    date: '2026-11-20',
    platform: 'instagram',
    posts: 1,
    impressions: 2400,
    reach: 1800,
    likes: 96,
    comments: 7,
    shares: 4,
    saves: 11,
  },
  {
    type: 'paidMetrics',
    workspaceId: 'ws_all',
    date: '2026-11-20',
    platform: 'meta',
    campaignId: '120211',
    campaignName: 'Spring - Meta',
    spendCents: 4210,
    impressions: 5300,
    clicks: 61,
    results: 4,
  },
  { type: 'reviewDay', workspaceId: 'ws_all', date: '2026-11-20', newReviews: { 5: 3, 4: 1 }, responded: 2 },
  { type: 'reviewDay', workspaceId: 'ws_all', date: '2026-11-21', newReviews: { 1: 1 }, responded: 0 },
  { type: 'hubCpm', hubId: 'hub_all', platform: 'instagram', cpmCents: 850 },
];

const ndjson = (lines: unknown[]) => lines.map((line) => JSON.stringify(line)).join('\n');
const lineOf = (match: (line: Record<string, unknown>) => boolean) => EVERY.findIndex((line) => match(line as Record<string, unknown>)) + 1;
const replaced = (index: number, line: Record<string, unknown>) => EVERY.map((l, i) => (i === index - 1 ? line : l));

/** The snapshot's tables, and the ones triggers keep (running totals, opt-in counts, versions). */
async function fullSnapshot(): Promise<unknown> {
  const derived: Record<string, unknown> = {};
  for (const table of ['spend_prefix_sums', 'opt_in_day_counts', 'opt_in_status_counts', 'hubs']) {
    const { rows } = await sql<{
      digest: string | null;
    }>`SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) AS digest FROM ${sql.table(table)} t`.execute(t.db.kysely);
    derived[table] = rows[0]!.digest;
  }
  return { tables: await snapshot(t.db), derived };
}

/** Imports `lines`, expecting a refusal; its issues. Asserts that nothing was written. */
async function refused(lines: unknown[]): Promise<string> {
  const before = await fullSnapshot();
  const error = await importNdjson(t.db, ndjson(lines)).then(
    () => assert.fail('the import should have been refused'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof ImportError, String(error));
  assert.deepEqual(await fullSnapshot(), before, 'a refused import writes nothing');
  return error.message;
}

test('a file with every record type, ids given, imported again: unchanged, nothing written, and said so', async () => {
  const first = await importNdjson(t.db, ndjson(EVERY));
  const perType = Object.fromEntries(IMPORT_TYPES.map((type) => [type, EVERY.filter((line) => line.type === type).length]));
  assert.ok(
    Object.values(perType).every((n) => n > 0),
    'the file has every type',
  );
  assert.deepEqual(first.imported, perType);
  assert.deepEqual(first.unchanged, Object.fromEntries(IMPORT_TYPES.map((type) => [type, 0])));
  const once = await fullSnapshot();

  const second = await importNdjson(t.db, ndjson(EVERY));
  assert.deepEqual(second.imported, perType);
  assert.deepEqual(second.unchanged, perType, 'every line is unchanged');
  assert.deepEqual(second.spend, { new: 0, changed: 0, unchanged: 1 });
  assert.deepEqual(await fullSnapshot(), once, 'the second run wrote nothing');

  const third = await cli(EVERY);
  assert.equal(third.code, 0, third.stderr);
  assert.equal(
    third.stdout,
    [
      'Imported 1 account, 1 hub, 2 workspaceField, 2 workspace, 1 playbook, 2 optIn, 1 adAccount, 2 spend, 2 user, 2 channel, 2 media, 4 post, 1 organicMetrics, 1 paidMetrics, 2 reviewDay, 1 hubCpm.',
      'Spend per ad account, workspace and date: 0 new, 0 replaced, 1 unchanged.',
      'Unchanged (already stored so, not written): 1 account, 1 hub, 2 workspaceField, 2 workspace, 1 playbook, 2 optIn, 1 adAccount, 2 user, 2 channel, 2 media, 4 post, 1 organicMetrics, 1 paidMetrics, 2 reviewDay, 1 hubCpm.',
      '',
    ].join('\n'),
  );
  assert.deepEqual(await fullSnapshot(), once);
  // The JSON keeps its shape.
  const json = await cli(EVERY, '--json');
  assert.deepEqual(JSON.parse(json.stdout), { imported: perType });
});

test('a stored id with a different value refuses the whole file, naming the line and the fields', async () => {
  const ws = lineOf((l) => l.id === 'ws_all');
  assert.equal(
    await refused(replaced(ws, { ...EVERY[ws - 1], name: 'Renamed' })),
    `line ${ws}: workspace.id: workspace ws_all already exists with a different name; change it in hubops or give a new id`,
  );
  // Every differing field is named; a new line in the same file is not written either.
  const oi = lineOf((l) => l.id === 'oi_all');
  const message = await refused([
    ...replaced(oi, { ...EVERY[oi - 1], budgetCents: 60_000, variant: { size: 'S', audience: 'Students' } }),
    { type: 'account', id: 'acc_new', name: 'New' },
  ]);
  assert.equal(
    message,
    `line ${oi}: optIn.id: opt-in oi_all already exists with a different budgetCents, variant; change it in hubops or give a new id`,
  );
  assert.equal(await t.db.kysely.selectFrom('accounts').select('id').where('id', '=', 'acc_new').executeTakeFirst(), undefined);
  // Types whose rows have json, arrays, bytes, child rows.
  const cases: [Record<string, unknown>, string, RegExp][] = [
    [{ id: 'pb_all' }, 'questions', /playbook pb_all already exists with a different questions;/],
    [{ id: 'med_all' }, 'sha256', /media asset med_all already exists with a different sha256;/],
    [{ id: 'post_pub' }, 'externalIds', /post post_pub already exists with a different externalIds;/],
    [{ id: 'post_draft' }, 'channelIds', /post post_draft already exists with a different channelIds;/],
    [
      { key: 'legacy' },
      'archived',
      /^line \d+: workspaceField.key: field "legacy" of hub hub_all already exists with a different archived; change it in hubops or give a new key$/,
    ],
    [{ id: 'aa_all' }, 'lastSyncedAt', /ad account aa_all already exists with a different lastSyncedAt;/],
  ];
  const changes: Record<string, unknown> = {
    questions: [{ question: 'Hours?' }],
    sha256: 'b'.repeat(64),
    externalIds: { chn_all_ig: '999' },
    channelIds: ['chn_all_fb'],
    archived: false,
    lastSyncedAt: '2026-11-21T06:00:01Z',
  };
  for (const [key, field, expected] of cases) {
    const [k, v] = Object.entries(key)[0]!;
    const n = lineOf((l) => l[k] === v);
    assert.match(await refused(replaced(n, { ...EVERY[n - 1], [field]: changes[field] })), expected);
  }
});

test('an id stored in another account is refused without showing its values', async () => {
  // hub_rerun and ws_a belong to acc_rerun.
  const message = await refused([
    ...EVERY,
    { type: 'hub', id: HUB, accountId: 'acc_all', name: 'Mine now' },
    { type: 'workspace', id: 'ws_a', hubId: 'hub_all', name: 'Workspace ws_a' },
  ]);
  assert.equal(
    message,
    [
      `line ${EVERY.length + 1}: hub.id: hub ${HUB} already exists`,
      `line ${EVERY.length + 2}: workspace.id: workspace ws_a already exists`,
    ].join('\n'),
  );
});

test('a user line: unchanged whatever its password (never compared, never changed); refused with another role or id', async () => {
  const u = lineOf((l) => l.id === 'usr_all');
  const hash = () => t.db.kysely.selectFrom('users').select('password_hash').where('id', '=', 'usr_all').executeTakeFirstOrThrow();
  const before = await hash();
  const other = await importNdjson(t.db, ndjson([{ ...EVERY[u - 1], password: 'another horse' }]));
  assert.equal(other.unchanged.user, 1, 'an import is no way to test a password');
  assert.deepEqual(await hash(), before, 'nor to change one');
  const m = lineOf((l) => l.email === 'member@all.example');
  assert.match(
    await refused(replaced(m, { ...EVERY[m - 1], role: 'hub_admin', workspaceId: null })),
    /a user with email member@all.example already exists with a different role, workspaceId;/,
  );
  assert.match(
    await refused(replaced(u, { ...EVERY[u - 1], id: 'usr_other' })),
    /a user with email all@example.com already exists with a different id;/,
  );
  // The same user lines alone: unchanged.
  const result = await importNdjson(t.db, ndjson([EVERY[u - 1], EVERY[m - 1]]));
  assert.equal(result.unchanged.user, 2);
});

test('a row changed in hubops since the import refuses the line; a line without an id is new on every run', async () => {
  await t.db.kysely.updateTable('posts').set({ text: 'Edited in hubops' }).where('id', '=', 'post_draft').execute();
  try {
    assert.match(await refused(EVERY), /post post_draft already exists with a different text; change it in hubops or give a new id/);
  } finally {
    await t.db.kysely.updateTable('posts').set({ text: 'Draft' }).where('id', '=', 'post_draft').execute();
  }
  // Only the post's own updatedAt moved (an edit put back, a claim released): not the line's to say.
  await t.db.kysely.updateTable('posts').set({ updated_at: new Date() }).where('id', '=', 'post_draft').execute();
  assert.equal((await importNdjson(t.db, ndjson(EVERY))).unchanged.post, EVERY.filter((l) => l.type === 'post').length);
  const noId = { type: 'workspace', hubId: 'hub_all', name: 'No id' };
  await importNdjson(t.db, ndjson([noId]));
  await importNdjson(t.db, ndjson([noId]));
  const rows = await t.db.kysely.selectFrom('workspaces').select('id').where('name', '=', 'No id').execute();
  assert.equal(rows.length, 2);
});
