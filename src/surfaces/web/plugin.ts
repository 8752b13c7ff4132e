// The web admin under {base_url}/app (sign-in, hub switcher, profile menu, Manage Hub → API tab,
// playbook opt-ins report with a streamed CSV download, spend dashboard) and the signed embeds
// under {base_url}/embed. Server-rendered; see README "The web admin".
import { createHmac, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import formbody from '@fastify/formbody';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config.ts';
import { isDatabaseUnavailable, type Db } from '../../db/database.ts';
import { KEY_SCOPES, type KeyScope } from '../../domain/api-keys/api-key.ts';
import { listKeys, revokeKey, validateKeyName } from '../../domain/api-keys/api-key.repository.ts';
import { signIn } from '../../domain/oauth/sign-in.ts';
import { decodeOptInCursor, encodeOptInCursor, OPT_IN_STATUSES, type OptInRow, type PageCursor } from '../../domain/opt-ins/opt-in.ts';
import type { HubCatalogCache } from '../../domain/opt-ins/hub-catalog.ts';
import { findOptInPage, type OptInPageQuery } from '../../domain/opt-ins/opt-in.repository.ts';
import { optInSummary } from '../../domain/opt-ins/opt-in.service.ts';
import { PERIODS, type Period } from '../../domain/periods.ts';
import { spendByWorkspace, type SpendReportCache } from '../../domain/spend/spend.service.ts';
import type { Clock } from '../../platform/clock.ts';
import { ApiError, fromFrameworkError } from '../shared/errors.ts';
import { sameSecret } from '../../platform/constant-time.ts';
import type { RateLimiter } from '../../platform/rate-limit.ts';
import { newNonce } from '../shared/html.ts';
import { APP_JS } from './assets.ts';
import { csvLine, optInCsvHeader, optInCsvValues } from './csv.ts';
import { verifyEmbedToken, type EmbedView } from './embed-token.ts';
import { appHeaders, document_, embedHeaders, escapeHtml as h, messagePage, shell, signInPage, statusLabel, when, type Shell } from './pages.ts';
import { optInSummaryView, spendView, type SpendReport } from './views.ts';
import {
  createKeyOnce, createSession, deleteSession, findEmbedKey, hubName, hubPlaybooks, hubWorkspaces, issueFormToken,
  revealKeyOnce, sessionUser, visibleFieldKeys, type Membership, type SessionUser,
} from './web.repository.ts';

export interface WebDeps {
  config: Config;
  db: Db;
  clock: Clock;
  limiter: RateLimiter;
  spendCache: SpendReportCache;
  catalogs: HubCatalogCache;
}

export const SESSION_COOKIE = 'hubops_app';
const SIGNIN_COOKIE = 'hubops_signin';
const REPORT_PAGE_SIZE = 50;
/** Rows per keyset page of the CSV stream: big enough to amortise the query, small in memory. */
export const CSV_PAGE_SIZE = 2000;
const WORKSPACE_SELECT_MAX = 500;

type Form = Record<string, string | undefined>;
type Query = Record<string, string | undefined>;

function cookies(request: FastifyRequest): Map<string, string> {
  const jar = new Map<string, string>();
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    try {
      jar.set(part.slice(0, eq).trim(), decodeURIComponent(part.slice(eq + 1).trim()));
    } catch {
      // A cookie with a broken %-escape (ours never have one) is ignored, not a 500.
    }
  }
  return jar;
}

const hmac = (secret: string, label: string) => createHmac('sha256', secret).update(label).digest('base64url');
const one = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

interface Ctx {
  sessionId: string;
  user: SessionUser;
  hub: Membership;
  csrf: string;
}

export async function webPlugin(app: FastifyInstance, deps: WebDeps): Promise<void> {
  const base = new URL(deps.config.baseUrl).pathname.replace(/\/$/, '');
  const appPath = `${base}/app`;
  const secure = deps.config.baseUrl.startsWith('https:');
  const cookieAttrs = `Path=${appPath}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
  const csrfOf = (sessionId: string) => hmac(sessionId, 'hubops-web-csrf');
  const hubUrl = (hubId: string) => `${appPath}/hubs/${encodeURIComponent(hubId)}`;

  await app.register(formbody);

  const html = (reply: FastifyReply, status: number, render: (n: string) => string) => {
    const n = newNonce();
    return reply.code(status).headers(appHeaders(n)).send(render(n));
  };
  const refuse = (reply: FastifyReply, status: number, title: string, message: string, link?: { href: string; text: string }) =>
    html(reply, status, (n) => messagePage(title, message, n, link));

  app.setErrorHandler((error: Error, request, reply) => {
    if (isDatabaseUnavailable(error)) {
      request.log.warn({ err: error }, 'database unavailable');
      return refuse(reply.header('retry-after', '5'), 503, 'Temporarily unavailable', 'hubops cannot reach its database right now. Try again in a few seconds.');
    }
    // Ours (the input rule at the door, rest.ts) are ApiErrors; Fastify's own, in our words.
    const refusal = error instanceof ApiError ? error : fromFrameworkError(error, request.routeOptions.bodyLimit ?? 0);
    if (refusal && refusal.status < 500) {
      // Whatever is wrong with an embed request, the embedding site gets the embed refusal page.
      if (request.url.startsWith(`${base}/embed/`)) return embedRefusal(reply, 'The embed token is malformed.');
      return refuse(reply, refusal.status, 'Bad request', refusal.message);
    }
    request.log.error({ err: error }, 'web request failed');
    return refuse(reply, 500, 'Something went wrong', `Something went wrong on our side (request ${request.id}).`);
  });

  /** The signed-in user, or a redirect to sign-in (GET) / 401 (other methods). */
  const signedIn = async (request: FastifyRequest, reply: FastifyReply): Promise<{ sessionId: string; user: SessionUser } | undefined> => {
    const sessionId = cookies(request).get(SESSION_COOKIE);
    const user = sessionId ? await sessionUser(deps.db, sessionId, deps.clock.now()) : undefined;
    if (sessionId && user) return { sessionId, user };
    if (request.method === 'GET') {
      const next = request.url.startsWith(`${appPath}/`) ? request.url : appPath;
      await reply.code(303).header('cache-control', 'no-store').redirect(`${appPath}/sign-in?next=${encodeURIComponent(next)}`, 303);
    } else {
      await refuse(reply, 401, 'Signed out', 'Your session has ended. Sign in again.', { href: `${appPath}/sign-in`, text: 'Sign in' });
    }
    return undefined;
  };

  /** Signed in, a member of the hub, and (for admin pages) its hub admin; otherwise answered here. */
  const hubCtx = async (request: FastifyRequest, reply: FastifyReply, hubId: string, adminOnly: boolean): Promise<Ctx | undefined> => {
    const who = await signedIn(request, reply);
    if (!who) return undefined;
    const hub = who.user.memberships.find((m) => m.hubId === hubId);
    if (!hub) {
      await refuse(reply, 403, 'No access to this hub', 'You are not a member of this hub.', { href: appPath, text: 'Back to your hub' });
      return undefined;
    }
    if (adminOnly && hub.role !== 'hub_admin') {
      await refuse(reply, 403, 'Hub admins only', 'Only the hub\'s administrators can open this page. Ask one of them if you need access.', { href: hubUrl(hubId), text: 'Back to the hub' });
      return undefined;
    }
    return { sessionId: who.sessionId, user: who.user, hub, csrf: csrfOf(who.sessionId) };
  };
  const csrfOk = (ctx: { sessionId: string }, body: Form) => sameSecret(csrfOf(ctx.sessionId), body.csrf);
  const shellOf = (ctx: Ctx, active: Shell['active']): Shell => ({ base, user: ctx.user, hub: ctx.hub, csrf: ctx.csrf, active });

  app.get(`${appPath}/assets/app.js`, async (_request, reply) =>
    reply.headers({ 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=300', 'x-content-type-options': 'nosniff' }).send(APP_JS));

  // ── Sign-in and sign-out ───────────────────────────────────────────────────────────────────
  const safeNext = (next: unknown) => (typeof next === 'string' && next.startsWith(`${appPath}/`) && !next.startsWith('//') && !/[\\\r\n]/.test(next) ? next : appPath);

  app.get<{ Querystring: Query }>(`${appPath}/sign-in`, async (request, reply) => {
    let pre = cookies(request).get(SIGNIN_COOKIE);
    if (!pre || pre.length < 20) {
      pre = randomBytes(24).toString('base64url');
      reply.header('set-cookie', `${SIGNIN_COOKIE}=${pre}; ${cookieAttrs}; Max-Age=3600`);
    }
    const csrf = hmac(pre, 'hubops-web-signin');
    return html(reply, 200, (n) => signInPage({ action: `${appPath}/sign-in`, csrf, next: safeNext(one(request.query.next)) }, n));
  });

  app.post<{ Body: Form }>(`${appPath}/sign-in`, async (request, reply) => {
    const body = (request.body ?? {}) as Form;
    const pre = cookies(request).get(SIGNIN_COOKIE);
    const next = safeNext(body.next);
    const email = String(body.email ?? '').trim().toLowerCase().slice(0, 320);
    const password = String(body.password ?? '').slice(0, 1024);
    if (!pre || !sameSecret(hmac(pre, 'hubops-web-signin'), body.csrf)) {
      const fresh = randomBytes(24).toString('base64url');
      reply.header('set-cookie', `${SIGNIN_COOKIE}=${fresh}; ${cookieAttrs}; Max-Age=3600`);
      return html(reply, 400, (n) => signInPage({ action: `${appPath}/sign-in`, csrf: hmac(fresh, 'hubops-web-signin'), next, email, error: 'Your sign-in form expired. Please try again.' }, n));
    }
    const again = (status: number, o: { error?: string; fieldErrors?: { email?: string; password?: string } }) =>
      html(reply, status, (n) => signInPage({ action: `${appPath}/sign-in`, csrf: hmac(pre, 'hubops-web-signin'), next, email, ...o }, n));
    const fieldErrors: { email?: string; password?: string } = {};
    if (!email) fieldErrors.email = 'Enter the email address you sign in with.';
    else if (!/^[^\s@]+@[^\s@]+$/.test(email)) fieldErrors.email = 'Enter an email address like name@example.com.';
    if (!password) fieldErrors.password = 'Enter your password.';
    if (fieldErrors.email || fieldErrors.password) return again(400, { fieldErrors });
    // The same throttle (and the same counters) as the OAuth sign-in.
    const onLimiterError = (error: unknown) => request.log.warn({ err: error }, 'rate limiter unavailable; sign-in allowed unthrottled');
    const outcome = await signIn({ db: deps.db, limiter: deps.limiter, nowMs: deps.clock.now().getTime(), onLimiterError }, { email, password, address: request.ip });
    if (!outcome.ok && outcome.reason === 'throttled') return again(429, { error: 'Too many failed sign-in attempts. Wait 15 minutes and try again.' });
    if (!outcome.ok) return again(401, { error: 'That email and password do not match an account.' });
    const { user } = outcome;
    const sessionId = await createSession(deps.db, user.id, deps.clock.now());
    reply.header('set-cookie', [
      `${SESSION_COOKIE}=${sessionId}; ${cookieAttrs}`,
      `${SIGNIN_COOKIE}=; ${cookieAttrs}; Max-Age=0`,
    ]);
    return reply.code(303).header('cache-control', 'no-store').redirect(next, 303);
  });

  app.post<{ Body: Form }>(`${appPath}/sign-out`, async (request, reply) => {
    const sessionId = cookies(request).get(SESSION_COOKIE);
    if (sessionId) {
      if (!sameSecret(csrfOf(sessionId), ((request.body ?? {}) as Form).csrf)) return refuse(reply, 400, 'Form expired', 'That form expired. Reload the page and try again.');
      await deleteSession(deps.db, sessionId);
    }
    reply.header('set-cookie', `${SESSION_COOKIE}=; ${cookieAttrs}; Max-Age=0`);
    return reply.code(303).redirect(`${appPath}/sign-in`, 303);
  });

  // ── Shell: home and switcher ───────────────────────────────────────────────────────────────
  app.get(appPath, async (request, reply) => {
    const who = await signedIn(request, reply);
    if (!who) return reply;
    const first = who.user.memberships.find((m) => m.role === 'hub_admin') ?? who.user.memberships[0];
    if (!first) return refuse(reply, 403, 'No hub yet', 'Your account is not a member of any hub. Ask a hub administrator to add you.');
    return reply.code(303).redirect(hubUrl(first.hubId), 303);
  });

  app.get<{ Querystring: Query }>(`${appPath}/switch`, async (request, reply) => {
    const who = await signedIn(request, reply);
    if (!who) return reply;
    const target = who.user.memberships.find((m) => m.hubId === one(request.query.hub));
    return reply.code(303).redirect(target ? hubUrl(target.hubId) : appPath, 303);
  });

  app.get<{ Params: { hubId: string } }>(`${appPath}/hubs/:hubId`, async (request, reply) => {
    const ctx = await hubCtx(request, reply, request.params.hubId, false);
    if (!ctx) return reply;
    const admin = ctx.hub.role === 'hub_admin';
    const u = hubUrl(ctx.hub.hubId);
    const body = `<div class="card"><h1>${h(ctx.hub.hubName)}</h1>
<p>You are ${admin ? 'a <strong>hub administrator</strong> of this hub' : `a <strong>member</strong> of this hub${ctx.hub.workspaceName ? ` in the workspace <strong>${h(ctx.hub.workspaceName)}</strong>` : ''}`}.</p>
${admin ? `<ul><li><a href="${h(u)}/opt-ins">Playbook opt-ins report</a> — filter, page through and download every workspace's opt-ins as CSV.</li>
<li><a href="${h(u)}/spend">Spend dashboard</a> — paid ad spend per workspace for today, yesterday, the last 7 and 30 days.</li>
<li><a href="${h(u)}/settings/api">Manage Hub → API</a> — API keys for dashboards, spreadsheets, automation and AI tools.</li></ul>`
  : '<p class="muted">Hub-wide reports and API keys are managed by the hub\'s administrators.</p>'}</div>`;
    return html(reply, 200, (n) => shell(shellOf(ctx, 'home'), ctx.hub.hubName, body, n));
  });

  // ── Manage Hub → API ───────────────────────────────────────────────────────────────────────
  interface ApiTabState { formToken: string; name?: string; scope?: string; errors?: { name?: string; scope?: string }; created?: { keyId: string; key: string | undefined }; notice?: string }
  const renderApiTab = async (ctx: Ctx, state: ApiTabState) => {
    const keys = await listKeys(deps.db, ctx.hub.hubId);
    const u = hubUrl(ctx.hub.hubId);
    const hubApi = `${deps.config.baseUrl}/v1/hub`;
    const urls = [['API base URL', 'url-api', hubApi], ['OpenAPI spec URL', 'url-openapi', `${hubApi}/openapi.json`], ['MCP URL', 'url-mcp', `${hubApi}/mcp`]];
    const createdKey = state.created ? keys.find((k) => k.id === state.created!.keyId) : undefined;
    const reveal = state.created
      ? state.created.key
        ? `<div class="secret" role="alert" data-new-key><h2>Your new ${createdKey?.scope === 'embed' ? 'embed signing key' : 'key'} “${h(createdKey?.name ?? '')}”</h2>
<p><strong>Copy it now: it will not be shown again.</strong> ${createdKey?.scope === 'embed'
    ? 'This is the private key your server signs embed tokens with (Ed25519); hubops keeps only its public key. Store it in your server\'s secret settings; it must never reach a browser.'
    : 'hubops keeps only a fingerprint of it. Store it in the tool\'s secret settings, never in a page or a spreadsheet cell.'}</p>
<code id="new-key">${h(state.created.key)}</code><button type="button" class="primary" data-copy-target="new-key">Copy key</button>
<p><small>Key id (not secret; embed tokens name it as <code>kid</code>): <code>${h(state.created.keyId)}</code></small></p></div>`
        : `<p class="notice" role="status">The key “${h(createdKey?.name ?? '')}” was created and has already been shown once; it cannot be shown again. If you did not copy it, revoke it and create another.</p>`
      : '';
    const rows = keys.map((k) => `<tr data-key-id="${h(k.id)}"><td>${h(k.name)}<br><small>id <code>${h(k.id)}</code></small></td><td>${k.scope === 'read' ? 'read' : k.legacyEmbed ? 'embed <span class="pill revoked" title="Made before embed key pairs: anyone who can read hubops\'s database could sign with it. Create a new embed key and revoke this one.">legacy: replace</span>' : 'embed'}</td><td><code>${h(k.start)}…</code></td>
<td>${h(when(k.createdAt))}</td><td class="num" data-requests>${k.requestCount}</td><td>${h(when(k.lastUsedAt))}</td>
<td>${k.revokedAt ? `<span class="pill revoked">Revoked ${h(k.revokedAt.slice(0, 10))}</span>` : '<span class="pill live">Active</span>'}</td>
<td>${k.revokedAt ? '' : `<a class="button" href="${h(u)}/settings/api/keys/${encodeURIComponent(k.id)}/revoke">Revoke</a>`}</td></tr>`).join('');
    const e = state.errors ?? {};
    const scope = state.scope === 'embed' ? 'embed' : 'read';
    return `<h1>Manage Hub · API</h1>${state.notice ? `<p class="notice" role="status">${h(state.notice)}</p>` : ''}${reveal}
<div class="card"><h2>Addresses</h2><div class="urls">${urls.map(([label, id, value]) => `<span class="muted">${h(label!)}</span><code id="${id}">${h(value!)}</code><button type="button" data-copy-target="${id}">Copy</button>`).join('')}</div>
<p class="muted"><small>Every Hub API request sends <code>Authorization: Bearer &lt;key&gt;</code> from server-side code. AI assistants that cannot send a fixed header connect to <code>${h(deps.config.baseUrl)}/mcp</code> with their own sign-in instead.</small></p></div>
<div class="card"><h2>Keys</h2>
<p>Give each tool its own key, named after it (“Looker dashboard”, “Zapier sync”). Then you can see which tool makes which requests, and revoke one integration without breaking the others.</p>
${keys.length ? `<table><thead><tr><th>Name</th><th>Scope</th><th>Key starts</th><th>Created</th><th class="num">Requests</th><th>Last used</th><th>State</th><th></th></tr></thead><tbody>${rows}</tbody></table>` : '<p class="muted">No keys yet.</p>'}
<p class="muted"><small>Request counts and last-use times are updated about every ten seconds.</small></p></div>
<div class="card"><h2>Create key</h2>
<form method="post" action="${h(u)}/settings/api/keys" data-once novalidate>
<input type="hidden" name="csrf" value="${h(ctx.csrf)}"><input type="hidden" name="form_token" value="${h(state.formToken)}">
<label for="key-name">Name</label><input id="key-name" name="name" maxlength="100" placeholder="e.g. Looker dashboard" value="${h(state.name ?? '')}"${e.name ? ' class="invalid" aria-describedby="name-error"' : ''}>
${e.name ? `<p class="field-error" id="name-error">${h(e.name)}</p>` : ''}
<label>Scope</label><div class="radio" role="radiogroup">
<label><input type="radio" name="scope" value="read"${scope === 'read' ? ' checked' : ''}> read — calls the Hub API</label>
<label><input type="radio" name="scope" value="embed"${scope === 'embed' ? ' checked' : ''}> embed — only signs embedded views</label></div>
${e.scope ? `<p class="field-error" id="scope-error">${h(e.scope)}</p>` : ''}
<div class="actions"><button class="primary" type="submit">Create key</button></div></form></div>`;
  };

  app.get<{ Params: { hubId: string }; Querystring: Query }>(`${appPath}/hubs/:hubId/settings/api`, async (request, reply) => {
    const ctx = await hubCtx(request, reply, request.params.hubId, true);
    if (!ctx) return reply;
    const createdToken = one(request.query.created);
    const created = createdToken ? await revealKeyOnce(deps.db, ctx.sessionId, createdToken, ctx.hub.hubId) : undefined;
    const revoked = one(request.query.revoked);
    const formToken = await issueFormToken(deps.db, ctx.sessionId, ctx.hub.hubId, deps.clock.now());
    const body = await renderApiTab(ctx, { formToken, created, notice: revoked ? 'The key was revoked. Requests with it are refused from now on.' : undefined });
    return html(reply, 200, (n) => shell(shellOf(ctx, 'manage'), 'Manage Hub · API', body, n));
  });

  app.post<{ Params: { hubId: string }; Body: Form }>(`${appPath}/hubs/:hubId/settings/api/keys`, async (request, reply) => {
    const ctx = await hubCtx(request, reply, request.params.hubId, true);
    if (!ctx) return reply;
    const body = (request.body ?? {}) as Form;
    if (!csrfOk(ctx, body)) return refuse(reply, 400, 'Form expired', 'That form expired. Reload the page and try again.', { href: `${hubUrl(ctx.hub.hubId)}/settings/api`, text: 'Back to the API tab' });
    const formToken = String(body.form_token ?? '');
    const errors: { name?: string; scope?: string } = {};
    let name = '';
    try {
      name = validateKeyName(String(body.name ?? ''));
    } catch {
      errors.name = String(body.name ?? '').trim() === '' ? 'Give the key a name, e.g. the tool that will use it.' : 'The name must be at most 100 characters.';
    }
    const scope = String(body.scope ?? 'read');
    if (!KEY_SCOPES.includes(scope as KeyScope)) errors.scope = 'Choose read or embed.';
    if (errors.name || errors.scope) {
      const page = await renderApiTab(ctx, { formToken, name: String(body.name ?? ''), scope, errors });
      return html(reply, 400, (n) => shell(shellOf(ctx, 'manage'), 'Manage Hub · API', page, n));
    }
    const outcome = await createKeyOnce(deps.db, { sessionId: ctx.sessionId, formToken, hubId: ctx.hub.hubId, name, scope: scope as KeyScope, now: deps.clock.now() });
    if (outcome.kind === 'expired') {
      const fresh = await issueFormToken(deps.db, ctx.sessionId, ctx.hub.hubId, deps.clock.now());
      const page = await renderApiTab(ctx, { formToken: fresh, name, scope, notice: 'That form had expired, so no key was created. Check the details and click Create key again.' });
      return html(reply, 400, (n) => shell(shellOf(ctx, 'manage'), 'Manage Hub · API', page, n));
    }
    // Created or already created by the first of a double submit: both land on the page that shows it once.
    return reply.code(303).header('cache-control', 'no-store').redirect(`${hubUrl(ctx.hub.hubId)}/settings/api?created=${encodeURIComponent(formToken)}`, 303);
  });

  app.get<{ Params: { hubId: string; keyId: string } }>(`${appPath}/hubs/:hubId/settings/api/keys/:keyId/revoke`, async (request, reply) => {
    const ctx = await hubCtx(request, reply, request.params.hubId, true);
    if (!ctx) return reply;
    const key = (await listKeys(deps.db, ctx.hub.hubId)).find((k) => k.id === request.params.keyId);
    const u = `${hubUrl(ctx.hub.hubId)}/settings/api`;
    if (!key) return refuse(reply, 404, 'No such key', 'This hub has no such key.', { href: u, text: 'Back to the API tab' });
    const body = `<div class="card"><h1>Revoke “${h(key.name)}”?</h1>
<p>The key <code>${h(key.start)}…</code> (${h(key.scope)}, ${key.requestCount} requests, last used ${h(when(key.lastUsedAt))}) will stop working immediately, everywhere. This cannot be undone: the tool that uses it will need a new key.</p>
<form method="post" action="${h(u)}/keys/${encodeURIComponent(key.id)}/revoke" data-once><input type="hidden" name="csrf" value="${h(ctx.csrf)}">
<div class="actions"><a class="button" href="${h(u)}">Cancel</a><button class="danger" type="submit">Yes, revoke this key</button></div></form></div>`;
    return html(reply, 200, (n) => shell(shellOf(ctx, 'manage'), 'Revoke key', body, n));
  });

  app.post<{ Params: { hubId: string; keyId: string }; Body: Form }>(`${appPath}/hubs/:hubId/settings/api/keys/:keyId/revoke`, async (request, reply) => {
    const ctx = await hubCtx(request, reply, request.params.hubId, true);
    if (!ctx) return reply;
    const u = `${hubUrl(ctx.hub.hubId)}/settings/api`;
    if (!csrfOk(ctx, (request.body ?? {}) as Form)) return refuse(reply, 400, 'Form expired', 'That form expired. Reload the page and try again.', { href: u, text: 'Back to the API tab' });
    try {
      await revokeKey(deps.db, request.params.keyId, ctx.hub.hubId);
    } catch {
      return refuse(reply, 404, 'No such key', 'This hub has no such key.', { href: u, text: 'Back to the API tab' });
    }
    return reply.code(303).redirect(`${u}?revoked=${encodeURIComponent(request.params.keyId)}`, 303);
  });

  // ── Playbook opt-ins report and CSV ────────────────────────────────────────────────────────
  interface Filters { query: Omit<OptInPageQuery, 'hubId' | 'limit' | 'after'>; values: Record<string, string>; errors: Record<string, string> }
  const parseFilters = (q: Query): Filters => {
    const values: Record<string, string> = {};
    const errors: Record<string, string> = {};
    const query: Filters['query'] = {};
    for (const k of ['playbook', 'status', 'from', 'to', 'workspace'] as const) {
      const v = one(q[k])?.trim();
      if (v) values[k] = v.slice(0, 200);
    }
    if (values.playbook) query.playbookId = values.playbook;
    if (values.workspace) query.workspaceId = values.workspace;
    if (values.status) {
      if ((OPT_IN_STATUSES as readonly string[]).includes(values.status)) query.status = values.status;
      else errors.status = 'Choose a status from the list.';
    }
    const day = (name: 'from' | 'to') => {
      const v = values[name];
      if (!v) return undefined;
      const t = /^\d{4}-\d{2}-\d{2}$/.test(v) ? Date.parse(`${v}T00:00:00Z`) : Number.NaN;
      if (Number.isNaN(t) || new Date(t).toISOString().slice(0, 10) !== v) {
        errors[name] = 'Enter a date as YYYY-MM-DD.';
        return undefined;
      }
      return t;
    };
    const from = day('from');
    const to = day('to');
    if (from !== undefined) query.optedInFrom = new Date(from);
    if (to !== undefined) query.optedInBefore = new Date(to + 86_400_000);
    if (from !== undefined && to !== undefined && to < from) errors.to = 'The end date must be on or after the start date.';
    return { query, values, errors };
  };
  const filterQueryString = (values: Record<string, string>, extra: Record<string, string> = {}) => {
    const p = new URLSearchParams({ ...values, ...extra });
    const s = p.toString();
    return s ? `?${s}` : '';
  };

  app.get<{ Params: { hubId: string }; Querystring: Query }>(`${appPath}/hubs/:hubId/opt-ins`, async (request, reply) => {
    const ctx = await hubCtx(request, reply, request.params.hubId, true);
    if (!ctx) return reply;
    const hubId = ctx.hub.hubId;
    const f = parseFilters(request.query);
    let after: PageCursor | undefined;
    const cursor = one(request.query.cursor);
    if (cursor) {
      try {
        after = decodeOptInCursor(cursor);
      } catch {
        f.errors.cursor = 'That page link is no longer valid; showing the first page.';
      }
    }
    const valid = !f.errors.status && !f.errors.from && !f.errors.to;
    const [playbooks, workspaces, found] = await Promise.all([
      hubPlaybooks(deps.db, hubId),
      hubWorkspaces(deps.db, hubId, WORKSPACE_SELECT_MAX + 1),
      valid ? findOptInPage(deps.db, deps.catalogs, { hubId, ...f.query, after, limit: REPORT_PAGE_SIZE }) : undefined,
    ]);
    const page = found ? (JSON.parse(found.json.join('')) as OptInRow[]) : [];
    const next = found?.next ? encodeOptInCursor(found.next) : null;
    const u = `${hubUrl(hubId)}/opt-ins`;
    const v = f.values;
    const err = (k: string) => (f.errors[k] ? `<p class="field-error" id="${k}-error">${h(f.errors[k]!)}</p>` : '');
    const inv = (k: string) => (f.errors[k] ? ` class="invalid" aria-describedby="${k}-error"` : '');
    const workspaceField = workspaces.length <= WORKSPACE_SELECT_MAX
      ? `<select id="f-workspace" name="workspace"><option value="">All workspaces</option>${workspaces.map((w) => `<option value="${h(w.id)}"${v.workspace === w.id ? ' selected' : ''}>${h(w.name)}</option>`).join('')}</select>`
      : `<input id="f-workspace" name="workspace" placeholder="workspace id" value="${h(v.workspace ?? '')}">`;
    const filters = `<form method="get" action="${h(u)}" class="card" novalidate><div class="row">
<div><label for="f-playbook">Playbook</label><select id="f-playbook" name="playbook"><option value="">All playbooks</option>${playbooks.map((p) => `<option value="${h(p.id)}"${v.playbook === p.id ? ' selected' : ''}>${h(p.name)}</option>`).join('')}</select></div>
<div><label for="f-status">Status</label><select id="f-status" name="status"${inv('status')}><option value="">Any status</option>${OPT_IN_STATUSES.map((s) => `<option value="${s}"${v.status === s ? ' selected' : ''}>${h(statusLabel(s))}</option>`).join('')}</select>${err('status')}</div>
<div><label for="f-from">Opted in from</label><input id="f-from" name="from" type="date" value="${h(v.from ?? '')}"${inv('from')}>${err('from')}</div>
<div><label for="f-to">Opted in to</label><input id="f-to" name="to" type="date" value="${h(v.to ?? '')}"${inv('to')}>${err('to')}</div>
<div><label for="f-workspace">Workspace</label>${workspaceField}</div></div>
<div class="actions"><button class="primary" type="submit">Apply filters</button><a class="button" href="${h(u)}">Clear</a>
<a class="button" id="download-csv" href="${h(u)}.csv${h(filterQueryString(v))}" download>Download CSV</a></div>
<p class="muted"><small>The CSV holds every matching opt-in (not just this page), one row per opt-in, exactly as the Hub API returns them. Dates are UTC.</small></p></form>`;
    const table = page.length
      ? `<table id="opt-ins"><thead><tr><th>Playbook</th><th>Workspace</th><th>Status</th><th>Opted in</th><th>Updated</th><th class="num">Budget</th></tr></thead><tbody>
${page.map((r) => `<tr data-id="${h(r.id)}"><td>${h(r.playbook.name)}</td><td>${h(r.workspace.name)}</td><td><span class="pill${r.status === 'active' ? ' live' : ''}">${h(statusLabel(r.status))}</span></td>
<td>${h(when(r.optedInAt))}</td><td>${h(when(r.updatedAt))}</td><td class="num">${r.budgetCents === null ? '—' : `$${(r.budgetCents / 100).toFixed(2)}${r.budgetType ? ` <small>${h(r.budgetType)}</small>` : ''}`}</td></tr>`).join('')}</tbody></table>`
      : `<p class="muted">${valid ? 'No opt-ins match these filters.' : 'Fix the filters above to see opt-ins.'}</p>`;
    const pager = `<div class="pager">${after ? `<a class="button" href="${h(u + filterQueryString(v))}">First page</a>` : ''}${next ? `<a class="button" rel="next" href="${h(u + filterQueryString(v, { cursor: next }))}">Next page</a>` : ''}</div>`;
    const body = `<h1>Playbook opt-ins</h1>${f.errors.cursor ? `<p class="notice">${h(f.errors.cursor)}</p>` : ''}${filters}<div class="card">${table}${pager}
<p class="muted"><small>Oldest change first, ${REPORT_PAGE_SIZE} per page.</small></p></div>`;
    return html(reply, valid ? 200 : 400, (n) => shell(shellOf(ctx, 'opt-ins'), 'Playbook opt-ins', body, n));
  });

  app.get<{ Params: { hubId: string }; Querystring: Query }>(`${appPath}/hubs/:hubId/opt-ins.csv`, async (request, reply) => {
    const ctx = await hubCtx(request, reply, request.params.hubId, true);
    if (!ctx) return reply;
    const hubId = ctx.hub.hubId;
    const f = parseFilters(request.query);
    if (Object.keys(f.errors).length) return refuse(reply, 400, 'Invalid filters', Object.values(f.errors).join(' '), { href: `${hubUrl(hubId)}/opt-ins`, text: 'Back to the report' });
    const fieldKeys = await visibleFieldKeys(deps.db, hubId);
    const db = deps.db;
    // Keyset pages, written as they arrive: Readable.from waits for the socket to drain before
    // asking for the next page, so memory holds one page whatever the size of the hub.
    async function* lines(): AsyncGenerator<string> {
      yield csvLine(optInCsvHeader(fieldKeys));
      let after: PageCursor | undefined;
      for (;;) {
        const page = await findOptInPage(db, deps.catalogs, { hubId, ...f.query, after, limit: CSV_PAGE_SIZE });
        let chunk = '';
        for (const row of JSON.parse(page.json.join('')) as OptInRow[]) chunk += csvLine(optInCsvValues(row, fieldKeys));
        if (chunk) yield chunk;
        if (!page.next) return;
        after = page.next;
      }
    }
    const stamp = deps.clock.now().toISOString().slice(0, 10);
    reply.headers({
      'content-type': 'text/csv; charset=utf-8; header=present',
      'content-disposition': `attachment; filename="opt-ins-${hubId.replace(/[^A-Za-z0-9_-]/g, '_')}-${stamp}.csv"`,
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    });
    return reply.send(Readable.from(lines()));
  });

  // ── Spend dashboard ────────────────────────────────────────────────────────────────────────
  const spendReports = async (hubId: string): Promise<SpendReport[]> =>
    Promise.all(PERIODS.map(async (p) => (await spendByWorkspace(deps.db, hubId, p, deps.clock, deps.spendCache)).value() as SpendReport));

  app.get<{ Params: { hubId: string }; Querystring: Query }>(`${appPath}/hubs/:hubId/spend`, async (request, reply) => {
    const ctx = await hubCtx(request, reply, request.params.hubId, true);
    if (!ctx) return reply;
    const period = (PERIODS as readonly string[]).includes(one(request.query.period) ?? '') ? (request.query.period as Period) : 'last_30_days';
    const reports = await spendReports(ctx.hub.hubId);
    const u = `${hubUrl(ctx.hub.hubId)}/spend`;
    const body = `<h1>Spend by workspace</h1>${spendView(reports, period, (p) => `${u}?period=${p}`)}`;
    return html(reply, 200, (n) => shell(shellOf(ctx, 'spend'), 'Spend', body, n));
  });

  // ── Signed embeds ──────────────────────────────────────────────────────────────────────────
  function embedPage(reply: FastifyReply, status: number, title: string, body: string) {
    const n = newNonce();
    return reply.code(status).headers(embedHeaders(n)).send(document_(title, `<main>${body}<p class="muted"><small>Powered by hubops</small></p></main>`, n));
  }
  function embedRefusal(reply: FastifyReply, reason: string) {
    return embedPage(reply, 401, 'Not authorised', `<div class="card"><h1>This view cannot be shown</h1><p class="error" role="alert" data-embed-error>${h(reason)}</p>
<p class="muted">The site that embeds it must sign a fresh token with an active embed key of the hub.</p></div>`);
  }
  const embed = (view: EmbedView) => async (request: FastifyRequest<{ Querystring: Query }>, reply: FastifyReply) => {
    const send = (status: number, title: string, body: string) => embedPage(reply, status, title, body);
    const verdict = await verifyEmbedToken(one(request.query.token) ?? '', view, deps.clock.now(), (kid) => findEmbedKey(deps.db, kid));
    if (!verdict.ok) return embedRefusal(reply, verdict.reason);
    const hubId = verdict.payload.hub;
    const name = (await hubName(deps.db, hubId)) ?? hubId;
    if (view === 'spend') {
      const reports = await spendReports(hubId);
      return send(200, `${name} · spend`, `<h1>${h(name)} · spend by workspace</h1>${spendView(reports, 'last_30_days', null)}`);
    }
    const summary = await optInSummary(deps.db, hubId, deps.clock);
    return send(200, `${name} · opt-ins`, `<h1>${h(name)} · playbook opt-ins</h1>${optInSummaryView(summary)}`);
  };
  app.get(`${base}/embed/spend`, embed('spend'));
  app.get(`${base}/embed/opt-in-summary`, embed('opt-in-summary'));
}
