// The web admin's entry: /app goes to the user's first hub, the switcher to another, and each hub
// has its home page.
import type { FastifyInstance } from 'fastify';
import { appPage, one, refuse, type Query, type Web } from '../context.ts';
import { hubHomeView } from '../views/home.ts';
import { shell } from '../views/layout.ts';

export function homeRoutes(app: FastifyInstance, { paths, sessions }: Web): void {
  app.get(paths.app, async (request, reply) => {
    const who = await sessions.signedIn(request, reply);
    if (!who) return reply;
    const first = who.user.memberships.find((m) => m.role === 'hub_admin') ?? who.user.memberships[0];
    if (!first) return refuse(reply, 403, 'No hub yet', 'Your account is not a member of any hub. Ask a hub administrator to add you.');
    return reply.code(303).redirect(paths.hub(first.hubId), 303);
  });

  app.get<{ Querystring: Query }>(`${paths.app}/switch`, async (request, reply) => {
    const who = await sessions.signedIn(request, reply);
    if (!who) return reply;
    const target = who.user.memberships.find((m) => m.hubId === one(request.query.hub));
    return reply.code(303).redirect(target ? paths.hub(target.hubId) : paths.app, 303);
  });

  app.get<{ Params: { hubId: string } }>(`${paths.app}/hubs/:hubId`, async (request, reply) => {
    const ctx = await sessions.hubCtx(request, reply, request.params.hubId, false);
    if (!ctx) return reply;
    return appPage(reply, 200, (n) =>
      shell(sessions.shellOf(ctx, 'home'), ctx.hub.hubName, hubHomeView(ctx.hub, paths.hub(ctx.hub.hubId), paths.app), n),
    );
  });
}
