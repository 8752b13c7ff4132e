// The spend dashboard: spend per workspace for each period, against the period before.
import type { FastifyInstance } from 'fastify';
import { PERIODS, type Period } from '../../../domain/periods.ts';
import { spendByWorkspace } from '../../../domain/spend/spend.service.ts';
import { appPage, one, type Query, type Web, type WebDeps } from '../context.ts';
import { shell } from '../views/layout.ts';
import { spendView, type SpendReport } from '../views/reports.ts';

/** The hub's spend report for every period (the embed shows the same). */
export const spendReports = async (deps: WebDeps, hubId: string): Promise<SpendReport[]> =>
  Promise.all(PERIODS.map(async (p) => (await spendByWorkspace(deps.db, hubId, p, deps.clock, deps.spendCache)).value() as SpendReport));

export function spendRoutes(app: FastifyInstance, { deps, paths, sessions }: Web): void {
  app.get<{ Params: { hubId: string }; Querystring: Query }>(`${paths.app}/hubs/:hubId/spend`, async (request, reply) => {
    const ctx = await sessions.hubCtx(request, reply, request.params.hubId, true);
    if (!ctx) return reply;
    const period = (PERIODS as readonly string[]).includes(one(request.query.period) ?? '') ? (request.query.period as Period) : 'last_30_days';
    const reports = await spendReports(deps, ctx.hub.hubId);
    const u = `${paths.hub(ctx.hub.hubId)}/spend`;
    const body = `<h1>Spend by workspace</h1>${spendView(reports, period, (p) => `${u}?period=${p}`)}`;
    return appPage(reply, 200, (n) => shell(sessions.shellOf(ctx, 'spend'), 'Spend', body, n));
  });
}
