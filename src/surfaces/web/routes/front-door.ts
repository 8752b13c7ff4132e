// The front door: {base}/ says what this server is and links every way in (a page for browsers,
// JSON for API clients); the favicon. Public: no session, no key. The docs under {base}/docs are
// the docs surface's (src/surfaces/docs).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { prefersHtml } from '../../shared/negotiation.ts';
import { sendPage } from '../../shared/html.ts';
import { FAVICON_ICO, FAVICON_SVG } from '../assets.ts';
import type { Web } from '../context.ts';
import { frontDoor, frontDoorPage } from '../views/front-door.ts';
import { appHeaders } from '../views/layout.ts';

const ICON_CACHE = 'public, max-age=2592000';

export async function frontDoorRoutes(app: FastifyInstance, { deps, paths }: Web): Promise<void> {
  const door = frontDoor(deps.config.baseUrl);

  /** The same answer for people and programs: a page, or its links as JSON. */
  const negotiated = (request: FastifyRequest, reply: FastifyReply, status: number, page: (nonce: string) => string, json: unknown) => {
    reply.header('vary', 'Accept');
    if (prefersHtml(request.headers.accept)) return sendPage(reply, status, appHeaders, page);
    return reply
      .code(status)
      .headers({ 'content-type': 'application/json; charset=utf-8', 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' })
      .send(JSON.stringify(json));
  };

  app.get(`${paths.base}/`, async (request, reply) => negotiated(request, reply, 200, (n) => frontDoorPage(door, n), door));

  app.get(`${paths.base}/favicon.ico`, async (_request, reply) =>
    reply.headers({ 'content-type': 'image/x-icon', 'cache-control': ICON_CACHE, 'x-content-type-options': 'nosniff' }).send(FAVICON_ICO),
  );
  app.get(`${paths.base}/favicon.svg`, async (_request, reply) =>
    reply
      .headers({
        'content-type': 'image/svg+xml',
        'cache-control': ICON_CACHE,
        'x-content-type-options': 'nosniff',
        'content-security-policy': "default-src 'none'",
      })
      .send(FAVICON_SVG),
  );
}
