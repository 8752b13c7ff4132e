// Contract tests of the Meta wire client against the loopback sandbox (no network): paging, async
// report runs, the hourly breakdown and DST days, each Graph error code's failure kind, throttles
// waited out with a fake sleep, hostile answers, the OAuth exchanges, and exact spend decimals.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { after, before, beforeEach, test } from 'node:test';
import fc from 'fast-check';
import { SPEND_THROTTLE_WAIT_MAX_MS } from '../../src/policy.ts';
import { PlatformError, PlatformThrottled, type PlatformAdAccount, type PlatformSpendRow } from '../../src/integrations/ad-platform.ts';
import { createMetaClient, META_SCOPES } from '../../src/integrations/meta/client.ts';
import { startMetaSandbox, type MetaSandbox, type SandboxSpendRow } from '../../src/integrations/meta/sandbox.ts';
import { formatSpend, parseSpendMicros } from '../../src/integrations/meta/spend.ts';
import { hourLabel, parseHourLabel } from '../../src/integrations/meta/wire.ts';

// 18:30 UTC: 10:30 in Los Angeles, 19:30 in Berlin.
const START = Date.parse('2026-11-27T18:30:00Z');
let nowMs = START;
let sandbox: MetaSandbox;
let token: string;
const sleeps: number[] = [];
/** The client's sleep: records the wait and moves the sandbox's clock instead of waiting. */
const fakeSleep = async (ms: number) => {
  sleeps.push(ms);
  nowMs += ms;
};
let client: ReturnType<typeof createMetaClient>;
const la: PlatformAdAccount = {
  externalId: 'act_1001',
  name: 'West Coast (sandbox)',
  currency: 'USD',
  timeZone: 'America/Los_Angeles',
  active: true,
  status: 'ACTIVE',
  accessVia: null,
};
const busy: PlatformAdAccount = { ...la, externalId: 'act_1004', name: 'Busy' };
const berlin: PlatformAdAccount = {
  externalId: 'act_1002',
  name: 'Europe (sandbox)',
  currency: 'EUR',
  timeZone: 'Europe/Berlin',
  active: true,
  status: 'ACTIVE',
  accessVia: null,
};

before(async () => {
  sandbox = await startMetaSandbox({ now: () => new Date(nowMs), seed: { seed: 7, historyDays: 400 } });
  sandbox.addAccount({ id: 'act_1003', name: 'Closed one', currency: 'USD', timezone_name: 'America/New_York', account_status: 101 });
  sandbox.addAccount({
    id: 'act_1004',
    name: 'Busy',
    currency: 'USD',
    timezone_name: 'America/Los_Angeles',
    adSets: Array.from({ length: 8 }, (_, i) => ({
      id: `1004${i}`,
      name: `Ad set ${i}`,
      campaignId: `10049${i % 2}`,
      campaignName: `Campaign ${i % 2}`,
    })),
  });
  token = sandbox.issueToken();
  client = createMetaClient({ graphUrl: sandbox.url, sleep: fakeSleep, timeoutMs: 2000, maxBodyBytes: 1024 * 1024 });
});
after(() => sandbox.close());
beforeEach(() => {
  sandbox.scenario.reset();
  sleeps.length = 0;
  sandbox.requests.length = 0;
  nowMs = START;
});

async function read(
  account: PlatformAdAccount,
  since: string,
  until: string,
  accessToken = token,
): Promise<{ rows: PlatformSpendRow[]; batches: number }> {
  const rows: PlatformSpendRow[] = [];
  let batches = 0;
  for await (const batch of client.readSpend({ secret: accessToken }, account, { since, until })) {
    assert.ok(batch.length > 0 && batch.length <= 500, 'a batch is one page of rows');
    batches++;
    rows.push(...batch);
  }
  return { rows, batches };
}

const key = (r: { date: string; hour: number | null; adSetId: string }) => `${r.date} ${r.hour} ${r.adSetId}`;
/** Rows as comparable text, sorted, so the client's answer equals the sandbox's ground truth exactly. */
const asText = (rows: (PlatformSpendRow | SandboxSpendRow)[]) => rows.map((r) => `${key(r)} ${r.campaignId} ${r.spendMicros}`).sort();

async function failure(promise: Promise<unknown>): Promise<PlatformError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof PlatformError) return error;
    throw error;
  }
  assert.fail('expected a PlatformError');
}

const insightsCalls = () => sandbox.requests.filter((r) => r.path.endsWith('/insights'));

test('spend decimals: Meta strings to micros and back, exactly', () => {
  const cases: [string, bigint][] = [
    ['12.34', 12_340_000n],
    ['0', 0n],
    ['0.01', 10_000n],
    ['0.000001', 1n],
    ['5', 5_000_000n],
    ['999999999999999.999999', 999_999_999_999_999_999_999n],
    ['0.29', 290_000n],
  ];
  for (const [text, micros] of cases) assert.equal(parseSpendMicros(text), micros, text);
  assert.equal(formatSpend(12_340_000n), '12.34');
  assert.equal(formatSpend(12_000_000n), '12');
  assert.equal(formatSpend(1n), '0.000001');
  for (const text of [
    '',
    '-1',
    '1e3',
    '1.',
    '.5',
    '1.1234567',
    ' 1',
    '1 ',
    '1,00',
    'NaN',
    '0x10',
    '１',
    '1.2.3',
    '+1',
    '1000000000000000',
  ]) {
    assert.equal(parseSpendMicros(text), undefined, JSON.stringify(text));
  }
  fc.assert(
    fc.property(fc.bigInt({ min: 0n, max: 10n ** 15n - 1n }), fc.stringMatching(/^\d{0,6}$/), (units, fraction) => {
      const text = fraction === '' ? String(units) : `${units}.${fraction}`;
      const micros = units * 1_000_000n + BigInt(fraction.padEnd(6, '0'));
      assert.equal(parseSpendMicros(text), micros);
      assert.equal(parseSpendMicros(formatSpend(micros)), micros);
    }),
    { numRuns: 2000 },
  );
  fc.assert(
    fc.property(fc.bigInt({ min: 0n, max: 10n ** 21n - 1n }), (micros) => parseSpendMicros(formatSpend(micros)) === micros),
    { numRuns: 2000 },
  );
});

test('hour labels: "05:00:00 - 05:59:59" is hour 5, nothing else is an hour', () => {
  for (let h = 0; h < 24; h++) assert.equal(parseHourLabel(hourLabel(h)), h);
  assert.equal(hourLabel(0), '00:00:00 - 00:59:59');
  for (const text of ['24:00:00 - 24:59:59', '05:00:00 - 06:59:59', '5:00:00 - 5:59:59', '05:00:00', '05:00:00 - 05:59:59 ', ''])
    assert.equal(parseHourLabel(text), undefined, text);
});

test('ad accounts: /me/adaccounts is followed page by page; currency, zone and status come through', async () => {
  const many = await startMetaSandbox({ seed: { generate: { accounts: 130, adSetsPerAccount: 1 } } });
  try {
    const listing = createMetaClient({ graphUrl: many.url, sleep: fakeSleep });
    const accounts = await listing.listAccounts({ secret: many.issueToken() });
    assert.equal(accounts.length, 130);
    assert.equal(new Set(accounts.map((a) => a.externalId)).size, 130);
    assert.equal(many.requests.filter((r) => r.path === '/v26.0/me/adaccounts').length, 2, 'limit=100: two pages');
    assert.deepEqual(accounts[0], {
      externalId: 'act_2000001',
      name: 'Generated account 1',
      currency: 'USD',
      timeZone: 'America/Los_Angeles',
      active: true,
      status: 'ACTIVE',
      accessVia: null,
    });
    assert.equal(accounts[1]!.currency, 'EUR');
    assert.equal(accounts[1]!.timeZone, 'Europe/Berlin');
  } finally {
    await many.close();
  }
  const limited = sandbox.issueToken({ accounts: ['act_1002'] });
  assert.deepEqual(
    (await client.listAccounts({ secret: limited })).map((a) => a.externalId),
    ['act_1002'],
  );
});

test('describe: /act_{id}?fields=… gives the account; a closed one is not active; a bad id is refused before any request', async () => {
  assert.deepEqual(await client.describeAccount({ secret: token }, { externalId: 'act_1002', accessVia: null }), berlin);
  assert.deepEqual(await client.describeAccount({ secret: token }, { externalId: 'act_1003', accessVia: null }), {
    externalId: 'act_1003',
    name: 'Closed one',
    currency: 'USD',
    timeZone: 'America/New_York',
    active: false,
    status: 'CLOSED',
    accessVia: null,
  });
  const before = sandbox.requests.length;
  for (const id of ['1001', 'act_', 'act_12a', 'act_1001/insights', '../act_1001']) {
    const error = await failure(client.describeAccount({ secret: token }, { externalId: id, accessVia: null }));
    assert.equal(error.kind, 'invalid_request', id);
  }
  assert.equal(sandbox.requests.length, before);
  const unknown = await failure(client.describeAccount({ secret: token }, { externalId: 'act_999', accessVia: null }));
  assert.equal(unknown.kind, 'invalid_request');
  assert.equal(unknown.platformCode, '100/33');
  assert.match(unknown.platformMessage ?? '', /does not exist/);
});

test('spend, up to a week: synchronous Insights pages, each page one batch, equal to the sandbox hour by hour', async () => {
  const { rows, batches } = await read(busy, '2026-11-20', '2026-11-26');
  assert.deepEqual(asText(rows), asText(sandbox.hourlySpend('act_1004', { since: '2026-11-20', until: '2026-11-26' })));
  assert.ok(rows.length > 1000, 'eight ad sets, most hours');
  const pages = insightsCalls();
  assert.ok(
    pages.length >= 3 && pages.every((r) => r.method === 'GET' && r.path === '/v26.0/act_1004/insights'),
    'read synchronously, over more than one page',
  );
  assert.equal(batches, pages.length);
  assert.ok(rows.every((r) => r.hour !== null && r.campaignName.startsWith('Campaign') && r.adSetName.startsWith('Ad set')));
});

test('spend, today: only the hours so far, the current one partly', async () => {
  const { rows } = await read(la, '2026-11-26', '2026-11-27');
  const today = rows.filter((r) => r.date === '2026-11-27');
  assert.ok(today.length > 0);
  assert.equal(Math.max(...today.map((r) => r.hour!)), 10, '10:30 in Los Angeles');
  assert.deepEqual(asText(rows), asText(sandbox.hourlySpend('act_1001', { since: '2026-11-26', until: '2026-11-27' })));
});

test('spend, longer than a week: an async report run, polled until "Job Completed", then read page by page', async () => {
  const { rows } = await read(berlin, '2026-10-01', '2026-10-30');
  assert.deepEqual(asText(rows), asText(sandbox.hourlySpend('act_1002', { since: '2026-10-01', until: '2026-10-30' })));
  const calls = sandbox.requests.map((r) => `${r.method} ${r.path.replace(/\d{13}/, 'RUN')}`);
  assert.equal(calls[0], 'POST /v26.0/act_1002/insights');
  assert.deepEqual(
    calls.filter((c) => c === 'GET /v26.0/RUN'),
    ['GET /v26.0/RUN', 'GET /v26.0/RUN'],
    'polled until done',
  );
  assert.ok(calls.filter((c) => c === 'GET /v26.0/RUN/insights').length > 1);
  assert.ok(sleeps.length >= 2 && sleeps.every((ms) => ms > 0), 'waits between polls, through the injected sleep');
});

test('spend: "too much data" (100/1504018) on a synchronous read switches to a report run, nothing twice', async () => {
  sandbox.scenario.fail('act_1001', {
    code: 100,
    error_subcode: 1504018,
    message: 'Please reduce the amount of data you are asking for, then retry your request',
    is_transient: false,
  });
  const { rows } = await read(la, '2026-11-10', '2026-11-12');
  assert.deepEqual(asText(rows), asText(sandbox.hourlySpend('act_1001', { since: '2026-11-10', until: '2026-11-12' })));
  assert.equal(new Set(rows.map(key)).size, rows.length);
  assert.ok(sandbox.requests.some((r) => r.method === 'POST'));
});

test('spend: "too much data" after rows were handed on is a temporary failure, not a second copy through a report run', async () => {
  const error = await failure(
    (async () => {
      for await (const _ of client.readSpend({ secret: token }, busy, { since: '2026-11-20', until: '2026-11-26' })) {
        sandbox.scenario.fail('act_1004', {
          code: 100,
          error_subcode: 1504018,
          message: 'Please reduce the amount of data you are asking for, then retry your request',
        });
      }
    })(),
  );
  assert.deepEqual([error.kind, error.platformCode], ['platform_error', '100/1504018']);
  assert.ok(!sandbox.requests.some((r) => r.method === 'POST'));
});

test('spend: a report run that ends "Job Failed" or "Job Skipped" is a platform error', async () => {
  for (const status of ['Job Failed', 'Job Skipped'] as const) {
    sandbox.scenario.failReport('act_1001', status);
    const error = await failure(read(la, '2026-09-01', '2026-09-30'));
    assert.equal(error.kind, 'platform_error');
    assert.equal(error.platformCode, status);
  }
});

test('spend, DST: 23 local hours when clocks spring forward (no 02:00), 24 labels when they fall back, per the account zone', async () => {
  const hours = (rows: { date: string; hour: number | null }[], date: string) =>
    [...new Set(rows.filter((r) => r.date === date).map((r) => r.hour))].sort((a, b) => a! - b!);
  const spring = await read(la, '2026-03-07', '2026-03-09');
  assert.deepEqual(asText(spring.rows), asText(sandbox.hourlySpend('act_1001', { since: '2026-03-07', until: '2026-03-09' })));
  assert.equal(hours(spring.rows, '2026-03-08').length, 23);
  assert.ok(!hours(spring.rows, '2026-03-08').includes(2));
  assert.equal(hours(spring.rows, '2026-03-09').length, 24);
  const fall = await read(la, '2026-11-01', '2026-11-01');
  assert.equal(hours(fall.rows, '2026-11-01').length, 24);
  const europe = await read(berlin, '2026-03-29', '2026-03-29');
  assert.deepEqual(asText(europe.rows), asText(sandbox.hourlySpend('act_1002', { since: '2026-03-29', until: '2026-03-29' })));
  assert.ok(!hours(europe.rows, '2026-03-29').includes(2));
  assert.equal(hours(europe.rows, '2026-03-29').length, 23);
});

test('spend: a restated day is read with its new figures', async () => {
  const beforeRestating = await read(la, '2026-11-15', '2026-11-15');
  sandbox.scenario.restate('act_1001', '2026-11-15', 2);
  const afterRestating = await read(la, '2026-11-15', '2026-11-15');
  const sum = (rows: PlatformSpendRow[]) => rows.reduce((s, r) => s + r.spendMicros, 0n);
  assert.equal(sum(afterRestating.rows), 2n * sum(beforeRestating.rows));
  assert.deepEqual(asText(afterRestating.rows), asText(sandbox.hourlySpend('act_1001', { since: '2026-11-15', until: '2026-11-15' })));
});

test('spend: an account whose hours are withheld comes as whole days (hour null), each the sum of its hours', async () => {
  sandbox.scenario.withholdHours('act_1004');
  const { rows } = await read(busy, '2026-11-20', '2026-11-27');
  assert.ok(rows.length > 0 && rows.every((r) => r.hour === null));
  const days = new Map<string, bigint>();
  for (const r of sandbox.hourlySpend('act_1004', { since: '2026-11-20', until: '2026-11-27' }))
    days.set(
      `${r.date} null ${r.adSetId} ${r.campaignId}`,
      (days.get(`${r.date} null ${r.adSetId} ${r.campaignId}`) ?? 0n) + r.spendMicros,
    );
  assert.deepEqual(asText(rows), [...days].map(([k, micros]) => `${k} ${micros}`).sort());
});

test('spend: rows in another currency than the account was connected with are refused (invalid_request)', async () => {
  const error = await failure(read({ ...la, currency: 'EUR' }, '2026-11-20', '2026-11-20'));
  assert.equal(error.kind, 'invalid_request');
  assert.match(error.message, /USD/);
  assert.equal((await failure(read(la, '2026-11-21', '2026-11-20'))).kind, 'invalid_request');
});

test('errors: each Graph error code has its failure kind; the admin sees error_user_msg, else message', async () => {
  const cases: [Record<string, unknown> & { code: number }, string, string | undefined][] = [
    [
      {
        code: 190,
        error_subcode: 463,
        message: 'Error validating access token: Session has expired',
        error_user_msg: 'Log in again to continue.',
      },
      'needs_reconnect',
      'Log in again to continue.',
    ],
    [{ code: 190, message: 'Invalid OAuth access token.' }, 'needs_reconnect', 'Invalid OAuth access token.'],
    [{ code: 102, message: 'Session key invalid' }, 'needs_reconnect', undefined],
    [{ code: 200, message: '(#200) Requires ads_read permission' }, 'missing_permission', '(#200) Requires ads_read permission'],
    [{ code: 10, message: '(#10) Application does not have permission for this action' }, 'missing_permission', undefined],
    [
      { code: 294, message: '(#294) Managing advertisements requires the extended permission ads_management' },
      'missing_permission',
      undefined,
    ],
    [
      { code: 100, error_subcode: 1487534, message: 'Invalid parameter', error_user_title: 'Too much', error_user_msg: 'Reduce the data.' },
      'invalid_request',
      'Reduce the data.',
    ],
    [{ code: 1, message: 'An unknown error occurred' }, 'platform_error', undefined],
    [{ code: 2, message: 'Service temporarily unavailable' }, 'platform_error', undefined],
    [{ code: 100, message: 'Some transient thing', is_transient: true }, 'platform_error', undefined],
  ];
  for (const [body, kind, words] of cases) {
    sandbox.scenario.fail('act_1001', { type: 'OAuthException', ...body } as never);
    const error = await failure(client.describeAccount({ secret: token }, { externalId: 'act_1001', accessVia: null }));
    assert.equal(error.kind, kind, JSON.stringify(body));
    assert.equal(error.platformMessage, words ?? body.message);
    assert.equal(error.platformCode, body.error_subcode === undefined ? String(body.code) : `${body.code}/${body.error_subcode}`);
  }
  // The same kinds from the sandbox's own token states.
  const expired = sandbox.issueToken();
  sandbox.scenario.expireToken(expired);
  const reconnect = await failure(client.describeAccount({ secret: expired }, { externalId: 'act_1001', accessVia: null }));
  assert.deepEqual([reconnect.kind, reconnect.platformCode], ['needs_reconnect', '190/463']);
  const revoked = sandbox.issueToken();
  sandbox.scenario.revokePermission(revoked);
  assert.equal((await failure(read(la, '2026-11-20', '2026-11-20', revoked))).kind, 'missing_permission');
  assert.equal((await failure(client.listAccounts({ secret: 'EAAnot-a-token' }))).kind, 'needs_reconnect');
  const timedOut = sandbox.issueToken({ expiresInS: 60 });
  nowMs += 61_000;
  assert.equal((await failure(client.listAccounts({ secret: timedOut }))).kind, 'needs_reconnect');
});

test('throttles (4, 17, 613, 80000, 80004): waited out through the injected sleep, then the call goes through', async () => {
  for (const code of [4, 17, 613, 80000, 80004]) {
    sleeps.length = 0;
    sandbox.scenario.fail('act_1001', { code, message: 'User request limit reached', is_transient: true });
    assert.deepEqual(await client.describeAccount({ secret: token }, { externalId: 'act_1001', accessVia: null }), la, String(code));
    assert.deepEqual(sleeps, [60_000], 'no usage header: a minute');
  }
  // The usage header's estimated_time_to_regain_access (minutes) sets the wait: 90 s throttled → "2 minutes".
  sleeps.length = 0;
  sandbox.scenario.throttle('act_1001', 90_000);
  const { rows } = await read(la, '2026-11-20', '2026-11-20');
  assert.ok(rows.length > 0);
  assert.deepEqual(sleeps, [120_000]);
});

test('throttles: longer than SPEND_THROTTLE_WAIT_MAX_MS (one or added up) → PlatformThrottled with the wait, no sleeping it out', async () => {
  sandbox.scenario.throttle('act_1001', 10 * 60_000);
  let error: unknown;
  try {
    await read(la, '2026-11-20', '2026-11-21');
  } catch (e) {
    error = e;
  }
  assert.ok(error instanceof PlatformThrottled, String(error));
  assert.equal(error.retryAfterMs, 10 * 60_000);
  assert.equal(error.platformMessage, 'There have been too many calls from this ad-account. Please wait a bit and try again.');
  assert.deepEqual(sleeps, []);

  sandbox.scenario.reset();
  sandbox.scenario.fail('act_1001', { code: 613, message: 'Calls to this api have exceeded the rate limit.' }, 3);
  await assert.rejects(
    client.describeAccount({ secret: token }, { externalId: 'act_1001', accessVia: null }),
    (e: unknown) => e instanceof PlatformThrottled && e.retryAfterMs === 60_000,
  );
  assert.deepEqual(sleeps, [60_000, 60_000], `at most ${SPEND_THROTTLE_WAIT_MAX_MS} ms waited in one call`);
});

test('hostile answers: HTML, wrong types, missing fields, cut-off JSON, a redirect, a huge or slow body → bad_answer, never a crash or a token in a message', async () => {
  const slowClient = createMetaClient({ graphUrl: sandbox.url, sleep: fakeSleep, timeoutMs: 300, maxBodyBytes: 1024 * 1024 });
  const errors: PlatformError[] = [];
  for (const kind of ['html', 'wrong_types', 'missing_fields', 'truncated', 'redirect', 'huge', 'slow'] as const) {
    for (const call of [
      () => slowClient.describeAccount({ secret: token }, { externalId: 'act_1001', accessVia: null }),
      () =>
        (async () => {
          for await (const _ of slowClient.readSpend({ secret: token }, la, { since: '2026-11-20', until: '2026-11-20' }));
        })(),
      () =>
        (async () => {
          for await (const _ of slowClient.readSpend({ secret: token }, la, { since: '2026-10-01', until: '2026-10-20' }));
        })(),
    ]) {
      sandbox.scenario.malformed('act_1001', kind);
      const error = await failure(call());
      assert.equal(error.kind, 'bad_answer', `${kind}: ${error.message}`);
      errors.push(error);
    }
  }
  sandbox.scenario.malformed('me', 'html');
  errors.push(await failure(client.listAccounts({ secret: token })));
  // A Graph message that quotes the token is cleaned before anyone sees it.
  sandbox.scenario.fail('act_1001', { code: 100, message: `Malformed access token ${token}` });
  const quoting = await failure(client.describeAccount({ secret: token }, { externalId: 'act_1001', accessVia: null }));
  assert.equal(quoting.platformMessage, 'Malformed access token [redacted]');
  errors.push(quoting);
  const closed = await startMetaSandbox();
  const gone = closed.url;
  await closed.close();
  const unreachable = await failure(
    createMetaClient({ graphUrl: gone }).describeAccount({ secret: token }, { externalId: 'act_1001', accessVia: null }),
  );
  assert.equal(unreachable.kind, 'unreachable');
  errors.push(unreachable);
  for (const error of errors) assert.ok(!`${error.message} ${error.platformMessage} ${error.stack}`.includes(token), error.message);
  // The sandbox still serves: nothing was left broken.
  assert.deepEqual(await client.describeAccount({ secret: token }, { externalId: 'act_1001', accessVia: null }), la);
});

test('compressed answers: a gzip body is read; one that inflates past the cap is a bad_answer', async () => {
  const account = JSON.stringify({
    id: 'act_1001',
    name: 'West Coast (sandbox)',
    currency: 'USD',
    timezone_name: 'America/Los_Angeles',
    account_status: 1,
  });
  const bomb = gzipSync(Buffer.from(JSON.stringify({ id: 'act_1001', name: 'x'.repeat(2 * 1024 * 1024) })));
  const encodings: string[] = [];
  const server = http.createServer((req, res) => {
    encodings.push(String(req.headers['accept-encoding']));
    const body = req.url!.startsWith('/v26.0/act_1001?') ? gzipSync(account) : bomb;
    res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8', 'content-encoding': 'gzip', 'content-length': body.length });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const gzipped = createMetaClient({
      graphUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      sleep: fakeSleep,
      maxBodyBytes: 1024 * 1024,
    });
    assert.deepEqual(await gzipped.describeAccount({ secret: token }, { externalId: 'act_1001', accessVia: null }), la);
    assert.ok(bomb.length < 1024 * 1024);
    const error = await failure(gzipped.describeAccount({ secret: token }, { externalId: 'act_1002', accessVia: null }));
    assert.equal(error.kind, 'bad_answer');
    assert.match(error.message, /larger than 1048576 bytes/);
    assert.ok(
      encodings.every((e) => e.includes('gzip')),
      'compression is asked for',
    );
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test("abort: a read stops with the caller's reason, not a platform error", async () => {
  const controller = new AbortController();
  const reason = new Error('shutting down');
  const reading = (async () => {
    for await (const _ of client.readSpend({ secret: token }, busy, { since: '2026-11-01', until: '2026-11-07' }, controller.signal))
      controller.abort(reason);
  })();
  await assert.rejects(reading, (e) => e === reason);
  // Also while waiting out a throttle with the real sleep (90 s throttled: a 2-minute wait).
  sandbox.scenario.throttle('act_1001', 90_000);
  sandbox.requests.length = 0;
  const waiting = new AbortController();
  const reading2 = (async () => {
    for await (const _ of createMetaClient({ graphUrl: sandbox.url }).readSpend(
      { secret: token },
      la,
      { since: '2026-11-20', until: '2026-11-20' },
      waiting.signal,
    ));
  })();
  while (sandbox.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  await new Promise((resolve) => setTimeout(resolve, 50));
  waiting.abort(reason);
  await assert.rejects(reading2, (e) => e === reason);
});

test('OAuth: the dialog, its Continue button, the code exchange and the long-lived exchange', async () => {
  const redirectUri = 'http://127.0.0.1:3999/app/hub/ad-accounts/meta/callback';
  const authorize = new URL(
    client.authorizeUrl({ dialogUrl: sandbox.url, appId: sandbox.appId, redirectUri, state: 'st4te', scopes: META_SCOPES }),
  );
  assert.equal(authorize.pathname, '/v26.0/dialog/oauth');
  assert.deepEqual(Object.fromEntries(authorize.searchParams), {
    client_id: sandbox.appId,
    redirect_uri: redirectUri,
    state: 'st4te',
    scope: 'ads_read,business_management',
    response_type: 'code',
  });
  const page = await fetch(authorize);
  assert.equal(page.status, 200);
  const html = await page.text();
  assert.match(html, /<form method="post">/);
  assert.match(html, />Continue</);
  const form = new URLSearchParams(
    [...html.matchAll(/name="(\w+)" value="([^"]*)"/g)].map((m): [string, string] => [
      m[1]!,
      m[2]!.replace(/&#(\d+);/g, (_, c) => String.fromCharCode(Number(c))),
    ]),
  );
  form.set('decision', 'allow');
  const back = await fetch(authorize, { method: 'POST', body: form, redirect: 'manual' });
  assert.equal(back.status, 303);
  const callback = new URL(back.headers.get('location')!);
  assert.equal(`${callback.origin}${callback.pathname}`, redirectUri);
  assert.equal(callback.searchParams.get('state'), 'st4te');
  const code = callback.searchParams.get('code')!;

  const short = await client.exchangeCode({ appId: sandbox.appId, appSecret: sandbox.appSecret, redirectUri, code });
  assert.ok(short.expiresAt && Math.abs(short.expiresAt.getTime() - (Date.now() + 7200_000)) < 60_000);
  const reused = await failure(client.exchangeCode({ appId: sandbox.appId, appSecret: sandbox.appSecret, redirectUri, code }));
  assert.deepEqual([reused.kind, reused.platformCode], ['invalid_request', '100/36007']);
  assert.ok(!reused.message.includes(code) && !reused.message.includes(sandbox.appSecret));

  const long = await client.exchangeForLongLived({ appId: sandbox.appId, appSecret: sandbox.appSecret, accessToken: short.accessToken });
  assert.notEqual(long.accessToken, short.accessToken);
  assert.ok(long.expiresAt && long.expiresAt.getTime() - Date.now() > 59 * 86_400_000);
  assert.deepEqual(
    (await client.listAccounts({ secret: long.accessToken })).map((a) => a.externalId),
    ['act_1001', 'act_1002', 'act_1003', 'act_1004'],
  );

  const wrongSecret = await failure(
    client.exchangeForLongLived({ appId: sandbox.appId, appSecret: 'not-the-secret', accessToken: short.accessToken }),
  );
  assert.match(wrongSecret.platformMessage ?? '', /client secret/);
  assert.ok(!`${wrongSecret.message} ${wrongSecret.platformMessage}`.includes(short.accessToken));

  form.set('decision', 'deny');
  const denied = new URL((await fetch(authorize, { method: 'POST', body: form, redirect: 'manual' })).headers.get('location')!);
  assert.equal(denied.searchParams.get('error'), 'access_denied');
  assert.equal(denied.searchParams.get('code'), null);
});

test('scenario control over HTTP: POST /__sandbox/scenario drives the same scenarios', async () => {
  const post = (body: unknown) =>
    fetch(`${sandbox.url}/__sandbox/scenario`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  assert.equal((await post({ action: 'fail', accountId: 'act_1002', body: { code: 190, message: 'Expired' } })).status, 200);
  assert.equal(
    (await failure(client.describeAccount({ secret: token }, { externalId: 'act_1002', accessVia: null }))).kind,
    'needs_reconnect',
  );
  const issued = (await (await post({ action: 'issueToken', accounts: ['act_1001'] })).json()) as { token: string };
  assert.deepEqual(
    (await client.listAccounts({ secret: issued.token })).map((a) => a.externalId),
    ['act_1001'],
  );
  assert.equal((await post({ action: 'explode' })).status, 400);
  assert.equal((await post({ action: 'malformed', accountId: 'act_1001', kind: 'bogus' })).status, 400);
  assert.equal(
    (
      await fetch(`${sandbox.url}/__sandbox/scenario`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: 'not json',
      })
    ).status,
    400,
  );
  // What any web page can send to loopback without a preflight (text/plain, a form) is refused and changes nothing.
  const fail1001 = JSON.stringify({ action: 'fail', accountId: 'act_1001', body: { code: 190, message: 'Expired' } });
  assert.equal((await fetch(`${sandbox.url}/__sandbox/scenario`, { method: 'POST', body: fail1001 })).status, 415);
  assert.equal(
    (
      await fetch(`${sandbox.url}/__sandbox/scenario`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: fail1001,
      })
    ).status,
    415,
  );
  assert.equal((await client.describeAccount({ secret: token }, { externalId: 'act_1001', accessVia: null })).externalId, 'act_1001');
});
