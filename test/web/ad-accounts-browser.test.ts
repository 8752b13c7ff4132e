// Manage Hub → Ad accounts in Chromium against the Meta sandbox: Connect Meta by OAuth through the
// sandbox's dialog, connect by a pasted system-user token, Sync now, the states a person acts on
// (connected, needs reconnect in Meta's words, rescheduled, token expiring soon), assign
// unattributed spend with a double click (assigned once), disconnect; then the page at 390 px and
// 1280 px (nothing overflows, 44 px touch targets on the phone). With UPDATE_SCREENSHOTS=1 the
// screenshots go to docs/screenshots/ad-accounts-*.png.
import assert from 'node:assert/strict';
import { mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { connectAdAccounts, syncNow } from '../../src/domain/ad-sync/ad-account.service.ts';
import { startGoogleAdsSandbox, type GoogleAdsSandbox } from '../../src/integrations/google-ads/sandbox.ts';
import { startMetaSandbox, type MetaSandbox } from '../../src/integrations/meta/sandbox.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { CHROMIUM, CHROMIUM_ARGS, chromiumMissing } from '../support/chromium.ts';
import { menuOutside, overflows, smallTargets } from '../support/page-checks.ts';
import { ADMIN, HUB, seedWebHub } from '../support/world.ts';

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';
const UPDATE = process.env.UPDATE_SCREENSHOTS === '1';
const SHOTS = UPDATE
  ? path.resolve(import.meta.dirname, '../../docs/screenshots')
  : path.join(tmpdir(), `hubops-ad-accounts-${process.pid}`);
if (chromiumMissing) console.log(`# SKIP ad accounts browser tests: ${chromiumMissing}`);

const REFUSED_WORDS =
  'The session has been invalidated because the user changed their password or Facebook has changed the session for security reasons.';

describe('Manage Hub → Ad accounts in Chromium', { skip: chromiumMissing }, () => {
  let sandbox: MetaSandbox;
  // Configured so the page shows Connect Google Ads as an operator's server does; the flows are in ad-accounts-three-platforms.
  let google: GoogleAdsSandbox;
  let web: TestApp;
  let browser: Browser;
  let admin: BrowserContext;
  let page: Page;
  const pageUrl = () => `${web.baseUrl}/app/hubs/${HUB}/settings/ad-accounts`;
  const idOf = async (externalId: string) =>
    (
      await web.db.kysely
        .selectFrom('ad_accounts')
        .select('id')
        .where('hub_id', '=', HUB)
        .where('external_id', '=', externalId)
        .executeTakeFirstOrThrow()
    ).id;

  before(async () => {
    const { chromium } = await import('playwright-core');
    sandbox = await startMetaSandbox({
      seed: {
        historyDays: 100,
        accounts: [
          {
            id: 'act_8001',
            name: 'Brewline West',
            adSets: [
              { id: '8001001', name: 'Commuters [ws:ws_a]', campaignId: '800191', campaignName: 'Pumpkin Spice launch' },
              { id: '8001002', name: 'Lookalike 2%', campaignId: '800191', campaignName: 'Pumpkin Spice launch' },
              { id: '8001003', name: 'Students', campaignId: '800192', campaignName: 'Back to school' },
            ],
          },
          { id: 'act_8002', name: 'Brewline East', timezone_name: 'America/New_York' },
          { id: 'act_8003', name: 'Brewline Drive-thru (agency)', timezone_name: 'America/Chicago' },
          { id: 'act_8004', name: 'Brewline Catering', timezone_name: 'America/Denver' },
        ],
      },
    });
    google = await startGoogleAdsSandbox();
    web = await startApp({
      listen: true,
      now: 'system',
      seed: seedWebHub,
      env: {
        META_GRAPH_URL: sandbox.url,
        META_DIALOG_URL: sandbox.url,
        META_APP_ID: sandbox.appId,
        META_APP_SECRET: sandbox.appSecret,
        GOOGLE_ADS_URL: google.url,
        GOOGLE_OAUTH_URL: google.url,
        GOOGLE_ACCOUNTS_URL: google.url,
        GOOGLE_OAUTH_CLIENT_ID: google.clientId,
        GOOGLE_OAUTH_CLIENT_SECRET: google.clientSecret,
      },
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    admin = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await admin.newPage();
    await page.goto(`${web.baseUrl}/app/sign-in`);
    await page.fill('#email', ADMIN.email);
    await page.fill('#password', ADMIN.password);
    await page.click('button[type=submit]');
    await page.waitForURL(/\/app\/hubs\/hub_web$/);
    await mkdir(SHOTS, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    await web?.close();
    await sandbox?.close();
    await google?.close();
    if (!UPDATE) await rm(SHOTS, { recursive: true, force: true });
  });

  test('profile menu → Ad accounts; paste a system-user token, choose an account (a double click adds it once)', async () => {
    await page.click('details.profile summary');
    await page.click('[role=menuitem] >> text=Ad accounts');
    await page.waitForURL(/\/settings\/ad-accounts$/);
    assert.equal(await page.getAttribute('nav.tabs a.on', 'href'), `/app/hubs/${HUB}/settings/ad-accounts`);
    await page.fill('#meta-token', 'not a token');
    await page.click('text=Use this token');
    assert.match((await page.textContent('#token-error')) ?? '', /no spaces or line breaks/);
    assert.equal(await page.inputValue('#meta-token'), '', 'a pasted token is never put back into the page');

    await page.fill('#meta-token', sandbox.issueToken({ accounts: ['act_8001', 'act_8003'], systemUser: true }));
    await page.click('text=Use this token');
    await page.waitForURL(/\/choose\?pending=/);
    assert.equal(await page.locator('input[name=account]').count(), 2);
    await page.check('input[value=act_8001]');
    await page.fill('#conn-label', 'Agency system user');
    await page.dblclick('text=Add accounts');
    await page.waitForURL(/\/settings\/ad-accounts\?notice=sync$/);
    assert.match((await page.textContent('[data-ad-account]')) ?? '', /Brewline West[\s\S]*Not synced yet/);
    assert.equal((await web.db.kysely.selectFrom('ad_accounts').select('id').where('external_id', '=', 'act_8001').execute()).length, 1);
  });

  test('Sync now, then the sync: connected, with its last complete sync and complete-through day', async () => {
    await page.click('[data-ad-account] >> text=Sync now');
    await page.waitForURL(/notice=sync$/);
    assert.match((await page.textContent('.notice')) ?? '', /Sync requested/);
    assert.equal((await syncNow(web.app.adSync, HUB, await idOf('act_8001'))).status, 'done');
    await page.reload();
    const row = (await page.textContent('[data-ad-account]')) ?? '';
    assert.match(row, /Connected/);
    assert.match(row, /Last complete sync\s*(just now|\d+ minutes? ago)/);
    assert.match(row, /Complete through\s*\d{4}-\d{2}-\d{2}/);
  });

  test("Connect Meta by OAuth through the sandbox dialog, choose an account; a refused sync shows Meta's words", async () => {
    await page.click('[data-connect-meta]');
    await page.waitForURL(new RegExp(`^${sandbox.url}/v26.0/dialog/oauth\\?`));
    assert.match((await page.textContent('body')) ?? '', /ads_read,business_management/);
    await page.click('text=Continue');
    await page.waitForURL(/\/settings\/ad-accounts\/choose\?pending=/);
    // The OAuth user reads every sandbox account; the one already connected is marked (choosing it again reconnects it).
    assert.match(
      (await page.textContent('li:has(input[value=act_8001]) [data-already]')) ?? '',
      /already connected: choose it to reconnect it/,
    );
    await page.check('input[value=act_8002]');
    await page.click('text=Add accounts');
    await page.waitForURL(/notice=sync$/);

    sandbox.scenario.fail(
      'act_8002',
      { code: 190, error_subcode: 460, type: 'OAuthException', message: 'Error validating access token', error_user_msg: REFUSED_WORDS },
      10,
    );
    assert.equal((await syncNow(web.app.adSync, HUB, await idOf('act_8002'))).status, 'failed');
    await page.reload();
    const row = page.locator(`[data-ad-account="${await idOf('act_8002')}"]`);
    assert.match((await row.textContent()) ?? '', /Needs reconnect/);
    assert.equal((await row.locator('q[data-platform-message]').textContent())?.trim(), REFUSED_WORDS);
    assert.equal(await row.locator('a.button', { hasText: 'Reconnect' }).count(), 1);

    // Reconnect: Connect Meta again and choose the same account; it is connected again, same row.
    sandbox.scenario.reset();
    await row.locator('a.button', { hasText: 'Reconnect' }).click();
    await page.click('[data-connect-meta]');
    await page.click('text=Continue');
    await page.waitForURL(/\/choose\?pending=/);
    await page.check('input[value=act_8002]');
    await page.click('text=Add accounts');
    await page.waitForURL(/notice=sync$/);
    assert.match((await page.locator(`[data-ad-account="${await idOf('act_8002')}"]`).textContent()) ?? '', /Not synced yet|Connected/);
    sandbox.scenario.fail(
      'act_8002',
      { code: 190, error_subcode: 460, type: 'OAuthException', message: 'Error validating access token', error_user_msg: REFUSED_WORDS },
      10,
    );
    assert.equal((await syncNow(web.app.adSync, HUB, await idOf('act_8002'))).status, 'failed');
    await page.reload();
  });

  test('an account Meta throttles is rescheduled, not failed; a token near its expiry is flagged', async () => {
    const token = sandbox.issueToken({ accounts: ['act_8004'], expiresInS: 5 * 86_400 });
    await connectAdAccounts(web.app.adSync, HUB, {
      platform: 'meta',
      kind: 'oauth',
      accessToken: token,
      tokenExpiresAt: new Date(Date.now() + 5 * 86_400_000),
      externalIds: ['act_8004'],
      label: 'Catering manager',
    });
    sandbox.scenario.throttle('act_8004', 3 * 3_600_000);
    const outcome = await syncNow(web.app.adSync, HUB, await idOf('act_8004'));
    assert.equal(outcome.status, 'rescheduled');
    await page.reload();
    const row = page.locator(`[data-ad-account="${await idOf('act_8004')}"]`);
    assert.match((await row.textContent()) ?? '', /Rescheduled until .+ UTC: Meta asked us to slow down\./);
    assert.match(
      (await row.locator('[data-token-expires-soon]').textContent()) ?? '',
      /^on \d{4}-\d{2}-\d{2}: connect it again before then/,
    );
  });

  test('assign unattributed spend: a double click assigns once, and the line goes', async () => {
    const lines = page.locator('tr[data-unattributed]');
    const before = await lines.count();
    assert.ok(before >= 2, `unattributed lines: ${before}`);
    const first = lines.first();
    const key = await first.getAttribute('data-unattributed');
    await first.locator('select[name=workspace]').selectOption('ws_b');
    await first.locator('button[type=submit]').dblclick();
    await page.waitForURL(/notice=assigned/);
    assert.equal(await page.locator(`tr[data-unattributed="${key}"]`).count(), 0);
    const mappings = await sql<{ n: string }>`SELECT count(*) AS n FROM ad_attribution_mappings WHERE hub_id = ${HUB}`.execute(
      web.db.kysely,
    );
    assert.equal(mappings.rows[0]!.n, '1');
  });

  test('disconnect asks first and says what happens to past figures', async () => {
    const paste = sandbox.issueToken({ accounts: ['act_8003'], systemUser: true });
    await connectAdAccounts(web.app.adSync, HUB, {
      platform: 'meta',
      kind: 'system_user',
      accessToken: paste,
      tokenExpiresAt: null,
      externalIds: ['act_8003'],
      label: 'Drive-thru agency',
    });
    await page.reload();
    await page.locator(`[data-ad-account="${await idOf('act_8003')}"] >> text=Disconnect`).click();
    assert.match((await page.textContent('main')) ?? '', /Past figures stay:[\s\S]*no longer counts toward freshness/);
    await page.click('text=Yes, disconnect');
    await page.waitForURL(/notice=disconnected$/);
    assert.match((await page.textContent('details.disconnected summary')) ?? '', /Disconnected accounts \(1\)/);
  });

  for (const { width, height, phone } of [
    { width: 390, height: 844, phone: true },
    { width: 1280, height: 800, phone: false },
  ]) {
    test(`${width} px: the page and the chooser fit, touch targets on the phone; screenshots`, async () => {
      const context = await browser.newContext({
        viewport: { width, height },
        isMobile: phone,
        hasTouch: phone,
        storageState: await admin.storageState(),
      });
      const p = await context.newPage();
      const problems: string[] = [];
      const check = async (name: string) => {
        for (const found of await overflows(p, width)) problems.push(`${name}: ${found}`);
        if (phone) for (const found of await smallTargets(p)) problems.push(`${name}: ${found}`);
        const pageHeight: number = await p.evaluate('document.documentElement.scrollHeight');
        await p.screenshot({
          path: path.join(SHOTS, `${name}-${width}.png`),
          fullPage: true,
          clip: { x: 0, y: 0, width, height: Math.min(pageHeight, 3200) },
        });
      };
      try {
        await p.goto(pageUrl());
        await p.click('details.disconnected summary');
        await check('ad-accounts');
        for (const found of await menuOutside(p, width, height)) problems.push(`profile menu: ${found}`);
        await p.click('details.profile summary');
        await p.fill('#meta-token', sandbox.issueToken({ systemUser: true }));
        await p.click('text=Use this token');
        await p.waitForURL(/\/choose\?pending=/);
        await check('ad-accounts-choose');
      } finally {
        await context.close();
      }
      assert.deepEqual(problems, []);
    });
  }
});
