// The docs at {base_url}/docs, public: README.md (the index) and every docs/*.md rendered as HTML
// for browsers and served as the repository's markdown to everything else (curl, programs,
// `?format=md`); their images; an API reference page per OpenAPI document, Swagger UI served
// from our own origin (the server may run offline), able to send requests to this server only.
import { readdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config.ts';
import { readGuideFiles } from '../shared/guide-files.ts';
import { escapeHtml as h, sendPage } from '../shared/html.ts';
import { prefersHtml } from '../shared/negotiation.ts';
import { renderDoc } from './render.ts';
import { API_REFERENCE_JS, apiReferencePage, docPage, type ApiReference, type NavPage, type Site } from './views.ts';

export interface DocsDeps {
  config: Config;
  /** The OpenAPI documents this server serves, each with its reference page. */
  apis: ApiReference[];
}

const IMAGES = new URL('../../../docs/screenshots/', import.meta.url);
const IMAGE_TYPES: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.webp': 'image/webp',
  '.gif': 'image/gif',
};
/** Swagger UI's files we serve, read once from its package. */
const SWAGGER_FILES: Record<string, string> = {
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui.css': 'text/css; charset=utf-8',
};
// A versioned URL never changes: a year, immutable.
const IMMUTABLE = 'public, max-age=31536000, immutable';
const NOT_FOUND = 'There is no such page in the documentation.';

const protections = {
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
};

/** A rendered markdown page: its own styles, our images, nothing to run, nothing to send. */
function docHtmlHeaders(nonce: string): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': `default-src 'none'; style-src 'nonce-${nonce}'; img-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'`,
    ...protections,
    'cache-control': 'no-store',
    vary: 'Accept',
  };
}

/** An API reference: scripts and styles from our origin only, requests ("try it") to our origin only. */
function apiHtmlHeaders(nonce: string): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': `default-src 'none'; script-src 'self'; style-src 'self' 'nonce-${nonce}'; img-src 'self' data:; font-src 'self'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'`,
    ...protections,
    'cache-control': 'no-store',
  };
}

/** The repository's markdown as it is: nothing to run or style even if opened in a browser. */
const markdownHeaders = {
  'content-type': 'text/markdown; charset=utf-8',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; sandbox",
  ...protections,
  'cache-control': 'no-store',
  vary: 'Accept',
};

async function swaggerUi(): Promise<{ version: string; files: Map<string, Buffer> }> {
  const manifest = createRequire(import.meta.url).resolve('swagger-ui-dist/package.json');
  const version = (JSON.parse(await readFile(manifest, 'utf8')) as { version: string }).version;
  const files = new Map<string, Buffer>();
  for (const name of Object.keys(SWAGGER_FILES)) files.set(name, await readFile(path.join(path.dirname(manifest), name)));
  return { version, files };
}

export async function docsPlugin(app: FastifyInstance, { config, apis }: DocsDeps): Promise<void> {
  const base = new URL(config.baseUrl).pathname.replace(/\/$/, '');
  const guide = await readGuideFiles();
  const images = new Set(
    (await readdir(IMAGES).catch(() => [] as string[])).filter((n) => /^[\w.-]+$/.test(n) && IMAGE_TYPES[path.extname(n).toLowerCase()]),
  );
  const swagger = await swaggerUi();
  const assets = `${base}/docs/assets/swagger-ui-${swagger.version}`;

  // Where the HTML of each repository file lives: the README is the index.
  const htmlHref = (file: string) => (file === 'README.md' ? `${base}/docs` : `${base}/${file}`);
  // A title is markdown: its code spans' backticks are not part of the name.
  const pages: NavPage[] = guide.map((g) => ({
    href: htmlHref(g.file),
    title: g.file === 'README.md' ? 'Overview' : g.title.replaceAll('`', ''),
    file: g.file,
  }));
  const site: Site = { base, pages, apis: apis.map((a) => ({ ...a, openapi: `${base}${a.openapi}` })) };
  const served = new Set(guide.map((g) => g.file));
  const locate = (repositoryPath: string) => {
    if (served.has(repositoryPath)) return htmlHref(repositoryPath);
    const image = /^docs\/screenshots\/([^/]+)$/.exec(repositoryPath)?.[1];
    return image && images.has(image) ? `${base}/${repositoryPath}` : undefined;
  };
  // Rendered once: the pages never change while the server runs.
  const rendered = new Map(
    guide.map((g) => {
      const { html, sections } = renderDoc(g.text, { file: g.file, baseUrl: config.baseUrl, locate });
      const title = pages.find((p) => p.file === g.file)!;
      return [g.file, { href: title.href, title: title.title, file: g.file, html, sections, text: g.text }];
    }),
  );
  const byPath = new Map([...rendered.values()].map((r) => [`${base}/${r.file}`, r]));

  /** `?format=md` or `?format=html` decide; otherwise the Accept header. */
  const wantsHtml = (request: FastifyRequest) => {
    const format = (request.query as { format?: unknown } | undefined)?.format;
    if (format === 'md' || format === 'markdown') return false;
    if (format === 'html') return true;
    return prefersHtml(request.headers.accept);
  };

  const notFound = (request: FastifyRequest, reply: FastifyReply) => {
    if (prefersHtml(request.headers.accept))
      return sendPage(reply, 404, docHtmlHeaders, (nonce) =>
        docPage(
          site,
          {
            href: '',
            title: 'Not found',
            file: '',
            html: `<h1>Page not found</h1><p>${h(NOT_FOUND)}</p><p><a href="${h(`${base}/docs`)}">All documentation</a></p>`,
            sections: [],
          },
          nonce,
        ),
      );
    return reply
      .code(404)
      .headers({ 'content-type': 'application/json; charset=utf-8', ...protections, 'cache-control': 'no-store', vary: 'Accept' })
      .send(JSON.stringify({ error: 'not_found', message: NOT_FOUND }));
  };

  app.get(`${base}/docs`, async (request, reply) => {
    if (wantsHtml(request)) return sendPage(reply, 200, docHtmlHeaders, (nonce) => docPage(site, rendered.get('README.md')!, nonce));
    return reply
      .headers({ 'content-type': 'application/json; charset=utf-8', ...protections, 'cache-control': 'no-store', vary: 'Accept' })
      .send(JSON.stringify({ pages: guide.map((g) => ({ title: g.title, url: new URL(`${base}/${g.file}`, config.baseUrl).href })) }));
  });

  // Only an exact path of the list answers: a name is looked up, never joined onto a directory.
  const serveDoc = async (request: FastifyRequest, reply: FastifyReply) => {
    const doc = byPath.get(request.url.split('?')[0]!);
    if (!doc) return notFound(request, reply);
    if (wantsHtml(request)) return sendPage(reply, 200, docHtmlHeaders, (nonce) => docPage(site, doc, nonce));
    return reply.headers(markdownHeaders).send(doc.text);
  };
  app.get(`${base}/README.md`, serveDoc);
  app.get(`${base}/docs/:page`, serveDoc);

  app.get(`${base}/docs/screenshots/:image`, async (request, reply) => {
    const name = request.url.split('?')[0]!.slice(`${base}/docs/screenshots/`.length);
    if (!images.has(name)) return notFound(request, reply);
    const body = await readFile(new URL(name, IMAGES));
    return reply
      .headers({
        'content-type': IMAGE_TYPES[path.extname(name).toLowerCase()]!,
        'cache-control': 'public, max-age=3600',
        'x-content-type-options': 'nosniff',
      })
      .send(body);
  });

  for (const api of site.apis) {
    app.get(`${base}/docs/api/${api.name}`, async (_request, reply) =>
      sendPage(reply, 200, apiHtmlHeaders, (nonce) => apiReferencePage(site, api, assets, nonce)),
    );
  }

  app.get(`${base}/docs/assets/api-reference.js`, async (_request, reply) =>
    reply
      .headers({
        'content-type': 'text/javascript; charset=utf-8',
        'cache-control': 'public, max-age=300',
        'x-content-type-options': 'nosniff',
      })
      .send(API_REFERENCE_JS),
  );
  app.get(`${assets}/:file`, async (request, reply) => {
    const name = (request.params as { file: string }).file;
    const body = Object.hasOwn(SWAGGER_FILES, name) ? swagger.files.get(name) : undefined;
    if (!body) return notFound(request, reply);
    const etag = `"swagger-ui-${swagger.version}-${name}"`;
    reply.headers({ 'content-type': SWAGGER_FILES[name]!, 'cache-control': IMMUTABLE, 'x-content-type-options': 'nosniff', etag });
    if (request.headers['if-none-match'] === etag) return reply.code(304).send();
    return reply.send(body);
  });
}
