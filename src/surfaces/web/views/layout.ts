// Server-rendered pages of the web admin (/app) and the signed embeds (/embed). The look of the
// OAuth pages (same palette), one inline stylesheet allowed by a per-response nonce, one small
// script served from our own route (copy buttons, single-submit forms), nothing external.
import type { OptInStatus } from '../../../domain/opt-ins/opt-in.ts';
import type { Membership, SessionUser } from '../../../domain/web-sessions/web-session.service.ts';
import { escapeHtml as h } from '../../shared/html.ts';
import { FAVICON_SVG } from '../assets.ts';

// Utilities for every view (phone below 640 px, desktop above):
// - <table class="stack"> with <td data-label="Name">: below 640 px each row is a card and each
//   cell shows its label; a cell with class "actions-cell" spans the card without a label, one
//   with class "wide" spans it under its label (for long text).
// - <div class="scroll-x"> around a wide table: it scrolls sideways inside its card, never the page.
// - <code class="token"> (or any element with "token"): an id, key prefix or URL that must not wrap
//   mid-token; monospace, and it scrolls on its own when longer than its box.
// - .urls: label, value, copy button per row; below 640 px the label sits above value and button.
// - <dl class="pairs">: label and value side by side, stacked below 640 px; <a class="url">: a URL
//   in monospace that may break anywhere (for URLs shown in full).
// - <ul class="links">: links as touch-sized cards, a <small> under each title saying what it is.
// - .card scrolls sideways rather than spill: a safety net, not a layout (use stack or scroll-x).
// Below 640 px every button, .button, input, select, nav link, menu item and pager link is at
// least 44 px high (touch targets); the header wraps to brand and profile, nav, hub switcher.
const STYLE = `
:root{color-scheme:light dark;--bg:#f5f6f8;--card:#fff;--text:#1c1f24;--muted:#5b6270;--line:#e2e5ea;--accent:#2956d6;--accent-text:#fff;--danger:#b42318;--ok:#137333;--warn:#9a6700;--mono:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
@media (prefers-color-scheme:dark){:root{--bg:#14161a;--card:#1d2026;--text:#e8eaee;--muted:#a0a7b4;--line:#30343c;--accent:#6f93ff;--accent-text:#0b0d10;--danger:#ff8a80;--ok:#7ee2a8;--warn:#f2cc60}}
*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--text);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;overflow-wrap:break-word}
a{color:var(--accent)}header.top{position:relative;display:flex;align-items:center;gap:8px 16px;flex-wrap:wrap;padding:10px 24px;background:var(--card);border-bottom:1px solid var(--line)}
.brand{font-weight:700;letter-spacing:.2px;color:var(--accent);margin:0;text-decoration:none}nav.main{display:flex;flex-wrap:wrap;gap:4px 14px;flex:1}nav.main a{display:inline-flex;align-items:center;text-decoration:none;color:var(--muted);font-weight:600}nav.main a.on{color:var(--text)}
form.switch{display:flex;gap:6px;align-items:center;min-width:0}form.switch label{margin:0}form.switch select{width:auto;max-width:100%;min-width:0;padding:6px 8px}
details.profile{position:relative;margin-left:auto}details.profile summary{cursor:pointer;list-style:none;padding:6px 10px;border:1px solid var(--line);border-radius:8px;font-weight:600;white-space:nowrap}details.profile summary::-webkit-details-marker{display:none}
details.profile .menu{position:absolute;right:0;top:110%;min-width:220px;max-width:calc(100vw - 24px);background:var(--card);border:1px solid var(--line);border-radius:10px;padding:8px;box-shadow:0 8px 30px rgba(0,0,0,.12);z-index:5}
details.profile .menu a,details.profile .menu button{display:block;width:100%;text-align:left;padding:8px 10px;border:0;background:none;color:var(--text);font:inherit;border-radius:6px;text-decoration:none;cursor:pointer}
details.profile .menu a:hover,details.profile .menu button:hover{background:var(--bg)}details.profile .menu small{display:block;padding:4px 10px;overflow-wrap:anywhere}
main{max-width:1100px;margin:24px auto;padding:0 24px}main.narrow{max-width:420px;margin-top:10vh}main.wide{max-width:760px}
.card{background:var(--card);border:1px solid var(--line);border-radius:14px;padding:24px;margin:0 0 20px;overflow-x:auto}
h1{font-size:1.4rem;margin:0 0 12px}h2{font-size:1.1rem;margin:0 0 12px}p{margin:0 0 12px}.muted,small{color:var(--muted)}
label{display:block;font-weight:600;margin:12px 0 6px}input,select{width:100%;padding:9px 11px;border:1px solid var(--line);border-radius:8px;background:var(--bg);color:var(--text);font:inherit}
input:focus,select:focus{outline:2px solid var(--accent);outline-offset:1px}
button,.button{display:inline-block;padding:9px 14px;border-radius:8px;border:1px solid var(--line);font:inherit;font-weight:600;cursor:pointer;background:transparent;color:var(--text);text-decoration:none}
button.primary,.button.primary{background:var(--accent);border-color:var(--accent);color:var(--accent-text)}button.danger{background:var(--danger);border-color:var(--danger);color:#fff}button:disabled{opacity:.6;cursor:wait}
.error{color:var(--danger);background:color-mix(in srgb,var(--danger) 10%,transparent);border-radius:8px;padding:10px 12px;margin:0 0 16px}
.field-error{color:var(--danger);font-size:.9rem;margin:6px 0 0}.invalid{border-color:var(--danger)}
.notice{background:color-mix(in srgb,var(--accent) 10%,transparent);border-radius:8px;padding:10px 12px;margin:0 0 16px}
.banner{border-radius:10px;padding:12px 14px;margin:0 0 16px;border:1px solid var(--line)}.banner.fresh{border-color:var(--ok)}.banner.warn{border-color:var(--warn);background:color-mix(in srgb,var(--warn) 10%,transparent)}.banner.bad{border-color:var(--danger);background:color-mix(in srgb,var(--danger) 8%,transparent)}
table{width:100%;border-collapse:collapse}th,td{text-align:left;padding:8px 10px;border-bottom:1px solid var(--line);vertical-align:top}th{font-size:.8rem;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.scroll-x{overflow-x:auto;max-width:100%}.scroll-x>table{min-width:max-content}
.urls{display:grid;grid-template-columns:max-content minmax(0,1fr) max-content;gap:8px 12px;align-items:center}code{font-family:var(--mono);background:var(--bg);padding:3px 6px;border-radius:6px;overflow-wrap:anywhere}
.token{font-family:var(--mono);white-space:nowrap;overflow-wrap:normal;word-break:keep-all;display:inline-block;max-width:100%;overflow-x:auto;vertical-align:bottom}
.secret{border:2px solid var(--warn);border-radius:12px;padding:16px;margin:0 0 20px;background:color-mix(in srgb,var(--warn) 8%,transparent)}.secret > code{display:block;padding:10px;margin:8px 0;font-size:1rem}
.row{display:flex;gap:12px;flex-wrap:wrap;align-items:flex-end}.row>div{flex:1;min-width:150px}.radio{display:flex;flex-wrap:wrap;gap:0 18px}.radio label{font-weight:400;display:flex;gap:6px;align-items:center;margin:6px 0}.radio input{width:auto}
.pill{display:inline-block;padding:1px 8px;border-radius:99px;font-size:.85rem;border:1px solid var(--line);white-space:nowrap}.pill.live{border-color:var(--ok);color:var(--ok)}.pill.revoked{border-color:var(--danger);color:var(--danger)}.pill.warn{border-color:var(--warn);color:var(--warn)}
.grid4{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(200px,100%),1fr));gap:12px;margin:0 0 20px}.stat{background:var(--card);border:1px solid var(--line);border-radius:12px;padding:14px}.stat a{text-decoration:none;color:inherit}.stat.on{outline:2px solid var(--accent)}.stat .big{font-size:1.5rem;font-weight:700}.up{color:var(--ok)}.down{color:var(--danger)}
svg{max-width:100%;height:auto}svg.chart text{fill:var(--text);font-size:12px}svg.chart rect.bar{fill:var(--accent)}svg.chart rect.prior{fill:var(--muted);opacity:.45}svg.chart rect.other{fill:var(--muted)}
.pager{display:flex;flex-wrap:wrap;align-items:center;gap:10px;margin-top:14px}.actions{display:flex;flex-wrap:wrap;gap:10px;margin-top:16px}
dl.pairs{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:6px 12px;margin:0}dl.pairs dd{margin:0;min-width:0}a.url{font-family:var(--mono);overflow-wrap:anywhere}main.wide>.brand{margin:0 0 12px;font-size:1.1rem}
nav.tabs{display:flex;gap:4px;flex-wrap:wrap;margin:0 0 16px;border-bottom:1px solid var(--line)}nav.tabs a{display:inline-flex;align-items:center;padding:8px 14px;text-decoration:none;color:var(--muted);font-weight:600;border-bottom:2px solid transparent;margin-bottom:-1px}nav.tabs a.on{color:var(--text);border-bottom-color:var(--accent)}
dl.facts{margin:8px 0 0;font-size:.92rem}dl.facts dt{color:var(--muted)}q[data-platform-message]{font-style:italic}.token-warning{color:var(--warn);font-weight:600}
ul.choices{list-style:none;padding:0;margin:0 0 12px;display:grid;gap:8px}label.check{display:flex;gap:10px;align-items:flex-start;font-weight:400;margin:0;padding:10px 12px;border:1px solid var(--line);border-radius:10px;cursor:pointer}label.check input{width:auto;margin-top:4px}
form.assign label{margin:0 0 4px;font-size:.85rem}form.assign select,form.assign input:not([type=radio]){min-width:12em}form.assign .radio label{font-size:.9rem}form.assign button{margin-top:6px}table.ad-accounts .actions{margin-top:0}table.ad-accounts form{margin:0}details.disconnected{margin-top:12px}details.disconnected summary{cursor:pointer;font-weight:600;padding:8px 0}
.links{list-style:none;padding:0;margin:0 0 12px;display:grid;gap:8px}.links a{display:block;padding:10px 12px;border:1px solid var(--line);border-radius:10px;text-decoration:none;color:var(--text);font-weight:600}.links a small{display:block;font-weight:400}
@media (max-width:640px){
header.top{padding:6px 12px}details.profile{position:static}details.profile .menu{left:12px;right:12px;top:100%;min-width:0;max-width:none}
nav.main{order:3;flex:1 0 100%}form.switch{order:4;flex:1 0 100%}form.switch select{flex:1;width:100%}
main{margin:16px auto;padding:0 12px}main.narrow{margin-top:24px}.card{padding:16px;border-radius:12px}
button,.button,input,select,details.profile summary,a.brand,nav.main a,details.profile .menu a,details.profile .menu button,.pager a{min-height:44px}
button,.button,details.profile summary,a.brand{display:inline-flex;align-items:center;justify-content:center}details.profile .menu a,details.profile .menu button{display:flex;align-items:center;justify-content:flex-start}
.radio label{min-height:44px}.links a{min-height:44px}nav.tabs a,details.disconnected summary{min-height:44px}label.check{min-height:44px}form.assign select,form.assign input:not([type=radio]){min-width:0}
dl.pairs{grid-template-columns:minmax(0,1fr);gap:0}dl.pairs dd{margin:0 0 8px}dl.pairs dd a{display:block;min-height:44px;padding:10px 0}
.urls{grid-template-columns:minmax(0,1fr) max-content;gap:4px 8px}.urls>:nth-child(3n+1){grid-column:1/-1;margin-top:8px}
table.stack thead{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
table.stack,table.stack tbody,table.stack tr,table.stack td{display:block;width:100%}
table.stack tr{border:1px solid var(--line);border-radius:10px;padding:6px 12px;margin:0 0 10px}
table.stack td{position:relative;min-height:2.2em;padding:6px 0 6px calc(38% + 10px);border-bottom:1px solid var(--line);text-align:left}
table.stack td:last-child{border-bottom:0}table.stack td.num{text-align:left}
table.stack td::before{content:attr(data-label);position:absolute;left:0;top:8px;width:38%;font-size:.8rem;text-transform:uppercase;letter-spacing:.04em;color:var(--muted);font-weight:600;overflow-wrap:anywhere}
table.stack td.wide{padding-left:0}table.stack td.wide::before{position:static;display:block;width:auto;margin:0 0 4px}
table.stack td:not([data-label]),table.stack td.actions-cell{padding-left:0}table.stack td:not([data-label])::before,table.stack td.actions-cell::before{content:none}
}`;

/** Headers of /app pages: no framing, scripts only from our own origin, nothing cached. */
export function appHeaders(nonce: string): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'same-origin',
    'cache-control': 'no-store',
  };
}

/** Headers of the markdown docs under /docs: the pages' protections, nothing to run or style. */
export function docHeaders(): Record<string, string> {
  return {
    'content-type': 'text/markdown; charset=utf-8',
    'content-security-policy': "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; sandbox",
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'same-origin',
    'cache-control': 'no-store',
  };
}

/** Headers of /embed views: frameable by any site, no script at all. */
export function embedHeaders(nonce: string): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': `default-src 'none'; style-src 'nonce-${nonce}'; form-action 'none'; frame-ancestors *; base-uri 'none'`,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
  };
}

// The icon inline, so every page shows it whatever BASE_URL's path (img-src allows data:).
const ICON_LINK = `<link rel="icon" type="image/svg+xml" href="data:image/svg+xml,${encodeURIComponent(FAVICON_SVG)}">`;

function document_(title: string, body: string, nonce: string, script?: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${h(title)} · hubops</title>${ICON_LINK}<style nonce="${nonce}">${STYLE}</style>${script ? `<script src="${h(script)}" defer></script>` : ''}</head><body>${body}</body></html>`;
}

/** A page outside the signed-in admin (the front door, the docs index): the brand, then the content. */
export function publicPage(title: string, content: string, nonce: string): string {
  return document_(title, `<main class="wide"><p class="brand">hubops</p>${content}</main>`, nonce);
}

export interface Shell {
  base: string; // e.g. "" or "/api" (the base URL's path)
  user: SessionUser;
  hub: Membership;
  csrf: string;
  active: 'home' | 'opt-ins' | 'spend' | 'manage';
}

const roleText = (m: Membership) => (m.role === 'hub_admin' ? 'hub admin' : m.workspaceName ? `member · ${m.workspaceName}` : 'member');

export function shell(s: Shell, title: string, content: string, nonce: string): string {
  const app = `${s.base}/app`;
  const hubUrl = `${app}/hubs/${encodeURIComponent(s.hub.hubId)}`;
  const admin = s.hub.role === 'hub_admin';
  const nav = [
    `<a href="${h(hubUrl)}"${s.active === 'home' ? ' class="on"' : ''}>Home</a>`,
    ...(admin
      ? [
          `<a href="${h(hubUrl)}/opt-ins"${s.active === 'opt-ins' ? ' class="on"' : ''}>Playbook opt-ins</a>`,
          `<a href="${h(hubUrl)}/spend"${s.active === 'spend' ? ' class="on"' : ''}>Spend</a>`,
        ]
      : []),
  ].join('');
  const switcher = `<form class="switch" method="get" action="${h(app)}/switch" data-autosubmit>
<label for="hub-switch">Hub</label><select id="hub-switch" name="hub">${s.user.memberships
    .map((m) => `<option value="${h(m.hubId)}"${m.hubId === s.hub.hubId ? ' selected' : ''}>${h(m.hubName)} — ${h(roleText(m))}</option>`)
    .join('')}</select>
<button type="submit">Switch</button></form>`;
  const profile = `<details class="profile"><summary aria-label="Profile menu">${h(s.user.firstname || s.user.email)} ▾</summary><div class="menu" role="menu">
<small>${h(s.user.email)}</small>
${admin ? `<a role="menuitem" href="${h(hubUrl)}/settings/api">Manage Hub</a><a role="menuitem" href="${h(hubUrl)}/settings/ad-accounts">Ad accounts</a>` : ''}
<a role="menuitem" href="${h(app)}/connected-apps">Connected apps</a>
<form method="post" action="${h(app)}/sign-out"><input type="hidden" name="csrf" value="${h(s.csrf)}"><button role="menuitem" type="submit">Sign out</button></form>
</div></details>`;
  return document_(
    title,
    `<header class="top"><a class="brand" href="${h(app)}">hubops</a><nav class="main">${nav}</nav>${switcher}${profile}</header>
<main>${content}</main>`,
    nonce,
    `${app}/assets/app.js`,
  );
}

/** The tabs of Manage Hub, on each of its pages. */
type ManageTab = 'api' | 'ad-accounts' | 'channels/google';
export function manageTabs(hubUrl: string, active: ManageTab): string {
  const tab = (id: ManageTab, text: string) =>
    `<a href="${h(hubUrl)}/settings/${id}"${id === active ? ' class="on" aria-current="page"' : ''}>${text}</a>`;
  return `<nav class="tabs" aria-label="Manage Hub">${tab('api', 'API')}${tab('ad-accounts', 'Ad accounts')}${tab('channels/google', 'Business Profile')}</nav>`;
}

export function signInPage(
  o: { action: string; csrf: string; next: string; email?: string; error?: string; fieldErrors?: { email?: string; password?: string } },
  nonce: string,
): string {
  const fe = o.fieldErrors ?? {};
  return document_(
    'Sign in',
    `<main class="narrow"><div class="card"><p class="brand">hubops</p>
<h1>Sign in</h1><p class="muted">to manage your hub</p>
${o.error ? `<p class="error" role="alert">${h(o.error)}</p>` : ''}
<form method="post" action="${h(o.action)}" novalidate>
<input type="hidden" name="csrf" value="${h(o.csrf)}"><input type="hidden" name="next" value="${h(o.next)}">
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" autofocus value="${h(o.email ?? '')}"${fe.email ? ' class="invalid" aria-describedby="email-error"' : ''}>
${fe.email ? `<p class="field-error" id="email-error">${h(fe.email)}</p>` : ''}
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password"${fe.password ? ' class="invalid" aria-describedby="password-error"' : ''}>
${fe.password ? `<p class="field-error" id="password-error">${h(fe.password)}</p>` : ''}
<div class="actions"><button class="primary" type="submit">Sign in</button></div></form></div></main>`,
    nonce,
  );
}

export function embedDocument(title: string, body: string, nonce: string): string {
  return document_(title, `<main>${body}<p class="muted"><small>Powered by hubops</small></p></main>`, nonce);
}

export function messagePage(title: string, message: string, nonce: string, link?: { href: string; text: string }): string {
  return document_(
    title,
    `<main class="narrow"><div class="card"><p class="brand">hubops</p><h1>${h(title)}</h1>
<p class="error" role="alert">${h(message)}</p>${link ? `<p><a class="button" href="${h(link.href)}">${h(link.text)}</a></p>` : ''}</div></main>`,
    nonce,
  );
}

// ── formatting helpers ──────────────────────────────────────────────────────────────────────

const STATUS_LABELS: Partial<Record<OptInStatus, string>> = {
  active: 'Live',
  in_review: 'Awaiting approval',
  questions_only: 'Questions only',
};
export function statusLabel(status: string): string {
  const label = STATUS_LABELS[status as OptInStatus];
  if (label) return label;
  const words = status.replace(/[_-]/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

export function change(current: number, prior: number): string {
  if (prior === 0) return current === 0 ? '<span class="muted">no change</span>' : '<span class="up">new vs. 0</span>';
  const pct = ((current - prior) / prior) * 100;
  const cls = pct > 0 ? 'up' : pct < 0 ? 'down' : 'muted';
  return `<span class="${cls}">${pct > 0 ? '+' : ''}${pct.toFixed(1)}%</span>`;
}
