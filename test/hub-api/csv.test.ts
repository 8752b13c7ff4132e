import assert from 'node:assert/strict';
import { gunzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { EXPORT_PAGE_SIZE } from '../../src/domain/opt-ins/opt-in-export.service.ts';
import { HUB_EXPORT_LIMIT, HUB_KEY_LIMIT } from '../../src/policy.ts';
import { neutraliseFormula } from '../../src/surfaces/shared/csv.ts';
import { startApp, readKey, type TestApp } from '../support/app.ts';
import { parseCsv } from '../support/csv-parse.ts';
import * as fx from '../support/world.ts';

// The Hub API's CSV exports end to end (app.inject, real PostgreSQL): the bytes parsed back with a
// strict RFC 4180 parser and compared with the JSON API's rows, filters, streaming past one page,
// hostile text neutralised, ETag/304, compression, how they count against the limits, tenancy and
// refused parameters.

let t: TestApp;
let key: string; // hub h1
let otherKey: string; // hub h2
let bigKey: string; // hub big: more rows than one export page
const BIG_ROWS = EXPORT_PAGE_SIZE * 2 + 7;

before(async () => {
  t = await startApp({ now: '2026-11-21T12:00:00.000Z' });
  const db = t.db;
  await fx.account(db, 'acc_1');
  await fx.account(db, 'acc_2');
  await fx.hub(db, 'h1', 'acc_1');
  await fx.hub(db, 'h2', 'acc_2');
  await fx.hub(db, 'big', 'acc_1');
  await fx.field(db, 'h1', 'region');
  await fx.field(db, 'h1', 'store');
  await fx.field(db, 'h1', 'legacy_code', true);
  await fx.workspace(db, 'h1', 'w1', { region: 'West', store: 12, legacy_code: 'X1' });
  await fx.workspace(db, 'h1', 'w2', {});
  await fx.workspace(db, 'h2', 'v1', { region: 'North' });
  await fx.workspace(db, 'big', 'bw', {});
  await fx.playbook(db, 'h1', 'p1', 'Spring Promo ', ['meta', 'google_ads']);
  await fx.playbook(db, 'h1', 'p2', 'Questions');
  await fx.playbook(db, 'h2', 'q1', 'Other hub');
  await fx.playbook(db, 'big', 'bp', 'Big');
  await fx.optIns(db, [
    {
      id: 'o1',
      hubId: 'h1',
      playbookId: 'p1',
      workspaceId: 'w1',
      status: 'active',
      optedInAt: '2026-11-20T10:00:00Z',
      updatedAt: '2026-11-20T11:00:00.123Z',
      budgetCents: 50005,
      budgetType: 'lifetime',
      variant: { copy: 'B', audience: 'Families' },
      responses: [
        { question: 'Store hours?', answer: '9-5' },
        { question: 'Parking', answer: 'yes, "free"' },
      ],
    },
    {
      id: 'o2',
      hubId: 'h1',
      playbookId: 'p2',
      workspaceId: 'w2',
      status: 'questions_only',
      optedInAt: '2026-11-21T08:00:00Z',
      budgetCents: null,
      budgetType: null,
    },
    { id: 'o3', hubId: 'h1', playbookId: 'p1', workspaceId: 'w2', status: 'in_review', optedInAt: '2026-10-01T00:00:00Z' },
    { id: 'x1', hubId: 'h2', playbookId: 'q1', workspaceId: 'v1', status: 'active', optedInAt: '2026-11-21T09:00:00Z' },
  ]);
  const base = Date.parse('2026-01-01T00:00:00Z');
  await fx.optIns(
    db,
    Array.from({ length: BIG_ROWS }, (_, i) => ({
      id: `b${String(i).padStart(5, '0')}`,
      hubId: 'big',
      playbookId: 'bp',
      workspaceId: 'bw',
      // Pairs share an updatedAt: the keyset must order ties by id across page edges.
      optedInAt: new Date(base + Math.floor(i / 2) * 1000).toISOString(),
    })),
  );
  await fx.adAccount(db, 'h1', 'a1', 'idle', '2026-11-21T10:00:00Z');
  await fx.adAccount(db, 'h2', 'b1', 'idle', '2026-11-21T11:00:00Z');
  await fx.spend(db, [
    { hubId: 'h1', adAccountId: 'a1', workspaceId: 'w1', date: '2026-11-20', cents: 1005 },
    { hubId: 'h1', adAccountId: 'a1', workspaceId: 'w1', date: '2026-10-01', cents: 300 },
    { hubId: 'h1', adAccountId: 'a1', workspaceId: null, date: '2026-11-21', cents: 25 },
    { hubId: 'h2', adAccountId: 'b1', workspaceId: 'v1', date: '2026-11-20', cents: 99999 },
  ]);
  key = await readKey(db, 'h1');
  otherKey = await readKey(db, 'h2');
  bigKey = await readKey(db, 'big');
});

after(async () => {
  await t.close();
});

/** A fresh rate-limit window for every test: the export limit is small on purpose. */
function nextMinute(): void {
  t.clock.advance(61_000);
}

async function get(path: string, k: string | undefined, headers: Record<string, string> = {}, method: 'GET' | 'HEAD' = 'GET') {
  const r = await t.app.fastify.inject({
    method,
    url: `/v1/hub${path}`,
    headers: { ...(k === undefined ? {} : { authorization: `Bearer ${k}` }), ...headers },
  });
  return { status: r.statusCode, headers: r.headers, text: r.body, raw: r.rawPayload };
}

/** The CSV as records of named cells, after checking every record has the header's width. */
function records(text: string): { header: string[]; rows: Record<string, string>[] } {
  assert.ok(text.endsWith('\r\n'), 'the last record ends with CRLF');
  const [header, ...rest] = parseCsv(text);
  for (const r of rest) assert.equal(r.length, header!.length, `a record of ${r.length} fields under ${header!.length} columns`);
  return { header: header!, rows: rest.map((r) => Object.fromEntries(header!.map((h, i) => [h, r[i]!]))) };
}

async function jsonRows(path: string, k: string): Promise<any[]> {
  const rows: any[] = [];
  let cursor: string | null = null;
  do {
    const r = await t.hubGet(
      `${path}${path.includes('?') ? '&' : '?'}limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      k,
    );
    assert.equal(r.status, 200);
    rows.push(...r.body.data);
    cursor = r.body.nextCursor;
  } while (cursor);
  return rows;
}

describe('GET /v1/hub/playbook-opt-ins.csv', () => {
  test('every row of the JSON list, flattened into the documented columns', async () => {
    nextMinute();
    const r = await get('/playbook-opt-ins.csv', key);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers['content-type'], 'text/csv; charset=utf-8; header=present');
    assert.match(String(r.headers['content-disposition']), /^attachment; filename="playbook-opt-ins-h1-2026-11-21\.csv"$/);
    assert.equal(r.headers['cache-control'], 'private, no-cache, must-revalidate');
    assert.match(String(r.headers.etag), /^"[A-Za-z0-9_-]{22}"$/);
    assert.ok(!r.text.startsWith('\uFEFF'), 'no BOM unless asked');
    const { header, rows } = records(r.text);
    assert.deepEqual(header, [
      'id',
      'playbook_id',
      'playbook_name',
      'playbook_solutions',
      'workspace_id',
      'workspace_name',
      'field_region',
      'field_store',
      'status',
      'opted_in_at',
      'updated_at',
      'budget_cents',
      'budget_amount',
      'budget_type',
      'variant',
      'responses',
    ]);
    const json = await jsonRows('/playbook-opt-ins', key);
    assert.deepEqual(
      rows.map((row) => row.id),
      json.map((row) => row.id),
    );
    for (const [i, j] of json.entries()) {
      const row = rows[i]!;
      assert.equal(row.playbook_name, j.playbook.name);
      assert.equal(row.playbook_solutions, j.playbook.solutions.join('|'));
      assert.equal(row.workspace_id, j.workspace.id);
      assert.equal(row.field_region, j.workspace.fields.region === undefined ? '' : String(j.workspace.fields.region));
      assert.equal(row.status, j.status);
      assert.equal(row.opted_in_at, j.optedInAt);
      assert.equal(row.updated_at, j.updatedAt);
      assert.equal(row.budget_cents, j.budgetCents === null ? '' : String(j.budgetCents));
      assert.equal(row.budget_amount, j.budgetCents === null ? '' : (j.budgetCents / 100).toFixed(2));
      assert.equal(row.budget_type, j.budgetType ?? '');
    }
    const o1 = rows.find((row) => row.id === 'o1')!;
    assert.equal(o1.playbook_name, 'Spring Promo ');
    assert.equal(o1.field_store, '12');
    assert.equal(o1.budget_cents, '50005');
    assert.equal(o1.budget_amount, '500.05');
    assert.equal(o1.variant, 'audience: Families\ncopy: B');
    assert.equal(o1.responses, 'Store hours?: 9-5\nParking: yes, "free"');
    assert.ok(!('field_legacy_code' in o1), 'archived fields are no column');
  });

  test('the same filters as the JSON list; bom=true starts with a BOM', async () => {
    nextMinute();
    for (const query of [
      'status=active',
      'playbookId=p1',
      'since=2026-11-21',
      'since=2026-11-20T11:00:00.123Z&playbookId=p1',
      'playbookId=nope',
    ]) {
      const csv = records((await get(`/playbook-opt-ins.csv?${query}`, key)).text);
      const json = await jsonRows(`/playbook-opt-ins?${query}`, key);
      assert.deepEqual(
        csv.rows.map((row) => row.id),
        json.map((row) => row.id),
        query,
      );
    }
    const bom = await get('/playbook-opt-ins.csv?bom=true', key);
    assert.ok(bom.text.startsWith('\uFEFFid,playbook_id,'));
    const plain = await get('/playbook-opt-ins.csv', key);
    assert.notEqual(bom.headers.etag, plain.headers.etag, 'other bytes, another tag');
    assert.equal(bom.text.slice(1), plain.text);
  });

  test('streams more rows than one page, in (updatedAt, id) order, each once', async () => {
    nextMinute();
    const r = await get('/playbook-opt-ins.csv', bigKey);
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-length'], undefined, 'streamed, not built whole');
    const { rows } = records(r.text);
    assert.equal(rows.length, BIG_ROWS);
    assert.deepEqual(
      rows.map((row) => row.id),
      Array.from({ length: BIG_ROWS }, (_, i) => `b${String(i).padStart(5, '0')}`),
    );
    // One request against the limits, whatever its rows.
    assert.match(String(r.headers.ratelimit), new RegExp(`"per-key";r=${HUB_KEY_LIMIT.limit - 1};`));
    assert.match(String(r.headers.ratelimit), new RegExp(`"csv-export";r=${HUB_EXPORT_LIMIT.limit - 1};`));
  });

  test('property: hostile text in names, fields, variants and responses comes back neutralised, quoted, intact', async () => {
    const unit = fc.constantFrom('=', '+', '-', '@', '\t', '\r', '\n', ',', '"', "'", ' ', 'a', 'é', ';', '|', ':', '\u2028');
    const hostile = fc.string({ unit, maxLength: 12 });
    const name = fc.string({ unit, minLength: 1, maxLength: 12 }); // names are never empty
    let run = 0;
    await fc.assert(
      fc.asyncProperty(name, hostile, hostile, hostile, hostile, async (name, fieldValue, dimension, question, answer) => {
        nextMinute();
        run += 1;
        const hubId = `hx${run}`;
        await fx.hub(t.db, hubId, 'acc_1');
        await fx.field(t.db, hubId, 'note');
        await fx.workspace(t.db, hubId, `wx${run}`, { note: fieldValue });
        await t.db.kysely.updateTable('workspaces').set({ name: name }).where('id', '=', `wx${run}`).execute();
        await fx.playbook(t.db, hubId, `px${run}`, name);
        await fx.optIns(t.db, [
          {
            id: `ox${run}`,
            hubId,
            playbookId: `px${run}`,
            workspaceId: `wx${run}`,
            optedInAt: '2026-11-01T00:00:00Z',
            variant: { [dimension]: answer },
            responses: [{ question, answer }],
          },
        ]);
        const r = await get('/playbook-opt-ins.csv', await readKey(t.db, hubId));
        assert.equal(r.status, 200);
        const cells = parseCsv(r.text);
        assert.equal(cells.length, 2);
        for (const cell of cells[1]!) assert.ok(!/^[=+\-@\t\r]/.test(cell), `a cell that a spreadsheet would run: ${JSON.stringify(cell)}`);
        const { rows } = records(r.text);
        const line = (s: string) => s.replace(/\r\n|[\r\n]/g, ' ');
        assert.equal(rows[0]!.workspace_name, neutraliseFormula(name));
        assert.equal(rows[0]!.playbook_name, neutraliseFormula(name));
        assert.equal(rows[0]!.field_note, neutraliseFormula(fieldValue));
        assert.equal(rows[0]!.variant, neutraliseFormula(`${line(dimension)}: ${line(answer)}`));
        assert.equal(rows[0]!.responses, neutraliseFormula(`${line(question)}: ${line(answer)}`));
      }),
      { numRuns: 25 },
    );
  });

  test('ETag: 304 while unchanged (free), a new tag when a row changes; gzip with its own tag', async () => {
    nextMinute();
    const first = await get('/playbook-opt-ins.csv', key);
    const etag = String(first.headers.etag);
    const again = await get('/playbook-opt-ins.csv', key, { 'if-none-match': etag });
    assert.equal(again.status, 304);
    assert.equal(again.text, '');
    assert.equal(again.headers.etag, etag);
    // The 304 did not count: the window's remaining count is where the first request left it.
    assert.match(String(again.headers.ratelimit), new RegExp(`"csv-export";r=${HUB_EXPORT_LIMIT.limit - 1};`));

    const gzip = await get('/playbook-opt-ins.csv', key, { 'accept-encoding': 'gzip' });
    assert.equal(gzip.headers['content-encoding'], 'gzip');
    assert.equal(gzip.headers.etag, `${etag.slice(0, -1)}-gzip"`);
    assert.match(String(gzip.headers.vary), /Accept-Encoding/);
    assert.equal(gunzipSync(gzip.raw).toString('utf8'), first.text);
    const gzip304 = await get('/playbook-opt-ins.csv', key, { 'accept-encoding': 'gzip', 'if-none-match': String(gzip.headers.etag) });
    assert.equal(gzip304.status, 304);

    await t.db.kysely.updateTable('opt_ins').set({ status: 'paused' }).where('id', '=', 'o3').execute();
    const changed = await get('/playbook-opt-ins.csv', key, { 'if-none-match': etag });
    assert.equal(changed.status, 200);
    assert.notEqual(changed.headers.etag, etag);
    assert.equal(records(changed.text).rows.find((row) => row.id === 'o3')!.status, 'paused');
    // A renamed workspace changes every export of the hub.
    const tag2 = String(changed.headers.etag);
    await t.db.kysely.updateTable('workspaces').set({ name: 'Renamed' }).where('id', '=', 'w2').execute();
    assert.equal((await get('/playbook-opt-ins.csv', key, { 'if-none-match': tag2 })).status, 200);
    // If-Match that names no current tag: 412.
    assert.equal((await get('/playbook-opt-ins.csv', key, { 'if-match': '"nope"' })).status, 412);
  });

  test(`counted once per request: ${HUB_EXPORT_LIMIT.limit} a minute per key, then 429; a refresh every 15 minutes never is`, async () => {
    nextMinute();
    for (let i = 0; i < HUB_EXPORT_LIMIT.limit; i++) assert.equal((await get('/playbook-opt-ins.csv', key)).status, 200);
    const refused = await get('/playbook-opt-ins.csv', key);
    assert.equal(refused.status, 429);
    assert.equal(JSON.parse(refused.text).error, 'rate_limited');
    assert.ok(Number(refused.headers['retry-after']) > 0);
    // The JSON reads are not held up by the export window.
    assert.equal((await t.hubGet('/playbook-opt-ins', key)).status, 200);
    // A spreadsheet refreshing every 15 minutes for a day.
    for (let i = 0; i < 96; i++) {
      t.clock.advance(15 * 60_000);
      assert.equal((await get('/playbook-opt-ins.csv', key)).status, 200);
    }
  });

  test('a key reads only its own hub', async () => {
    nextMinute();
    const mine = records((await get('/playbook-opt-ins.csv', otherKey)).text).rows.map((r) => r.id);
    assert.deepEqual(mine, ['x1']);
    // Another hub's playbook id as a filter finds nothing.
    assert.deepEqual(records((await get('/playbook-opt-ins.csv?playbookId=p1', otherKey)).text).rows, []);
    const spend = records((await get('/spend-by-workspace.csv?period=last_7_days', otherKey)).text).rows;
    assert.deepEqual(
      spend.map((r) => r.workspace_id),
      ['v1', ''],
    );
  });

  test('bad parameters: a clear 400 naming each; no key 401; a browser 403; HEAD without a body', async () => {
    nextMinute();
    const cases: [string, string][] = [
      ['status=bogus', 'status'],
      ['since=yesterday', 'since'],
      ['since=2026-11-20T10:00:00 00:00', 'since'],
      ['bom=maybe', 'bom'],
      ['cursor=abc', 'cursor'],
      ['limit=500', 'limit'],
    ];
    for (const [query, field] of cases) {
      const r = await get(`/playbook-opt-ins.csv?${query}`, key);
      assert.equal(r.status, 400, `${query}: ${r.text}`);
      const body = JSON.parse(r.text);
      assert.equal(body.error, 'invalid_request');
      assert.deepEqual(
        body.issues.map((i: { field: string }) => i.field),
        [field],
        query,
      );
    }
    assert.match(JSON.parse((await get('/playbook-opt-ins.csv?limit=5', key)).text).message, /every matching row in one response/);
    const period = await get('/spend-by-workspace.csv?period=last_year', key);
    assert.equal(period.status, 400);
    assert.equal(JSON.parse(period.text).issues[0].field, 'period');
    assert.equal((await get('/playbook-opt-ins.csv', undefined)).status, 401);
    assert.equal((await get('/playbook-opt-ins.csv', fx.mistyped(key))).status, 401);
    assert.equal((await get('/playbook-opt-ins.csv', key, { origin: 'https://evil.example' })).status, 403);
    const head = await get('/playbook-opt-ins.csv', key, {}, 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
    assert.match(String(head.headers.etag), /^"/);
    const post = await t.app.fastify.inject({
      method: 'POST',
      url: '/v1/hub/playbook-opt-ins.csv',
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(post.statusCode, 405);
  });
});

describe('GET /v1/hub/spend-by-workspace.csv', () => {
  test('one row per workspace and one of unattributed spend, in cents and as amounts, with the period and freshness', async () => {
    nextMinute();
    const r = await get('/spend-by-workspace.csv?period=last_7_days', key);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers['content-type'], 'text/csv; charset=utf-8; header=present');
    const { header, rows } = records(r.text);
    assert.deepEqual(header, [
      'period',
      'start_date',
      'end_date',
      'prior_start_date',
      'prior_end_date',
      'as_of',
      'freshness',
      'workspace_id',
      'workspace_name',
      'field_region',
      'field_store',
      'spend_cents',
      'spend_amount',
      'prior_spend_cents',
      'prior_spend_amount',
    ]);
    const json = (await t.hubGet('/spend-by-workspace?period=last_7_days', key)).body;
    assert.deepEqual(
      rows.map((row) => row.workspace_id),
      [...json.workspaces.map((w: { id: string }) => w.id), ''],
    );
    const w1 = rows.find((row) => row.workspace_id === 'w1')!;
    assert.deepEqual([w1.spend_cents, w1.spend_amount, w1.field_region, w1.field_store], ['1005', '10.05', 'West', '12']);
    const unattributed = rows.at(-1)!;
    assert.deepEqual([unattributed.workspace_name, unattributed.spend_cents, unattributed.spend_amount], ['(unattributed)', '25', '0.25']);
    assert.equal(
      rows.reduce((sum, row) => sum + Number(row.spend_cents), 0),
      json.totals.spendCents,
    );
    for (const row of rows) {
      assert.deepEqual(
        [row.period, row.start_date, row.end_date, row.as_of, row.freshness],
        [json.period, json.current.startDate, json.current.endDate, json.asOf, json.freshness],
      );
    }
    const again = await get('/spend-by-workspace.csv?period=last_7_days', key, { 'if-none-match': String(r.headers.etag) });
    assert.equal(again.status, 304);
    const other = await get('/spend-by-workspace.csv?period=today', key, { 'if-none-match': String(r.headers.etag) });
    assert.equal(other.status, 200, 'another period, another tag');
  });
});

describe('discovery', () => {
  test('the OpenAPI document and the index list the CSV exports; the MCP server has no CSV tool', async () => {
    const doc = (await t.hubGet('/openapi.json', undefined)).body;
    for (const path of ['/playbook-opt-ins.csv', '/spend-by-workspace.csv']) {
      const op = doc.paths[path]?.get;
      assert.ok(op, path);
      assert.ok(op.responses['200'].content['text/csv'], `${path}: 200 is text/csv`);
      assert.ok(op.responses['304'], `${path}: conditional`);
    }
    const params = doc.paths['/playbook-opt-ins.csv'].get.parameters.map((p: { name: string }) => p.name);
    for (const name of ['since', 'playbookId', 'status', 'bom', 'If-None-Match']) assert.ok(params.includes(name), name);
    assert.ok(!params.includes('cursor'));
    assert.equal(doc.paths['/playbook-opt-ins.csv'].get['x-rate-limit'].policy, 'csv-export');
    const index = (await t.hubGet('/', undefined)).body;
    assert.ok(index.endpoints.some((e: { url: string }) => e.url.endsWith('/v1/hub/playbook-opt-ins.csv')));
    const mcp = await t.app.fastify.inject({
      method: 'POST',
      url: '/v1/hub/mcp',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    });
    assert.equal(mcp.statusCode, 200, mcp.body);
    const names = (JSON.parse(mcp.body).result.tools as { name: string }[]).map((tool) => tool.name);
    assert.ok(names.includes('list_playbook_opt_ins'));
    assert.ok(!names.some((n) => n.includes('csv')), names.join());
  });
});
