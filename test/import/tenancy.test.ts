import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { sql } from 'kysely';
import { ImportError, importNdjson } from '../../src/domain/import/import.service.ts';
import { ID_PATTERN } from '../../src/platform/ids.ts';
import { verifyPassword } from '../../src/platform/password.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import { snapshot } from '../support/snapshot.ts';

// The NDJSON import against a real PostgreSQL: every type round-trips, every kind
// of bad line is reported with its line number and field, and a refused import writes nothing.

let db: TestDb;

const ndjson = (lines: unknown[]) => lines.map((line) => (typeof line === 'string' ? line : JSON.stringify(line))).join('\n');

// One of everything, written the way a migration from another system would write it.
const VALID = [
  { type: 'account', id: 'acc_1', name: 'Acme Franchising', plan: 'partner', apiAccess: true },
  { type: 'account', name: 'Generated Id Co' },
  { type: 'hub', id: 'hub_1', accountId: 'acc_1', name: 'Acme US', suspended: false },
  { type: 'hub', id: 'hub_2', accountId: 'acc_1', name: 'Acme CA', suspended: true },
  { type: 'workspaceField', hubId: 'hub_1', key: 'region', label: 'Region', archived: false },
  { type: 'workspaceField', hubId: 'hub_1', key: 'legacy', label: 'Legacy code', archived: true },
  { type: 'workspace', id: 'ws_1', hubId: 'hub_1', name: 'Acme Denver', timezone: 'America/Denver', fields: { region: 'West', legacy: 7 } },
  { type: 'workspace', id: 'ws_2', hubId: 'hub_1', name: 'Acme Boise' },
  { type: 'workspace', id: 'ws_3', hubId: 'hub_2', name: 'Acme Toronto' },
  {
    type: 'playbook',
    id: 'pb_1',
    hubId: 'hub_1',
    name: 'Spring Promo ',
    solutions: ['meta', 'google_ads'],
    variants: { audience: ['Families', 'Students'] },
    questions: [
      { question: 'Store hours?' },
      { question: 'Flavour?', type: 'single_select', required: true, options: ['Vanilla', 'Mocha'] },
    ],
  },
  { type: 'playbook', id: 'pb_2', hubId: 'hub_2', name: 'Canada Day', solutions: ['organic_social'] },
  {
    type: 'optIn',
    id: 'oi_1',
    playbookId: 'pb_1',
    workspaceId: 'ws_1',
    status: 'active',
    optedInAt: '2026-11-01T10:00:00Z',
    updatedAt: '2026-11-02T10:00:00.123456+01:00',
    budgetCents: 50000,
    budgetType: 'lifetime',
    variant: { audience: 'Families' },
    responses: [{ question: 'Store hours?', answer: '9-5' }],
  },
  {
    type: 'optIn',
    playbookId: 'pb_1',
    workspaceId: 'ws_2',
    status: 'questions_only',
    optedInAt: '2026-11-03T08:30:00-05:00',
    budgetCents: null,
    budgetType: null,
  },
  {
    type: 'adAccount',
    id: 'aa_1',
    hubId: 'hub_1',
    platform: 'meta',
    name: 'Acme Meta',
    lastSyncedAt: '2026-11-21T06:00:00Z',
    syncState: 'idle',
  },
  { type: 'adAccount', id: 'aa_2', hubId: 'hub_1', platform: 'google_ads', name: 'Acme Google', lastSyncedAt: null, syncState: 'failed' },
  { type: 'spend', adAccountId: 'aa_1', workspaceId: 'ws_1', date: '2026-11-20', spendCents: 12345 },
  { type: 'spend', adAccountId: 'aa_1', workspaceId: 'ws_1', date: '2026-11-20', spendCents: 655 },
  { type: 'spend', adAccountId: 'aa_1', workspaceId: null, date: '2026-11-20', spendCents: 300 },
  { type: 'spend', adAccountId: 'aa_1', workspaceId: null, date: '2026-11-20', spendCents: 200 },
  { type: 'spend', adAccountId: 'aa_1', workspaceId: 'ws_1', date: '2026-11-21', spendCents: 0 },
  {
    type: 'user',
    id: 'usr_1',
    email: ' Ada@Example.COM ',
    password: 'correct horse',
    firstname: 'Ada',
    lastname: 'Lovelace',
    hubId: 'hub_1',
    role: 'hub_admin',
    staff: true,
  },
  {
    type: 'user',
    email: 'bob@example.com',
    password: 'battery staple',
    firstname: 'Bob',
    lastname: 'Builder',
    hubId: 'hub_1',
    role: 'member',
    workspaceId: 'ws_2',
  },
];

before(async () => {
  db = await createTestDb();
});
after(async () => {
  await db.drop();
});

describe('a valid file', () => {
  before(async () => {
    // A BOM, CRLF line ends and blank lines are what editors and exports produce.
    const text = `\uFEFF${ndjson(VALID.slice(0, 3))}\r\n\r\n${ndjson(VALID.slice(3))}\n`;
    const result = await importNdjson(db, text);
    assert.deepEqual(result, {
      imported: {
        account: 2,
        hub: 2,
        workspaceField: 2,
        workspace: 3,
        playbook: 2,
        optIn: 2,
        adAccount: 2,
        spend: 5,
        user: 2,
        channel: 0,
        media: 0,
        post: 0,
        organicMetrics: 0,
        paidMetrics: 0,
        reviewDay: 0,
        hubCpm: 0,
      },
      // Five lines, three keys (ad account, workspace or unattributed, date).
      spend: { new: 3, changed: 0, unchanged: 0 },
      unchanged: {
        account: 0,
        hub: 0,
        workspaceField: 0,
        workspace: 0,
        playbook: 0,
        optIn: 0,
        adAccount: 0,
        spend: 0,
        user: 0,
        channel: 0,
        media: 0,
        post: 0,
        organicMetrics: 0,
        paidMetrics: 0,
        reviewDay: 0,
        hubCpm: 0,
      },
    });
  });

  test('accounts and hubs', async () => {
    const accounts = await db.kysely.selectFrom('accounts').select(['id', 'name', 'plan', 'api_access']).orderBy('name').execute();
    assert.equal(accounts.length, 2);
    assert.deepEqual(accounts[0], { id: 'acc_1', name: 'Acme Franchising', plan: 'partner', api_access: true });
    // Missing id: generated with the type's prefix; missing plan and apiAccess: the defaults.
    assert.match(accounts[1]!.id, /^acc_[A-Za-z0-9]{20}$/);
    assert.deepEqual({ ...accounts[1], id: undefined }, { id: undefined, name: 'Generated Id Co', plan: 'standard', api_access: false });
    const hubs = await db.kysely.selectFrom('hubs').select(['id', 'account_id', 'suspended']).orderBy('id').execute();
    assert.deepEqual(hubs, [
      { id: 'hub_1', account_id: 'acc_1', suspended: false },
      { id: 'hub_2', account_id: 'acc_1', suspended: true },
    ]);
  });

  test('workspace fields and workspaces', async () => {
    const fields = await db.kysely.selectFrom('workspace_fields').selectAll().orderBy('key').execute();
    assert.deepEqual(fields, [
      { hub_id: 'hub_1', key: 'legacy', label: 'Legacy code', archived: true },
      { hub_id: 'hub_1', key: 'region', label: 'Region', archived: false },
    ]);
    const workspaces = await db.kysely
      .selectFrom('workspaces')
      .select(['id', 'hub_id', 'name', 'timezone', 'fields'])
      .orderBy('id')
      .execute();
    assert.deepEqual(workspaces, [
      { id: 'ws_1', hub_id: 'hub_1', name: 'Acme Denver', timezone: 'America/Denver', fields: { region: 'West', legacy: 7 } },
      { id: 'ws_2', hub_id: 'hub_1', name: 'Acme Boise', timezone: 'UTC', fields: {} },
      { id: 'ws_3', hub_id: 'hub_2', name: 'Acme Toronto', timezone: 'UTC', fields: {} },
    ]);
  });

  test('playbooks keep their names exactly, trailing spaces included', async () => {
    const playbooks = await db.kysely
      .selectFrom('playbooks')
      .select(['id', 'hub_id', 'name', 'solutions', 'variants', 'questions'])
      .orderBy('id')
      .execute();
    assert.deepEqual(playbooks, [
      {
        id: 'pb_1',
        hub_id: 'hub_1',
        name: 'Spring Promo ',
        solutions: ['meta', 'google_ads'],
        variants: { audience: ['Families', 'Students'] },
        questions: [
          { question: 'Store hours?', type: 'short_answer', required: false },
          { question: 'Flavour?', type: 'single_select', required: true, options: ['Vanilla', 'Mocha'] },
        ],
      },
      { id: 'pb_2', hub_id: 'hub_2', name: 'Canada Day', solutions: ['organic_social'], variants: {}, questions: [] },
    ]);
  });

  test('opt-ins: hub from the playbook, timestamps in UTC to the millisecond, defaults', async () => {
    const optIns = await db.kysely.selectFrom('opt_ins').selectAll().orderBy('opted_in_at').execute();
    assert.equal(optIns.length, 2);
    assert.deepEqual(optIns[0], {
      id: 'oi_1',
      hub_id: 'hub_1',
      playbook_id: 'pb_1',
      workspace_id: 'ws_1',
      status: 'active',
      opted_in_at: new Date('2026-11-01T10:00:00.000Z'),
      updated_at: new Date('2026-11-02T09:00:00.123Z'),
      budget_cents: '50000',
      budget_type: 'lifetime',
      variant: { audience: 'Families' },
      responses: [{ question: 'Store hours?', answer: '9-5' }],
    });
    const second = optIns[1]!;
    assert.match(second.id, /^oi_/);
    assert.equal(second.hub_id, 'hub_1');
    assert.deepEqual(second.opted_in_at, new Date('2026-11-03T13:30:00.000Z'));
    // No updatedAt: never changed since it was created.
    assert.deepEqual(second.updated_at, second.opted_in_at);
    assert.deepEqual([second.budget_cents, second.budget_type, second.variant, second.responses], [null, null, {}, []]);
  });

  test('ad accounts', async () => {
    const accounts = await db.kysely
      .selectFrom('ad_accounts')
      .select(['id', 'hub_id', 'platform', 'name', 'sync_state', 'last_synced_at'])
      .orderBy('id')
      .execute();
    assert.deepEqual(accounts, [
      {
        id: 'aa_1',
        hub_id: 'hub_1',
        platform: 'meta',
        name: 'Acme Meta',
        sync_state: 'idle',
        last_synced_at: new Date('2026-11-21T06:00:00Z'),
      },
      { id: 'aa_2', hub_id: 'hub_1', platform: 'google_ads', name: 'Acme Google', sync_state: 'failed', last_synced_at: null },
    ]);
  });

  test('spend lines for the same account, workspace and day add up; null is unattributed', async () => {
    const spend = await db.kysely.selectFrom('spend').selectAll().orderBy('date').orderBy('workspace_id').execute();
    assert.deepEqual(spend, [
      { hub_id: 'hub_1', ad_account_id: 'aa_1', workspace_id: 'ws_1', date: '2026-11-20', spend_cents: '13000' },
      { hub_id: 'hub_1', ad_account_id: 'aa_1', workspace_id: null, date: '2026-11-20', spend_cents: '500' },
      { hub_id: 'hub_1', ad_account_id: 'aa_1', workspace_id: 'ws_1', date: '2026-11-21', spend_cents: '0' },
    ]);
  });

  test('users: lower-cased email, hashed password, account of the hub, membership', async () => {
    const users = await db.kysely
      .selectFrom('users as u')
      .innerJoin('memberships as m', 'm.user_id', 'u.id')
      .select([
        'u.id',
        'u.account_id',
        'u.email',
        'u.password_hash',
        'u.firstname',
        'u.lastname',
        'u.is_staff',
        'm.hub_id',
        'm.role',
        'm.workspace_id',
      ])
      .orderBy('u.email')
      .execute();
    assert.equal(users.length, 2);
    const [ada, bob] = users as [(typeof users)[0], (typeof users)[0]];
    assert.deepEqual(
      { ...ada, password_hash: undefined },
      {
        id: 'usr_1',
        account_id: 'acc_1',
        email: 'ada@example.com',
        password_hash: undefined,
        firstname: 'Ada',
        lastname: 'Lovelace',
        is_staff: true,
        hub_id: 'hub_1',
        role: 'hub_admin',
        workspace_id: null,
      },
    );
    assert.equal(await verifyPassword('correct horse', ada.password_hash), true);
    assert.equal(await verifyPassword('correct horsE', ada.password_hash), false);
    assert.match(bob.id, /^usr_/);
    assert.deepEqual([bob.email, bob.is_staff, bob.role, bob.workspace_id], ['bob@example.com', false, 'member', 'ws_2']);
  });

  test('a later import may refer to stored rows, and its spend replaces stored spend for the same key', async () => {
    const result = await importNdjson(
      db,
      ndjson([
        { type: 'workspace', id: 'ws_4', hubId: 'hub_1', name: 'Acme Reno', fields: { region: 'West' } },
        { type: 'optIn', id: 'oi_3', playbookId: 'pb_1', workspaceId: 'ws_4', status: 'pending', optedInAt: '2026-11-05T00:00:00Z' },
        { type: 'spend', adAccountId: 'aa_1', workspaceId: 'ws_1', date: '2026-11-20', spendCents: 1000 },
        { type: 'spend', adAccountId: 'aa_1', workspaceId: null, date: '2026-11-20', spendCents: 1 },
      ]),
    );
    assert.equal(result.imported.optIn, 1);
    const rows = await db.kysely
      .selectFrom('spend')
      .select(['workspace_id', 'spend_cents'])
      .where('date', '=', '2026-11-20')
      .orderBy('workspace_id')
      .execute();
    assert.deepEqual(rows, [
      { workspace_id: 'ws_1', spend_cents: '1000' },
      { workspace_id: null, spend_cents: '1' },
    ]);
    const optIn = await db.kysely.selectFrom('opt_ins').select('hub_id').where('id', '=', 'oi_3').executeTakeFirstOrThrow();
    assert.equal(optIn.hub_id, 'hub_1');
  });

  test("with spend: 'add', the file's spend (its lines summed per key) is added to stored spend", async () => {
    await importNdjson(
      db,
      ndjson([
        { type: 'spend', adAccountId: 'aa_1', workspaceId: 'ws_1', date: '2026-11-20', spendCents: 200 },
        { type: 'spend', adAccountId: 'aa_1', workspaceId: 'ws_1', date: '2026-11-20', spendCents: 50 },
        { type: 'spend', adAccountId: 'aa_1', workspaceId: null, date: '2026-11-20', spendCents: 9 },
        { type: 'spend', adAccountId: 'aa_1', workspaceId: 'ws_2', date: '2026-11-22', spendCents: 5 },
      ]),
      { spend: 'add' },
    );
    const rows = await db.kysely
      .selectFrom('spend')
      .select(['workspace_id', 'date', 'spend_cents'])
      .where('date', 'in', ['2026-11-20', '2026-11-22'])
      .orderBy('date')
      .orderBy('workspace_id')
      .execute();
    assert.deepEqual(rows, [
      { workspace_id: 'ws_1', date: '2026-11-20', spend_cents: '1250' },
      { workspace_id: null, date: '2026-11-20', spend_cents: '10' },
      { workspace_id: 'ws_2', date: '2026-11-22', spend_cents: '5' },
    ]);
  });

  test('an empty file imports nothing', async () => {
    const result = await importNdjson(db, '\n\n');
    assert.ok(Object.values(result.imported).every((n) => n === 0));
  });
});

describe('a bad line fails the whole import with its line number and field, and writes nothing', () => {
  // Lines 1–4 are valid; each case appends its lines, so the first bad line is line 5 or later.
  const prefix = [
    { type: 'account', id: 'acc_e', name: 'E Corp' },
    { type: 'hub', id: 'hub_e', accountId: 'acc_e', name: 'E Hub' },
    { type: 'workspaceField', hubId: 'hub_e', key: 'region', label: 'Region' },
    { type: 'workspace', id: 'ws_e', hubId: 'hub_e', name: 'E Shop', fields: { region: 'North' } },
  ];
  const pb = { type: 'playbook', id: 'pb_e', hubId: 'hub_e', name: 'E Promo', solutions: ['meta'] };
  const optIn = { type: 'optIn', id: 'oi_e', playbookId: 'pb_e', workspaceId: 'ws_e', status: 'active', optedInAt: '2026-11-01T10:00:00Z' };
  const aa = { type: 'adAccount', id: 'aa_e', hubId: 'hub_e', platform: 'meta', name: 'E Meta', syncState: 'idle' };
  const spend = { type: 'spend', adAccountId: 'aa_e', workspaceId: 'ws_e', date: '2026-11-20', spendCents: 100 };
  const user = {
    type: 'user',
    email: 'e@example.com',
    password: 'long enough',
    firstname: 'E',
    lastname: 'E',
    hubId: 'hub_e',
    role: 'member',
  };
  const otherHub = [
    { type: 'hub', id: 'hub_f', accountId: 'acc_e', name: 'F Hub' },
    { type: 'workspace', id: 'ws_f', hubId: 'hub_f', name: 'F Shop' },
  ];

  const cases: { name: string; lines: unknown[]; line: number; field?: string; message: RegExp }[] = [
    { name: 'bad JSON', lines: ['{"type":"playbook",'], line: 5, message: /not valid JSON/ },
    // A broken line or a non-string password never quotes the password back (the CLI prints issues).
    {
      name: 'bad JSON around a password',
      lines: ['{"type":"user","password":SuperSecretPassw0rd}'],
      line: 5,
      message: /^not valid JSON \((?:syntax error|at column \d+)\)$/,
    },
    {
      name: 'non-string password',
      lines: [{ ...user, password: 31415926535 }],
      line: 5,
      field: 'user.password',
      message: /^must be a string, got number$/,
    },
    { name: 'not an object', lines: ['[1,2]'], line: 5, message: /must be a JSON object/ },
    { name: 'unknown type', lines: [{ type: 'widget' }], line: 5, field: 'type', message: /must be one of account, hub, workspaceField/ },
    { name: 'missing type', lines: [{ name: 'x' }], line: 5, field: 'type', message: /must be one of/ },
    {
      name: 'bad plan',
      lines: [{ type: 'account', name: 'G', plan: 'gold' }],
      line: 5,
      field: 'account.plan',
      message: /must be one of standard, partner; got "gold"/,
    },
    {
      name: 'bad status',
      lines: [pb, { ...optIn, status: 'live' }],
      line: 6,
      field: 'optIn.status',
      message: /must be one of pending, pending_billing, .*questions_only; got "live"/,
    },
    {
      name: 'missing required field',
      lines: [pb, { ...optIn, status: undefined }],
      line: 6,
      field: 'optIn.status',
      message: /is required/,
    },
    {
      name: 'timestamp without zone',
      lines: [pb, { ...optIn, optedInAt: '2026-11-01T10:00:00' }],
      line: 6,
      field: 'optIn.optedInAt',
      message: /ISO 8601 timestamp with Z or an offset/,
    },
    {
      name: 'timestamp that is no time',
      lines: [pb, { ...optIn, optedInAt: '2026-11-01T24:10:00Z' }],
      line: 6,
      field: 'optIn.optedInAt',
      message: /ISO 8601/,
    },
    {
      name: 'timestamp on a day that does not exist',
      lines: [pb, { ...optIn, optedInAt: '2026-02-29T10:00:00Z' }],
      line: 6,
      field: 'optIn.optedInAt',
      message: /ISO 8601/,
    },
    {
      name: 'updatedAt before optedInAt',
      lines: [pb, { ...optIn, updatedAt: '2026-11-01T09:59:59.999Z' }],
      line: 6,
      field: 'optIn.updatedAt',
      message: /must not be before optedInAt/,
    },
    {
      name: 'bad budgetType',
      lines: [pb, { ...optIn, budgetCents: 100, budgetType: 'weekly' }],
      line: 6,
      field: 'optIn.budgetType',
      message: /lifetime, daily/,
    },
    {
      name: 'fractional budget',
      lines: [pb, { ...optIn, budgetCents: 10.5 }],
      line: 6,
      field: 'optIn.budgetCents',
      message: /whole number of cents/,
    },
    {
      name: 'variant with a non-string',
      lines: [pb, { ...optIn, variant: { audience: 3 } }],
      line: 6,
      field: 'optIn.variant.audience',
      message: /must be a string/,
    },
    {
      name: 'malformed response',
      lines: [pb, { ...optIn, responses: [{ question: 'Q?' }] }],
      line: 6,
      field: 'optIn.responses[0]',
      message: /"question": string, "answer": string/,
    },
    {
      name: 'bad date',
      lines: [aa, { ...spend, date: '2026-02-30' }],
      line: 6,
      field: 'spend.date',
      message: /real date YYYY-MM-DD; got "2026-02-30"/,
    },
    { name: 'negative spend', lines: [aa, { ...spend, spendCents: -1 }], line: 6, field: 'spend.spendCents', message: /0 or more/ },
    {
      name: 'spend without workspaceId',
      lines: [aa, { ...spend, workspaceId: undefined }],
      line: 6,
      field: 'spend.workspaceId',
      message: /is required/,
    },
    {
      name: 'bad syncState',
      lines: [{ ...aa, syncState: 'done' }],
      line: 5,
      field: 'adAccount.syncState',
      message: /idle, syncing, failed/,
    },
    {
      name: 'organic_social is no ad platform',
      lines: [{ ...aa, platform: 'organic_social' }],
      line: 5,
      field: 'adAccount.platform',
      message: /meta, google_ads, chatgpt_ads; got/,
    },
    {
      name: 'unknown solution',
      lines: [{ ...pb, solutions: ['meta', 'tiktok'] }],
      line: 5,
      field: 'playbook.solutions',
      message: /distinct values from meta, google_ads, chatgpt_ads, organic_social/,
    },
    { name: 'no solutions', lines: [{ ...pb, solutions: [] }], line: 5, field: 'playbook.solutions', message: /non-empty/ },
    { name: 'blank name', lines: [{ ...pb, name: '   ' }], line: 5, field: 'playbook.name', message: /must not be blank/ },
    { name: 'id with bad characters', lines: [{ ...pb, id: 'pb e' }], line: 5, field: 'playbook.id', message: /must be an id matching/ },
    {
      name: 'unknown field',
      lines: [{ ...pb, colour: 'red' }],
      line: 5,
      field: 'playbook.colour',
      message: /is not a field of playbook lines/,
    },
    {
      name: 'dangling reference',
      lines: [{ ...pb, hubId: 'hub_nope' }],
      line: 5,
      field: 'playbook.hubId',
      message: /^hub hub_nope does not exist$/,
    },
    {
      name: 'reference to a later line',
      lines: [optIn, pb],
      line: 5,
      field: 'optIn.playbookId',
      message: /playbook pb_e is defined later, on line 6/,
    },
    {
      name: 'cross-hub opt-in',
      lines: [...otherHub, pb, { ...optIn, workspaceId: 'ws_f' }],
      line: 8,
      field: 'optIn.workspaceId',
      message: /workspace ws_f is in hub hub_f, but playbook pb_e is in hub hub_e/,
    },
    {
      name: 'cross-hub spend',
      lines: [...otherHub, aa, { ...spend, workspaceId: 'ws_f' }],
      line: 8,
      field: 'spend.workspaceId',
      message: /ws_f is in hub hub_f, but ad account aa_e is in hub hub_e/,
    },
    {
      name: 'user pinned to a workspace of another hub',
      lines: [...otherHub, { ...user, workspaceId: 'ws_f' }],
      line: 7,
      field: 'user.workspaceId',
      message: /not in hub hub_e/,
    },
    {
      name: 'duplicate id in the file',
      lines: [pb, { ...pb, name: 'Again' }],
      line: 6,
      field: 'playbook.id',
      message: /playbook id pb_e is already used on line 5/,
    },
    {
      name: 'id of a stored row, with other values',
      lines: [{ type: 'account', id: 'acc_stored', name: 'Again' }],
      line: 5,
      field: 'account.id',
      message: /^account acc_stored already exists with a different name; change it in hubops or give a new id$/,
    },
    {
      name: 'id of a stored row of another account',
      lines: [{ type: 'hub', id: 'hub_stored', accountId: 'acc_e', name: 'Stored' }],
      line: 5,
      field: 'hub.id',
      message: /^hub hub_stored already exists$/,
    },
    {
      name: 'field defined twice',
      lines: [{ type: 'workspaceField', hubId: 'hub_e', key: 'region', label: 'Again' }],
      line: 5,
      field: 'workspaceField.key',
      message: /already defined on line 3/,
    },
    {
      name: 'undefined field key',
      lines: [{ type: 'workspace', hubId: 'hub_e', name: 'X', fields: { colour: 'red' } }],
      line: 5,
      field: 'workspace.fields.colour',
      message: /hub hub_e has no field "colour"/,
    },
    {
      name: 'field key of another hub',
      lines: [...otherHub, { type: 'workspace', hubId: 'hub_f', name: 'X', fields: { region: 'South' } }],
      line: 7,
      field: 'workspace.fields.region',
      message: /hub hub_f has no field "region"/,
    },
    {
      name: 'object as field value',
      lines: [{ type: 'workspace', hubId: 'hub_e', name: 'X', fields: { region: { a: 1 } } }],
      line: 5,
      field: 'workspace.fields.region',
      message: /a string .*a number or a boolean/,
    },
    {
      name: 'bad time zone',
      lines: [{ type: 'workspace', hubId: 'hub_e', name: 'X', timezone: 'Mars/Olympus' }],
      line: 5,
      field: 'workspace.timezone',
      message: /IANA time zone/,
    },
    { name: 'bad email', lines: [{ ...user, email: 'not-an-email' }], line: 5, field: 'user.email', message: /email address/ },
    { name: 'short password', lines: [{ ...user, password: 'short' }], line: 5, field: 'user.password', message: /at least 8 characters/ },
    { name: 'bad role', lines: [{ ...user, role: 'owner' }], line: 5, field: 'user.role', message: /hub_admin, member/ },
    {
      name: 'email taken (any case)',
      lines: [{ ...user, email: 'STORED@example.com' }],
      line: 5,
      field: 'user.email',
      message: /a user with email stored@example.com already exists/,
    },
    {
      name: 'email twice in the file',
      lines: [user, { ...user, email: 'E@EXAMPLE.com' }],
      line: 6,
      field: 'user.email',
      message: /already used on line 5/,
    },
  ];

  before(async () => {
    await importNdjson(
      db,
      ndjson([
        { type: 'account', id: 'acc_stored', name: 'Stored' },
        { type: 'hub', id: 'hub_stored', accountId: 'acc_stored', name: 'Stored' },
        {
          type: 'user',
          email: 'stored@example.com',
          password: 'long enough',
          firstname: 'S',
          lastname: 'S',
          hubId: 'hub_stored',
          role: 'member',
        },
      ]),
    );
  });

  for (const c of cases) {
    test(c.name, async () => {
      const before = await snapshot(db);
      const error = await importNdjson(db, ndjson([...prefix, ...c.lines])).then(
        () => assert.fail('the import should have been refused'),
        (e: unknown) => e,
      );
      assert.ok(error instanceof ImportError, String(error));
      assert.equal(error.issues.length, 1, error.message);
      const [issue] = error.issues;
      assert.equal(issue!.line, c.line);
      assert.equal(issue!.field, c.field);
      assert.match(issue!.message, c.message);
      assert.equal(error.message, `line ${c.line}: ${c.field ? `${c.field}: ` : ''}${issue!.message}`);
      assert.deepEqual(await snapshot(db), before);
    });
  }

  test('the prefix alone is valid (so each case fails because of its own lines)', async () => {
    const fresh = await createTestDb();
    try {
      const result = await importNdjson(fresh, ndjson([...prefix, pb, optIn, aa, spend, user, ...otherHub]));
      assert.equal(result.imported.spend, 1);
    } finally {
      await fresh.drop();
    }
  });

  test('a bad line is reported once, not again by every line that refers to it', async () => {
    const error = await importNdjson(db, ndjson([...prefix, { ...pb, solutions: ['nope'] }, optIn, { ...optIn, id: 'oi_e2' }])).catch(
      (e: ImportError) => e,
    );
    assert.ok(error instanceof ImportError);
    assert.deepEqual(
      error.issues.map((i) => [i.line, i.field]),
      [[5, 'playbook.solutions']],
    );
  });

  test('issues are listed by line, the first 20 of them', async () => {
    const bad = Array.from({ length: 25 }, (_, i) => ({ type: 'account', id: `acc_bad_${i}`, name: 'X', plan: 'gold' }));
    const error = await importNdjson(
      db,
      ndjson([{ type: 'hub', accountId: 'acc_late', name: 'H' }, ...bad, { type: 'account', id: 'acc_late', name: 'Late' }]),
    ).catch((e: ImportError) => e);
    assert.ok(error instanceof ImportError);
    assert.equal(error.issues.length, 26);
    const lines = error.message.split('\n');
    assert.equal(lines.length, 21);
    assert.match(lines[0]!, /^line 1: hub.accountId: account acc_late is defined later, on line 27/);
    assert.match(lines[1]!, /^line 2: account.plan: /);
    assert.equal(lines[20], '… and 6 more issues');
  });
});

describe('an ad account connected to its platform gets its spend from the sync, never from a file', () => {
  // The world: hub_s with an imported account (aa_imp) and a connected one (aa_con), as connect leaves it.
  before(async () => {
    await importNdjson(
      db,
      ndjson([
        { type: 'account', id: 'acc_s', name: 'Synced Co' },
        { type: 'hub', id: 'hub_s', accountId: 'acc_s', name: 'Synced Hub' },
        { type: 'workspace', id: 'ws_s', hubId: 'hub_s', name: 'Synced Shop' },
        { type: 'adAccount', id: 'aa_imp', hubId: 'hub_s', platform: 'meta', name: 'Imported Meta' },
        { type: 'adAccount', id: 'aa_con', hubId: 'hub_s', platform: 'meta', name: 'Connected Meta' },
      ]),
    );
    await sql`INSERT INTO ad_connections (id, hub_id, platform, kind, label, token_sealed) VALUES ('adc_s', 'hub_s', 'meta', 'system_user', 'Meta', '\\x00')`.execute(
      db.kysely,
    );
    await sql`UPDATE ad_accounts SET connection_id = 'adc_s', external_id = 'act_42', currency = 'USD', time_zone = 'America/Los_Angeles' WHERE id = 'aa_con'`.execute(
      db.kysely,
    );
  });

  const spendOf = (adAccountId: string) => ({ type: 'spend', adAccountId, workspaceId: 'ws_s', date: '2026-11-20', spendCents: 500 });
  const refused = async (lines: unknown[]) => {
    const before = await snapshot(db);
    const error = await importNdjson(db, ndjson(lines)).catch((e: unknown) => e);
    assert.ok(error instanceof ImportError, String(error));
    assert.deepEqual(await snapshot(db), before, 'nothing written');
    return error;
  };

  test('a spend line for it is refused with its line and field; the imported account beside it is not written either', async () => {
    const error = await refused([spendOf('aa_imp'), spendOf('aa_con')]);
    assert.deepEqual(
      error.issues.map((i) => [i.line, i.field]),
      [[2, 'spend.adAccountId']],
    );
    assert.equal(
      error.message,
      'line 2: spend.adAccountId: ad account aa_con is synced from its ad platform (connected in hubops), so its spend comes from the sync; an import may only write spend of ad accounts it created',
    );
  });

  test('so is an adAccount line with its id, even one that matches the stored row', async () => {
    const error = await refused([{ type: 'adAccount', id: 'aa_con', hubId: 'hub_s', platform: 'meta', name: 'Connected Meta' }]);
    assert.deepEqual(
      error.issues.map((i) => [i.line, i.field]),
      [[1, 'adAccount.id']],
    );
    assert.match(error.message, /ad account aa_con is synced from its ad platform/);
  });

  test('and still once the account is disconnected (its spend stays derived: a new mapping re-attributes it)', async () => {
    await sql`UPDATE ad_accounts SET connection_id = NULL, disconnected_at = now() WHERE id = 'aa_con'`.execute(db.kysely);
    try {
      await refused([spendOf('aa_con')]);
    } finally {
      await sql`UPDATE ad_accounts SET connection_id = 'adc_s', disconnected_at = NULL WHERE id = 'aa_con'`.execute(db.kysely);
    }
  });

  test('spend of the imported account imports as before', async () => {
    const result = await importNdjson(db, ndjson([spendOf('aa_imp')]));
    assert.equal(result.imported.spend, 1);
  });
});

describe('properties', () => {
  let run = 0;

  test('spend lines add up per (ad account, workspace or unattributed, day), whatever their order', async () => {
    const line = fc.record({
      workspace: fc.constantFrom('w1', 'w2', null),
      day: fc.integer({ min: 1, max: 3 }),
      cents: fc.integer({ min: 0, max: 1_000_000_000 }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(line, { minLength: 1, maxLength: 40 }), async (lines) => {
        const n = ++run;
        const id = (name: string | null) => (name === null ? null : `p${n}_${name}`);
        await importNdjson(
          db,
          ndjson([
            { type: 'account', id: id('acc'), name: 'P' },
            { type: 'hub', id: id('hub'), accountId: id('acc'), name: 'P' },
            { type: 'workspace', id: id('w1'), hubId: id('hub'), name: 'W1' },
            { type: 'workspace', id: id('w2'), hubId: id('hub'), name: 'W2' },
            { type: 'adAccount', id: id('aa'), hubId: id('hub'), platform: 'meta', name: 'P' },
            ...lines.map((l) => ({
              type: 'spend',
              adAccountId: id('aa'),
              workspaceId: id(l.workspace),
              date: `2026-11-0${l.day}`,
              spendCents: l.cents,
            })),
          ]),
        );
        const expected = new Map<string, number>();
        for (const l of lines) {
          const key = `${id(l.workspace)}|2026-11-0${l.day}`;
          expected.set(key, (expected.get(key) ?? 0) + l.cents);
        }
        const rows = await db.kysely
          .selectFrom('spend')
          .select(['workspace_id', 'date', 'spend_cents', 'hub_id'])
          .where('ad_account_id', '=', id('aa')!)
          .execute();
        assert.deepEqual(new Map(rows.map((r) => [`${r.workspace_id}|${r.date}`, Number(r.spend_cents)])), expected);
        assert.ok(rows.every((r) => r.hub_id === id('hub')));
      }),
      { numRuns: 30 },
    );
  });

  test('a file with one corrupted line writes nothing, and the issue names that line', async () => {
    const corruptions: [string, (line: Record<string, unknown>) => unknown][] = [
      ['drop a required field', (l) => ({ ...l, name: undefined })],
      ['bad id', (l) => ({ ...l, id: 'has space' })],
      ['unknown field', (l) => ({ ...l, extra: true })],
      ['truncate the JSON', (l) => JSON.stringify(l).slice(0, -1)],
    ];
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 20 }), fc.nat(), fc.constantFrom(...corruptions), async (count, pick, [, corrupt]) => {
        const n = ++run;
        const lines: Record<string, unknown>[] = [
          { type: 'account', id: `c${n}_acc`, name: 'C' },
          { type: 'hub', id: `c${n}_hub`, accountId: `c${n}_acc`, name: 'C' },
          ...Array.from({ length: count }, (_, i) => ({ type: 'workspace', id: `c${n}_ws${i}`, hubId: `c${n}_hub`, name: `W${i}` })),
        ];
        const at = 2 + (pick % count);
        const text = ndjson(lines.map((l, i) => (i === at ? corrupt(l) : l)));
        const before = await snapshot(db);
        const error = await importNdjson(db, text).catch((e: unknown) => e);
        assert.ok(error instanceof ImportError);
        assert.equal(error.issues[0]!.line, at + 1);
        assert.deepEqual(await snapshot(db), before);
      }),
      { numRuns: 15 },
    );
  });
});

test('generated ids match the id pattern that imports and URLs accept', async () => {
  const fresh = await createTestDb();
  try {
    await importNdjson(fresh, ndjson([{ type: 'account', name: 'A' }]));
    const row = await fresh.kysely.selectFrom('accounts').select('id').executeTakeFirstOrThrow();
    assert.match(row.id, ID_PATTERN);
  } finally {
    await fresh.drop();
  }
});
