// Server-rendered pages of the authorization server: sign-in, consent, refusal, error. One small
// stylesheet inline (allowed by a per-response nonce), no script, no external asset.
import { escapeHtml } from '../shared/html.ts';

const STYLE = `
:root{color-scheme:light dark;--bg:#f5f6f8;--card:#fff;--text:#1c1f24;--muted:#5b6270;--line:#e2e5ea;--accent:#2956d6;--accent-text:#fff;--danger:#b42318}
@media (prefers-color-scheme:dark){:root{--bg:#14161a;--card:#1d2026;--text:#e8eaee;--muted:#a0a7b4;--line:#30343c;--accent:#6f93ff;--accent-text:#0b0d10;--danger:#ff8a80}}
*{box-sizing:border-box}body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;background:var(--bg);color:var(--text);font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;padding:24px}
main{width:100%;max-width:420px;overflow-wrap:anywhere;background:var(--card);border:1px solid var(--line);border-radius:14px;padding:32px;box-shadow:0 8px 30px rgba(0,0,0,.06)}
.brand{font-weight:700;letter-spacing:.2px;color:var(--accent);margin:0 0 20px}h1{font-size:1.35rem;margin:0 0 8px}p{margin:0 0 16px;color:var(--muted)}
label{display:block;font-weight:600;margin:14px 0 6px}input,select{width:100%;padding:10px 12px;border:1px solid var(--line);border-radius:8px;background:var(--bg);color:var(--text);font:inherit}
input:focus,select:focus{outline:2px solid var(--accent);outline-offset:1px}
.actions{display:flex;gap:12px;margin-top:24px}button{flex:1;padding:11px 14px;border-radius:8px;border:1px solid var(--line);font:inherit;font-weight:600;cursor:pointer;background:transparent;color:var(--text)}
button.primary{background:var(--accent);border-color:var(--accent);color:var(--accent-text)}
.error{color:var(--danger);background:color-mix(in srgb,var(--danger) 10%,transparent);border-radius:8px;padding:10px 12px;margin:0 0 16px}
dl{margin:16px 0;padding:14px 16px;border:1px solid var(--line);border-radius:10px}dt{font-size:.8rem;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}dd{margin:0 0 10px;font-weight:600;overflow-wrap:anywhere}dd:last-child{margin:0}
ul.scope{margin:0 0 8px;padding-left:20px;color:var(--text)}small{color:var(--muted)}a{color:var(--accent)}`;

export function page(title: string, body: string, nonce: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)} · hubops</title><style nonce="${nonce}">${STYLE}</style></head>
<body><main><p class="brand">hubops</p>${body}</main></body></html>`;
}

/** Security headers for every page: no framing, no scripts, nothing cached, nothing leaked. */
export function pageHeaders(nonce: string): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': `default-src 'none'; style-src 'nonce-${nonce}'; form-action 'self' https: http:; frame-ancestors 'none'; base-uri 'none'`,
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
  };
}

/**
 * The policy set on every response of oidc-provider before it runs, for the one page it renders
 * itself: form_post's (OAuth 2.0 Form Post Response Mode), which carries the authorization code.
 * oidc-provider adds its inline script's hash to a script-src it finds already set
 * (lib/helpers/script_src_sha.js), so that script and nothing else runs.
 */
export const PROVIDER_PAGE_POLICY = "default-src 'none'; script-src 'none'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

/**
 * The headers of a page oidc-provider rendered under PROVIDER_PAGE_POLICY (`policy`, with its
 * script's hash added): those of our own pages, its script allowed by that hash alone, and its
 * form allowed to post to the client's redirect URI (by scheme, as our consent page's redirects).
 */
export function providerPageHeaders(policy: string, redirectUri: string | undefined): Record<string, string> {
  const scheme = redirectUri && URL.canParse(redirectUri) ? new URL(redirectUri).protocol : undefined;
  const directives = policy
    .split(';')
    .map((directive) => directive.trim().split(/\s+/))
    .map(([name, ...values]) => {
      // 'none' beside a hash would be ignored anyway (CSP3 §2.3.1); say only what is allowed.
      if (name === 'script-src' && values.length > 1) return [name, ...values.filter((v) => v !== "'none'")];
      if (name === 'form-action' && scheme) return [name, scheme];
      return [name!, ...values];
    });
  return {
    'content-security-policy': directives.map((d) => d.join(' ')).join('; '),
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
  };
}

/** A client as pages name it: `host` for a client metadata document, whose name anyone can choose. */
export interface ClientLabel {
  name: string;
  host?: string;
}

const fromHost = (client: ClientLabel) => (client.host ? ` <small>from</small> <strong>${escapeHtml(client.host)}</strong>` : '');

export function signInPage(
  o: { action: string; csrf: string; client: ClientLabel; email?: string; error?: string },
  nonce: string,
): string {
  return page(
    'Sign in',
    `
<h1>Sign in</h1>
<p>to continue to <strong>${escapeHtml(o.client.name)}</strong>${fromHost(o.client)}</p>
${o.error ? `<p class="error" role="alert">${escapeHtml(o.error)}</p>` : ''}
<form method="post" action="${escapeHtml(o.action)}" autocomplete="on">
  <input type="hidden" name="csrf" value="${escapeHtml(o.csrf)}">
  <label for="email">Email</label>
  <input id="email" name="email" type="email" required autofocus autocomplete="username" value="${escapeHtml(o.email ?? '')}">
  <label for="password">Password</label>
  <input id="password" name="password" type="password" required autocomplete="current-password">
  <div class="actions"><button class="primary" type="submit">Sign in</button></div>
</form>`,
    nonce,
  );
}

export interface ConsentChoice {
  hubId: string;
  hubName: string;
  /** Workspaces this user may choose to act in; empty when pinned (then `pinned` is set). */
  workspaces: { id: string; name: string }[];
  pinned: { id: string; name: string } | null;
  hubWide: boolean;
}

export function consentPage(
  o: {
    action: string;
    csrf: string;
    client: ClientLabel;
    clientId: string;
    userEmail: string;
    choices: ConsentChoice[];
    connectedAppsUrl: string;
  },
  nonce: string,
): string {
  const hubField = o.choices.length === 1 ? `<dt>Hub</dt><dd>${escapeHtml(o.choices[0]!.hubName)}</dd>` : '';
  const hubSelect =
    o.choices.length > 1
      ? `<label for="hub">Hub</label><select id="hub" name="hub">${o.choices.map((c) => `<option value="${escapeHtml(c.hubId)}">${escapeHtml(c.hubName)}</option>`).join('')}</select>`
      : '';
  // Workspace: fixed for a pinned member; a choice (or the whole hub) for a hub admin.
  const first = o.choices[0]!;
  const workspaceField = first.pinned && o.choices.length === 1 ? `<dt>Workspace</dt><dd>${escapeHtml(first.pinned.name)}</dd>` : '';
  const workspaceSelect = o.choices.some((c) => c.hubWide)
    ? `<label for="workspace">Workspace</label><select id="workspace" name="workspace"><option value="">All workspaces in the hub</option>${o.choices
        .flatMap((c) =>
          c.workspaces.map(
            (w) => `<option value="${escapeHtml(w.id)}">${escapeHtml(o.choices.length > 1 ? `${c.hubName} — ${w.name}` : w.name)}</option>`,
          ),
        )
        .join('')}</select>`
    : '';
  return page(
    'Allow access',
    `
<h1>Allow ${escapeHtml(o.client.name)} to use hubops for you?</h1>
<p><strong>${escapeHtml(o.client.name)}</strong>${fromHost(o.client)} <small>(${escapeHtml(o.clientId)})</small> is asking for:</p>
<ul class="scope"><li>full access to the hub below on your behalf — read and create posts and media, and read analytics, reviews, playbooks, opt-ins and ad spend</li></ul>
<form method="post" action="${escapeHtml(o.action)}">
  <input type="hidden" name="csrf" value="${escapeHtml(o.csrf)}">
  ${o.choices.length === 1 ? `<input type="hidden" name="hub" value="${escapeHtml(o.choices[0]!.hubId)}">` : ''}
  <dl><dt>Signed in as</dt><dd>${escapeHtml(o.userEmail)}</dd>${hubField}${workspaceField}</dl>
  ${hubSelect}${workspaceSelect}
  <p><small>You can revoke this access at any time in <a href="${escapeHtml(o.connectedAppsUrl)}" target="_blank" rel="noopener">Connected apps</a> (your profile menu in hubops); the app's tokens stop working at once.</small></p>
  <div class="actions"><button type="submit" name="decision" value="deny">Deny</button><button class="primary" type="submit" name="decision" value="allow">Allow</button></div>
</form>`,
    nonce,
  );
}

export function refusalPage(o: { action: string; csrf: string; clientName: string; userEmail: string }, nonce: string): string {
  return page(
    'API access not enabled',
    `
<h1>API access isn't enabled for your account</h1>
<p>${escapeHtml(o.userEmail)} can't connect <strong>${escapeHtml(o.clientName)}</strong> to hubops: access to the API is currently limited to staff and selected partners. Ask your account manager or hubops support to enable it.</p>
<form method="post" action="${escapeHtml(o.action)}">
  <input type="hidden" name="csrf" value="${escapeHtml(o.csrf)}">
  <div class="actions"><button class="primary" type="submit" name="decision" value="deny">Return to ${escapeHtml(o.clientName)}</button></div>
</form>`,
    nonce,
  );
}

export function errorPage(error: string, description: string, nonce: string): string {
  return page(
    'Something went wrong',
    `
<h1>We couldn't complete that request</h1>
<p class="error" role="alert">${escapeHtml(description || error)}</p>
<p><small>Error code: ${escapeHtml(error)}. Go back to the app you came from and try again.</small></p>`,
    nonce,
  );
}
