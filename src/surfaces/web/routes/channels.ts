// Manage Hub → Channels (hub admins): the hub's workspace channels with their state
// (src/domain/channels/channel-status.ts) and the networks' Connect actions. The Meta and Business
// Profile connection flows add their action by passing a ChannelConnectSource to channelRoutes
// (src/surfaces/web/plugin.ts); this page only renders what they give.
import type { FastifyInstance } from 'fastify';
import { channelStatuses } from '../../../domain/channels/channel-status.ts';
import { appPage, type HubCtx, type Web, type WebDeps } from '../context.ts';
import { channelsView, type ConnectAction } from '../views/channels.ts';
import { shell } from '../views/layout.ts';

/** A network's Connect action for a hub's Channels page, or undefined when this server cannot connect it. */
export type ChannelConnectSource = (page: { hubId: string; hubUrl: string; ctx: HubCtx; deps: WebDeps }) => ConnectAction | undefined;

export function channelRoutes(app: FastifyInstance, { deps, paths, sessions }: Web, connectSources: ChannelConnectSource[] = []): void {
  app.get<{ Params: { hubId: string } }>(`${paths.app}/hubs/:hubId/settings/channels`, async (request, reply) => {
    const ctx = await sessions.hubCtx(request, reply, request.params.hubId, true);
    if (!ctx) return reply;
    const hubId = ctx.hub.hubId;
    const hubUrl = paths.hub(hubId);
    const now = deps.clock.now();
    const { channels, total } = await channelStatuses(deps.db, hubId, now);
    const connectActions = connectSources.flatMap((source) => source({ hubId, hubUrl, ctx, deps }) ?? []);
    const body = channelsView({ hubUrl, now, channels, total, connectActions });
    return appPage(reply, 200, (n) => shell(sessions.shellOf(ctx, 'manage'), 'Manage Hub · Channels', body, n));
  });
}
