// The MCP Apps view (src/surfaces/mcp-apps) in Chromium, inside a minimal host page that plays the
// host's part of io.modelcontextprotocol/ui: it frames the resource's HTML in a sandboxed iframe
// (allow-scripts only, as a chat app does), answers ui/initialize with its context and sends the
// tool's input and result. The results are the real tools' results, called with the MCP SDK
// client on the Hub MCP endpoint of a seeded hub; the view's figures must be theirs, written as the
// web admin writes them (src/surfaces/web/views/format.ts). With UPDATE_SCREENSHOTS=1 the
// screenshots go to docs/screenshots/mcp-app-*.png; otherwise they are still taken into a
// temporary directory (a view that cannot render fails).
import assert from 'node:assert/strict';
import { mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Browser, BrowserContext, Frame, Page } from 'playwright-core';
import { createKey } from '../../src/domain/api-keys/api-key.service.ts';
import { SPEND_STALE_AFTER_MS } from '../../src/policy.ts';
import { mcpAppResources, REPORT_VIEW_URI } from '../../src/surfaces/mcp-apps/resources.ts';
import { count, money, when } from '../../src/surfaces/web/views/format.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { CHROMIUM, CHROMIUM_ARGS, chromiumMissing } from '../support/chromium.ts';
import { newClient, textOf, transport } from '../support/mcp-client.ts';
import * as fx from '../support/world.ts';

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';
const UPDATE = process.env.UPDATE_SCREENSHOTS === '1';
const SHOTS = UPDATE ? path.resolve(import.meta.dirname, '../../docs/screenshots') : path.join(tmpdir(), `hubops-mcp-app-${process.pid}`);
if (chromiumMissing) console.log(`# SKIP MCP Apps view tests: ${chromiumMissing}`);

// The system clock: the opt-in summary's asOf is when the seed wrote its rows, so dates and asOf agree.
const NOW = new Date().toISOString();
const TOP = 8;
const view = mcpAppResources.find((r) => r.uri === REPORT_VIEW_URI)!;

/** The UTC date `offset` days from NOW. */
const day = (offset: number) => new Date(Date.parse(NOW) + offset * 86_400_000).toISOString().slice(0, 10);
const hoursBefore = (h: number) => new Date(Date.parse(NOW) - h * 3_600_000).toISOString();
const range = (r: { startDate: string; endDate: string }) => (r.startDate === r.endDate ? r.startDate : `${r.startDate} – ${r.endDate}`);

const NAMES = [
  'Brewline Austin – South Congress',
  'Brewline Denver Union Station',
  'Brewline Portland Pearl District',
  'Brewline Minneapolis North Loop',
  'Café <b>Main</b> & Co',
  'Brewline Chicago Wicker Park',
  'Brewline Seattle Capitol Hill',
  'Brewline Boston Back Bay',
  'Brewline Nashville Gulch',
  'Brewline San Diego Little Italy',
  'Brewline Raleigh Downtown',
];

/** The host page: a chat column holding the view's frame, and a second app's frame beside it. */
const HOST_PAGE = `<!DOCTYPE html><html><head><meta charset="utf-8"><style>
body{margin:0;padding:12px;background:#e9ebef;font:14px system-ui}
#chat{max-width:760px;margin:0 auto}
iframe#view{display:block;width:calc(100% - 2px);height:120px;border:1px solid #c9ced6;border-radius:12px;background:transparent}
iframe#other{width:1px;height:1px;border:0}
</style></head><body><div id="chat"></div><script>
window.log = [];
window.sizes = [];
let frame;
const post = (message) => { window.log.push({ dir: 'out', method: message.method, id: message.id }); frame.contentWindow.postMessage(message, '*'); };
let initializeId;
window.answerInitialize = () => post({ jsonrpc: '2.0', id: initializeId, result: {
  protocolVersion: '2026-01-26',
  hostInfo: { name: 'test-host', version: '1.0.0' },
  hostCapabilities: {},
  hostContext: { theme: window.config.theme, displayMode: 'inline', availableDisplayModes: ['inline'], platform: 'web',
    containerDimensions: { width: frame.clientWidth, maxHeight: 6000 } },
} });
window.hostSend = (message) => post(message);
window.startHost = (config) => {
  window.config = config;
  frame = document.createElement('iframe');
  frame.id = 'view';
  frame.title = 'hubops report';
  frame.setAttribute('sandbox', 'allow-scripts');
  frame.srcdoc = config.html;
  window.addEventListener('message', (event) => {
    if (event.source !== frame.contentWindow) return;
    const m = event.data;
    window.log.push({ dir: 'in', method: m.method, id: m.id, params: m.params, result: m.result, error: m.error });
    if (m.method === 'ui/initialize') { initializeId = m.id; if (config.answer) window.answerInitialize(); }
    if (m.method === 'ui/notifications/initialized' && config.result) {
      post({ jsonrpc: '2.0', method: 'ui/notifications/tool-input', params: { arguments: config.args } });
      post({ jsonrpc: '2.0', method: 'ui/notifications/tool-result', params: config.result });
    }
    if (m.method === 'ui/notifications/size-changed') { window.sizes.push(m.params); frame.style.height = m.params.height + 'px'; }
  });
  document.getElementById('chat').append(frame);
  // Another app in the same chat: on the host's word it posts to the view as if it were the host.
  const other = document.createElement('iframe');
  other.id = 'other';
  other.setAttribute('sandbox', 'allow-scripts');
  other.srcdoc = '<script>addEventListener("message", (e) => { if (e.data && e.data.attack) { for (const m of e.data.attack) parent.frames[0].postMessage(m, "*"); parent.postMessage("attacked", "*"); } });<\\/script>';
  document.body.append(other);
};
</script></body></html>`;

interface Mounted {
  page: Page;
  frame: Frame;
  /** URLs the page requested (the host page is set inline: every request is the view's). */
  requests: string[];
  /** Console errors (a CSP refusal among them). */
  errors: string[];
}

describe('MCP Apps report view in Chromium', { skip: chromiumMissing }, () => {
  let t: TestApp;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const results = {} as Record<'spend' | 'optIns' | 'syncing' | 'stale' | 'fresh' | 'emptySpend' | 'emptyOptIns' | 'error', CallToolResult>;
  const args = { spend: { period: 'last_30_days' }, optIns: {} };

  before(async () => {
    t = await startApp({ listen: true, now: 'system' });
    const db = t.db;
    await fx.account(db);
    // hub_net: eleven workspaces, 60 days of spend, two ad accounts of which one failed its last sync.
    await fx.hub(db, 'hub_net');
    await fx.field(db, 'hub_net', 'region');
    const ids = NAMES.map((_, i) => `ws_${String(i + 1).padStart(2, '0')}`);
    for (const [i, id] of ids.entries()) await fx.workspace(db, 'hub_net', id, { region: i % 2 ? 'West' : 'East' });
    for (const [i, id] of ids.entries()) await db.kysely.updateTable('workspaces').set({ name: NAMES[i]! }).where('id', '=', id).execute();
    await fx.adAccount(db, 'hub_net', 'aa_ok', 'idle', hoursBefore(1));
    await fx.adAccount(db, 'hub_net', 'aa_bad', 'failed', hoursBefore(3));
    const rows: Parameters<typeof fx.spend>[1] = [];
    for (let d = 0; d < 60; d++) {
      for (const [i, id] of ids.entries()) {
        const cents = ((i * 7919 + d * 104_729) % 9000) + (11 - i) * 1500 + (d < 30 ? 900 : 0);
        if ((i + d) % 5 !== 0)
          rows.push({ hubId: 'hub_net', adAccountId: i % 2 ? 'aa_ok' : 'aa_bad', workspaceId: id, date: day(-d), cents });
      }
      if (d % 6 === 0) rows.push({ hubId: 'hub_net', adAccountId: 'aa_ok', workspaceId: null, date: day(-d), cents: 1234 + d * 10 });
    }
    await fx.spend(db, rows);
    await fx.playbook(db, 'hub_net', 'pb_1', 'Holiday Promo');
    await fx.optIns(
      db,
      Array.from({ length: 90 }, (_, i) => ({
        id: `oi_${i}`,
        hubId: 'hub_net',
        playbookId: 'pb_1',
        workspaceId: ids[i % ids.length]!,
        status: i % 3 ? 'active' : 'in_review',
        optedInAt: hoursBefore(((i * 7) % 60) * 24 + (i % 10)),
      })),
    );
    // One hub per other freshness, and one with nothing at all.
    await fx.hub(db, 'hub_sync');
    await fx.workspace(db, 'hub_sync', 'ws_s');
    await fx.adAccount(db, 'hub_sync', 'aa_s', 'syncing', hoursBefore(2));
    await fx.spend(db, [{ hubId: 'hub_sync', adAccountId: 'aa_s', workspaceId: 'ws_s', date: day(-1), cents: 4500 }]);
    await fx.hub(db, 'hub_stale');
    await fx.workspace(db, 'hub_stale', 'ws_t');
    await fx.adAccount(db, 'hub_stale', 'aa_t', 'idle', hoursBefore(SPEND_STALE_AFTER_MS / 3_600_000 + 2));
    await fx.spend(db, [{ hubId: 'hub_stale', adAccountId: 'aa_t', workspaceId: 'ws_t', date: day(-3), cents: 777 }]);
    await fx.hub(db, 'hub_fresh');
    await fx.workspace(db, 'hub_fresh', 'ws_f');
    await fx.adAccount(db, 'hub_fresh', 'aa_f', 'idle', hoursBefore(1));
    await fx.spend(db, [{ hubId: 'hub_fresh', adAccountId: 'aa_f', workspaceId: 'ws_f', date: day(-40), cents: 2500 }]);
    await fx.hub(db, 'hub_empty');

    const mcpUrl = new URL(`${t.baseUrl}/v1/hub/mcp`);
    const connect = async (hubId: string): Promise<Client> => {
      const { key } = await createKey(db, { hubId, name: `MCP Apps view test ${hubId}` });
      const client = newClient();
      await client.connect(transport(mcpUrl, { token: key }));
      return client;
    };
    /** The tool's result as the client got it: what a host hands the view. */
    const asResult = async (client: Client, name: string, a: Record<string, unknown>): Promise<CallToolResult> => {
      const result = (await client.callTool({ name, arguments: a })) as CallToolResult;
      assert.notEqual(result.isError, true, `${name}: ${JSON.stringify(result.content)}`);
      assert.ok(result.structuredContent, `${name} gave no structuredContent`);
      return result;
    };
    const net = await connect('hub_net');
    // The view under test is the one the endpoint serves, linked from both tools.
    const served = await net.readResource({ uri: REPORT_VIEW_URI });
    assert.deepEqual(
      served.contents.map((c) => [c.uri, c.mimeType, 'text' in c ? c.text : undefined]),
      [[REPORT_VIEW_URI, view.mimeType, view.text]],
    );
    const linked = (await net.listTools()).tools.filter((tool) => tool._meta?.ui !== undefined).map((tool) => tool.name);
    assert.deepEqual(linked, ['get_opt_in_summary', 'get_spend_by_workspace']);
    results.spend = await asResult(net, 'get_spend_by_workspace', args.spend);
    results.optIns = await asResult(net, 'get_opt_in_summary', args.optIns);
    results.error = (await net.callTool({ name: 'get_spend_by_workspace', arguments: { period: 'last_year' } })) as CallToolResult;
    for (const [hubId, key] of [
      ['hub_sync', 'syncing'],
      ['hub_stale', 'stale'],
      ['hub_fresh', 'fresh'],
    ] as const) {
      const client = await connect(hubId);
      results[key] = await asResult(client, 'get_spend_by_workspace', {});
      await client.close();
    }
    const empty = await connect('hub_empty');
    results.emptySpend = await asResult(empty, 'get_spend_by_workspace', {});
    results.emptyOptIns = await asResult(empty, 'get_opt_in_summary', {});
    await empty.close();
    await net.close();

    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    await mkdir(SHOTS, { recursive: true });
  });
  after(async () => {
    for (const c of contexts) await c.close();
    await browser?.close();
    await t?.close();
    if (!UPDATE) await rm(SHOTS, { recursive: true, force: true });
  });

  /** The host page at `width`, framing the view; with `result`, the host sends it once the view is initialized. */
  async function mount(
    o: { width?: number; theme?: 'light' | 'dark'; result?: CallToolResult; args?: Record<string, unknown>; answer?: boolean } = {},
  ): Promise<Mounted> {
    const theme = o.theme ?? 'light';
    for (const done of contexts.splice(0)) await done.close();
    // The browser prefers the other scheme: the host's theme must win.
    const context = await browser.newContext({
      viewport: { width: o.width ?? 800, height: 900 },
      colorScheme: theme === 'light' ? 'dark' : 'light',
    });
    contexts.push(context);
    const page = await context.newPage();
    const requests: string[] = [];
    const errors: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.setContent(HOST_PAGE);
    await page.evaluate((c) => (globalThis as any).startHost(c), {
      html: view.text,
      theme,
      args: o.args ?? {},
      result: o.result ?? null,
      answer: o.answer ?? true,
    });
    await page.waitForFunction(() => (globalThis as any).log.some((m: any) => m.method === 'ui/initialize'));
    const frame = await (await page.$('iframe#view'))!.contentFrame();
    return { page, frame: frame!, requests, errors };
  }

  /** Waits until the view rendered a report (or a state) and the host sized the frame to it. */
  async function settled(m: Mounted, selector: string): Promise<void> {
    await m.frame.waitForSelector(selector);
    await m.page.waitForFunction(async () => {
      const sizes = (globalThis as any).sizes as { height: number }[];
      const frame = (globalThis as any).document.querySelector('iframe#view');
      return sizes.length > 0 && Math.abs(frame.clientHeight - sizes.at(-1)!.height) <= 2;
    });
    // The last size reported is the content's height now (not an earlier one).
    const height = await m.frame.evaluate(() => Math.ceil((globalThis as any).document.documentElement.getBoundingClientRect().height));
    await m.page.waitForFunction((h) => (globalThis as any).sizes.at(-1).height === h, height);
  }

  const text = async (f: Frame, selector: string) => (await f.locator(selector).textContent())?.trim();
  const log = (m: Mounted): Promise<{ dir: string; method?: string; id?: number; params?: any; result?: any; error?: any }[]> =>
    m.page.evaluate(() => (globalThis as any).log);

  test('the view is an HTML MCP App with nothing to load', () => {
    assert.deepEqual(
      mcpAppResources.map((r) => r.uri),
      [REPORT_VIEW_URI],
    );
    assert.ok(view.uri.startsWith('ui://'));
    assert.equal(view.mimeType, 'text/html;profile=mcp-app');
    assert.match(view.text, /^<!DOCTYPE html>/);
    // No external asset: nothing the document could fetch (an http(s) URL, src=, href=, url()).
    assert.doesNotMatch(view.text, /https?:\/\/(?!www\.w3\.org\/2000\/svg)|\bsrc=|\bhref=|url\(|@import/);
  });

  test('the handshake: ui/initialize first, ui/notifications/initialized after the host answers, then its size; no request leaves', async () => {
    const m = await mount({ result: results.spend, args: args.spend });
    await settled(m, '[data-total="spend"]');
    const messages = await log(m);
    const first = messages.find((x) => x.dir === 'in')!;
    assert.equal(first.method, 'ui/initialize', 'the view speaks first, with ui/initialize');
    assert.equal(first.params.protocolVersion, '2026-01-26');
    assert.equal(first.params.appInfo.name, 'hubops-report-view');
    assert.deepEqual(first.params.appCapabilities, { availableDisplayModes: ['inline'] });
    const answered = messages.findIndex((x) => x.dir === 'out' && x.id === first.id);
    const initialized = messages.findIndex((x) => x.method === 'ui/notifications/initialized');
    assert.ok(answered > 0 && initialized > answered, `initialized (${initialized}) after the host's answer (${answered})`);
    assert.equal(messages.filter((x) => x.method === 'ui/notifications/initialized').length, 1);
    const firstSize = messages.findIndex((x) => x.method === 'ui/notifications/size-changed');
    assert.ok(firstSize > initialized, 'sizes are reported once initialized');
    // The size: the frame's width, and the content's height (the host grew the frame to it).
    const sizes = await m.page.evaluate(() => (globalThis as any).sizes as { width: number; height: number }[]);
    const frameBox = await m.page.evaluate(() => {
      const f = (globalThis as any).document.querySelector('iframe#view');
      return { width: f.clientWidth, height: f.clientHeight };
    });
    assert.equal(sizes.at(-1)!.width, frameBox.width);
    assert.equal(sizes.at(-1)!.height, frameBox.height);
    assert.ok(frameBox.height > 400, `the frame grew to the report (${frameBox.height} px)`);
    assert.ok(sizes.length < 10, `sizes are reported on change, not in a loop (${sizes.length})`);

    // Requests from the host are answered: ping and teardown with {}, anything else as unknown.
    for (const [id, method] of [
      [90, 'ping'],
      [91, 'ui/resource-teardown'],
      [92, 'ui/no-such-method'],
    ] as const) {
      await m.page.evaluate((msg) => (globalThis as any).hostSend(msg), { jsonrpc: '2.0', id, method, params: {} });
    }
    await m.page.waitForFunction(() => (globalThis as any).log.some((x: any) => x.dir === 'in' && x.id === 92));
    const answers = (await log(m))
      .filter((x) => x.dir === 'in' && typeof x.id === 'number' && x.id >= 90)
      .map((x) => ({ id: x.id, result: x.result, code: x.error?.code }));
    assert.deepEqual(answers, [
      { id: 90, result: {}, code: undefined },
      { id: 91, result: {}, code: undefined },
      { id: 92, result: undefined, code: -32601 },
    ]);
    // A theme change from the host restyles the view.
    const background = () =>
      m.frame.evaluate(() => (globalThis as any).getComputedStyle((globalThis as any).document.body).backgroundColor);
    assert.equal(await background(), 'rgb(255, 255, 255)');
    await m.page.evaluate(() =>
      (globalThis as any).hostSend({ jsonrpc: '2.0', method: 'ui/notifications/host-context-changed', params: { theme: 'dark' } }),
    );
    await m.frame.waitForFunction(() => (globalThis as any).document.documentElement.dataset.theme === 'dark');
    assert.equal(await background(), 'rgb(29, 32, 38)');
    assert.deepEqual(m.requests, []);
    assert.deepEqual(m.errors, []);
  });

  test('spend: the totals, each top workspace with its amount, share and prior, the others, the failed-sync banner', async () => {
    const r = results.spend.structuredContent as any;
    assert.equal(r.freshness, 'failed');
    assert.equal(r.workspaces.length, NAMES.length);
    const m = await mount({ result: results.spend, args: args.spend });
    await settled(m, '[data-total="spend"]');
    const f = m.frame;
    assert.equal(await text(f, 'header p'), `Last 30 days · ${r.current.startDate} – ${r.current.endDate} (UTC)`);
    assert.equal(await text(f, '[data-total="spend"] [data-field="amount"]'), money(r.totals.spendCents));
    assert.equal(await text(f, '[data-total="spend"] [data-field="prior"]'), money(r.totals.priorSpendCents));
    assert.equal(await text(f, '[data-total="spend"] [data-field="prior-range"]'), `(${r.prior.startDate} – ${r.prior.endDate})`);
    const pct = ((r.totals.spendCents - r.totals.priorSpendCents) / r.totals.priorSpendCents) * 100;
    assert.equal(await text(f, '[data-total="spend"] [data-field="change"]'), `${pct > 0 ? '+' : ''}${pct.toFixed(1)}%`);
    assert.equal(await text(f, '[data-total="unattributed"] [data-field="amount"]'), money(r.totals.unattributedSpendCents));
    assert.equal(await text(f, '[data-total="unattributed"] [data-field="prior"]'), money(r.totals.priorUnattributedSpendCents));

    // The top eight in the tool's order (largest first), each with its share of the total.
    const top = r.workspaces.slice(0, TOP);
    const rows = await f.locator('ol.bars > li').evaluateAll((lis) =>
      lis.map((li: any) => ({
        id: li.dataset.workspace,
        name: li.querySelector('[data-field="name"]').textContent,
        amount: li.querySelector('[data-field="amount"]').textContent,
        share: li.querySelector('[data-field="share"]').textContent,
        prior: li.querySelector('[data-field="prior"]').textContent,
        bars: [...li.querySelectorAll('rect')].map((rect: any) => rect.getAttribute('width')),
      })),
    );
    const max = Math.max(...top.map((w: any) => Math.max(w.spendCents, w.priorSpendCents)));
    const width = (cents: number) => `${cents > 0 ? Math.max(0.5, Math.round((cents / max) * 1000) / 10) : 0}%`;
    assert.deepEqual(
      rows,
      top.map((w: any) => ({
        id: w.id,
        name: w.name,
        amount: money(w.spendCents),
        share: `${((w.spendCents / r.totals.spendCents) * 100).toFixed(1)}%`,
        prior: money(w.priorSpendCents),
        bars: [width(w.spendCents), width(w.priorSpendCents)],
      })),
    );
    assert.ok(
      rows.some((row) => row.name === 'Café <b>Main</b> & Co'),
      'a name with markup is shown as text',
    );
    assert.equal(await f.locator('b').count(), 0, 'and is not markup');
    const rest = r.workspaces.slice(TOP);
    assert.equal(
      await text(f, '[data-total="others"] [data-field="amount"]'),
      money(rest.reduce((s: number, w: any) => s + w.spendCents, 0)),
    );
    assert.equal(
      await text(f, '[data-total="others"] [data-field="prior"]'),
      money(rest.reduce((s: number, w: any) => s + w.priorSpendCents, 0)),
    );
    assert.match((await text(f, '[data-total="others"]'))!, new RegExp(`^Others \\(${rest.length} workspaces\\)`));

    const banner = f.locator('.banner');
    assert.equal(await banner.getAttribute('data-freshness'), 'failed');
    assert.equal(await banner.getAttribute('class'), 'banner bad');
    assert.equal(
      await text(f, '.banner'),
      `Heads up: These figures may be incomplete: an ad account’s latest sync failed. Complete data up to ${when(r.asOf)}.`,
    );
    assert.deepEqual(m.requests, []);
    assert.deepEqual(m.errors, []);
  });

  test('spend: the banner for a syncing and a stale account, none when fresh', async () => {
    const cases = [
      { result: results.syncing, freshness: 'syncing', words: 'These figures may still change: an ad account is syncing now.' },
      {
        result: results.stale,
        freshness: 'stale',
        words: `These figures may be out of date: an ad account has not synced for more than ${SPEND_STALE_AFTER_MS / 3_600_000} hours.`,
      },
    ];
    for (const c of cases) {
      const r = c.result.structuredContent as any;
      assert.equal(r.freshness, c.freshness);
      const m = await mount({ result: c.result });
      await settled(m, '[data-total="spend"]');
      assert.equal(await m.frame.locator('.banner').getAttribute('class'), 'banner warn');
      assert.equal(await text(m.frame, '.banner'), `Heads up: ${c.words} Complete data up to ${when(r.asOf)}.`);
      assert.equal(await text(m.frame, '[data-total="spend"] [data-field="amount"]'), money(r.totals.spendCents));
    }
    const fresh = results.fresh.structuredContent as any;
    assert.equal(fresh.freshness, 'fresh');
    const m = await mount({ result: results.fresh });
    await settled(m, '[data-total="spend"]');
    assert.equal(await m.frame.locator('.banner').count(), 0);
    assert.equal(
      await text(m.frame, 'header p'),
      `Last 30 days · ${fresh.current.startDate} – ${fresh.current.endDate} (UTC) · as of ${when(fresh.asOf)}`,
    );
    // Spend only in the prior period: the workspace is drawn with an empty bar over its prior one.
    assert.equal(fresh.workspaces[0].spendCents, 0);
    assert.equal(await text(m.frame, '[data-workspace="ws_f"] [data-field="prior"]'), money(fresh.workspaces[0].priorSpendCents));
    assert.equal(await text(m.frame, '[data-workspace="ws_f"] [data-field="share"]'), '—');
    assert.equal(await text(m.frame, '[data-total="spend"] [data-field="change"]'), '-100.0%');
  });

  test('opt-in summary: live opt-ins and the four periods with their prior ones', async () => {
    const s = results.optIns.structuredContent as any;
    assert.deepEqual(
      s.periods.map((p: any) => p.period),
      ['today', 'yesterday', 'last_7_days', 'last_30_days'],
    );
    const m = await mount({ result: results.optIns, args: args.optIns });
    await settled(m, '[data-period]');
    const f = m.frame;
    assert.equal(await text(f, '[data-active]'), count(s.activeOptIns));
    assert.equal(await text(f, 'header p'), `New opt-ins per period (UTC days) · as of ${when(s.asOf)}`);
    const tiles = await f.locator('[data-period]').evaluateAll((els) =>
      els.map((el: any) => ({
        period: el.dataset.period,
        dates: el.querySelector('[data-field="dates"]').textContent,
        optIns: el.querySelector('[data-field="optIns"]').textContent,
        prior: el.querySelector('[data-field="prior"]').textContent,
        workspaces: el.querySelector('[data-field="workspaces"]').textContent,
        priorWorkspaces: el.querySelector('[data-field="prior-workspaces"]').textContent,
      })),
    );
    assert.deepEqual(
      tiles,
      s.periods.map((p: any) => ({
        period: p.period,
        dates: range(p),
        optIns: count(p.optIns),
        prior: count(p.prior.optIns),
        workspaces: count(p.workspaces),
        priorWorkspaces: count(p.prior.workspaces),
      })),
    );
    assert.ok(s.periods.some((p: any) => p.optIns > 0) && s.activeOptIns > 0, 'the seeded hub has opt-ins to show');
    assert.deepEqual(m.requests, []);
    assert.deepEqual(m.errors, []);
  });

  test('an empty hub: no ad accounts and no spend, zero opt-ins', async () => {
    const spend = results.emptySpend.structuredContent as any;
    assert.equal(spend.freshness, 'no_accounts');
    assert.deepEqual(spend.workspaces, []);
    let m = await mount({ result: results.emptySpend });
    await settled(m, '[data-total="spend"]');
    assert.equal(await text(m.frame, '.banner'), 'Heads up: No ad accounts are connected to this hub yet, so there is no spend to show.');
    assert.equal(await text(m.frame, '[data-total="spend"] [data-field="amount"]'), '$0.00');
    assert.equal(await text(m.frame, '[data-total="spend"] [data-field="change"]'), 'no change');
    assert.equal(await text(m.frame, '[data-state="empty"]'), 'No spend in this period or the one before.');
    assert.equal(await m.frame.locator('ol.bars').count(), 0);

    const summary = results.emptyOptIns.structuredContent as any;
    m = await mount({ result: results.emptyOptIns });
    await settled(m, '[data-period]');
    assert.equal(await text(m.frame, '[data-active]'), '0');
    assert.deepEqual(await m.frame.locator('[data-field="optIns"]').allTextContents(), ['0', '0', '0', '0']);
    assert.equal(summary.periods.length, 4);
  });

  test('a tool error is shown as the tool worded it, and nothing else', async () => {
    assert.equal(results.error.isError, true);
    const m = await mount({ result: results.error });
    await settled(m, '[data-state="error"]');
    assert.equal(await text(m.frame, '[data-state="error"] [data-field="message"]'), textOf(results.error));
    assert.match(textOf(results.error), /^invalid_request: .*period/);
    assert.equal(await m.frame.locator('[data-total], [data-period]').count(), 0);
  });

  test('money is written as the web admin writes it (format.ts money), in every case', async () => {
    const cents = [0, 1, 5, 99, 100, 126_500, 123_456_789, -1250, -5];
    const base = results.fresh.structuredContent as any;
    const workspaces = cents
      .slice(0, TOP)
      .map((c, i) => ({ id: `ws_m${i}`, name: `W${i}`, fields: {}, spendCents: 0, priorSpendCents: c }));
    const synthetic = {
      ...base,
      totals: {
        spendCents: cents[5]!,
        priorSpendCents: cents[6]!,
        unattributedSpendCents: cents[7]!,
        priorUnattributedSpendCents: cents[8]!,
      },
      workspaces,
    };
    const m = await mount({ result: { content: [], structuredContent: synthetic } });
    await settled(m, '[data-total="spend"]');
    assert.deepEqual(
      await m.frame.locator('ol.bars [data-field="prior"]').allTextContents(),
      workspaces.map((w) => money(w.priorSpendCents)),
    );
    assert.deepEqual(await m.frame.locator('[data-total] > [data-field="amount"], [data-total] [data-field="prior"]').allTextContents(), [
      money(cents[5]!),
      money(cents[6]!),
      money(cents[7]!),
      money(cents[8]!),
    ]);
  });

  test('messages from anyone but the parent are not heard: another app in the chat, the view itself', async () => {
    const spoof = {
      ...(results.spend.structuredContent as any),
      totals: { spendCents: 99_999_900, priorSpendCents: 0, unattributedSpendCents: 0, priorUnattributedSpendCents: 0 },
    };
    const attack = [
      // A forged answer to the view's ui/initialize, and a forged result.
      {
        jsonrpc: '2.0',
        id: 1,
        result: {
          protocolVersion: '2026-01-26',
          hostInfo: { name: 'evil', version: '1' },
          hostCapabilities: {},
          hostContext: { theme: 'dark' },
        },
      },
      { jsonrpc: '2.0', method: 'ui/notifications/tool-result', params: { content: [], structuredContent: spoof } },
    ];
    const m = await mount({ answer: false });
    await m.page.evaluate(
      (a) =>
        new Promise<void>((resolve) => {
          const g = globalThis as any;
          g.addEventListener('message', (e: any) => {
            if (e.data === 'attacked') resolve();
          });
          g.document.querySelector('iframe#other').contentWindow.postMessage({ attack: a }, '*');
        }),
      attack,
    );
    await m.frame.evaluate(
      (a) =>
        new Promise<void>((resolve) => {
          for (const msg of a) (globalThis as any).postMessage(msg, '*');
          setTimeout(resolve, 200);
        }),
      attack,
    );
    assert.equal(await text(m.frame, '[data-state]'), 'Waiting for the report…');
    assert.equal(await m.frame.evaluate(() => (globalThis as any).document.documentElement.dataset.theme), undefined);
    assert.equal(
      (await log(m)).filter((x) => x.method === 'ui/notifications/initialized').length,
      0,
      'a forged answer does not complete the handshake',
    );
    // The host itself, with the same result: shown (so the messages above were ignored, not lost).
    await m.page.evaluate(() => (globalThis as any).answerInitialize());
    await m.page.waitForFunction(() => (globalThis as any).log.some((x: any) => x.method === 'ui/notifications/initialized'));
    await m.page.evaluate((msg) => (globalThis as any).hostSend(msg), attack[1]!);
    await m.frame.waitForSelector('[data-total="spend"]');
    assert.equal(await text(m.frame, '[data-total="spend"] [data-field="amount"]'), money(99_999_900));
    assert.deepEqual(m.requests, []);
  });

  for (const [kind, key, selector] of [
    ['spend', 'spend', '[data-total="spend"]'],
    ['opt-ins', 'optIns', '[data-period]'],
  ] as const) {
    for (const width of [390, 1280]) {
      for (const theme of ['light', 'dark'] as const) {
        test(`${kind} at ${width} px, ${theme}: the host's theme, nothing wider than the frame; screenshot`, async () => {
          const m = await mount({ width, theme, result: results[key], args: args[key === 'spend' ? 'spend' : 'optIns'] });
          await settled(m, selector);
          const look = await m.frame.evaluate(() => {
            const g = globalThis as any;
            return {
              background: g.getComputedStyle(g.document.body).backgroundColor,
              scrollWidth: g.document.documentElement.scrollWidth,
              innerWidth: g.innerWidth,
            };
          });
          assert.equal(look.background, theme === 'dark' ? 'rgb(29, 32, 38)' : 'rgb(255, 255, 255)');
          assert.ok(look.scrollWidth <= look.innerWidth, `the view is ${look.scrollWidth} px wide in a ${look.innerWidth} px frame`);
          // A viewport as tall as the host page, so the whole frame is painted for the shot.
          await m.page.setViewportSize({
            width,
            height: Math.max(900, await m.page.evaluate(() => (globalThis as any).document.documentElement.scrollHeight)),
          });
          await m.page.locator('iframe#view').screenshot({ path: path.join(SHOTS, `mcp-app-${kind}-${width}-${theme}.png`) });
          assert.deepEqual(m.errors, []);
        });
      }
    }
  }
});
