// The web admin in a real browser: Debian's Chromium driven by playwright-core (never a
// downloaded browser). The screenshots of docs/screenshots/ are layout.test.ts's.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createKey } from '../../src/domain/api-keys/api-key.service.ts';
import { signEmbedToken } from '../../src/surfaces/web/embed-token.ts';
import { parseCsv } from '../support/csv-parse.ts';
import { httpRequest } from '../support/http.ts';
import { freePort } from '../../src/platform/net.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { CHROMIUM, CHROMIUM_ARGS, chromiumMissing } from '../support/chromium.ts';
import { ADMIN, HUB, MEMBER, seedWebHub } from '../support/world.ts';

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';
if (chromiumMissing) console.log(`# SKIP browser tests: ${chromiumMissing}`);

/** The CSV value the report must hold for a Hub API value: spreadsheet formulas neutralised. */
const neutral = (v: string) => (/^[=+\-@\t\r]/.test(v) ? `'${v}` : v);

/** Every opt-in row of the hub through the Hub API, page by page. */
async function hubRows(web: TestApp, key: string, query = ''): Promise<any[]> {
  const rows: any[] = [];
  let cursor: string | null = null;
  do {
    const qs = new URLSearchParams(query);
    qs.set('limit', '37');
    if (cursor) qs.set('cursor', cursor);
    const r = await httpRequest(`${web.baseUrl}/v1/hub/playbook-opt-ins?${qs}`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(r.status, 200, r.text);
    rows.push(...r.json.data);
    cursor = r.json.nextCursor;
  } while (cursor);
  return rows;
}

/** The expected CSV record for a Hub API row, flattened as the README documents. */
const oneLine = (text: string) => text.replace(/\r\n|[\r\n]/g, ' ');

function expectedRecord(row: any, fieldKeys: string[]): string[] {
  return [
    row.id,
    row.playbook.id,
    row.playbook.name,
    row.playbook.solutions.join('|'),
    row.workspace.id,
    row.workspace.name,
    ...fieldKeys.map((k) => (row.workspace.fields[k] === undefined ? '' : String(row.workspace.fields[k]))),
    row.status,
    row.optedInAt,
    row.updatedAt,
    row.budgetCents === null ? '' : String(row.budgetCents),
    row.budgetCents === null ? '' : (row.budgetCents / 100).toFixed(2),
    row.budgetType ?? '',
    // docs/spreadsheets.md: one `key: value` line per entry, line breaks inside one as spaces.
    Object.keys(row.variant)
      .sort()
      .map((k) => `${oneLine(k)}: ${oneLine(row.variant[k])}`)
      .join('\n'),
    row.responses.map((r: { question: string; answer: string }) => `${oneLine(r.question)}: ${oneLine(r.answer)}`).join('\n'),
  ].map(neutral);
}

describe('web admin in Chromium', { skip: chromiumMissing }, () => {
  let web: TestApp;
  let browser: Browser;
  let admin: BrowserContext;
  let page: Page;
  let readKeyValue = '';

  before(async () => {
    const { chromium } = await import('playwright-core');
    web = await startApp({ listen: true, now: 'system', usageFlushMs: 200, seed: seedWebHub });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    admin = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 } });
    await admin.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: web.baseUrl });
    page = await admin.newPage();
  });
  after(async () => {
    await browser?.close();
    await web?.close();
  });

  /** GET with the admin's session cookie, outside the browser (the page's CSP allows no fetch). */
  const sessionGet = async (url: string) => {
    const cookie = (await admin.cookies(url)).map((c) => `${c.name}=${c.value}`).join('; ');
    const r = await httpRequest(url, { headers: { cookie } });
    assert.equal(r.status, 200, r.text.slice(0, 300));
    assert.match(String(r.headers['content-type']), /^text\/csv/);
    return r.text;
  };

  const signIn = async (p: Page, who: { email: string; password: string }) => {
    await p.goto(`${web.baseUrl}/app`);
    assert.match(p.url(), /\/app\/sign-in\?next=/);
    await p.fill('#email', who.email);
    await p.fill('#password', who.password);
    await p.click('button[type=submit]');
    await p.waitForURL(/\/app\/hubs\/hub_web$/);
  };

  test('sign in as a hub admin, profile menu → Manage Hub → API; create, copy and use a key; revoke it', async () => {
    await page.goto(`${web.baseUrl}/app/sign-in`);
    await page.fill('#email', ADMIN.email);
    await page.click('button[type=submit]');
    assert.match((await page.textContent('#password-error')) ?? '', /Enter your password/);
    await page.fill('#email', ADMIN.email);
    await page.fill('#password', 'wrong password');
    await page.click('button[type=submit]');
    assert.match((await page.textContent('[role=alert]')) ?? '', /do not match/);
    await signIn(page, ADMIN);
    const cookie = (await admin.cookies()).find((c) => c.name === 'hubops_app')!;
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Lax');

    await page.click('details.profile summary');
    await page.click('text=Manage Hub');
    await page.waitForURL(/\/settings\/api$/);
    for (const id of ['url-api', 'url-openapi', 'url-mcp']) assert.ok(await page.isVisible(`button[data-copy-target="${id}"]`));
    assert.equal(await page.textContent('#url-api'), `${web.baseUrl}/v1/hub`);
    assert.match((await page.textContent('body')) ?? '', /Give each tool its own key/);

    // Validation next to the field.
    await page.click('text=Create key >> nth=-1');
    assert.match((await page.textContent('#name-error')) ?? '', /Give the key a name/);
    await page.fill('#key-name', 'Looker dashboard');
    assert.equal(await page.isChecked('input[name=scope][value=read]'), true);
    // A double click on Create: one key.
    await page.dblclick('form[data-once] button[type=submit]');
    await page.waitForSelector('#new-key');
    readKeyValue = (await page.textContent('#new-key'))!.trim();
    assert.match(readKeyValue, /^hubops_[0-9A-Za-z]{49}$/);
    assert.match((await page.textContent('[data-new-key]')) ?? '', /will not be shown again/);
    const keys = await web.db.kysely.selectFrom('api_keys').select(['id', 'name']).where('hub_id', '=', HUB).execute();
    assert.deepEqual(
      keys.map((k) => k.name),
      ['Looker dashboard'],
    );
    // The copy button copies exactly the key.
    await page.click('button[data-copy-target="new-key"]');
    const copied = await page.evaluate('navigator.clipboard.readText()');
    assert.equal(copied, readKeyValue);
    // Shown once: a reload shows it no more.
    await page.reload();
    assert.equal(await page.isVisible('#new-key'), false);
    assert.match((await page.textContent('body')) ?? '', /already been shown once/);

    for (let i = 0; i < 3; i++) {
      const r = await httpRequest(`${web.baseUrl}/v1/hub/playbook-opt-ins?limit=1`, {
        headers: { authorization: `Bearer ${readKeyValue}` },
      });
      assert.equal(r.status, 200);
    }
    const keyId = keys[0]!.id;
    let count = 0;
    for (let i = 0; i < 50 && count < 3; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      await page.goto(`${web.baseUrl}/app/hubs/${HUB}/settings/api`);
      count = Number(await page.textContent(`tr[data-key-id="${keyId}"] [data-requests]`));
    }
    assert.equal(count, 3);

    await page.click(`tr[data-key-id="${keyId}"] >> text=Revoke`);
    assert.match((await page.textContent('h1')) ?? '', /Revoke “Looker dashboard”\?/);
    assert.equal(
      (await httpRequest(`${web.baseUrl}/v1/hub/opt-in-summary`, { headers: { authorization: `Bearer ${readKeyValue}` } })).status,
      200,
      'not revoked before confirming',
    );
    await page.click('text=Yes, revoke this key');
    await page.waitForURL(/revoked=/);
    assert.match((await page.textContent(`tr[data-key-id="${keyId}"]`)) ?? '', /Revoked/);
    const refused = await httpRequest(`${web.baseUrl}/v1/hub/opt-in-summary`, { headers: { authorization: `Bearer ${readKeyValue}` } });
    assert.equal(refused.status, 401);
    assert.equal(refused.json.error, 'invalid_api_key');
  });

  test('a member does not see Manage Hub and gets 403 on its pages', async () => {
    const context = await browser.newContext();
    const p = await context.newPage();
    await signIn(p, MEMBER);
    await p.click('details.profile summary');
    assert.equal(await p.locator('text=Manage Hub').count(), 0);
    assert.match((await p.textContent('details.profile')) ?? '', /Sign out/);
    for (const suffix of ['settings/api', 'opt-ins', 'opt-ins.csv', 'spend']) {
      const response = await p.goto(`${web.baseUrl}/app/hubs/${HUB}/${suffix}`);
      assert.equal(response!.status(), 403, suffix);
    }
    const other = await p.goto(`${web.baseUrl}/app/hubs/hub_other`);
    assert.equal(other!.status(), 403);
    // Sign out ends the session.
    await p.goto(`${web.baseUrl}/app/hubs/${HUB}`);
    await p.click('details.profile summary');
    await p.click('text=Sign out');
    await p.waitForURL(/sign-in/);
    await p.goto(`${web.baseUrl}/app/hubs/${HUB}`);
    assert.match(p.url(), /sign-in/);
    await context.close();
  });

  test('opt-ins report: labels, filters, paging, and a CSV download equal to the Hub API rows', async () => {
    const key = (await createKey(web.db, { hubId: HUB, name: 'csv check' })).key;
    await page.goto(`${web.baseUrl}/app/hubs/${HUB}/opt-ins`);
    assert.equal(await page.locator('#opt-ins tbody tr').count(), 50);
    const text = (await page.textContent('#opt-ins')) ?? '';
    for (const label of ['Live', 'Awaiting approval', 'Questions only']) assert.ok(text.includes(label), label);
    await page.click('a[rel=next]');
    await page.click('a[rel=next]');
    assert.equal(await page.locator('#opt-ins tbody tr').count(), 30);
    assert.equal(await page.locator('a[rel=next]').count(), 0);

    // Invalid date: the message sits next to the field.
    await page.goto(`${web.baseUrl}/app/hubs/${HUB}/opt-ins?from=2026-13-01`);
    assert.match((await page.textContent('#from-error')) ?? '', /YYYY-MM-DD/);

    // The whole CSV, through the browser's download.
    await page.goto(`${web.baseUrl}/app/hubs/${HUB}/opt-ins`);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download-csv')]);
    const csv = await readFile((await download.path())!, 'utf8');
    const records = parseCsv(csv);
    const fieldKeys = ['region', 'store_code'];
    assert.deepEqual(records[0], [
      'id',
      'playbook_id',
      'playbook_name',
      'playbook_solutions',
      'workspace_id',
      'workspace_name',
      'field_region',
      'field_store_code',
      'status',
      'opted_in_at',
      'updated_at',
      'budget_cents',
      'budget_amount',
      'budget_type',
      'variant',
      'responses',
    ]);
    const rows = await hubRows(web, key);
    assert.equal(rows.length, 130);
    assert.equal(records.length - 1, rows.length);
    rows.forEach((row, i) => {
      assert.deepEqual(records[i + 1], expectedRecord(row, fieldKeys), `row ${i}`);
    });
    assert.ok(csv.includes(`"'=HYPERLINK(""http://evil"")"`));
    assert.ok(csv.includes(`'=1+1 Downtown`));

    // Filters: status and playbook together, compared with the Hub API's own filters.
    await page.selectOption('#f-status', 'active');
    await page.selectOption('#f-playbook', 'pb_1');
    await page.click('text=Apply filters');
    const href = await page.getAttribute('#download-csv', 'href');
    const filtered = await sessionGet(new URL(href!, web.baseUrl).toString());
    const expected = await hubRows(web, key, 'status=active&playbookId=pb_1');
    assert.ok(expected.length > 0);
    assert.deepEqual(
      parseCsv(filtered).slice(1),
      expected.map((r) => expectedRecord(r, fieldKeys)),
    );
    // Workspace and opted-in date range.
    const from = expected[0].optedInAt.slice(0, 10);
    const wsCsv = await sessionGet(`${web.baseUrl}/app/hubs/${HUB}/opt-ins.csv?workspace=ws_b&from=${from}&to=${from}`);
    const all = rows.filter((r) => r.workspace.id === 'ws_b' && r.optedInAt.slice(0, 10) === from);
    assert.deepEqual(
      parseCsv(wsCsv).slice(1),
      all.map((r) => expectedRecord(r, fieldKeys)),
    );
  });

  test('spend dashboard: four periods, unattributed, chart, freshness banner', async () => {
    await page.goto(`${web.baseUrl}/app/hubs/${HUB}/spend`);
    assert.equal(await page.locator('.stat[data-period]').count(), 4);
    assert.equal(await page.getAttribute('.banner', 'data-freshness'), 'stale');
    assert.match((await page.textContent('.banner')) ?? '', /may be out of date/);
    assert.ok(await page.isVisible('svg.chart'));
    assert.match((await page.textContent('body')) ?? '', /Unattributed/);
    assert.match((await page.textContent('body')) ?? '', /\$43\.21/);
  });

  test('a signed embed renders in an iframe on another origin; a tampered one is refused', async () => {
    const embedKey = await createKey(web.db, { hubId: HUB, name: 'intranet embed', scope: 'embed' });
    const exp = Math.floor(Date.now() / 1000) + 600;
    const good = signEmbedToken({ hub: HUB, view: 'spend', exp, kid: embedKey.id }, embedKey.key);
    const summary = signEmbedToken({ hub: HUB, view: 'opt-in-summary', exp, kid: embedKey.id }, embedKey.key);
    const [header, , sig] = good.split('.');
    const forged = Buffer.from(JSON.stringify({ hub: HUB, view: 'spend', exp: exp + 60 })).toString('base64url');
    const tampered = `${header}.${forged}.${sig}`;
    // The embedding site: another origin (another port).
    const port = await freePort();
    const site = http.createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html' });
      response.end(`<!doctype html><title>Franchise intranet</title><h1>Franchise intranet</h1>
<iframe id="good" src="${web.baseUrl}/embed/spend?token=${good}" width="1200" height="700"></iframe>
<iframe id="summary" src="${web.baseUrl}/embed/opt-in-summary?token=${summary}" width="1200" height="400"></iframe>
<iframe id="bad" src="${web.baseUrl}/embed/spend?token=${tampered}" width="1200" height="300"></iframe>`);
    });
    await new Promise<void>((resolve) => site.listen(port, '127.0.0.1', resolve));
    try {
      const context = await browser.newContext({ viewport: { width: 1280, height: 1500 } });
      const p = await context.newPage();
      await p.goto(`http://localhost:${port}/`);
      const frame = async (id: string) => (await (await p.waitForSelector(`#${id}`)).contentFrame())!;
      const goodFrame = await frame('good');
      await goodFrame.waitForSelector('svg.chart');
      assert.match((await goodFrame.textContent('h1')) ?? '', /Acme Franchises · spend/);
      const summaryFrame = await frame('summary');
      await summaryFrame.waitForSelector('[data-active]');
      assert.equal(Number(await summaryFrame.textContent('[data-active]')), 52);
      const badFrame = await frame('bad');
      await badFrame.waitForSelector('[data-embed-error]');
      assert.match((await badFrame.textContent('[data-embed-error]')) ?? '', /signature/);
      await context.close();
    } finally {
      await new Promise((resolve) => site.close(resolve));
    }
  });
});
