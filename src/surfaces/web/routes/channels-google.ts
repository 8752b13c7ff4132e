// Manage Hub → Business Profile: the connected locations and their state; Connect Google Business
// Profile by OAuth (the state signed for this session and for Business Profile, so an ads state is
// refused here), then the chooser mapping each location to a workspace (the refresh token waits
// sealed server-side, never in the page). Rules live in src/domain/channels/; this file only asks.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { holdPendingToken, readPendingToken, takePendingToken } from '../../../domain/ad-sync/pending-connection.ts';
import {
  businessChannels,
  completeGoogleBusinessOAuth,
  connectBusinessLocations,
  listBusinessLocations,
  type GoogleBusinessSetup,
} from '../../../domain/channels/google-business.service.ts';
import { hubWorkspaces } from '../../../domain/tenancy/tenancy.service.ts';
import { DomainError } from '../../../platform/errors.ts';
import { appPage, FORM_EXPIRED, one, refuse, type Form, type HubCtx, type Query, type Web } from '../context.ts';
import { businessProfileView, chooseLocationsView } from '../views/channels-google.ts';
import { shell } from '../views/layout.ts';
import { signState, verifyState } from './ad-accounts.ts';

const PLATFORM = ['google_business'] as const;
const NOTICES: Record<string, string> = {
  connected:
    'Connected: the reviews of each location start syncing within 15 seconds, and posts for its workspace go to its Business Profile.',
  cancelled: 'Connecting was cancelled: nothing was added.',
  already: 'Those locations were already connected (the form was sent twice).',
};

const refusalText = (error: unknown): string | undefined =>
  error instanceof DomainError && (error.kind === 'invalid' || error.kind === 'rejected') ? error.message : undefined;

export function googleBusinessRoutes(app: FastifyInstance, { deps, paths, sessions }: Web): void {
  const pageUrl = (hubId: string) => `${paths.hub(hubId)}/settings/channels/google`;
  const callbackPath = `${paths.app}/channels/google/callback`;
  // The redirect URI the operator registers with the Google OAuth client (docs/channels.md).
  const redirectUri = `${new URL(deps.config.baseUrl).origin}${callbackPath}`;
  const business: GoogleBusinessSetup | undefined = deps.googleBusiness;
  const seeOther = (reply: FastifyReply, url: string) => reply.code(303).header('cache-control', 'no-store').redirect(url, 303);
  const expired = (reply: FastifyReply, hubId: string) =>
    refuse(
      reply,
      410,
      'Connection expired',
      'This choice of locations is no longer open (it is used, more than an hour old, or from another session). Connect again.',
      { href: pageUrl(hubId), text: 'Back to Business Profile' },
    );

  const page = async (reply: FastifyReply, status: number, ctx: HubCtx, notice?: string) => {
    const hubId = ctx.hub.hubId;
    const body = businessProfileView({
      hubUrl: paths.hub(hubId),
      now: deps.clock.now(),
      lines: await businessChannels(deps.db, hubId),
      setUp: business !== undefined,
      notice,
    });
    return appPage(reply, status, (n) => shell(sessions.shellOf(ctx, 'manage'), 'Manage Hub · Business Profile', body, n));
  };

  const chooser = async (reply: FastifyReply, status: number, ctx: HubCtx, pending: string, refreshToken: string, error?: string) => {
    const hubId = ctx.hub.hubId;
    let locations;
    try {
      locations = await listBusinessLocations(business!.deps, refreshToken);
    } catch (failure) {
      const words = refusalText(failure);
      if (words === undefined) throw failure;
      return page(reply, 502, ctx, `The locations could not be listed. ${words}`);
    }
    const body = chooseLocationsView({
      hubUrl: paths.hub(hubId),
      csrf: ctx.csrf,
      pending,
      locations,
      workspaces: await hubWorkspaces(deps.db, hubId, 500),
      error,
    });
    return appPage(reply, status, (n) => shell(sessions.shellOf(ctx, 'manage'), 'Choose locations', body, n));
  };

  const adminCtx = (request: FastifyRequest, reply: FastifyReply, hubId: string) => sessions.hubCtx(request, reply, hubId, true);

  app.get<{ Params: { hubId: string }; Querystring: Query }>(
    `${paths.app}/hubs/:hubId/settings/channels/google`,
    async (request, reply) => {
      const ctx = await adminCtx(request, reply, request.params.hubId);
      if (!ctx) return reply;
      return page(reply, 200, ctx, NOTICES[one(request.query.notice) ?? '']);
    },
  );

  // Step 1: to Google's consent screen (business.manage, offline), with a state only this session's callback accepts.
  app.get<{ Params: { hubId: string } }>(`${paths.app}/hubs/:hubId/settings/channels/google/connect`, async (request, reply) => {
    const ctx = await adminCtx(request, reply, request.params.hubId);
    if (!ctx) return reply;
    if (!business)
      return refuse(
        reply,
        404,
        'Not set up',
        'Google Business Profile is not set up on this server: the operator sets GOOGLE_OAUTH_CLIENT_ID and GOOGLE_OAUTH_CLIENT_SECRET.',
        {
          href: pageUrl(ctx.hub.hubId),
          text: 'Back to Business Profile',
        },
      );
    const state = signState(ctx.sessionId, 'google_business', ctx.hub.hubId, deps.clock.now());
    return seeOther(
      reply,
      business.deps.client.authorizeUrl({ accountsUrl: business.accountsUrl, clientId: business.clientId, redirectUri, state }),
    );
  });

  // Step 2: the code becomes a refresh token, held for the chooser (or refused, changing nothing).
  app.get<{ Querystring: Query }>(callbackPath, async (request, reply) => {
    const who = await sessions.signedIn(request, reply);
    if (!who) return reply;
    const now = deps.clock.now();
    const hubId = verifyState(who.sessionId, 'google_business', one(request.query.state) ?? '', now);
    if (!hubId)
      return refuse(
        reply,
        400,
        'Connection expired',
        'This answer from Google does not belong to a connection started in this session, or it is more than an hour old. Start again from Business Profile.',
        { href: paths.app, text: 'Back to the web admin' },
      );
    const ctx = await adminCtx(request, reply, hubId);
    if (!ctx || !business) return ctx ? expired(reply, hubId) : reply;
    const code = one(request.query.code);
    if (!code) return seeOther(reply, `${pageUrl(hubId)}?notice=cancelled`);
    let token;
    try {
      token = await completeGoogleBusinessOAuth(business.deps.client, { code, redirectUri });
    } catch (failure) {
      const words = refusalText(failure);
      if (words === undefined) throw failure;
      const noRefreshToken = failure instanceof DomainError && failure.code === 'no_refresh_token';
      return page(
        reply,
        failure instanceof DomainError && failure.kind === 'invalid' ? 400 : 502,
        ctx,
        noRefreshToken ? words : `Google did not give hubops a token. ${words}`,
      );
    }
    const pending = await holdPendingToken(deps.db, {
      sessionId: who.sessionId,
      hubId,
      now,
      token: { platform: 'google_business', kind: 'oauth', accessToken: token.refreshToken, tokenExpiresAt: null },
    });
    return seeOther(reply, `${pageUrl(hubId)}/choose?pending=${encodeURIComponent(pending)}`);
  });

  app.get<{ Params: { hubId: string }; Querystring: Query }>(
    `${paths.app}/hubs/:hubId/settings/channels/google/choose`,
    async (request, reply) => {
      const ctx = await adminCtx(request, reply, request.params.hubId);
      if (!ctx) return reply;
      const pending = one(request.query.pending) ?? '';
      const where = { sessionId: ctx.sessionId, hubId: ctx.hub.hubId, handle: pending, now: deps.clock.now() };
      const token = pending && business ? await readPendingToken(deps.db, where, PLATFORM) : undefined;
      if (!token) return expired(reply, ctx.hub.hubId);
      return chooser(reply, 200, ctx, pending, token.accessToken);
    },
  );

  app.post<{ Params: { hubId: string }; Body: Form }>(
    `${paths.app}/hubs/:hubId/settings/channels/google/choose`,
    async (request, reply) => {
      const ctx = await adminCtx(request, reply, request.params.hubId);
      if (!ctx) return reply;
      const hubId = ctx.hub.hubId;
      const body = (request.body ?? {}) as Record<string, unknown>;
      if (!sessions.csrfOk(ctx, body as Form))
        return refuse(reply, 400, 'Form expired', FORM_EXPIRED, { href: pageUrl(hubId), text: 'Back to Business Profile' });
      if (!business) return expired(reply, hubId);
      const list = (v: unknown) => ([] as unknown[]).concat(v ?? []).map((x) => (typeof x === 'string' ? x : ''));
      const locations = list(body.location);
      const workspaces = list(body.workspace);
      const pending = String(body.pending ?? '');
      const where = { sessionId: ctx.sessionId, hubId, handle: pending, now: deps.clock.now() };
      if (locations.length !== workspaces.length) return expired(reply, hubId);
      const mappings = locations.map((location, i) => ({ location, workspaceId: workspaces[i]! })).filter((m) => m.workspaceId !== '');
      if (mappings.length === 0) {
        const token = await readPendingToken(deps.db, where, PLATFORM);
        if (!token) return seeOther(reply, `${pageUrl(hubId)}?notice=already`);
        return chooser(reply, 400, ctx, pending, token.accessToken, 'Choose a workspace for at least one location.');
      }
      // Taken once: the second submit of a double click finds nothing and lands on the list.
      const taken = await takePendingToken(deps.db, where, PLATFORM);
      if (!taken) return seeOther(reply, `${pageUrl(hubId)}?notice=already`);
      try {
        await connectBusinessLocations(business.deps, hubId, { refreshToken: taken.token.accessToken, mappings });
      } catch (failure) {
        const words = refusalText(failure);
        if (words === undefined) throw failure;
        await taken.putBack();
        return chooser(reply, 400, ctx, pending, taken.token.accessToken, words);
      }
      return seeOther(reply, `${pageUrl(hubId)}?notice=connected`);
    },
  );
}
