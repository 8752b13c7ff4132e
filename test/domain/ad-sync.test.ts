// The spend sync engine against a real PostgreSQL, with a small in-test ad platform
// (ad-sync-fake.ts): backfill and incremental runs, restatements, idempotence, DST days, rounding,
// currency, failures, throttling, attribution, sealed tokens, the Hub API's figures, freshness and
// ETag, and two apps' loops on one database. Expected figures are computed here, independently of
// the engine's own time-zone code (Los Angeles' 2026 DST rule written out).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import {
  connectAdAccounts,
  disconnectAdAccount,
  listAdAccounts,
  listUnattributed,
  mapToWorkspace,
  requestSync,
  setDefaultWorkspace,
  setReportingCurrency,
  syncNow,
  type AdSyncDeps,
} from '../../src/domain/ad-sync/ad-account.service.ts';
import { createSpendSyncLoop } from '../../src/domain/ad-sync/sync-loop.ts';
import { DomainError } from '../../src/platform/errors.ts';
import type { PlatformSpendRow } from '../../src/integrations/ad-platform.ts';
import { readKey, startApp, TEST_SECRETS_KEY, type TestApp } from '../support/app.ts';
import { createTestDb } from '../support/db.ts';
import { utcDayOf } from '../support/spend-truth.ts';
import { account, hub, workspace } from '../support/world.ts';
import { FakePlatform, failure, hourlyRows, throttled } from './ad-sync-fake.ts';

const NOW = '2026-11-20T18:00:00Z'; // 10:00 in Los Angeles (PST)
const TOKEN = 'EAAGtestTOKENvalue0123456789abcdefSECRET';
const fake = new FakePlatform();
fake.tokens.add(TOKEN);
let t: TestApp;
let deps: AdSyncDeps;

before(async () => {
  t = await startApp({ now: NOW, adPlatformClients: { meta: fake } });
  deps = t.app.adSync;
  await account(t.db, 'acc_1');
});
after(async () => {
  await t?.close();
});

// Los Angeles in 2026: PDT (UTC−7) from 8 March 10:00 UTC to 1 November 09:00 UTC, PST (UTC−8) otherwise.
function utcDayLA(date: string, hour: number): string {
  const wall = Date.parse(`${date}T00:00:00Z`) + hour * 3_600_000;
  const pdt = wall + 7 * 3_600_000;
  const inPdt = pdt >= Date.parse('2026-03-08T10:00:00Z') && pdt < Date.parse('2026-11-01T09:00:00Z');
  return new Date(inPdt ? pdt : wall + 8 * 3_600_000).toISOString().slice(0, 10);
}

const TOKEN_RE = /\[ws:([A-Za-z0-9_-]+)\]/;
/** Expected spend per 'UTC day|workspace' ('' unattributed): micros per (day, ad set) rounded once, then summed. */
function expected(
  rows: PlatformSpendRow[],
  utcDay: (r: PlatformSpendRow) => string,
  keep: (day: string) => boolean,
  workspaceOf: (r: PlatformSpendRow) => string,
): Map<string, number> {
  const perAdSet = new Map<string, { micros: bigint; ws: string }>();
  for (const r of rows) {
    const day = utcDay(r);
    if (!keep(day)) continue;
    const key = `${day}|${r.campaignId}|${r.adSetId}`;
    const seen = perAdSet.get(key);
    perAdSet.set(key, { micros: (seen?.micros ?? 0n) + r.spendMicros, ws: workspaceOf(r) });
  }
  const out = new Map<string, number>();
  for (const [key, { micros, ws }] of perAdSet) {
    const cents = Number((micros + 5_000n) / 10_000n);
    if (cents === 0) continue;
    const k = `${key.split('|')[0]}|${ws}`;
    out.set(k, (out.get(k) ?? 0) + cents);
  }
  return out;
}
const tokenWorkspace = (r: PlatformSpendRow) => r.adSetName.match(TOKEN_RE)?.[1] ?? r.campaignName.match(TOKEN_RE)?.[1] ?? '';

async function stored(accountId: string): Promise<Map<string, number>> {
  const rows = await t.db.kysely
    .selectFrom('spend')
    .select(['date', 'workspace_id', 'spend_cents'])
    .where('ad_account_id', '=', accountId)
    .execute();
  return new Map(rows.map((r) => [`${r.date}|${r.workspace_id ?? ''}`, Number(r.spend_cents)]));
}
const reportVersion = async (hubId: string) =>
  (await t.db.kysely.selectFrom('hubs').select('report_version').where('id', '=', hubId).executeTakeFirstOrThrow()).report_version;
const platformRows = async (accountId: string) =>
  (
    await sql<{
      r: string;
    }>`SELECT string_agg(t::text, ';' ORDER BY date, campaign_id, ad_set_id) AS r FROM ad_spend_rows t WHERE ad_account_id = ${accountId}`.execute(
      t.db.kysely,
    )
  ).rows[0]!.r;

async function newHub(id: string, workspaces: string[] = ['a', 'b', 'c']): Promise<string[]> {
  await hub(t.db, id, 'acc_1');
  for (const w of workspaces) await workspace(t.db, id, `${id}_${w}`);
  return workspaces.map((w) => `${id}_${w}`);
}

async function connect(hubId: string, externalId: string, token = TOKEN): Promise<string> {
  const [view] = await connectAdAccounts(deps, hubId, {
    platform: 'meta',
    kind: 'system_user',
    accessToken: token,
    tokenExpiresAt: null,
    externalIds: [externalId],
    label: 'Agency token',
  });
  return view!.id;
}

const adSets = (hubId: string) => [
  { campaignId: 'c1', campaignName: 'Spring', adSetId: 's1', adSetName: `Downtown [ws:${hubId}_a]` },
  { campaignId: 'c2', campaignName: `Brand [ws:${hubId}_b]`, adSetId: 's2', adSetName: 'Generic' },
];
// Hours that have happened by NOW (10:00 in Los Angeles on 20 November).
const happened = (rows: PlatformSpendRow[], today = '2026-11-20', hourNow = 10) =>
  rows.filter((r) => r.date < today || (r.date === today && (r.hour ?? 0) < hourNow));

test('a backfill, then an incremental run with a lookback: figures by UTC day and workspace, exact', async () => {
  await newHub('h_bf');
  const rows = happened(hourlyRows('2026-08-01', '2026-11-20', adSets('h_bf')));
  fake.add({ externalId: 'act_100', rows });
  const id = await connect('h_bf', 'act_100');
  fake.reads.length = 0;
  const outcome = await syncNow(deps, 'h_bf', id);
  assert.equal(outcome.status, 'done');
  assert.equal((outcome as { completeThrough: string }).completeThrough, '2026-11-19', 'complete through yesterday (local), never today');
  // 90 days back from local today, in chunks of at most 30 UTC days, oldest first, each read with a local day either side.
  assert.deepEqual(
    fake.reads.map((r) => r.range),
    [
      { since: '2026-08-21', until: '2026-09-21' },
      { since: '2026-09-20', until: '2026-10-21' },
      { since: '2026-10-20', until: '2026-11-20' },
      { since: '2026-11-19', until: '2026-11-20' },
    ],
  );
  const inWindow = (day: string) => day >= '2026-08-22' && day <= '2026-11-20';
  assert.deepEqual(
    await stored(id),
    expected(rows, (r) => utcDayLA(r.date, r.hour!), inWindow, tokenWorkspace),
  );
  const [view] = await listAdAccounts(deps, 'h_bf');
  assert.equal(view!.status, 'connected');
  assert.equal(view!.completeThrough, '2026-11-19');
  assert.match(view!.statusText, /^Connected; last complete sync 20 Nov 2026 18:00 UTC, complete through 19 Nov 2026\.$/);

  // An hour later: two new hours of spend; the run re-reads from complete_through − 28 days only.
  t.clock.advance(3_600_000);
  const more = happened(hourlyRows('2026-11-20', '2026-11-20', adSets('h_bf'), 1), '2026-11-20', 11).filter((r) => r.hour === 10);
  rows.push(...more);
  fake.reads.length = 0;
  assert.equal((await syncNow(deps, 'h_bf', id)).status, 'done');
  assert.deepEqual(
    fake.reads.map((r) => r.range),
    [{ since: '2026-10-21', until: '2026-11-20' }],
    'UTC days 22 October to 20 November: one chunk',
  );
  assert.deepEqual(
    await stored(id),
    expected(rows, (r) => utcDayLA(r.date, r.hour!), inWindow, tokenWorkspace),
  );
  t.clock.set(NOW);
});

test('a restatement inside the lookback overwrites; a re-run of the same answer writes nothing (figures and report version unchanged)', async () => {
  const id = (await listAdAccounts(deps, 'h_bf'))[0]!.id;
  const rows = fake.accounts.get('act_100')!.rows;
  const before = await stored(id);
  for (const r of rows) if (r.date === '2026-11-05' || r.date === '2026-09-01') r.spendMicros *= 2n;
  assert.equal((await syncNow(deps, 'h_bf', id)).status, 'done');
  const after = await stored(id);
  const restated = expected(
    rows,
    (r) => utcDayLA(r.date, r.hour!),
    (d) => d >= '2026-08-22' && d <= '2026-11-20',
    tokenWorkspace,
  );
  for (const key of ['2026-11-05|h_bf_a', '2026-11-06|h_bf_b']) {
    assert.equal(after.get(key), restated.get(key), `${key} restated`);
    assert.notEqual(after.get(key), before.get(key));
  }
  // 1 September lies before complete_through − 28 days: not read again, so not restated.
  assert.equal(after.get('2026-09-01|h_bf_a'), before.get('2026-09-01|h_bf_a'));
  assert.notEqual(after.get('2026-09-01|h_bf_a'), restated.get('2026-09-01|h_bf_a'));

  const version = await reportVersion('h_bf');
  const rowsBefore = await platformRows(id);
  assert.equal((await syncNow(deps, 'h_bf', id)).status, 'done');
  assert.deepEqual(await stored(id), after);
  assert.equal(await platformRows(id), rowsBefore);
  assert.equal(await reportVersion('h_bf'), version, 'nothing changed: the report version stays');
});

test("east of UTC, the lookback re-reads the UTC day before its first local day: a restatement of that day's first hours lands", async () => {
  // Sydney (UTC+11 in November): local 23 October 00:00–10:59 falls on UTC 22 October.
  await newHub('h_syd');
  const rows = hourlyRows('2026-08-01', '2026-11-21', adSets('h_syd')).filter((r) => r.date < '2026-11-21' || r.hour! < 5);
  fake.add({ externalId: 'act_700', timeZone: 'Australia/Sydney', rows });
  const id = await connect('h_syd', 'act_700');
  assert.equal((await syncNow(deps, 'h_syd', id)).status, 'done');
  const [view] = await listAdAccounts(deps, 'h_syd');
  assert.equal(view!.completeThrough, '2026-11-20');
  const firstLocalDay = '2026-10-23'; // complete_through − 28 days
  for (const r of rows) if (r.date === firstLocalDay) r.spendMicros *= 3n;
  fake.reads.length = 0;
  assert.equal((await syncNow(deps, 'h_syd', id)).status, 'done');
  assert.equal(fake.reads[0]!.range.since, '2026-10-21', 'the chunk from UTC 22 October reads local days from the 21st');
  const near = rows.filter((r) => r.date >= '2026-10-21' && r.date <= '2026-10-23');
  const restated = expected(
    near,
    (r) => utcDayOf('Australia/Sydney', r.date, r.hour!),
    (d) => d === '2026-10-22',
    tokenWorkspace,
  );
  const after = await stored(id);
  for (const ws of ['h_syd_a', 'h_syd_b']) assert.equal(after.get(`2026-10-22|${ws}`), restated.get(`2026-10-22|${ws}`), ws);
});
test('Los Angeles DST: the 23-hour day (8 March) and the 25-hour day (1 November) land on the right UTC days', async () => {
  const [wsA] = await newHub('h_dst', ['a']);
  const at = (date: string, hour: number, dollars: number): PlatformSpendRow => ({
    date,
    hour,
    campaignId: 'c',
    campaignName: 'C',
    adSetId: 's',
    adSetName: 'S',
    spendMicros: BigInt(dollars) * 1_000_000n,
  });
  fake.add({
    externalId: 'act_310',
    rows: [
      at('2026-03-07', 15, 1),
      at('2026-03-07', 16, 2),
      at('2026-03-08', 1, 4),
      at('2026-03-08', 3, 8),
      at('2026-03-08', 16, 16),
      at('2026-03-08', 17, 32),
      at('2026-03-09', 0, 64),
    ],
  });
  // A day the platform gave without hours (hour null) counts on the UTC day equal to its local day.
  fake.add({
    externalId: 'act_311',
    rows: [
      at('2026-10-31', 16, 1),
      at('2026-10-31', 17, 2),
      at('2026-11-01', 0, 4),
      at('2026-11-01', 1, 8),
      at('2026-11-01', 2, 16),
      at('2026-11-01', 15, 32),
      at('2026-11-01', 16, 64),
      { ...at('2026-11-05', 0, 128), hour: null },
    ],
  });
  t.clock.set('2026-03-20T18:00:00Z');
  const spring = await connect('h_dst', 'act_310');
  await setDefaultWorkspace(deps, 'h_dst', spring, wsA!);
  assert.equal((await syncNow(deps, 'h_dst', spring)).status, 'done');
  assert.deepEqual(
    await stored(spring),
    new Map([
      ['2026-03-07|h_dst_a', 100],
      ['2026-03-08|h_dst_a', (2 + 4 + 8 + 16) * 100],
      ['2026-03-09|h_dst_a', (32 + 64) * 100],
    ]),
  );
  t.clock.set(NOW);
  const fall = await connect('h_dst', 'act_311');
  await setDefaultWorkspace(deps, 'h_dst', fall, wsA!);
  assert.equal((await syncNow(deps, 'h_dst', fall)).status, 'done');
  assert.deepEqual(
    await stored(fall),
    new Map([
      ['2026-10-31|h_dst_a', 100],
      ['2026-11-01|h_dst_a', (2 + 4 + 8 + 16 + 32) * 100],
      ['2026-11-02|h_dst_a', 64 * 100],
      ['2026-11-05|h_dst_a', 128 * 100],
    ]),
  );
});

test('rounding: micros summed per UTC day and ad set, rounded to cents once, half away from zero', async () => {
  const [ws] = await newHub('h_round', ['a']);
  const row = (adSetId: string, hour: number, micros: bigint): PlatformSpendRow => ({
    date: '2026-11-10',
    hour,
    campaignId: 'c',
    campaignName: 'C',
    adSetId,
    adSetName: adSetId,
    spendMicros: micros,
  });
  fake.add({
    externalId: 'act_200',
    timeZone: 'UTC',
    rows: [
      ...Array.from({ length: 24 }, (_, h) => row('hours', h, 4_000n)), // 96,000 micros: 10 cents (0 if each hour were rounded)
      row('half', 3, 5_000n), // 1 cent
      row('half2', 3, 5_000n), // 1 more cent: per ad set, then summed
      row('under', 3, 4_999n), // 0 cents
    ],
  });
  const id = await connect('h_round', 'act_200');
  await setDefaultWorkspace(deps, 'h_round', id, ws!);
  await syncNow(deps, 'h_round', id);
  assert.deepEqual(await stored(id), new Map([['2026-11-10|h_round_a', 12]]));
  const cents = await t.db.kysely
    .selectFrom('ad_spend_rows')
    .select(['ad_set_id', 'spend_micros', 'spend_cents'])
    .where('ad_account_id', '=', id)
    .orderBy('ad_set_id')
    .execute();
  assert.deepEqual(
    cents.map((c) => [c.ad_set_id, c.spend_micros, c.spend_cents]),
    [
      ['half', '5000', '1'],
      ['half2', '5000', '1'],
      ['hours', '96000', '10'],
      ['under', '4999', '0'],
    ],
  );
});

test("a platform's names are stored without NUL or bidi overrides; an id with NUL fails the run as a bad answer and stores nothing", async () => {
  await newHub('h_names');
  const hostile = [
    {
      campaignId: 'c9',
      campaignName: 'Spring\u0000 sale',
      adSetId: 's9',
      adSetName: 'Evil\u202Egnp.exe [ws:h_names_a]',
    },
  ];
  fake.add({ externalId: 'act_901', name: 'Brew\u200Bline\u0000', rows: happened(hourlyRows('2026-11-18', '2026-11-20', hostile)) });
  const id = await connect('h_names', 'act_901');
  assert.equal((await listAdAccounts(deps, 'h_names'))[0]!.name, 'Brewline');
  assert.equal((await syncNow(deps, 'h_names', id)).status, 'done');
  const names = await t.db.kysely
    .selectFrom('ad_spend_rows')
    .select(['campaign_name', 'ad_set_name'])
    .where('ad_account_id', '=', id)
    .distinct()
    .execute();
  assert.deepEqual(names, [{ campaign_name: 'Spring sale', ad_set_name: 'Evilgnp.exe [ws:h_names_a]' }]);
  assert.ok(
    (await stored(id)).size > 0 && [...(await stored(id)).keys()].every((k) => k.endsWith('|h_names_a')),
    'the token still attributes',
  );

  const before = await platformRows(id);
  fake.accounts.get('act_901')!.rows.push({ ...hostile[0]!, adSetId: 's\u00009', date: '2026-11-20', hour: 1, spendMicros: 5_000_000n });
  const outcome = await syncNow(deps, 'h_names', id);
  assert.equal(outcome.status === 'retrying' && outcome.failureKind, 'bad_answer', JSON.stringify(outcome));
  assert.equal(await platformRows(id), before, 'nothing stored');
});

test('connect: another currency is refused with a clear message; bad tokens and ids are refused; nothing is stored', async () => {
  await newHub('h_cur', ['a']);
  fake.add({ externalId: 'act_500', currency: 'EUR' });
  fake.add({ externalId: 'act_501' });
  const count = async () =>
    Number(
      (
        await sql<{
          n: string;
        }>`SELECT (SELECT count(*) FROM ad_connections WHERE hub_id = 'h_cur') + (SELECT count(*) FROM ad_accounts WHERE hub_id = 'h_cur') AS n`.execute(
          t.db.kysely,
        )
      ).rows[0]!.n,
    );
  const refused = async (input: Partial<Parameters<typeof connectAdAccounts>[2]>, message: RegExp) => {
    await assert.rejects(
      connectAdAccounts(deps, 'h_cur', {
        platform: 'meta',
        kind: 'system_user',
        accessToken: TOKEN,
        tokenExpiresAt: null,
        externalIds: ['act_501'],
        label: 'x',
        ...input,
      }),
      (error: unknown) => {
        assert.ok(error instanceof DomainError && error.kind === 'invalid', String(error));
        assert.match(error.message, message);
        assert.ok(!error.message.includes(TOKEN));
        return true;
      },
    );
  };
  await refused({ externalIds: ['act_501', 'act_500'] }, /act_500 reports spend in EUR, but this hub reports in USD/);
  await refused({ accessToken: 'EAAGexpiredTOKEN' }, /did not accept the token \(Error validating access token: Session has expired\.\)/);
  await refused({ accessToken: 'two words' }, /^token: must be one line/);
  await refused({ accessToken: '' }, /^token: is required/);
  await refused({ externalIds: ['123'] }, /"123" is not a Meta ad account id \(act_ followed by the account number/);
  await refused({ externalIds: ['act_999'] }, /Meta refused ad account act_999 \(Ad account act_999 is not accessible/);
  await refused({ externalIds: [] }, /choose at least one ad account/);
  assert.equal(await count(), 0);

  // The hub's reporting currency is the operator's choice; while an account reports in another, it stays.
  await setReportingCurrency(deps, 'h_cur', 'eur');
  const [eur] = await connectAdAccounts(deps, 'h_cur', {
    platform: 'meta',
    kind: 'system_user',
    accessToken: TOKEN,
    tokenExpiresAt: null,
    externalIds: ['act_500'],
    label: 'x',
  });
  assert.equal(eur!.currency, 'EUR');
  await assert.rejects(
    setReportingCurrency(deps, 'h_cur', 'USD'),
    /ad account act_500 reports in another currency than USD: disconnect it first/,
  );
  await assert.rejects(setReportingCurrency(deps, 'h_cur', 'dollars'), /currency: must be an ISO 4217 code/);
  await disconnectAdAccount(deps, 'h_cur', eur!.id);
  await setReportingCurrency(deps, 'h_cur', 'USD');
});

test('tokens are sealed: a database read shows no token bytes; no log line carries one', async () => {
  await newHub('h_seal', ['a']);
  fake.add({ externalId: 'act_600', rows: happened(hourlyRows('2026-11-01', '2026-11-20', adSets('h_seal'))) });
  const lines: string[] = [];
  const log = {
    info: (o: object, m: string) => lines.push(JSON.stringify([o, m])),
    warn: (o: object, m: string) =>
      lines.push(JSON.stringify([o, m], (_k, v) => (v instanceof Error ? { message: v.message, stack: v.stack } : v))),
  };
  const logged: AdSyncDeps = { ...deps, log };
  const [view] = await connectAdAccounts(logged, 'h_seal', {
    platform: 'meta',
    kind: 'oauth',
    accessToken: TOKEN,
    tokenExpiresAt: new Date('2026-11-25T00:00:00Z'),
    externalIds: ['act_600'],
    label: 'Ada',
  });
  await syncNow(logged, 'h_seal', view!.id);
  fake.script.push({ error: failure('platform_error', 'An unexpected error has occurred.', '2') });
  await syncNow(logged, 'h_seal', view!.id);
  assert.ok(lines.length >= 3, 'the engine logged its runs');
  for (const line of lines) assert.ok(!line.includes(TOKEN) && !line.includes(TOKEN.slice(4, 20)), line);
  const dump = (
    await sql<{
      t: string;
    }>`SELECT string_agg(c::text, '') || string_agg(encode(c.token_sealed, 'escape'), '') AS t FROM ad_connections c`.execute(t.db.kysely)
  ).rows[0]!.t;
  assert.ok(!dump.includes(TOKEN.slice(0, 12)), 'no token bytes in ad_connections');
  const raw = await sql<{
    found: boolean;
  }>`SELECT bool_or(position(convert_to(${TOKEN}, 'UTF8') in token_sealed) > 0) AS found FROM ad_connections`.execute(t.db.kysely);
  assert.equal(raw.rows[0]!.found, false);
  // Sealed with the connection id as additional data: moved to another row, it does not open.
  const sealed = await t.db.kysely
    .selectFrom('ad_connections')
    .select(['id', 'token_sealed'])
    .where('hub_id', '=', 'h_seal')
    .executeTakeFirstOrThrow();
  assert.equal(deps.sealer.open(sealed.token_sealed, sealed.id), TOKEN);
  assert.throws(() => deps.sealer.open(sealed.token_sealed, 'adc_other'), /does not open/);
  const [listed] = await listAdAccounts(deps, 'h_seal');
  assert.equal(listed!.tokenExpiresSoon, true);
  assert.match(listed!.statusText, /The token expires on 25 Nov 2026: connect again before then\./);
  assert.ok(!JSON.stringify(listed).includes(TOKEN));
});

test('failures: needs reconnect and missing permission fail at once; a transient failure retries with backoff and fails only past 6 hours', async () => {
  await newHub('h_fail', ['a']);
  fake.add({ externalId: 'act_700', rows: happened(hourlyRows('2026-11-15', '2026-11-20', adSets('h_fail'))) });
  const id = await connect('h_fail', 'act_700');
  const row = () => t.db.kysely.selectFrom('ad_accounts').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const view = async () => (await listAdAccounts(deps, 'h_fail'))[0]!;
  const freshness = async () => (await t.hubGet('/spend-by-workspace', await readKey(t.db, 'h_fail'))).body.freshness;

  fake.script.push({
    error: failure(
      'needs_reconnect',
      'Error validating access token: The session has been invalidated because the user changed their password.',
      '190/460',
    ),
  });
  assert.deepEqual(await syncNow(deps, 'h_fail', id), {
    status: 'failed',
    failureKind: 'needs_reconnect',
    message: 'Error validating access token: The session has been invalidated because the user changed their password.',
  });
  assert.equal((await row()).sync_state, 'failed');
  assert.equal((await row()).next_sync_at, null, 'not retried by itself');
  assert.equal((await view()).status, 'needs_reconnect');
  assert.match(
    (await view()).statusText,
    /^Needs reconnect: Error validating access token: The session has been invalidated because the user changed their password\. Connect the account again\.$/,
  );
  assert.equal(await freshness(), 'failed');

  fake.script.push({
    error: failure('missing_permission', '(#200) Ad account owner has NOT grant ads_management or ads_read permission', '200'),
  });
  assert.equal((await syncNow(deps, 'h_fail', id)).status, 'failed');
  assert.equal((await view()).status, 'missing_permission');

  assert.equal((await syncNow(deps, 'h_fail', id)).status, 'done', 'Sync now after the cause is fixed');
  assert.equal((await row()).failure_kind, null);
  assert.equal(await freshness(), 'fresh');

  const start = t.clock.now().getTime();
  const delays: number[] = [];
  for (const _ of [1, 2, 3, 4, 5]) {
    fake.script.push({ error: failure('unreachable', 'connect ECONNREFUSED') });
    const outcome = await syncNow(deps, 'h_fail', id);
    assert.equal(outcome.status, 'retrying');
    delays.push((outcome as { retryAt: Date }).retryAt.getTime() - t.clock.now().getTime());
    assert.equal((await row()).sync_state, 'idle', 'transient: not failed');
    assert.equal((await view()).status, 'retrying');
    t.clock.advance(60_000);
  }
  assert.deepEqual(delays, [60_000, 300_000, 900_000, 3_600_000, 3_600_000]);
  assert.match((await view()).statusText, /^Retrying at 20 Nov 2026 \d\d:\d\d UTC after a temporary failure: connect ECONNREFUSED\.$/);
  assert.equal(await freshness(), 'fresh', 'a short transient failure does not turn the hub failed');
  t.clock.set(new Date(start + 6 * 3_600_000 + 1_000));
  fake.script.push({ error: failure('platform_error', 'An unknown error occurred', '1') });
  assert.equal((await syncNow(deps, 'h_fail', id)).status, 'failed', 'failing for longer than 6 hours');
  assert.equal((await row()).sync_state, 'failed');
  assert.equal((await view()).status, 'failed');
  assert.equal((await syncNow(deps, 'h_fail', id)).status, 'done');
  t.clock.set(NOW);
});

test('a failing run changes no stored figure (a chunk fails mid-read); a changed currency changes nothing', async () => {
  const id = (await listAdAccounts(deps, 'h_fail'))[0]!.id;
  await syncNow(deps, 'h_fail', id);
  const figures = await stored(id);
  const platform = await platformRows(id);
  const version = await reportVersion('h_fail');
  for (const r of fake.accounts.get('act_700')!.rows) r.spendMicros += 1_000_000n;
  fake.script.push({ error: failure('bad_answer', 'the answer was cut short'), afterBatches: 1 });
  assert.equal((await syncNow(deps, 'h_fail', id)).status, 'retrying');
  assert.deepEqual(await stored(id), figures);
  assert.equal(await platformRows(id), platform);
  assert.equal(await reportVersion('h_fail'), version);

  // A row the client should not have let through (hour 24) is a bad answer too.
  const rows700 = fake.accounts.get('act_700')!.rows;
  rows700.push({ ...rows700.at(-1)!, hour: 24 });
  const bad = await syncNow(deps, 'h_fail', id);
  assert.deepEqual([bad.status, (bad as { failureKind: string }).failureKind], ['retrying', 'bad_answer']);
  assert.deepEqual(await stored(id), figures);
  rows700.pop();

  fake.accounts.get('act_700')!.currency = 'CAD';
  const outcome = await syncNow(deps, 'h_fail', id);
  assert.equal(outcome.status, 'failed');
  assert.match((outcome as { message: string }).message, /currency changed from USD to CAD; nothing was synced/);
  assert.deepEqual(await stored(id), figures);
  assert.equal(await reportVersion('h_fail'), version);
  fake.accounts.get('act_700')!.currency = 'USD';
});

test('throttling: a short wait is waited out and the run resumes; a long one reschedules, not a failure', async () => {
  await newHub('h_thr', ['a']);
  fake.add({ externalId: 'act_800', rows: happened(hourlyRows('2026-11-10', '2026-11-20', adSets('h_thr'))) });
  const id = await connect('h_thr', 'act_800');
  const sleeps: number[] = [];
  const waiting: AdSyncDeps = { ...deps, sleep: async (ms) => void sleeps.push(ms) };
  fake.script.push({ error: throttled(30_000), afterBatches: 2 });
  assert.equal((await syncNow(waiting, 'h_thr', id)).status, 'done');
  assert.deepEqual(sleeps, [30_000]);

  fake.script.push({ error: throttled(20 * 60_000) });
  const outcome = await syncNow(waiting, 'h_thr', id);
  assert.equal(outcome.status, 'rescheduled');
  const until = new Date(t.clock.now().getTime() + 20 * 60_000);
  assert.deepEqual((outcome as { until: Date }).until, until);
  const row = await t.db.kysely.selectFrom('ad_accounts').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  assert.deepEqual([row.sync_state, row.failure_kind, row.throttled_until, row.next_sync_at], ['idle', null, until, until]);
  const [view] = await listAdAccounts(deps, 'h_thr');
  assert.equal(view!.status, 'rescheduled');
  assert.deepEqual(view!.retryAt, until);
  assert.match(view!.statusText, /^Rescheduled until 20 Nov 2026 18:20 UTC: Meta asked us to slow down\.$/);
});

test('attribution: mapping (ad set, campaign) → [ws:] token (ad set, campaign) → default workspace → unattributed with a reason; a new mapping re-attributes past spend at once without re-fetching', async () => {
  const [a, b, c] = await newHub('h_attr');
  const sets = [
    { campaignId: 'c1', campaignName: `Brand [ws:${b}]`, adSetId: 's1', adSetName: `Downtown [ws:${a}]` },
    { campaignId: 'c1', campaignName: `Brand [ws:${b}]`, adSetId: 's2', adSetName: 'Generic' },
    { campaignId: 'c2', campaignName: 'Promo [ws:no_such_place]', adSetId: 's3', adSetName: 'Plain' },
    { campaignId: 'c3', campaignName: 'Untagged', adSetId: 's4', adSetName: 'Plain too' },
  ];
  const rows = happened(hourlyRows('2026-11-01', '2026-11-20', sets));
  for (const r of rows) if (r.adSetId === 's4') r.spendMicros *= 3n; // the largest unattributed line
  fake.add({ externalId: 'act_900', rows });
  const id = await connect('h_attr', 'act_900');
  await syncNow(deps, 'h_attr', id);
  const byWorkspace = async () => {
    const result = await sql<{
      ws: string;
      cents: string;
    }>`SELECT coalesce(workspace_id, '') AS ws, sum(spend_cents) AS cents FROM spend WHERE ad_account_id = ${id} GROUP BY 1`.execute(
      t.db.kysely,
    );
    return Object.fromEntries(result.rows.map((r) => [r.ws, Number(r.cents)]));
  };
  const total = (ids: string[]) => {
    const exp = expected(
      rows,
      (r) => utcDayLA(r.date, r.hour!),
      () => true,
      (r) => (ids.includes(r.adSetId) ? 'x' : ''),
    );
    return [...exp].filter(([k]) => k.endsWith('|x')).reduce((s, [, v]) => s + v, 0);
  };
  assert.deepEqual(await byWorkspace(), { [a!]: total(['s1']), [b!]: total(['s2']), '': total(['s3', 's4']) });
  const lines = await listUnattributed(deps, 'h_attr');
  assert.deepEqual(
    lines.map((l) => [l.adSetId, l.reason, l.spendCents]),
    [
      ['s4', 'no_match', total(['s4'])],
      ['s3', 'unknown_workspace_token', total(['s3'])],
    ],
  );
  assert.equal(lines[0]!.accountName, 'Account act_900');
  assert.equal(lines[0]!.campaignName, 'Untagged');

  const reads = fake.reads.length;
  const version = await reportVersion('h_attr');
  await mapToWorkspace(deps, 'h_attr', { adAccountId: id, level: 'campaign', externalId: 'c3', workspaceId: c! });
  await mapToWorkspace(deps, 'h_attr', { adAccountId: id, level: 'campaign', externalId: 'c1', workspaceId: c! });
  await mapToWorkspace(deps, 'h_attr', { adAccountId: id, level: 'ad_set', externalId: 's1', workspaceId: b! });
  // s1: its ad-set mapping beats the campaign's; s2: the campaign mapping beats its campaign's token.
  assert.deepEqual(await byWorkspace(), { [b!]: total(['s1']), [c!]: total(['s2', 's4']), '': total(['s3']) });
  assert.equal(fake.reads.length, reads, 'nothing fetched again');
  assert.ok(BigInt(await reportVersion('h_attr')) > BigInt(version), 'the report moved');
  await setDefaultWorkspace(deps, 'h_attr', id, a!);
  assert.deepEqual(await byWorkspace(), { [a!]: total(['s3']), [b!]: total(['s1']), [c!]: total(['s2', 's4']) });
  assert.deepEqual(await listUnattributed(deps, 'h_attr'), []);
  await assert.rejects(
    mapToWorkspace(deps, 'h_attr', { adAccountId: id, level: 'ad_set', externalId: 's1', workspaceId: 'h_bf_a' }),
    /workspace: no such workspace in this hub/,
  );
  await assert.rejects(
    mapToWorkspace(deps, 'h_attr', { adAccountId: id, level: 'adset' as 'ad_set', externalId: 's1', workspaceId: a! }),
    /level: must be campaign or ad_set/,
  );
});

test('the Hub API: synced figures, freshness never_synced → syncing → fresh, an ETag that moves only with what the report shows', async () => {
  const [a, b] = await newHub('h_api', ['a', 'b']);
  const key = await readKey(t.db, 'h_api');
  const get = async (headers: Record<string, string> = {}) => t.hubGet('/spend-by-workspace?period=last_30_days', key, headers);
  assert.equal((await get()).body.freshness, 'no_accounts');
  const rows = happened(hourlyRows('2026-09-01', '2026-11-20', adSets('h_api')));
  fake.add({ externalId: 'act_1000', rows });
  const id = await connect('h_api', 'act_1000');
  assert.equal((await get()).body.freshness, 'never_synced');

  let seenDuring: string | undefined;
  fake.beforeBatch = async (externalId) => {
    if (externalId === 'act_1000' && seenDuring === undefined) seenDuring = (await get()).body.freshness;
  };
  assert.equal((await syncNow(deps, 'h_api', id)).status, 'done');
  fake.beforeBatch = async () => {};
  assert.equal(seenDuring, 'syncing');
  const first = await get();
  assert.equal(first.body.freshness, 'fresh');
  assert.equal(first.body.asOf, new Date(NOW).toISOString());
  const { startDate, endDate } = first.body.current as { startDate: string; endDate: string };
  const exp = expected(
    rows,
    (r) => utcDayLA(r.date, r.hour!),
    (d) => d >= startDate && d <= endDate,
    tokenWorkspace,
  );
  const sumOf = (ws: string) => [...exp].filter(([k]) => k.endsWith(`|${ws}`)).reduce((s, [, v]) => s + v, 0);
  const shown = Object.fromEntries((first.body.workspaces as { id: string; spendCents: number }[]).map((w) => [w.id, w.spendCents]));
  assert.deepEqual(shown, { [a!]: sumOf(a!), [b!]: sumOf(b!) });
  assert.equal(first.body.totals.spendCents, sumOf(a!) + sumOf(b!));
  const etag = first.headers.etag as string;
  assert.equal((await get({ 'if-none-match': etag })).status, 304);

  // A failing run: the account was syncing, then idle again with nothing written: the same ETag.
  fake.script.push({ error: failure('platform_error', 'Please retry your request later.', '2') });
  const version = await reportVersion('h_api');
  assert.equal((await syncNow(deps, 'h_api', id)).status, 'retrying');
  assert.equal(await reportVersion('h_api'), version);
  assert.equal((await get({ 'if-none-match': etag })).status, 304, 'a state-only change does not move the ETag');

  // A restatement: the figures change, and so does the ETag.
  for (const r of rows) if (r.date === '2026-11-18') r.spendMicros += 7_000_000n;
  t.clock.advance(60_000);
  assert.equal((await syncNow(deps, 'h_api', id)).status, 'done');
  const moved = await get({ 'if-none-match': etag });
  assert.equal(moved.status, 200);
  assert.ok(moved.body.totals.spendCents > first.body.totals.spendCents);
  assert.ok(BigInt(await reportVersion('h_api')) > BigInt(version));
  t.clock.set(NOW);
});

test('disconnect: the token is erased, syncing stops, past figures stay, and the account no longer counts toward freshness', async () => {
  const key = await readKey(t.db, 'h_api');
  const id = (await listAdAccounts(deps, 'h_api'))[0]!.id;
  const before = (await t.hubGet('/spend-by-workspace?period=last_30_days', key)).body;
  await disconnectAdAccount(deps, 'h_api', id);
  assert.equal(
    (await t.db.kysely.selectFrom('ad_connections').select('id').where('hub_id', '=', 'h_api').execute()).length,
    0,
    'the credential is gone',
  );
  const after = (await t.hubGet('/spend-by-workspace?period=last_30_days', key)).body;
  assert.deepEqual(after.totals, before.totals, 'past figures stay');
  assert.equal(after.freshness, 'no_accounts');
  const [view] = await listAdAccounts(deps, 'h_api');
  assert.equal(view!.status, 'disconnected');
  assert.match(view!.statusText, /^Disconnected on 20 Nov 2026: no longer synced; its past spend stays in the figures\.$/);
  await assert.rejects(syncNow(deps, 'h_api', id), (e: unknown) => e instanceof DomainError && e.kind === 'rejected');
  await requestSync(deps, 'h_api');
  assert.equal(
    (await t.db.kysely.selectFrom('ad_accounts').select('sync_requested_at').where('id', '=', id).executeTakeFirstOrThrow())
      .sync_requested_at,
    null,
  );
  // Connected again: the same row, its figures, a new connection.
  assert.equal(await connect('h_api', 'act_1000'), id);
  assert.equal((await listAdAccounts(deps, 'h_api'))[0]!.status, 'connected');
});

test('two apps on one database: their loops never sync one account at once, and each requested account syncs once', async () => {
  const db = await createTestDb();
  const shared = new FakePlatform();
  shared.tokens.add(TOKEN);
  shared.batchSize = 20;
  shared.beforeBatch = () => new Promise((resolve) => setTimeout(resolve, 2));
  const apps = [
    await startApp({ db, now: NOW, secretsKey: TEST_SECRETS_KEY, adPlatformClients: { meta: shared } }),
    await startApp({ db, now: NOW, secretsKey: TEST_SECRETS_KEY, adPlatformClients: { meta: shared } }),
  ];
  try {
    await account(db, 'acc_1');
    await hub(db, 'h_two', 'acc_1');
    await workspace(db, 'h_two', 'h_two_a');
    await workspace(db, 'h_two', 'h_two_b');
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      shared.add({ externalId: `act_2${i}`, rows: happened(hourlyRows('2026-10-01', '2026-11-20', adSets('h_two'), i)) });
      const [view] = await connectAdAccounts(apps[i % 2]!.app.adSync, 'h_two', {
        platform: 'meta',
        kind: 'system_user',
        accessToken: TOKEN,
        tokenExpiresAt: null,
        externalIds: [`act_2${i}`],
        label: 'x',
      });
      ids.push(view!.id);
    }
    const loops = apps.flatMap((a) => [0, 1].map(() => createSpendSyncLoop({ deps: a.app.adSync, intervalMs: 10, batchSize: 1 })));
    const outcomes = (await Promise.all(loops.flatMap((l) => [l.runOnce(), l.runOnce(), l.runOnce()]))).flat();
    assert.equal(shared.maxConcurrent, 1, 'one sync per account at a time');
    assert.equal(outcomes.filter((o) => o.status === 'done').length, 4, 'each due account synced once');
    // Sync now from one app while the other app's loop runs.
    await requestSync(apps[0]!.app.adSync, 'h_two');
    const [now] = await Promise.all([syncNow(apps[1]!.app.adSync, 'h_two', ids[0]!), ...loops.map((l) => l.runOnce())]);
    assert.equal(now.status, 'done');
    assert.equal(shared.maxConcurrent, 1);
    const synced = await db.kysely
      .selectFrom('ad_accounts')
      .select(['last_synced_at', 'lease_until', 'sync_state'])
      .where('hub_id', '=', 'h_two')
      .execute();
    assert.ok(synced.every((r) => r.last_synced_at !== null && r.lease_until === null && r.sync_state === 'idle'));
  } finally {
    for (const a of apps) await a.close();
    await db.drop();
  }
});

test('the app runs the loop: a connected account syncs by itself, and stopping the app releases nothing half-done', async () => {
  const db = await createTestDb();
  const platform = new FakePlatform();
  platform.tokens.add(TOKEN);
  const quiet = await startApp({ db, now: NOW, secretsKey: TEST_SECRETS_KEY, adPlatformClients: { meta: platform } });
  try {
    await account(db, 'acc_1');
    await hub(db, 'h_loop', 'acc_1');
    await workspace(db, 'h_loop', 'h_loop_a');
    platform.add({ externalId: 'act_31', rows: happened(hourlyRows('2026-11-01', '2026-11-20', adSets('h_loop'))) });
    const [view] = await connectAdAccounts(quiet.app.adSync, 'h_loop', {
      platform: 'meta',
      kind: 'system_user',
      accessToken: TOKEN,
      tokenExpiresAt: null,
      externalIds: ['act_31'],
      label: 'x',
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal((await listAdAccounts(quiet.app.adSync, 'h_loop'))[0]!.status, 'never_synced', 'an app without the loop syncs nothing');
    const running = await startApp({ db, now: NOW, secretsKey: TEST_SECRETS_KEY, adPlatformClients: { meta: platform }, spendSync: true });
    try {
      const deadline = Date.now() + 20_000;
      while ((await listAdAccounts(running.app.adSync, 'h_loop'))[0]!.status !== 'connected') {
        assert.ok(Date.now() < deadline, 'the loop synced the account');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      await running.close();
    }
    const row = await db.kysely
      .selectFrom('ad_accounts')
      .select(['lease_until', 'sync_state', 'complete_through'])
      .where('id', '=', view!.id)
      .executeTakeFirstOrThrow();
    assert.deepEqual(row, { lease_until: null, sync_state: 'idle', complete_through: '2026-11-19' });
  } finally {
    await quiet.close();
    await db.drop();
  }
});

test('stopping an instance mid-sync releases the account (not a failure); the next run completes it', async () => {
  const db = await createTestDb();
  const platform = new FakePlatform();
  platform.tokens.add(TOKEN);
  platform.batchSize = 10;
  platform.beforeBatch = () => new Promise((resolve) => setTimeout(resolve, 5));
  const app = await startApp({ db, now: NOW, secretsKey: TEST_SECRETS_KEY, adPlatformClients: { meta: platform } });
  try {
    await account(db, 'acc_1');
    await hub(db, 'h_stop', 'acc_1');
    await workspace(db, 'h_stop', 'h_stop_a');
    platform.add({ externalId: 'act_32', rows: happened(hourlyRows('2026-08-01', '2026-11-20', adSets('h_stop'))) });
    const [view] = await connectAdAccounts(app.app.adSync, 'h_stop', {
      platform: 'meta',
      kind: 'system_user',
      accessToken: TOKEN,
      tokenExpiresAt: null,
      externalIds: ['act_32'],
      label: 'x',
    });
    const loop = createSpendSyncLoop({ deps: app.app.adSync, intervalMs: 10, batchSize: 1 });
    loop.start();
    const row = () =>
      db.kysely
        .selectFrom('ad_accounts')
        .select(['lease_until', 'sync_state', 'failure_kind', 'complete_through', 'last_synced_at'])
        .where('id', '=', view!.id)
        .executeTakeFirstOrThrow();
    const deadline = Date.now() + 20_000;
    while ((await row()).complete_through === null) {
      assert.ok(Date.now() < deadline, 'a first chunk committed');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await loop.stop();
    const stopped = await row();
    assert.deepEqual([stopped.lease_until, stopped.sync_state, stopped.failure_kind, stopped.last_synced_at], [null, 'idle', null, null]);
    const { next_sync_at } = await db.kysely
      .selectFrom('ad_accounts')
      .select('next_sync_at')
      .where('id', '=', view!.id)
      .executeTakeFirstOrThrow();
    assert.ok(next_sync_at! <= app.clock.now(), 'released due at once: the next instance takes it up without waiting for the schedule');
    assert.ok(stopped.complete_through! < '2026-11-19', 'stopped mid-run, its committed chunks kept');
    assert.equal((await syncNow(app.app.adSync, 'h_stop', view!.id)).status, 'done');
    assert.equal((await row()).complete_through, '2026-11-19');
  } finally {
    await app.close();
    await db.drop();
  }
});

test('a long read keeps its claim: the lease moves forward batch by batch, so no other sync can take the account over mid-read', async () => {
  await newHub('h_long');
  fake.add({ externalId: 'act_140', rows: happened(hourlyRows('2026-11-01', '2026-11-20', adSets('h_long'))) });
  const id = await connect('h_long', 'act_140');
  const leases: number[] = [];
  const rivals: string[] = [];
  fake.beforeBatch = async (externalId) => {
    if (externalId !== 'act_140') return;
    // Each batch takes 4 of the lease's 10 minutes: without renewal the claim runs out by the third.
    t.clock.advance(4 * 60_000);
    const row = await t.db.kysely.selectFrom('ad_accounts').select('lease_until').where('id', '=', id).executeTakeFirstOrThrow();
    leases.push(row.lease_until!.getTime() - t.clock.now().getTime());
    // Another instance asking for the account right now gets nothing (a rival sync would be 'skipped' or run twice).
    const { rows } = await sql<{
      id: string;
    }>`SELECT id FROM ad_accounts WHERE id = ${id} AND (lease_until IS NULL OR lease_until <= ${t.clock.now()})`.execute(t.db.kysely);
    rivals.push(...rows.map((r) => r.id));
  };
  try {
    assert.equal((await syncNow(deps, 'h_long', id)).status, 'done');
  } finally {
    fake.beforeBatch = async () => {};
    t.clock.set(NOW);
  }
  assert.ok(leases.length >= 5, `read in many batches (${leases.length})`);
  assert.ok(
    leases.every((ms) => ms > 0),
    `the lease never ran out mid-read: ${leases.map((ms) => Math.round(ms / 60_000)).join(', ')} minutes left`,
  );
  assert.deepEqual(rivals, [], 'no moment at which another instance could claim the account');
});

test('reconnecting while a sync still reads with the old token: the old run writes nothing and cannot overwrite the reconnected state', async () => {
  await newHub('h_recon');
  fake.add({ externalId: 'act_141', rows: happened(hourlyRows('2026-11-10', '2026-11-20', adSets('h_recon'))) });
  const id = await connect('h_recon', 'act_141');
  let reconnected = false;
  let throughAtReconnect: string | null | undefined;
  fake.beforeBatch = async (externalId) => {
    if (externalId !== 'act_141' || reconnected) return;
    reconnected = true;
    await connect('h_recon', 'act_141');
    throughAtReconnect = (
      await t.db.kysely.selectFrom('ad_accounts').select('complete_through').where('id', '=', id).executeTakeFirstOrThrow()
    ).complete_through;
  };
  try {
    const outcome = await syncNow(deps, 'h_recon', id);
    assert.equal(outcome.status, 'skipped', 'the old run lost its claim to the reconnect');
  } finally {
    fake.beforeBatch = async () => {};
  }
  const row = await t.db.kysely
    .selectFrom('ad_accounts')
    .select(['lease_owner', 'sync_state', 'complete_through', 'next_sync_at'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
  assert.ok(reconnected);
  assert.deepEqual(
    [row.lease_owner, row.sync_state, row.complete_through],
    [null, 'idle', throughAtReconnect],
    'nothing written by the old run after the reconnect; its state stands',
  );
  assert.ok(row.next_sync_at! <= t.clock.now(), 'due at once, as the reconnect left it');
  assert.equal((await syncNow(deps, 'h_recon', id)).status, 'done');
});
