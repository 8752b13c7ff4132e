// The spend dashboard: spend per workspace for each period, against the period before.
import type { FastifyInstance } from 'fastify';
import { PERIODS, type Period } from '../../../domain/periods.ts';
import { adAccountStatuses } from '../../../domain/spend/spend.service.ts';
import { appPage, one, spendReports, type Query, type Web } from '../context.ts';
import { shell } from '../views/layout.ts';
import { spendView } from '../views/reports.ts';

export function spendRoutes(app: FastifyInstance, { deps, paths, sessions }: Web): void {
  app.get<{ Params: { hubId: string }; Querystring: Query }>(`${paths.app}/hubs/:hubId/spend`, async (request, reply) => {
    const ctx = await sessions.hubCtx(request, reply, request.params.hubId, true);
    if (!ctx) return reply;
    // An unknown or repeated period shows the default one: the tiles link to the four valid ones.
    const period = (PERIODS as readonly string[]).includes(one(request.query.period) ?? '')
      ? (request.query.period as Period)
      : 'last_30_days';
    const [reports, accounts] = await Promise.all([spendReports(deps, ctx.hub.hubId), adAccountStatuses(deps.db, ctx.hub.hubId)]);
    const u = `${paths.hub(ctx.hub.hubId)}/spend`;
    const body = `<h1>Spend by workspace</h1>${spendView(reports, period, (p) => `${u}?period=${p}`, { now: deps.clock.now(), accounts })}`;
    return appPage(reply, 200, (n) => shell(sessions.shellOf(ctx, 'spend'), 'Spend', body, n));
  });
}
