// Contract tests of the OpenAI Ads (ChatGPT Ads) wire client against the loopback sandbox (no
// network): the key's one account, hourly ad-group spend per local day in unix ranges with cursor
// paging, DST days and a half-hour zone, each error status's failure kind, throttles waited out with
// a fake sleep, hostile answers, and exact spend decimals.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { after, before, beforeEach, test } from 'node:test';
import fc from 'fast-check';
import { SPEND_THROTTLE_WAIT_MAX_MS } from '../../src/policy.ts';
import { PlatformError, PlatformThrottled, type PlatformAdAccount, type PlatformSpendRow } from '../../src/integrations/ad-platform.ts';
import { createOpenAIAdsClient, isOpenAIAdsKey } from '../../src/integrations/openai-ads/client.ts';
import { startOpenAIAdsSandbox, type OpenAIAdsSandbox, type OpenAIAdsSandboxSpendRow } from '../../src/integrations/openai-ads/sandbox.ts';
import { centsToSpendJson, decimalToMicros, spendDecimals, spendToMicros } from '../../src/integrations/openai-ads/spend.ts';
import { goDuration, parseGoDuration } from '../../src/integrations/openai-ads/wire.ts';

// 18:30 UTC: 13:30 in New York, 10:30 in Los Angeles, 19:30 in Berlin, 00:00 (the next day) in Kolkata.
const START = Date.parse('2026-11-27T18:30:00Z');
let nowMs = START;
const clock = () => new Date(nowMs);
let sandbox: OpenAIAdsSandbox;
const sleeps: number[] = [];
/** The client's sleep: records the wait and moves both clocks instead of waiting. */
const fakeSleep = async (ms: number) => {
  sleeps.push(ms);
  nowMs += ms;
};
let client: ReturnType<typeof createOpenAIAdsClient>;
const keys: Record<string, string> = {};

const account = (externalId: string, currency: string, timeZone: string, name: string): PlatformAdAccount => ({
  externalId,
  name,
  currency,
  timeZone,
  active: true,
  status: 'active',
  accessVia: null,
});
const ny = account('adacct_3001', 'USD', 'America/New_York', 'ChatGPT Ads US (sandbox)');
const la = account('act_1001', 'USD', 'America/Los_Angeles', 'Busy West');
const berlin = account('adacct_berlin', 'EUR', 'Europe/Berlin', 'Berlin');
const kolkata = account('adacct_in', 'INR', 'Asia/Kolkata', 'Kolkata');
const santiago = account('adacct_cl', 'CLP', 'America/Santiago', 'Santiago');

before(async () => {
  sandbox = await startOpenAIAdsSandbox({ now: clock, seed: 7, historyDays: 400, pageSize: 40 });
  sandbox.addAccount({
    id: 'act_1001',
    name: 'Busy West',
    currency_code: 'USD',
    timezone: 'America/Los_Angeles',
    adGroups: Array.from({ length: 8 }, (_, i) => ({
      id: `adgrp_10${i}`,
      name: `Ad group ${i}`,
      campaignId: `cmpn_10${i % 2}`,
      campaignName: `Campaign ${i % 2}`,
    })),
  });
  sandbox.addAccount({ id: 'adacct_berlin', name: 'Berlin', currency_code: 'EUR', timezone: 'Europe/Berlin' });
  sandbox.addAccount({ id: 'adacct_in', name: 'Kolkata', currency_code: 'INR', timezone: 'Asia/Kolkata' });
  sandbox.addAccount({ id: 'adacct_cl', name: 'Santiago', currency_code: 'CLP', timezone: 'America/Santiago' });
  sandbox.addAccount({ id: 'adacct_paused', name: 'Paused one', status: 'paused' });
  for (const a of sandbox.accounts()) keys[a.id] = sandbox.issueKey({ accountId: a.id });
  client = createOpenAIAdsClient({ baseUrl: sandbox.url, sleep: fakeSleep, now: clock, timeoutMs: 2000, maxBodyBytes: 1024 * 1024 });
});
after(() => sandbox.close());
beforeEach(() => {
  sandbox.scenario.reset();
  sleeps.length = 0;
  sandbox.requests.length = 0;
  nowMs = START;
});

async function read(a: PlatformAdAccount, since: string, until: string, key = keys[a.externalId]!) {
  const rows: PlatformSpendRow[] = [];
  let batches = 0;
  for await (const batch of client.readSpend({ secret: key }, a, { since, until })) {
    assert.ok(batch.length > 0 && batch.length <= 40, 'a batch is one page of rows');
    batches++;
    rows.push(...batch);
  }
  return { rows, batches };
}

/** Rows as comparable text, sorted, so the client's answer equals the sandbox's ground truth exactly. */
const asText = (rows: (PlatformSpendRow | OpenAIAdsSandboxSpendRow)[]) =>
  rows.map((r) => `${r.date} ${r.hour} ${r.adSetId} ${r.campaignId} ${r.spendMicros}`).sort();
const truth = (a: PlatformAdAccount, since: string, until: string) => asText(sandbox.hourlySpend(a.externalId, { since, until }));

async function failure(promise: Promise<unknown>): Promise<PlatformError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof PlatformError) return error;
    throw error;
  }
  assert.fail('expected a PlatformError');
}

const drain = async (a: PlatformAdAccount, since: string, until: string, c = client, signal?: AbortSignal) => {
  for await (const _ of c.readSpend({ secret: keys[a.externalId]! }, a, { since, until }, signal));
};
const insightsCalls = () => sandbox.requests.filter((r) => r.path === '/v1/ad_account/insights');
const windowOf = (query: string) => JSON.parse(new URLSearchParams(query).get('time_ranges[]')!) as { start: number; end: number };
const describe = (a: PlatformAdAccount, key = keys[a.externalId]!) =>
  client.describeAccount({ secret: key }, { externalId: a.externalId, accessVia: null });

test('spend values: decimals of the account currency to micros exactly; anything else refused', () => {
  const cases: [unknown, bigint][] = [
    [18.42, 18_420_000n],
    ['18.42', 18_420_000n],
    [0, 0n],
    [0.29, 290_000n],
    [0.01, 10_000n],
    [12.3, 12_300_000n],
    [5, 5_000_000n],
    [123456789012.34, 123_456_789_012_340_000n],
  ];
  for (const [value, micros] of cases) assert.equal(spendToMicros(value, 'major', 2), micros, String(value));
  for (const value of [
    0.1 + 0.2,
    12.345,
    '12.345',
    -1,
    -0.01,
    1e21,
    1e-7,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    '12,34',
    ' 1',
    '1e3',
    '',
    '.5',
    '1.',
    '+1',
    null,
    true,
    {},
    [1],
  ])
    assert.equal(spendToMicros(value, 'major', 2), undefined, JSON.stringify(value) ?? String(value));
  assert.equal(spendToMicros(1.234, 'major', 3), 1_234_000n, 'a three-decimal currency');
  assert.deepEqual([spendDecimals('USD'), spendDecimals('KWD'), spendDecimals('JPY'), spendDecimals('XXZ')], [2, 3, 2, 2]);
  assert.equal(spendToMicros(1234, 'cents', 2), 12_340_000n);
  assert.equal(spendToMicros('1234', 'cents', 2), 12_340_000n);
  assert.equal(spendToMicros(12_340_000, 'micros', 2), 12_340_000n);
  assert.equal(spendToMicros('123456789012345678901', 'micros', 2), 123_456_789_012_345_678_901n);
  for (const unit of ['cents', 'micros'] as const)
    for (const value of [12.5, -1, '12.5', '1e3', 2 ** 53, '']) assert.equal(spendToMicros(value, unit, 2), undefined, `${unit} ${value}`);
  assert.equal(decimalToMicros('0.000001', 6), 1n);
  assert.equal(decimalToMicros('1000000000000000', 2), undefined, 'more than 15 integer digits');
  // What the sandbox writes reads back to the same cents, through JSON, in every unit.
  fc.assert(
    // Up to $9 billion: micros past 2^53 cannot come exactly as a JSON number.
    fc.property(fc.integer({ min: 0, max: 9 * 10 ** 11 }), (cents) => {
      for (const unit of ['major', 'cents', 'micros'] as const)
        assert.equal(spendToMicros(JSON.parse(centsToSpendJson(cents, unit)), unit, 2), BigInt(cents) * 10_000n);
    }),
    { numRuns: 3000 },
  );
});

test('API keys: what a bearer token can be, 20 to 512 characters', () => {
  for (const key of ['sk-ads-sandbox-abcdefghijklmnop', 'sk-proj-AbC_123-xyz.456~789+/0123', `${'a'.repeat(510)}==`, 'a'.repeat(20)])
    assert.ok(isOpenAIAdsKey(key), key.slice(0, 30));
  for (const key of [
    '',
    'short-key',
    'sk-ads key with spaces 0123',
    'sk-ads\n0123456789abcdefghij',
    'a'.repeat(513),
    'sk-ads-ünicode-0123456789',
    'a=bcdefghijklmnopqrstuvwxyz',
    42,
    null,
  ])
    assert.ok(!isOpenAIAdsKey(key), String(key).slice(0, 30));
});

test('rate-limit durations: "1m30.5s" and friends, both ways', () => {
  assert.deepEqual(['1s', '6m0s', '20ms', '1m30.5s', '2h3m4s', '1.5s'].map(parseGoDuration), [1000, 360_000, 20, 90_500, 7_384_000, 1500]);
  for (const text of ['', '1', 's', '1x', '1s ', '-1s', 'm1s']) assert.equal(parseGoDuration(text), undefined, text);
  for (const ms of [0, 20, 999, 1000, 90_500, 3_600_000, 7_384_000]) assert.equal(parseGoDuration(goDuration(ms)), ms, String(ms));
});

test("ad account: GET /v1/ad_account is the key's one account; list and describe say the same", async () => {
  assert.deepEqual(await describe(ny), ny);
  assert.deepEqual(await client.listAccounts({ secret: keys.adacct_berlin! }), [berlin]);
  // OPENAI_ADS_URL may be the documented base URL, /v1 included.
  const documented = createOpenAIAdsClient({ baseUrl: `${sandbox.url}/v1/` });
  assert.deepEqual(await documented.listAccounts({ secret: keys.adacct_berlin! }), [berlin]);
  assert.deepEqual(await describe({ ...ny, externalId: 'adacct_paused' }), {
    externalId: 'adacct_paused',
    name: 'Paused one',
    currency: 'USD',
    timeZone: 'America/New_York',
    active: false,
    status: 'paused',
    accessVia: null,
  });
  assert.deepEqual(
    sandbox.requests.map((r) => `${r.method} ${r.path}`),
    ['GET /v1/ad_account', 'GET /v1/ad_account', 'GET /v1/ad_account', 'GET /v1/ad_account'],
  );
  // Another account's id with this key: the key cannot read it.
  const other = await failure(client.describeAccount({ secret: keys.adacct_3001! }, { externalId: 'adacct_berlin', accessVia: null }));
  assert.equal(other.kind, 'missing_permission');
  assert.match(other.message, /reads the OpenAI Ads account adacct_3001, not adacct_berlin/);
  // A bad id or a key that cannot be one is refused before any request, the key never echoed.
  const before = sandbox.requests.length;
  for (const id of ['', 'act 1', '../ad_account', 'a'.repeat(65)]) {
    assert.equal(
      (await failure(client.describeAccount({ secret: keys.adacct_3001! }, { externalId: id, accessVia: null }))).kind,
      'invalid_request',
      id,
    );
  }
  for (const key of ['sk-too-short', 'sk-ads has spaces in it 0123456789', '']) {
    const error = await failure(client.listAccounts({ secret: key }));
    assert.equal(error.kind, 'invalid_request');
    assert.match(error.message, /20 to 512 characters/);
    assert.ok(key === '' || !error.message.includes(key));
  }
  assert.equal(sandbox.requests.length, before);
});

test('spend over a week: one unix_range per local day on its midnights, hourly, ad-group rows, every page followed; equal to the sandbox hour by hour', async () => {
  const { rows, batches } = await read(la, '2026-11-16', '2026-11-22');
  assert.deepEqual(asText(rows), truth(la, '2026-11-16', '2026-11-22'));
  assert.ok(
    rows.length > 1000 && rows.every((r) => r.hour !== null && r.campaignName.startsWith('Campaign') && r.adSetName.startsWith('Ad group')),
  );
  assert.equal(new Set(rows.map((r) => `${r.date} ${r.hour} ${r.adSetId}`)).size, rows.length, 'nothing twice');
  assert.ok(
    sandbox.requests.every((r) => r.path === '/v1/ad_account/insights'),
    "only Insights: the engine's describeAccount checked the key's account at the start of the run",
  );
  const calls = insightsCalls();
  assert.equal(batches, calls.length, 'each page is one batch');
  const windows = new Map<number, number>();
  for (const call of calls) {
    const q = new URLSearchParams(call.query);
    assert.equal(q.get('time_granularity'), 'hourly');
    assert.equal(q.get('aggregation_level'), 'ad_group');
    assert.deepEqual(q.getAll('fields[]'), ['campaign.id', 'campaign.name', 'ad_group.id', 'ad_group.name', 'ad_group.spend']);
    const w = windowOf(call.query);
    windows.set(w.start, w.end);
  }
  // Midnight in Los Angeles is 08:00 UTC in November (PST), a day apart.
  assert.deepEqual(
    [...windows].map(([s, e]) => `${new Date(s * 1000).toISOString()} ${(e - s) / 3600}`),
    Array.from({ length: 7 }, (_, i) => `2026-11-${16 + i}T08:00:00.000Z 24`),
  );
  assert.ok(calls.length > 7 * 4, 'several pages a day (40 rows a page)');
  assert.ok(calls.some((c) => new URLSearchParams(c.query).has('after')));
});

test('spend today: the hours that are over, the window ending on the last whole hour (never in the future)', async () => {
  const { rows } = await read(ny, '2026-11-26', '2026-11-28');
  const today = rows.filter((r) => r.date === '2026-11-27');
  assert.equal(Math.max(...today.map((r) => r.hour!)), 12, '13:30 in New York: 12:00–13:00 is the last hour over');
  assert.ok(!rows.some((r) => r.date === '2026-11-28'), 'tomorrow is not asked for');
  assert.deepEqual(asText(rows), truth(ny, '2026-11-26', '2026-11-28'));
  const last = windowOf(insightsCalls().at(-1)!.query);
  assert.equal(new Date(last.end * 1000).toISOString(), '2026-11-27T18:00:00.000Z');
  // A minute after the hour, that hour is left for the next sync (our clock may run ahead of OpenAI's).
  nowMs = Date.parse('2026-11-27T18:00:30Z');
  sandbox.requests.length = 0;
  await read(ny, '2026-11-27', '2026-11-27');
  assert.equal(new Date(windowOf(insightsCalls().at(-1)!.query).end * 1000).toISOString(), '2026-11-27T17:00:00.000Z');
});

test('spend, DST: 23 hourly buckets when clocks spring forward, 25 (the repeated hour twice) when they fall back, in the account zone', async () => {
  const spring = await read(la, '2026-03-07', '2026-03-09');
  assert.deepEqual(asText(spring.rows), truth(la, '2026-03-07', '2026-03-09'));
  const springDay = new Set(spring.rows.filter((r) => r.date === '2026-03-08').map((r) => r.hour));
  assert.equal(springDay.size, 23);
  assert.ok(!springDay.has(2));
  const fall = await read(la, '2026-11-01', '2026-11-01');
  assert.deepEqual(asText(fall.rows), truth(la, '2026-11-01', '2026-11-01'));
  assert.ok(
    fall.rows.filter((r) => r.hour === 1).length > new Set(fall.rows.map((r) => r.adSetId)).size,
    'hour 1 twice for some ad groups',
  );
  const spans = insightsCalls()
    .map((c) => windowOf(c.query))
    .map((w) => (w.end - w.start) / 3600);
  assert.ok(spans.includes(23) && spans.includes(25));
  const europe = await read(berlin, '2026-03-29', '2026-03-29');
  assert.deepEqual(asText(europe.rows), truth(berlin, '2026-03-29', '2026-03-29'));
  assert.ok(!europe.rows.some((r) => r.hour === 2));
  // Santiago skips midnight on 2026-09-06: that day begins at 01:00 and has 23 hours.
  const chile = await read(santiago, '2026-09-05', '2026-09-06');
  assert.deepEqual(asText(chile.rows), truth(santiago, '2026-09-05', '2026-09-06'));
  const skipped = new Set(chile.rows.filter((r) => r.date === '2026-09-06').map((r) => r.hour));
  assert.equal(skipped.size, 23);
  assert.ok(!skipped.has(0));
});

test('spend in a half-hour zone: Kolkata hours begin at :30 UTC, each placed on its local hour', async () => {
  const { rows } = await read(kolkata, '2026-11-20', '2026-11-21');
  assert.deepEqual(asText(rows), truth(kolkata, '2026-11-20', '2026-11-21'));
  assert.equal(new Set(rows.map((r) => r.hour)).size, 24);
  assert.equal(new Date(windowOf(insightsCalls()[0]!.query).start * 1000).toISOString(), '2026-11-19T18:30:00.000Z');
});

test('spend: a restated day is read with its new figures', async () => {
  const sum = (rows: PlatformSpendRow[]) => rows.reduce((s, r) => s + r.spendMicros, 0n);
  const first = await read(ny, '2026-11-15', '2026-11-15');
  sandbox.scenario.restate('adacct_3001', '2026-11-15', 2);
  const second = await read(ny, '2026-11-15', '2026-11-15');
  assert.equal(sum(second.rows), 2n * sum(first.rows));
  assert.deepEqual(asText(second.rows), truth(ny, '2026-11-15', '2026-11-15'));
});

test('spend without hours: whole-day buckets come as days (hour null); a refused hourly request falls back to daily', async () => {
  const byDay = (a: PlatformAdAccount, since: string, until: string) => {
    const days = new Map<string, bigint>();
    for (const r of sandbox.hourlySpend(a.externalId, { since, until })) {
      const k = `${r.date} null ${r.adSetId} ${r.campaignId}`;
      days.set(k, (days.get(k) ?? 0n) + r.spendMicros);
    }
    return [...days].map(([k, micros]) => `${k} ${micros}`).sort();
  };
  for (const mode of ['daily', 'refuse'] as const) {
    sandbox.scenario.reset();
    sandbox.requests.length = 0;
    sandbox.scenario.withholdHours('act_1001', mode);
    const { rows } = await read(la, '2026-11-20', '2026-11-27');
    assert.ok(rows.length > 0 && rows.every((r) => r.hour === null), mode);
    assert.deepEqual(asText(rows), byDay(la, '2026-11-20', '2026-11-27'), mode);
    const granularities = insightsCalls().map((c) => new URLSearchParams(c.query).get('time_granularity'));
    assert.equal(granularities[0], 'hourly');
    if (mode === 'refuse')
      assert.ok(
        granularities.slice(1).every((g) => g === 'daily'),
        'asked once, then daily for the rest',
      );
  }
});

test('spend: a range out of order or not of real dates is refused before any request', async () => {
  assert.equal((await failure(read(ny, '2026-11-21', '2026-11-20'))).kind, 'invalid_request');
  assert.equal((await failure(read(ny, '2026-02-30', '2026-03-01'))).kind, 'invalid_request');
  assert.equal(sandbox.requests.length, 0);
});

test("errors: each status has its failure kind; the admin sees OpenAI's message, the code says status/code", async () => {
  const cases: [number, Record<string, unknown>, string][] = [
    [
      401,
      { message: 'Incorrect API key provided: sk-ads***abcd.', type: 'invalid_request_error', code: 'invalid_api_key' },
      'needs_reconnect',
    ],
    [403, { message: 'This ad account is suspended.', type: 'permission_error', code: 'account_suspended' }, 'missing_permission'],
    [
      400,
      { message: 'Invalid value for aggregation_level.', type: 'invalid_request_error', param: 'aggregation_level', code: 'invalid_value' },
      'invalid_request',
    ],
    [404, { message: 'Ad account not found.', type: 'invalid_request_error', code: 'not_found' }, 'invalid_request'],
    [422, { message: 'time_ranges must be within 5 years', type: 'invalid_request_error', code: null }, 'invalid_request'],
    [
      429,
      {
        message: 'You exceeded your current quota, please check your plan and billing details.',
        type: 'insufficient_quota',
        code: 'insufficient_quota',
      },
      'platform_error',
    ],
    [500, { message: 'The server had an error while processing your request.', type: 'server_error', code: null }, 'platform_error'],
    [503, { message: 'The engine is currently overloaded, please try again later.', type: 'server_error', code: null }, 'platform_error'],
  ];
  for (const [status, body, kind] of cases) {
    sandbox.scenario.fail('adacct_3001', { status, body });
    const error = await failure(describe(ny));
    assert.equal(error.kind, kind, `${status} ${body.code}`);
    assert.equal(error.platformMessage, body.message);
    assert.equal(error.platformCode, body.code ? `${status}/${body.code}` : String(status));
  }
  assert.deepEqual(sleeps, [], 'a spent quota is not waited out as a throttle');
  // An error body of another shape still fails by its status, without words.
  sandbox.scenario.fail('adacct_3001', { status: 403, body: { message: 42 as never } });
  const odd = await failure(describe(ny));
  assert.deepEqual([odd.kind, odd.platformMessage], ['missing_permission', undefined]);
  // The sandbox's own key states.
  const revoked = sandbox.issueKey({ accountId: 'adacct_3001' });
  sandbox.scenario.revokeKey(revoked);
  const reconnect = await failure(read(ny, '2026-11-20', '2026-11-20', revoked));
  assert.deepEqual([reconnect.kind, reconnect.platformCode], ['needs_reconnect', '401/invalid_api_key']);
  assert.match(reconnect.platformMessage ?? '', /^Incorrect API key provided/);
  assert.ok(!`${reconnect.message} ${reconnect.platformMessage}`.includes(revoked));
  assert.equal((await failure(client.listAccounts({ secret: 'sk-ads-never-issued-0123456789' }))).kind, 'needs_reconnect');
  // A failure on the Insights call, after the account check passed.
  sandbox.scenario.fail('adacct_3001', {
    status: 400,
    body: { message: 'Unknown field: ad_group.spend', param: 'fields', code: 'unknown_field' },
    on: 'insights',
  });
  const refused = await failure(read(ny, '2026-11-20', '2026-11-20'));
  assert.deepEqual([refused.kind, refused.platformCode], ['invalid_request', '400/unknown_field']);
});

test('throttles: a 429 is waited out for its retry-after through the injected sleep, then the read resumes where it was, nothing twice', async () => {
  sandbox.scenario.throttle('act_1001', 90_000);
  const { rows } = await read(la, '2026-11-20', '2026-11-20');
  assert.deepEqual(sleeps, [90_000]);
  assert.deepEqual(asText(rows), truth(la, '2026-11-20', '2026-11-20'));
  // Throttled mid-read: the page asked for again is the same page, with the same cursor.
  sleeps.length = 0;
  sandbox.requests.length = 0;
  const got: PlatformSpendRow[] = [];
  let pages = 0;
  for await (const batch of client.readSpend({ secret: keys.act_1001! }, la, { since: '2026-11-18', until: '2026-11-19' })) {
    got.push(...batch);
    if (++pages === 3) sandbox.scenario.throttle('act_1001', 30_000);
  }
  assert.deepEqual(sleeps, [30_000]);
  assert.deepEqual(asText(got), truth(la, '2026-11-18', '2026-11-19'));
  const calls = insightsCalls().map((c) => c.query);
  const retried = calls.findIndex((q, i) => i > 0 && q === calls[i - 1]);
  assert.equal(retried, 4, 'the fourth page is asked twice: once throttled, once answered');
  assert.equal(calls.filter((q, i) => i > 0 && q === calls[i - 1]).length, 1);
  // Without retry-after, the reset header says how long; without either, a minute.
  sleeps.length = 0;
  sandbox.scenario.fail('adacct_3001', {
    status: 429,
    body: { message: 'Slow down', code: 'rate_limit_exceeded' },
    headers: { 'x-ratelimit-reset-requests': '6.5s' },
  });
  sandbox.scenario.fail('adacct_3001', { status: 429, body: { message: 'Slow down', code: 'rate_limit_exceeded' } });
  assert.deepEqual(await describe(ny), ny);
  assert.deepEqual(sleeps, [6500, 60_000]);
  // retry-after-ms first, then retry-after as seconds or as a date.
  sleeps.length = 0;
  nowMs = START;
  const limited = (headers: Record<string, string>) =>
    sandbox.scenario.fail('adacct_3001', { status: 429, body: { message: 'Slow down', code: 'rate_limit_exceeded' }, headers });
  limited({ 'retry-after-ms': '1500', 'retry-after': '9' });
  limited({ 'retry-after': new Date(START + 1500 + 7500).toUTCString() });
  assert.deepEqual(await describe(ny), ny);
  assert.deepEqual(sleeps, [1500, 7500]);
});

test('throttles: longer than SPEND_THROTTLE_WAIT_MAX_MS (one or added up) → PlatformThrottled with the wait, no sleeping it out', async () => {
  sandbox.scenario.throttle('adacct_3001', 10 * 60_000);
  let error: unknown;
  try {
    await read(ny, '2026-11-20', '2026-11-21');
  } catch (e) {
    error = e;
  }
  assert.ok(error instanceof PlatformThrottled, String(error));
  assert.equal(error.retryAfterMs, 10 * 60_000);
  assert.match(error.platformMessage ?? '', /^Rate limit reached for requests/);
  assert.deepEqual(sleeps, []);
  sandbox.scenario.reset();
  sandbox.scenario.fail(
    'adacct_3001',
    { status: 429, body: { message: 'Rate limit reached', code: 'rate_limit_exceeded' }, headers: { 'retry-after': '50' } },
    3,
  );
  await assert.rejects(describe(ny), (e: unknown) => e instanceof PlatformThrottled && e.retryAfterMs === 50_000);
  assert.deepEqual(sleeps, [50_000, 50_000], `at most ${SPEND_THROTTLE_WAIT_MAX_MS} ms waited in one call`);
});

test('throttles: a 429 that asks for no wait (0, 1 ms, a past date) waits 1 s; 10 retries of one request, then PlatformThrottled', async () => {
  const past = new Date(START - 60_000).toUTCString();
  const asks: Record<string, string>[] = [
    { 'retry-after': '0' },
    { 'retry-after-ms': '0' },
    { 'retry-after-ms': '1' },
    { 'retry-after': past },
  ];
  for (const headers of asks) {
    const what = JSON.stringify(headers);
    sandbox.scenario.reset();
    sandbox.requests.length = 0;
    sleeps.length = 0;
    nowMs = START;
    sandbox.scenario.fail('adacct_3001', { status: 429, body: { message: 'Slow down', code: 'rate_limit_exceeded' }, headers }, 1000);
    await assert.rejects(
      describe(ny),
      (e: unknown) => e instanceof PlatformThrottled && e.retryAfterMs === 1000 && e.platformMessage === 'Slow down',
      what,
    );
    assert.equal(sandbox.requests.length, 11, `${what}: the first request and 10 retries, no more`);
    assert.deepEqual(sleeps, Array(10).fill(1000), `${what}: each retry waited 1 s`);
  }
  // A throttle that passes within the retries is waited out as usual.
  sandbox.scenario.reset();
  sleeps.length = 0;
  sandbox.scenario.fail('adacct_3001', { status: 429, body: { message: 'Slow down' }, headers: { 'retry-after': '0' } }, 3);
  assert.deepEqual(await describe(ny), ny);
  assert.deepEqual(sleeps, [1000, 1000, 1000]);
});

test('hostile answers: HTML, wrong types, missing fields, cut-off JSON, a redirect, a huge or slow body, a cursor loop, a bad spend or bucket → bad_answer, never a crash or a key in a message', async () => {
  const slowClient = createOpenAIAdsClient({
    baseUrl: sandbox.url,
    sleep: fakeSleep,
    now: clock,
    timeoutMs: 300,
    maxBodyBytes: 1024 * 1024,
  });
  const errors: PlatformError[] = [];
  const expect = async (promise: Promise<unknown>, what: string, pattern?: RegExp) => {
    const error = await failure(promise);
    assert.equal(error.kind, 'bad_answer', `${what}: ${error.message}`);
    if (pattern) assert.match(error.message, pattern, what);
    errors.push(error);
  };
  for (const kind of ['html', 'wrong_types', 'missing_fields', 'truncated', 'redirect', 'huge', 'slow'] as const) {
    sandbox.scenario.malformed('adacct_3001', kind);
    await expect(slowClient.describeAccount({ secret: keys.adacct_3001! }, { externalId: 'adacct_3001', accessVia: null }), kind);
    sandbox.scenario.malformed('adacct_3001', kind, 'insights');
    await expect(drain(ny, '2026-11-20', '2026-11-20', slowClient), `${kind} (insights)`);
  }
  sandbox.scenario.malformed('adacct_3001', 'cursor_loop');
  await expect(drain(ny, '2026-11-20', '2026-11-20'), 'cursor_loop', /points to a page it gave already/);
  sandbox.scenario.malformed('adacct_3001', 'spend_precision');
  await expect(drain(ny, '2026-11-20', '2026-11-20'), 'spend_precision', /spend \(a decimal of at most 2 places\)/);
  sandbox.scenario.malformed('adacct_3001', 'spend_unit');
  await expect(drain(ny, '2026-11-20', '2026-11-20'), 'spend_unit', /"spend_micros".*major/);
  sandbox.scenario.malformed('adacct_3001', 'shifted_hours');
  await expect(drain(ny, '2026-11-20', '2026-11-20'), 'shifted_hours', /start_time and end_time/);
  // A message that quotes the key is cleaned before anyone sees it.
  sandbox.scenario.fail('adacct_3001', { status: 400, body: { message: `Malformed key ${keys.adacct_3001}` } });
  const quoting = await failure(describe(ny));
  assert.equal(quoting.platformMessage, 'Malformed key [redacted]');
  errors.push(quoting);
  const closed = await startOpenAIAdsSandbox();
  const gone = closed.url;
  await closed.close();
  const unreachable = await failure(createOpenAIAdsClient({ baseUrl: gone }).listAccounts({ secret: keys.adacct_3001! }));
  assert.equal(unreachable.kind, 'unreachable');
  errors.push(unreachable);
  for (const error of errors)
    for (const key of Object.values(keys))
      assert.ok(!`${error.message} ${error.platformMessage} ${error.stack}`.includes(key), error.message);
  // The sandbox still serves: nothing was left broken.
  assert.deepEqual(await describe(ny), ny);
});

test('a server of our own: gzip is read, a zip bomb refused, a gateway HTML 502 is a platform error, an empty budget waits for its reset', async () => {
  const accountJson = JSON.stringify({
    id: 'adacct_3001',
    name: 'ChatGPT Ads US (sandbox)',
    timezone: 'America/New_York',
    currency_code: 'USD',
  });
  const bomb = gzipSync(Buffer.from(JSON.stringify({ id: 'adacct_3001', name: 'x'.repeat(2 * 1024 * 1024) })));
  const seen: { encoding: string; authorization: string }[] = [];
  let answer = 'gzip';
  const server = http.createServer((req, res) => {
    seen.push({ encoding: String(req.headers['accept-encoding']), authorization: String(req.headers.authorization) });
    if (answer === 'gzip' || answer === 'bomb') {
      const body = answer === 'gzip' ? gzipSync(accountJson) : bomb;
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-encoding': 'gzip', 'content-length': body.length });
      return res.end(body);
    }
    if (answer === '502') {
      res.writeHead(502, { 'content-type': 'text/html' });
      return res.end('<html><body>502 Bad Gateway</body></html>');
    }
    res.writeHead(200, { 'content-type': 'application/json', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '2.5s' });
    // An empty day of two pages: the second is asked after the first said the budget is spent.
    if (!req.url!.startsWith('/v1/ad_account/insights')) return res.end(accountJson);
    const more = !req.url!.includes('after=');
    res.end(JSON.stringify({ object: 'list', data: [], has_more: more, last_id: more ? 'page-1' : null }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const own = createOpenAIAdsClient({
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
      sleep: fakeSleep,
      now: clock,
      maxBodyBytes: 1024 * 1024,
    });
    const key = 'sk-ads-own-server-0123456789';
    assert.deepEqual(await own.listAccounts({ secret: key }), [ny], 'no status: taken as active');
    answer = 'bomb';
    const big = await failure(own.listAccounts({ secret: key }));
    assert.equal(big.kind, 'bad_answer');
    assert.match(big.message, /larger than 1048576 bytes/);
    answer = '502';
    const gateway = await failure(own.listAccounts({ secret: key }));
    assert.deepEqual([gateway.kind, gateway.platformCode], ['platform_error', '502']);
    answer = 'empty budget';
    sleeps.length = 0;
    await own.describeAccount({ secret: key }, { externalId: 'adacct_3001', accessVia: null });
    assert.deepEqual(sleeps, [], 'one call: nothing to wait for');
    await drain(ny, '2026-11-20', '2026-11-20', own);
    assert.deepEqual(sleeps, [2500], 'the call after an answer with no budget left waits for the reset first');
    assert.ok(
      seen.every((s) => s.encoding.includes('gzip')),
      'compression is asked for',
    );
    assert.equal(seen[0]!.authorization, `Bearer ${key}`, 'the key travels as a bearer token');
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test("a row naming a currency: the account's (any case, or null) is read; another one → bad_answer, nothing handed on", async () => {
  let extra: Record<string, unknown> = {};
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://own');
    res.writeHead(200, { 'content-type': 'application/json' });
    const { start } = JSON.parse(url.searchParams.get('time_ranges[]')!) as { start: number };
    const row = {
      id: `start=${start}`,
      start_time: start,
      end_time: start + 3600,
      campaign_id: 'cmpn_1',
      campaign_name: 'Campaign',
      ad_group_id: 'adgrp_1',
      ad_group_name: 'Ad group',
      spend: 12.5,
      ...extra,
    };
    res.end(JSON.stringify({ object: 'list', data: [row], has_more: false }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const own = createOpenAIAdsClient({
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      sleep: fakeSleep,
      now: clock,
    });
    const rowsWith = async (fields: Record<string, unknown>) => {
      extra = fields;
      const rows: PlatformSpendRow[] = [];
      for await (const batch of own.readSpend({ secret: 'sk-ads-own-server-0123456789' }, ny, { since: '2026-11-20', until: '2026-11-20' }))
        rows.push(...batch);
      return rows;
    };
    for (const fields of [{}, { currency: 'USD' }, { currency_code: 'USD' }, { currency: 'usd', currency_code: null }]) {
      const rows = await rowsWith(fields);
      assert.deepEqual(
        rows.map((r) => `${r.date} ${r.hour} ${r.spendMicros}`),
        ['2026-11-20 0 12500000'],
        JSON.stringify(fields),
      );
    }
    for (const [fields, named] of [
      [{ currency: 'EUR' }, '"currency" is EUR'],
      [{ currency_code: 'eur' }, '"currency_code" is eur'],
      [{ currency: 'USD', currency_code: 'GBP' }, '"currency_code" is GBP'],
      [{ currency_code: 840 }, '"currency_code" is something else'],
      [{ currency: '' }, '"currency" is something else'],
    ] as const) {
      let handedOn = 0;
      const error = await failure(
        (async () => {
          extra = fields;
          for await (const batch of own.readSpend({ secret: 'sk-ads-own-server-0123456789' }, ny, {
            since: '2026-11-20',
            until: '2026-11-20',
          }))
            handedOn += batch.length;
        })(),
      );
      assert.equal(error.kind, 'bad_answer', JSON.stringify(fields));
      assert.ok(error.message.includes(`${named}, not the account's USD`), error.message);
      assert.equal(handedOn, 0);
    }
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test("abort: a read stops with the caller's reason, also while it waits out a throttle", async () => {
  const controller = new AbortController();
  const reason = new Error('shutting down');
  const reading = (async () => {
    for await (const _ of client.readSpend({ secret: keys.act_1001! }, la, { since: '2026-11-01', until: '2026-11-07' }, controller.signal))
      controller.abort(reason);
  })();
  await assert.rejects(reading, (e) => e === reason);
  sandbox.scenario.throttle('adacct_3001', 90_000);
  sandbox.requests.length = 0;
  const waiting = new AbortController();
  const reading2 = drain(ny, '2026-11-20', '2026-11-20', createOpenAIAdsClient({ baseUrl: sandbox.url, now: clock }), waiting.signal);
  while (sandbox.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  await new Promise((resolve) => setTimeout(resolve, 50));
  waiting.abort(reason);
  await assert.rejects(reading2, (e) => e === reason);
});

test('scenario control over HTTP: POST /__sandbox/scenario drives the same scenarios, JSON only', async () => {
  const post = (body: unknown) =>
    fetch(`${sandbox.url}/__sandbox/scenario`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  assert.equal(
    (await post({ action: 'fail', accountId: 'adacct_berlin', status: 401, body: { message: 'Expired', code: 'invalid_api_key' } })).status,
    200,
  );
  assert.equal((await failure(describe(berlin))).kind, 'needs_reconnect');
  const issued = (await (await post({ action: 'issueKey', accountId: 'adacct_berlin' })).json()) as { key: string };
  assert.ok(isOpenAIAdsKey(issued.key));
  assert.deepEqual(await client.listAccounts({ secret: issued.key }), [berlin]);
  assert.equal((await post({ action: 'revokeKey', key: issued.key })).status, 200);
  assert.equal((await failure(client.listAccounts({ secret: issued.key }))).kind, 'needs_reconnect');
  assert.equal((await post({ action: 'throttle', accountId: 'adacct_berlin', ms: 5000 })).status, 200);
  assert.deepEqual(await describe(berlin), berlin);
  assert.deepEqual(sleeps, [5000]);
  assert.equal((await post({ action: 'explode' })).status, 400);
  assert.equal((await post({ action: 'malformed', accountId: 'adacct_3001', kind: 'bogus' })).status, 400);
  assert.equal((await post({ action: 'fail', accountId: 'adacct_3001', status: 200, body: {} })).status, 400);
  assert.equal((await post({ action: 'issueKey', accountId: 'nobody' })).status, 400);
  const raw = (body: string, type?: string) =>
    fetch(`${sandbox.url}/__sandbox/scenario`, { method: 'POST', ...(type ? { headers: { 'content-type': type } } : {}), body });
  assert.equal((await raw('not json', 'application/json')).status, 400);
  // What any web page can send to loopback without a preflight (text/plain, a form) is refused and changes nothing.
  const fail3001 = JSON.stringify({ action: 'fail', accountId: 'adacct_3001', status: 401, body: { message: 'Expired' } });
  assert.equal((await raw(fail3001)).status, 415);
  assert.equal((await raw(fail3001, 'application/x-www-form-urlencoded')).status, 415);
  assert.deepEqual(await describe(ny), ny);
});

test('the sandbox speaks the documented wire format: list pages with first_id, last_id, has_more; rate-limit headers; OpenAI error bodies', async () => {
  const get = (path: string, key?: string) => fetch(`${sandbox.url}${path}`, key ? { headers: { authorization: `Bearer ${key}` } } : {});
  const start = Date.parse('2026-11-20T05:00:00Z') / 1000;
  const query = new URLSearchParams({ time_granularity: 'hourly', aggregation_level: 'ad_group', limit: '2' });
  for (const f of ['campaign.id', 'ad_group.id', 'ad_group.spend']) query.append('fields[]', f);
  query.append('time_ranges[]', JSON.stringify({ type: 'unix_range', start, end: start + 7200 }));
  const answer = await get(`/v1/ad_account/insights?${query}`, keys.adacct_3001);
  assert.equal(answer.status, 200);
  assert.equal(answer.headers.get('x-ratelimit-limit-requests'), '600');
  assert.ok(Number(answer.headers.get('x-ratelimit-remaining-requests')) > 0);
  const page = (await answer.json()) as {
    object: string;
    data: Record<string, unknown>[];
    count: number;
    first_id: string;
    last_id: string;
    has_more: boolean;
  };
  assert.equal(page.object, 'list');
  assert.equal(page.count, 2);
  assert.equal(page.has_more, true);
  assert.deepEqual(Object.keys(page.data[0]!), ['id', 'start_time', 'end_time', 'campaign_id', 'ad_group_id', 'spend']);
  assert.equal(page.first_id, page.data[0]!.id);
  assert.equal(page.last_id, page.data[1]!.id);
  assert.match(page.last_id, /^start=\d+:end=\d+:entity_id=adgrp_/);
  const noKey = await get('/v1/ad_account');
  assert.equal(noKey.status, 401);
  assert.deepEqual(Object.keys(((await noKey.json()) as { error: object }).error), ['message', 'type', 'param', 'code']);
  const future = new URLSearchParams(query);
  future.set('time_ranges[]', JSON.stringify({ type: 'unix_range', start: START / 1000 - 1800, end: START / 1000 + 1800 }));
  const refused = (await (await get(`/v1/ad_account/insights?${future}`, keys.adacct_3001)).json()) as { error: { param: string } };
  assert.equal(refused.error.param, 'time_ranges');
  const wide = new URLSearchParams(query);
  wide.set('time_ranges[]', JSON.stringify({ type: 'unix_range', start, end: start + 26 * 3600 }));
  assert.equal(
    ((await (await get(`/v1/ad_account/insights?${wide}`, keys.adacct_3001)).json()) as { error: { code: string } }).error.code,
    'hourly_range_too_wide',
  );
  assert.equal((await get('/v1/campaigns', keys.adacct_3001)).status, 404);
});
