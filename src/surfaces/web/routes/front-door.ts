// The front door: {base}/ says what this server is and links every way in (a page for browsers,
// JSON for API clients); {base}/docs serves the repository's README and docs/*.md read-only; the
// favicon. Public: no session, no key.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { readGuideFiles } from '../../shared/guide-files.ts';
import { sendPage } from '../../shared/html.ts';
import { FAVICON_ICO, FAVICON_SVG } from '../assets.ts';
import type { Web } from '../context.ts';
import { docsIndexPage, frontDoor, frontDoorPage, type DocPage } from '../views/front-door.ts';
import { appHeaders, docHeaders, messagePage } from '../views/layout.ts';

const ICON_CACHE = 'public, max-age=2592000';

/**
 * Whether the Accept header ranks HTML above JSON. Browsers name text/html first; curl sends
 * `*∕*` and API clients application/json, which get JSON. A tie goes to HTML.
 */
function prefersHtml(accept: string | undefined): boolean {
  let html = 0;
  let json = 0;
  for (const part of (accept ?? '').split(',')) {
    const [type = '', ...params] = part
      .trim()
      .toLowerCase()
      .split(';')
      .map((p) => p.trim());
    const q = params.find((p) => p.startsWith('q='));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    if (!(weight >= 0 && weight <= 1)) continue;
    if (type === 'text/html' || type === 'application/xhtml+xml') html = Math.max(html, weight);
    else if (type === 'application/json' || type === 'application/*' || type === '*/*') json = Math.max(json, weight);
  }
  return html > 0 && html >= json;
}

interface Doc extends DocPage {
  text: string;
}

/** README.md and every docs/*.md, read once: the only files /docs can ever answer with. */
async function loadDocs(base: string): Promise<Doc[]> {
  return (await readGuideFiles()).map(({ file, title, text }) => ({ path: `${base}/${file}`, title, text }));
}

export async function frontDoorRoutes(app: FastifyInstance, { deps, paths }: Web): Promise<void> {
  const door = frontDoor(deps.config.baseUrl);
  const docs = await loadDocs(paths.base);
  const byPath = new Map(docs.map((d) => [d.path, d]));

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

  app.get(`${paths.base}/docs`, async (request, reply) =>
    negotiated(request, reply, 200, (n) => docsIndexPage(docs, n), {
      pages: docs.map((d) => ({ title: d.title, url: new URL(d.path, deps.config.baseUrl).href })),
    }),
  );

  // Only an exact path of the list answers: a name is looked up, never joined onto a directory.
  const serveDoc = async (request: FastifyRequest, reply: FastifyReply) => {
    const doc = byPath.get(request.url.split('?')[0]!);
    if (doc) return reply.headers(docHeaders()).send(doc.text);
    const message = 'There is no such page in the documentation.';
    return negotiated(
      request,
      reply,
      404,
      (n) => messagePage('Not found', message, n, { href: `${paths.base}/docs`, text: 'All documentation' }),
      { error: 'not_found', message },
    );
  };
  app.get(`${paths.base}/README.md`, serveDoc);
  app.get(`${paths.base}/docs/:page`, serveDoc);

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
