// The docs in Chromium at 390 px and 1280 px: /docs renders the README with every page listed,
// links between pages and to sections navigate, screenshots load, nothing is wider than the
// viewport but code and tables (which scroll in their own boxes), and each API reference page
// renders its operations from our origin. No console error (a CSP refusal is one) and no request
// to any other origin; the Hub API reference's "Try it out" sends the pasted key to this server.
// Screenshots go to DOCS_SHOTS (default: a temporary directory, removed).
import assert from 'node:assert/strict';
import { mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { createKey } from '../../src/domain/api-keys/api-key.service.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { CHROMIUM, CHROMIUM_ARGS, chromiumMissing } from '../support/chromium.ts';
import { overflows, smallTargets } from '../support/page-checks.ts';
import { HUB, seedWebHub } from '../support/world.ts';

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';
const SHOTS = process.env.DOCS_SHOTS ?? path.join(tmpdir(), `hubops-docs-shots-${process.pid}`);
if (chromiumMissing) console.log(`# SKIP docs browser tests: ${chromiumMissing}`);

const WIDTHS = [
  { width: 390, height: 844, phone: true },
  { width: 1280, height: 800, phone: false },
] as const;

describe('the docs in a browser', { skip: chromiumMissing }, () => {
  let web: TestApp;
  let browser: Browser;
  let key = '';

  before(async () => {
    const { chromium } = await import('playwright-core');
    web = await startApp({ listen: true, now: 'system', seed: seedWebHub });
    key = (await createKey(web.db, { hubId: HUB, name: 'Docs try-it' })).key;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    await mkdir(SHOTS, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    await web?.close();
    if (!process.env.DOCS_SHOTS) await rm(SHOTS, { recursive: true, force: true });
  });

  /** A page that records its console errors and every request that leaves our origin. */
  async function open(width: number, height: number, phone: boolean) {
    const context = await browser.newContext({ viewport: { width, height }, isMobile: phone, hasTouch: phone });
    const page = await context.newPage();
    const errors: string[] = [];
    const foreign: string[] = [];
    const origin = new URL(web.baseUrl).origin;
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('request', (r) => {
      const url = r.url();
      if (!url.startsWith('data:') && new URL(url).origin !== origin) foreign.push(url);
    });
    return { context, page, errors, foreign };
  }

  const shot = async (page: Page, name: string, width: number) => {
    const height: number = await page.evaluate('document.documentElement.scrollHeight');
    await page.screenshot({
      path: path.join(SHOTS, `${name}-${width}.png`),
      fullPage: true,
      clip: { x: 0, y: 0, width, height: Math.min(height, 3000) },
    });
    // And what the reader sees first, at full size.
    await page.screenshot({ path: path.join(SHOTS, `${name}-${width}-top.png`) });
  };

  for (const { width, height, phone } of WIDTHS) {
    test(`${width} px: the guide renders, links and anchors navigate, images load, nothing overflows`, async () => {
      const { context, page, errors, foreign } = await open(width, height, phone);
      try {
        const index = await page.goto(`${web.baseUrl}/docs`);
        assert.equal(index?.status(), 200);
        assert.equal(await page.locator('article h1').first().textContent(), 'hubops#');
        // The README's examples show this server's address, never the placeholder.
        const code = await page.locator('article pre').allTextContents();
        assert.ok(
          code.some((c) => c.includes(`${web.baseUrl}/`)),
          'an example shows the server address',
        );
        assert.ok(!code.some((c) => /\$BASE\b|\$\{BASE\}/.test(c)), 'no $BASE left in the examples');
        assert.deepEqual(await overflows(page, width), []);
        if (phone) assert.deepEqual(await smallTargets(page), []);
        await shot(page, 'docs-index', width);

        // A relative link of the README (docs/hub-api.md) lands on the rendered page.
        const link = page.locator('article a[href$="/docs/hub-api.md"]').first();
        await Promise.all([page.waitForURL(/\/docs\/hub-api\.md$/), link.click()]);
        assert.match(await page.locator('article h1').first().innerText(), /Hub API/);
        assert.match(await page.evaluate('document.contentType'), /html/);
        assert.deepEqual(await overflows(page, width), []);
        await shot(page, 'docs-hub-api', width);

        // A heading anchor: the URL carries it and the heading is in view.
        const anchor = page.locator('article h2 a.anchor').first();
        const id = (await anchor.getAttribute('href'))!;
        await anchor.click();
        assert.ok(page.url().endsWith(id), page.url());
        assert.ok(await page.locator(`article ${id}`).isVisible());

        // A link to another page's section (./x.md#anchor) lands on that page at that heading.
        const cross = page.locator('article a[href*=".md#"]').first();
        const crossHref = (await cross.getAttribute('href'))!;
        await cross.click();
        await page.waitForURL((u) => u.href.endsWith(crossHref.slice(crossHref.indexOf('/docs'))));
        assert.ok(await page.locator(`article #${crossHref.split('#')[1]}`).count(), crossHref);

        // Screenshots: every image of the web admin page loads (natural size, not a broken icon).
        await page.goto(`${web.baseUrl}/docs/web-admin.md`);
        const images = page.locator('article img');
        assert.ok((await images.count()) >= 10);
        await page.evaluate("Promise.all([...document.images].map((i) => { i.loading = 'eager'; return i.decode().catch(() => {}); }))");
        const broken: string[] = await page.evaluate('[...document.images].filter((i) => i.naturalWidth === 0).map((i) => i.src)');
        assert.deepEqual(broken, []);
        assert.deepEqual(await overflows(page, width), []);
        if (phone) assert.deepEqual(await smallTargets(page), []);
        await shot(page, 'docs-web-admin', width);

        // Long code and wide tables scroll inside their own box, never the page.
        await page.goto(`${web.baseUrl}/docs/mcp.md`);
        assert.deepEqual(await overflows(page, width), []);
        await shot(page, 'docs-mcp', width);

        // The page list reaches every page (folded on a phone).
        if (phone) await page.click('details.menu summary');
        const nav = phone ? 'details.menu' : 'nav.side';
        await Promise.all([page.waitForURL(/\/docs\/operations\.md$/), page.locator(`${nav} a[href$="/docs/operations.md"]`).click()]);
        assert.deepEqual(await overflows(page, width), []);

        assert.deepEqual(errors, []);
        assert.deepEqual(foreign, []);
      } finally {
        await context.close();
      }
    });

    test(`${width} px: the API references render their operations from our origin`, async () => {
      const { context, page, errors, foreign } = await open(width, height, phone);
      try {
        for (const [name, operation] of [
          ['hub', 'get_opt_in_summary'],
          ['main', 'organic_analytics'],
        ] as const) {
          const response = await page.goto(`${web.baseUrl}/docs/api/${name}`);
          assert.equal(response?.status(), 200);
          await page.locator('.opblock').first().waitFor({ timeout: 20_000 });
          assert.ok((await page.locator('.opblock').count()) >= 3, name);
          assert.ok(
            (await page.locator(`[id$="${operation}"]`).count()) > 0 || (await page.content()).includes(operation),
            `${name}: ${operation}`,
          );
          assert.deepEqual(await overflows(page, width), [], name);
          await shot(page, `docs-api-${name}`, width);
        }
        assert.deepEqual(errors, []);
        assert.deepEqual(foreign, []);
      } finally {
        await context.close();
      }
    });
  }

  test('the Hub API reference tries a request with the pasted key, against this server only', async () => {
    const { context, page, errors, foreign } = await open(1280, 800, false);
    const sent: { url: string; authorization: string | undefined; headers: Record<string, string> }[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/v1/hub/') && !r.url().endsWith('openapi.json'))
        sent.push({ url: r.url(), authorization: r.headers().authorization, headers: r.headers() });
    });
    try {
      await page.goto(`${web.baseUrl}/docs/api/hub`);
      await page.locator('.opblock').first().waitFor({ timeout: 20_000 });
      await page.click('button.authorize');
      await page.fill('.auth-container input', key);
      await page.click('.auth-container button.authorize');
      await page.click('.auth-btn-wrapper button.btn-done');
      const block = page.locator('.opblock', { hasText: '/opt-in-summary' }).first();
      await block.locator('.opblock-summary').click();
      await block.locator('button.try-out__btn').click();
      await block.locator('button.execute').click();
      const status = block.locator('.live-responses-table tbody .response-col_status').first();
      await status.waitFor({ timeout: 20_000 });
      assert.equal((await status.innerText()).trim(), '200', JSON.stringify(sent));
      assert.equal(sent.length, 1, JSON.stringify(sent));
      assert.equal(new URL(sent[0]!.url).origin, new URL(web.baseUrl).origin);
      assert.equal(sent[0]!.authorization, `Bearer ${key}`);
      await page.screenshot({ path: path.join(SHOTS, 'docs-api-hub-tried-1280.png'), fullPage: false });
      assert.deepEqual(errors, []);
      assert.deepEqual(foreign, []);
    } finally {
      await context.close();
    }
  });
});
