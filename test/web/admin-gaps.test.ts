// Issue 24 item 6, in Chromium at 390 and 1280 px against the demo: the create-key error where the
// eye is (the form comes first, its invalid field focused), the hub switcher only for several hubs
// and its label never cut off on a phone, the demo admin reaching the second hub and its freshness
// banner, and the embed page without a console error (its icon was refused by its CSP).
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { createUser } from '../../src/domain/tenancy/tenancy.service.ts';
import { seedDemo } from '../../src/domain/demo/demo.service.ts';
import { createKey } from '../../src/domain/api-keys/api-key.service.ts';
import { signEmbedToken } from '../../src/surfaces/web/embed-token.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { CHROMIUM, CHROMIUM_ARGS, chromiumMissing } from '../support/chromium.ts';

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';
const SHOTS = process.env.HUBOPS_SHOTS ?? path.join('/tmp', `hubops-admin-gaps-${process.pid}`);
const ADMIN = { email: 'admin@demo.hubops.dev', password: 'hubops-demo' };
const SOLO = { email: 'solo@demo.test', password: 'solo password 1' };
const WIDTHS = [390, 1280] as const;

describe('web admin fixes at 390 and 1280 px', { skip: chromiumMissing }, () => {
  let web: TestApp;
  let browser: Browser;

  before(async () => {
    const { chromium } = await import('playwright-core');
    web = await startApp({ listen: true, now: 'system', seed: async (db) => void (await seedDemo(db)) });
    await createUser(web.db, { ...SOLO, firstname: 'Solo', lastname: 'Admin', hubId: 'hub_demo_brewline', role: 'hub_admin' });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    await mkdir(SHOTS, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    await web?.close();
  });

  async function signedInPage(
    width: number,
    user: { email: string; password: string },
  ): Promise<{ page: Page; errors: string[]; close: () => Promise<void> }> {
    const context = await browser.newContext({ viewport: { width, height: 844 } });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.goto(`${web.baseUrl}/app/sign-in`);
    await page.fill('#email', user.email);
    await page.fill('#password', user.password);
    await page.click('button[type=submit]');
    await page.waitForURL(/\/app\/hubs\//);
    return { page, errors, close: () => context.close() };
  }

  const inViewport = (page: Page, selector: string) =>
    page.evaluate((sel) => {
      const { document, window } = globalThis as any; // runs in the page
      const box = document.querySelector(sel).getBoundingClientRect();
      return box.top >= 0 && box.bottom <= window.innerHeight && box.height > 0;
    }, selector);

  for (const width of WIDTHS) {
    test(`${width} px: a refused create-key form is shown at once, its field focused, the error beside it`, async () => {
      const { page, close } = await signedInPage(width, ADMIN);
      try {
        await page.goto(`${web.baseUrl}/app/hubs/hub_demo_brewline/settings/api`);
        await page.locator('#create-key button[type=submit]').click();
        await page.waitForLoadState();
        assert.match(await page.locator('#name-error').innerText(), /name/i);
        assert.equal(await page.evaluate('document.activeElement?.id'), 'key-name', 'the invalid field has the focus');
        assert.ok(await inViewport(page, '#name-error'), 'the error is in the viewport');
        assert.ok(await inViewport(page, '#key-name'), 'its field too');
        // The form comes before the key list, under the heading.
        assert.ok(
          await page.evaluate(() => {
            const { document, Node } = globalThis as any; // runs in the page
            const form = document.getElementById('create-key');
            const keys = [...document.querySelectorAll('.card h2')].find((h: any) => h.textContent === 'Keys');
            return (form.compareDocumentPosition(keys) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0;
          }),
        );
        await page.screenshot({ path: path.join(SHOTS, `create-key-error-${width}.png`) });
        // Fixed, it creates the key.
        await page.fill('#key-name', 'Sheets refresh');
        await page.locator('#create-key button[type=submit]').click();
        await page.waitForURL(/created=/);
      } finally {
        await close();
      }
    });

    test(`${width} px: one hub, no switcher; two hubs, a switcher whose label fits; the demo admin reaches Pulse Fitness's freshness banner`, async () => {
      const solo = await signedInPage(width, SOLO);
      try {
        assert.equal(await solo.page.locator('#hub-switch').count(), 0, 'no switcher with one hub');
        assert.match(await solo.page.locator('[data-hub]').innerText(), /^Brewline Coffee\s+hub admin$/);
        await solo.page.screenshot({ path: path.join(SHOTS, `one-hub-${width}.png`) });
      } finally {
        await solo.close();
      }
      const admin = await signedInPage(width, ADMIN);
      try {
        const { page } = admin;
        const options = await page.locator('#hub-switch option').allInnerTexts();
        assert.deepEqual(options, ['Brewline Coffee — hub admin', 'Pulse Fitness — hub admin']);
        // The selected hub's name and role fit in the select: nothing cut off.
        const fits = await page.evaluate(() => {
          const { document, getComputedStyle } = globalThis as any; // runs in the page
          const select = document.getElementById('hub-switch');
          const style = getComputedStyle(select);
          const context = document.createElement('canvas').getContext('2d');
          context.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
          const text = context.measureText(select.selectedOptions[0].text).width;
          // The arrow takes about 20 px besides the padding.
          return { text, room: select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 20 };
        });
        assert.ok(fits.text <= fits.room, `the hub's label needs ${fits.text} px, the select leaves ${fits.room}`);
        await page.selectOption('#hub-switch', 'hub_demo_pulse');
        await page.waitForURL(/hub_demo_pulse/);
        await page.goto(`${web.baseUrl}/app/hubs/hub_demo_pulse/spend`);
        assert.equal(page.url(), `${web.baseUrl}/app/hubs/hub_demo_pulse/spend`);
        const banner = await page.locator('main').innerText();
        assert.match(banner, /Google Ads/);
        assert.match(banner, /syncing|failed/i);
        await page.screenshot({ path: path.join(SHOTS, `pulse-spend-${width}.png`) });
        assert.deepEqual(admin.errors, []);
      } finally {
        await admin.close();
      }
    });

    test(`${width} px: the embed page loads without a console error (its icon is allowed by its CSP)`, async () => {
      const key = await createKey(web.db, { hubId: 'hub_demo_brewline', name: `embed ${width}`, scope: 'embed' });
      const context = await browser.newContext({ viewport: { width, height: 844 } });
      try {
        const page = await context.newPage();
        const errors: string[] = [];
        page.on('console', (m) => {
          if (m.type() === 'error') errors.push(m.text());
        });
        for (const view of ['spend', 'opt-in-summary'] as const) {
          const token = signEmbedToken({ hub: 'hub_demo_brewline', view, exp: Math.floor(Date.now() / 1000) + 600, kid: key.id }, key.key);
          const response = await page.goto(`${web.baseUrl}/embed/${view}?token=${token}`);
          assert.equal(response?.status(), 200);
          assert.match(response!.headers()['content-security-policy']!, /img-src data:;/);
          await page.waitForLoadState('load');
          await page.screenshot({ path: path.join(SHOTS, `embed-${view}-${width}.png`) });
        }
        assert.deepEqual(errors, []);
      } finally {
        await context.close();
      }
    });
  }
});
