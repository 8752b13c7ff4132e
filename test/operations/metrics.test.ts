// /metrics as Prometheus scrapes it: off by default, 401 without the token, on a port of its own
// with METRICS_PORT; the exposition parsed strictly; Hub API requests counted by route template and
// by key id (never the key), 304s and 429s apart; the background jobs' gauges; and the sample
// Grafana dashboard naming only metrics a scrape has.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { createKey } from '../../src/domain/api-keys/api-key.service.ts';
import { freePort } from '../../src/platform/net.ts';
import { HUB_SUMMARY_LIMIT, METRICS_HUB_KEY_SERIES } from '../../src/policy.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { parseExposition, type Exposition } from '../support/prometheus.ts';
import * as fx from '../support/world.ts';

const TOKEN = 'test-metrics-token-0123456789';

async function seed(t: TestApp): Promise<void> {
  await fx.account(t.db, 'acc_1');
  await fx.hub(t.db, 'h1', 'acc_1');
  await fx.workspace(t.db, 'h1', 'w1');
  await fx.playbook(t.db, 'h1', 'p1');
  await fx.optIns(t.db, [{ id: 'oi_1', hubId: 'h1', playbookId: 'p1', workspaceId: 'w1', optedInAt: '2026-11-20T10:00:00Z' }]);
}

/** `token` null: no Authorization header. */
async function scrape(t: TestApp, token: string | null = TOKEN): Promise<{ status: number; body: string; type: string }> {
  const response = await t.app.fastify.inject({
    method: 'GET',
    url: '/metrics',
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
  });
  return { status: response.statusCode, body: response.body, type: String(response.headers['content-type']) };
}

async function metrics(t: TestApp): Promise<{ text: string; parsed: Exposition }> {
  const answer = await scrape(t);
  assert.equal(answer.status, 200, answer.body);
  assert.match(answer.type, /^text\/plain; version=0\.0\.4/);
  return { text: answer.body, parsed: parseExposition(answer.body) };
}

test('without METRICS_TOKEN or METRICS_PORT there is no /metrics', async () => {
  const t = await startApp();
  try {
    const answer = await scrape(t);
    assert.equal(answer.status, 404);
    assert.equal(t.app.metrics, undefined, 'nothing is counted either');
  } finally {
    await t.close();
  }
});

describe('with METRICS_TOKEN', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp({ env: { METRICS_TOKEN: TOKEN } });
    await seed(t);
  });
  after(() => t.close());

  test('a scrape without the token, or with another, is 401 and shows nothing', async () => {
    for (const token of [null, 'test-metrics-token-0123456788', `${TOKEN}x`, TOKEN.slice(0, -1), '']) {
      const answer = await scrape(t, token);
      assert.equal(answer.status, 401, `token ${JSON.stringify(token)}`);
      assert.doesNotMatch(answer.body, /hubops_|process_|nodejs_|# (HELP|TYPE)/);
      assert.deepEqual(JSON.parse(answer.body).error, 'unauthorized');
    }
    const basic = await t.app.fastify.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}` },
    });
    assert.equal(basic.statusCode, 401);
  });

  test('Hub API requests are counted by route template, status and key id: 200s, 304s and 429s apart; the key never shows', async () => {
    const { key, id } = await createKey(t.db, { hubId: 'h1', name: 'metrics' });
    const first = await t.hubGet('/playbook-opt-ins?limit=5', key);
    assert.equal(first.status, 200);
    const again = await t.hubGet('/playbook-opt-ins?limit=5', key, { 'if-none-match': String(first.headers.etag) });
    assert.equal(again.status, 304);
    for (let i = 0; i < HUB_SUMMARY_LIMIT.limit; i++) assert.equal((await t.hubGet('/opt-in-summary', key)).status, 200);
    const refused = await t.hubGet('/opt-in-summary', key);
    assert.equal(refused.status, 429);
    assert.equal((await t.hubGet('/playbook-opt-ins', 'hubops_not-a-real-key-SECRETGUESS')).status, 401);
    assert.equal((await t.hubGet('/no-such-thing-RAWPATH?token=QUERYSECRET', key)).status, 404);
    assert.equal((await t.hubGet('/playbook-opt-ins?limit=0', key)).status, 400);

    const { text, parsed } = await metrics(t);
    const requests = (route: string, status: string) => parsed.value('hubops_http_requests_total', { route, method: 'GET', status });
    assert.equal(requests('/v1/hub/playbook-opt-ins', '200'), 1);
    assert.equal(requests('/v1/hub/playbook-opt-ins', '304'), 1);
    assert.equal(requests('/v1/hub/playbook-opt-ins', '401'), 1);
    assert.equal(requests('/v1/hub/playbook-opt-ins', '400'), 1);
    assert.equal(requests('/v1/hub/opt-in-summary', '200'), HUB_SUMMARY_LIMIT.limit);
    assert.equal(requests('/v1/hub/opt-in-summary', '429'), 1);
    assert.equal(requests('(unmatched)', '404'), 1);
    const perKey = (result: string) => parsed.value('hubops_hub_api_requests_total', { key_id: id, result });
    assert.equal(perKey('ok'), 1 + HUB_SUMMARY_LIMIT.limit);
    assert.equal(perKey('not_modified'), 1);
    assert.equal(perKey('rate_limited'), 1);
    assert.equal(perKey('client_error'), 1, 'the 400; the 404 matched no route, so no key was looked at');
    assert.equal(perKey('server_error'), 0);
    assert.equal(parsed.value('hubops_rate_limited_total', { surface: 'hub_api' }), 1);
    // The latency histogram, by route and method: cumulative buckets ending at +Inf = count.
    const buckets = parsed.find('hubops_http_request_duration_seconds_bucket', { route: '/v1/hub/opt-in-summary', method: 'GET' });
    assert.ok(buckets.length > 2);
    for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i]!.value >= buckets[i - 1]!.value, 'buckets are cumulative');
    assert.equal(buckets.at(-1)!.labels.le, '+Inf');
    assert.equal(
      buckets.at(-1)!.value,
      parsed.value('hubops_http_request_duration_seconds_count', { route: '/v1/hub/opt-in-summary', method: 'GET' }),
    );
    assert.equal(buckets.at(-1)!.value, HUB_SUMMARY_LIMIT.limit + 1);
    // No secret and no raw URL anywhere.
    for (const secret of [key, key.slice(7, 30), 'SECRETGUESS', 'RAWPATH', 'QUERYSECRET', TOKEN, 'limit=5'])
      assert.ok(!text.includes(secret), secret);
    // Every route label is a template or (unmatched).
    for (const sample of parsed.find('hubops_http_requests_total')) assert.match(sample.labels.route!, /^(\(unmatched\)|\/[\w\-./:*]*)$/);
  });

  test('the process metrics, the database pool and the background jobs are read at scrape time', async () => {
    const now = t.clock.now();
    await sql`INSERT INTO posts (id, hub_id, workspace_id, text, status, scheduled_at)
              VALUES ('post_due', 'h1', 'w1', 'due', 'scheduled', ${new Date(now.getTime() - 90_000)}),
                     ('post_later', 'h1', 'w1', 'later', 'scheduled', ${new Date(now.getTime() + 3_600_000)})`.execute(t.db.kysely);
    await fx.adAccount(t.db, 'h1', 'ad_1');
    const { parsed } = await metrics(t);
    for (const name of [
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_heap_size_used_bytes',
      'nodejs_eventloop_lag_p99_seconds',
    ])
      assert.ok(parsed.types.has(name), name);
    assert.ok(parsed.value('hubops_build_info', { version: parsed.find('hubops_build_info')[0]!.labels.version! }) === 1);
    assert.ok((parsed.value('hubops_db_pool_max_connections') ?? 0) >= 1);
    assert.ok(parsed.value('hubops_db_pool_connections', { state: 'in_use' }) !== undefined);
    assert.ok(parsed.value('hubops_db_pool_connections', { state: 'idle' }) !== undefined);
    assert.equal(parsed.value('hubops_db_pool_waiting'), 0);
    assert.equal(parsed.value('hubops_publisher_due_posts'), 1, 'the post due 90 s ago, not the later one');
    assert.equal(parsed.value('hubops_publisher_lag_seconds'), 90);
    assert.equal(parsed.value('hubops_publisher_publishing_posts'), 0);
    for (const platform of ['meta', 'google_ads', 'chatgpt_ads']) {
      assert.equal(parsed.value('hubops_ad_sync_accounts', { platform }), 0, 'an imported (not connected) account is not synced');
      assert.equal(parsed.value('hubops_ad_sync_lag_seconds', { platform }), 0);
    }
    for (const source of ['db_pool', 'publisher', 'ad_sync']) assert.equal(parsed.value('hubops_scrape_source_up', { source }), 1, source);
  });

  test('a connected ad account overdue for its sync shows as due, with its lag', async () => {
    const now = t.clock.now();
    await sql`INSERT INTO ad_connections (id, hub_id, platform, kind, label, token_sealed)
              VALUES ('conn_1', 'h1', 'meta', 'system_user', 'test', '\\x00'::bytea)`.execute(t.db.kysely);
    await sql`UPDATE ad_accounts SET connection_id = 'conn_1', external_id = 'act_1', currency = 'USD', time_zone = 'UTC', next_sync_at = ${new Date(now.getTime() - 600_000)},
                     complete_through = ${new Date(now.getTime() - 3 * 86_400_000).toISOString().slice(0, 10)}
               WHERE id = 'ad_1'`.execute(t.db.kysely);
    const { parsed } = await metrics(t);
    assert.equal(parsed.value('hubops_ad_sync_accounts', { platform: 'meta' }), 1);
    assert.equal(parsed.value('hubops_ad_sync_due_accounts', { platform: 'meta' }), 1);
    assert.equal(parsed.value('hubops_ad_sync_lag_seconds', { platform: 'meta' }), 600);
    assert.equal(parsed.value('hubops_ad_sync_complete_through_age_days', { platform: 'meta' }), 3);
    assert.equal(parsed.value('hubops_ad_sync_due_accounts', { platform: 'google_ads' }), 0);
  });

  test('the sample Grafana dashboard is JSON and every query names only metrics a scrape has', async () => {
    const dashboard = JSON.parse(await readFile(new URL('../../docs/grafana-dashboard.json', import.meta.url), 'utf8'));
    const { parsed } = await metrics(t);
    const families = new Set(parsed.samples.map((s) => s.name));
    const exprs: string[] = [];
    const walk = (node: unknown) => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (node && typeof node === 'object')
        for (const [k, v] of Object.entries(node)) {
          if (k === 'expr' && typeof v === 'string') exprs.push(v);
          else walk(v);
        }
    };
    walk(dashboard);
    assert.ok(exprs.length >= 8, `${exprs.length} queries`);
    const FUNCTIONS = new Set([
      'sum',
      'rate',
      'irate',
      'increase',
      'by',
      'histogram_quantile',
      'max',
      'min',
      'topk',
      'without',
      'avg',
      'le',
      'on',
      'ignoring',
      'count',
      'clamp_min',
      'or',
      'and',
      'unless',
      'vector',
      'time',
    ]);
    for (const expr of exprs) {
      // Metric names: identifiers not inside {…} or (…) label lists, not functions, not label names after by/without.
      const stripped = expr
        .replace(/\{[^}]*\}/g, '')
        .replace(/\b(?:by|without)\s*\([^)]*\)/g, '')
        .replace(/\[[^\]]*\]/g, '');
      const names = (stripped.match(/[a-zA-Z_:][a-zA-Z0-9_:]*/g) ?? []).filter((n) => !FUNCTIONS.has(n));
      assert.ok(names.length > 0, `no metric in ${expr}`);
      for (const name of names) assert.ok(families.has(name), `${name} (in ${expr}) is not in a scrape`);
    }
  });
});

describe('with METRICS_PORT', () => {
  test('/metrics moves to a listener of its own; METRICS_TOKEN still guards it; the main port has none', async () => {
    const port = await freePort();
    const t = await startApp({ env: { METRICS_PORT: String(port), METRICS_TOKEN: TOKEN } });
    try {
      const listener = await t.app.listenMetrics();
      assert.equal(listener?.port, port);
      assert.equal((await scrape(t)).status, 404, 'not on the main listener');
      const refused = await fetch(`http://127.0.0.1:${port}/metrics`);
      assert.equal(refused.status, 401);
      assert.doesNotMatch(await refused.text(), /hubops_/);
      const answer = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
      assert.equal(answer.status, 200);
      const parsed = parseExposition(await answer.text());
      assert.ok(parsed.types.has('hubops_http_requests_total'));
      assert.equal((await fetch(`http://127.0.0.1:${port}/other`)).status, 404);
    } finally {
      await t.close();
    }
  });

  test('without METRICS_TOKEN, the listener (loopback by default) answers without one', async () => {
    const port = await freePort();
    const t = await startApp({ env: { METRICS_PORT: String(port) } });
    try {
      await t.app.listenMetrics();
      const answer = await fetch(`http://127.0.0.1:${port}/metrics`);
      assert.equal(answer.status, 200);
      parseExposition(await answer.text());
    } finally {
      await t.close();
    }
  });
});

test(`keys beyond the first ${METRICS_HUB_KEY_SERIES} are counted together as key_id="other"`, async () => {
  const { HubKeyMetrics } = await import('../../src/platform/metrics.ts');
  const keys = new HubKeyMetrics();
  for (let i = 0; i < METRICS_HUB_KEY_SERIES + 5; i++) keys.record(`key_${i}`, 200);
  keys.record('key_0', 304);
  keys.record(`key_${METRICS_HUB_KEY_SERIES + 1}`, 429);
  const parsed = parseExposition(`${keys.render()}\n`);
  const ids = new Set(parsed.samples.map((s) => s.labels.key_id));
  assert.equal(ids.size, METRICS_HUB_KEY_SERIES + 1);
  assert.equal(parsed.value('hubops_hub_api_requests_total', { key_id: 'other', result: 'ok' }), 5);
  assert.equal(parsed.value('hubops_hub_api_requests_total', { key_id: 'other', result: 'rate_limited' }), 1);
  assert.equal(parsed.value('hubops_hub_api_requests_total', { key_id: 'key_0', result: 'not_modified' }), 1);
});
