// Manage Hub → Facebook & Instagram: Connect Facebook Pages / Instagram by Facebook Login (the Ad
// accounts flow's Meta OAuth and signed state, with its own purpose, so a state made for ads is
// refused here and the other way round), then the chooser mapping each Page and linked Instagram
// account to a workspace. The user token waits server-side for the choice, sealed and bound to this
// session and hub (the pending store of the ad accounts and Business Profile choosers); the page
// carries an opaque handle. Rules live in src/domain/organic/meta-connect.service.ts.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { completeMetaOAuth } from '../../../domain/ad-sync/ad-account.service.ts';
import { holdPendingToken, readPendingToken, takePendingToken } from '../../../domain/ad-sync/pending-connection.ts';
import {
  choosablePages,
  mapMetaChannels,
  META_PAGES_PENDING,
  metaChannels,
  type MetaConnectDeps,
  type MetaSignIn,
} from '../../../domain/organic/meta-connect.service.ts';
import { hubWorkspaces } from '../../../domain/tenancy/tenancy.service.ts';
import { DomainError } from '../../../platform/errors.ts';
import { appPage, FORM_EXPIRED, one, refuse, type Form, type HubCtx, type Query, type Web } from '../context.ts';
import { chooseMetaChannelsView, META_CHANNEL_PATH, metaChannelsView } from '../views/channels-meta.ts';
import { shell } from '../views/layout.ts';
import { signState, verifyState } from './ad-accounts.ts';

/** What "Connect Facebook Pages / Instagram" asks for (issue 23; Pages API and Instagram Platform permissions). */
export const META_PAGES_SCOPES = [
  'pages_show_list',
  'pages_manage_posts',
  'pages_read_engagement',
  'instagram_basic',
  'instagram_content_publish',
  'instagram_manage_insights',
];

const NOTICES: Record<string, string> = {
  connected: 'Channels connected: posts to their workspaces now go to Facebook and Instagram.',
  cancelled: 'Connecting was cancelled: nothing was added.',
  already: 'Those channels were already connected (the form was sent twice).',
};

const PENDING = [META_PAGES_PENDING] as const;
const signInOf = (token: { accessToken: string; tokenExpiresAt: Date | null }): MetaSignIn => ({
  userToken: token.accessToken,
  expiresAt: token.tokenExpiresAt,
});

export function channelsMetaRoutes(app: FastifyInstance, { deps, paths, sessions }: Web): void {
  const pageUrl = (hubId: string) => `${paths.hub(hubId)}${META_CHANNEL_PATH}`;
  const callbackPath = `${paths.app}/channels/meta/callback`;
  // The redirect URI the operator registers in the Meta app, beside the ad accounts' one (docs/channels.md).
  const redirectUri = `${new URL(deps.config.baseUrl).origin}${callbackPath}`;
  const meta =
    deps.config.metaAppId && deps.config.metaAppSecret && deps.metaOAuth && deps.metaPages
      ? { appId: deps.config.metaAppId, appSecret: deps.config.metaAppSecret, dialogUrl: deps.config.metaDialogUrl, client: deps.metaOAuth }
      : undefined;
  const seeOther = (reply: FastifyReply, url: string) => reply.code(303).header('cache-control', 'no-store').redirect(url, 303);
  const back = (hubId: string) => ({ href: pageUrl(hubId), text: 'Back to Facebook & Instagram' });
  const expired = (reply: FastifyReply, hubId: string) =>
    refuse(
      reply,
      410,
      'Connection expired',
      'This choice of Pages is no longer open (it is used, more than an hour old, or from another session). Connect again.',
      back(hubId),
    );

  const adminCtx = async (
    request: FastifyRequest,
    reply: FastifyReply,
    hubId: string,
  ): Promise<{ ctx: HubCtx; connect: MetaConnectDeps } | undefined> => {
    const ctx = await sessions.hubCtx(request, reply, hubId, true);
    if (!ctx) return undefined;
    if (!deps.adSync || !deps.metaPages) {
      await refuse(reply, 503, 'Not available', 'This server does not connect Facebook Pages.', {
        href: paths.hub(hubId),
        text: 'Back to the hub',
      });
      return undefined;
    }
    // The server's sealer (the ad sync's): tokens sealed under HUBOPS_SECRETS_KEY.
    return { ctx, connect: { db: deps.db, clock: deps.clock, sealer: deps.adSync.sealer, pages: deps.metaPages } };
  };

  const listPage = async (reply: FastifyReply, ctx: HubCtx, notice?: string) => {
    const body = metaChannelsView({
      hubUrl: paths.hub(ctx.hub.hubId),
      channels: await metaChannels(deps.db, ctx.hub.hubId),
      canConnect: meta !== undefined,
      ...(notice ? { notice } : {}),
    });
    return appPage(reply, 200, (n) => shell(sessions.shellOf(ctx, 'manage'), 'Manage Hub · Facebook & Instagram', body, n));
  };

  const chooser = async (
    reply: FastifyReply,
    status: number,
    ctx: HubCtx,
    connect: MetaConnectDeps,
    pending: string,
    signIn: MetaSignIn,
    error?: string,
  ) => {
    const hubId = ctx.hub.hubId;
    let pages;
    try {
      pages = await choosablePages(connect, signIn);
    } catch (failure) {
      if (failure instanceof DomainError) return listPage(reply.code(502), ctx, failure.message);
      throw failure;
    }
    const body = chooseMetaChannelsView({
      hubUrl: paths.hub(hubId),
      csrf: ctx.csrf,
      pending,
      pages,
      workspaces: await hubWorkspaces(deps.db, hubId, 500),
      ...(error ? { error } : {}),
    });
    return appPage(reply, status, (n) => shell(sessions.shellOf(ctx, 'manage'), 'Choose Pages and Instagram accounts', body, n));
  };

  app.get<{ Params: { hubId: string }; Querystring: Query }>(`${paths.app}/hubs/:hubId${META_CHANNEL_PATH}`, async (request, reply) => {
    const found = await adminCtx(request, reply, request.params.hubId);
    if (!found) return reply;
    return listPage(reply, found.ctx, NOTICES[one(request.query.notice) ?? '']);
  });

  // Step 1: to Facebook Login, with a state only this session's Pages callback accepts.
  app.get<{ Params: { hubId: string } }>(`${paths.app}/hubs/:hubId${META_CHANNEL_PATH}/connect`, async (request, reply) => {
    const found = await adminCtx(request, reply, request.params.hubId);
    if (!found) return reply;
    if (!meta) return refuse(reply, 404, 'Not set up', 'Signing in with Facebook is not set up on this server.', back(found.ctx.hub.hubId));
    const state = signState(found.ctx.sessionId, 'meta_pages', found.ctx.hub.hubId, deps.clock.now());
    return seeOther(
      reply,
      meta.client.authorizeUrl({ dialogUrl: meta.dialogUrl, appId: meta.appId, redirectUri, state, scopes: META_PAGES_SCOPES }),
    );
  });

  // Step 2: the code becomes a long-lived user token, held for this session's chooser (no connection yet).
  app.get<{ Querystring: Query }>(callbackPath, async (request, reply) => {
    const who = await sessions.signedIn(request, reply);
    if (!who) return reply;
    const now = deps.clock.now();
    const hubId = verifyState(who.sessionId, 'meta_pages', one(request.query.state) ?? '', now);
    if (!hubId)
      return refuse(
        reply,
        400,
        'Connection expired',
        'This answer from Facebook does not belong to a Pages connection started in this session, or it is more than an hour old. Start again from Facebook & Instagram.',
        { href: paths.app, text: 'Back to the web admin' },
      );
    const found = await adminCtx(request, reply, hubId);
    if (!found) return reply;
    if (!meta) return refuse(reply, 404, 'Not set up', 'Signing in with Facebook is not set up on this server.', back(hubId));
    const code = one(request.query.code);
    if (!code) return seeOther(reply, `${pageUrl(hubId)}?notice=cancelled`);
    let token;
    try {
      token = await completeMetaOAuth(meta.client, { code, redirectUri, appId: meta.appId, appSecret: meta.appSecret });
    } catch (failure) {
      if (failure instanceof DomainError)
        return listPage(reply.code(502), found.ctx, `Meta did not give hubops a token. ${failure.message}`);
      throw failure;
    }
    const pending = await holdPendingToken(deps.db, {
      sessionId: who.sessionId,
      hubId,
      now,
      token: { platform: META_PAGES_PENDING, kind: 'oauth', accessToken: token.accessToken, tokenExpiresAt: token.expiresAt },
    });
    return seeOther(reply, `${pageUrl(hubId)}/choose?pending=${encodeURIComponent(pending)}`);
  });

  app.get<{ Params: { hubId: string }; Querystring: Query }>(
    `${paths.app}/hubs/:hubId${META_CHANNEL_PATH}/choose`,
    async (request, reply) => {
      const found = await adminCtx(request, reply, request.params.hubId);
      if (!found) return reply;
      const { ctx } = found;
      const pending = one(request.query.pending) ?? '';
      const where = { sessionId: ctx.sessionId, hubId: ctx.hub.hubId, handle: pending, now: deps.clock.now() };
      const token = pending ? await readPendingToken(deps.db, where, PENDING) : undefined;
      if (!token) return expired(reply, ctx.hub.hubId);
      return chooser(reply, 200, ctx, found.connect, pending, signInOf(token));
    },
  );

  app.post<{ Params: { hubId: string }; Body: Form }>(`${paths.app}/hubs/:hubId${META_CHANNEL_PATH}/choose`, async (request, reply) => {
    const found = await adminCtx(request, reply, request.params.hubId);
    if (!found) return reply;
    const { ctx, connect } = found;
    const body = (request.body ?? {}) as Record<string, unknown>;
    const hubId = ctx.hub.hubId;
    if (!sessions.csrfOk(ctx, request.body ?? {})) return refuse(reply, 400, 'Form expired', FORM_EXPIRED, back(hubId));
    const pending = typeof body.pending === 'string' ? body.pending : '';
    const where = { sessionId: ctx.sessionId, hubId, handle: pending, now: deps.clock.now() };
    const choices: { platform: 'facebook' | 'instagram'; externalId: string; workspaceId: string }[] = [];
    for (const [key, value] of Object.entries(body)) {
      const m = /^(facebook|instagram):(\d{1,32})$/.exec(key);
      if (m && typeof value === 'string' && value !== '')
        choices.push({ platform: m[1] as 'facebook' | 'instagram', externalId: m[2]!, workspaceId: value });
    }
    if (choices.length === 0) {
      const token = pending ? await readPendingToken(deps.db, where, PENDING) : undefined;
      if (!token) return seeOther(reply, `${pageUrl(hubId)}?notice=already`);
      return chooser(reply, 400, ctx, connect, pending, signInOf(token), 'Choose a workspace for at least one Page or Instagram account.');
    }
    // Taken once: the second submit of a double click finds nothing and lands on the list.
    const taken = pending ? await takePendingToken(deps.db, where, PENDING) : undefined;
    if (!taken) return seeOther(reply, `${pageUrl(hubId)}?notice=already`);
    const signIn = signInOf(taken.token);
    try {
      await mapMetaChannels(connect, hubId, signIn, choices);
    } catch (failure) {
      if (!(failure instanceof DomainError)) throw failure;
      // Refused (nothing stored): the sign-in is held again, so the admin can choose again.
      await taken.putBack();
      return chooser(reply, 400, ctx, connect, pending, signIn, failure.message);
    }
    return seeOther(reply, `${pageUrl(hubId)}?notice=connected`);
  });
}
