// Manage Hub → Facebook & Instagram: Connect Facebook Pages / Instagram by Facebook Login (the Ad
// accounts flow's Meta OAuth and signed state, with its own purpose, so a state made for ads is
// refused here and the other way round), then the chooser mapping each Page and linked Instagram
// account to a workspace. Rules live in src/domain/organic/meta-connect.service.ts.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { completeMetaOAuth } from '../../../domain/ad-sync/ad-account.service.ts';
import {
  choosablePages,
  createMetaConnection,
  mapMetaChannels,
  metaChannels,
  type MetaConnectDeps,
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
};

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
    connection: string,
    error?: string,
  ) => {
    const hubId = ctx.hub.hubId;
    let pages;
    try {
      pages = await choosablePages(connect, hubId, connection);
    } catch (failure) {
      if (failure instanceof DomainError && failure.kind === 'not_found')
        return refuse(reply, 404, 'Connection expired', failure.message, back(hubId));
      if (failure instanceof DomainError) return listPage(reply.code(502), ctx, failure.message);
      throw failure;
    }
    const body = chooseMetaChannelsView({
      hubUrl: paths.hub(hubId),
      csrf: ctx.csrf,
      connection,
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

  // Step 2: the code becomes a long-lived user token, kept sealed in a new connection; then the chooser.
  app.get<{ Querystring: Query }>(callbackPath, async (request, reply) => {
    const who = await sessions.signedIn(request, reply);
    if (!who) return reply;
    const hubId = verifyState(who.sessionId, 'meta_pages', one(request.query.state) ?? '', deps.clock.now());
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
    const connection = await createMetaConnection(found.connect, hubId, token);
    return seeOther(reply, `${pageUrl(hubId)}/choose?connection=${encodeURIComponent(connection)}`);
  });

  app.get<{ Params: { hubId: string }; Querystring: Query }>(
    `${paths.app}/hubs/:hubId${META_CHANNEL_PATH}/choose`,
    async (request, reply) => {
      const found = await adminCtx(request, reply, request.params.hubId);
      if (!found) return reply;
      return chooser(reply, 200, found.ctx, found.connect, one(request.query.connection) ?? '');
    },
  );

  app.post<{ Params: { hubId: string }; Body: Form }>(`${paths.app}/hubs/:hubId${META_CHANNEL_PATH}/choose`, async (request, reply) => {
    const found = await adminCtx(request, reply, request.params.hubId);
    if (!found) return reply;
    const { ctx, connect } = found;
    const body = (request.body ?? {}) as Record<string, unknown>;
    if (!sessions.csrfOk(ctx, request.body ?? {})) return refuse(reply, 400, 'Form expired', FORM_EXPIRED, back(ctx.hub.hubId));
    const connection = typeof body.connection === 'string' ? body.connection : '';
    const choices: { platform: 'facebook' | 'instagram'; externalId: string; workspaceId: string }[] = [];
    for (const [key, value] of Object.entries(body)) {
      const m = /^(facebook|instagram):(\d{1,32})$/.exec(key);
      if (m && typeof value === 'string' && value !== '')
        choices.push({ platform: m[1] as 'facebook' | 'instagram', externalId: m[2]!, workspaceId: value });
    }
    try {
      await mapMetaChannels(connect, ctx.hub.hubId, connection, choices);
    } catch (failure) {
      if (failure instanceof DomainError && failure.kind === 'not_found')
        return refuse(reply, 404, 'Connection expired', failure.message, back(ctx.hub.hubId));
      if (failure instanceof DomainError) return chooser(reply, 400, ctx, connect, connection, failure.message);
      throw failure;
    }
    return seeOther(reply, `${pageUrl(ctx.hub.hubId)}?notice=connected`);
  });
}
