// Every page of the web admin (and the front door, the 404 page, an embed) in Chromium at a phone's
// width (390 px) and a desktop's (1280 px): nothing wider than the viewport, the profile menu
// inside it, touch targets of at least 44 px on the phone. With UPDATE_SCREENSHOTS=1 the
// screenshots go to docs/screenshots/<page>-<width>.png; otherwise they are still taken (a page
// that cannot render fails) into a temporary directory.
import assert from 'node:assert/strict';
import { mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext } from 'playwright-core';
import { addKeyUsage, createKey } from '../../src/domain/api-keys/api-key.service.ts';
import { utcDay } from '../../src/domain/api-keys/api-key.ts';
import { signEmbedToken } from '../../src/surfaces/web/embed-token.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { CHROMIUM, CHROMIUM_ARGS, chromiumMissing } from '../support/chromium.ts';
import { authorize, exchangeCode, REDIRECT, registerClient } from '../support/oauth-flow.ts';
import { menuOutside, overflows, smallTargets } from '../support/page-checks.ts';
import { ADMIN, HUB, MEMBER, seedWebHub } from '../support/world.ts';

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';
const UPDATE = process.env.UPDATE_SCREENSHOTS === '1';
const SHOTS = UPDATE ? path.resolve(import.meta.dirname, '../../docs/screenshots') : path.join(tmpdir(), `hubops-layout-${process.pid}`);
if (chromiumMissing) console.log(`# SKIP layout tests: ${chromiumMissing}`);

const WIDTHS = [
  { width: 390, height: 844, phone: true },
  { width: 1280, height: 800, phone: false },
] as const;
const SHOT_MAX_HEIGHT = 2400;

describe('every page at 390 px and at 1280 px', { skip: chromiumMissing }, () => {
  let web: TestApp;
  let browser: Browser;
  let embedUrl = '';

  before(async () => {
    const { chromium } = await import('playwright-core');
    web = await startApp({ listen: true, now: 'system', seed: seedWebHub });
    const looker = await createKey(web.db, { hubId: HUB, name: 'Looker Studio dashboard (finance team)' });
    // A month of a dashboard's polling, through the flush's own statement: most polls unchanged (304).
    const today = Date.now();
    await addKeyUsage(web.db, [
      {
        keyId: looker.id,
        lastUsedAt: new Date(today),
        days: new Map(
          Array.from({ length: 30 }, (_, i) => {
            const requests = 96 + ((i * 37) % 60);
            return [
              utcDay(new Date(today - i * 86_400_000)),
              { requests, notModified: Math.round(requests * (0.55 + ((i * 13) % 30) / 100)) },
            ] as const;
          }),
        ),
      },
    ]);
    const embedKey = await createKey(web.db, { hubId: HUB, name: 'Franchise intranet embed', scope: 'embed' });
    const token = signEmbedToken({ hub: HUB, view: 'spend', exp: Math.floor(Date.now() / 1000) + 3600, kid: embedKey.id }, embedKey.key);
    embedUrl = `${web.baseUrl}/embed/spend?token=${token}`;
    // Connected apps with rows in both of its lists: the admin's own, and one a member connected in the hub.
    for (const [name, who] of [
      ['Claude Desktop', ADMIN],
      ['Looker Studio reporting connector', ADMIN],
      ['Member Sheets', MEMBER],
    ] as const) {
      const client = await registerClient(web, { confidential: false, redirectUri: REDIRECT, name });
      const result = await authorize(web, client, { ...who, redirectUri: REDIRECT });
      await exchangeCode(web, client, result, REDIRECT);
    }
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    await mkdir(SHOTS, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    await web?.close();
    if (!UPDATE) await rm(SHOTS, { recursive: true, force: true });
  });

  for (const { width, height, phone } of WIDTHS) {
    test(`${width} px: nothing overflows, the profile menu opens inside the viewport${phone ? ', touch targets are 44 px high' : ''}`, async () => {
      const context: BrowserContext = await browser.newContext({ viewport: { width, height }, isMobile: phone, hasTouch: phone });
      const page = await context.newPage();
      const problems: string[] = [];
      const check = async (name: string, opts: { menu?: boolean; shot?: false } = {}) => {
        for (const p of await overflows(page, width)) problems.push(`${name}: ${p}`);
        if (phone) for (const p of await smallTargets(page)) problems.push(`${name}: ${p}`);
        if (opts.shot !== false) {
          // The whole page, up to a length a reader scrolls through (the report's 50 stacked rows are not).
          const pageHeight: number = await page.evaluate('document.documentElement.scrollHeight');
          await page.screenshot({
            path: path.join(SHOTS, `${name}-${width}.png`),
            fullPage: true,
            clip: { x: 0, y: 0, width, height: Math.min(pageHeight, SHOT_MAX_HEIGHT) },
          });
        }
        if (opts.menu) {
          for (const p of await menuOutside(page, width, height)) problems.push(`${name}, profile menu: ${p}`);
          if (phone) for (const p of await smallTargets(page)) problems.push(`${name}, profile menu open: ${p}`);
          await page.click('details.profile summary');
        }
      };
      const visit = async (name: string, url: string, status: number, opts: { menu?: boolean; shot?: false } = {}) => {
        const response = await page.goto(url);
        assert.equal(response?.status(), status, `${name}: ${url}`);
        await check(name, opts);
      };
      try {
        await visit('front-door', `${web.baseUrl}/`, 200);
        await visit('docs index', `${web.baseUrl}/docs`, 200, { shot: false });
        await visit('sign-in', `${web.baseUrl}/app/sign-in`, 200);
        await page.fill('#email', ADMIN.email);
        await page.fill('#password', ADMIN.password);
        await page.click('button[type=submit]');
        await page.waitForURL(/\/app\/hubs\/hub_web$/);
        await check('home', { menu: true });
        // The way a user reaches Manage Hub: the profile menu.
        await page.click('details.profile summary');
        await page.click('text=Manage Hub');
        await page.waitForURL(/\/settings\/api$/);
        assert.ok((await page.locator('[data-key-id]').count()) >= 2, 'the API tab lists the keys');
        await check('api-tab', { menu: true });
        await visit('opt-ins-report', `${web.baseUrl}/app/hubs/${HUB}/opt-ins`, 200);
        await visit('spend', `${web.baseUrl}/app/hubs/${HUB}/spend`, 200);
        await visit('connected-apps', `${web.baseUrl}/app/connected-apps`, 200, { menu: true });
        assert.equal(await page.locator('tr[data-grant]').count(), 3, 'connected apps lists the three grants');
        await visit('not-found', `${web.baseUrl}/app/hubs/${HUB}/settings/nope`, 404);
        await visit('embed', embedUrl, 200);
      } finally {
        await context.close();
      }
      assert.deepEqual(problems, []);
    });
  }
});
