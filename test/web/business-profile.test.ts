// Manage Hub → Business Profile end to end: in Chromium at 390 and 1280 px the admin connects
// Google Business Profile through the sandbox's consent screen (business.manage, offline, consent),
// maps two locations to workspaces and leaves one out; the reviews sync and the page shows them,
// then Google's own words when the project loses API approval. Over HTTP: a Google Ads state is
// refused at this callback, and no refresh token reaches a page.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { createUser } from '../../src/domain/tenancy/tenancy.service.ts';
import { startGoogleBusinessSandbox, type GoogleBusinessSandbox } from '../../src/integrations/google-business/sandbox.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { CHROMIUM, CHROMIUM_ARGS, chromiumMissing } from '../support/chromium.ts';
import { overflows } from '../support/page-checks.ts';
import { account, hub, workspace } from '../support/world.ts';

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';
if (chromiumMissing) console.log(`# SKIP Business Profile web test: ${chromiumMissing}`);

const NOW = '2026-11-27T15:00:00Z';
const HUB_ID = 'hub_gbp';
const ADMIN = { email: 'gbp-admin@e2e.test', password: 'gbp admin password 1' };
const DOWNTOWN = 'accounts/101/locations/2001';
const RIVERSIDE = 'accounts/101/locations/2002';

describe('Connect Google Business Profile in the browser', { skip: chromiumMissing }, () => {
  let sandbox: GoogleBusinessSandbox;
  let t: TestApp;
  let browser: Browser;
  const pageUrl = () => `${t.baseUrl}/app/hubs/${HUB_ID}/settings/channels/google`;

  before(async () => {
    const { chromium } = await import('playwright-core');
    sandbox = await startGoogleBusinessSandbox({ now: () => (t ? t.clock.now() : new Date(NOW)) });
    t = await startApp({
      listen: true,
      now: NOW,
      seed: async (db) => {
        await account(db, 'acc_gbp');
        await hub(db, HUB_ID, 'acc_gbp');
        for (const ws of ['ws_down', 'ws_side']) await workspace(db, HUB_ID, ws);
        await createUser(db, { ...ADMIN, firstname: 'Gee', lastname: 'Bee', hubId: HUB_ID, role: 'hub_admin' });
      },
      env: {
        GOOGLE_OAUTH_URL: sandbox.url,
        GOOGLE_ACCOUNTS_URL: sandbox.url,
        GOOGLE_BUSINESS_URL: sandbox.url,
        GOOGLE_OAUTH_CLIENT_ID: sandbox.clientId,
        GOOGLE_OAUTH_CLIENT_SECRET: sandbox.clientSecret,
      },
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    await sandbox?.close();
  });

  async function signIn(width: number): Promise<Page> {
    const page = await (await browser.newContext({ viewport: { width, height: 900 } })).newPage();
    await page.goto(`${t.baseUrl}/app/sign-in`);
    await page.fill('#email', ADMIN.email);
    await page.fill('#password', ADMIN.password);
    await page.click('button[type=submit]');
    await page.waitForURL(new RegExp(`/app/hubs/${HUB_ID}$`));
    return page;
  }

  test('connect, choose workspaces, reviews sync and show; a lost approval shows in Google’s words (390 px)', async () => {
    const page = await signIn(390);
    await page.goto(pageUrl());
    await page.click('text=Connect Google Business Profile');
    await page.waitForURL(new RegExp(`^${sandbox.url}/o/oauth2/v2/auth\\?`));
    const consent = new URL(page.url());
    assert.equal(consent.searchParams.get('scope'), 'https://www.googleapis.com/auth/business.manage');
    assert.equal(consent.searchParams.get('access_type'), 'offline');
    assert.equal(consent.searchParams.get('prompt'), 'consent');
    await page.click('text=Continue');
    await page.waitForURL(/\/settings\/channels\/google\/choose\?pending=/);
    assert.deepEqual(
      await page.locator('input[name=location]').evaluateAll((inputs) => inputs.map((i) => (i as unknown as { value: string }).value)),
      sandbox.locations().map((l) => l.name),
    );
    assert.deepEqual(await overflows(page, 390), []);
    await page.screenshot({ path: '/tmp/gbp-choose-390.png', fullPage: true });
    await page.selectOption('#loc-0', 'ws_down');
    await page.selectOption('#loc-1', 'ws_side');
    await page.click('text=Connect locations');
    await page.waitForURL(/\/settings\/channels\/google\?notice=connected$/);
    const channels = await t.db.kysely
      .selectFrom('social_channels')
      .select(['workspace_id', 'external_id', 'name'])
      .where('hub_id', '=', HUB_ID)
      .orderBy('external_id')
      .execute();
    assert.deepEqual(
      channels.map((c) => [c.external_id, c.workspace_id]),
      [
        [DOWNTOWN, 'ws_down'],
        [RIVERSIDE, 'ws_side'],
      ],
    );
    const body = await page.locator('main').innerText();
    assert.match(body, /Brewline Downtown/);
    assert.match(body, /Reviews not synced yet/);

    const outcomes = await t.app.googleBusiness!.reviewSync.runOnce();
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['synced', 'synced'],
    );
    await page.reload();
    assert.match(await page.locator('main').innerText(), /40 reviews, synced/);
    assert.deepEqual(await overflows(page, 390), []);
    await page.screenshot({ path: '/tmp/gbp-status-390.png', fullPage: true });

    sandbox.scenario.notApproved(true);
    t.clock.advance(2 * 3_600_000);
    await t.app.googleBusiness!.reviewSync.runOnce();
    await page.reload();
    const failed = await page.locator('main').innerText();
    assert.match(failed, /API access not yet approved/);
    assert.match(failed, /Quota exceeded for quota metric/);
    sandbox.scenario.reset();
  });

  test('the page at 1280 px; a Google Ads state is refused at this callback; no refresh token in a page', async () => {
    const page = await signIn(1280);
    await page.goto(pageUrl());
    assert.deepEqual(await overflows(page, 1280), []);
    await page.screenshot({ path: '/tmp/gbp-status-1280.png', fullPage: true });
    const html = await page.content();
    // The ads Connect's state (signed for 'google') does not open this callback.
    const adsStart = await page.request.get(`${t.baseUrl}/app/hubs/${HUB_ID}/settings/ad-accounts/google/connect`, { maxRedirects: 0 });
    const adsState = new URL(adsStart.headers().location!).searchParams.get('state')!;
    const refused = await page.request.get(`${t.baseUrl}/app/channels/google/callback?code=x&state=${encodeURIComponent(adsState)}`, {
      maxRedirects: 0,
    });
    assert.equal(refused.status(), 400);
    assert.match(await refused.text(), /does not belong to a connection started in this session/);
    const sealed = await t.db.kysely.selectFrom('channel_connections').select(['id', 'token_sealed']).executeTakeFirstOrThrow();
    const token = t.app.adSync.sealer.open(sealed.token_sealed, sealed.id);
    assert.ok(!html.includes(token));
  });
});
