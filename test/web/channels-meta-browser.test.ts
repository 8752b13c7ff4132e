// Manage Hub → Facebook & Instagram in Chromium against the Meta sandbox (ads and Pages on one
// server): Connect Facebook Pages / Instagram through the sandbox's Facebook Login dialog, map a
// Page and its Instagram account to workspaces, the channels made with sealed Page tokens that
// publish through the connector; until the choice the user token waits in the session-bound
// pending store (no connection row; another session cannot open the chooser); an ads state is
// refused by the Pages callback; the pages at 390 and 1280 px (screenshots in /tmp/meta-shots).
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { createMetaPagesConnector } from '../../src/integrations/meta-pages/connector.ts';
import { startMetaPagesSandbox } from '../../src/integrations/meta-pages/sandbox.ts';
import { Sealer } from '../../src/platform/sealing.ts';
import { resolveSecretsKeys } from '../../src/surfaces/oauth/server-secrets.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { CHROMIUM, CHROMIUM_ARGS, chromiumMissing } from '../support/chromium.ts';
import { overflows } from '../support/page-checks.ts';
import { ADMIN, HUB, seedWebHub } from '../support/world.ts';

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';
const SHOTS = '/tmp/meta-shots';
if (chromiumMissing) console.log(`# SKIP Meta channels browser tests: ${chromiumMissing}`);

describe('Connect Facebook Pages / Instagram in Chromium', { skip: chromiumMissing }, () => {
  let sandbox: Awaited<ReturnType<typeof startMetaPagesSandbox>>;
  let web: TestApp;
  let browser: Browser;
  let page: Page;
  const listUrl = () => `${web.baseUrl}/app/hubs/${HUB}/settings/channels/meta`;
  const connections = () => web.db.kysely.selectFrom('channel_connections').selectAll().where('hub_id', '=', HUB).orderBy('id').execute();
  const signedInPage = async (): Promise<Page> => {
    const p = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await p.goto(`${web.baseUrl}/app/sign-in`);
    await p.fill('#email', ADMIN.email);
    await p.fill('#password', ADMIN.password);
    await p.click('button[type=submit]');
    await p.waitForURL(/\/app\/hubs\/hub_web$/);
    return p;
  };

  before(async () => {
    const { chromium } = await import('playwright-core');
    sandbox = await startMetaPagesSandbox();
    web = await startApp({
      listen: true,
      now: 'system',
      seed: seedWebHub,
      env: {
        META_GRAPH_URL: sandbox.url,
        META_DIALOG_URL: sandbox.url,
        META_APP_ID: sandbox.appId,
        META_APP_SECRET: sandbox.appSecret,
      },
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    page = await signedInPage();
    await mkdir(SHOTS, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    await web?.close();
    await sandbox?.close();
  });

  test('profile menu → Facebook & Instagram → Facebook Login → map the Page and its Instagram account → channels that publish', async () => {
    await page.click('details.profile summary');
    await page.click('[role=menuitem] >> text=Facebook & Instagram');
    await page.waitForURL(/\/settings\/channels\/meta$/);
    await page.screenshot({ path: `${SHOTS}/list-empty-1280.png`, fullPage: true });
    await page.click('#connect-meta-pages');
    // The sandbox's Facebook Login dialog, asking for the Pages permissions.
    await page.waitForURL((url) => url.pathname.endsWith('/dialog/oauth'));
    const scope = new URL(page.url()).searchParams.get('scope') ?? '';
    for (const s of [
      'pages_manage_posts',
      'pages_read_engagement',
      'pages_show_list',
      'instagram_basic',
      'instagram_content_publish',
      'instagram_manage_insights',
    ])
      assert.ok(scope.split(',').includes(s), s);
    await page.click('button[value=allow]');
    await page.waitForURL(/\/settings\/channels\/meta\/choose\?pending=/);
    await page.screenshot({ path: `${SHOTS}/choose-1280.png`, fullPage: true });
    assert.equal(await page.locator('li.meta-page').count(), 2);
    assert.ok(!(await page.content()).includes('EAAsandbox'), 'no token in the page');
    // Before the choice nothing is stored as a connection: the user token waits, sealed, for this session.
    assert.deepEqual(await connections(), [], 'no connection before the admin chose');
    const chooserUrl = page.url();
    // Another session of the same admin cannot open this chooser with its handle.
    const other = await signedInPage();
    assert.equal((await other.goto(chooserUrl))?.status(), 410);
    assert.match((await other.textContent('body')) ?? '', /no longer open/);
    await other.context().close();
    await page.selectOption('select[name="facebook:1000000001"]', 'ws_a');
    await page.selectOption('select[name="instagram:17841400000000001"]', 'ws_b');
    await page.click('text=Connect channels');
    await page.waitForURL(/\/settings\/channels\/meta\?notice=connected$/);
    await page.screenshot({ path: `${SHOTS}/list-connected-1280.png`, fullPage: true });
    assert.deepEqual(await page.locator('td[data-state]').allTextContents(), ['connected', 'connected']);

    const channels = await web.db.kysely
      .selectFrom('social_channels')
      .select(['id', 'workspace_id', 'platform', 'external_id', 'connection_id', 'token_sealed'])
      .where('hub_id', '=', HUB)
      .where('external_id', 'is not', null)
      .orderBy('platform')
      .execute();
    assert.deepEqual(
      channels.map((c) => [c.platform, c.workspace_id, c.external_id]),
      [
        ['facebook', 'ws_a', '1000000001'],
        ['instagram', 'ws_b', '17841400000000001'],
      ],
    );
    const made = await connections();
    assert.deepEqual(
      made.map((c) => c.id),
      [channels[0]!.connection_id],
      'one connection, made at the choice, for what was mapped',
    );
    assert.equal(channels[1]!.connection_id, channels[0]!.connection_id);
    const connection = made[0]!;
    const sealer = new Sealer((await resolveSecretsKeys(web.config)).keys);
    // The user token sealed with the connection id; each Page token with its channel id (not another's).
    assert.match(sealer.open(connection.token_sealed, connection.id), /^EAAsandbox/);
    const pageToken = sealer.open(channels[0]!.token_sealed!, channels[0]!.id);
    assert.equal(pageToken, sandbox.organic.pageToken('1000000001'));
    assert.throws(() => sealer.open(channels[0]!.token_sealed!, channels[1]!.id));
    // The channel publishes through the connector with its Page token.
    const connector = createMetaPagesConnector({ graphUrl: sandbox.url });
    const before = sandbox.organic.counts()['1000000001']!;
    await connector.publish(
      { text: 'Hello from the connected Page', media: [] },
      { id: channels[0]!.id, platform: 'facebook', externalId: '1000000001', secret: pageToken },
    );
    assert.equal(sandbox.organic.counts()['1000000001'], before + 1);

    // The handle was taken by the choice: sending the form again (a double click) changes nothing.
    assert.equal((await page.goto(chooserUrl))?.status(), 410);
    await page.goto(listUrl());

    // Connecting again reconnects the same channels (no duplicate), keeping their workspaces.
    await page.click('#connect-meta-pages');
    await page.click('button[value=allow]');
    await page.waitForURL(/\/choose\?pending=/);
    await page.selectOption('select[name="facebook:1000000001"]', 'ws_c');
    await page.click('text=Connect channels');
    await page.waitForURL(/notice=connected$/);
    const again = await web.db.kysely
      .selectFrom('social_channels')
      .select(['id', 'workspace_id'])
      .where('external_id', '=', '1000000001')
      .execute();
    assert.deepEqual(again, [{ id: channels[0]!.id, workspace_id: 'ws_a' }]);
  });

  test("an ads connection's state is refused by the Pages callback; a choice naming a Page the token cannot manage is refused", async () => {
    // Start the ads flow, take its state, and hand it to the Pages callback.
    await page.goto(`${web.baseUrl}/app/hubs/${HUB}/settings/ad-accounts/meta/connect`);
    await page.waitForURL((url) => url.pathname.endsWith('/dialog/oauth'));
    const state = new URL(page.url()).searchParams.get('state')!;
    const answer = await page.goto(`${web.baseUrl}/app/channels/meta/callback?code=x&state=${encodeURIComponent(state)}`);
    assert.equal(answer?.status(), 400);
    assert.match((await page.textContent('body')) ?? '', /does not belong to a Pages connection/);
    // A forged choice (a Page id the token does not list) is refused with the reason, nothing made.
    await page.goto(listUrl());
    await page.click('#connect-meta-pages');
    await page.click('button[value=allow]');
    await page.waitForURL(/\/choose\?pending=/);
    const before = await connections();
    await page.evaluate(`(() => {
      const select = document.querySelector('select[name="facebook:1000000002"]');
      select.name = 'facebook:999999';
      select.value = 'ws_a';
    })()`);
    await page.click('text=Connect channels');
    assert.match((await page.textContent('[role=alert]')) ?? '', /not one this Facebook sign-in can manage/);
    assert.equal((await web.db.kysely.selectFrom('social_channels').select('id').where('external_id', '=', '999999').execute()).length, 0);
    assert.deepEqual(await connections(), before, 'a refused choice stores no connection');
    // The sign-in is still held for this session: the admin chooses again from the same chooser.
    await page.selectOption('select[name="facebook:1000000002"]', 'ws_c');
    await page.click('text=Connect channels');
    await page.waitForURL(/notice=connected$/);
    assert.equal(
      (await web.db.kysely.selectFrom('social_channels').select('workspace_id').where('external_id', '=', '1000000002').executeTakeFirst())
        ?.workspace_id,
      'ws_c',
    );
  });

  test('the pages at 390 and 1280 px: nothing overflows', async () => {
    for (const width of [390, 1280]) {
      await page.setViewportSize({ width, height: 900 });
      await page.goto(listUrl());
      assert.deepEqual(await overflows(page, width), [], `list at ${width}`);
      await page.screenshot({ path: `${SHOTS}/list-${width}.png`, fullPage: true });
      await page.click('#connect-meta-pages');
      await page.click('button[value=allow]');
      await page.waitForURL(/\/choose\?pending=/);
      assert.deepEqual(await overflows(page, width), [], `chooser at ${width}`);
      await page.screenshot({ path: `${SHOTS}/choose-${width}.png`, fullPage: true });
    }
  });
});
