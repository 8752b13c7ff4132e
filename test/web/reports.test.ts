// The web admin's reports read like a product: one money format, ISO dates, today compared with
// the same hours of yesterday, a chart whose "Others" cannot dwarf the named bars, a freshness
// banner naming every account in trouble, and an opt-ins report with a total, sorting by every
// column and previous/next pages. Through HTTP on a started app, with a session like a browser's.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createKey } from '../../src/domain/api-keys/api-key.service.ts';
import { OPT_IN_STATUSES } from '../../src/domain/opt-ins/opt-in.ts';
import { createUser } from '../../src/domain/tenancy/tenancy.service.ts';
import { signEmbedToken } from '../../src/surfaces/web/embed-token.ts';
import { money } from '../../src/surfaces/web/views/format.ts';
import { startApp, type TestApp } from '../support/app.ts';
import type { TestDb } from '../support/db.ts';
import type { Browser } from '../support/oauth-flow.ts';
import { signedIn } from '../support/web-forms.ts';
import { account, adAccount, ADMIN, HUB, hub, optIns, playbook, seedWebHub, spend, workspace } from '../support/world.ts';

const decode = (s: string) =>
  s
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>');
/** The text of an HTML fragment: tags dropped, entities decoded, white space folded. */
const text = (html: string) =>
  decode(html.replace(/<[^>]*>/g, ''))
    .replace(/\s+/g, ' ')
    .trim();

test('money: thousands separators, two decimals, negative and zero', () => {
  assert.equal(money(126500), '$1,265.00');
  assert.equal(money(116088), '$1,160.88');
  assert.equal(money(5), '$0.05');
  assert.equal(money(0), '$0.00');
  assert.equal(money(-0), '$0.00');
  assert.equal(money(-1250), '-$12.50');
  assert.equal(money(123456789), '$1,234,567.89');
});

describe('the opt-ins report', () => {
  let web: TestApp;
  let b: Browser;
  let rows: any[];
  const report = `/app/hubs/${HUB}/opt-ins`;

  before(async () => {
    web = await startApp({ listen: true, now: 'system', seed: seedWebHub });
    b = await signedIn(web);
    const key = (await createKey(web.db, { hubId: HUB, name: 'report check' })).key;
    const r = await web.hubGet('/playbook-opt-ins?limit=500', key);
    assert.equal(r.status, 200);
    rows = r.body.data;
    assert.equal(rows.length, 130);
  });
  after(async () => web?.close());

  const get = async (pathAndQuery: string) => {
    const r = await b.fetch(`${web.baseUrl}${pathAndQuery}`);
    return { status: r.status, html: await r.text() };
  };
  const ids = (html: string) => [...html.matchAll(/<tr data-id="([^"]+)"/g)].map((m) => m[1]!);
  const rel = (html: string, which: 'next' | 'prev') => {
    const href = new RegExp(`rel="${which}" href="([^"]+)"`).exec(html)?.[1];
    return href === undefined ? undefined : decode(href);
  };
  const notices = (html: string) => [...html.matchAll(/<p class="notice" role="status">([^<]*)<\/p>/g)].map((m) => decode(m[1]!));
  /** Every row of the report from `first`, following Next until there is none. */
  const walk = async (first: string) => {
    const seen: string[] = [];
    let url: string | undefined = first;
    while (url) {
      const { status, html } = await get(url);
      assert.equal(status, 200, url);
      assert.deepEqual(notices(html), [], url);
      seen.push(...ids(html));
      url = rel(html, 'next');
    }
    return seen;
  };

  // What each sort means, applied to the Hub API's rows: names case-insensitively, statuses in
  // their lifecycle order, instants by time; ties by id in the same direction.
  const KEYS: Record<string, (r: any) => string | number> = {
    workspace: (r) => r.workspace.name.toLowerCase(),
    playbook: (r) => r.playbook.name.toLowerCase(),
    status: (r) => OPT_IN_STATUSES.indexOf(r.status),
    opted_in: (r) => r.optedInAt,
    updated: (r) => r.updatedAt,
  };
  const expected = (from: any[], sort: string, dir: 'asc' | 'desc') => {
    const key = KEYS[sort]!;
    const sign = dir === 'asc' ? 1 : -1;
    const cmp = (a: string | number, z: string | number) => (a < z ? -1 : a > z ? 1 : 0);
    return [...from].sort((x, y) => sign * (cmp(key(x), key(y)) || cmp(x.id, y.id))).map((r) => r.id);
  };

  test('the total count, and 50 rows a page with the page number', async () => {
    const { html } = await get(report);
    assert.match(html, /data-total="130">130 opt-ins</);
    assert.match(text(html), /page 1 of 3/);
    assert.equal(ids(html).length, 50);
    const active = rows.filter((r) => r.status === 'active').length;
    assert.match((await get(`${report}?status=active`)).html, new RegExp(`data-total="${active}">${active} opt-ins<`));
    const ws = rows.filter((r) => r.workspace.id === 'ws_b' && r.playbook.id === 'pb_2').length;
    assert.ok(ws > 0);
    assert.match((await get(`${report}?workspace=ws_b&playbook=pb_2`)).html, new RegExp(`data-total="${ws}"`));
    assert.match((await get(`${report}?workspace=ws_nope`)).html, /data-total="0">0 opt-ins<.*No opt-ins match these filters/s);
  });

  test('every sortable column, both ways, across every page, as the rows say', async () => {
    for (const sort of Object.keys(KEYS)) {
      for (const dir of ['asc', 'desc'] as const) {
        assert.deepEqual(await walk(`${report}?sort=${sort}&dir=${dir}`), expected(rows, sort, dir), `${sort} ${dir}`);
      }
    }
    // The default: latest change first.
    assert.deepEqual(await walk(report), expected(rows, 'updated', 'desc'));
  });

  test('the column headers sort, reverse the current sort, and keep the filters; paging keeps filters and sort', async () => {
    const filtered = rows.filter((r) => r.status === 'active');
    const { html } = await get(`${report}?status=active`);
    const header = decode(/<a data-sort="workspace" href="([^"]+)"/.exec(html)![1]!);
    assert.deepEqual(await walk(header), expected(filtered, 'workspace', 'asc'));
    const sorted = (await get(header)).html;
    // The filter form carries the sort, so applying other filters keeps it.
    assert.match(sorted, /<option value="workspace" selected>/);
    assert.match(sorted, /<option value="asc" selected>/);
    assert.match(sorted, /<option value="active" selected>/);
    const reverse = decode(/<a data-sort="workspace" href="([^"]+)"/.exec(sorted)![1]!);
    assert.deepEqual(await walk(reverse), expected(filtered, 'workspace', 'desc'));
    // A date range and a sort, over several pages.
    const from = rows.map((r) => r.optedInAt.slice(0, 10)).sort()[40]!;
    const inRange = rows.filter((r) => r.optedInAt.slice(0, 10) >= from);
    assert.ok(inRange.length > 50);
    assert.deepEqual(await walk(`${report}?from=${from}&sort=playbook&dir=desc`), expected(inRange, 'playbook', 'desc'));
  });

  test('next then previous returns the same first page', async () => {
    const first = await get(`${report}?status=active&sort=opted_in&dir=asc`);
    assert.equal(rel(first.html, 'prev'), undefined);
    const second = await get(rel(first.html, 'next')!);
    assert.match(text(second.html), /page 2 of/);
    assert.notDeepEqual(ids(second.html), ids(first.html));
    const back = await get(rel(second.html, 'prev')!);
    assert.deepEqual(ids(back.html), ids(first.html));
    assert.equal(ids(back.html).length, 50);
  });

  test('dates are ISO: typed as text (never the browser locale), shown as YYYY-MM-DD; a malformed one is a field error', async () => {
    const { html } = await get(report);
    for (const name of ['from', 'to']) {
      const input = new RegExp(`<input id="f-${name}"[^>]*>`).exec(html)![0];
      assert.match(input, /type="text"/);
      assert.match(input, /placeholder="YYYY-MM-DD"/);
    }
    for (const cell of html.matchAll(/data-label="(?:Opted in|Updated)">([^<]*)</g))
      assert.match(cell[1]!, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/);
    for (const bad of ['11/24/2026', '2026-13-01', '2026-02-30', 'yesterday']) {
      const r = await get(`${report}?from=${encodeURIComponent(bad)}`);
      assert.equal(r.status, 400, bad);
      assert.match(text(/<p class="field-error" id="from-error">[^<]*<\/p>/.exec(r.html)?.[0] ?? ''), /Enter a date as YYYY-MM-DD/, bad);
      assert.deepEqual(ids(r.html), [], bad);
    }
    // A phone's numeric keypad has no "-": the basic form is read and shown as YYYY-MM-DD.
    const day = rows[0].optedInAt.slice(0, 10);
    const compact = await get(`${report}?from=${day.replace(/-/g, '')}&to=${day.replace(/-/g, '')}`);
    assert.equal(compact.status, 200);
    assert.match(compact.html, new RegExp(`id="f-from"[^>]*value="${day}"`));
    assert.equal(ids(compact.html).length, rows.filter((r) => r.optedInAt.startsWith(day)).length);
  });

  test('sort, order and page are validated: a clear notice and the default, never a 500', async () => {
    const firstPage = ids((await get(report)).html);
    for (const [query, said] of [
      ['sort=budget', /cannot be sorted by “budget”/],
      ['sort=updated&dir=sideways', /order must be asc or desc/],
      ['page=0', /whole number/],
      ['page=-1', /whole number/],
      ['page=1e2', /whole number/],
      ['page=%201', /whole number/],
      ['page=99999999999', /whole number/],
    ] as const) {
      const r = await get(`${report}?${query}`);
      assert.equal(r.status, 200, query);
      assert.match(notices(r.html).join(' '), said, query);
      assert.deepEqual(ids(r.html), firstPage, query);
    }
    const past = await get(`${report}?page=7&sort=updated&dir=desc`);
    assert.match(notices(past.html).join(' '), /no page 7; showing page 3, the last/);
    assert.deepEqual(ids(past.html), expected(rows, 'updated', 'desc').slice(100));
    // Repeated parameters are not a value: the default, no 500.
    const repeated = await get(`${report}?sort=workspace&sort=status&page=2&page=3`);
    assert.equal(repeated.status, 200);
    assert.deepEqual(ids(repeated.html), firstPage);
  });

  test("the CSV keeps its own order (the Hub API's) whatever the page is sorted by", async () => {
    const r = await b.fetch(`${web.baseUrl}${report}.csv?status=active&sort=workspace&dir=desc&page=2`);
    assert.equal(r.status, 200);
    const csvIds = (await r.text())
      .split('\r\n')
      .slice(1, -1)
      .map((line) => line.split(',')[0]);
    assert.deepEqual(
      csvIds,
      rows.filter((x) => x.status === 'active').map((x) => x.id),
    );
  });
});

describe('the spend dashboard and the opt-in summary at a known time of day', () => {
  // 12:00 UTC: half of the day has gone by.
  const NOW = '2026-11-24T12:00:00.000Z';
  const at = (offsetMinutes: number) => new Date(Date.parse(NOW) - offsetMinutes * 60_000).toISOString();
  const R = 'hub_reports';
  let web: TestApp;
  let b: Browser;

  async function seed(db: TestDb): Promise<void> {
    await account(db);
    await hub(db, R);
    await db.kysely.updateTable('hubs').set({ name: 'Report Hub' }).where('id', '=', R).execute();
    await playbook(db, R, 'pb_r');
    // Eight named workspaces, then twenty in the tail whose sum is larger than any of them.
    const named = Array.from({ length: 8 }, (_, i) => `ws_n${i}`);
    const tail = Array.from({ length: 20 }, (_, i) => `ws_t${String(i).padStart(2, '0')}`);
    for (const id of [...named, ...tail]) await workspace(db, R, id);
    await adAccount(db, R, 'ads_ok', 'idle', at(60));
    await adAccount(db, R, 'ads_failed', 'failed', at(20));
    await adAccount(db, R, 'ads_syncing', 'syncing', at(180));
    await adAccount(db, R, 'ads_never', 'idle', null);
    await db.kysely.updateTable('ad_accounts').set({ name: 'Meta Northwest' }).where('id', '=', 'ads_failed').execute();
    await spend(db, [
      // Today so far: $400.00. Yesterday, all day: $1,265.00.
      { hubId: R, adAccountId: 'ads_ok', workspaceId: 'ws_n0', date: '2026-11-24', cents: 40_000 },
      { hubId: R, adAccountId: 'ads_ok', workspaceId: 'ws_n0', date: '2026-11-23', cents: 100_000 },
      { hubId: R, adAccountId: 'ads_ok', workspaceId: 'ws_n1', date: '2026-11-23', cents: 26_500 },
      // Earlier in the last 30 days: the named bars, and the tail at $900.00 each.
      ...named.map((id, i) => ({ hubId: R, adAccountId: 'ads_ok', workspaceId: id, date: '2026-11-10', cents: 200_000 - i * 20_000 })),
      ...tail.map((id) => ({ hubId: R, adAccountId: 'ads_ok', workspaceId: id, date: '2026-11-10', cents: 9_000 })),
      { hubId: R, adAccountId: 'ads_ok', workspaceId: null, date: '2026-11-10', cents: 1_000_000 },
    ]);
    // Yesterday 09:00 and 15:00, today 10:00: by 12:00 yesterday had one opt-in, not two.
    await optIns(db, [
      { id: 'oi_y1', hubId: R, playbookId: 'pb_r', workspaceId: 'ws_n0', optedInAt: '2026-11-23T09:00:00.000Z' },
      { id: 'oi_y2', hubId: R, playbookId: 'pb_r', workspaceId: 'ws_n1', optedInAt: '2026-11-23T15:00:00.000Z' },
      { id: 'oi_t1', hubId: R, playbookId: 'pb_r', workspaceId: 'ws_n2', optedInAt: '2026-11-24T10:00:00.000Z' },
    ]);
    await createUser(db, { ...ADMIN, firstname: 'Ada', lastname: 'Admin', hubId: R, role: 'hub_admin' });
  }

  before(async () => {
    web = await startApp({ listen: true, now: NOW, seed });
    b = await signedIn(web);
  });
  after(async () => web?.close());

  const page = async (query = '') => {
    const r = await b.fetch(`${web.baseUrl}/app/hubs/${R}/spend${query}`);
    assert.equal(r.status, 200);
    return r.text();
  };
  const tile = (html: string, period: string) =>
    new RegExp(`<div class="stat[^"]*" data-period="${period}">(.*?)</a></div>`, 's').exec(html)![1]!;

  test('today so far is compared with yesterday by the same time of day, and says so', async () => {
    const html = await page();
    const today = text(tile(html, 'today'));
    // Yesterday's $1,265.00 by 12:00 is half of it: $632.50; $400.00 is 36.8% less.
    assert.match(today, /\$400\.00/);
    assert.match(today, /-36\.8% vs\. yesterday by 12:00 UTC: est\. \$632\.50/);
    assert.doesNotMatch(today, /-68\.4%/);
    // The other tiles keep whole periods: yesterday against the day before, in full.
    const yesterday = text(tile(html, 'yesterday'));
    assert.match(yesterday, /\$1,265\.00/);
    assert.match(yesterday, /vs\. \$0\.00 \(2026-11-22\)/);
    // Later in the day the same figures compare with more of yesterday.
    web.clock.set(new Date('2026-11-24T18:00:00.000Z'));
    try {
      assert.match(text(tile(await page(), 'today')), /-57\.8% vs\. yesterday by 18:00 UTC: est\. \$948\.75/);
    } finally {
      web.clock.set(new Date(NOW));
    }
  });

  test('the opt-in summary embed compares today with yesterday up to the same time', async () => {
    const embed = await createKey(web.db, { hubId: R, name: 'embed', scope: 'embed' });
    const token = signEmbedToken(
      { hub: R, view: 'opt-in-summary', exp: Math.floor(Date.parse(NOW) / 1000) + 300, kid: embed.id },
      embed.key,
    );
    const r = await web.app.fastify.inject({ url: `/embed/opt-in-summary?token=${token}` });
    assert.equal(r.statusCode, 200);
    const cells = (period: string) =>
      [...new RegExp(`<tr data-period="${period}">(.*?)</tr>`, 's').exec(r.body)![1]!.matchAll(/<td[^>]*>(.*?)<\/td>/gs)].map((m) =>
        text(m[1]!),
      );
    // Period, dates, opt-ins, prior, change, workspaces, prior workspaces.
    assert.deepEqual(cells('today'), ['Today (so far)', '2026-11-24 vs. yesterday by 12:00 UTC', '1', '1', '0.0%', '1', '1']);
    assert.deepEqual(cells('yesterday').slice(2, 4), ['2', '0']);
  });

  test('money is $1,265.00 everywhere: tiles, chart, table', async () => {
    const html = await page('?period=last_30_days');
    const amounts = [...text(html).matchAll(/-?\$[\d,.]+/g)].map((m) => m[0]);
    assert.ok(amounts.length > 20);
    for (const a of amounts) assert.match(a, /^-?\$\d{1,3}(,\d{3})*\.\d{2}$/, a);
    assert.ok(amounts.includes('$1,265.00'));
    assert.ok(amounts.includes('$10,000.00'), 'unattributed');
  });

  test('the chart scales the named bars to the largest of them; Others and Unattributed are totals beside it', async () => {
    const html = await page('?period=last_30_days');
    const bars = [...html.matchAll(/data-bar="named"><div><span title="([^"]*)".*?<rect class="bar" x="0" y="0" width="([\d.]+)%"/gs)].map(
      (m) => ({ name: decode(m[1]!), width: Number(m[2]) }),
    );
    // ws_n0: $2,000 + $1,000 + $400 = $3,400 (the largest); ws_n1: $1,800 + $265 = $2,065; ws_n7: $600.
    assert.deepEqual(
      bars.map((x) => x.name),
      Array.from({ length: 8 }, (_, i) => `Workspace ws_n${i}`),
    );
    assert.equal(bars[0]!.width, 100);
    assert.equal(bars[1]!.width, Math.round((206_500 / 340_000) * 1000) / 10);
    assert.equal(bars[7]!.width, Math.round((60_000 / 340_000) * 1000) / 10);
    const totals = [...html.matchAll(/<li data-bar="(others|unattributed)">(.*?)<\/li>/gs)].map((m) => [m[1], text(m[2]!)]);
    assert.deepEqual(totals, [
      ['others', 'Others (20 workspaces): $1,800.00 (prior $0.00)'],
      ['unattributed', 'Unattributed: $10,000.00 (prior $0.00)'],
    ]);
  });

  test('the banner names the failed, the syncing and the never-synced account, worst first, with times in words', async () => {
    const html = await page();
    const banner = /<div class="banner ([a-z]+)" role="status" data-freshness="([a-z_]+)">(.*?)<\/div>/s.exec(html)!;
    // The Hub API's freshness is "syncing" (first match wins); the colour is the worst state's.
    assert.equal(banner[2], 'syncing');
    assert.equal(banner[1], 'bad');
    const items = [...banner[3]!.matchAll(/<li data-account="([^"]+)" data-concern="([a-z_]+)">(.*?)<\/li>/gs)].map((m) => [
      m[1],
      m[2],
      text(m[3]!),
    ]);
    assert.deepEqual(items, [
      ['ads_failed', 'failed', 'Meta Northwest: last sync failed; last complete sync 20 minutes ago'],
      ['ads_never', 'never_synced', 'Ads ads_never: never synced'],
      ['ads_syncing', 'syncing', 'Ads ads_syncing: syncing now; last complete sync 3 hours ago'],
    ]);
    // The exact instant is in the tooltip.
    assert.match(banner[3]!, new RegExp(`<time datetime="${at(20)}" title="2026-11-24 11:40 UTC">20 minutes ago</time>`));
  });

  // Last: it changes the accounts the tests above read.
  test('with every account synced recently the banner is green and names none', async () => {
    await web.db.kysely
      .updateTable('ad_accounts')
      .set({ sync_state: 'idle', last_synced_at: at(30) })
      .where('hub_id', '=', R)
      .execute();
    const html = await page();
    const banner = /<div class="banner ([a-z]+)" role="status" data-freshness="([a-z_]+)">(.*?)<\/div>/s.exec(html)!;
    assert.deepEqual([banner[1], banner[2]], ['fresh', 'fresh']);
    assert.doesNotMatch(banner[3]!, /<li/);
    assert.match(text(banner[3]!), /Complete data up to 30 minutes ago/);
  });
});
