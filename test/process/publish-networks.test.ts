// Issue 23's end-to-end test: a post made in the main API or by an agent over MCP appears once on
// the location's Facebook Page, Instagram account and Google Business Profile, even when the
// server is killed with kill -9 in the middle of a batch.
//
// The world is real except the networks: the server is src/main.ts with npm start's flags, in a
// process group of its own, on a scratch database of the test's PostgreSQL; the networks are the
// loopback fakes (src/integrations/meta-pages/sandbox.ts, google-business/sandbox.ts) running in
// this test process, so they outlive the server and count every publication. Seeding goes
// through the operator CLI; a hub admin connects Facebook Pages / Instagram and Google Business
// Profile in Chromium through the fakes' Facebook Login and Google consent, and maps two Pages,
// their Instagram accounts and two locations to two workspaces. Posts come from the main REST API
// (oauth4webapi's token, a multipart media upload) and from the real MCP SDK client (add_media,
// create_post), all scheduled a few seconds ahead.
//
// Before they are due, the fakes are told to take some publications and never answer: one Page
// post and one local post are made without an answer, one Instagram publish never arrives. Once
// the fakes hold them, the server's process group gets SIGKILL mid-batch: those deliveries stay
// `publishing`, the rest of their posts `pending`. The fakes are restored and the server started
// again on the same database, port and media; a post made then goes out at once, while the dead
// publisher's posts wait for its lease.
//
// Time. A dead publisher's claim is taken over after its lease (PUBLISH_LEASE_MS, 5 minutes), and
// a delivery it may have sent is looked up no sooner than RECONCILE_SETTLE_MS (2 minutes) after its
// attempt began; a lookup that cannot tell is tried again after RECONCILE_BACKOFF_MS[0] (a
// minute). Rather than wait 8 minutes, or give the server a test-only clock or policy override
// (the server under test is the production process, configured as in production), the test makes
// that time pass for the rows that are waiting, and for nothing else: it moves back, by the time
// that passes, exactly the timestamps those rules read — the dead claims' `posts.claimed_at` and
// their deliveries' `post_deliveries.attempt_started_at` (lease + settle delay: "seven minutes
// pass for the dead publisher's posts"), then the one waiting post's `posts.retry_at` (the
// backoff). Each UPDATE names the rows it expects and asserts their count, so it cannot move a
// live claim. Everything else (what is taken over, looked up, found, sent) runs as in production,
// on the server's real clock; the networks' own timestamps stay real, which the lookups' windows
// (at or after the attempt's start minus the clock skew) accept as they would after a real wait.
//
// Then: the takeover looks up what may have been sent — the two made ones are found, the one
// never made is sent once, the unsent deliveries go out — except where Meta fails the lookup: that
// delivery stays `unconfirmed` (main API, MCP and the Channels page show it, in Meta's words) until
// its next lookup finds it. In the end every post is once on every network it targets (counted in
// the fakes) and every delivery `published` in the main API with the fake's id; the media the
// networks were given are served at their signed URLs without a session; no token reaches the
// server's log; SIGTERM to the group stops it with exit 0.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import type { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import type { Browser, Page } from 'playwright-core';
import { sql } from 'kysely';
import { Readable } from 'node:stream';
import { runCli } from '../../src/cli/cli.ts';
import { startGoogleBusinessSandbox, type GoogleBusinessSandbox } from '../../src/integrations/google-business/sandbox.ts';
import { startMetaPagesSandbox } from '../../src/integrations/meta-pages/sandbox.ts';
import { freePort } from '../../src/platform/net.ts';
import { Sealer, secretsKey } from '../../src/platform/sealing.ts';
import { PUBLISH_LEASE_MS, RECONCILE_BACKOFF_MS, RECONCILE_SETTLE_MS } from '../../src/policy.ts';
import { CHROMIUM, CHROMIUM_ARGS, chromiumMissing } from '../support/chromium.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import { jpeg } from '../support/media-files.ts';
import { callOk, MemoryOAuthProvider, newClient, transport } from '../support/mcp-client.ts';
import {
  authorize,
  completeAuthorization,
  exchangeCode,
  insecure,
  oauth,
  registerClient,
  type OAuthServer,
} from '../support/oauth-flow.ts';
import { dataDir as newDataDir, killGroup, killStarted, NODE, START_FLAGS, startServer, type Running } from './support.ts';

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';
if (chromiumMissing) console.log(`# SKIP publishing to three networks end to end: ${chromiumMissing}`);

const SHOTS = '/tmp/publish-networks-shots';
const ADMIN = { email: 'ops@harbour-group.test', password: 'harbour admin password 7' };
const REST_REDIRECT = 'http://127.0.0.1:9/rest-callback';
const MCP_REDIRECT = 'http://127.0.0.1:9/mcp-callback';
const PAGES = [
  { id: '1000000101', name: 'Harbour Café', instagram: { id: '17841400000000101', username: 'harbourcafe' } },
  { id: '1000000102', name: 'Hillside Bakery', instagram: { id: '17841400000000102', username: 'hillsidebakery' } },
];
const LOCATIONS = [
  { name: 'accounts/201/locations/5001', title: 'Harbour Café' },
  { name: 'accounts/201/locations/5002', title: 'Hillside Bakery' },
  { name: 'accounts/201/locations/5003', title: 'Old Mill (not ours)' },
];
/** The two workspaces, each with its Page, Instagram account and location. */
const WS = [
  { id: 'ws_harbour', name: 'Harbour Café', page: PAGES[0]!.id, ig: PAGES[0]!.instagram.id, location: LOCATIONS[0]!.name },
  { id: 'ws_hillside', name: 'Hillside Bakery', page: PAGES[1]!.id, ig: PAGES[1]!.instagram.id, location: LOCATIONS[1]!.name },
] as const;
const V = 'v26.0';

interface PostPlan {
  /** How the post is made. */
  via: 'rest' | 'mcp';
  ws: (typeof WS)[number];
  text: string;
  /** The image attached (none: a text post, Page and Business Profile only). */
  image?: Buffer;
  /** Filled in once made. */
  id?: string;
  channelIds?: string[];
  mediaId?: string;
}

type Platform = 'facebook' | 'instagram' | 'google_business';
const PLATFORMS: Platform[] = ['facebook', 'instagram', 'google_business'];

describe('posts to Facebook, Instagram and Business Profile, through a kill -9 of the server', { skip: chromiumMissing }, () => {
  const run = randomBytes(3).toString('hex');
  let meta: Awaited<ReturnType<typeof startMetaPagesSandbox>>;
  let google: GoogleBusinessSandbox;
  let db: TestDb;
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let port: number;
  let base: string;
  const servers: Running[] = [];
  const server = () => servers.at(-1)!;
  const logs = () => servers.map((s) => s.output()).join('\n');
  let browser: Browser;
  let page: Page;
  let hubId: string;
  let restToken: { access: string; refresh: string | undefined };
  let mcp: McpClient;
  let mcpProvider: MemoryOAuthProvider;
  /** channel id by workspace and platform. */
  const channels = new Map<string, string>();
  const channelOf = (ws: string, platform: Platform) => channels.get(`${ws}/${platform}`)!;
  const signedUrls: string[] = [];

  // JPEG images: Instagram takes no other format (refused before sending, docs/channels.md).
  const posts: PostPlan[] = [
    { via: 'rest', ws: WS[0], text: `Croissants from 7 am, every day (rest ${run})`, image: jpeg(6, 4) },
    { via: 'rest', ws: WS[1], text: `Sourdough Saturday is back (rest ${run})`, image: jpeg(5, 5) },
    { via: 'rest', ws: WS[0], text: `Open late on Friday for the harbour lights (rest ${run})` },
    { via: 'mcp', ws: WS[0], text: `New terrace tables by the water (mcp ${run})`, image: jpeg(7, 3) },
    { via: 'mcp', ws: WS[1], text: `Cinnamon buns, warm at 4 pm (mcp ${run})`, image: jpeg(3, 7) },
  ];
  const targets = (p: PostPlan): Platform[] => (p.image ? ['facebook', 'instagram', 'google_business'] : ['facebook', 'google_business']);

  async function cli(...argv: string[]): Promise<any> {
    let stdout = '';
    let stderr = '';
    const code = await runCli([...argv, '--json'], {
      stdout: (text) => (stdout += text),
      stderr: (text) => (stderr += text),
      env,
      stdin: Readable.from([]),
    });
    assert.equal(code, 0, `hubops ${argv.join(' ')}: ${stderr}`);
    return JSON.parse(stdout);
  }

  async function start(): Promise<Running> {
    const running = await startServer(NODE, [...START_FLAGS, 'src/main.ts'], env, port);
    servers.push(running);
    return running;
  }

  async function waitFor<T>(check: () => Promise<T | false | undefined>, what: string, timeoutMs = 20_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await check();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n--- server log ---\n${logs().slice(-6_000)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async function rest(path: string, init: RequestInit = {}): Promise<any> {
    const headers = new Headers(init.headers);
    headers.set('authorization', `Bearer ${restToken.access}`);
    const response = await fetch(`${base}${path}`, { ...init, headers });
    const body = await response.text();
    assert.ok(response.ok, `${init.method ?? 'GET'} ${path}: ${response.status} ${body}`);
    return JSON.parse(body);
  }

  /** Deliveries by post, from the database (what the waits watch; the assertions read the API). */
  async function deliveries(): Promise<{ post_id: string; channel_id: string; status: string; post_status: string; claimed: boolean }[]> {
    const { rows } = await sql<{ post_id: string; channel_id: string; status: string; post_status: string; claimed: boolean }>`
      SELECT d.post_id, d.channel_id, d.status, p.status AS post_status, p.claimed_at IS NOT NULL AS claimed
        FROM post_deliveries d JOIN posts p ON p.id = d.post_id
       WHERE p.hub_id = ${hubId}
       ORDER BY d.post_id, d.position`.execute(db.kysely);
    return rows;
  }

  /** Publishing calls the fakes received for a channel (Page feed/photos, media_publish, localPosts create). */
  function publishingCalls(platform: Platform, externalId: string): number {
    if (platform === 'google_business')
      return google.requests.filter((r) => r.method === 'POST' && r.path === `/v4/${externalId}/localPosts`).length;
    const edges = platform === 'facebook' ? ['feed', 'photos', 'videos'] : ['media_publish'];
    return meta.requests.filter((r) => r.method === 'POST' && edges.some((e) => r.path === `/${V}/${externalId}/${e}`)).length;
  }
  function lookups(platform: Platform, externalId: string): number {
    if (platform === 'google_business')
      return google.requests.filter((r) => r.method === 'GET' && r.path === `/v4/${externalId}/localPosts`).length;
    const edge = platform === 'facebook' ? 'posts' : 'media';
    return meta.requests.filter((r) => r.method === 'GET' && r.path === `/${V}/${externalId}/${edge}`).length;
  }
  const externalIdOf = (ws: (typeof WS)[number], platform: Platform) =>
    platform === 'facebook' ? ws.page : platform === 'instagram' ? ws.ig : ws.location;

  /** Publishing calls per channel (`ws/platform`). */
  const sendsNow = () =>
    Object.fromEntries(WS.flatMap((ws) => PLATFORMS.map((p) => [`${ws.id}/${p}`, publishingCalls(p, externalIdOf(ws, p))])));
  /** What a network holds for a channel: id, text, created, media URLs. */
  function onNetwork(ws: (typeof WS)[number], platform: Platform): { id: string; text: string; createdAt: number; urls: string[] }[] {
    if (platform === 'google_business')
      return google
        .posts(ws.location)
        .map((p) => ({ id: p.name, text: p.summary, createdAt: Date.parse(p.createTime), urls: p.photoUrls }));
    return meta.organic
      .publications(externalIdOf(ws, platform))
      .map((p) => ({ id: p.id, text: p.text, createdAt: p.createdAt.getTime(), urls: p.mediaUrls }));
  }

  before(async () => {
    const { chromium } = await import('playwright-core');
    meta = await startMetaPagesSandbox({ pages: PAGES });
    google = await startGoogleBusinessSandbox({ locations: LOCATIONS.map((l) => ({ ...l, reviews: 5 })) });
    db = await createTestDb();
    dataDir = await newDataDir('hubops-networks-', { initialised: false });
    port = await freePort();
    base = `http://127.0.0.1:${port}`;
    env = { ...process.env };
    for (const name of ['DATABASE_URL', 'REDIS_URL', 'HOST', 'HUBOPS_DEMO', 'DATA_DIR', 'NODE_OPTIONS', 'LOG_FORMAT']) delete env[name];
    Object.assign(env, {
      DATABASE_URL: db.url,
      HUBOPS_DEMO: '0',
      HOST: '127.0.0.1',
      BASE_URL: base,
      DATA_DIR: dataDir,
      LOG_LEVEL: 'debug',
      LOG_FORMAT: 'json',
      HUBOPS_SECRETS_KEY: randomBytes(32).toString('base64url'),
      META_GRAPH_URL: meta.url,
      META_DIALOG_URL: meta.url,
      META_APP_ID: meta.appId,
      META_APP_SECRET: meta.appSecret,
      GOOGLE_OAUTH_URL: google.url,
      GOOGLE_ACCOUNTS_URL: google.url,
      GOOGLE_BUSINESS_URL: google.url,
      GOOGLE_OAUTH_CLIENT_ID: google.clientId,
      GOOGLE_OAUTH_CLIENT_SECRET: google.clientSecret,
    });
    // The operator's first steps: an account with API access, a hub, two workspaces, a hub admin.
    const account = await cli('accounts', 'create', '--name', 'Harbour Group', '--plan', 'partner', '--api-access');
    hubId = (await cli('hubs', 'create', '--account', account.id, '--name', 'Harbour & Hillside')).id;
    for (const ws of WS) await cli('workspaces', 'create', '--hub', hubId, '--name', ws.name, '--id', ws.id);
    await cli(
      'users',
      'create',
      '--email',
      ADMIN.email,
      '--password',
      ADMIN.password,
      '--firstname',
      'Harriet',
      '--lastname',
      'Quay',
      '--hub',
      hubId,
      '--role',
      'hub_admin',
    );
    await start();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await mkdir(SHOTS, { recursive: true });
  });

  after(async () => {
    killStarted();
    // For a look after the run (and when it failed): both servers' output.
    if (servers.length > 0) await writeFile(`${SHOTS}/server.log`, logs()).catch(() => {});
    await mcp?.close().catch(() => {});
    await browser?.close();
    await meta?.close();
    await google?.close();
    await db?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  test('a hub admin connects the Pages, Instagram accounts and locations in Chromium, through the fakes', async () => {
    await page.goto(`${base}/app/sign-in`);
    await page.fill('#email', ADMIN.email);
    await page.fill('#password', ADMIN.password);
    await page.click('button[type=submit]');
    await page.waitForURL(new RegExp(`/app/hubs/${hubId}$`));

    // Manage Hub → Channels → Connect Facebook Pages / Instagram → Facebook Login (the fake's dialog).
    await page.click('details.profile summary');
    await page.click('[role=menuitem] >> text=Manage Hub');
    await page.click('nav.tabs >> text=Channels');
    await page.waitForURL(/\/settings\/channels$/);
    await page.click('#connect-meta a');
    await page.click('#connect-meta-pages');
    await page.waitForURL((url) => url.href.startsWith(`${meta.url}/${V}/dialog/oauth`));
    await page.screenshot({ path: `${SHOTS}/facebook-login-1280.png`, fullPage: true });
    await page.click('button[value=allow]');
    await page.waitForURL(/\/settings\/channels\/meta\/choose\?pending=/);
    for (const ws of WS) {
      await page.selectOption(`select[name="facebook:${ws.page}"]`, ws.id);
      await page.selectOption(`select[name="instagram:${ws.ig}"]`, ws.id);
    }
    await page.screenshot({ path: `${SHOTS}/meta-choose-1280.png`, fullPage: true });
    await page.click('text=Connect channels');
    await page.waitForURL(/\/settings\/channels\/meta\?notice=connected$/);

    // Channels → Google Business Profile → Google's consent (the fake's) → map two of three locations.
    await page.goto(`${base}/app/hubs/${hubId}/settings/channels`);
    await page.click('#connect-google-business a');
    await page.click('text=Connect Google Business Profile');
    await page.waitForURL((url) => url.href.startsWith(`${google.url}/o/oauth2/v2/auth?`));
    await page.screenshot({ path: `${SHOTS}/google-consent-1280.png`, fullPage: true });
    await page.click('text=Continue');
    await page.waitForURL(/\/settings\/channels\/google\/choose\?pending=/);
    const offered = await page
      .locator('input[name=location]')
      .evaluateAll((inputs) => inputs.map((i) => (i as unknown as { value: string }).value));
    assert.deepEqual(
      offered,
      LOCATIONS.map((l) => l.name),
    );
    for (const ws of WS) await page.selectOption(`#loc-${offered.indexOf(ws.location)}`, ws.id);
    await page.screenshot({ path: `${SHOTS}/google-choose-1280.png`, fullPage: true });
    await page.click('text=Connect locations');
    await page.waitForURL(/\/settings\/channels\/google\?notice=connected$/);

    await page.goto(`${base}/app/hubs/${hubId}/settings/channels`);
    await page.screenshot({ path: `${SHOTS}/channels-connected-1280.png`, fullPage: true });
    assert.deepEqual(await page.locator('[data-state]').allTextContents(), Array(6).fill('Connected'));

    const rows = await db.kysely
      .selectFrom('social_channels')
      .select(['id', 'workspace_id', 'platform', 'external_id'])
      .where('hub_id', '=', hubId)
      .execute();
    for (const ws of WS)
      for (const platform of PLATFORMS) {
        const row = rows.find((r) => r.workspace_id === ws.id && r.platform === platform);
        assert.equal(row?.external_id, externalIdOf(ws, platform), `${ws.id} ${platform}`);
        channels.set(`${ws.id}/${platform}`, row.id);
      }
    assert.equal(rows.length, 6, 'the location left out is not a channel');
  });

  test('posts are scheduled through the main API (OAuth) and by an agent over MCP, with media', async () => {
    // The main API: a client registers, the admin signs in and consents, oauth4webapi gets a token.
    const issuer = new URL(base);
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
    const live: OAuthServer = { as, baseUrl: base };
    const registered = await registerClient(live, { confidential: false, redirectUri: REST_REDIRECT, name: 'Harbour scheduler' });
    const authorized = await authorize(live, registered, { ...ADMIN, redirectUri: REST_REDIRECT });
    assert.ok(authorized.callback, `consented (got ${authorized.response.status})`);
    const tokens = await exchangeCode(live, registered, authorized, REST_REDIRECT);
    restToken = { access: tokens.access_token, refresh: tokens.refresh_token };

    // The MCP SDK client: discovers, registers, the admin consents, then it calls tools.
    const mcpUrl = new URL(`${base}/mcp`);
    mcpProvider = new MemoryOAuthProvider(MCP_REDIRECT);
    const first = transport(mcpUrl, { provider: mcpProvider });
    await assert.rejects(newClient().connect(first), UnauthorizedError);
    const consent = await completeAuthorization(live, mcpProvider.authorizationUrls[0]!, { ...ADMIN, redirectUri: MCP_REDIRECT });
    await first.finishAuth(consent.callback!.searchParams.get('code')!);
    mcp = newClient();
    await mcp.connect(transport(mcpUrl, { provider: mcpProvider }));

    // The connected channels as the API lists them.
    for (const ws of WS) {
      const listed = (await rest(`/channels?workspaceId=${ws.id}`)).data as { _id: string; platform: string; connected: boolean }[];
      for (const platform of PLATFORMS)
        assert.ok(
          listed.some((c) => c._id === channelOf(ws.id, platform) && c.connected),
          `${ws.id}'s ${platform} channel is listed as connected`,
        );
    }

    // Media: a multipart upload to POST /media, and add_media's base64 over MCP.
    for (const p of posts.filter((x) => x.image)) {
      if (p.via === 'rest') {
        const form = new FormData();
        form.append('workspaceId', p.ws.id);
        form.append('file', new Blob([p.image!], { type: 'image/jpeg' }), 'photo.jpg');
        p.mediaId = (await rest('/media', { method: 'POST', body: form }))._id;
      } else {
        p.mediaId = (
          await callOk(mcp, 'add_media', { workspaceId: p.ws.id, base64: p.image!.toString('base64'), filename: 'photo.jpg' })
        )._id;
      }
    }

    // The networks publish and then never answer: the first post to reach Harbour's Page, and the
    // first to reach Hillside's location; Hillside's Instagram never gets the first publish at all.
    meta.organic.scenario.hang(WS[0].page, { publish: true });
    meta.organic.scenario.hang(WS[1].ig, { publish: false });
    google.scenario.hangAfterPost(WS[1].location);

    // One time for all, a few seconds ahead: one round of the publisher claims them together.
    const scheduledAt = new Date(Date.now() + 7_000).toISOString();
    for (const p of posts) {
      p.channelIds = targets(p).map((platform) => channelOf(p.ws.id, platform));
      const body = {
        workspaceId: p.ws.id,
        text: p.text,
        channelIds: p.channelIds,
        mediaIds: p.mediaId ? [p.mediaId] : [],
        status: 'scheduled',
        scheduledAt,
      };
      const made =
        p.via === 'rest'
          ? await rest('/posts', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
          : await callOk(mcp, 'create_post', body);
      assert.equal(made.status, 'scheduled');
      assert.deepEqual(
        made.deliveries.map((d: { status: string }) => d.status),
        p.channelIds.map(() => 'pending'),
      );
      p.id = made._id;
    }
  });

  let killedAt: number;
  /** The posts in flight when the server was killed, and their deliveries as it left them. */
  let stuck: string[];
  let atKill: Awaited<ReturnType<typeof deliveries>>;

  test('kill -9 of the server mid-batch: the deliveries that got no answer stay publishing, nothing after them was sent', async () => {
    // The batch runs: two posts go out whole; three stop at a network that took (or never got) the
    // publication and does not answer. Wait for exactly that, seen in the fakes and the database.
    const state = await waitFor(async () => {
      const rows = await deliveries();
      const publishing = rows.filter((r) => r.status === 'publishing');
      const published = new Set(rows.filter((r) => r.post_status === 'published').map((r) => r.post_id));
      const made =
        meta.organic.publications(WS[0].page).length >= 1 &&
        google.posts(WS[1].location).length >= 1 &&
        publishingCalls('instagram', WS[1].ig) >= 1;
      return publishing.length === 3 && published.size === 2 && made && rows;
    }, 'three deliveries hanging at the networks');
    const server1 = server();
    killGroup(server1.child, 'SIGKILL');
    const [, signal] = await server1.exited;
    killedAt = Date.now();
    assert.equal(signal, 'SIGKILL');

    stuck = [...new Set(state.filter((r) => r.status === 'publishing').map((r) => r.post_id))];
    assert.equal(stuck.length, 3, 'three posts were in flight');
    atKill = await deliveries();
    for (const p of posts) {
      const rows = atKill.filter((r) => r.post_id === p.id);
      if (stuck.includes(p.id!)) {
        // Their channels in order: published ones, the one in flight, the ones never reached.
        const at = rows.findIndex((r) => r.status === 'publishing');
        assert.deepEqual(
          rows.map((r) => r.status),
          rows.map((_, i) => (i < at ? 'published' : i === at ? 'publishing' : 'pending')),
          `${p.text}: ${rows.map((r) => r.status)}`,
        );
        assert.equal(rows[0]!.post_status, 'publishing');
        assert.ok(rows[0]!.claimed, 'still claimed by the dead publisher');
        // Nothing after the one in flight reached its network.
        for (const platform of targets(p).slice(at + 1))
          assert.ok(!onNetwork(p.ws, platform).some((h) => h.text === p.text), `${p.text} is not on ${platform}`);
      } else
        assert.deepEqual(
          rows.map((r) => r.status),
          rows.map(() => 'published'),
        );
    }
    // Where the networks stand: the hung Page post and local post were made; the Instagram publish was not.
    assert.equal(meta.organic.publications(WS[1].ig).length, posts.filter((p) => p.ws === WS[1] && p.image).length - 1);
    meta.organic.scenario.reset();
    google.scenario.reset();
  });

  test('restarted, the server leaves the dead claims alone until their lease runs out, and publishes a new post at once', async () => {
    await start();
    const before = sendsNow();
    // A post made now goes out on the new publisher's next rounds, while the dead claims wait.
    const canary: PostPlan = { via: 'rest', ws: WS[0], text: `Harbour is open again after the storm (rest ${run})` };
    canary.channelIds = targets(canary).map((platform) => channelOf(canary.ws.id, platform));
    canary.id = (
      await rest('/posts', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          workspaceId: canary.ws.id,
          text: canary.text,
          channelIds: canary.channelIds,
          status: 'scheduled',
          publishNow: true,
        }),
      })
    )._id;
    posts.push(canary);
    await waitFor(
      async () => (await deliveries()).filter((r) => r.post_id === canary.id).every((r) => r.post_status === 'published'),
      'the new post to be published',
    );
    assert.equal((await rest(`/posts/${canary.id}`)).status, 'published');
    for (const id of stuck) {
      const post = await rest(`/posts/${id}`);
      assert.equal(post.status, 'publishing');
      assert.ok(
        post.deliveries.some((d: { status: string }) => d.status === 'publishing'),
        'still as the dead publisher left it',
      );
    }
    const sends = sendsNow();
    for (const [key, calls] of Object.entries(before)) {
      const [ws, platform] = key.split('/') as [string, Platform];
      const extra = ws === canary.ws.id && targets(canary).includes(platform) ? 1 : 0;
      assert.equal(sends[key], calls + extra, `${key}: only the new post was sent`);
    }
  });

  /** The post whose Page lookup Meta fails once: it stays unconfirmed. */
  let confirming: PostPlan;

  test("seven minutes pass for the dead publisher's posts: the two made are found, the one never made is sent once, the unsent go out; a lookup Meta fails leaves its delivery unconfirmed (API, MCP, Channels page)", async () => {
    const sendsBefore = sendsNow();
    const lookupsBefore = {
      page: lookups('facebook', WS[0].page),
      ig: lookups('instagram', WS[1].ig),
      location: lookups('google_business', WS[1].location),
    };
    // Meta fails the next call on Harbour's Page: the lookup of the Page post made before the kill.
    meta.organic.scenario.fail(WS[0].page, { code: 2, message: 'Service temporarily unavailable' });

    // Time passes for the dead publisher's posts: the lease (PUBLISH_LEASE_MS) runs out, and the
    // settle delay (RECONCILE_SETTLE_MS) after each of its attempts with it. Its claims and its
    // deliveries' attempts are moved back by both, as if that much time had gone by since it died.
    const elapsed = (PUBLISH_LEASE_MS + RECONCILE_SETTLE_MS) / 1000;
    await db.kysely.transaction().execute(async (trx) => {
      const claims = await sql`
        UPDATE posts SET claimed_at = claimed_at - make_interval(secs => ${elapsed})
         WHERE id = ANY(${stuck}::text[]) AND status = 'publishing' AND claimed_at IS NOT NULL`.execute(trx);
      assert.equal(Number(claims.numAffectedRows), 3);
      const attempts = await sql`
        UPDATE post_deliveries SET attempt_started_at = attempt_started_at - make_interval(secs => ${elapsed})
         WHERE post_id = ANY(${stuck}::text[]) AND attempt_started_at IS NOT NULL`.execute(trx);
      assert.equal(Number(attempts.numAffectedRows), atKill.filter((r) => stuck.includes(r.post_id) && r.status !== 'pending').length);
    });

    // The restarted publisher takes them over: what may have been sent is looked up, the rest is sent.
    const settled = await waitFor(async () => {
      const rows = (await deliveries()).filter((r) => stuck.includes(r.post_id));
      const open = rows.filter((r) => r.status !== 'published');
      return open.length === 1 && open[0]!.status === 'unconfirmed' && rows.every((r) => !r.claimed) && open[0]!;
    }, 'the restarted publisher to take the posts over');
    confirming = posts.find((p) => p.id === settled.post_id)!;
    assert.equal(settled.channel_id, channelOf(WS[0].id, 'facebook'), 'the one left is the Page post whose lookup Meta failed');
    assert.ok(lookups('facebook', WS[0].page) > lookupsBefore.page, "Harbour's Page posts were looked up");
    assert.ok(lookups('instagram', WS[1].ig) > lookupsBefore.ig, "Hillside's Instagram media were looked up");
    assert.ok(lookups('google_business', WS[1].location) > lookupsBefore.location, "Hillside's local posts were looked up");

    // Sent: every delivery never reached, and the Instagram publish that never arrived (after its
    // lookup found nothing); the Page post and the local post made before the kill, not again.
    const pendingAtKill = (key: string) =>
      atKill.filter((r) => stuck.includes(r.post_id) && r.status === 'pending' && r.channel_id === channels.get(key)).length;
    const sends = sendsNow();
    for (const key of Object.keys(sendsBefore)) {
      const resent = key === `${WS[1].id}/instagram` ? 1 : 0;
      assert.equal(sends[key], sendsBefore[key]! + pendingAtKill(key) + resent, `${key}: publishing calls`);
    }

    // The unconfirmed delivery, in the main API and over MCP: Meta's words, no publication claimed.
    for (const shown of [await rest(`/posts/${confirming.id}`), await callOk(mcp, 'get_post', { id: confirming.id })]) {
      assert.equal(shown.status, 'publishing', 'a post with an unconfirmed delivery is not yet published');
      const [unconfirmed, ...others] = shown.deliveries as Record<string, unknown>[];
      assert.equal(unconfirmed!.channelId, channelOf(WS[0].id, 'facebook'));
      assert.equal(unconfirmed!.status, 'unconfirmed');
      assert.equal(unconfirmed!.failureKind, 'publisher_stopped');
      assert.equal(unconfirmed!.platformMessage, 'Service temporarily unavailable');
      assert.equal(unconfirmed!.externalId, null);
      assert.ok(unconfirmed!.attemptedAt, 'attemptedAt: when the dead publisher sent it');
      assert.deepEqual(
        others.map((d) => d.status),
        others.map(() => 'published'),
      );
    }
    // And on the Channels page: Harbour's Page has a post being confirmed, no other channel has.
    await page.goto(`${base}/app/hubs/${hubId}/settings/channels`);
    await page.screenshot({ path: `${SHOTS}/channels-being-confirmed-1280.png`, fullPage: true });
    const beingConfirmed = await page
      .locator('tr[data-channel]', { hasText: 'Being confirmed' })
      .evaluateAll((rows) => rows.map((r) => (r as unknown as { dataset: { channel: string } }).dataset.channel));
    assert.deepEqual(beingConfirmed, [channelOf(WS[0].id, 'facebook')]);
  });

  test('a minute later its next lookup finds it: every post is published, once on every network, with the networks’ ids', async () => {
    const sendsBefore = sendsNow();
    const lookupsBefore = lookups('facebook', WS[0].page);
    // The wait after a lookup that could not tell (RECONCILE_BACKOFF_MS[0], a minute) runs out.
    const waited = await sql`
      UPDATE posts SET retry_at = retry_at - make_interval(secs => ${RECONCILE_BACKOFF_MS[0] / 1000})
       WHERE id = ${confirming.id} AND status = 'publishing' AND claimed_at IS NULL AND retry_at IS NOT NULL`.execute(db.kysely);
    assert.equal(Number(waited.numAffectedRows), 1);
    await waitFor(
      async () => (await deliveries()).every((r) => r.status === 'published' && r.post_status === 'published'),
      'every post to be published',
    );
    assert.ok(lookups('facebook', WS[0].page) > lookupsBefore, 'looked up again');
    assert.deepEqual(sendsNow(), sendsBefore, 'nothing sent: found');

    // Every post once on every network it targets, counted in the fakes; nothing else there.
    for (const ws of WS)
      for (const platform of PLATFORMS) {
        const held = onNetwork(ws, platform);
        const expected = posts.filter((p) => p.ws === ws && targets(p).includes(platform)).map((p) => p.text);
        assert.deepEqual(held.map((h) => h.text).sort(), expected.sort(), `${ws.id} ${platform}: each post exactly once`);
      }

    // The main API shows each delivery published with the network's id; MCP shows its own posts the same.
    let reconciled = 0;
    for (const p of posts) {
      const shown = await rest(`/posts/${p.id}`);
      assert.equal(shown.status, 'published', p.text);
      assert.ok(shown.publishedAt);
      assert.deepEqual(
        shown.deliveries.map((d: { channelId: string }) => d.channelId),
        p.channelIds,
      );
      for (const [i, platform] of targets(p).entries()) {
        const d = shown.deliveries[i];
        const made = onNetwork(p.ws, platform).find((h) => h.text === p.text)!;
        assert.equal(d.status, 'published', `${p.text} on ${platform}`);
        assert.equal(d.externalId, made.id, `${p.text} on ${platform}: the network's id`);
        assert.equal(d.failureKind, null);
        // Made before the kill, its delivery confirmed after it: found by a lookup, not sent again.
        if (made.createdAt < killedAt && Date.parse(d.deliveredAt) > killedAt) reconciled += 1;
        assert.equal(made.urls.length, p.image ? 1 : 0, `${platform} was given the image's URL`);
        for (const url of made.urls) {
          // What the network does with it: fetch it, with no session or key.
          assert.ok(url.startsWith(`${base}/media-public/${p.mediaId}?`), url);
          signedUrls.push(url);
          const fetched = await fetch(url);
          assert.equal(fetched.status, 200, url);
          assert.equal(fetched.headers.get('content-type'), 'image/jpeg');
          assert.deepEqual(Buffer.from(await fetched.arrayBuffer()), p.image);
        }
      }
      if (p.via === 'mcp') {
        const viaMcp = await callOk(mcp, 'get_post', { id: p.id });
        assert.deepEqual(
          viaMcp.deliveries.map((d: { status: string; externalId: string }) => [d.status, d.externalId]),
          shown.deliveries.map((d: { status: string; externalId: string }) => [d.status, d.externalId]),
        );
      }
    }
    assert.equal(reconciled, 2, "the Page post and the local post made before the kill are their deliveries' publications");
  });

  test('no token reaches the server log; SIGTERM to the group stops it cleanly', async () => {
    const key = secretsKey(Buffer.from(env.HUBOPS_SECRETS_KEY!, 'base64url'));
    const sealer = new Sealer([key]);
    const secrets: string[] = [restToken.access, mcpProvider.current!.access_token, ADMIN.password];
    if (restToken.refresh) secrets.push(restToken.refresh);
    if (mcpProvider.current!.refresh_token) secrets.push(mcpProvider.current!.refresh_token);
    for (const c of await db.kysely.selectFrom('channel_connections').select(['id', 'token_sealed']).where('hub_id', '=', hubId).execute())
      secrets.push(sealer.open(c.token_sealed, c.id));
    for (const c of await db.kysely
      .selectFrom('social_channels')
      .select(['id', 'token_sealed'])
      .where('hub_id', '=', hubId)
      .where('token_sealed', 'is not', null)
      .execute())
      secrets.push(sealer.open(c.token_sealed!, c.id));
    for (const ws of WS) secrets.push(meta.organic.pageToken(ws.page));
    for (const url of signedUrls) secrets.push(new URL(url).searchParams.get('sig')!);
    assert.ok(secrets.length >= 12, `${secrets.length} secrets checked`);
    const log = logs();
    assert.ok(log.length > 1_000, 'the server logged');
    for (const secret of new Set(secrets))
      assert.ok(secret.length >= 16 && !log.includes(secret), `a secret (${secret.slice(0, 6)}…) is in the server log`);
    // Whatever else the fakes issued (user tokens, Google access tokens, codes) has a recognisable shape.
    assert.doesNotMatch(log, /EAAsandbox|ya29\.|1\/\/0business|4\/0business/);

    const last = server();
    killGroup(last.child, 'SIGTERM');
    const [code, signal] = await last.exited;
    assert.equal(signal, null, last.output().slice(-3_000));
    assert.equal(code, 0, last.output().slice(-3_000));
  });
});
