// Contract tests of the Google Ads wire client against the loopback sandbox (no network): the OAuth
// web-server flow and refresh tokens, accounts reached directly and through manager accounts
// (login-customer-id), SearchStream spend equal to the sandbox's hours (DST days, exact micros),
// each error status's failure kind with Google's own words, quota errors waited out with a fake
// sleep (also inside a stream) without a row twice, hostile answers, abort, and the headers sent.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { after, before, beforeEach, test } from 'node:test';
import { SPEND_THROTTLE_WAIT_MAX_MS } from '../../src/policy.ts';
import { PlatformError, PlatformThrottled, type PlatformAdAccount, type PlatformSpendRow } from '../../src/integrations/ad-platform.ts';
import { createGoogleAdsClient, GOOGLE_ADS_SCOPES } from '../../src/integrations/google-ads/client.ts';
import { startGoogleAdsSandbox, type GoogleAdsSandbox, type SandboxSpendRow } from '../../src/integrations/google-ads/sandbox.ts';
import { durationMs } from '../../src/integrations/google-ads/wire.ts';

// 18:30 UTC: 13:30 in New York, 19:30 in Berlin, 05:30 the next day in Sydney.
const START = Date.parse('2026-11-27T18:30:00Z');
let nowMs = START;
let sandbox: GoogleAdsSandbox;
let refreshToken: string;
const sleeps: number[] = [];
/** The client's sleep: records the wait and moves the sandbox's clock instead of waiting. */
const fakeSleep = async (ms: number) => {
  sleeps.push(ms);
  nowMs += ms;
};
let client: ReturnType<typeof createGoogleAdsClient>;
const clientFor = (o: { maxBodyBytes?: number; developerToken?: string; timeoutMs?: number; sleep?: typeof fakeSleep } = {}) =>
  createGoogleAdsClient({
    adsUrl: sandbox.url,
    oauthUrl: sandbox.url,
    clientId: sandbox.clientId,
    clientSecret: sandbox.clientSecret,
    sleep: fakeSleep,
    now: () => new Date(nowMs),
    timeoutMs: 2000,
    maxBodyBytes: 1024 * 1024,
    ...o,
  });

const search: PlatformAdAccount = {
  externalId: '1234567890',
  name: 'Brewline Search (sandbox)',
  currency: 'USD',
  timeZone: 'America/New_York',
  active: true,
  status: 'ENABLED',
  accessVia: null,
};
const berlin: PlatformAdAccount = {
  externalId: '2345678901',
  name: 'Brewline Europe (sandbox)',
  currency: 'EUR',
  timeZone: 'Europe/Berlin',
  active: true,
  status: 'ENABLED',
  accessVia: null,
};
const sydney: PlatformAdAccount = {
  externalId: '3456789012',
  name: 'Brewline Sydney (sandbox, via manager)',
  currency: 'AUD',
  timeZone: 'Australia/Sydney',
  active: true,
  status: 'ENABLED',
  accessVia: '9876543210',
};
const busy: PlatformAdAccount = { ...search, externalId: '4444444444', name: 'Busy', timeZone: 'America/Los_Angeles' };
const london: PlatformAdAccount = {
  externalId: '7777777777',
  name: 'London, two managers down',
  currency: 'GBP',
  timeZone: 'Europe/London',
  active: true,
  status: 'ENABLED',
  accessVia: '9876543210',
};
const MANAGER = '9876543210';

before(async () => {
  sandbox = await startGoogleAdsSandbox({ now: () => new Date(nowMs), seed: 7, historyDays: 400, batchSize: 200 });
  sandbox.addCustomer({
    id: '4444444444',
    name: 'Busy',
    currency: 'USD',
    timeZone: 'America/Los_Angeles',
    adGroups: Array.from({ length: 8 }, (_, i) => ({
      id: `4444${i}`,
      name: `Ad group ${i}`,
      campaignId: `44449${i % 2}`,
      campaignName: `Campaign ${i % 2}`,
    })),
  });
  sandbox.addCustomer({ id: '5555555555', name: 'Closed one', status: 'CANCELED' });
  // A manager under the manager, with its own client: two levels below what the login reaches.
  sandbox.addCustomer({ id: '8888888888', name: 'Sub-manager', manager: true, direct: false, managerId: MANAGER });
  sandbox.addCustomer({
    id: '7777777777',
    name: london.name,
    currency: 'GBP',
    timeZone: 'Europe/London',
    direct: false,
    managerId: '8888888888',
  });
  refreshToken = sandbox.issueRefreshToken();
  client = clientFor();
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
  o: { secret?: string; using?: ReturnType<typeof createGoogleAdsClient>; onBatch?: (n: number) => void } = {},
): Promise<{ rows: PlatformSpendRow[]; batches: number }> {
  const rows: PlatformSpendRow[] = [];
  let batches = 0;
  for await (const batch of (o.using ?? client).readSpend({ secret: o.secret ?? refreshToken }, account, { since, until })) {
    assert.ok(batch.length > 0 && batch.length <= 200, 'a batch is one stream element of rows');
    batches++;
    rows.push(...batch);
    o.onBatch?.(batches);
  }
  return { rows, batches };
}

const key = (r: { date: string; hour: number | null; adSetId: string }) => `${r.date} ${r.hour} ${r.adSetId}`;
/** Rows as comparable text, sorted, so the client's answer equals the sandbox's ground truth exactly. */
const asText = (rows: (PlatformSpendRow | SandboxSpendRow)[]) => rows.map((r) => `${key(r)} ${r.campaignId} ${r.spendMicros}`).sort();
const truth = (account: PlatformAdAccount, since: string, until: string) =>
  asText(sandbox.hourlySpend(account.externalId, { since, until }));

async function failure(promise: Promise<unknown>): Promise<PlatformError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof PlatformError) return error;
    throw error;
  }
  assert.fail('expected a PlatformError');
}

const drain = async (iterable: AsyncIterable<unknown>) => {
  for await (const _ of iterable);
};
const streamCalls = () => sandbox.requests.filter((r) => r.path.endsWith('googleAds:searchStream'));
const tokenCalls = () => sandbox.requests.filter((r) => r.path === '/token');
const describe = (externalId: string, accessVia: string | null = null, secret = refreshToken) =>
  client.describeAccount({ secret }, { externalId, accessVia });

test('protobuf Durations ("30s", "1.5s") are milliseconds; anything else is not one', () => {
  assert.equal(durationMs('30s'), 30_000);
  assert.equal(durationMs('1.5s'), 1500);
  assert.equal(durationMs('0.000000001s'), 1);
  assert.equal(durationMs('0s'), 0);
  for (const text of ['30', '-1s', '1.s', 's', '1e3s', ' 1s', '1.0000000001s', 30]) assert.equal(durationMs(text), undefined, String(text));
});

test('OAuth: the consent page, its Continue button, the code exchange; a later consent without prompt=consent brings no refresh token', async () => {
  const redirectUri = 'http://127.0.0.1:3999/app/hub/ad-accounts/google/callback';
  const authorize = new URL(client.authorizeUrl({ accountsUrl: sandbox.url, clientId: sandbox.clientId, redirectUri, state: 'st4te' }));
  assert.equal(authorize.pathname, '/o/oauth2/v2/auth');
  assert.deepEqual(Object.fromEntries(authorize.searchParams), {
    client_id: sandbox.clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: 'https://www.googleapis.com/auth/adwords',
    access_type: 'offline',
    prompt: 'consent',
    state: 'st4te',
  });
  assert.deepEqual(GOOGLE_ADS_SCOPES, ['https://www.googleapis.com/auth/adwords']);
  const consent = async (url: URL, decision: 'allow' | 'deny') => {
    const page = await fetch(url);
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
    form.set('decision', decision);
    const back = await fetch(url, { method: 'POST', body: form, redirect: 'manual' });
    assert.equal(back.status, 303);
    const callback = new URL(back.headers.get('location')!);
    assert.equal(`${callback.origin}${callback.pathname}`, redirectUri);
    assert.equal(callback.searchParams.get('state'), 'st4te');
    return callback.searchParams;
  };

  const code = (await consent(authorize, 'allow')).get('code')!;
  const first = await client.exchangeCode({ redirectUri, code });
  assert.ok(first.refreshToken && first.accessToken);
  assert.equal(first.expiresAt.getTime(), nowMs + 3599_000);
  // The access token that came with the code is used: listing the accounts asks /token nothing.
  sandbox.requests.length = 0;
  assert.deepEqual(
    (await client.listAccounts({ secret: first.refreshToken })).map((a) => a.externalId),
    ['1234567890', '2345678901', '4444444444', '3456789012', '7777777777'],
  );
  assert.equal(tokenCalls().length, 0);

  const reused = await failure(client.exchangeCode({ redirectUri, code }));
  assert.deepEqual(
    [reused.kind, reused.platformCode, reused.platformMessage],
    ['invalid_request', 'invalid_grant', 'Malformed auth code.'],
  );
  assert.ok(!reused.message.includes(code) && !reused.message.includes(sandbox.clientSecret));

  // Google leaves the refresh token out of a consent given before unless prompt=consent asks again.
  const again = new URL(authorize);
  again.searchParams.delete('prompt');
  const second = await client.exchangeCode({ redirectUri, code: (await consent(again, 'allow')).get('code')! });
  assert.equal(second.refreshToken, undefined);
  assert.ok(second.accessToken);
  assert.ok((await client.exchangeCode({ redirectUri, code: (await consent(authorize, 'allow')).get('code')! })).refreshToken);
  sandbox.scenario.omitRefreshToken();
  assert.equal(
    (await client.exchangeCode({ redirectUri, code: (await consent(authorize, 'allow')).get('code')! })).refreshToken,
    undefined,
  );

  const denied = await consent(authorize, 'deny');
  assert.equal(denied.get('error'), 'access_denied');
  assert.equal(denied.get('code'), null);

  const wrongSecret = createGoogleAdsClient({
    adsUrl: sandbox.url,
    oauthUrl: sandbox.url,
    clientId: sandbox.clientId,
    clientSecret: 'not-the-secret',
  });
  const refused = await failure(wrongSecret.exchangeCode({ redirectUri, code: (await consent(authorize, 'allow')).get('code')! }));
  assert.deepEqual([refused.kind, refused.platformCode, refused.platformMessage], ['invalid_request', 'invalid_client', 'Unauthorized']);
  assert.ok(!`${refused.message} ${refused.stack}`.includes('not-the-secret'));
});

test('refresh tokens: one access token per refresh token until shortly before it expires; invalid_grant is needs_reconnect', async () => {
  const secret = sandbox.issueRefreshToken();
  const fresh = clientFor();
  await fresh.describeAccount({ secret }, { externalId: '1234567890', accessVia: null });
  await fresh.describeAccount({ secret }, { externalId: '2345678901', accessVia: null });
  assert.deepEqual(
    tokenCalls().map((r) => r.grantType),
    ['refresh_token'],
    'refreshed once, then kept in memory',
  );
  nowMs += 3599_000 - 4 * 60_000;
  await fresh.describeAccount({ secret }, { externalId: '1234567890', accessVia: null });
  assert.equal(tokenCalls().length, 2, 'renewed within five minutes of its expiry');

  // Google stops taking an access token early: the client gets a new one, once.
  sandbox.scenario.expireAccessTokens();
  assert.deepEqual(await fresh.describeAccount({ secret }, { externalId: '1234567890', accessVia: null }), search);
  assert.equal(tokenCalls().length, 3);

  sandbox.scenario.expireRefreshToken(secret);
  sandbox.scenario.expireAccessTokens();
  const expired = await failure(fresh.describeAccount({ secret }, { externalId: '1234567890', accessVia: null }));
  assert.deepEqual(
    [expired.kind, expired.platformCode, expired.platformMessage],
    ['needs_reconnect', 'invalid_grant', 'Token has been expired or revoked.'],
  );
  // A revoked login: its access token in memory answers UNAUTHENTICATED, and the refresh invalid_grant.
  const revoked = sandbox.issueRefreshToken();
  await fresh.listAccounts({ secret: revoked });
  sandbox.scenario.revokeRefreshToken(revoked);
  const gone = await failure(fresh.listAccounts({ secret: revoked }));
  assert.deepEqual([gone.kind, gone.platformCode], ['needs_reconnect', 'invalid_grant']);
  assert.equal((await failure(fresh.listAccounts({ secret: 'never-issued-token' }))).kind, 'needs_reconnect');
  for (const error of [expired, gone]) assert.ok(!`${error.message} ${error.platformMessage} ${error.stack}`.includes(secret));
  assert.equal((await failure(fresh.listAccounts({ secret: '' }))).kind, 'invalid_request');
});

test('accounts: accessible customers and the accounts below accessible managers (any depth), managers and cancelled ones left out', async () => {
  const accounts = await client.listAccounts({ secret: refreshToken });
  assert.deepEqual(accounts, [search, berlin, busy, sydney, london]);
  const managerCalls = streamCalls().filter((r) => r.query?.includes('FROM customer_client'));
  assert.deepEqual(
    managerCalls.map((r) => [r.path, r.loginCustomerId]),
    [[`/v26/customers/${MANAGER}/googleAds:searchStream`, MANAGER]],
    'one customer_client query on the manager, with login-customer-id',
  );
  assert.ok(
    streamCalls()
      .filter((r) => r.query?.endsWith('FROM customer'))
      .every((r) => r.loginCustomerId === null),
  );
  // A login that reaches only the manager is offered its clients, each with the way in.
  const viaManager = sandbox.issueRefreshToken({ managers: [MANAGER] });
  assert.deepEqual(await client.listAccounts({ secret: viaManager }), [sydney, london]);
  const one = sandbox.issueRefreshToken({ customers: ['2345678901'] });
  assert.deepEqual(await client.listAccounts({ secret: one }), [berlin]);
  assert.deepEqual(await client.listAccounts({ secret: sandbox.issueRefreshToken({ customers: [] }) }), []);
});

test('describe: directly, through a manager found by itself or named in accessVia; a manager, a cancelled or unreachable account is refused', async () => {
  assert.deepEqual(await describe('1234567890'), search);
  assert.deepEqual(await describe('3456789012'), sydney, 'the way in is found and returned');
  assert.deepEqual(await describe('7777777777'), london);
  sandbox.requests.length = 0;
  assert.deepEqual(await describe('3456789012', MANAGER), sydney);
  assert.deepEqual(
    sandbox.requests.map((r) => [r.path, r.loginCustomerId]),
    [['/v26/customers/3456789012/googleAds:searchStream', MANAGER]],
    'with accessVia: one request, login-customer-id set',
  );
  // A stored way in that no longer works (not a manager of the account): the right one is found again.
  assert.deepEqual(await describe('3456789012', '1234567890'), sydney);

  // Found by itself: only managers are tried as login-customer-id, and the first that reaches the account ends the search.
  sandbox.requests.length = 0;
  const twoManagers = sandbox.issueRefreshToken({ customers: ['1234567890', '2345678901'], managers: [MANAGER, '8888888888'] });
  assert.deepEqual(await describe('7777777777', null, twoManagers), london);
  assert.deepEqual(
    streamCalls().map((r) => [r.path.split('/')[3], r.loginCustomerId]),
    [
      ['1234567890', null],
      ['2345678901', null],
      [MANAGER, null],
      ['7777777777', MANAGER],
    ],
    'each accessible customer read as itself until a manager reaches the account; the second manager is never asked',
  );

  const manager = await failure(describe(MANAGER));
  assert.equal(manager.kind, 'invalid_request');
  assert.match(manager.message, /manager account/);
  const cancelled = await failure(describe('5555555555'));
  assert.deepEqual([cancelled.kind, cancelled.platformCode], ['missing_permission', 'PERMISSION_DENIED/CUSTOMER_NOT_ENABLED']);
  assert.match(cancelled.platformMessage ?? '', /not yet enabled or has been deactivated/);
  const limited = sandbox.issueRefreshToken({ customers: ['1234567890'] });
  const unreachable = await failure(describe('3456789012', null, limited));
  assert.equal(unreachable.kind, 'missing_permission');

  sandbox.requests.length = 0;
  for (const [id, via] of [
    ['123-456-7890', null],
    ['123456789', null],
    ['12345678901', null],
    ['1234567890/x', null],
    ['act_1234567890', null],
    ['3456789012', '987-654-3210'],
  ] as const) {
    assert.equal((await failure(describe(id, via))).kind, 'invalid_request', `${id} ${via}`);
  }
  assert.equal(sandbox.requests.length, 0, 'refused before any request');
});

test('a client account read without login-customer-id is PERMISSION_DENIED in Google’s words', async () => {
  const error = await failure(read({ ...sydney, accessVia: null }, '2026-11-20', '2026-11-20'));
  assert.deepEqual([error.kind, error.platformCode], ['missing_permission', 'PERMISSION_DENIED/USER_PERMISSION_DENIED']);
  assert.match(error.platformMessage ?? '', /login-customer-id/);
});

test('spend: SearchStream batches, each one batch, equal to the sandbox hour by hour, micros exact', async () => {
  const { rows, batches } = await read(busy, '2026-11-13', '2026-11-26');
  assert.deepEqual(asText(rows), truth(busy, '2026-11-13', '2026-11-26'));
  assert.ok(rows.length > 2000, 'eight ad groups, most hours');
  assert.ok(batches > 10, 'the stream comes in batches of 200 rows, each handed on as one');
  assert.ok(
    rows.some((r) => r.spendMicros % 10_000n !== 0n),
    'sub-cent micros come through exactly',
  );
  assert.ok(
    rows.some((r) => r.spendMicros === 0n),
    'a zero-cost row (impressions, no click) is a row of 0',
  );
  assert.ok(rows.every((r) => typeof r.spendMicros === 'bigint' && r.hour !== null && r.campaignName.startsWith('Campaign')));
  const calls = streamCalls().filter((r) => r.query?.includes('FROM ad_group'));
  assert.ok(streamCalls().every((r) => r.loginCustomerId === null && r.developerToken === null));
  // The windows cover the range once: no day asked twice; each window's campaign-level query asks the same days.
  const windows = calls.map((r) => /BETWEEN '([\d-]+)' AND '([\d-]+)'/.exec(r.query ?? '')!.slice(1));
  assert.deepEqual(
    streamCalls()
      .filter((r) => r.query?.includes('FROM campaign '))
      .map((r) => /BETWEEN '([\d-]+)' AND '([\d-]+)'/.exec(r.query ?? '')!.slice(1)),
    windows,
  );
  assert.equal(windows[0]![0], '2026-11-13');
  assert.equal(windows.at(-1)![1], '2026-11-26');
  for (let i = 1; i < windows.length; i++) assert.ok(windows[i]![0]! > windows[i - 1]![1]!);
  assert.equal(
    calls[0]!.query,
    "SELECT segments.date, segments.hour, campaign.id, campaign.name, ad_group.id, ad_group.name, metrics.cost_micros FROM ad_group WHERE segments.date BETWEEN '2026-11-13' AND '2026-11-19' AND campaign.advertising_channel_type NOT IN ('PERFORMANCE_MAX', 'SMART')",
  );
  assert.equal(
    streamCalls()[1]!.query,
    "SELECT segments.date, segments.hour, campaign.id, campaign.name, campaign.advertising_channel_type, metrics.cost_micros FROM campaign WHERE segments.date BETWEEN '2026-11-13' AND '2026-11-19' AND campaign.advertising_channel_type IN ('PERFORMANCE_MAX', 'SMART')",
  );
});

test('spend of campaigns without ad groups: Performance Max and Smart read at campaign level, each campaign as its own ad set, nothing counted twice', async () => {
  // Reached only by its own login (direct: false keeps it out of the default login's lists).
  sandbox.addCustomer({
    id: '6666666666',
    name: 'Mixed',
    currency: 'INR',
    timeZone: 'Asia/Kolkata',
    direct: false,
    adGroups: [
      { id: '66661', name: 'Near me [ws:ws_a]', campaignId: '666691', campaignName: 'Search' },
      { id: '66662', name: 'Brand', campaignId: '666691', campaignName: 'Search' },
    ],
    campaigns: [
      { id: '666692', name: 'PMax [ws:ws_b]', channelType: 'PERFORMANCE_MAX' },
      { id: '666693', name: 'Smart [ws:ws_c]', channelType: 'SMART' },
    ],
  });
  const mixed: PlatformAdAccount = { ...search, externalId: '6666666666', name: 'Mixed', currency: 'INR', timeZone: 'Asia/Kolkata' };
  const secret = sandbox.issueRefreshToken({ customers: ['6666666666'] });
  const { rows } = await read(mixed, '2026-11-10', '2026-11-16', { secret });
  assert.deepEqual(asText(rows), truth(mixed, '2026-11-10', '2026-11-16'));
  assert.deepEqual(
    [...new Set(rows.map((r) => `${r.campaignId} ${r.campaignName} | ${r.adSetId} ${r.adSetName}`))].sort(),
    [
      '666691 Search | 66661 Near me [ws:ws_a]',
      '666691 Search | 66662 Brand',
      '666692 PMax [ws:ws_b] | campaign:666692 PMax [ws:ws_b]',
      '666693 Smart [ws:ws_c] | campaign:666693 Smart [ws:ws_c]',
    ],
    "the Smart campaign's own ad group (6666930) is never read: its cost comes once, from the campaign",
  );
  assert.equal(new Set(rows.map(key)).size, rows.length, 'no row twice');
  // Every hour's total is the sandbox's, independently of how rows are keyed.
  const total = (list: { spendMicros: bigint }[]) => list.reduce((sum, r) => sum + r.spendMicros, 0n);
  assert.equal(total(rows), total(sandbox.hourlySpend('6666666666', { since: '2026-11-10', until: '2026-11-16' })));
  assert.ok(rows.some((r) => r.adSetId === 'campaign:666692' && r.spendMicros > 0n));

  // A quota error inside the campaign-level stream: waited out and only that query asked again.
  sleeps.length = 0;
  sandbox.requests.length = 0;
  sandbox.scenario.fail(
    '6666666666',
    { status: 'RESOURCE_EXHAUSTED', errorCode: { quotaError: 'RESOURCE_TEMPORARILY_EXHAUSTED' }, retryDelayMs: 20_000 },
    { afterBatches: 1, resource: 'campaign' },
  );
  const again = await read(mixed, '2026-11-10', '2026-11-16', { secret });
  assert.deepEqual(sleeps, [20_000]);
  assert.deepEqual(asText(again.rows), truth(mixed, '2026-11-10', '2026-11-16'));
  assert.equal(new Set(again.rows.map(key)).size, again.rows.length, 'no row twice');
  assert.deepEqual(
    streamCalls().map((r) => / FROM (\w+) /.exec(r.query!)![1]),
    ['ad_group', 'campaign', 'campaign'],
    'the ad_group answer was held, not asked again',
  );
});

test('spend: a campaign-level answer that overlaps the ad-group answer, or holds another campaign type, fails the window before any row is handed on', async () => {
  const server = await scriptedServer();
  try {
    const raw = createGoogleAdsClient({ adsUrl: server.url, oauthUrl: server.url, clientId: 'c', clientSecret: 's', sleep: fakeSleep });
    const adGroupRow = {
      segments: { date: '2026-11-20', hour: 5 },
      campaign: { id: '11', name: 'Search' },
      adGroup: { id: '111', name: 'Ad group' },
      metrics: { costMicros: '1000000' },
    };
    const campaignRow = (id: string, type: string) => ({
      segments: { date: '2026-11-20', hour: 5 },
      campaign: { id, name: 'Campaign', advertisingChannelType: type },
      metrics: { costMicros: '2000000' },
    });
    for (const [row, words] of [
      [campaignRow('11', 'PERFORMANCE_MAX'), /campaign 11 both by ad group and at campaign level/],
      [campaignRow('12', 'SEARCH'), /campaign\.advertising_channel_type/],
    ] as const) {
      server.ads.push(json(200, [{ results: [adGroupRow] }]), json(200, [{ results: [row] }]));
      let handedOn = 0;
      const error = await failure(
        (async () => {
          for await (const _ of raw.readSpend({ secret: 'refresh-overlap' }, search, { since: '2026-11-20', until: '2026-11-20' }))
            handedOn++;
        })(),
      );
      assert.equal(error.kind, 'bad_answer');
      assert.match(error.message, words);
      assert.equal(handedOn, 0);
    }
    // The same answers without the overlap are read: one ad group row, one campaign row.
    server.ads.push(json(200, [{ results: [adGroupRow] }]), json(200, [{ results: [campaignRow('12', 'SMART')] }]));
    const rows: PlatformSpendRow[] = [];
    for await (const batch of raw.readSpend({ secret: 'refresh-overlap' }, search, { since: '2026-11-20', until: '2026-11-20' }))
      rows.push(...batch);
    assert.deepEqual(
      rows.map((r) => [r.campaignId, r.adSetId, r.adSetName, r.spendMicros]),
      [
        ['11', '111', 'Ad group', 1_000_000n],
        ['12', 'campaign:12', 'Campaign', 2_000_000n],
      ],
    );
  } finally {
    await server.close();
  }
});

test('spend through a manager: login-customer-id on every read; a long range in windows of at most 30 days', async () => {
  const { rows } = await read(sydney, '2026-06-01', '2026-09-30', { using: clientFor({ maxBodyBytes: 32 * 1024 * 1024 }) });
  assert.deepEqual(asText(rows), truth(sydney, '2026-06-01', '2026-09-30'));
  const calls = streamCalls();
  assert.ok(calls.every((r) => r.loginCustomerId === MANAGER && r.path === '/v26/customers/3456789012/googleAds:searchStream'));
  for (const r of calls) {
    const [, since, until] = /BETWEEN '([\d-]+)' AND '([\d-]+)'/.exec(r.query!)!;
    assert.ok((Date.parse(until!) - Date.parse(since!)) / 86_400_000 + 1 <= 30, r.query!);
  }
  assert.equal(calls.length, 10, 'a week, then 30 days at a time (the bodies are small), by ad group and by campaign');
});

test('spend: a window whose answer passes the body cap is asked again in halves, nothing handed on twice', async () => {
  const small = clientFor({ maxBodyBytes: 256 * 1024 });
  const { rows } = await read(busy, '2026-11-01', '2026-11-14', { using: small });
  assert.deepEqual(asText(rows), truth(busy, '2026-11-01', '2026-11-14'));
  const spans = streamCalls().map((r) => {
    const [, since, until] = /BETWEEN '([\d-]+)' AND '([\d-]+)'/.exec(r.query!)!;
    return `${since}..${until}`;
  });
  assert.equal(spans[0], '2026-11-01..2026-11-07');
  assert.equal(spans[1], '2026-11-01..2026-11-04', 'the week was too large: half of it');
  // One day that alone passes the cap is a bad answer.
  const tiny = clientFor({ maxBodyBytes: 4 * 1024 });
  const error = await failure(read(busy, '2026-11-01', '2026-11-03', { using: tiny }));
  assert.equal(error.kind, 'bad_answer');
  assert.match(error.message, /larger than 4096 bytes/);
});

test('spend, today: only the hours so far, the current one partly', async () => {
  const { rows } = await read(search, '2026-11-26', '2026-11-27');
  const today = rows.filter((r) => r.date === '2026-11-27');
  assert.ok(today.length > 0);
  assert.equal(Math.max(...today.map((r) => r.hour!)), 13, '13:30 in New York');
  assert.deepEqual(asText(rows), truth(search, '2026-11-26', '2026-11-27'));
});

test('spend, DST: 23 local hours when clocks spring forward, per the account zone (New York, Berlin, Sydney)', async () => {
  const hours = (rows: PlatformSpendRow[], date: string) => new Set(rows.filter((r) => r.date === date).map((r) => r.hour));
  for (const [account, spring, fall] of [
    [search, '2026-03-08', '2026-11-01'],
    [berlin, '2026-03-29', '2026-10-25'],
    [sydney, '2026-10-04', '2026-04-05'],
  ] as const) {
    const { rows } = await read(account, spring, spring);
    assert.deepEqual(asText(rows), truth(account, spring, spring));
    assert.equal(hours(rows, spring).size, 23, `${account.timeZone} ${spring}`);
    assert.ok(!hours(rows, spring).has(2));
    const back = await read(account, fall, fall);
    assert.deepEqual(asText(back.rows), truth(account, fall, fall));
    assert.equal(hours(back.rows, fall).size, 24, `${account.timeZone} ${fall}`);
  }
});

test('spend: a restated day is read with its new figures', async () => {
  const sum = (rows: PlatformSpendRow[]) => rows.reduce((s, r) => s + r.spendMicros, 0n);
  const before = sum((await read(search, '2026-11-15', '2026-11-15')).rows);
  sandbox.scenario.restate('1234567890', '2026-11-15', 3);
  const after = await read(search, '2026-11-15', '2026-11-15');
  assert.ok(sum(after.rows) > 2n * before);
  assert.deepEqual(asText(after.rows), truth(search, '2026-11-15', '2026-11-15'));
  assert.equal((await failure(read(search, '2026-11-21', '2026-11-20'))).kind, 'invalid_request');
});

test('errors: each status has its failure kind; the admin sees the GoogleAdsError message, the code says status and reason', async () => {
  const cases: [Parameters<GoogleAdsSandbox['scenario']['fail']>[1], string, string][] = [
    [
      {
        status: 'PERMISSION_DENIED',
        errorCode: { authorizationError: 'USER_PERMISSION_DENIED' },
        message: "User doesn't have permission to access customer.",
      },
      'missing_permission',
      'PERMISSION_DENIED/USER_PERMISSION_DENIED',
    ],
    [
      {
        status: 'PERMISSION_DENIED',
        errorCode: { authorizationError: 'DEVELOPER_TOKEN_NOT_APPROVED' },
        message: 'The developer token is not approved.',
      },
      'missing_permission',
      'PERMISSION_DENIED/DEVELOPER_TOKEN_NOT_APPROVED',
    ],
    [
      {
        status: 'INVALID_ARGUMENT',
        errorCode: { queryError: 'BAD_FIELD_NAME' },
        message: "Error in SELECT clause: invalid field name 'x'.",
      },
      'invalid_request',
      'INVALID_ARGUMENT/BAD_FIELD_NAME',
    ],
    [{ status: 'INTERNAL', message: 'Internal error encountered.' }, 'platform_error', 'INTERNAL/INTERNAL_ERROR'],
    [{ status: 'UNAVAILABLE', message: 'The service is currently unavailable.' }, 'platform_error', 'UNAVAILABLE/TRANSIENT_ERROR'],
    [{ status: 'DEADLINE_EXCEEDED', message: 'Deadline exceeded.' }, 'platform_error', 'DEADLINE_EXCEEDED/DEADLINE_EXCEEDED'],
    [
      { status: 'PERMISSION_DENIED', errorCode: { quotaError: 'ACCESS_PROHIBITED' }, message: 'Access is prohibited.' },
      'missing_permission',
      'PERMISSION_DENIED/ACCESS_PROHIBITED',
    ],
  ];
  for (const [error, kind, code] of cases) {
    sandbox.scenario.fail('1234567890', error);
    const refused = await failure(describe('1234567890'));
    assert.deepEqual([refused.kind, refused.platformCode, refused.platformMessage], [kind, code, error.message], code);
  }
  // UNAUTHENTICATED: the client tries one new access token, then the verdict stands.
  sandbox.requests.length = 0;
  sandbox.scenario.fail(
    '1234567890',
    { status: 'UNAUTHENTICATED', errorCode: { authenticationError: 'OAUTH_TOKEN_REVOKED' }, message: 'The OAuth token has been revoked.' },
    { times: 2 },
  );
  const unauthenticated = await failure(describe('1234567890'));
  assert.deepEqual([unauthenticated.kind, unauthenticated.platformCode], ['needs_reconnect', 'UNAUTHENTICATED/OAUTH_TOKEN_REVOKED']);
  assert.equal(tokenCalls().length, 1);
  // The same kinds from the sandbox's own states, and from the list of accessible customers.
  sandbox.scenario.denyPermission('2345678901');
  assert.equal((await failure(read(berlin, '2026-11-20', '2026-11-20'))).kind, 'missing_permission');
  sandbox.scenario.fail('accessible', { status: 'INTERNAL' });
  assert.equal((await failure(client.listAccounts({ secret: refreshToken }))).kind, 'platform_error');
});

test('errors inside a stream: an error element after some batches fails the window before any of its rows is handed on', async () => {
  sandbox.scenario.fail('4444444444', { status: 'INTERNAL', message: 'Internal error encountered.' }, { afterBatches: 3 });
  let handedOn = 0;
  const error = await failure(read(busy, '2026-11-20', '2026-11-22', { onBatch: () => handedOn++ }));
  assert.deepEqual([error.kind, error.platformCode], ['platform_error', 'INTERNAL/INTERNAL_ERROR']);
  assert.equal(handedOn, 0);
});

test('quota: RESOURCE_EXHAUSTED with retryDelay is waited out (injected sleep) and the window asked again, also from inside a stream; no row twice', async () => {
  sandbox.scenario.throttle('4444444444', 30_000);
  const plain = await read(busy, '2026-11-20', '2026-11-22');
  assert.deepEqual(sleeps, [30_000]);
  assert.deepEqual(asText(plain.rows), truth(busy, '2026-11-20', '2026-11-22'));

  // The quota error arrives as the stream's last element after two batches of rows.
  sleeps.length = 0;
  sandbox.scenario.throttle('4444444444', 45_000, { afterBatches: 2 });
  const midStream = await read(busy, '2026-11-20', '2026-11-22');
  assert.deepEqual(sleeps, [45_000]);
  assert.deepEqual(asText(midStream.rows), truth(busy, '2026-11-20', '2026-11-22'));
  assert.equal(new Set(midStream.rows.map(key)).size, midStream.rows.length, 'no row twice');

  // In a later window of a long read, after the earlier windows' rows were handed on.
  sleeps.length = 0;
  let armed = false;
  const long = await read(busy, '2026-10-01', '2026-10-31', {
    onBatch: () => {
      if (!armed) {
        armed = true;
        sandbox.scenario.fail(
          '4444444444',
          {
            status: 'RESOURCE_EXHAUSTED',
            errorCode: { quotaError: 'RESOURCE_TEMPORARILY_EXHAUSTED' },
            message: 'Too many requests.',
            retryDelayMs: 20_000,
          },
          { afterBatches: 1 },
        );
      }
    },
  });
  assert.deepEqual(sleeps, [20_000]);
  assert.deepEqual(asText(long.rows), truth(busy, '2026-10-01', '2026-10-31'));
  assert.equal(new Set(long.rows.map(key)).size, long.rows.length, 'no row twice');

  // Without a retryDelay: a short-term quota is waited out 30 s.
  sleeps.length = 0;
  sandbox.scenario.fail('1234567890', { status: 'RESOURCE_EXHAUSTED', errorCode: { quotaError: 'RESOURCE_TEMPORARILY_EXHAUSTED' } });
  assert.deepEqual(await describe('1234567890'), search);
  assert.deepEqual(sleeps, [30_000]);
});

test('quota: a wait longer than SPEND_THROTTLE_WAIT_MAX_MS (one or added up) is PlatformThrottled with the wait, not slept out', async () => {
  sandbox.scenario.throttle('1234567890', 10 * 60_000);
  let error: unknown;
  try {
    await read(search, '2026-11-20', '2026-11-21');
  } catch (e) {
    error = e;
  }
  assert.ok(error instanceof PlatformThrottled, String(error));
  assert.equal(error.retryAfterMs, 10 * 60_000);
  assert.equal(error.platformMessage, 'Too many requests. Retry in 600 seconds.');
  assert.deepEqual(sleeps, []);

  sandbox.scenario.reset();
  sandbox.scenario.fail('1234567890', { status: 'RESOURCE_EXHAUSTED', retryDelayMs: 60_000 }, { times: 3 });
  await assert.rejects(describe('1234567890'), (e: unknown) => e instanceof PlatformThrottled && e.retryAfterMs === 60_000);
  assert.deepEqual(sleeps, [60_000, 60_000], `at most ${SPEND_THROTTLE_WAIT_MAX_MS} ms waited in one call`);

  // RESOURCE_EXHAUSTED without a retryDelay is most often the daily quota: an hour, the engine reschedules.
  sandbox.scenario.reset();
  sleeps.length = 0;
  sandbox.scenario.fail('1234567890', { status: 'RESOURCE_EXHAUSTED' });
  await assert.rejects(describe('1234567890'), (e: unknown) => e instanceof PlatformThrottled && e.retryAfterMs === 3_600_000);
  assert.deepEqual(sleeps, []);
});

test('hostile answers: wrong types, missing fields, cut-off JSON, a redirect, no stream, an error without status, a huge or slow body → bad_answer (a 502 HTML page: platform_error), never a crash or a secret in a message', async () => {
  const slowClient = clientFor({ timeoutMs: 300 });
  const errors: PlatformError[] = [];
  for (const kind of ['wrong_types', 'missing_fields', 'truncated', 'redirect', 'not_a_stream', 'bad_error', 'huge', 'slow'] as const) {
    for (const [key, call] of [
      ['1234567890', () => slowClient.describeAccount({ secret: refreshToken }, { externalId: '1234567890', accessVia: null })],
      // One day: a window over the cap that could be halved would be asked again (and then served).
      ['1234567890', () => drain(slowClient.readSpend({ secret: refreshToken }, search, { since: '2026-11-20', until: '2026-11-20' }))],
      ['accessible', () => slowClient.listAccounts({ secret: refreshToken })],
    ] as const) {
      sandbox.scenario.malformed(key, kind);
      const error = await failure(call());
      assert.equal(error.kind, 'bad_answer', `${kind} on ${key}: ${error.message}`);
      errors.push(error);
    }
  }
  // Google's front end's HTML error page (502): its status says the error is Google's, and temporary.
  for (const key of ['1234567890', 'accessible']) {
    sandbox.scenario.malformed(key, 'html');
    const error = await failure(key === 'accessible' ? client.listAccounts({ secret: refreshToken }) : describe(key));
    assert.equal(error.kind, 'platform_error', `html on ${key}: ${error.message}`);
    errors.push(error);
  }
  // Google's words that quote a secret are cleaned before anyone sees them.
  sandbox.scenario.fail('1234567890', {
    status: 'INVALID_ARGUMENT',
    message: `Bad refresh token ${refreshToken} for ${sandbox.clientSecret}`,
  });
  const quoting = await failure(describe('1234567890'));
  assert.equal(quoting.platformMessage, 'Bad refresh token [redacted] for [redacted]');
  errors.push(quoting);
  const closed = await startGoogleAdsSandbox();
  const gone = closed.url;
  await closed.close();
  const unreachable = await failure(
    createGoogleAdsClient({ adsUrl: gone, oauthUrl: gone, clientId: 'x', clientSecret: 'y' }).listAccounts({ secret: refreshToken }),
  );
  assert.equal(unreachable.kind, 'unreachable');
  errors.push(unreachable);
  for (const error of errors)
    for (const secret of [refreshToken, sandbox.clientSecret])
      assert.ok(!`${error.message} ${error.platformMessage} ${error.stack}`.includes(secret), error.message);
  // The sandbox still serves: nothing was left broken.
  assert.deepEqual(await describe('1234567890'), search);
});

test('a raw server: gzip is read, a zip bomb past the cap is refused, RetryInfo sets the wait, the token endpoint answering a 503 HTML page is a platform error', async () => {
  const stream = (rows: unknown[]) => JSON.stringify([{ results: rows, fieldMask: 'customer.id', requestId: 'r1' }]);
  const customerRow = {
    customer: {
      resourceName: 'customers/1234567890',
      id: '1234567890',
      descriptiveName: 'Gzipped',
      currencyCode: 'JPY',
      timeZone: 'Asia/Tokyo',
      manager: false,
      status: 'ENABLED',
    },
  };
  const bomb = gzipSync(Buffer.from(stream([{ customer: { id: '1234567890', descriptiveName: 'x'.repeat(2 * 1024 * 1024) } }])));
  let quotaOnce = true;
  let tokenHtml = false;
  const encodings: string[] = [];
  const server = http.createServer((req, res) => {
    encodings.push(String(req.headers['accept-encoding']));
    if (req.url === '/v26/customers:listAccessibleCustomers') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ resourceNames: ['customers/1234567890', 'customers/1111111111', 'customers/2222222222'] }));
    }
    if (req.url === '/token') {
      if (tokenHtml) {
        res.writeHead(503, { 'content-type': 'text/html' });
        return res.end('<html>Service Unavailable</html>');
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ access_token: 'ya29.raw', expires_in: 3599, token_type: 'Bearer' }));
    }
    if (req.url!.includes('/1111111111/') && quotaOnce) {
      quotaOnce = false;
      res.writeHead(429, { 'content-type': 'application/json; charset=UTF-8' });
      return res.end(
        JSON.stringify([
          {
            error: {
              code: 429,
              message: 'Resource has been exhausted (e.g. check quota).',
              status: 'RESOURCE_EXHAUSTED',
              details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '45s' }],
            },
          },
        ]),
      );
    }
    const body = req.url!.includes('/1234567890/') || req.url!.includes('/1111111111/') ? gzipSync(stream([customerRow])) : bomb;
    res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8', 'content-encoding': 'gzip', 'content-length': body.length });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const raw = createGoogleAdsClient({
      adsUrl: url,
      oauthUrl: url,
      clientId: 'c',
      clientSecret: 's',
      sleep: fakeSleep,
      maxBodyBytes: 1024 * 1024,
    });
    const described = await raw.describeAccount({ secret: 'refresh-raw' }, { externalId: '1234567890', accessVia: null });
    assert.deepEqual([described.name, described.currency, described.timeZone], ['Gzipped', 'JPY', 'Asia/Tokyo']);
    assert.ok(encodings.every((e) => e.includes('gzip')));
    const error = await failure(raw.describeAccount({ secret: 'refresh-raw' }, { externalId: '2222222222', accessVia: null }));
    assert.equal(error.kind, 'bad_answer');
    assert.match(error.message, /larger than 1048576 bytes/);
    sleeps.length = 0;
    // The customer the raw server answers is 1234567890: another id in its answer is a bad answer, after the RetryInfo wait.
    assert.equal(
      (await failure(raw.describeAccount({ secret: 'refresh-raw' }, { externalId: '1111111111', accessVia: null }))).kind,
      'bad_answer',
    );
    assert.deepEqual(sleeps, [45_000]);
    tokenHtml = true;
    const html = await failure(raw.describeAccount({ secret: 'another-refresh' }, { externalId: '1234567890', accessVia: null }));
    assert.equal(html.kind, 'platform_error');
    assert.match(html.message, /token endpoint answered the access token refresh with HTTP 503 and no JSON/);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

type Scripted = { status: number; type: string; body: string; headers?: Record<string, string> };
/** A loopback server that answers /token and the Ads API with the answers queued for them, then with a working one. */
async function scriptedServer(): Promise<{ url: string; paths: string[]; token: Scripted[]; ads: Scripted[]; close(): Promise<void> }> {
  const customerStream = JSON.stringify([
    {
      results: [
        {
          customer: {
            id: '1234567890',
            descriptiveName: 'Scripted',
            currencyCode: 'USD',
            timeZone: 'America/New_York',
            manager: false,
            status: 'ENABLED',
          },
        },
      ],
    },
  ]);
  const okToken: Scripted = {
    status: 200,
    type: 'application/json',
    body: JSON.stringify({ access_token: 'ya29.scripted', expires_in: 3599 }),
  };
  const okAds: Scripted = { status: 200, type: 'application/json', body: customerStream };
  const okAccessible: Scripted = {
    status: 200,
    type: 'application/json',
    body: JSON.stringify({ resourceNames: ['customers/1234567890'] }),
  };
  const state = { token: [] as Scripted[], ads: [] as Scripted[] };
  const paths: string[] = [];
  const server = http.createServer((req, res) => {
    paths.push(req.url!);
    req.resume();
    const next =
      (req.url === '/token' ? state.token.shift() : state.ads.shift()) ??
      (req.url === '/token' ? okToken : req.url!.endsWith(':listAccessibleCustomers') ? okAccessible : okAds);
    res.writeHead(next.status, { 'content-type': next.type, ...(next.headers ?? {}) });
    res.end(next.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    paths,
    get token() {
      return state.token;
    },
    get ads() {
      return state.ads;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const json = (status: number, body: unknown, headers?: Record<string, string>): Scripted => ({
  status,
  type: 'application/json; charset=utf-8',
  body: JSON.stringify(body),
  ...(headers ? { headers } : {}),
});
const html = (status: number, headers?: Record<string, string>): Scripted => ({
  status,
  type: 'text/html; charset=UTF-8',
  body: `<!DOCTYPE html><title>Error ${status}</title><p>That’s an error.`,
  ...(headers ? { headers } : {}),
});

test('the token endpoint: 429 and slow_down are a wait (Retry-After, else 30 s) or PlatformThrottled past the budget; 5xx a platform error; invalid_grant alone needs a reconnect', async () => {
  const server = await scriptedServer();
  try {
    let n = 0;
    // A new refresh token each time: no access token from memory hides the token request.
    const describeWith = () =>
      createGoogleAdsClient({
        adsUrl: server.url,
        oauthUrl: server.url,
        clientId: 'c',
        clientSecret: 's',
        sleep: fakeSleep,
      }).describeAccount({ secret: `refresh-${++n}` }, { externalId: '1234567890', accessVia: null });
    sleeps.length = 0;
    server.token.push(json(429, { error: 'rate_limit_exceeded', error_description: 'Rate limit exceeded.' }, { 'retry-after': '20' }));
    assert.equal((await describeWith()).name, 'Scripted');
    assert.deepEqual(sleeps, [20_000], 'waited as Retry-After asked, then asked again');

    sleeps.length = 0;
    server.token.push(html(429), json(400, { error: 'slow_down' }));
    assert.equal((await describeWith()).name, 'Scripted');
    assert.deepEqual(sleeps, [30_000, 30_000], 'without Retry-After: 30 s each');

    sleeps.length = 0;
    server.token.push(json(429, { error: 'rate_limit_exceeded', error_description: 'Rate limit exceeded.' }, { 'retry-after': '600' }));
    await assert.rejects(
      describeWith(),
      (e: unknown) => e instanceof PlatformThrottled && e.retryAfterMs === 600_000 && e.platformMessage === 'Rate limit exceeded.',
    );
    assert.deepEqual(sleeps, [], 'a wait past SPEND_THROTTLE_WAIT_MAX_MS is left to the engine');

    for (const [answer, kind] of [
      [json(500, { error: 'server_error' }), 'platform_error'],
      [json(503, { error: 'temporarily_unavailable' }), 'platform_error'],
      [html(502), 'platform_error'],
      [json(502, {}), 'platform_error'],
      [html(404), 'invalid_request'],
      [json(400, { error: 'invalid_grant', error_description: 'Token has been expired or revoked.' }), 'needs_reconnect'],
      [json(401, { error: 'invalid_client', error_description: 'Unauthorized' }), 'invalid_request'],
      [json(400, { error: 'unauthorized_client' }), 'invalid_request'],
      [html(200), 'bad_answer'],
    ] as const) {
      server.token.push(answer);
      const error = await failure(describeWith());
      assert.equal(error.kind, kind, `${answer.status} ${answer.body.slice(0, 60)}: ${error.message}`);
    }
  } finally {
    await server.close();
  }
});

test('the Ads API without JSON (an HTML error page): the HTTP status decides; a 2xx that is not JSON is a bad answer', async () => {
  const server = await scriptedServer();
  try {
    const raw = createGoogleAdsClient({ adsUrl: server.url, oauthUrl: server.url, clientId: 'c', clientSecret: 's', sleep: fakeSleep });
    const describeIt = () => raw.describeAccount({ secret: 'refresh-html' }, { externalId: '1234567890', accessVia: null });
    for (const [answer, kind] of [
      [html(502), 'platform_error'],
      [html(500), 'platform_error'],
      [{ status: 503, type: 'application/json', body: '{"error": {"code": 5' }, 'platform_error'],
      [html(404), 'invalid_request'],
      [html(403), 'missing_permission'],
      [html(400), 'bad_answer'],
      [html(200), 'bad_answer'],
      [{ status: 200, type: 'application/json', body: '[{"results": [' }, 'bad_answer'],
    ] as const) {
      server.ads.push(answer);
      const error = await failure(describeIt());
      assert.equal(error.kind, kind, `${answer.status} ${answer.type}: ${error.message}`);
    }
    // 401: one new access token, then the verdict stands.
    server.ads.push(html(401), html(401));
    const tokensBefore = server.paths.filter((p) => p === '/token').length;
    assert.equal((await failure(describeIt())).kind, 'needs_reconnect');
    assert.equal(server.paths.filter((p) => p === '/token').length, tokensBefore + 1);
    // 429 without JSON: a quota wait like RESOURCE_EXHAUSTED, Retry-After when sent.
    sleeps.length = 0;
    server.ads.push(html(429, { 'retry-after': '7' }), html(429));
    assert.equal((await describeIt()).name, 'Scripted');
    assert.deepEqual(sleeps, [7000, 30_000]);
  } finally {
    await server.close();
  }
});

test('headers: developer-token only when configured, never to the token endpoint', async () => {
  const withToken = clientFor({ developerToken: 'dev-token-123' });
  await withToken.listAccounts({ secret: sandbox.issueRefreshToken() });
  const ads = sandbox.requests.filter((r) => r.path.startsWith('/v26/'));
  assert.ok(ads.length > 3 && ads.every((r) => r.developerToken === 'dev-token-123'));
  assert.ok(tokenCalls().every((r) => r.developerToken === null));
  sandbox.requests.length = 0;
  await client.listAccounts({ secret: refreshToken });
  assert.ok(sandbox.requests.every((r) => r.developerToken === null));
});

test("abort: a read stops with the caller's reason, not a platform error, also while waiting out a quota error", async () => {
  const controller = new AbortController();
  const reason = new Error('shutting down');
  const reading = (async () => {
    for await (const _ of client.readSpend({ secret: refreshToken }, busy, { since: '2026-11-01', until: '2026-11-20' }, controller.signal))
      controller.abort(reason);
  })();
  await assert.rejects(reading, (e) => e === reason);
  sandbox.scenario.throttle('1234567890', 90_000);
  sandbox.requests.length = 0;
  const waiting = new AbortController();
  const reading2 = drain(
    clientFor({ sleep: undefined }).readSpend(
      { secret: refreshToken },
      search,
      { since: '2026-11-20', until: '2026-11-20' },
      waiting.signal,
    ),
  );
  while (streamCalls().length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
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
    (await post({ action: 'fail', key: '2345678901', error: { status: 'PERMISSION_DENIED', message: 'No access.' } })).status,
    200,
  );
  const denied = await failure(describe('2345678901'));
  assert.deepEqual([denied.kind, denied.platformMessage], ['missing_permission', 'No access.']);
  const issued = (await (await post({ action: 'issueRefreshToken', managers: [MANAGER] })).json()) as { refreshToken: string };
  assert.deepEqual(
    (await client.listAccounts({ secret: issued.refreshToken })).map((a) => a.externalId),
    ['3456789012', '7777777777'],
  );
  assert.equal((await post({ action: 'throttle', customerId: '1234567890', ms: 30_000, afterBatches: 1 })).status, 200);
  assert.deepEqual(await describe('1234567890'), search);
  assert.deepEqual(sleeps, [30_000]);
  assert.equal((await post({ action: 'expireRefreshToken', refreshToken: issued.refreshToken })).status, 200);
  sandbox.scenario.expireAccessTokens();
  assert.equal((await failure(client.listAccounts({ secret: issued.refreshToken }))).kind, 'needs_reconnect');
  assert.equal((await post({ action: 'explode' })).status, 400);
  assert.equal((await post({ action: 'malformed', key: '1234567890', kind: 'bogus' })).status, 400);
  assert.equal((await post({ action: 'fail', key: '1234567890', error: { status: 'NOPE' } })).status, 400);
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
  const denyOne = JSON.stringify({ action: 'denyPermission', customerId: '1234567890' });
  assert.equal((await fetch(`${sandbox.url}/__sandbox/scenario`, { method: 'POST', body: denyOne })).status, 415);
  assert.equal(
    (
      await fetch(`${sandbox.url}/__sandbox/scenario`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: denyOne,
      })
    ).status,
    415,
  );
  assert.deepEqual(await describe('1234567890'), search);
});

test('the sandbox is strict about GAQL: an unknown field, resource or a spend query without a date range is INVALID_ARGUMENT / queryError', async () => {
  const accessToken = (
    (await (
      await fetch(`${sandbox.url}/token`, {
        method: 'POST',
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          refresh_token: refreshToken,
          client_id: sandbox.clientId,
          client_secret: sandbox.clientSecret,
        }),
      })
    ).json()) as { access_token: string }
  ).access_token;
  const ask = async (query: string) => {
    const res = await fetch(`${sandbox.url}/v26/customers/1234567890/googleAds:searchStream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query }),
    });
    return { status: res.status, body: (await res.json()) as unknown };
  };
  const reason = (body: unknown) =>
    (body as { error: { status: string; details: { errors: { errorCode: Record<string, string> }[] }[] } }[])[0]!.error.details[0]!
      .errors[0]!.errorCode;
  for (const [query, code] of [
    ['SELECT customer.id, customer.secret FROM customer', 'PROHIBITED_FIELD_IN_SELECT_CLAUSE'],
    ['SELECT asset_group.id FROM asset_group', 'BAD_RESOURCE_TYPE_IN_FROM_CLAUSE'],
    ['SELECT campaign.id, metrics.cost_micros FROM campaign WHERE segments.date DURING LAST_7_DAYS', 'UNEXPECTED_INPUT'],
    [
      "SELECT campaign.id FROM campaign WHERE segments.date BETWEEN '2026-11-20' AND '2026-11-20' AND campaign.advertising_channel_type IN ('PMAX')",
      'BAD_ENUM_CONSTANT',
    ],
    [
      "SELECT campaign.id FROM campaign WHERE segments.date BETWEEN '2026-11-20' AND '2026-11-20' AND campaign.name = 'x'",
      'UNEXPECTED_INPUT',
    ],
    ['SELECT ad_group.id FROM campaign', 'PROHIBITED_FIELD_IN_SELECT_CLAUSE'],
    ['SELECT segments.date, metrics.cost_micros FROM ad_group', 'EXPECTED_FILTERS_ON_DATE_RANGE'],
    ["SELECT segments.date FROM ad_group WHERE segments.date BETWEEN '2026-11-20' AND '2026-11-19'", 'DATE_RANGE_TOO_NARROW'],
    ['customer.id FROM customer', 'EXPECTED_SELECT'],
  ] as const) {
    const answer = await ask(query);
    assert.equal(answer.status, 400, query);
    assert.deepEqual(reason(answer.body), { queryError: code }, query);
  }
  // Coarser segments are summed as Google sums them: one row per ad group and day.
  const daily = await ask(
    "SELECT segments.date, ad_group.id, metrics.cost_micros FROM ad_group WHERE segments.date BETWEEN '2026-11-20' AND '2026-11-20'",
  );
  const rows = (daily.body as { results: { adGroup: { id: string }; metrics: { costMicros: string } }[] }[]).flatMap((b) => b.results);
  const expected = new Map<string, bigint>();
  for (const r of sandbox.hourlySpend('1234567890', { since: '2026-11-20', until: '2026-11-20' }))
    expected.set(r.adSetId, (expected.get(r.adSetId) ?? 0n) + r.spendMicros);
  // Without a filter on the channel type an ad_group query has every ad group's rows; a Performance Max campaign has none.
  assert.deepEqual(
    new Map(rows.map((r) => [r.adGroup.id, BigInt(r.metrics.costMicros)])),
    new Map([...expected].filter(([id]) => !id.startsWith('campaign:'))),
  );
  // And `campaign` sums every campaign's ad groups (here with no filter: Search campaigns too).
  const byCampaign = await ask(
    "SELECT campaign.id, metrics.cost_micros FROM campaign WHERE segments.date BETWEEN '2026-11-20' AND '2026-11-20'",
  );
  const campaignTotals = new Map<string, bigint>();
  for (const r of sandbox.hourlySpend('1234567890', { since: '2026-11-20', until: '2026-11-20' }))
    campaignTotals.set(r.campaignId, (campaignTotals.get(r.campaignId) ?? 0n) + r.spendMicros);
  const campaignRows = (byCampaign.body as { results: { campaign: { id: string }; metrics: { costMicros: string } }[] }[]).flatMap(
    (b) => b.results,
  );
  assert.equal(campaignRows.length, 3, 'two Search campaigns and one Performance Max');
  assert.deepEqual(new Map(campaignRows.map((r) => [r.campaign.id, BigInt(r.metrics.costMicros)])), campaignTotals);
});
