// Manage Hub → Ad accounts over real HTTP, against the Meta sandbox (src/integrations/meta/sandbox.ts)
// through the app's own Meta client: paste a system-user token, choose accounts (the token waits
// sealed server-side, never in a page), Sync now, the state in words, unattributed spend assigned
// in one step (CSRF refused, a double submit assigns once), disconnect (past figures stay), and the
// OAuth round trip's state bound to the session and hub. Chromium: ad-accounts-browser.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { syncNow } from '../../src/domain/ad-sync/ad-account.service.ts';
import { startMetaSandbox, type MetaSandbox } from '../../src/integrations/meta/sandbox.ts';
import { startApp, type TestApp } from '../support/app.ts';
import type { Browser } from '../support/oauth-flow.ts';
import { hidden, signedIn } from '../support/web-forms.ts';
import { ADMIN, HUB, MEMBER, seedWebHub } from '../support/world.ts';

/** Hostile names: each must reach the page escaped. */
const EVIL_CAMPAIGN = '"><img src=x onerror=alert(1)> Fall';
const SANDBOX_ACCOUNTS = [
  {
    id: 'act_7001',
    name: 'Acme <b>West</b>',
    timezone_name: 'America/Los_Angeles',
    adSets: [
      { id: '7001001', name: 'Prospecting', campaignId: '700191', campaignName: EVIL_CAMPAIGN },
      { id: '7001002', name: 'Retargeting [ws:ws_c]', campaignId: '700191', campaignName: EVIL_CAMPAIGN },
      { id: '7001003', name: 'Old store [ws:ws_gone]', campaignId: '700192', campaignName: 'Brand' },
    ],
  },
  { id: 'act_7002', name: 'Acme East', timezone_name: 'America/New_York' },
  { id: 'act_7003', name: 'Acme Europe', currency: 'EUR', timezone_name: 'Europe/Paris' },
];

describe('Manage Hub → Ad accounts over HTTP', () => {
  let sandbox: MetaSandbox;
  let web: TestApp;
  let admin: Browser;
  let page = '';
  let token = '';
  let accountId = '';
  const url = (path = '') => `${web.baseUrl}/app/hubs/${HUB}/settings/ad-accounts${path}`;
  const get = async (b: Browser, target: string) => {
    const r = await b.fetch(target);
    return { status: r.status, text: await r.text(), location: r.headers.get('location') };
  };
  const post = async (b: Browser, target: string, fields: Record<string, string> | URLSearchParams) => {
    const r = await b.fetch(target, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: fields instanceof URLSearchParams ? fields.toString() : new URLSearchParams(fields).toString(),
    });
    return { status: r.status, text: await r.text(), location: r.headers.get('location') };
  };
  const pendingRows = async () =>
    Number((await sql<{ n: string }>`SELECT count(*) AS n FROM ad_pending_connections`.execute(web.db.kysely)).rows[0]!.n);

  before(async () => {
    sandbox = await startMetaSandbox({ seed: { accounts: SANDBOX_ACCOUNTS, historyDays: 100 } });
    web = await startApp({
      listen: true,
      now: 'system',
      seed: seedWebHub,
      env: { META_GRAPH_URL: sandbox.url, META_DIALOG_URL: sandbox.url, META_APP_ID: sandbox.appId, META_APP_SECRET: sandbox.appSecret },
    });
    admin = await signedIn(web);
    token = sandbox.issueToken({ accounts: ['act_7001', 'act_7002', 'act_7003'], systemUser: true });
  });
  after(async () => {
    await web?.close();
    await sandbox?.close();
  });

  test('the page: no account yet, Connect Meta and the token form; members get 403', async () => {
    const r = await get(admin, url());
    assert.equal(r.status, 200);
    page = r.text;
    assert.match(page, /<h1>Manage Hub · Ad accounts<\/h1>/);
    assert.match(page, /data-no-accounts/);
    assert.match(page, /href="[^"]*\/settings\/ad-accounts\/meta\/connect" data-connect-meta>Connect Meta</);
    assert.match(page, /name="token" type="password"/);
    assert.match(page, /data-no-unattributed/);
    const member = await signedIn(web, MEMBER);
    assert.equal((await get(member, url())).status, 403);
    assert.equal(
      (await post(member, url('/token'), { csrf: hidden((await get(member, `${web.baseUrl}/app/hubs/${HUB}`)).text, 'csrf'), token }))
        .status,
      403,
    );
  });

  test('paste a token: CSRF, blank, malformed and refused tokens change nothing; a good one opens the chooser, the token never in a page', async () => {
    const csrf = hidden(page, 'csrf');
    const expired = await post(admin, url('/token'), { csrf: 'forged', token });
    assert.equal(expired.status, 400);
    assert.match(expired.text, /That form expired/);
    const blank = await post(admin, url('/token'), { csrf, token: '  ' });
    assert.equal(blank.status, 400);
    assert.match(blank.text, /id="token-error" role="alert">Paste the token first\./);
    const spaced = await post(admin, url('/token'), { csrf, token: 'EAA abc' });
    assert.match(spaced.text, /A token has no spaces or line breaks inside it/);
    const unknown = await post(admin, url('/token'), { csrf, token: 'EAAnotatoken' });
    assert.equal(unknown.status, 400);
    assert.match(unknown.text, /Meta did not accept the token \(/);
    assert.doesNotMatch(unknown.text, /EAAnotatoken/);
    assert.equal(await pendingRows(), 0);

    const ok = await post(admin, url('/token'), { csrf, token });
    assert.equal(ok.status, 303);
    assert.match(ok.location!, /\/settings\/ad-accounts\/choose\?pending=[A-Za-z0-9_-]{32}$/);
    // Held sealed: the row does not carry the token in any form.
    const row = await sql<{ t: string }>`SELECT row_to_json(p)::text AS t FROM ad_pending_connections p`.execute(web.db.kysely);
    assert.equal(row.rows.length, 1);
    assert.ok(!row.rows[0]!.t.includes(token) && !row.rows[0]!.t.includes(Buffer.from(token).toString('hex')));

    const chooser = await get(admin, `${web.baseUrl}${ok.location}`);
    assert.equal(chooser.status, 200);
    assert.ok(!chooser.text.includes(token), 'the token is not in the chooser');
    assert.match(chooser.text, /Acme &lt;b&gt;West&lt;\/b&gt;<\/strong> <code class="token">act_7001<\/code>/);
    assert.match(chooser.text, /act_7002/);
    // Another session cannot open this chooser.
    const other = await signedIn(web, ADMIN);
    assert.equal((await get(other, `${web.baseUrl}${ok.location}`)).status, 410);
    page = chooser.text;
  });

  test('choose: another currency is refused with the reason and the choice stays open; a double submit connects once', async () => {
    const csrf = hidden(page, 'csrf');
    const pending = hidden(page, 'pending');
    const eur = await post(
      admin,
      url('/choose'),
      new URLSearchParams([
        ['csrf', csrf],
        ['pending', pending],
        ['account', 'act_7003'],
      ]),
    );
    assert.equal(eur.status, 400);
    assert.match(eur.text, /ad account act_7003 reports spend in EUR, but this hub reports in USD/);
    assert.equal(await pendingRows(), 1, 'the token is put back for another choice');
    const none = await post(admin, url('/choose'), { csrf, pending });
    assert.match(none.text, /Choose at least one ad account\./);

    const fields = new URLSearchParams([
      ['csrf', csrf],
      ['pending', pending],
      ['account', 'act_7001'],
      ['label', 'Agency <system> user'],
    ]);
    const [first, second] = await Promise.all([post(admin, url('/choose'), fields), post(admin, url('/choose'), fields)]);
    assert.deepEqual([first.status, second.status], [303, 303]);
    assert.deepEqual([first.location, second.location].sort(), [
      `/app/hubs/${HUB}/settings/ad-accounts?notice=already`,
      `/app/hubs/${HUB}/settings/ad-accounts?notice=sync`,
    ]);
    const accounts = await web.db.kysely
      .selectFrom('ad_accounts')
      .select(['id', 'external_id'])
      .where('hub_id', '=', HUB)
      .where('external_id', 'is not', null)
      .execute();
    assert.deepEqual(
      accounts.map((a) => a.external_id),
      ['act_7001'],
    );
    accountId = accounts[0]!.id;
    assert.equal(await pendingRows(), 0, 'used once');
    const listed = await get(admin, url('?notice=sync'));
    assert.match(listed.text, /Sync requested/);
    assert.match(listed.text, new RegExp(`data-ad-account="${accountId}"`));
    assert.match(listed.text, /data-status="never_synced">Not synced yet</);
    assert.match(listed.text, /Connected; the first sync has not finished yet\./);
    page = listed.text;
  });

  test('Sync now asks for a sync; once it has run, the page says connected, since when and through which day', async () => {
    const sync = await post(admin, url(`/${accountId}/sync`), { csrf: hidden(page, 'csrf') });
    assert.equal(sync.status, 303);
    const row = await web.db.kysely
      .selectFrom('ad_accounts')
      .select('sync_requested_at')
      .where('id', '=', accountId)
      .executeTakeFirstOrThrow();
    assert.ok(row.sync_requested_at);
    assert.equal((await post(admin, url(`/${accountId}/sync`), { csrf: 'forged' })).status, 400);
    assert.equal((await post(admin, url('/aa_nope/sync'), { csrf: hidden(page, 'csrf') })).status, 404);

    // What the instance's sync loop does with the request (here, in the test's time).
    const outcome = await syncNow(web.app.adSync, HUB, accountId);
    assert.equal(outcome.status, 'done');
    page = (await get(admin, url())).text;
    assert.match(page, /data-status="connected">Connected</);
    assert.match(page, /<dt>Last complete sync<\/dt><dd><time datetime="[^"]+"[^>]*>(just now|\d+ minutes? ago)<\/time>/);
    assert.match(page, /<dt>Complete through<\/dt><dd><strong>\d{4}-\d{2}-\d{2}<\/strong>/);
    // Ad sets without a match, largest first, each with its reason; escaped everywhere.
    assert.doesNotMatch(page, /<img src=x/);
    assert.match(page, /&quot;&gt;&lt;img src=x onerror=alert\(1\)&gt; Fall/);
    const lines = [...page.matchAll(/data-unattributed="([^"]+)"[\s\S]*?data-spend-cents="(\d+)"/g)].map(
      (m) => [m[1], Number(m[2])] as const,
    );
    assert.deepEqual(lines.map(([key]) => key).sort(), [`${accountId}|700191|7001001`, `${accountId}|700192|7001003`]);
    assert.deepEqual(
      lines.map(([, cents]) => cents),
      lines.map(([, cents]) => cents).sort((a, b) => b - a),
      'largest first',
    );
    assert.match(page, /Its \[ws:…\] token names no workspace of this hub/);
  });

  test('assign: refused without the CSRF token or a workspace; a double submit assigns once, and the past spend moves', async () => {
    const csrf = hidden(page, 'csrf');
    const line = { ad_account: accountId, campaign: '700191', ad_set: '7001001', level: 'ad_set', workspace: 'ws_b' };
    const mappings = async () =>
      (await sql<{ n: string }>`SELECT count(*) AS n FROM ad_attribution_mappings`.execute(web.db.kysely)).rows[0]!.n;
    const forged = await post(admin, url('/assign'), { ...line, csrf: 'forged' });
    assert.equal(forged.status, 400);
    assert.match(forged.text, /That form expired/);
    const noWorkspace = await post(admin, url('/assign'), { ...line, workspace: '', csrf });
    assert.equal(noWorkspace.status, 400);
    assert.match(noWorkspace.text, /Choose the workspace this spend belongs to\./);
    const otherHub = await post(admin, url('/assign'), { ...line, workspace: 'ws_other', csrf });
    assert.equal(otherHub.status, 400);
    assert.match(otherHub.text, /no such workspace in this hub/);
    assert.equal(await mappings(), '0');

    const unattributedBefore = await web.db.kysely
      .selectFrom('spend')
      .select((eb) => eb.fn.sum<string>('spend_cents').as('c'))
      .where('ad_account_id', '=', accountId)
      .where('workspace_id', 'is', null)
      .executeTakeFirstOrThrow();
    const [a, b] = await Promise.all([post(admin, url('/assign'), { ...line, csrf }), post(admin, url('/assign'), { ...line, csrf })]);
    assert.deepEqual([a.status, b.status], [303, 303]);
    assert.equal(await mappings(), '1');
    page = (await get(admin, url('?notice=assigned'))).text;
    assert.match(page, /Assigned\. Its spend, past and future, now counts for that workspace\./);
    assert.doesNotMatch(page, new RegExp(`data-unattributed="${accountId}\\|700191\\|7001001"`));
    const unattributedAfter = await web.db.kysely
      .selectFrom('spend')
      .select((eb) => eb.fn.sum<string>('spend_cents').as('c'))
      .where('ad_account_id', '=', accountId)
      .where('workspace_id', 'is', null)
      .executeTakeFirstOrThrow();
    assert.ok(Number(unattributedAfter.c) < Number(unattributedBefore.c));
  });

  test("default workspace: the account's form sets it (CSRF-checked, a workspace of the hub), the spend no rule claims moves there, and None clears it", async () => {
    const action = `/app/hubs/${HUB}/settings/ad-accounts/${accountId}/default-workspace`;
    assert.match(page, new RegExp(`<form class="default-ws" method="post" action="${action}" data-once data-default-workspace>`));
    const csrf = hidden(page, 'csrf');
    const stored = async () =>
      (await web.db.kysely.selectFrom('ad_accounts').select('default_workspace_id').where('id', '=', accountId).executeTakeFirstOrThrow())
        .default_workspace_id;
    const unattributed = async () =>
      Number(
        (
          await web.db.kysely
            .selectFrom('spend')
            .select((eb) => eb.fn.sum<string>('spend_cents').as('c'))
            .where('ad_account_id', '=', accountId)
            .where('workspace_id', 'is', null)
            .executeTakeFirstOrThrow()
        ).c ?? 0,
      );
    const before = await unattributed();
    assert.ok(before > 0, 'the [ws:ws_gone] ad set is unattributed');

    const forged = await post(admin, url(`/${accountId}/default-workspace`), { workspace: 'ws_b', csrf: 'forged' });
    assert.equal(forged.status, 400);
    assert.match(forged.text, /That form expired/);
    const otherHub = await post(admin, url(`/${accountId}/default-workspace`), { workspace: 'ws_other', csrf });
    assert.equal(otherHub.status, 409);
    assert.match(otherHub.text, /no such workspace in this hub/);
    assert.equal((await post(admin, url('/aa_nope/default-workspace'), { workspace: 'ws_b', csrf })).status, 404);
    assert.equal(await stored(), null);
    assert.equal(await unattributed(), before);

    const set = await post(admin, url(`/${accountId}/default-workspace`), { workspace: 'ws_b', csrf });
    assert.equal(set.status, 303);
    assert.equal(await stored(), 'ws_b');
    assert.equal(await unattributed(), 0, 'the default workspace takes what no mapping or token claims');
    page = (await get(admin, `${web.baseUrl}${set.location}`)).text;
    assert.match(page, /Default workspace saved\./);
    assert.match(page, /<option value="ws_b" selected>/);
    assert.match(page, /data-no-unattributed/);

    const cleared = await post(admin, url(`/${accountId}/default-workspace`), { workspace: '', csrf });
    assert.equal(cleared.status, 303);
    assert.equal(await stored(), null);
    assert.equal(await unattributed(), before);
    page = (await get(admin, url())).text;
    assert.match(page, /<option value="" selected>None: leave it unattributed<\/option>/);
  });

  test('disconnect: the confirmation says what happens to past figures; after it the figures stay', async () => {
    const confirm = await get(admin, url(`/${accountId}/disconnect`));
    assert.equal(confirm.status, 200);
    assert.match(confirm.text, /Past figures stay:/);
    assert.match(confirm.text, /no longer counts toward freshness/);
    const totalBefore = await web.db.kysely
      .selectFrom('spend')
      .select((eb) => eb.fn.sum<string>('spend_cents').as('c'))
      .where('ad_account_id', '=', accountId)
      .executeTakeFirstOrThrow();
    assert.equal((await post(admin, url(`/${accountId}/disconnect`), { csrf: 'forged' })).status, 400);
    const done = await post(admin, url(`/${accountId}/disconnect`), { csrf: hidden(confirm.text, 'csrf') });
    assert.equal(done.status, 303);
    page = (await get(admin, `${web.baseUrl}${done.location}`)).text;
    assert.match(page, /The account was disconnected\. Its past figures stay in the reports/);
    assert.match(page, /<summary>Disconnected accounts \(1\)<\/summary>/);
    assert.match(page, /data-status="disconnected"/);
    const totalAfter = await web.db.kysely
      .selectFrom('spend')
      .select((eb) => eb.fn.sum<string>('spend_cents').as('c'))
      .where('ad_account_id', '=', accountId)
      .executeTakeFirstOrThrow();
    assert.equal(totalAfter.c, totalBefore.c);
    assert.equal((await get(admin, url(`/${accountId}/disconnect`))).status, 404);
  });

  test('OAuth: Connect Meta goes to the dialog with a state only this session and hub accept; the code becomes a long-lived token held for the chooser', async () => {
    const start = await get(admin, url('/meta/connect'));
    assert.equal(start.status, 303);
    const dialog = new URL(start.location!);
    assert.equal(`${dialog.origin}${dialog.pathname}`, `${sandbox.url}/v26.0/dialog/oauth`);
    assert.equal(dialog.searchParams.get('client_id'), sandbox.appId);
    assert.equal(dialog.searchParams.get('redirect_uri'), `${web.baseUrl}/app/ad-accounts/meta/callback`);
    assert.equal(dialog.searchParams.get('scope'), 'ads_read,business_management');
    const state = dialog.searchParams.get('state')!;

    // What the person's click on Continue does: the sandbox sends the browser back with a code.
    const allow = await fetch(dialog, {
      method: 'POST',
      body: new URLSearchParams({
        client_id: sandbox.appId,
        redirect_uri: dialog.searchParams.get('redirect_uri')!,
        state,
        scope: 'ads_read',
        decision: 'allow',
      }),
      redirect: 'manual',
    });
    const back = new URL(allow.headers.get('location')!);
    assert.equal(back.searchParams.get('state'), state);

    // Another session (even the same admin's) and a tampered state are refused; nothing is held.
    const other = await signedIn(web, ADMIN);
    assert.equal((await get(other, back.href)).status, 400);
    const tampered = new URL(back);
    tampered.searchParams.set('state', `${state.split('.')[0]}.${'A'.repeat(43)}`);
    assert.equal((await get(admin, tampered.href)).status, 400);
    assert.equal(await pendingRows(), 0);

    // A code Meta does not know: the service's refusal in the page (Meta's words), nothing held.
    const forged = new URL(back);
    forged.searchParams.set('code', 'not-a-code');
    const refused = await get(admin, forged.href);
    assert.equal(refused.status, 502);
    assert.match(
      refused.text,
      /Meta did not give hubops a token\. Meta refused a token for the sign-in: Invalid verification code format\./,
    );
    assert.equal(await pendingRows(), 0);

    const done = await get(admin, back.href);
    assert.equal(done.status, 303, done.text.slice(0, 300));
    assert.match(done.location!, /\/settings\/ad-accounts\/choose\?pending=/);
    const chooser = await get(admin, `${web.baseUrl}${done.location}`);
    assert.match(chooser.text, /act_7002/);
    // The OAuth connection keeps the token's expiry (long-lived: about 60 days).
    const fields = new URLSearchParams([
      ['csrf', hidden(chooser.text, 'csrf')],
      ['pending', hidden(chooser.text, 'pending')],
      ['account', 'act_7002'],
    ]);
    assert.equal((await post(admin, url('/choose'), fields)).status, 303);
    const conn = await web.db.kysely
      .selectFrom('ad_connections')
      .select(['kind', 'token_expires_at'])
      .where('hub_id', '=', HUB)
      .executeTakeFirstOrThrow();
    assert.equal(conn.kind, 'oauth');
    assert.ok(conn.token_expires_at && conn.token_expires_at.getTime() > Date.now() + 50 * 86_400_000);

    // Cancel in the dialog: back with error=access_denied, nothing connected.
    const again = new URL((await get(admin, url('/meta/connect'))).location!);
    const deny = await fetch(again, {
      method: 'POST',
      body: new URLSearchParams({
        client_id: sandbox.appId,
        redirect_uri: again.searchParams.get('redirect_uri')!,
        state: again.searchParams.get('state')!,
        decision: 'deny',
      }),
      redirect: 'manual',
    });
    const cancelled = await get(admin, deny.headers.get('location')!);
    assert.equal(cancelled.status, 303);
    assert.match(cancelled.location!, /notice=cancelled$/);
  });
});
