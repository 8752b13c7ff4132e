// End to end (issue 22): one hub reporting in EUR connects, in Chromium, a Meta account (Berlin)
// through the Meta sandbox's dialog, a Google Ads account (Kolkata, +05:30) reached only through a
// manager account through the Google sandbox's consent screen, and a ChatGPT Ads account (Los
// Angeles) by its pasted API key; a Google account in USD is refused at connect (the currency
// rule), as is a wrong key. They sync, and GET /v1/hub/spend-by-workspace over HTTP equals, for
// every period, the three sandboxes' own hourly figures computed independently of the engine
// (support/spend-truth.ts). Then the Google account loses its access: the hub is `failed` while
// Meta keeps syncing, and `asOf` is the oldest complete sync. The clock is fixed (app and sandboxes share it).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { setReportingCurrency, syncNow } from '../../src/domain/ad-sync/ad-account.service.ts';
import { createKey } from '../../src/domain/api-keys/api-key.service.ts';
import { createUser } from '../../src/domain/tenancy/tenancy.service.ts';
import { startGoogleAdsSandbox, type GoogleAdsSandbox } from '../../src/integrations/google-ads/sandbox.ts';
import { startMetaSandbox, type MetaSandbox } from '../../src/integrations/meta/sandbox.ts';
import { startOpenAIAdsSandbox, type OpenAIAdsSandbox } from '../../src/integrations/openai-ads/sandbox.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { CHROMIUM, CHROMIUM_ARGS, chromiumMissing } from '../support/chromium.ts';
import { documentedRanges, expectedLines, sumLines, type Range, type TruthAccount } from '../support/spend-truth.ts';
import { account, hub, workspace } from '../support/world.ts';

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';
if (chromiumMissing) console.log(`# SKIP three-platform ad accounts test: ${chromiumMissing}`);

/** 21:10 UTC: already the next day in Kolkata (02:40), 22:10 in Berlin, 13:10 in Los Angeles. */
const NOW = '2026-11-24T21:10:00.000Z';
const HUB_ID = 'hub_three';
const ADMIN = { email: 'three-admin@e2e.test', password: 'three admin password 1' };
const WORKSPACES = ['ws_berlin', 'ws_pune', 'ws_venice', 'ws_quiet'];

const META = {
  id: 'act_6101',
  name: 'Brewline Berlin',
  currency: 'EUR',
  timezone_name: 'Europe/Berlin',
  adSets: [
    { id: '6101001', name: 'Pendler [ws:ws_berlin]', campaignId: '610191', campaignName: 'Herbst' },
    { id: '6101002', name: 'Lookalike', campaignId: '610191', campaignName: 'Herbst' },
  ],
};
const GOOGLE_MANAGER = '8000000001';
const GOOGLE = {
  id: '8000000101',
  name: 'Brewline India',
  currency: 'EUR',
  timeZone: 'Asia/Kolkata',
  direct: false,
  managerId: GOOGLE_MANAGER,
  adGroups: [
    { id: '80001011', name: 'Near me [ws:ws_pune]', campaignId: '8000191', campaignName: 'Search' },
    // The campaign's token.
    { id: '80001012', name: 'Brand', campaignId: '8000192', campaignName: 'Brand [ws:ws_berlin]' },
    { id: '80001013', name: 'Generic', campaignId: '8000193', campaignName: 'Generic' },
  ],
};
const GOOGLE_USD = { id: '8000000201', name: 'Brewline US', currency: 'USD', timeZone: 'America/New_York' };
const CHATGPT = {
  id: 'adacct_three_e2e',
  name: 'Brewline Ask-AI',
  currency_code: 'EUR',
  timezone: 'America/Los_Angeles',
  adGroups: [
    { id: 'adgrp_venice', name: 'Finder [ws:ws_venice]', campaignId: 'cmp_ask', campaignName: 'Ask-AI' },
    { id: 'adgrp_other', name: 'Questions', campaignId: 'cmp_ask', campaignName: 'Ask-AI' },
  ],
};

type SpendBody = {
  current: Range;
  prior: Range;
  asOf: string;
  freshness: string;
  totals: Record<string, number>;
  workspaces: { id: string; spendCents: number; priorSpendCents: number }[];
};

describe('Meta, Google Ads and ChatGPT Ads in one hub: connect in Chromium, sync, and the Hub API equals the sandboxes', {
  skip: chromiumMissing,
}, () => {
  let meta: MetaSandbox;
  let google: GoogleAdsSandbox;
  let chatgpt: OpenAIAdsSandbox;
  let t: TestApp;
  let browser: Browser;
  let page: Page;
  let key: string;
  const now = () => t.clock.now();
  const pageUrl = () => `${t.baseUrl}/app/hubs/${HUB_ID}/settings/ad-accounts`;
  const spend = async (period: string): Promise<SpendBody> => {
    const response = await fetch(`${t.baseUrl}/v1/hub/spend-by-workspace?period=${period}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(response.status, 200, `${period}: ${await response.clone().text()}`);
    return (await response.json()) as SpendBody;
  };
  const accountIds = async () =>
    new Map(
      (await t.db.kysely.selectFrom('ad_accounts').select(['id', 'external_id', 'access_via']).where('hub_id', '=', HUB_ID).execute()).map(
        (a) => [a.external_id!, a],
      ),
    );

  before(async () => {
    const { chromium } = await import('playwright-core');
    meta = await startMetaSandbox({ now, seed: { accounts: [META] } });
    google = await startGoogleAdsSandbox({
      now,
      customers: [
        { id: GOOGLE_MANAGER, name: 'Agency', currency: 'EUR', timeZone: 'Europe/London', manager: true, adGroups: [] },
        GOOGLE,
        GOOGLE_USD,
      ],
    });
    chatgpt = await startOpenAIAdsSandbox({ now, accounts: [CHATGPT] });
    t = await startApp({
      listen: true,
      now: NOW,
      seed: async (db) => {
        await account(db, 'acc_three');
        await hub(db, HUB_ID, 'acc_three');
        for (const ws of WORKSPACES) await workspace(db, HUB_ID, ws);
        await createUser(db, { ...ADMIN, firstname: 'Tri', lastname: 'Platform', hubId: HUB_ID, role: 'hub_admin' });
      },
      env: {
        META_GRAPH_URL: meta.url,
        META_DIALOG_URL: meta.url,
        META_APP_ID: meta.appId,
        META_APP_SECRET: meta.appSecret,
        GOOGLE_ADS_URL: google.url,
        GOOGLE_OAUTH_URL: google.url,
        GOOGLE_ACCOUNTS_URL: google.url,
        GOOGLE_OAUTH_CLIENT_ID: google.clientId,
        GOOGLE_OAUTH_CLIENT_SECRET: google.clientSecret,
        OPENAI_ADS_URL: chatgpt.url,
      },
    });
    await setReportingCurrency(t.app.adSync, HUB_ID, 'EUR');
    key = (await createKey(t.db, { hubId: HUB_ID, name: 'three platforms', now: t.clock.now() })).key;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    await Promise.all([meta?.close(), google?.close(), chatgpt?.close()]);
  });

  test('connect all three in the browser; the USD account and a wrong key are refused', async () => {
    await page.goto(`${t.baseUrl}/app/sign-in`);
    await page.fill('#email', ADMIN.email);
    await page.fill('#password', ADMIN.password);
    await page.click('button[type=submit]');
    await page.waitForURL(new RegExp(`/app/hubs/${HUB_ID}$`));

    // Meta through its dialog.
    await page.goto(pageUrl());
    await page.click('[data-connect-meta]');
    await page.click('text=Continue');
    await page.waitForURL(/\/settings\/ad-accounts\/choose\?pending=/);
    await page.check(`input[value=${META.id}]`);
    await page.click('text=Add accounts');
    await page.waitForURL(/\/settings\/ad-accounts\?notice=sync$/);

    // Google through its consent screen: the client account is offered through its manager.
    await page.click('[data-connect-google]');
    await page.waitForURL(new RegExp(`^${google.url}/o/oauth2/v2/auth\\?`));
    const consent = new URL(page.url());
    assert.equal(consent.searchParams.get('access_type'), 'offline');
    assert.equal(consent.searchParams.get('prompt'), 'consent');
    assert.equal(consent.searchParams.get('scope'), 'https://www.googleapis.com/auth/adwords');
    await page.click('text=Continue');
    await page.waitForURL(/\/settings\/ad-accounts\/choose\?pending=/);
    const offered = await page
      .locator('input[name=account]')
      .evaluateAll((inputs) => inputs.map((i) => (i as unknown as { value: string }).value));
    assert.deepEqual(offered.sort(), [GOOGLE.id, GOOGLE_USD.id].sort(), 'the manager itself is not offered');
    assert.match(
      await page.locator(`li:has(input[value="${GOOGLE.id}"])`).innerText(),
      new RegExp(`through manager account ${GOOGLE_MANAGER}`),
    );
    await page.check(`input[value="${GOOGLE_USD.id}"]`);
    await page.click('text=Add accounts');
    assert.match(await page.locator('[role=alert]').innerText(), /reports spend in USD, but this hub reports in EUR/);
    await page.uncheck(`input[value="${GOOGLE_USD.id}"]`);
    await page.check(`input[value="${GOOGLE.id}"]`);
    await page.click('text=Add accounts');
    await page.waitForURL(/\/settings\/ad-accounts\?notice=sync$/);

    // ChatGPT Ads by its key: a wrong one first.
    await page.fill('#chatgpt-key', 'sk-ads-not-a-key-of-this-sandbox-000000');
    await page.click('#connect-chatgpt button[type=submit]');
    assert.match(await page.locator('#key-error').innerText(), /ChatGPT Ads did not accept the API key/);
    await page.fill('#chatgpt-key', chatgpt.issueKey({ accountId: CHATGPT.id }));
    await page.click('#connect-chatgpt button[type=submit]');
    await page.waitForURL(/\/settings\/ad-accounts\?notice=api-key$/);

    const ids = await accountIds();
    assert.deepEqual([...ids.keys()].sort(), [META.id, GOOGLE.id, CHATGPT.id].sort());
    assert.equal(ids.get(GOOGLE.id)!.access_via, GOOGLE_MANAGER);
    assert.equal(ids.get(META.id)!.access_via, null);
    // The Google connection keeps the refresh token, sealed: no token text in the row.
    const sealed = await t.db.kysely
      .selectFrom('ad_connections')
      .select(['platform', 'token_sealed'])
      .where('hub_id', '=', HUB_ID)
      .execute();
    assert.deepEqual(sealed.map((c) => c.platform).sort(), ['chatgpt_ads', 'google_ads', 'meta']);
  });

  test('every period of the Hub API equals the three sandboxes by UTC day', async () => {
    const ids = await accountIds();
    for (const [externalId, a] of ids) {
      const outcome = await syncNow(t.app.adSync, HUB_ID, a.id);
      assert.equal(outcome.status, 'done', `${externalId}: ${JSON.stringify(outcome)}`);
    }
    assert.ok(
      google.requests.some((r) => r.loginCustomerId === GOOGLE_MANAGER && r.query?.includes('FROM ad_group')),
      'the spend was read through the manager',
    );
    const truth: TruthAccount[] = [
      { id: META.id, zone: META.timezone_name, adSets: META.adSets, hourly: meta.hourlySpend(META.id) },
      { id: GOOGLE.id, zone: GOOGLE.timeZone, adSets: GOOGLE.adGroups, hourly: google.hourlySpend(GOOGLE.id) },
      { id: CHATGPT.id, zone: CHATGPT.timezone, adSets: CHATGPT.adGroups, hourly: chatgpt.hourlySpend(CHATGPT.id) },
    ];
    const lines = expectedLines(truth, WORKSPACES);
    for (const a of truth) assert.ok(a.hourly.length > 24 * 60, `${a.id}: the sandbox served its history`);

    for (const period of ['today', 'yesterday', 'last_7_days', 'last_30_days'] as const) {
      const body = await spend(period);
      const ranges = documentedRanges(period, NOW);
      assert.deepEqual({ current: body.current, prior: body.prior }, ranges, `${period}: the documented ranges`);
      assert.equal(body.freshness, 'fresh', period);
      const sum = (workspace: string | null, range: Range) => sumLines(lines, workspace, range);
      const expected = {
        spendCents: sum(null, ranges.current),
        priorSpendCents: sum(null, ranges.prior),
        unattributedSpendCents: sum('', ranges.current),
        priorUnattributedSpendCents: sum('', ranges.prior),
      };
      assert.deepEqual(body.totals, expected, `${period}: totals`);
      const byWorkspace = new Map(body.workspaces.map((w) => [w.id, w]));
      for (const id of WORKSPACES) {
        assert.deepEqual(
          { spendCents: byWorkspace.get(id)?.spendCents ?? 0, priorSpendCents: byWorkspace.get(id)?.priorSpendCents ?? 0 },
          { spendCents: sum(id, ranges.current), priorSpendCents: sum(id, ranges.prior) },
          `${period} ${id}`,
        );
      }
      // Not vacuous: each platform's workspace has money in the longer periods, the quiet one none.
      if (period !== 'today')
        for (const id of ['ws_berlin', 'ws_pune', 'ws_venice']) assert.ok(sum(id, ranges.current) > 0, `${period} ${id}`);
      assert.equal(sum('ws_quiet', ranges.current), 0);
    }
  });

  test('a Google account that lost its access turns the hub failed while Meta keeps syncing; asOf is the oldest complete sync', async () => {
    const ids = await accountIds();
    const firstSync = t.clock.now().toISOString();
    t.clock.advance(2 * 3_600_000);
    google.scenario.denyPermission(GOOGLE.id);
    const failed = await syncNow(t.app.adSync, HUB_ID, ids.get(GOOGLE.id)!.id);
    assert.equal(failed.status, 'failed', JSON.stringify(failed));
    assert.equal(failed.status === 'failed' && failed.failureKind, 'missing_permission');
    for (const id of [META.id, CHATGPT.id]) assert.equal((await syncNow(t.app.adSync, HUB_ID, ids.get(id)!.id)).status, 'done', id);

    const body = await spend('last_7_days');
    assert.equal(body.freshness, 'failed');
    assert.equal(body.asOf, firstSync, "the Google account's last complete sync, the oldest");
    await page.goto(pageUrl());
    const row = page.locator(`[data-ad-account="${ids.get(GOOGLE.id)!.id}"]`);
    assert.match(await row.innerText(), /Missing permission/);
    assert.equal(await row.locator('a[href="#connect-google"]').count(), 1, 'Reconnect leads to Connect Google Ads');
    assert.match(await page.locator(`[data-ad-account="${ids.get(META.id)!.id}"]`).innerText(), /Connected/);
  });
});
