import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, test } from 'node:test';
import { runCli } from '../../src/cli/cli.ts';
import { createKey } from '../../src/domain/api-keys/api-key.repository.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { snapshot } from '../support/snapshot.ts';
import * as fx from '../support/world.ts';

// What re-running `hubops import FILE` does: the same file again changes nothing — not the rows,
// not the running totals the spend report reads, not the report — and `--add` adds the file's
// spend once more, which the report then shows.

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

const spendLine = (workspaceId: string | null, date: string, spendCents: number) => ({ type: 'spend', adAccountId: 'aa_rerun', workspaceId, date, spendCents });
// Two lines for ws_a on 11-20 (they add up within the file), unattributed spend, and days in two
// 64-day blocks of the running totals (one starts on 2026-10-10), in the report's current and prior ranges.
const FILE = [
  spendLine('ws_a', '2026-11-20', 1_200),
  spendLine('ws_a', '2026-11-20', 34),
  spendLine('ws_b', '2026-11-21', 400),
  spendLine(null, '2026-11-22', 90),
  spendLine('ws_b', '2026-10-09', 11),
  { type: 'organicMetrics', workspaceId: 'ws_a', date: '2026-11-20', platform: 'instagram', posts: 1, impressions: 900, reach: 700, likes: 40, comments: 3, shares: 2, saves: 5 },
];

async function importFile(...flags: string[]): Promise<string> {
  const file = path.join(dir, 'spend.ndjson');
  await writeFile(file, FILE.map((line) => JSON.stringify(line)).join('\n'));
  let stdout = '';
  let stderr = '';
  const io = { stdout: (text: string) => (stdout += text), stderr: (text: string) => (stderr += text), env: { PATH: process.env.PATH, DATABASE_URL: t.db.url }, stdin: Readable.from([]) };
  assert.equal(await runCli(['import', file, ...flags], io), 0, stderr);
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
  const stored = await t.db.kysely.selectFrom('spend_prefix_sums').select(['workspace_key', 'block', 'sums']).where('hub_id', '=', HUB).execute();
  const nonZero = (sums: (string | bigint)[]) => sums.some((s) => BigInt(s) !== 0n);
  return {
    stored: Object.fromEntries(stored.filter((r) => nonZero(r.sums)).map((r) => [`${r.workspace_key}|${r.block}`, r.sums.map(String)])),
    expected: Object.fromEntries(Object.entries(expected).filter(([, sums]) => nonZero(sums)).map(([k, sums]) => [k, sums.map(String)])),
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
  assert.deepEqual(added.workspaces.map((w: { id: string; spendCents: number }) => [w.id, w.spendCents]), [['ws_a', 2468], ['ws_b', 700 + 800]]);
  const totals = await runningTotals();
  assert.deepEqual(totals.stored, totals.expected);
  // Organic metrics replace in both modes: --add concerns spend only.
  const metrics = await t.db.kysely.selectFrom('organic_metrics').select(['impressions']).where('hub_id', '=', HUB).execute();
  assert.deepEqual(metrics, [{ impressions: '900' }]);
});
