// The pages of /docs: a rendered markdown page (the README is the index) with every page listed
// beside it, and an API reference page per OpenAPI document. The web admin's palette, one inline
// stylesheet allowed by the response's nonce, no script on the markdown pages.
import { escapeHtml as h } from '../shared/html.ts';

export interface NavPage {
  /** Its HTML URL path, e.g. "/docs/cli.md" ("/docs" for the README). */
  href: string;
  title: string;
  /** The page's repository path, e.g. "docs/cli.md". */
  file: string;
}

export interface ApiReference {
  /** Its URL path segment under /docs/api/, e.g. "hub". */
  name: string;
  title: string;
  /** The OpenAPI document's URL path, e.g. "/v1/hub/openapi.json". */
  openapi: string;
  /** Whether its operations can be tried from the page (the Hub API's key is pasted into it). */
  tryIt: boolean;
  note: string;
}

export interface Site {
  base: string;
  pages: NavPage[];
  apis: ApiReference[];
}

const STYLE = `
:root{color-scheme:light dark;--bg:#f5f6f8;--card:#fff;--text:#1c1f24;--muted:#5b6270;--line:#e2e5ea;--accent:#2956d6;--code:#f0f2f5;--mono:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
@media (prefers-color-scheme:dark){:root{--bg:#14161a;--card:#1d2026;--text:#e8eaee;--muted:#a0a7b4;--line:#30343c;--accent:#6f93ff;--code:#262a31}}
*{box-sizing:border-box}html{scroll-padding-top:12px}body{margin:0;background:var(--bg);color:var(--text);font:16px/1.6 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;overflow-wrap:break-word}
a{color:var(--accent)}
header.top{display:flex;align-items:center;gap:8px 18px;flex-wrap:wrap;padding:10px 24px;background:var(--card);border-bottom:1px solid var(--line)}
header.top a{text-decoration:none;font-weight:600;color:var(--muted)}header.top a.brand{color:var(--accent);font-weight:700}header.top a.on{color:var(--text)}header.top .more{white-space:pre}
.layout{display:grid;grid-template-columns:250px minmax(0,1fr);gap:32px;max-width:1240px;margin:0 auto;padding:24px}
nav.side{position:sticky;top:16px;align-self:start;max-height:calc(100vh - 32px);overflow:auto;font-size:.92rem}
nav.side h2,details.menu summary{font-size:.75rem;text-transform:uppercase;letter-spacing:.06em;color:var(--muted);margin:0 0 6px}
nav.side ul,details.menu ul{list-style:none;margin:0 0 18px;padding:0}nav.side li a,details.menu li a{display:block;padding:4px 8px;border-radius:6px;text-decoration:none;color:var(--text)}
nav.side li a.on{background:var(--card);font-weight:600;border:1px solid var(--line)}nav.side ul.sections{margin:2px 0 6px 10px;border-left:2px solid var(--line)}nav.side ul.sections a{color:var(--muted);padding:2px 8px}
details.menu{display:none}
.muted{color:var(--muted)}
@media (max-width:900px){
header.top{padding:0 10px;gap:0 9px;font-size:.88rem;letter-spacing:-.1px}header.top .more{display:none}header.top a{display:inline-flex;align-items:center;min-height:44px}.layout{display:block;padding:12px}nav.side{display:none}
details.menu{display:block;background:var(--card);border:1px solid var(--line);border-radius:12px;padding:0 12px;margin:0 0 12px}
details.menu summary{cursor:pointer;font-size:.9rem;padding:12px 0;margin:0;min-height:44px}details.menu li a{padding:10px 8px;min-height:44px}
}
`;

/** The rendered markdown's look, inside its <article> only (the API reference has its own). */
const MARKDOWN_STYLE = `
article{min-width:0;background:var(--card);border:1px solid var(--line);border-radius:14px;padding:8px 40px 32px}
article h1{font-size:2rem;line-height:1.25;margin:24px 0 12px}article h2{font-size:1.45rem;margin:36px 0 10px;padding-bottom:4px;border-bottom:1px solid var(--line)}article h3{font-size:1.15rem;margin:28px 0 8px}article h4{margin:22px 0 6px}
article :is(h1,h2,h3,h4,h5,h6){position:relative}a.anchor{margin-left:.4em;font-weight:400;color:var(--muted);text-decoration:none;opacity:.35}:is(h1,h2,h3,h4,h5,h6):hover>a.anchor,a.anchor:focus{opacity:1}
article code{font-family:var(--mono);font-size:.88em;background:var(--code);padding:.1em .35em;border-radius:5px}
article pre{background:var(--code);border:1px solid var(--line);border-radius:10px;padding:12px 14px;overflow-x:auto;line-height:1.45;font-size:.88rem}article pre code{background:none;padding:0;font-size:inherit;white-space:pre}
article .table-scroll{overflow-x:auto;margin:0 0 16px;border:1px solid var(--line);border-radius:10px}
article table{border-collapse:collapse;min-width:100%;font-size:.92rem}article :is(th,td){padding:7px 10px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}article th{background:var(--code)}article tr:last-child td{border-bottom:0}article td code{white-space:nowrap}
article img{max-width:100%;height:auto;border:1px solid var(--line);border-radius:8px}article td img{width:100%;max-width:none;min-width:140px}a.image{display:inline-block}
article blockquote{margin:0 0 16px;padding:8px 16px;border-left:4px solid var(--accent);background:var(--code);border-radius:0 8px 8px 0}article blockquote p{margin:4px 0}
article hr{border:0;border-top:1px solid var(--line);margin:28px 0}.repo-file{font-style:italic}
@media (max-width:900px){article{padding:4px 16px 20px;border-radius:12px}article h1{font-size:1.6rem}article h2{font-size:1.25rem}
article table{width:max-content}article :is(th,td){max-width:17rem}article td img{min-width:150px}article table:has(img) :is(th,td):first-child{max-width:6.5rem}}
`;

/** The page list: every markdown page, then the API references. */
function navLists(site: Site, current: string, sections: { id: string; text: string }[]): string {
  const pages = site.pages
    .map((p) => {
      const on = p.href === current;
      const toc =
        on && sections.length > 0
          ? `<ul class="sections">${sections.map((s) => `<li><a href="#${h(s.id)}">${h(s.text)}</a></li>`).join('')}</ul>`
          : '';
      return `<li><a href="${h(p.href)}"${on ? ' class="on" aria-current="page"' : ''}>${h(p.title)}</a>${toc}</li>`;
    })
    .join('');
  const apis = site.apis
    .map((a) => {
      const href = `${site.base}/docs/api/${a.name}`;
      return `<li><a href="${h(href)}"${href === current ? ' class="on" aria-current="page"' : ''}>${h(a.title)}</a></li>`;
    })
    .join('');
  return `<h2>Guide</h2><ul>${pages}</ul><h2>API reference</h2><ul>${apis}</ul>`;
}

/** The top bar: the guide, each API reference (the one shown marked), the web admin. */
function header(site: Site, current: string | undefined): string {
  // The API links' " reference" is dropped on a phone, so the bar stays one line.
  const link = (href: string, text: string, more = '') =>
    `<a href="${h(href)}"${href === current ? ' class="on"' : ''}>${h(text)}${more ? `<span class="more">${h(more)}</span>` : ''}</a>`;
  return `<header class="top"><a class="brand" href="${h(site.base)}/">hubops</a>${link(`${site.base}/docs`, 'Docs')}${site.apis
    .map((a) => link(`${site.base}/docs/api/${a.name}`, a.title, ' reference'))
    .join('')}${link(`${site.base}/app`, 'Web admin')}</header>`;
}

function document_(site: Site, title: string, head: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${h(title)} · hubops docs</title><link rel="icon" type="image/svg+xml" href="${h(site.base)}/favicon.svg">${head}</head><body>${body}</body></html>`;
}

/** A markdown page rendered: the page list beside it (above it, folded, on a phone). */
export function docPage(
  site: Site,
  page: { href: string; title: string; file: string; html: string; sections: { id: string; text: string }[] },
  nonce: string,
): string {
  const raw = `${site.base}/${page.file}?format=md`;
  return document_(
    site,
    page.title,
    `<style nonce="${h(nonce)}">${STYLE}${MARKDOWN_STYLE}</style>`,
    `${header(site, `${site.base}/docs`)}<div class="layout"><nav class="side" aria-label="Documentation">${navLists(site, page.href, page.sections)}</nav>
<main><details class="menu"><summary>All pages</summary>${navLists(site, page.href, [])}</details>
<article>${page.html}<hr><p class="muted"><small>${h(page.file)} in the repository · <a href="${h(raw)}">markdown</a></small></p></article></main></div>`,
  );
}

/** An OpenAPI document rendered by Swagger UI (served from our origin), started by our own script. */
export function apiReferencePage(site: Site, api: ApiReference, assets: string, nonce: string): string {
  return document_(
    site,
    `${api.title} reference`,
    `<link rel="stylesheet" href="${h(assets)}/swagger-ui.css"><style nonce="${h(nonce)}">${STYLE}
.api-intro{max-width:1240px;margin:16px auto 0;padding:0 24px;font-size:.92rem}.api-intro p{margin:4px 0}#api{max-width:1240px;margin:0 auto;padding:0 8px}
#api .swagger-ui .info{margin:20px 0}
#api .swagger-ui .opblock .opblock-summary-path{word-break:break-all}#api[data-try-it=no] :is(.auth-wrapper,.authorization__btn){display:none}#api .swagger-ui table{min-width:0}
@media (prefers-color-scheme:dark){#api{background:#fff;color:#1c1f24;border-radius:12px}}
@media (max-width:900px){.api-intro{padding:0 12px}#api{padding:0}}
</style><script src="${h(assets)}/swagger-ui-bundle.js" defer></script><script src="${h(site.base)}/docs/assets/api-reference.js" defer></script>`,
    `${header(site, `${site.base}/docs/api/${api.name}`)}<div class="api-intro"><p class="muted">${h(api.note)} The OpenAPI document: <a href="${h(api.openapi)}">${h(api.openapi)}</a>.</p></div>
<div id="api" data-spec="${h(api.openapi)}" data-try-it="${api.tryIt ? 'yes' : 'no'}"><noscript><p>The reference needs JavaScript; the OpenAPI document is at <a href="${h(api.openapi)}">${h(api.openapi)}</a>.</p></noscript></div>`,
  );
}

/**
 * Our script starting Swagger UI (no inline script: CSP script-src 'self'). No validator badge
 * (it would send the document to an outside service), no URL bar, no stored authorization, and
 * the request hook refuses any address but our own origin, beside CSP connect-src 'self'. The
 * conditional headers' examples (If-Match, If-None-Match, …) are left out of "Try it out", which
 * would otherwise send them filled in, and a first try would answer 412 or 304.
 */
export const API_REFERENCE_JS = `'use strict';
const CONDITIONAL = /^if-/i;
window.addEventListener('DOMContentLoaded', async () => {
  const node = document.getElementById('api');
  if (!node || typeof SwaggerUIBundle !== 'function') return;
  const tryIt = node.dataset.tryIt === 'yes';
  const response = await fetch(node.dataset.spec, { headers: { accept: 'application/json' } });
  const spec = await response.json();
  for (const item of Object.values(spec.paths || {}))
    for (const operation of Object.values(item))
      for (const parameter of (operation && operation.parameters) || [])
        if (parameter.in === 'header' && CONDITIONAL.test(parameter.name)) {
          delete parameter.example;
          delete parameter.examples;
          if (parameter.schema) { delete parameter.schema.example; delete parameter.schema.examples; delete parameter.schema.default; }
        }
  SwaggerUIBundle({
    spec,
    domNode: node,
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    validatorUrl: null,
    persistAuthorization: false,
    withCredentials: false,
    supportedSubmitMethods: tryIt ? ['get'] : [],
    tryItOutEnabled: false,
    displayRequestDuration: true,
    defaultModelsExpandDepth: 0,
    requestInterceptor: (request) => {
      if (new URL(request.url, location.href).origin !== location.origin) throw new Error('hubops docs send requests to this server only');
      return request;
    },
  });
});
`;
