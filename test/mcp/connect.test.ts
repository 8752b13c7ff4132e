// The main MCP server end to end, as an agent host meets it: the real MCP SDK client, knowing
// nothing but the /mcp URL, is refused (401), discovers the protected-resource and
// authorization-server metadata, registers itself, sends the user to sign in and consent (played
// over HTTP), gets tokens bound to the MCP resource, lists the tools, calls every one of them
// against real data, and later refreshes its token without the user.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { sql } from 'kysely';
import { importNdjson } from '../../src/domain/import/import.service.ts';
import { REFRESH_TOKEN_REUSE_LEEWAY_S } from '../../src/policy.ts';
import { TOOL_GROUPS } from '../../src/surfaces/mcp-main/tools.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { png } from '../support/media-files.ts';
import { callError, callOk, MemoryOAuthProvider, newClient, remaining, transport, type RecordedRequest } from '../support/mcp-client.ts';
import { completeAuthorization, expireAccessTokens } from '../support/oauth-flow.ts';
import { HUB_ADMIN } from '../support/world.ts';

const REDIRECT = 'http://127.0.0.1:9/mcp-callback';

let live: TestApp;
let mcpUrl: URL;
let today: string;
const day = (offset: number) => new Date(Date.parse(`${today}T00:00:00Z`) + offset * 86_400_000).toISOString().slice(0, 10);

before(async () => {
  live = await startApp({ listen: true });
  mcpUrl = new URL(`${live.baseUrl}/mcp`);
  const now = live.clock.now();
  today = now.toISOString().slice(0, 10);
  const lines = [
    { type: 'account', id: 'acc_1', name: 'Acme Franchising', plan: 'partner', apiAccess: true },
    { type: 'hub', id: 'h1', accountId: 'acc_1', name: 'Acme US' },
    { type: 'hub', id: 'h2', accountId: 'acc_1', name: 'Acme CA' },
    { type: 'workspaceField', hubId: 'h1', key: 'region', label: 'Region' },
    { type: 'workspace', id: 'w1', hubId: 'h1', name: 'Acme Denver', fields: { region: 'West' } },
    { type: 'workspace', id: 'w2', hubId: 'h1', name: 'Acme Boulder' },
    { type: 'workspace', id: 'v1', hubId: 'h2', name: 'Acme Toronto' },
    {
      type: 'playbook',
      id: 'pb_1',
      hubId: 'h1',
      name: 'Spring Promo ',
      solutions: ['meta'],
      variants: { audience: ['Families', 'Students'] },
      questions: [{ question: 'Store hours?', type: 'short_answer', required: true }],
    },
    { type: 'playbook', id: 'pb_2', hubId: 'h1', name: 'Search', solutions: ['google_ads', 'meta'] },
    { type: 'playbook', id: 'pb_x', hubId: 'h2', name: 'Other hub', solutions: ['meta'] },
    {
      type: 'optIn',
      id: 'oi_1',
      playbookId: 'pb_1',
      workspaceId: 'w1',
      status: 'active',
      optedInAt: `${day(-2)}T10:00:00Z`,
      budgetCents: 50000,
      budgetType: 'lifetime',
      variant: { audience: 'Families' },
      responses: [{ question: 'Store hours?', answer: '9-5' }],
    },
    { type: 'optIn', id: 'oi_2', playbookId: 'pb_2', workspaceId: 'w2', status: 'in_review', optedInAt: `${day(-1)}T10:00:00Z` },
    { type: 'optIn', id: 'oi_x', playbookId: 'pb_x', workspaceId: 'v1', status: 'active', optedInAt: `${day(-1)}T10:00:00Z` },
    {
      type: 'adAccount',
      id: 'aa_1',
      hubId: 'h1',
      platform: 'meta',
      name: 'Acme Meta',
      lastSyncedAt: new Date(now.getTime() - 3_600_000).toISOString(),
    },
    { type: 'spend', adAccountId: 'aa_1', workspaceId: 'w1', date: day(-1), spendCents: 1234 },
    { type: 'spend', adAccountId: 'aa_1', workspaceId: 'w2', date: day(-1), spendCents: 766 },
    { type: 'spend', adAccountId: 'aa_1', workspaceId: null, date: day(-1), spendCents: 100 },
    {
      type: 'user',
      email: HUB_ADMIN.email,
      password: HUB_ADMIN.password,
      firstname: 'Ada',
      lastname: 'Lee',
      hubId: 'h1',
      role: 'hub_admin',
    },
    { type: 'channel', id: 'ch_ig', workspaceId: 'w1', platform: 'instagram', name: 'Denver IG', handle: '@acme_denver' },
    { type: 'channel', id: 'ch_fb', workspaceId: 'w1', platform: 'facebook', name: 'Denver FB' },
    { type: 'channel', id: 'ch_li', workspaceId: 'w2', platform: 'linkedin', name: 'Boulder LI' },
    { type: 'hubCpm', hubId: 'h1', platform: 'instagram', cpmCents: 800 },
    {
      type: 'organicMetrics',
      workspaceId: 'w1',
      date: day(-3),
      platform: 'instagram',
      posts: 1,
      impressions: 1000,
      reach: 600,
      likes: 30,
      comments: 5,
      shares: 3,
      saves: 2,
    },
    {
      type: 'organicMetrics',
      workspaceId: 'w2',
      date: day(-3),
      platform: 'linkedin',
      posts: 1,
      impressions: 400,
      reach: 300,
      likes: 4,
      comments: 0,
      shares: 0,
      saves: 0,
    },
    {
      type: 'paidMetrics',
      workspaceId: 'w1',
      date: day(-3),
      platform: 'meta',
      campaignId: 'camp_a',
      campaignName: 'Camp A',
      spendCents: 1500,
      impressions: 50000,
      clicks: 500,
      results: 20,
    },
    { type: 'reviewDay', workspaceId: 'w1', date: day(-3), newReviews: { 5: 3, 4: 1 }, responded: 2 },
  ];
  await importNdjson(live.db, lines.map((l) => JSON.stringify(l)).join('\n'));
});
after(async () => {
  await live.close();
});

const mcpPosts = (log: RecordedRequest[]) => log.filter((r) => r.method === 'POST' && r.url.href === mcpUrl.href);

describe('an MCP client that knows only the URL', () => {
  const provider = new MemoryOAuthProvider(REDIRECT);
  const log: RecordedRequest[] = [];
  let client: Client;
  const prmUrl = () => `${live.baseUrl}/.well-known/oauth-protected-resource/mcp`;

  test('is refused, discovers, registers and sends the user to authorize with PKCE and the MCP resource', async () => {
    const first = transport(mcpUrl, { provider, log });
    await assert.rejects(newClient().connect(first), UnauthorizedError);

    const [refused, prm, asMetadata, registration, ...rest] = log;
    assert.equal(refused!.status, 401);
    assert.deepEqual(refused!.rpc, ['initialize']);
    assert.equal(refused!.headers.get('www-authenticate'), `Bearer realm="hubops", resource_metadata="${prmUrl()}", scope="service:full"`);
    assert.equal(prm!.url.href, prmUrl());
    assert.equal(prm!.status, 200);
    assert.equal(asMetadata!.url.href, `${live.config.siteUrl}/.well-known/oauth-authorization-server`);
    assert.equal(asMetadata!.status, 200);
    assert.equal(registration!.url.href, `${live.baseUrl}/oauth/register`);
    assert.equal(registration!.status, 201);
    assert.equal(rest.length, 0, `nothing else before the user acts: ${rest.map((r) => `${r.method} ${r.url}`)}`);
    assert.ok(provider.information?.client_id, 'dynamically registered');
    assert.equal((provider.information as { client_secret?: string }).client_secret, undefined, 'a public client');

    assert.equal(provider.authorizationUrls.length, 1);
    const url = provider.authorizationUrls[0]!;
    assert.equal(`${url.origin}${url.pathname}`, `${live.baseUrl}/oauth/authorize`);
    const params = url.searchParams;
    assert.equal(params.get('response_type'), 'code');
    assert.equal(params.get('client_id'), provider.information!.client_id);
    assert.equal(params.get('redirect_uri'), REDIRECT);
    assert.equal(params.get('code_challenge_method'), 'S256');
    assert.equal(params.get('code_challenge'), createHash('sha256').update(provider.verifier).digest('base64url'));
    assert.equal(params.get('resource'), mcpUrl.href, 'RFC 8707 resource: the MCP server');
    assert.equal(params.get('scope'), 'service:full');
    assert.equal(params.get('state'), provider.states.at(-1));

    // The user signs in and consents (the whole hub), and the browser lands on the redirect URI.
    const result = await completeAuthorization(live, url, { ...HUB_ADMIN, redirectUri: REDIRECT });
    assert.ok(result.callback, `redirected back (got ${result.response.status})`);
    assert.match(result.pages[1] ?? '', /MCP Test Agent/, 'the consent page names the client');
    assert.equal(result.callback.searchParams.get('state'), params.get('state'));
    const code = result.callback.searchParams.get('code');
    assert.ok(code);

    await first.finishAuth(code);
    const token = log.at(-1)!;
    assert.equal(token.url.href, `${live.baseUrl}/oauth/token`);
    assert.equal(token.status, 200);
    const form = new URLSearchParams(token.body);
    assert.equal(form.get('grant_type'), 'authorization_code');
    assert.equal(form.get('code_verifier'), provider.verifier);
    assert.equal(form.get('resource'), mcpUrl.href);
    assert.ok(provider.current?.access_token && provider.current.refresh_token);
    assert.equal(provider.current.scope, 'service:full');

    // The token is bound to the MCP server: stored with that audience, refused by the REST API.
    const stored = await sql<{ aud: unknown }>`SELECT payload->'aud' AS aud FROM oauth_artifacts WHERE model = 'AccessToken'`.execute(
      live.db.kysely,
    );
    assert.deepEqual(
      stored.rows.map((r) => r.aud),
      [mcpUrl.href],
    );
    const rest401 = await fetch(`${live.baseUrl}/whoami`, { headers: { authorization: `Bearer ${provider.current.access_token}` } });
    assert.equal(rest401.status, 401);

    client = newClient();
    await client.connect(transport(mcpUrl, { provider, log }));
  });

  test('tools/list: every tool, by group, with descriptions, input and output schemas and readOnlyHint', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(
      tools.map((t) => t.name),
      Object.values(TOOL_GROUPS).flat(),
    );
    const writes = new Set(['create_post', 'add_media']);
    for (const tool of tools) {
      assert.ok(typeof tool.description === 'string' && tool.description.length > 60, `${tool.name} description`);
      assert.equal(tool.inputSchema.type, 'object', `${tool.name} inputSchema`);
      assert.equal(tool.outputSchema?.type, 'object', `${tool.name} outputSchema`);
      assert.ok(Object.keys(tool.outputSchema?.properties ?? {}).length > 0, `${tool.name} outputSchema has properties`);
      assert.equal(tool.annotations?.readOnlyHint, !writes.has(tool.name), `${tool.name} readOnlyHint`);
      if (writes.has(tool.name)) assert.equal(tool.annotations?.destructiveHint, false, `${tool.name} destructiveHint`);
      assert.doesNotMatch(tool.description!, /Idempotency-Key|multipart/, `${tool.name}: no REST-only advice`);
    }
    assert.equal(tools.find((t) => t.name === 'add_media')!.annotations?.openWorldHint, true);
    const createPost = tools.find((t) => t.name === 'create_post')!;
    assert.deepEqual(createPost.inputSchema.required, ['text', 'status']);
    assert.deepEqual(Object.keys(tools.find((t) => t.name === 'add_media')!.inputSchema.properties ?? {}).sort(), [
      'base64',
      'filename',
      'url',
      'workspaceId',
    ]);
  });

  test('every tool answers with real data (structured content validated by the SDK against each outputSchema, and JSON text)', async () => {
    const postsBefore = mcpPosts(log).length;
    const adaId = (await live.db.kysely.selectFrom('users').select('id').where('email', '=', HUB_ADMIN.email).executeTakeFirstOrThrow()).id;
    const called = new Set<string>();
    const call = async (name: string, args: Record<string, unknown> = {}) => {
      called.add(name);
      return callOk(client, name, args);
    };

    // Account
    assert.deepEqual(await call('whoami'), {
      user: { _id: adaId, email: HUB_ADMIN.email, firstname: 'Ada', lastname: 'Lee' },
      workspace: null,
      hub: { _id: 'h1', name: 'Acme US' },
      scope: 'service:full',
      clientId: provider.information!.client_id,
    });
    const workspaces = await call('list_workspaces');
    assert.deepEqual(
      workspaces.data.map((w: any) => [w._id, w.name]),
      [
        ['w1', 'Acme Denver'],
        ['w2', 'Acme Boulder'],
      ],
    );
    assert.deepEqual((await call('get_workspace', { id: 'w1' })).fields, { region: 'West' });
    assert.match(await callError(client, 'get_workspace', { id: 'v1' }), /^not_found:/, "another hub's workspace is not found");
    assert.deepEqual(
      (await call('list_hubs')).data.map((h: any) => h._id),
      ['h1', 'h2'],
    );

    // Docs
    const search = await call('search_docs', { query: 'refresh token rotate' });
    assert.ok(search.totalDocuments > 30, `corpus: ${search.totalDocuments}`);
    assert.ok(
      search.hits.length > 0 && search.hits.every((h: any) => h.source === 'guide' || h.source === 'openapi'),
      JSON.stringify(search.hits),
    );
    assert.ok(
      search.hits.some((h: any) => h.id.startsWith('main-api/')),
      `the docs pages are searched too: ${JSON.stringify(search.hits.map((h: any) => h.id))}`,
    );
    const ops = await call('search_docs', { query: 'list_posts', source: 'openapi' });
    assert.equal(ops.hits[0].id, 'openapi-main/list_posts');
    assert.ok(ops.hits.every((h: any) => h.source === 'openapi'));
    const hubDocs = await call('search_docs', { query: 'spend by workspace freshness' });
    assert.ok(
      hubDocs.hits.some((h: any) => h.id === 'openapi-hub/get_spend_by_workspace'),
      JSON.stringify(hubDocs.hits.map((h: any) => h.id)),
    );
    const index = await call('search_docs');
    assert.equal(index.hits.length, index.totalDocuments, 'no query lists every document');
    assert.ok(index.hits.some((h: any) => h.id === 'readme/connect-an-ai-assistant'));
    const doc = await call('read_doc', { id: 'openapi-main/list_posts' });
    assert.equal(doc.source, 'openapi');
    assert.match(doc.text, new RegExp(`^GET ${live.baseUrl}/posts`));
    assert.match(doc.text, /- status \(query; one of: draft, scheduled/);
    const playbooksDoc = await call('read_doc', { id: 'openapi-main/list_playbooks' });
    assert.match(playbooksDoc.text, /GET .*\/playbooks/);
    const guide = await call('search_docs', { query: 'Claude Desktop mcp-remote', source: 'guide' });
    assert.ok(guide.hits.every((h: any) => h.source === 'guide'));
    const desktop = guide.hits.find((h: any) => h.id.startsWith('mcp/'));
    assert.ok(desktop, JSON.stringify(guide.hits.map((h: any) => h.id)));
    const desktopDoc = (await call('read_doc', { id: desktop.id })).text;
    assert.match(desktopDoc, /mcp-remote/);
    // The configuration as /docs shows it: this server's address, not the docs' `$BASE`.
    assert.ok(desktopDoc.includes(`"${live.baseUrl}/mcp"`) && !desktopDoc.includes('$BASE'), desktopDoc);
    assert.match(await callError(client, 'read_doc', { id: 'readme/nope' }), /^not_found: .*search_docs/);

    // Organic
    const channels = await call('list_channels', { workspaceId: 'w1' });
    assert.deepEqual(channels.data.map((c: any) => c._id).sort(), ['ch_fb', 'ch_ig']);
    const scheduledAt = new Date(live.clock.now().getTime() + 2 * 86_400_000).toISOString();
    const post = await call('create_post', {
      workspaceId: 'w1',
      text: 'Pumpkin spice is back!',
      channelIds: ['ch_fb'],
      status: 'scheduled',
      scheduledAt,
    });
    assert.equal(post.status, 'scheduled');
    assert.equal(post.scheduledAt, scheduledAt);
    assert.equal(post.createdBy, adaId);
    assert.deepEqual(
      post.deliveries.map((d: any) => [d.channelId, d.status]),
      [['ch_fb', 'pending']],
    );
    const stored = await live.db.kysely
      .selectFrom('posts')
      .select(['id', 'text', 'status'])
      .where('id', '=', post._id)
      .executeTakeFirstOrThrow();
    assert.deepEqual(stored, { id: post._id, text: 'Pumpkin spice is back!', status: 'scheduled' });
    const draft = await call('create_post', { workspaceId: 'w2', text: 'Idea for next week', status: 'draft' });
    assert.equal(draft.status, 'draft');
    assert.match(
      await callError(client, 'create_post', { text: 'no workspace', status: 'draft' }),
      /workspaceId: is required when acting across the whole hub/,
    );
    assert.match(
      await callError(client, 'create_post', {
        workspaceId: 'w1',
        text: 'x'.repeat(2201),
        channelIds: ['ch_ig'],
        status: 'scheduled',
        publishNow: true,
      }),
      /invalid_request/,
    );
    const posts = await call('list_posts', { status: 'scheduled' });
    assert.deepEqual(
      posts.data.map((p: any) => p._id),
      [post._id],
    );
    assert.deepEqual((await call('list_posts')).data.map((p: any) => p._id).sort(), [post._id, draft._id].sort());
    assert.deepEqual(await call('get_post', { id: post._id }), post);
    const organic = await call('organic_analytics');
    assert.equal(organic.endDate, today);
    assert.equal(organic.totals.impressions, 1400);
    assert.equal(organic.totals.engagement, 44);
    assert.deepEqual(
      organic.workspaces.map((w: any) => [w.workspace._id, w.impressions, w.earnedMediaValueCents]),
      [
        ['w1', 1000, 800],
        ['w2', 400, 0],
      ],
    );
    const reviews = await call('google_review_summaries');
    const w1Reviews = reviews.workspaces.find((w: any) => w.workspace._id === 'w1');
    assert.deepEqual(
      [w1Reviews.newReviews, w1Reviews.averageRating, w1Reviews.respondedReviews, w1Reviews.responseRate],
      [4, 4.75, 2, 0.5],
    );

    // Paid
    const paid = await call('paid_analytics');
    assert.deepEqual(paid.totals, {
      spendCents: 1500,
      impressions: 50000,
      clicks: 500,
      ctr: 0.01,
      cpcCents: 3,
      results: 20,
      costPerResultCents: 75,
    });
    assert.deepEqual(
      paid.campaigns.map((c: any) => [c.campaignId, c.campaignName, c.workspaces]),
      [['camp_a', 'Camp A', 1]],
    );
    const playbooks = await call('list_playbooks');
    assert.deepEqual(
      playbooks.data.map((p: any) => p._id),
      ['pb_1', 'pb_2'],
      "only the token's hub",
    );
    assert.deepEqual(playbooks.data[0], {
      _id: 'pb_1',
      name: 'Spring Promo ',
      solutions: ['meta'],
      variants: { audience: ['Families', 'Students'] },
      questions: [{ question: 'Store hours?', type: 'short_answer', required: true }],
      createdAt: playbooks.data[0].createdAt,
    });
    assert.deepEqual(
      (await call('list_playbooks', { solution: 'google_ads' })).data.map((p: any) => p._id),
      ['pb_2'],
    );
    const page = await call('list_playbooks', { limit: 1 });
    assert.deepEqual([page.data.map((p: any) => p._id), typeof page.nextCursor], [['pb_1'], 'string']);
    const next = await call('list_playbooks', { limit: 1, cursor: page.nextCursor });
    assert.deepEqual([next.data.map((p: any) => p._id), next.nextCursor], [['pb_2'], null]);
    assert.match(await callError(client, 'list_playbooks', { cursor: 'nope' }), /cursor/);
    const optIns = await call('list_playbook_opt_ins');
    assert.deepEqual(
      optIns.data.map((r: any) => r.id),
      ['oi_1', 'oi_2'],
    );
    assert.deepEqual(optIns.data[0].variant, { audience: 'Families' });
    assert.deepEqual(optIns.data[0].workspace.fields, { region: 'West' });
    const summary = await call('get_opt_in_summary');
    assert.equal(summary.activeOptIns, 1);
    const week = summary.periods.find((p: any) => p.period === 'last_7_days');
    assert.deepEqual([week.optIns, week.workspaces], [2, 2]);
    const spend = await call('get_spend_by_workspace', { period: 'last_7_days' });
    assert.equal(spend.freshness, 'fresh');
    assert.deepEqual(spend.totals, { spendCents: 2100, priorSpendCents: 0, unattributedSpendCents: 100, priorUnattributedSpendCents: 0 });
    assert.deepEqual(
      spend.workspaces.map((w: any) => [w.id, w.spendCents]),
      [
        ['w1', 1234],
        ['w2', 766],
      ],
    );

    // Media
    const image = png(7, 5);
    const added = await call('add_media', { workspaceId: 'w2', base64: image.toString('base64'), filename: 'logo.jpg' });
    assert.deepEqual(
      [added.kind, added.contentType, added.width, added.height, added.byteSize, added.filename],
      ['image', 'image/png', 7, 5, image.length, 'logo.png'],
    );
    assert.equal(added.sha256, createHash('sha256').update(image).digest('hex'));
    const row = await live.db.kysely
      .selectFrom('media_assets')
      .select(['workspace_id', 'hub_id', 'created_by'])
      .where('id', '=', added._id)
      .executeTakeFirstOrThrow();
    assert.deepEqual(row, { workspace_id: 'w2', hub_id: 'h1', created_by: adaId });
    const dataUrl = await call('add_media', { workspaceId: 'w1', base64: `data:image/png;base64,${png(2, 2).toString('base64')}` });
    assert.equal(dataUrl.width, 2);
    // A post its network would refuse is refused when it is made, not when it is due: Instagram takes no PNG.
    const postsBeforeRefusal = (await call('list_posts')).data.length;
    assert.match(
      await callError(client, 'create_post', {
        workspaceId: 'w1',
        text: 'The new menu',
        channelIds: ['ch_ig'],
        mediaIds: [dataUrl._id],
        status: 'scheduled',
        scheduledAt,
      }),
      /^invalid_request: .*mediaIds\.0: Instagram channel ch_ig \(Denver IG\) cannot take it: Instagram takes JPEG images only \(this post has image\/png\)/,
    );
    assert.equal((await call('list_posts')).data.length, postsBeforeRefusal, 'nothing was written');
    // Both were added at the same (fixed) instant, so they are ordered by id.
    assert.deepEqual(
      (await call('list_media')).data.map((m: any) => m._id),
      [added._id, dataUrl._id].sort(),
    );
    assert.deepEqual(
      (await call('list_media', { workspaceId: 'w2' })).data.map((m: any) => m._id),
      [added._id],
    );
    assert.deepEqual(await call('get_media', { id: added._id }), added);
    const ssrf = await callError(client, 'add_media', {
      workspaceId: 'w1',
      url: `http://127.0.0.1:${new URL(live.baseUrl).port}/openapi.json`,
    });
    assert.match(
      ssrf,
      /^url_refused: url: refused: 127\.0\.0\.1 is a loopback address; only addresses on the public internet can be fetched/,
    );
    assert.match(
      await callError(client, 'add_media', { workspaceId: 'w1', url: 'http://localhost/x.png' }),
      /localhost resolves to .*loopback/,
    );
    assert.match(
      await callError(client, 'add_media', { workspaceId: 'w1', url: 'http://169.254.169.254/latest/meta-data/' }),
      /link-local/,
    );
    assert.match(await callError(client, 'add_media', { workspaceId: 'w1', url: 'file:///etc/passwd' }), /only http and https/);
    assert.match(await callError(client, 'add_media', { workspaceId: 'w1' }), /give exactly one of url and base64/);
    assert.match(await callError(client, 'add_media', { workspaceId: 'w1', base64: 'not base64!' }), /base64: is not valid base64/);
    assert.match(
      await callError(client, 'add_media', { workspaceId: 'w1', base64: Buffer.from('plain text, not an image').toString('base64') }),
      /unsupported_media_type/,
    );
    assert.match(
      await callError(client, 'add_media', { workspaceId: 'w1', base64: Buffer.alloc(5 * 1024 * 1024 + 1).toString('base64') }),
      /payload_too_large: base64: decodes to 5\.0 MB; .*limited to 5 MB/,
    );
    assert.match(
      await callError(client, 'add_media', { workspaceId: 'v1', base64: image.toString('base64') }),
      /workspaceId: is not a workspace of your hub/,
    );
    assert.equal(
      Number(
        (
          await live.db.kysely
            .selectFrom('media_assets')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      ),
      2,
      'refused media stored nothing',
    );

    assert.deepEqual([...called].sort(), Object.values(TOOL_GROUPS).flat().sort(), 'every tool was called successfully');

    // Rate limits: each tool call is exactly one POST, and each POST counts one request.
    const posts2 = mcpPosts(log).slice(postsBefore);
    assert.ok(posts2.every((r) => r.rpc.length === 1 && r.status === 200));
    const counts = posts2.map((r) => remaining(r.headers));
    for (let i = 1; i < counts.length; i++)
      assert.equal(counts[i], counts[i - 1]! - 1, `request ${i}: RateLimit r went ${counts[i - 1]} → ${counts[i]}`);
    assert.equal(posts2.filter((r) => r.rpc[0] === 'tools/call').length, posts2.length);
  });

  test('the SDK refreshes an expired access token by itself and carries on', async () => {
    const before = provider.current!;
    const authorizations = provider.authorizationUrls.length;
    const seen = log.length;
    await expireAccessTokens(live);
    // Expiry edited into the database bypasses the server's 30 s cache of token verdicts (a real
    // expiry cannot: verdicts never outlive `exp`); wait until the nudge has emptied it.
    for (let i = 0; i < 200; i++) {
      const probe = await fetch(mcpUrl, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${before.access_token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: '{}',
      });
      if (probe.status === 401) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }

    const whoami = await callOk(client, 'whoami');
    assert.equal(whoami.hub._id, 'h1');
    const after = provider.current!;
    assert.notEqual(after.access_token, before.access_token, 'a new access token');
    assert.notEqual(after.refresh_token, before.refresh_token, 'the refresh token rotated');
    assert.equal(provider.authorizationUrls.length, authorizations, 'the user was not asked again');

    const steps = log.slice(seen);
    assert.equal(steps[0]!.status, 401);
    assert.match(steps[0]!.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
    assert.match(steps[0]!.headers.get('www-authenticate') ?? '', /resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/mcp"/);
    const refresh = steps.find((r) => r.url.pathname === '/oauth/token')!;
    const form = new URLSearchParams(refresh.body);
    assert.equal(form.get('grant_type'), 'refresh_token');
    assert.equal(form.get('refresh_token'), before.refresh_token);
    assert.equal(form.get('resource'), mcpUrl.href);
    assert.equal(refresh.status, 200);
    assert.equal(steps.at(-1)!.status, 200);

    // The old refresh token, presented again by its client right away (a parallel worker), gets
    // the pair the SDK already holds; once the reuse leeway is past, it is dead.
    const reuse = () =>
      fetch(`${live.baseUrl}/oauth/token`, {
        method: 'POST',
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          refresh_token: before.refresh_token!,
          client_id: provider.information!.client_id,
          resource: mcpUrl.href,
        }),
      });
    const again = await reuse();
    assert.equal(again.status, 200);
    assert.equal(((await again.json()) as { refresh_token: string }).refresh_token, after.refresh_token, 'the same new pair');
    await sql`UPDATE oauth_artifacts SET consumed_at = now() - make_interval(secs => ${REFRESH_TOKEN_REUSE_LEEWAY_S + 1})
               WHERE model = 'RefreshToken' AND consumed_at IS NOT NULL`.execute(live.db.kysely);
    assert.equal((await reuse()).status, 400);
    await client.close();
  });
});
