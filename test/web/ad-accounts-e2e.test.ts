// End to end (issue 21): a hub admin connects Meta by OAuth in Chromium through the Meta sandbox's
// dialog, chooses two accounts (Los Angeles and Berlin), they sync, and GET /v1/hub/spend-by-workspace
// over HTTP equals the sandbox's own hourly figures, computed independently of the engine
// (support/spend-truth.ts) and summed over the documented UTC date ranges. The clock is
// fixed (app and sandbox share it) on a day whose last_30_days and its prior range hold both the
// Berlin (2026-10-25) and the Los Angeles (2026-11-01) 25-hour days.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { syncNow } from '../../src/domain/ad-sync/ad-account.service.ts';
import { createKey } from '../../src/domain/api-keys/api-key.service.ts';
import { createUser } from '../../src/domain/tenancy/tenancy.service.ts';
import { startMetaSandbox, type MetaSandbox } from '../../src/integrations/meta/sandbox.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { CHROMIUM, CHROMIUM_ARGS, chromiumMissing } from '../support/chromium.ts';
import { documentedRanges, expectedLines, roundCents, sumLines, utcDayOf, type Range } from '../support/spend-truth.ts';
import { account, hub, workspace } from '../support/world.ts';

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';
if (chromiumMissing) console.log(`# SKIP ad accounts end-to-end test: ${chromiumMissing}`);

/** 15:37 UTC: Los Angeles is at 07:37 and Berlin at 16:37 the same day; today's current hour is partial. */
const NOW = '2026-11-25T15:37:00.000Z';
const HUB_ID = 'hub_e2e';
const ADMIN = { email: 'ads-admin@e2e.test', password: 'e2e admin password 1' };
const WORKSPACES = ['ws_north', 'ws_south', 'ws_quiet'];

const ACCOUNTS = [
  {
    id: 'act_5101',
    name: 'Brewline Pacific',
    currency: 'USD',
    timezone_name: 'America/Los_Angeles',
    adSets: [
      // The ad set's own token.
      { id: '5101001', name: 'Commuters [ws:ws_north]', campaignId: '510191', campaignName: 'Fall launch' },
      // No token anywhere: unattributed.
      { id: '5101002', name: 'Lookalike 2%', campaignId: '510191', campaignName: 'Fall launch' },
      // The campaign's token.
      { id: '5101003', name: 'Students', campaignId: '510192', campaignName: 'Back to school [ws:ws_south]' },
    ],
  },
  {
    id: 'act_5102',
    name: 'Brewline Berlin',
    currency: 'USD',
    timezone_name: 'Europe/Berlin',
    adSets: [
      // The ad set's token wins over its campaign's.
      { id: '5102001', name: 'Pendler [ws:ws_south]', campaignId: '510291', campaignName: 'Herbst [ws:ws_north]' },
      { id: '5102002', name: 'Familien', campaignId: '510291', campaignName: 'Herbst [ws:ws_north]' },
      // A token naming no workspace of the hub: unattributed.
      { id: '5102003', name: 'Closed store [ws:ws_gone]', campaignId: '510292', campaignName: 'Winter' },
    ],
  },
];

/** Cents per (UTC day, workspace key), from the sandbox's hourly ground truth (support/spend-truth.ts). */
const expectedCents = (sandbox: MetaSandbox) =>
  expectedLines(
    ACCOUNTS.map((a) => ({ id: a.id, zone: a.timezone_name, adSets: a.adSets, hourly: sandbox.hourlySpend(a.id) })),
    WORKSPACES,
  );

describe('Connect Meta by OAuth in Chromium, sync, and the Hub API spend equals the sandbox by UTC day', { skip: chromiumMissing }, () => {
  let sandbox: MetaSandbox;
  let t: TestApp;
  let browser: Browser;
  let page: Page;

  before(async () => {
    const { chromium } = await import('playwright-core');
    sandbox = await startMetaSandbox({ now: () => t.clock.now(), seed: { accounts: ACCOUNTS } });
    t = await startApp({
      listen: true,
      now: NOW,
      seed: async (db) => {
        await account(db, 'acc_e2e');
        await hub(db, HUB_ID, 'acc_e2e');
        for (const ws of WORKSPACES) await workspace(db, HUB_ID, ws);
        await createUser(db, { ...ADMIN, firstname: 'Ada', lastname: 'Ads', hubId: HUB_ID, role: 'hub_admin' });
      },
      env: { META_GRAPH_URL: sandbox.url, META_DIALOG_URL: sandbox.url, META_APP_ID: sandbox.appId, META_APP_SECRET: sandbox.appSecret },
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    await sandbox?.close();
  });

  test('the offset code agrees with hand-worked DST hours', () => {
    assert.equal(utcDayOf('America/Los_Angeles', '2026-10-31', 16), '2026-10-31'); // 23:00Z (PDT)
    assert.equal(utcDayOf('America/Los_Angeles', '2026-10-31', 17), '2026-11-01'); // 00:00Z (PDT)
    assert.equal(utcDayOf('America/Los_Angeles', '2026-11-01', 15), '2026-11-01'); // 23:00Z (PST)
    assert.equal(utcDayOf('America/Los_Angeles', '2026-11-01', 16), '2026-11-02'); // 00:00Z (PST)
    assert.equal(utcDayOf('Europe/Berlin', '2026-10-25', 1), '2026-10-24'); // 23:00Z (CEST)
    assert.equal(utcDayOf('Europe/Berlin', '2026-10-25', 2), '2026-10-25'); // 00:00Z (CEST, the first 02:00)
    assert.equal(utcDayOf('Europe/Berlin', '2026-10-26', 0), '2026-10-25'); // 23:00Z (CET)
    assert.equal(utcDayOf('Europe/Berlin', '2026-10-26', 1), '2026-10-26'); // 00:00Z (CET)
    assert.equal(roundCents(15_000n), 2);
    assert.equal(roundCents(14_999n), 1);
    assert.equal(roundCents(-15_000n), -2);
  });

  test('sign in, Connect Meta through the sandbox dialog, choose both accounts, sync, and the Hub API figures', async () => {
    await page.goto(`${t.baseUrl}/app/sign-in`);
    await page.fill('#email', ADMIN.email);
    await page.fill('#password', ADMIN.password);
    await page.click('button[type=submit]');
    await page.waitForURL(new RegExp(`/app/hubs/${HUB_ID}$`));
    await page.goto(`${t.baseUrl}/app/hubs/${HUB_ID}/settings/ad-accounts`);

    await page.click('[data-connect-meta]');
    await page.waitForURL(new RegExp(`^${sandbox.url}/v26.0/dialog/oauth\\?`));
    await page.click('text=Continue');
    await page.waitForURL(/\/settings\/ad-accounts\/choose\?pending=/);
    assert.deepEqual(
      (
        await page.locator('input[name=account]').evaluateAll((inputs) => inputs.map((i) => (i as unknown as { value: string }).value))
      ).sort(),
      ['act_5101', 'act_5102'],
    );
    await page.check('input[value=act_5101]');
    await page.check('input[value=act_5102]');
    await page.click('text=Add accounts');
    await page.waitForURL(/\/settings\/ad-accounts\?notice=sync$/);
    assert.ok(
      sandbox.requests.some((r) => r.path.endsWith('/oauth/access_token')),
      'the code was exchanged at the sandbox',
    );

    const connected = await t.db.kysely
      .selectFrom('ad_accounts')
      .select(['id', 'external_id'])
      .where('hub_id', '=', HUB_ID)
      .orderBy('external_id')
      .execute();
    assert.deepEqual(
      connected.map((a) => a.external_id),
      ['act_5101', 'act_5102'],
    );
    for (const a of connected) {
      const outcome = await syncNow(t.app.adSync, HUB_ID, a.id);
      assert.equal(outcome.status, 'done', `${a.external_id}: ${JSON.stringify(outcome)}`);
    }
    const syncedAt = t.clock.now().toISOString();
    assert.equal(syncedAt, NOW);
    const lines = expectedCents(sandbox);
    // Both fall-back days and today's partial hour are in what was synced.
    assert.ok(
      lines.some((l) => l.day === '2026-10-25') &&
        lines.some((l) => l.day === '2026-11-01') &&
        lines.some((l) => l.day === NOW.slice(0, 10)),
    );

    await page.reload();
    for (const row of await page.locator('[data-ad-account]').allTextContents()) assert.match(row, /Connected/);

    // Five minutes on, nothing synced since: asOf stays the sync's time, and the figures are fresh.
    t.clock.advance(5 * 60_000);
    const { key } = await createKey(t.db, { hubId: HUB_ID, name: 'e2e spend check', now: t.clock.now() });

    for (const period of ['today', 'last_7_days', 'last_30_days'] as const) {
      const response = await fetch(`${t.baseUrl}/v1/hub/spend-by-workspace?period=${period}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      assert.equal(response.status, 200, `${period}: ${await response.clone().text()}`);
      const body = (await response.json()) as {
        current: { startDate: string; endDate: string };
        prior: { startDate: string; endDate: string };
        asOf: string;
        freshness: string;
        totals: Record<string, number>;
        workspaces: { id: string; spendCents: number; priorSpendCents: number }[];
      };
      const ranges = documentedRanges(period, NOW);
      assert.deepEqual({ current: body.current, prior: body.prior }, ranges, `${period}: the documented ranges`);
      assert.equal(body.freshness, 'fresh');
      assert.equal(body.asOf, syncedAt);

      const sum = (workspace: string | null, range: Range) => sumLines(lines, workspace, range);
      const expected = {
        totals: {
          spendCents: sum(null, ranges.current),
          priorSpendCents: sum(null, ranges.prior),
          unattributedSpendCents: sum('', ranges.current),
          priorUnattributedSpendCents: sum('', ranges.prior),
        },
        workspaces: WORKSPACES.map((id) => ({ id, spendCents: sum(id, ranges.current), priorSpendCents: sum(id, ranges.prior) })).sort(
          (a, b) => b.spendCents - a.spendCents || (a.id < b.id ? -1 : 1),
        ),
      };
      assert.deepEqual(
        {
          totals: body.totals,
          workspaces: body.workspaces.map((w) => ({ id: w.id, spendCents: w.spendCents, priorSpendCents: w.priorSpendCents })),
        },
        expected,
        period,
      );
      // Not a vacuous equality: every rule put money somewhere, and the quiet workspace has none.
      assert.ok(expected.totals.unattributedSpendCents > 0 && expected.totals.priorUnattributedSpendCents > 0, period);
      for (const w of expected.workspaces)
        assert.equal(w.spendCents > 0 && w.priorSpendCents > 0, w.id !== 'ws_quiet', `${period} ${w.id}`);
    }
  });
});
