// Manage Hub → Ad accounts: the list with each account's state; Connect Meta by OAuth (the state
// bound to the session and hub) or by a pasted system-user token, Connect Google Ads by OAuth, and
// Connect ChatGPT Ads by a pasted API key; the chooser of accounts (the token waits sealed
// server-side, never in the page), Sync now, Disconnect, the default workspace, and the assignment
// of unattributed spend to a workspace. Rules live in src/domain/ad-sync/; this file only asks.
import { createHmac, randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  completeGoogleOAuth,
  completeMetaOAuth,
  connectAdAccounts,
  connectApiKeyAccount,
  disconnectAdAccount,
  listAdAccounts,
  listPlatformAccounts,
  listUnattributed,
  mapToWorkspace,
  requestSync,
  setDefaultWorkspace,
  PLATFORM_NAMES,
  TOKEN_MAX_LENGTH,
  type AdAccountView,
  type AdSyncDeps,
} from '../../../domain/ad-sync/ad-account.service.ts';
import { holdPendingToken, readPendingToken, takePendingToken, type PendingToken } from '../../../domain/ad-sync/pending-connection.ts';
import { hubWorkspaces } from '../../../domain/tenancy/tenancy.service.ts';
import { META_SCOPES } from '../../../integrations/meta/client.ts';
import { sameSecret } from '../../../platform/constant-time.ts';
import { DomainError } from '../../../platform/errors.ts';
import { FORM_TOKEN_TTL_MS } from '../../../policy.ts';
import { appPage, FORM_EXPIRED, one, refuse, type Form, type HubCtx, type Query, type Web } from '../context.ts';
import { adAccountsView, chooseAccountsView, disconnectView, lineKey, type AdAccountsPageState } from '../views/ad-accounts.ts';
import { shell } from '../views/layout.ts';

/** Above this many workspaces the assign field is a text field for the id, not a list. */
const WORKSPACE_SELECT_MAX = 500;
/** A pasted token: printable ASCII without spaces (Meta's tokens are [A-Za-z0-9]). */
const TOKEN_SHAPE = /^[\x21-\x7e]+$/;

const NOTICES: Record<string, string> = {
  sync: 'Sync requested: it starts within 15 seconds. This page shows its progress when you reload it.',
  disconnected: 'The account was disconnected. Its past figures stay in the reports; it no longer syncs or counts toward freshness.',
  assigned: 'Assigned. Its spend, past and future, now counts for that workspace.',
  default: "Default workspace saved. The account's spend that no assignment or [ws:…] token claims, past and future, counts there now.",
  cancelled: 'Connecting was cancelled: nothing was added.',
  'api-key': 'ChatGPT Ads account connected: its first sync starts within 15 seconds. This page shows its progress when you reload it.',
  already: 'Those accounts were already added (the form was sent twice).',
};

/** A refusal of the domain to show in the page (the platform's refusals arrive as these too); anything else is thrown on. */
const refusalText = (error: unknown): string | undefined =>
  error instanceof DomainError && (error.kind === 'invalid' || error.kind === 'conflict' || error.kind === 'rejected')
    ? error.message
    : undefined;

/** Whose OAuth callback a state is for: a state signed for one is refused at the others ('meta_pages': Connect Facebook Pages / Instagram; 'google_business': Connect Google Business Profile). */
export type OAuthPlatform = 'meta' | 'google' | 'meta_pages' | 'google_business';
const stateMac = (sessionId: string, platform: OAuthPlatform, payload: string) =>
  createHmac('sha256', sessionId).update(`hubops-ad-oauth:${platform}:${payload}`).digest('base64url');

/**
 * The OAuth `state`: the hub, when, a nonce, and a MAC under the session id and the platform (so
 * only this session's callback of that platform accepts it).
 */
export function signState(sessionId: string, platform: OAuthPlatform, hubId: string, now: Date): string {
  const payload = Buffer.from(JSON.stringify({ h: hubId, t: now.getTime(), n: randomBytes(12).toString('base64url') })).toString(
    'base64url',
  );
  return `${payload}.${stateMac(sessionId, platform, payload)}`;
}

/** The hub of a state this session signed for the platform within FORM_TOKEN_TTL_MS, or undefined. */
export function verifyState(sessionId: string, platform: OAuthPlatform, state: string, now: Date): string | undefined {
  const [payload, mac, extra] = state.split('.');
  if (!payload || !mac || extra !== undefined) return undefined;
  if (!sameSecret(stateMac(sessionId, platform, payload), mac)) return undefined;
  try {
    const { h, t } = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { h?: unknown; t?: unknown };
    if (typeof h !== 'string' || typeof t !== 'number' || now.getTime() - t > FORM_TOKEN_TTL_MS || t > now.getTime() + 60_000)
      return undefined;
    return h;
  } catch {
    return undefined;
  }
}

/** A connection's name when the admin gives none. */
const defaultLabel = (token: PendingToken): string =>
  token.platform === 'meta'
    ? token.kind === 'oauth'
      ? 'Meta (signed in with Facebook)'
      : 'Meta system user'
    : `${PLATFORM_NAMES[token.platform]} (signed in with Google)`;

export function adAccountRoutes(app: FastifyInstance, { deps, paths, sessions }: Web): void {
  const pageUrl = (hubId: string) => `${paths.hub(hubId)}/settings/ad-accounts`;
  const back = (hubId: string) => ({ href: pageUrl(hubId), text: 'Back to Ad accounts' });
  const callbackPath = `${paths.app}/ad-accounts/meta/callback`;
  const redirectUri = `${new URL(deps.config.baseUrl).origin}${callbackPath}`;
  const meta =
    deps.config.metaAppId && deps.config.metaAppSecret && deps.metaOAuth
      ? { appId: deps.config.metaAppId, appSecret: deps.config.metaAppSecret, dialogUrl: deps.config.metaDialogUrl, client: deps.metaOAuth }
      : undefined;
  // The redirect URI the operator registers with the Google OAuth client (docs/ad-accounts.md).
  const googleCallbackPath = `${paths.app}/ad-accounts/google/callback`;
  const googleRedirectUri = `${new URL(deps.config.baseUrl).origin}${googleCallbackPath}`;
  const google =
    deps.config.googleClientId && deps.googleOAuth
      ? { clientId: deps.config.googleClientId, accountsUrl: deps.config.googleAccountsUrl, client: deps.googleOAuth }
      : undefined;
  const connectionExpired = (reply: FastifyReply, platformName: string) =>
    refuse(
      reply,
      400,
      'Connection expired',
      `This answer from ${platformName} does not belong to a connection started in this session, or it is more than an hour old. Start again from Ad accounts.`,
      { href: paths.app, text: 'Back to the web admin' },
    );
  const notSetUp = (reply: FastifyReply, hubId: string, text: string) => refuse(reply, 404, 'Not set up', text, back(hubId));
  const formExpired = (reply: FastifyReply, hubId: string) => refuse(reply, 400, 'Form expired', FORM_EXPIRED, back(hubId));
  const seeOther = (reply: FastifyReply, url: string) => reply.code(303).header('cache-control', 'no-store').redirect(url, 303);

  /** Signed in as the hub's admin, on a server that syncs spend; otherwise answered here. */
  const adminCtx = async (
    request: FastifyRequest,
    reply: FastifyReply,
    hubId: string,
  ): Promise<{ ctx: HubCtx; adSync: AdSyncDeps } | undefined> => {
    const ctx = await sessions.hubCtx(request, reply, hubId, true);
    if (!ctx) return undefined;
    if (!deps.adSync) {
      await refuse(reply, 503, 'Ad accounts are not available', 'This server does not sync ad spend.', {
        href: paths.hub(hubId),
        text: 'Back to the hub',
      });
      return undefined;
    }
    return { ctx, adSync: deps.adSync };
  };
  /** A posted form of this session (its CSRF token), or the refusal sent. */
  const postedCtx = async (request: FastifyRequest<{ Params: { hubId: string }; Body: Form }>, reply: FastifyReply) => {
    const found = await adminCtx(request, reply, request.params.hubId);
    if (!found) return undefined;
    if (!sessions.csrfOk(found.ctx, request.body ?? {})) {
      await formExpired(reply, found.ctx.hub.hubId);
      return undefined;
    }
    return found;
  };

  const page = async (reply: FastifyReply, status: number, ctx: HubCtx, adSync: AdSyncDeps, state: AdAccountsPageState = {}) => {
    const hubId = ctx.hub.hubId;
    const [accounts, unattributed, workspaces] = await Promise.all([
      listAdAccounts(adSync, hubId),
      listUnattributed(adSync, hubId, {}),
      hubWorkspaces(deps.db, hubId, WORKSPACE_SELECT_MAX + 1),
    ]);
    const body = adAccountsView(
      {
        hubUrl: paths.hub(hubId),
        csrf: ctx.csrf,
        now: deps.clock.now(),
        accounts,
        unattributed,
        workspaces: workspaces.length <= WORKSPACE_SELECT_MAX ? workspaces : undefined,
        metaOAuth: meta !== undefined,
        googleOAuth: google !== undefined,
      },
      state,
    );
    return appPage(reply, status, (n) => shell(sessions.shellOf(ctx, 'manage'), 'Manage Hub · Ad accounts', body, n));
  };

  const connectedIds = async (adSync: AdSyncDeps, hubId: string, platform: PendingToken['platform']) =>
    new Set(
      (await listAdAccounts(adSync, hubId)).filter((a) => a.platform === platform && a.status !== 'disconnected').map((a) => a.externalId),
    );

  const chooser = async (
    reply: FastifyReply,
    status: number,
    ctx: HubCtx,
    adSync: AdSyncDeps,
    pending: string,
    token: PendingToken,
    error?: string,
  ) => {
    const hubId = ctx.hub.hubId;
    let accounts;
    try {
      accounts = await listPlatformAccounts(adSync, token.platform, token.accessToken);
    } catch (failure) {
      const words = refusalText(failure);
      if (words === undefined) throw failure;
      return page(reply, 502, ctx, adSync, { notice: `The accounts could not be listed. ${words}` });
    }
    const body = chooseAccountsView({
      hubUrl: paths.hub(hubId),
      csrf: ctx.csrf,
      pending,
      platform: token.platform,
      accounts,
      connected: await connectedIds(adSync, hubId, token.platform),
      error,
    });
    return appPage(reply, status, (n) => shell(sessions.shellOf(ctx, 'manage'), 'Choose ad accounts', body, n));
  };

  app.get<{ Params: { hubId: string }; Querystring: Query }>(`${paths.app}/hubs/:hubId/settings/ad-accounts`, async (request, reply) => {
    const found = await adminCtx(request, reply, request.params.hubId);
    if (!found) return reply;
    const notice = NOTICES[one(request.query.notice) ?? ''];
    return page(reply, 200, found.ctx, found.adSync, { notice });
  });

  // Connect Meta, step 1: to Meta's dialog with a state only this session's callback accepts. A GET
  // (a link): starting it changes nothing here, and the callback checks the state.
  app.get<{ Params: { hubId: string } }>(`${paths.app}/hubs/:hubId/settings/ad-accounts/meta/connect`, async (request, reply) => {
    const found = await adminCtx(request, reply, request.params.hubId);
    if (!found) return reply;
    if (!meta)
      return notSetUp(
        reply,
        found.ctx.hub.hubId,
        'Signing in with Facebook is not set up on this server: paste a system-user token instead.',
      );
    const state = signState(found.ctx.sessionId, 'meta', found.ctx.hub.hubId, deps.clock.now());
    return seeOther(
      reply,
      meta.client.authorizeUrl({ dialogUrl: meta.dialogUrl, appId: meta.appId, redirectUri, state, scopes: META_SCOPES }),
    );
  });

  // Connect Meta, step 2: Meta sends the admin back with a code; exchange it for a long-lived token.
  app.get<{ Querystring: Query }>(callbackPath, async (request, reply) => {
    const who = await sessions.signedIn(request, reply);
    if (!who) return reply;
    const now = deps.clock.now();
    const hubId = verifyState(who.sessionId, 'meta', one(request.query.state) ?? '', now);
    if (!hubId) return connectionExpired(reply, 'Facebook');
    const found = await adminCtx(request, reply, hubId);
    if (!found || !meta) return found ? notSetUp(reply, hubId, 'Signing in with Facebook is not set up on this server.') : reply;
    const code = one(request.query.code);
    // The admin said no in the dialog (error=access_denied), or Meta refused: nothing to exchange.
    if (!code) return seeOther(reply, `${pageUrl(hubId)}?notice=cancelled`);
    let token;
    try {
      token = await completeMetaOAuth(meta.client, { code, redirectUri, appId: meta.appId, appSecret: meta.appSecret });
    } catch (failure) {
      const words = refusalText(failure);
      if (words === undefined) throw failure;
      return page(reply, 502, found.ctx, found.adSync, { notice: `Meta did not give hubops a token. ${words}` });
    }
    const pending = await holdPendingToken(deps.db, {
      sessionId: who.sessionId,
      hubId,
      now,
      token: { platform: 'meta', kind: 'oauth', accessToken: token.accessToken, tokenExpiresAt: token.expiresAt },
    });
    return seeOther(reply, `${pageUrl(hubId)}/choose?pending=${encodeURIComponent(pending)}`);
  });

  // Connect Google Ads, step 1: to Google's consent screen (offline access, so Google gives a
  // refresh token), with a state only this session's Google callback accepts.
  app.get<{ Params: { hubId: string } }>(`${paths.app}/hubs/:hubId/settings/ad-accounts/google/connect`, async (request, reply) => {
    const found = await adminCtx(request, reply, request.params.hubId);
    if (!found) return reply;
    if (!google)
      return notSetUp(
        reply,
        found.ctx.hub.hubId,
        'Google Ads is not set up on this server: the operator sets GOOGLE_OAUTH_CLIENT_ID and GOOGLE_OAUTH_CLIENT_SECRET.',
      );
    const state = signState(found.ctx.sessionId, 'google', found.ctx.hub.hubId, deps.clock.now());
    return seeOther(
      reply,
      google.client.authorizeUrl({ accountsUrl: google.accountsUrl, clientId: google.clientId, redirectUri: googleRedirectUri, state }),
    );
  });

  // Connect Google Ads, step 2: the code becomes a refresh token, held for the chooser.
  app.get<{ Querystring: Query }>(googleCallbackPath, async (request, reply) => {
    const who = await sessions.signedIn(request, reply);
    if (!who) return reply;
    const now = deps.clock.now();
    const hubId = verifyState(who.sessionId, 'google', one(request.query.state) ?? '', now);
    if (!hubId) return connectionExpired(reply, 'Google');
    const found = await adminCtx(request, reply, hubId);
    if (!found || !google) return found ? notSetUp(reply, hubId, 'Google Ads is not set up on this server.') : reply;
    const code = one(request.query.code);
    if (!code) return seeOther(reply, `${pageUrl(hubId)}?notice=cancelled`);
    let token;
    try {
      token = await completeGoogleOAuth(google.client, { code, redirectUri: googleRedirectUri });
    } catch (failure) {
      const words = refusalText(failure);
      if (words === undefined) throw failure;
      // A refused code (used twice, too old) is the request's fault; Google failing or holding back the refresh token is not.
      const status = failure instanceof DomainError && failure.kind === 'invalid' ? 400 : 502;
      const noRefreshToken = failure instanceof DomainError && failure.code === 'no_refresh_token';
      return page(reply, status, found.ctx, found.adSync, {
        notice: noRefreshToken ? words : `Google did not give hubops a token. ${words}`,
      });
    }
    const pending = await holdPendingToken(deps.db, {
      sessionId: who.sessionId,
      hubId,
      now,
      token: { platform: 'google_ads', kind: 'oauth', accessToken: token.refreshToken, tokenExpiresAt: null },
    });
    return seeOther(reply, `${pageUrl(hubId)}/choose?pending=${encodeURIComponent(pending)}`);
  });

  // Connect ChatGPT Ads by a pasted API key: a key reads one ad account, so it connects at once.
  app.post<{ Params: { hubId: string }; Body: Form }>(`${paths.app}/hubs/:hubId/settings/ad-accounts/api-key`, async (request, reply) => {
    const found = await postedCtx(request, reply);
    if (!found) return reply;
    const { ctx, adSync } = found;
    const key = String(request.body?.key ?? '').trim();
    const problem =
      key === ''
        ? 'Paste the API key first.'
        : key.length > TOKEN_MAX_LENGTH
          ? `That is longer than any API key (at most ${TOKEN_MAX_LENGTH} characters): check what was pasted.`
          : !TOKEN_SHAPE.test(key)
            ? 'An API key has no spaces or line breaks inside it: paste it again, exactly as OpenAI shows it.'
            : undefined;
    if (problem) return page(reply, 400, ctx, adSync, { apiKeyError: problem });
    try {
      await connectApiKeyAccount(adSync, ctx.hub.hubId, {
        platform: 'chatgpt_ads',
        apiKey: key,
        label: String(request.body?.label ?? ''),
      });
    } catch (failure) {
      const words = refusalText(failure);
      if (words === undefined) throw failure;
      return page(reply, 400, ctx, adSync, { apiKeyError: words });
    }
    return seeOther(reply, `${pageUrl(ctx.hub.hubId)}?notice=api-key`);
  });

  // Connect by a pasted system-user token: checked by listing what it can read, then the same chooser.
  app.post<{ Params: { hubId: string }; Body: Form }>(`${paths.app}/hubs/:hubId/settings/ad-accounts/token`, async (request, reply) => {
    const found = await postedCtx(request, reply);
    if (!found) return reply;
    const { ctx, adSync } = found;
    const token = String(request.body?.token ?? '').trim();
    const problem =
      token === ''
        ? 'Paste the token first.'
        : token.length > TOKEN_MAX_LENGTH
          ? `That is longer than any Meta token (at most ${TOKEN_MAX_LENGTH} characters): check what was pasted.`
          : !TOKEN_SHAPE.test(token)
            ? 'A token has no spaces or line breaks inside it: paste it again, exactly as Meta shows it.'
            : undefined;
    if (problem) return page(reply, 400, ctx, adSync, { tokenError: problem });
    try {
      await listPlatformAccounts(adSync, 'meta', token);
    } catch (failure) {
      const words = refusalText(failure);
      if (words === undefined) throw failure;
      return page(reply, 400, ctx, adSync, { tokenError: words });
    }
    const pending = await holdPendingToken(deps.db, {
      sessionId: ctx.sessionId,
      hubId: ctx.hub.hubId,
      now: deps.clock.now(),
      token: { platform: 'meta', kind: 'system_user', accessToken: token, tokenExpiresAt: null },
    });
    return seeOther(reply, `${pageUrl(ctx.hub.hubId)}/choose?pending=${encodeURIComponent(pending)}`);
  });

  app.get<{ Params: { hubId: string }; Querystring: Query }>(
    `${paths.app}/hubs/:hubId/settings/ad-accounts/choose`,
    async (request, reply) => {
      const found = await adminCtx(request, reply, request.params.hubId);
      if (!found) return reply;
      const pending = one(request.query.pending) ?? '';
      const token = pending
        ? await readPendingToken(deps.db, {
            sessionId: found.ctx.sessionId,
            hubId: found.ctx.hub.hubId,
            handle: pending,
            now: deps.clock.now(),
          })
        : undefined;
      if (!token)
        return refuse(
          reply,
          410,
          'Connection expired',
          'This choice of ad accounts is no longer open (it is used, more than an hour old, or from another session). Connect again.',
          back(found.ctx.hub.hubId),
        );
      return chooser(reply, 200, found.ctx, found.adSync, pending, token);
    },
  );

  app.post<{ Params: { hubId: string }; Body: Form }>(`${paths.app}/hubs/:hubId/settings/ad-accounts/choose`, async (request, reply) => {
    const found = await postedCtx(request, reply);
    if (!found) return reply;
    const { ctx, adSync } = found;
    const hubId = ctx.hub.hubId;
    const body = request.body ?? {};
    const pending = String(body.pending ?? '');
    const chosen = ([] as unknown[])
      .concat((body as Record<string, unknown>).account ?? [])
      .filter((v): v is string => typeof v === 'string');
    const label = String(body.label ?? '').trim();
    const where = { sessionId: ctx.sessionId, hubId, handle: pending, now: deps.clock.now() };
    if (chosen.length === 0) {
      const token = await readPendingToken(deps.db, where);
      if (!token) return seeOther(reply, `${pageUrl(hubId)}?notice=already`);
      return chooser(reply, 400, ctx, adSync, pending, token, 'Choose at least one ad account.');
    }
    // Taken once: the second submit of a double click finds nothing and lands on the list.
    const taken = await takePendingToken(deps.db, where);
    if (!taken) return seeOther(reply, `${pageUrl(hubId)}?notice=already`);
    try {
      await connectAdAccounts(adSync, hubId, {
        platform: taken.token.platform,
        kind: taken.token.kind,
        accessToken: taken.token.accessToken,
        tokenExpiresAt: taken.token.tokenExpiresAt,
        externalIds: chosen,
        label: label || defaultLabel(taken.token),
      });
    } catch (failure) {
      const words = refusalText(failure);
      if (words === undefined) throw failure;
      await taken.putBack();
      return chooser(reply, 400, ctx, adSync, pending, taken.token, words);
    }
    return seeOther(reply, `${pageUrl(hubId)}?notice=sync`);
  });

  const findAccount = async (adSync: AdSyncDeps, hubId: string, accountId: string): Promise<AdAccountView | undefined> =>
    (await listAdAccounts(adSync, hubId)).find((a) => a.id === accountId);
  const noSuchAccount = (reply: FastifyReply, hubId: string) =>
    refuse(reply, 404, 'No such ad account', 'This hub has no such ad account.', back(hubId));
  /** Runs a change to one account; a refusal of the domain is the page that says why. */
  const onAccount = async (reply: FastifyReply, hubId: string, work: () => Promise<void>, then: string) => {
    try {
      await work();
    } catch (failure) {
      if (failure instanceof DomainError && failure.kind === 'not_found') return noSuchAccount(reply, hubId);
      if (failure instanceof DomainError && (failure.kind === 'invalid' || failure.kind === 'conflict' || failure.kind === 'rejected'))
        return refuse(reply, 409, 'Not done', failure.message, back(hubId));
      throw failure;
    }
    return seeOther(reply, `${pageUrl(hubId)}?notice=${then}`);
  };

  app.post<{ Params: { hubId: string; accountId: string }; Body: Form }>(
    `${paths.app}/hubs/:hubId/settings/ad-accounts/:accountId/sync`,
    async (request, reply) => {
      const found = await postedCtx(request, reply);
      if (!found) return reply;
      return onAccount(reply, found.ctx.hub.hubId, () => requestSync(found.adSync, found.ctx.hub.hubId, request.params.accountId), 'sync');
    },
  );

  app.get<{ Params: { hubId: string; accountId: string } }>(
    `${paths.app}/hubs/:hubId/settings/ad-accounts/:accountId/disconnect`,
    async (request, reply) => {
      const found = await adminCtx(request, reply, request.params.hubId);
      if (!found) return reply;
      const account = await findAccount(found.adSync, found.ctx.hub.hubId, request.params.accountId);
      if (!account || account.status === 'disconnected') return noSuchAccount(reply, found.ctx.hub.hubId);
      const body = disconnectView({ hubUrl: paths.hub(found.ctx.hub.hubId), csrf: found.ctx.csrf, account });
      return appPage(reply, 200, (n) => shell(sessions.shellOf(found.ctx, 'manage'), 'Disconnect ad account', body, n));
    },
  );

  app.post<{ Params: { hubId: string; accountId: string }; Body: Form }>(
    `${paths.app}/hubs/:hubId/settings/ad-accounts/:accountId/disconnect`,
    async (request, reply) => {
      const found = await postedCtx(request, reply);
      if (!found) return reply;
      return onAccount(
        reply,
        found.ctx.hub.hubId,
        () => disconnectAdAccount(found.adSync, found.ctx.hub.hubId, request.params.accountId),
        'disconnected',
      );
    },
  );

  // The account's default workspace (empty: none); its past spend is re-attributed at once.
  app.post<{ Params: { hubId: string; accountId: string }; Body: Form }>(
    `${paths.app}/hubs/:hubId/settings/ad-accounts/:accountId/default-workspace`,
    async (request, reply) => {
      const found = await postedCtx(request, reply);
      if (!found) return reply;
      const raw = request.body?.workspace;
      const workspaceId = typeof raw === 'string' && raw.trim() !== '' ? raw.trim() : null;
      return onAccount(
        reply,
        found.ctx.hub.hubId,
        () => setDefaultWorkspace(found.adSync, found.ctx.hub.hubId, request.params.accountId, workspaceId),
        'default',
      );
    },
  );

  // One step: this campaign or ad set's spend, past and future, to a workspace. Idempotent (the
  // mapping is keyed by account, level and id), so a double submit assigns once.
  app.post<{ Params: { hubId: string }; Body: Form }>(`${paths.app}/hubs/:hubId/settings/ad-accounts/assign`, async (request, reply) => {
    const found = await postedCtx(request, reply);
    if (!found) return reply;
    const { ctx, adSync } = found;
    const hubId = ctx.hub.hubId;
    const body = request.body ?? {};
    const field = (name: string) => (typeof body[name] === 'string' ? body[name]!.trim() : '');
    const line = { adAccountId: field('ad_account'), campaignId: field('campaign'), adSetId: field('ad_set') };
    const level = field('level');
    const workspaceId = field('workspace');
    const problem =
      !line.adAccountId || !line.campaignId || !line.adSetId
        ? 'This form is incomplete: reload the page and try again.'
        : level !== 'ad_set' && level !== 'campaign'
          ? 'Choose whether to assign this ad set or the whole campaign.'
          : !workspaceId
            ? 'Choose the workspace this spend belongs to.'
            : undefined;
    const failed = (message: string) => page(reply, 400, ctx, adSync, { assignError: { key: lineKey(line), message } });
    if (problem || (level !== 'ad_set' && level !== 'campaign')) return failed(problem ?? '');
    try {
      await mapToWorkspace(adSync, hubId, {
        adAccountId: line.adAccountId,
        level,
        externalId: level === 'ad_set' ? line.adSetId : line.campaignId,
        workspaceId,
      });
    } catch (failure) {
      if (failure instanceof DomainError && (failure.kind === 'invalid' || failure.kind === 'not_found')) return failed(failure.message);
      throw failure;
    }
    return seeOther(reply, `${pageUrl(hubId)}?notice=assigned#unattributed`);
  });
}
