// Manage Hub → Ad accounts over real HTTP for Google Ads (OAuth) and ChatGPT Ads (a pasted API key),
// against the Google Ads and OpenAI Ads sandboxes through the app's own clients: the consent
// redirect, the state bound to the session and the platform, cancelling, Google leaving the refresh
// token out (nothing changes, the connected accounts keep syncing), the chooser's manager accounts,
// a reconnect that mends the same account, a server without a Google OAuth client, the API-key form's
// refusals, and no credential in a page or a log line. The happy paths in Chromium, with the
// currency refusal: ad-accounts-three-platforms.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { listAdAccounts, syncNow } from '../../src/domain/ad-sync/ad-account.service.ts';
import { startGoogleAdsSandbox, type GoogleAdsSandbox } from '../../src/integrations/google-ads/sandbox.ts';
import { startMetaSandbox, type MetaSandbox } from '../../src/integrations/meta/sandbox.ts';
import { startOpenAIAdsSandbox, type OpenAIAdsSandbox } from '../../src/integrations/openai-ads/sandbox.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { captureLog } from '../support/log.ts';
import type { Browser } from '../support/oauth-flow.ts';
import { hidden, signedIn } from '../support/web-forms.ts';
import { ADMIN, HUB, seedWebHub } from '../support/world.ts';

const DIRECT = { id: '5550001111', name: 'Acme Search', currency: 'USD', timeZone: 'America/Chicago' };
const MANAGER = { id: '5550009999', name: 'Acme Agency MCC', currency: 'USD', timeZone: 'America/New_York', manager: true };
const CLIENT = { id: '5550002222', name: 'Acme Display', currency: 'USD', timeZone: 'Europe/London', direct: false, managerId: MANAGER.id };
const CHATGPT = { id: 'adacct_web_7', name: 'Acme Ask', currency_code: 'USD', timezone: 'America/Denver' };

interface Answer {
  status: number;
  text: string;
  location: string | null;
}

describe('Connect Google Ads and ChatGPT Ads over HTTP', () => {
  const { logger, lines } = captureLog('trace');
  let google: GoogleAdsSandbox;
  let chatgpt: OpenAIAdsSandbox;
  let meta: MetaSandbox;
  let web: TestApp;
  let admin: Browser;
  let chooserUrl = '';
  /** Every body the app answered, to search for credentials at the end. */
  const bodies: string[] = [];
  /** Every credential the test saw: none may reach a page or a log line. */
  const secrets: string[] = [];

  const url = (path = '') => `${web.baseUrl}/app/hubs/${HUB}/settings/ad-accounts${path}`;
  const keep = async (r: Response): Promise<Answer> => {
    const text = await r.text();
    bodies.push(text);
    return { status: r.status, text, location: r.headers.get('location') };
  };
  const get = async (b: Browser, target: string) => keep(await b.fetch(target.startsWith('/') ? `${web.baseUrl}${target}` : target));
  const post = async (b: Browser, target: string, fields: Record<string, string> | URLSearchParams) =>
    keep(
      await b.fetch(target, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: fields instanceof URLSearchParams ? fields.toString() : new URLSearchParams(fields).toString(),
      }),
    );
  const pendingRows = async () =>
    Number((await sql<{ n: string }>`SELECT count(*) AS n FROM ad_pending_connections`.execute(web.db.kysely)).rows[0]!.n);
  const tokenRequests = (grantType: string) => google.requests.filter((r) => r.path === '/token' && r.grantType === grantType).length;
  /** The hub's ad connections and accounts of a platform, whole rows: what a refusal must leave as it was. */
  const adRows = async (platform: string) => ({
    connections: (
      await sql<{
        t: string;
      }>`SELECT row_to_json(c)::text AS t FROM ad_connections c WHERE hub_id = ${HUB} AND platform = ${platform} ORDER BY id`.execute(
        web.db.kysely,
      )
    ).rows.map((r) => r.t),
    accounts: (
      await sql<{
        t: string;
      }>`SELECT row_to_json(a)::text AS t FROM ad_accounts a WHERE hub_id = ${HUB} AND platform = ${platform} ORDER BY id`.execute(
        web.db.kysely,
      )
    ).rows.map((r) => r.t),
  });
  const googleAccount = async (externalId: string) =>
    web.db.kysely
      .selectFrom('ad_accounts')
      .selectAll()
      .where('hub_id', '=', HUB)
      .where('platform', '=', 'google_ads')
      .where('external_id', '=', externalId)
      .executeTakeFirstOrThrow();
  /** The refresh token a Google connection keeps, opened with the app's own key (to drive the sandbox with it). */
  const refreshTokenOf = async (connectionId: string) => {
    const row = await web.db.kysely
      .selectFrom('ad_connections')
      .select('token_sealed')
      .where('id', '=', connectionId)
      .executeTakeFirstOrThrow();
    const token = web.app.adSync.sealer.open(row.token_sealed, connectionId);
    secrets.push(token);
    return token;
  };

  /** Connect Google Ads up to the sandbox's consent screen, then the person's click on Continue or Cancel: where Google sends the browser back. */
  const consent = async (b: Browser, decision: 'allow' | 'deny'): Promise<URL> => {
    const start = await get(b, url('/google/connect'));
    assert.equal(start.status, 303, start.text.slice(0, 300));
    const screen = new URL(start.location!);
    const answer = await fetch(screen, {
      method: 'POST',
      body: new URLSearchParams({ ...Object.fromEntries(screen.searchParams), decision }),
      redirect: 'manual',
    });
    assert.equal(answer.status, 303);
    return new URL(answer.headers.get('location')!);
  };
  const choose = (page: string, accounts: string[]) =>
    post(
      admin,
      url('/choose'),
      new URLSearchParams([
        ['csrf', hidden(page, 'csrf')],
        ['pending', hidden(page, 'pending')],
        ...accounts.map((a): [string, string] => ['account', a]),
      ]),
    );

  before(async () => {
    google = await startGoogleAdsSandbox({ customers: [DIRECT, MANAGER, CLIENT] });
    chatgpt = await startOpenAIAdsSandbox({ accounts: [CHATGPT] });
    meta = await startMetaSandbox({ seed: { accounts: [{ id: 'act_7001', name: 'Acme Meta' }] } });
    web = await startApp({
      listen: true,
      now: 'system',
      logger,
      seed: seedWebHub,
      env: {
        META_GRAPH_URL: meta.url,
        META_DIALOG_URL: meta.url,
        META_APP_ID: meta.appId,
        META_APP_SECRET: meta.appSecret,
        GOOGLE_ADS_URL: google.url,
        GOOGLE_OAUTH_URL: google.url,
        GOOGLE_ACCOUNTS_URL: google.url,
        GOOGLE_OAUTH_CLIENT_ID: google.clientId,
        GOOGLE_OAUTH_CLIENT_SECRET: google.clientSecret,
        OPENAI_ADS_URL: chatgpt.url,
      },
    });
    admin = await signedIn(web);
  });
  after(async () => {
    await web?.close();
    await Promise.all([google?.close(), chatgpt?.close(), meta?.close()]);
  });

  test('Connect Google Ads: to the consent screen with offline access, a forced consent, the adwords scope and the registered redirect URI', async () => {
    const page = await get(admin, url());
    assert.equal(page.status, 200);
    assert.match(page.text, /<div class="card" id="connect-google"><h2>Connect Google Ads<\/h2>/);
    assert.match(page.text, /href="[^"]*\/settings\/ad-accounts\/google\/connect" data-connect-google>Connect Google Ads</);
    assert.doesNotMatch(page.text, /data-no-google/);

    const start = await get(admin, url('/google/connect'));
    assert.equal(start.status, 303);
    assert.equal(start.location && new URL(start.location).origin, new URL(google.url).origin);
    const screen = new URL(start.location!);
    assert.equal(screen.pathname, '/o/oauth2/v2/auth');
    const params = Object.fromEntries(screen.searchParams);
    assert.deepEqual(Object.keys(params).sort(), ['access_type', 'client_id', 'prompt', 'redirect_uri', 'response_type', 'scope', 'state']);
    assert.equal(params.client_id, google.clientId);
    assert.equal(params.access_type, 'offline');
    assert.equal(params.prompt, 'consent');
    assert.equal(params.scope, 'https://www.googleapis.com/auth/adwords');
    assert.equal(params.response_type, 'code');
    assert.equal(params.redirect_uri, `${new URL(web.baseUrl).origin}/app/ad-accounts/google/callback`);
    assert.match(params.state!, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    // The sandbox, as Google, accepts the request: its consent screen, not an error page.
    const shown = await fetch(screen);
    assert.equal(shown.status, 200);
    assert.match(await shown.text(), /Continue/);
    // Starting it changed nothing here.
    assert.equal(await pendingRows(), 0);
    assert.equal(tokenRequests('authorization_code'), 0);
  });

  test("the state is bound to the session and the platform: a Meta state at Google's callback, a Google state at Meta's and another session's are refused, and nothing is exchanged", async () => {
    const metaState = new URL((await get(admin, url('/meta/connect'))).location!).searchParams.get('state')!;
    const back = await consent(admin, 'allow');
    const googleState = back.searchParams.get('state')!;
    assert.ok(back.searchParams.get('code'), 'the sandbox sent a code');
    assert.equal(`${back.origin}${back.pathname}`, `${web.baseUrl}/app/ad-accounts/google/callback`);

    const metaAtGoogle = new URL(back);
    metaAtGoogle.searchParams.set('state', metaState);
    const refused = await get(admin, metaAtGoogle.href);
    assert.equal(refused.status, 400);
    assert.match(refused.text, /This answer from Google does not belong to a connection started in this session/);

    const googleAtMeta = await get(
      admin,
      `/app/ad-accounts/meta/callback?code=${encodeURIComponent(back.searchParams.get('code')!)}&state=${encodeURIComponent(googleState)}`,
    );
    assert.equal(googleAtMeta.status, 400);
    assert.match(googleAtMeta.text, /This answer from Facebook does not belong to a connection started in this session/);

    // The same admin signed in elsewhere: another session, refused.
    const elsewhere = await signedIn(web, ADMIN);
    assert.equal((await get(elsewhere, back.href)).status, 400);
    assert.equal(tokenRequests('authorization_code'), 0, 'no code was exchanged');
    assert.equal(await pendingRows(), 0);
    assert.equal(meta.requests.filter((r) => r.path.includes('oauth/access_token')).length, 0);

    // Each state is good at its own platform's callback: the Meta one (no code: cancelled), the Google one (the chooser).
    const metaCancelled = await get(admin, `/app/ad-accounts/meta/callback?error=access_denied&state=${encodeURIComponent(metaState)}`);
    assert.equal(metaCancelled.status, 303);
    assert.match(metaCancelled.location!, /\/settings\/ad-accounts\?notice=cancelled$/);
    const done = await get(admin, back.href);
    assert.equal(done.status, 303, done.text.slice(0, 300));
    assert.match(done.location!, new RegExp(`^/app/hubs/${HUB}/settings/ad-accounts/choose\\?pending=[A-Za-z0-9_-]+$`));
    assert.equal(tokenRequests('authorization_code'), 1);
    assert.equal(await pendingRows(), 1);
    chooserUrl = done.location!;
  });

  test('the chooser offers the direct account and the one reached through a manager account, marked so; never the manager itself', async () => {
    const chooser = await get(admin, chooserUrl);
    assert.equal(chooser.status, 200);
    const offered = [...chooser.text.matchAll(/name="account" value="([^"]+)"/g)].map((m) => m[1]);
    assert.deepEqual(offered.sort(), [DIRECT.id, CLIENT.id].sort());
    assert.doesNotMatch(chooser.text, new RegExp(MANAGER.name));
    const item = (id: string) =>
      new RegExp(`<li>(?:(?!</li>)[\\s\\S])*value="${id}"(?:(?!</li>)[\\s\\S])*</li>`).exec(chooser.text)?.[0] ?? '';
    assert.match(item(CLIENT.id), new RegExp(`through manager account <code class="token">${MANAGER.id}</code>`));
    assert.match(item(CLIENT.id), /<strong>Acme Display<\/strong>/);
    assert.doesNotMatch(item(DIRECT.id), /through manager account/);

    const added = await choose(chooser.text, [DIRECT.id, CLIENT.id]);
    assert.equal(added.status, 303);
    assert.equal(added.location, `/app/hubs/${HUB}/settings/ad-accounts?notice=sync`);
    assert.equal(await pendingRows(), 0);
    const [direct, client] = [await googleAccount(DIRECT.id), await googleAccount(CLIENT.id)];
    assert.equal(direct.access_via, null);
    assert.equal(client.access_via, MANAGER.id, 'read through the manager (login-customer-id)');
    assert.equal(direct.connection_id, client.connection_id);
    const connection = await web.db.kysely
      .selectFrom('ad_connections')
      .select(['kind', 'label', 'token_expires_at'])
      .where('id', '=', direct.connection_id!)
      .executeTakeFirstOrThrow();
    assert.deepEqual(connection, { kind: 'oauth', label: 'Google Ads (signed in with Google)', token_expires_at: null });
    await refreshTokenOf(direct.connection_id!);

    for (const a of [direct, client]) assert.equal((await syncNow(web.app.adSync, HUB, a.id)).status, 'done', a.external_id!);
    assert.ok(
      google.requests.some((r) => r.loginCustomerId === MANAGER.id && r.path === `/v26/customers/${CLIENT.id}/googleAds:searchStream`),
      "the client account's spend was read through its manager",
    );
  });

  test('cancelling on the consent screen adds nothing', async () => {
    const before = await adRows('google_ads');
    const exchanged = tokenRequests('authorization_code');
    const back = await consent(admin, 'deny');
    assert.equal(back.searchParams.get('error'), 'access_denied');
    assert.equal(back.searchParams.get('code'), null);
    const cancelled = await get(admin, back.href);
    assert.equal(cancelled.status, 303);
    assert.equal(cancelled.location, `/app/hubs/${HUB}/settings/ad-accounts?notice=cancelled`);
    assert.match((await get(admin, cancelled.location!)).text, /Connecting was cancelled: nothing was added\./);
    assert.deepEqual(await adRows('google_ads'), before);
    assert.equal(await pendingRows(), 0);
    assert.equal(tokenRequests('authorization_code'), exchanged);
  });

  test('Google leaving the refresh token out: the page says why and that nothing was changed; the connected accounts keep their sealed token and still sync', async () => {
    const before = await adRows('google_ads');
    const exchanged = tokenRequests('authorization_code');
    google.scenario.omitRefreshToken();
    try {
      const back = await consent(admin, 'allow');
      const refused = await get(admin, back.href);
      assert.equal(refused.status, 502);
      assert.equal(tokenRequests('authorization_code'), exchanged + 1, 'the code was exchanged');
      assert.match(
        refused.text,
        /<p class="notice" role="status">Google did not give hubops offline access this time \(its answer had no refresh token\), so nothing was changed: connected accounts keep their current access\./,
      );
      assert.match(refused.text, /https:\/\/myaccount\.google\.com\/connections/);
    } finally {
      google.scenario.reset();
    }
    assert.deepEqual(await adRows('google_ads'), before, 'the sealed refresh token and the accounts are as they were');
    assert.equal(await pendingRows(), 0);

    // Still working: with every access token gone, the sync trades the sealed refresh token for a new one.
    google.scenario.expireAccessTokens();
    const refreshed = tokenRequests('refresh_token');
    const direct = await googleAccount(DIRECT.id);
    assert.equal((await syncNow(web.app.adSync, HUB, direct.id)).status, 'done');
    assert.ok(tokenRequests('refresh_token') > refreshed, 'the stored refresh token was used');
  });

  test('reconnect: an account whose refresh token expired needs reconnect; choosing it again after a new consent mends the same row, its synced days kept', async () => {
    const stale = await googleAccount(DIRECT.id);
    google.scenario.expireRefreshToken(await refreshTokenOf(stale.connection_id!));
    google.scenario.expireAccessTokens();
    const failed = await syncNow(web.app.adSync, HUB, stale.id);
    assert.notEqual(failed.status, 'done');
    const view = (await listAdAccounts(web.app.adSync, HUB)).find((a) => a.id === stale.id)!;
    assert.equal(view.status, 'needs_reconnect');
    const listed = await get(admin, url());
    const row = new RegExp(`<tr data-ad-account="${stale.id}">(?:(?!</tr>)[\\s\\S])*</tr>`).exec(listed.text)?.[0] ?? '';
    assert.match(row, /data-status="needs_reconnect">Needs reconnect</);
    assert.match(row, /<a class="button primary" href="#connect-google">Reconnect<\/a>/);

    const days = async () =>
      (
        await sql<{
          n: string;
          cents: string;
        }>`SELECT count(*) AS n, coalesce(sum(spend_cents), 0) AS cents FROM spend WHERE ad_account_id = ${stale.id}`.execute(web.db.kysely)
      ).rows[0]!;
    const spendBefore = await days();
    assert.ok(Number(spendBefore.n) > 0, 'the account had synced days');

    const back = await consent(admin, 'allow');
    const done = await get(admin, back.href);
    assert.equal(done.status, 303);
    const chooser = await get(admin, done.location!);
    const item = new RegExp(`<li>(?:(?!</li>)[\\s\\S])*value="${DIRECT.id}"(?:(?!</li>)[\\s\\S])*</li>`).exec(chooser.text)?.[0] ?? '';
    assert.match(item, /data-already>already connected: choose it to reconnect it with this token/);
    assert.equal((await choose(chooser.text, [DIRECT.id])).status, 303);

    const mended = await googleAccount(DIRECT.id);
    assert.equal(mended.id, stale.id, 'the same account row');
    assert.notEqual(mended.connection_id, stale.connection_id, 'under the new sign-in');
    assert.equal(mended.failure_kind, null);
    assert.equal(mended.complete_through, stale.complete_through);
    assert.deepEqual(await days(), spendBefore, 'its synced days are kept');
    await refreshTokenOf(mended.connection_id!);
    assert.equal(
      (await web.db.kysely.selectFrom('ad_accounts').select('id').where('hub_id', '=', HUB).where('platform', '=', 'google_ads').execute())
        .length,
      2,
    );
    assert.equal((await syncNow(web.app.adSync, HUB, mended.id)).status, 'done');
    const after = (await listAdAccounts(web.app.adSync, HUB)).find((a) => a.id === stale.id)!;
    assert.equal(after.status, 'connected');
  });

  test('paste an API key: empty, multi-line and overlong keys get the field error; nothing is stored and OpenAI is not asked', async () => {
    const page = await get(admin, url());
    assert.match(page.text, /<input id="chatgpt-key" name="key" type="password"/);
    const csrf = hidden(page.text, 'csrf');
    const asked = chatgpt.requests.length;
    const before = await adRows('chatgpt_ads');
    const cases: [string, RegExp][] = [
      ['', /Paste the API key first\./],
      ['   \n ', /Paste the API key first\./],
      ['sk-ads-first-line\nsk-ads-second-line', /An API key has no spaces or line breaks inside it/],
      ['sk-ads-with a-space', /An API key has no spaces or line breaks inside it/],
      [`sk-ads-${'k'.repeat(4_100)}`, /That is longer than any API key \(at most 4096 characters\)/],
    ];
    for (const [key, reason] of cases) {
      const r = await post(admin, url('/api-key'), { csrf, key });
      assert.equal(r.status, 400, JSON.stringify(key.slice(0, 20)));
      const error = /<p class="field-error" id="key-error" role="alert">([^<]*)<\/p>/.exec(r.text)?.[1] ?? '';
      assert.match(error, reason);
      assert.match(
        r.text,
        /id="chatgpt-key" name="key" type="password" autocomplete="off" spellcheck="false" maxlength="4096" class="invalid"/,
      );
    }
    const forged = await post(admin, url('/api-key'), { csrf: 'forged', key: chatgpt.issueKey({ accountId: CHATGPT.id }) });
    assert.equal(forged.status, 400);
    assert.match(forged.text, /That form expired/);
    assert.equal(chatgpt.requests.length, asked, 'OpenAI was not asked');
    assert.deepEqual(await adRows('chatgpt_ads'), before);
  });

  test("a revoked key and an unknown key get the platform's own words; nothing is stored", async () => {
    const csrf = hidden((await get(admin, url())).text, 'csrf');
    const revoked = chatgpt.issueKey({ accountId: CHATGPT.id });
    chatgpt.scenario.revokeKey(revoked);
    const unknown = 'sk-ads-sandbox-this-key-was-never-issued-0000';
    secrets.push(revoked, unknown);
    const before = await adRows('chatgpt_ads');
    for (const key of [revoked, unknown]) {
      const asked = chatgpt.requests.length;
      const r = await post(admin, url('/api-key'), { csrf, key });
      assert.equal(r.status, 400);
      assert.ok(chatgpt.requests.length > asked, 'OpenAI was asked');
      const error = /<p class="field-error" id="key-error" role="alert">([^<]*)<\/p>/.exec(r.text)?.[1] ?? '';
      assert.match(
        error,
        new RegExp(
          `^ChatGPT Ads did not accept the API key \\(Incorrect API key provided: sk-\\*{8}${key.slice(-4)}\\. You can find your API key in Ads Manager under Settings\\.\\): use a valid, unexpired API key$`,
        ),
      );
    }
    assert.deepEqual(await adRows('chatgpt_ads'), before);
  });

  test('a valid key connects its one account at once, as an API-key connection', async () => {
    const page = await get(admin, url());
    const key = chatgpt.issueKey({ accountId: CHATGPT.id });
    secrets.push(key);
    const r = await post(admin, url('/api-key'), { csrf: hidden(page.text, 'csrf'), key: `  ${key}\n` });
    assert.equal(r.status, 303, r.text.slice(0, 300));
    assert.equal(r.location, `/app/hubs/${HUB}/settings/ad-accounts?notice=api-key`);
    const listed = await get(admin, r.location!);
    assert.match(listed.text, /ChatGPT Ads account connected: its first sync starts within 15 seconds\./);
    const account = await web.db.kysely
      .selectFrom('ad_accounts')
      .innerJoin('ad_connections', 'ad_connections.id', 'ad_accounts.connection_id')
      .select([
        'ad_accounts.id',
        'ad_accounts.external_id',
        'ad_accounts.name',
        'ad_accounts.currency',
        'ad_accounts.time_zone',
        'ad_connections.kind',
        'ad_connections.label',
      ])
      .where('ad_accounts.hub_id', '=', HUB)
      .where('ad_accounts.platform', '=', 'chatgpt_ads')
      .execute();
    assert.equal(account.length, 1);
    const { id, ...rest } = account[0]!;
    assert.deepEqual(rest, {
      external_id: CHATGPT.id,
      name: CHATGPT.name,
      currency: 'USD',
      time_zone: CHATGPT.timezone,
      kind: 'api_key',
      label: 'ChatGPT Ads API key',
    });
    assert.match(
      listed.text,
      new RegExp(`<tr data-ad-account="${id}"><td data-label="Account"><strong>Acme Ask</strong><br><small>ChatGPT Ads`),
    );
    // Sealed: the key is nowhere in the row in clear.
    const dump = await sql<{ t: string }>`SELECT string_agg(row_to_json(c)::text, ' ') AS t FROM ad_connections c`.execute(web.db.kysely);
    assert.ok(!dump.rows[0]!.t.includes(key) && !dump.rows[0]!.t.includes(Buffer.from(key).toString('hex')));
  });

  test('no credential in any page the app answered nor in any log line', async () => {
    assert.ok(secrets.length >= 5, 'the Google refresh tokens and the ChatGPT keys');
    assert.ok(bodies.length > 20);
    for (const secret of secrets) {
      assert.ok(secret.length > 20);
      assert.ok(!bodies.some((b) => b.includes(secret)), 'a credential reached a page');
    }
    const log = lines.map((l) => JSON.stringify(l)).join('\n');
    assert.ok(
      lines.some((l) => l.msg === 'ad accounts connected' && l.platform === 'chatgpt_ads'),
      'the log was captured',
    );
    for (const secret of secrets) assert.ok(!log.includes(secret), 'a credential reached the log');
  });
});

describe('a server without a Google OAuth client', () => {
  let web: TestApp;
  before(async () => {
    web = await startApp({ listen: true, now: 'system', seed: seedWebHub });
  });
  after(async () => web?.close());

  test('the Google Ads card says it is not set up, and /google/connect is a 404', async () => {
    const admin = await signedIn(web);
    const base = `${web.baseUrl}/app/hubs/${HUB}/settings/ad-accounts`;
    const page = await admin.fetch(base);
    assert.equal(page.status, 200);
    const text = await page.text();
    const card = /<div class="card" id="connect-google">(?:(?!<\/div>)[\s\S])*<\/div>/.exec(text)?.[0] ?? '';
    assert.match(
      card,
      /data-no-google><small>Google Ads is not set up on this server \(the operator sets GOOGLE_OAUTH_CLIENT_ID and GOOGLE_OAUTH_CLIENT_SECRET\)/,
    );
    assert.doesNotMatch(text, /data-connect-google/);
    const connect = await admin.fetch(`${base}/google/connect`);
    assert.equal(connect.status, 404);
    assert.equal(connect.headers.get('location'), null);
    assert.match(
      await connect.text(),
      /Google Ads is not set up on this server: the operator sets GOOGLE_OAUTH_CLIENT_ID and GOOGLE_OAUTH_CLIENT_SECRET\./,
    );
  });
});
