// The web admin under {base_url}/app (sign-in, hub switcher, profile menu, Manage Hub → API and Ad accounts tabs,
// playbook opt-ins report with a streamed CSV download, spend dashboard) and the signed embeds
// under {base_url}/embed. Server-rendered; see docs/web-admin.md.
import formbody from '@fastify/formbody';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config.ts';
import { isDatabaseUnavailable } from '../../db/database.ts';
import { DomainError } from '../../platform/errors.ts';
import { DATABASE_RETRY_AFTER_S } from '../../policy.ts';
import { fromFrameworkError, refusalOf } from '../shared/errors.ts';
import { APP_JS } from './assets.ts';
import { embedPage, embedRefusal, refuse, webPaths, type Link, type Web, type WebDeps } from './context.ts';
import { adAccountRoutes } from './routes/ad-accounts.ts';
import { channelRoutes, type ChannelConnectSource } from './routes/channels.ts';
import { channelsMetaRoutes } from './routes/channels-meta.ts';
import { googleBusinessRoutes } from './routes/channels-google.ts';
import { connectedAppRoutes } from './routes/connected-apps.ts';
import { embedRoutes } from './routes/embed.ts';
import { frontDoorRoutes } from './routes/front-door.ts';
import { homeRoutes } from './routes/home.ts';
import { keyRoutes } from './routes/keys.ts';
import { optInRoutes } from './routes/opt-ins.ts';
import { spendRoutes } from './routes/spend.ts';
import { sessionRoutes, webSessions } from './session.ts';
import { EMBED_VIEWS_HINT, embedMessageView } from './views/embed.ts';

/**
 * The web admin's ({base}/app) and the embeds' ({base}/embed) answers to what no route of theirs
 * handled: a page with the headers of the pages around it (an embed's stays frameable). Each
 * returns undefined for any other path, which the APIs answer in JSON.
 */
export function webErrorPages(config: Config) {
  const paths = webPaths(config);
  const home = { href: paths.app, text: 'Go to the web admin' };
  const areaOf = (request: FastifyRequest): 'app' | 'embed' | undefined => {
    const path = request.url.split('?')[0]!;
    const under = (prefix: string) => path === prefix || path.startsWith(`${prefix}/`);
    return under(paths.app) ? 'app' : under(`${paths.base}/embed`) ? 'embed' : undefined;
  };
  return {
    /** A URL no route has: 404, or 405 with Allow when the path exists under other methods. */
    notFound(request: FastifyRequest, reply: FastifyReply, allow: string[]): FastifyReply | undefined {
      const area = areaOf(request);
      if (!area) return undefined;
      if (allow.length > 0) reply.header('allow', allow.join(', '));
      if (area === 'embed')
        return embedPage(
          reply,
          allow.length > 0 ? 405 : 404,
          'Not found',
          embedMessageView('No such view', 'There is no embedded view at this address.', EMBED_VIEWS_HINT),
        );
      return allow.length > 0
        ? refuse(reply, 405, 'Not allowed', `This page does not answer ${request.method} requests.`, home)
        : refuse(
            reply,
            404,
            'Page not found',
            'There is no page at this address. Check the link, or start again from the web admin.',
            home,
          );
    },
    /** What Fastify refused before routing (a malformed URL, an overlong path segment), in our words. */
    refused(request: FastifyRequest, reply: FastifyReply, status: number, message: string): FastifyReply | undefined {
      const area = areaOf(request);
      if (area === 'embed')
        return embedPage(reply, status, 'Bad request', embedMessageView('This view cannot be shown', message, EMBED_VIEWS_HINT));
      return area === 'app' ? refuse(reply, status, 'Bad request', message, home) : undefined;
    },
  };
}

export async function webPlugin(app: FastifyInstance, deps: WebDeps): Promise<void> {
  const paths = webPaths(deps.config);
  const web: Web = { deps, paths, sessions: webSessions(deps, paths) };

  await app.register(formbody);

  /** Where a refused hub page leads back to: the hub's home. */
  const backLink = (request: FastifyRequest): Link | undefined => {
    const hubId = (request.params as { hubId?: unknown } | undefined)?.hubId;
    return typeof hubId === 'string' ? { href: paths.hub(hubId), text: 'Back to the hub' } : undefined;
  };

  // Every failure of a route ends here: the database out of reach is the 503 page whatever the
  // route was doing; a refusal (the domain's, the door's, Fastify's in our words) is its 4xx page.
  // The refusals a route expects (an unknown key, a bad form field) are answered by the route in
  // its own words; a domain refusal that reaches this handler gets the page for its kind and is
  // logged. On an embed URL only a refusal of the request itself (the door's input rule,
  // Fastify's: what carries the token) means a malformed token; a domain refusal there happens
  // after the token was verified, so it is a failure on our side (500, logged as an error).
  app.setErrorHandler((error: Error, request, reply) => {
    const onEmbed = request.url.startsWith(`${paths.base}/embed/`);
    // A failure page in the frame of the site that embeds the view, not one the frame refuses.
    const failed = (status: number, title: string, message: string) =>
      onEmbed ? embedPage(reply, status, title, embedMessageView(title, message)) : refuse(reply, status, title, message);
    if (isDatabaseUnavailable(error)) {
      request.log.warn({ err: error }, 'database unavailable');
      reply.header('retry-after', String(DATABASE_RETRY_AFTER_S));
      return failed(503, 'Temporarily unavailable', 'hubops cannot reach its database right now. Try again in a few seconds.');
    }
    const fromDomain = error instanceof DomainError;
    const refusal =
      onEmbed && fromDomain ? undefined : (refusalOf(error) ?? fromFrameworkError(error, request.routeOptions.bodyLimit ?? 0));
    if (refusal && refusal.status < 500) {
      if (onEmbed) return embedRefusal(reply, 'The embed token is malformed.');
      if (fromDomain) request.log.info({ err: error }, 'domain refusal answered by the error handler');
      return refuse(reply, refusal.status, refusal.status === 404 ? 'Not found' : 'Bad request', refusal.message, backLink(request));
    }
    request.log.error({ err: error }, 'web request failed');
    return failed(500, 'Something went wrong', `Something went wrong on our side (request ${request.id}).`);
  });

  app.get(`${paths.app}/assets/app.js`, async (_request, reply) =>
    reply
      .headers({
        'content-type': 'text/javascript; charset=utf-8',
        'cache-control': 'public, max-age=300',
        'x-content-type-options': 'nosniff',
      })
      .send(APP_JS),
  );

  await frontDoorRoutes(app, web);
  sessionRoutes(app, deps, paths);
  homeRoutes(app, web);
  keyRoutes(app, web);
  adAccountRoutes(app, web);
  channelsMetaRoutes(app, web);
  googleBusinessRoutes(app, web);
  optInRoutes(app, web);
  spendRoutes(app, web);
  connectedAppRoutes(app, web);
  // Manage Hub → Channels; each network's connection flow appends its Connect action here.
  const channelConnectSources: ChannelConnectSource[] = [
    ({ hubUrl, deps: d }) =>
      d.metaOAuth && d.metaPages
        ? {
            id: 'connect-meta',
            label: 'Connect Facebook Pages / Instagram',
            href: `${hubUrl}/settings/channels/meta`,
            note: 'Posts go to the Pages and Instagram accounts you choose; their insights feed the organic analytics.',
          }
        : undefined,
    ({ hubUrl }) => ({
      id: 'connect-google-business',
      label: 'Connect Google Business Profile locations',
      href: `${hubUrl}/settings/channels/google`,
      note: 'Posts go to the Business Profile of each location you choose; its Google reviews feed the review summaries.',
    }),
  ];
  channelRoutes(app, web, channelConnectSources);
  embedRoutes(app, web);
}
