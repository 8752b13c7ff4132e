// Connected apps (profile menu → Connected apps), end to end: a real OAuth client (oauth4webapi)
// authorised in Chromium, its tokens used on the REST API and the MCP server, the page listing it,
// and Revoke refusing every token of the grant on this instance and on a second one sharing the
// database. Then who may see and revoke which grant, hostile client names and CSRF.
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser as Chromium, BrowserContext, Page } from 'playwright-core';
import { buildApp, type App } from '../../src/app.ts';
import { createUser } from '../../src/domain/tenancy/tenancy.service.ts';
import { freePort } from '../../src/platform/net.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { CHROMIUM, CHROMIUM_ARGS, chromiumMissing } from '../support/chromium.ts';
import {
  api,
  authorize,
  exchangeCode,
  insecure,
  oauth,
  REDIRECT,
  refresh,
  registerClient,
  type RegisteredClient,
} from '../support/oauth-flow.ts';
import { form, hidden, signedIn } from '../support/web-forms.ts';
import { ADMIN, HUB, MEMBER, seedWebHub } from '../support/world.ts';

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';
if (chromiumMissing) console.log(`# SKIP connected apps browser tests: ${chromiumMissing}`);
const SHOTS = process.env.HUBOPS_SHOTS ?? path.join(tmpdir(), `hubops-connected-apps-${process.pid}`);

/** The admin and a member of another hub, whose grants Acme's admin must never reach. */
const OTHER_ADMIN = { email: 'otto@other.test', password: 'other admin password 1' };
const OTHER_MEMBER = { email: 'olga@other.test', password: 'other member password 1' };

async function seed(db: TestApp['db']): Promise<void> {
  await seedWebHub(db);
  await createUser(db, { ...OTHER_ADMIN, firstname: 'Otto', lastname: 'Other', hubId: 'hub_other', role: 'hub_admin' });
  await createUser(db, {
    ...OTHER_MEMBER,
    firstname: 'Olga',
    lastname: 'Other',
    hubId: 'hub_other',
    role: 'member',
    workspaceId: 'ws_other',
  });
}

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

/** One initialize request to the main MCP server with a bearer token: its status. */
async function mcpStatus(live: Pick<TestApp, 'baseUrl'>, token: string): Promise<number> {
  const response = await fetch(`${live.baseUrl}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
      authorization: `Bearer ${token}`,
    },
    body: JSON.stringify(INITIALIZE),
  });
  await response.body?.cancel();
  return response.status;
}

/** Waits (up to 10 s) for `check` to hold: for what another instance learns by NOTIFY. */
async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 25))) {
    if (await check()) return;
  }
  assert.fail(`never happened: ${what}`);
}

/** Tokens for `who` by the HTTP cookie-jar browser (for the grants the test only needs to exist). */
async function tokensOverHttp(
  live: TestApp,
  client: RegisteredClient,
  who: { email: string; password: string },
  choice: { hub?: string; workspace?: string } = {},
) {
  const result = await authorize(live, client, { ...who, ...choice, redirectUri: REDIRECT });
  assert.ok(result.callback?.searchParams.get('code'), `a code (got ${result.response.status})`);
  return exchangeCode(live, client, result, REDIRECT);
}

/** The grants listed in a section (#my-apps or #hub-apps) of a Connected apps page: reference and row HTML. */
function rowsIn(html: string, section: 'my-apps' | 'hub-apps'): { ref: string; html: string }[] {
  const start = html.indexOf(`id="${section}"`);
  if (start < 0) return [];
  const body = html.slice(start, html.indexOf('</section>', start));
  return body
    .split('<tr data-grant="')
    .slice(1)
    .map((part) => ({ ref: part.slice(0, 64), html: part.slice(0, part.indexOf('</tr>')) }));
}

/** The reference of the one grant of `clientName` in a section. */
function refOf(html: string, section: 'my-apps' | 'hub-apps', clientName: string): string {
  const rows = rowsIn(html, section).filter((r) => r.html.includes(`>${clientName}<`));
  assert.equal(rows.length, 1, `one ${clientName} in #${section}`);
  return rows[0]!.ref;
}

describe('Connected apps', { skip: chromiumMissing }, () => {
  let a: TestApp;
  /** A second instance on the same database and configuration (so the same token audiences), on its own port. */
  let other: App;
  let b: TestApp;
  let chromium: Chromium;
  let context: BrowserContext;
  let page: Page;

  before(async () => {
    const { chromium: launcher } = await import('playwright-core');
    a = await startApp({ listen: true, now: 'system', limiter: 'unlimited', seed });
    other = await buildApp({ config: a.config, db: a.db, logger: false, publisher: false });
    const port = await freePort();
    await other.fastify.listen({ port, host: '127.0.0.1' });
    const bUrl = `http://127.0.0.1:${port}`;
    // What the oauth-flow helpers use of an app, pointed at the second instance.
    b = { baseUrl: bUrl, as: { ...a.as, token_endpoint: a.as.token_endpoint!.replace(a.baseUrl, bUrl) } } as unknown as TestApp;
    chromium = await launcher.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    context = await chromium.newContext({ viewport: { width: 1280, height: 900 } });
    // The client's redirect URI: the browser lands there with the code, nothing needs to answer.
    await context.route('http://127.0.0.1:9/**', (route) =>
      route.fulfill({ status: 200, contentType: 'text/plain', body: 'back at the client' }),
    );
    page = await context.newPage();
    await mkdir(SHOTS, { recursive: true });
  });
  after(async () => {
    await chromium?.close();
    await other?.close();
    await a?.close();
  });

  /** Authorization code + PKCE in Chromium: sign in (once per browser), consent, exchange the code. */
  async function connectInBrowser(
    client: RegisteredClient,
    who: { email: string; password: string },
    o: { resource?: string; phone?: boolean } = {},
  ) {
    const { resource } = o;
    if (o.phone) await page.setViewportSize({ width: 390, height: 844 });
    const codeVerifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(a.as.authorization_endpoint!);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: client.client.client_id,
      redirect_uri: REDIRECT,
      scope: 'service:full',
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      ...(resource ? { resource } : {}),
    }).toString();
    await page.goto(url.toString());
    if (await page.isVisible('#password')) {
      await page.fill('#email', who.email);
      await page.fill('#password', who.password);
      await page.click('button[type=submit]');
    }
    await page.waitForSelector('button[value=allow]');
    const link = page.locator('a', { hasText: 'Connected apps' });
    assert.equal(await link.getAttribute('href'), '/app/connected-apps', 'the consent page links to Connected apps');
    if (o.phone) {
      assert.ok(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth'), 'the consent page fits the phone');
      await page.setViewportSize({ width: 1280, height: 900 });
    }
    await page.click('button[value=allow]');
    await page.waitForURL((u) => u.href.startsWith(REDIRECT));
    const params = oauth.validateAuthResponse(a.as, client.client, new URL(page.url()), state);
    const response = await oauth.authorizationCodeGrantRequest(
      a.as,
      client.client,
      client.clientAuth,
      params,
      REDIRECT,
      codeVerifier,
      insecure,
    );
    return oauth.processAuthorizationCodeResponse(a.as, client.client, response);
  }

  /** Opens Connected apps, signing in to the web admin (a session of its own) when asked to. */
  async function openConnectedApps(who: { email: string; password: string }) {
    await page.goto(`${a.baseUrl}/app/connected-apps`);
    if (!page.url().includes('/sign-in')) return;
    await page.fill('#email', who.email);
    await page.fill('#password', who.password);
    await page.click('button[type=submit]');
    await page.waitForURL(/\/app\/connected-apps$/);
  }

  test('a member connects two apps in the browser, sees them, revokes each: its tokens are refused on both instances, REST and MCP', async () => {
    const started = new Date();
    const reporting = await registerClient(a, { confidential: true, redirectUri: REDIRECT, name: 'Reporting Bot' });
    const assistant = await registerClient(a, { confidential: false, redirectUri: REDIRECT, name: 'Desk Assistant' });
    const rest = await connectInBrowser(reporting, MEMBER);
    const mcp = await connectInBrowser(assistant, MEMBER, { resource: `${a.baseUrl}/mcp` });

    // Used on both instances; B now holds the REST token's verdict in its cache.
    assert.equal((await api(a, '/whoami', rest.access_token)).status, 200);
    assert.equal((await api(b, '/whoami', rest.access_token)).status, 200);
    assert.equal((await api(b, '/whoami', rest.access_token)).status, 200);
    assert.equal(await mcpStatus(a, mcp.access_token), 200);
    assert.equal(await mcpStatus(b, mcp.access_token), 200);

    await openConnectedApps(MEMBER);
    const row = (name: string) => page.locator('#my-apps tr[data-grant]', { has: page.locator('[data-client-name]', { hasText: name }) });
    // Last use is written in the background after the request: wait for it on the page.
    await eventually(async () => {
      await page.reload();
      return (
        (await row('Reporting Bot').locator('[data-last-used] time').count()) === 1 &&
        (await row('Desk Assistant').locator('[data-last-used] time').count()) === 1
      );
    }, 'the last use is shown, of the REST app and of the MCP one');
    const bot = row('Reporting Bot');
    assert.equal(await bot.count(), 1);
    const cells = await bot.locator('td').allInnerTexts();
    assert.match(cells.join(' | '), /Acme Franchises\s+workspace =1\+1 Downtown/);
    assert.match(cells.join(' | '), /service:full/);
    const authorised = new Date(String(await bot.locator('[data-authorised]').getAttribute('datetime')));
    const lastUsed = bot.locator('[data-last-used] time');
    const usedAt = new Date(String(await lastUsed.getAttribute('datetime')));
    const now = new Date();
    for (const [what, at] of [
      ['authorised', authorised],
      ['last used', usedAt],
    ] as const) {
      assert.ok(
        at.getTime() >= started.getTime() - 1000 && at.getTime() <= now.getTime(),
        `${what} ${at.toISOString()} is within the test`,
      );
    }
    assert.ok(usedAt >= authorised);
    assert.match(await lastUsed.innerText(), /^(just now|1 minute ago)$/);
    assert.match(String(await lastUsed.getAttribute('title')), /^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/);
    assert.equal(await row('Desk Assistant').count(), 1);
    assert.equal(await page.locator('#hub-apps').count(), 0, 'a member has no hub section');

    // Fits a phone and a desktop: nothing wider than the viewport; on the phone Revoke is a 44 px target.
    for (const width of [390, 1280]) {
      await page.setViewportSize({ width, height: 900 });
      const overflow = (await page.evaluate('document.documentElement.scrollWidth - window.innerWidth')) as number;
      assert.ok(overflow <= 0, `at ${width} px the page is ${overflow} px wider than the screen`);
      if (width === 390) {
        const box = await bot.locator('a', { hasText: 'Revoke' }).boundingBox();
        assert.ok(box && box.height >= 44 && box.width >= 44, `on a phone Revoke is ${box?.width}×${box?.height}, not a 44 px target`);
      }
      await page.screenshot({ path: path.join(SHOTS, `connected-apps-${width}.png`), fullPage: true });
    }
    await page.setViewportSize({ width: 1280, height: 900 });

    // Revoke asks first, on a page of its own; Cancel goes back and revokes nothing.
    await bot.locator('a', { hasText: 'Revoke' }).click();
    await page.waitForURL(/\/app\/connected-apps\/[^/]+\/revoke$/);
    assert.match(await page.locator('h1').innerText(), /^Revoke “Reporting Bot”\?$/);
    assert.match(await page.locator('[data-confirm-revoke]').innerText(), /It acts for you in .*This cannot be undone/s);
    for (const width of [390, 1280]) {
      await page.setViewportSize({ width, height: 900 });
      assert.ok(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth'), `the confirmation fits ${width} px`);
      await page.screenshot({ path: path.join(SHOTS, `connected-apps-confirm-${width}.png`), fullPage: true });
    }
    await page.locator('a', { hasText: 'Cancel' }).click();
    await page.waitForURL(/\/app\/connected-apps$/);
    assert.equal((await api(a, '/whoami', rest.access_token)).status, 200, 'Cancel revoked nothing');
    await bot.locator('a', { hasText: 'Revoke' }).click();
    await page.locator('button', { hasText: 'Yes, revoke its access' }).click();
    await page.waitForURL(/\/app\/connected-apps\?revoked=1$/);
    assert.match(await page.locator('[role=status]').innerText(), /Access revoked/);
    assert.equal(await row('Reporting Bot').count(), 0, 'gone from the list');
    assert.equal(await row('Desk Assistant').count(), 1, 'the other app is untouched');

    // This instance refuses at once; the other as soon as the NOTIFY arrives (it had it cached).
    const onA = await api(a, '/whoami', rest.access_token);
    assert.equal(onA.status, 401);
    assert.equal(onA.body.error, 'invalid_token');
    await eventually(async () => (await api(b, '/whoami', rest.access_token)).status === 401, 'instance B refuses the revoked token');
    await assert.rejects(refresh(b, reporting, rest.refresh_token!), (error: { error?: string }) => error.error === 'invalid_grant');
    await assert.rejects(refresh(a, reporting, rest.refresh_token!), (error: { error?: string }) => error.error === 'invalid_grant');
    assert.equal(await mcpStatus(b, mcp.access_token), 200, 'the other grant still works');

    await row('Desk Assistant').locator('a', { hasText: 'Revoke' }).click();
    await page.locator('button', { hasText: 'Yes, revoke its access' }).click();
    await page.waitForURL(/revoked=1$/);
    assert.equal(await mcpStatus(a, mcp.access_token), 401);
    await eventually(async () => (await mcpStatus(b, mcp.access_token)) === 401, 'instance B refuses the revoked MCP token');
    await assert.rejects(refresh(a, assistant, mcp.refresh_token!), (error: { error?: string }) => error.error === 'invalid_grant');
    assert.equal(await page.locator('#my-apps [data-empty]').count(), 1, 'the empty state explains the page');
  });

  test('a hostile client name is shown as text, never as markup, and long names wrap on a phone', async () => {
    const name = `<img src=x onerror="document.title='owned'">"&'<script>alert(1)</script>`;
    const hostile = await registerClient(a, { confidential: false, redirectUri: REDIRECT, name });
    await connectInBrowser(hostile, MEMBER, { phone: true }); // its consent page too: escaped, and wrapped to fit
    await openConnectedApps(MEMBER);
    const shown = page.locator('#my-apps [data-client-name]');
    assert.deepEqual(await shown.allInnerTexts(), [name]);
    assert.equal(await page.locator('main img, main script').count(), 0);
    assert.notEqual(await page.title(), 'owned');
    assert.equal(await page.locator('#my-apps a[aria-label]').getAttribute('aria-label'), `Revoke ${name}`);
    // Its confirmation page too: the name as text.
    await page.locator('#my-apps a[aria-label]').click();
    assert.equal(await page.locator('h1').innerText(), `Revoke “${name}”?`);
    assert.equal(await page.locator('main img, main script').count(), 0);
    assert.notEqual(await page.title(), 'owned');
  });

  test("a member never sees nor revokes another user's grant: 404, and the grant keeps working", async () => {
    const client = await registerClient(a, { confidential: false, redirectUri: REDIRECT, name: 'Admin Dashboard' });
    const adminTokens = await tokensOverHttp(a, client, ADMIN, { hub: HUB, workspace: '' });
    const adminBrowser = await signedIn(a, ADMIN);
    const adminPage = await (await adminBrowser.fetch(`${a.baseUrl}/app/connected-apps`)).text();
    const adminRef = refOf(adminPage, 'my-apps', 'Admin Dashboard');
    assert.match(adminPage, /whole hub/);

    const member = await signedIn(a, MEMBER);
    const memberPage = await (await member.fetch(`${a.baseUrl}/app/connected-apps`)).text();
    assert.ok(!memberPage.includes(adminRef) && !memberPage.includes('Admin Dashboard'), "not on the member's page");
    const peek = await member.fetch(`${a.baseUrl}/app/connected-apps/${adminRef}/revoke`);
    assert.equal(peek.status, 404, "another user's confirmation page is not found either");
    assert.ok(!(await peek.text()).includes('Admin Dashboard'));
    const refused = await member.fetch(`${a.baseUrl}/app/connected-apps/${adminRef}/revoke`, form({ csrf: hidden(memberPage, 'csrf') }));
    assert.equal(refused.status, 404);
    assert.match(await refused.text(), /No such connected app/);
    for (const junk of ['not-a-ref', 'A'.repeat(64), `${adminRef}00`]) {
      assert.equal(
        (await member.fetch(`${a.baseUrl}/app/connected-apps/${junk}/revoke`, form({ csrf: hidden(memberPage, 'csrf') }))).status,
        404,
        junk,
      );
    }
    assert.equal((await api(a, '/whoami', adminTokens.access_token)).status, 200, "the admin's app still works");
  });

  test("a hub admin sees and revokes a member's grant in their hub, never one in another hub", async () => {
    const client = await registerClient(a, { confidential: false, redirectUri: REDIRECT, name: 'Member Sheets' });
    const memberTokens = await tokensOverHttp(a, client, MEMBER);
    const elsewhere = await registerClient(a, { confidential: false, redirectUri: REDIRECT, name: 'Other Hub Tool' });
    const otherTokens = await tokensOverHttp(a, elsewhere, OTHER_MEMBER);

    const admin = await signedIn(a, ADMIN);
    const html = await (await admin.fetch(`${a.baseUrl}/app/connected-apps`)).text();
    assert.match(html, /Apps others connected in your hubs/);
    assert.ok(!html.includes('Other Hub Tool'), 'nothing from another hub');
    const memberRef = refOf(html, 'hub-apps', 'Member Sheets');
    assert.ok(
      rowsIn(html, 'hub-apps')
        .find((r) => r.ref === memberRef)!
        .html.includes(MEMBER.email),
      'with who connected it',
    );

    // The other hub's grant, by its reference (seen by that hub's admin): 404 for Acme's admin.
    const otto = await signedIn(a, OTHER_ADMIN);
    const ottoHtml = await (await otto.fetch(`${a.baseUrl}/app/connected-apps`)).text();
    const otherRef = refOf(ottoHtml, 'hub-apps', 'Other Hub Tool');
    assert.ok(!ottoHtml.includes('Member Sheets'), "and not Acme's");
    assert.equal(
      (await admin.fetch(`${a.baseUrl}/app/connected-apps/${otherRef}/revoke`, form({ csrf: hidden(html, 'csrf') }))).status,
      404,
    );
    assert.equal((await api(a, '/whoami', otherTokens.access_token)).status, 200);

    // The admin revokes it in the browser, on a phone.
    const adminContext = await chromium.newContext({ viewport: { width: 390, height: 844 } });
    try {
      const adminPage = await adminContext.newPage();
      await adminPage.goto(`${a.baseUrl}/app/connected-apps`);
      await adminPage.fill('#email', ADMIN.email);
      await adminPage.fill('#password', ADMIN.password);
      await adminPage.click('button[type=submit]');
      await adminPage.waitForURL(/\/app\/connected-apps$/);
      const memberRow = adminPage.locator(`#hub-apps tr[data-grant="${memberRef}"]`);
      assert.match(await memberRow.innerText(), new RegExp(`Max Member[\\s\\S]*${MEMBER.email.replace('.', '\\.')}`));
      assert.ok(await adminPage.evaluate('document.documentElement.scrollWidth <= window.innerWidth'), "the admin's page fits the phone");
      await adminPage.screenshot({ path: path.join(SHOTS, 'connected-apps-admin-390.png'), fullPage: true });
      await memberRow.locator('a', { hasText: 'Revoke' }).click();
      assert.match(await adminPage.locator('[data-confirm-revoke]').innerText(), /It acts for Max Member in /);
      await adminPage.screenshot({ path: path.join(SHOTS, 'connected-apps-admin-confirm-390.png'), fullPage: true });
      await adminPage.locator('button', { hasText: 'Yes, revoke its access' }).click();
      await adminPage.waitForURL(/revoked=1$/);
      assert.equal(await adminPage.locator(`tr[data-grant="${memberRef}"]`).count(), 0);
    } finally {
      await adminContext.close();
    }
    assert.equal((await api(a, '/whoami', memberTokens.access_token)).status, 401);
    const again = await admin.fetch(`${a.baseUrl}/app/connected-apps/${memberRef}/revoke`, form({ csrf: hidden(html, 'csrf') }));
    assert.equal(again.status, 303, 'revoking again (a second tab) changes nothing and is not an error');
    assert.ok(!(await (await admin.fetch(`${a.baseUrl}/app/connected-apps`)).text()).includes('Member Sheets'));
  });

  test("a POST without the session's CSRF token (or without a session) revokes nothing", async () => {
    const client = await registerClient(a, { confidential: false, redirectUri: REDIRECT, name: 'CSRF Target' });
    const tokens = await tokensOverHttp(a, client, MEMBER);
    const member = await signedIn(a, MEMBER);
    const html = await (await member.fetch(`${a.baseUrl}/app/connected-apps`)).text();
    const ref = refOf(html, 'my-apps', 'CSRF Target');
    const url = `${a.baseUrl}/app/connected-apps/${ref}/revoke`;
    assert.equal((await member.fetch(url, form({}))).status, 400);
    assert.equal((await member.fetch(url, form({ csrf: 'forged' }))).status, 400);
    assert.equal((await fetch(url, { ...form({ csrf: hidden(html, 'csrf') }), redirect: 'manual' })).status, 401, 'no session');
    assert.equal((await api(a, '/whoami', tokens.access_token)).status, 200, 'still connected');
    assert.ok((await (await member.fetch(`${a.baseUrl}/app/connected-apps`)).text()).includes(ref));
  });
});
