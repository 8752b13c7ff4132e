// Profile menu → Connected apps: the OAuth grants of the signed-in user (and, for a hub admin,
// those of other users in the hubs they administer), each with a Revoke button.
import type { FastifyInstance } from 'fastify';
import { connectedApps, revokeConnectedApp, type GrantViewer } from '../../../domain/oauth/grants.service.ts';
import { DomainError } from '../../../platform/errors.ts';
import { appPage, FORM_EXPIRED, one, refuse, type Form, type Query, type Web } from '../context.ts';
import type { HubCtx } from '../context.ts';
import { connectedAppsView, revokeConnectedAppView } from '../views/connected-apps.ts';
import { shell } from '../views/layout.ts';

const viewerOf = (ctx: HubCtx): GrantViewer => ({
  userId: ctx.user.id,
  adminHubIds: ctx.user.memberships.filter((m) => m.role === 'hub_admin').map((m) => m.hubId),
});

export function connectedAppRoutes(app: FastifyInstance, { deps, paths, sessions }: Web): void {
  const pageUrl = `${paths.app}/connected-apps`;
  const back = { href: pageUrl, text: 'Back to Connected apps' };

  app.get<{ Querystring: Query }>(pageUrl, async (request, reply) => {
    const ctx = await sessions.userCtx(request, reply);
    if (!ctx) return reply;
    const apps = await connectedApps(deps.db, viewerOf(ctx));
    const body = connectedAppsView({
      pageUrl,
      csrf: ctx.csrf,
      apps,
      adminHubs: ctx.user.memberships.filter((m) => m.role === 'hub_admin').map((m) => m.hubName),
      now: deps.clock.now(),
      revoked: one(request.query.revoked) === '1',
    });
    // Like Manage Hub, a page of the profile menu: no tab of the main navigation is lit.
    return appPage(reply, 200, (n) => shell(sessions.shellOf(ctx, 'manage'), 'Connected apps', body, n));
  });

  // Revoke asks first, on a page of its own (as a key's revocation does): a mistaken tap on a phone
  // must not cut off an assistant someone relies on.
  app.get<{ Params: { ref: string } }>(`${pageUrl}/:ref/revoke`, async (request, reply) => {
    const ctx = await sessions.userCtx(request, reply);
    if (!ctx) return reply;
    const apps = await connectedApps(deps.db, viewerOf(ctx));
    const own = apps.own.find((a) => a.ref === request.params.ref);
    const found = own ?? apps.others.find((a) => a.ref === request.params.ref);
    if (!found) return refuse(reply, 404, 'No such connected app', 'There is no such connected app among those you manage.', back);
    const body = revokeConnectedAppView({ pageUrl, csrf: ctx.csrf, app: found, own: own !== undefined });
    return appPage(reply, 200, (n) => shell(sessions.shellOf(ctx, 'manage'), 'Revoke connected app', body, n));
  });

  app.post<{ Params: { ref: string }; Body: Form }>(`${pageUrl}/:ref/revoke`, async (request, reply) => {
    const ctx = await sessions.userCtx(request, reply);
    if (!ctx) return reply;
    if (!sessions.csrfOk(ctx, request.body ?? {})) return refuse(reply, 400, 'Form expired', FORM_EXPIRED, back);
    try {
      await revokeConnectedApp(deps.db, viewerOf(ctx), request.params.ref, deps.revocations);
    } catch (error) {
      // Someone else's grant looks exactly like one that never existed; a database error stays the 503 page.
      if (error instanceof DomainError && error.kind === 'not_found')
        return refuse(reply, 404, 'No such connected app', 'There is no such connected app among those you manage.', back);
      throw error;
    }
    return reply.code(303).header('cache-control', 'no-store').redirect(`${pageUrl}?revoked=1`, 303);
  });
}
