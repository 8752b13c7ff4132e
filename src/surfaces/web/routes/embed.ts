// The signed embeds under {base}/embed: a hub's spend or opt-in summary, for a token signed with
// one of its embed keys.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { findEmbedKey } from '../../../domain/api-keys/api-key.repository.ts';
import { webOptInSummary } from '../../../domain/opt-ins/opt-in.service.ts';
import { adAccountStatuses } from '../../../domain/spend/spend.repository.ts';
import { hubName } from '../../../domain/tenancy/hub-directory.repository.ts';
import { embedPage, embedRefusal, one, spendReports, type Query, type Web } from '../context.ts';
import { verifyEmbedToken, type EmbedView } from '../embed-token.ts';
import { embedReportView } from '../views/embed.ts';
import { optInSummaryView, spendView } from '../views/reports.ts';

export function embedRoutes(app: FastifyInstance, { deps, paths }: Web): void {
  const embed = (view: EmbedView) => async (request: FastifyRequest<{ Querystring: Query }>, reply: FastifyReply) => {
    const verdict = await verifyEmbedToken(one(request.query.token) ?? '', view, deps.clock.now(), (kid) => findEmbedKey(deps.db, kid));
    if (!verdict.ok) return embedRefusal(reply, verdict.reason);
    const hubId = verdict.payload.hub;
    const name = (await hubName(deps.db, hubId)) ?? hubId;
    if (view === 'spend') {
      const [reports, accounts] = await Promise.all([spendReports(deps, hubId), adAccountStatuses(deps.db, hubId)]);
      const body = spendView(reports, 'last_30_days', null, { now: deps.clock.now(), accounts });
      return embedPage(reply, 200, `${name} · spend`, embedReportView(`${name} · spend by workspace`, body));
    }
    const summary = await webOptInSummary(deps.db, hubId, deps.clock, deps.caches.summaries);
    return embedPage(reply, 200, `${name} · opt-ins`, embedReportView(`${name} · playbook opt-ins`, optInSummaryView(summary)));
  };
  app.get(`${paths.base}/embed/spend`, embed('spend'));
  app.get(`${paths.base}/embed/opt-in-summary`, embed('opt-in-summary'));
}
