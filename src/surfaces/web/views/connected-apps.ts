// Connected apps: the OAuth grants a user has given (and a hub admin's view of those in their
// hubs), each with a Revoke link to a confirmation page (as for keys: a real step, no script needed)
// whose single-submit form revokes. Client names are chosen by whoever registered the
// client, so they are escaped like every other value.
import { CONNECTED_APPS_SHOWN, type ConnectedApp, type ConnectedApps } from '../../../domain/oauth/grants.service.ts';
import { escapeHtml as h } from '../../shared/html.ts';
import { agoTag, when } from './format.ts';

interface ViewInput {
  pageUrl: string;
  csrf: string;
  apps: ConnectedApps;
  /** Names of the hubs the user administers (empty for a member). */
  adminHubs: string[];
  now: Date;
  /** Just revoked one (the page after the redirect). */
  revoked: boolean;
}

/** A cell of a stacked table: one element beside its label, however many lines it holds. */
const cell = (label: string, content: string, attrs = '') => `<td data-label="${label}"${attrs}><div>${content}</div></td>`;

// The client id is plain code, free to break anywhere: a one-line .token made the hub table wider than its card.
function row(app: ConnectedApp, o: ViewInput, withUser: boolean): string {
  const scope = app.scopes.length ? app.scopes.map((s) => `<code class="token">${h(s)}</code>`).join(' ') : '—';
  const lastUsed = app.lastUsedAt ? agoTag(new Date(app.lastUsedAt), o.now) : '<span class="muted">not yet</span>';
  return `<tr data-grant="${h(app.ref)}">
${cell('App', `<strong data-client-name>${h(app.client.name)}</strong><br><small>client <code>${h(app.client.id)}</code></small>`)}
${withUser ? cell('User', `${h(app.user.name || app.user.email)}<br><small>${h(app.user.email)}</small>`) : ''}
${cell('Acts in', `${h(app.hub.name)}<br><small>${app.workspace ? `workspace ${h(app.workspace.name)}` : 'whole hub'}</small>`)}
${cell('Access', scope)}
${cell('Authorised', `<time datetime="${h(app.authorisedAt)}" data-authorised>${h(when(app.authorisedAt))}</time>`)}
${cell('Last used', lastUsed, ' data-last-used')}
<td class="actions-cell"><a class="button danger" href="${h(o.pageUrl)}/${h(app.ref)}/revoke" aria-label="Revoke ${h(app.client.name)}">Revoke</a></td></tr>`;
}

function table(apps: ConnectedApp[], o: ViewInput, withUser: boolean): string {
  return `<table class="stack"><thead><tr><th>App</th>${withUser ? '<th>User</th>' : ''}<th>Acts in</th><th>Access</th><th>Authorised</th><th>Last used</th><th></th></tr></thead>
<tbody>${apps.map((a) => row(a, o, withUser)).join('')}</tbody></table>`;
}

export function connectedAppsView(o: ViewInput): string {
  const { own, others, truncated } = o.apps;
  const hubs = o.adminHubs.map((name) => `<strong>${h(name)}</strong>`).join(', ');
  const notice = o.revoked
    ? '<p class="notice" role="status">Access revoked. The app\'s access and refresh tokens are refused from now on, on every server; to use hubops again it has to ask you again.</p>'
    : '';
  const mine = own.length
    ? table(own, o, false)
    : `<p class="muted" data-empty>No apps are connected to your account. When an app — an AI assistant, a reporting tool — asks to use hubops on your behalf and you allow it, it is listed here until you revoke it.</p>`;
  const theirs =
    o.adminHubs.length === 0
      ? ''
      : `<section class="card" id="hub-apps"><h2>Apps others connected in your hubs</h2>
<p class="muted">As a hub administrator of ${hubs} you can revoke any app a member connected to act there.</p>
${others.length ? table(others, o, true) : '<p class="muted" data-empty>No one else has connected an app to act in these hubs.</p>'}</section>`;
  return `<h1>Connected apps</h1>${notice}
<p>Apps you allowed to use hubops on your behalf (OAuth). Revoking one stops it at once: its access and refresh tokens no longer work, on the REST API and the MCP server alike.</p>
<section class="card" id="my-apps"><h2>Your connected apps</h2>${mine}</section>${theirs}
${truncated ? `<p class="muted"><small>Each list shows the ${CONNECTED_APPS_SHOWN} most recently authorised apps.</small></p>` : ''}
<p class="muted"><small>“Last used” is when the app last called hubops with a token; it is recorded at most once a minute, so it can be up to about a minute and a half behind.</small></p>`;
}

/** The confirmation before a revocation: what stops working, for whom; Cancel, or revoke. */
export function revokeConnectedAppView(o: { pageUrl: string; csrf: string; app: ConnectedApp; own: boolean }): string {
  const { app } = o;
  const whose = o.own ? 'you' : h(app.user.name || app.user.email);
  const where = `${h(app.hub.name)}${app.workspace ? `, workspace ${h(app.workspace.name)}` : ', whole hub'}`;
  return `<div class="card" data-confirm-revoke><h1>Revoke “${h(app.client.name)}”?</h1>
<p>It acts for ${whose} in ${where}. Its access and refresh tokens stop working at once, on the REST API and the MCP server, on every server. This cannot be undone: to use hubops again, the app has to ask ${o.own ? 'you' : 'them'} again.</p>
<form method="post" action="${h(o.pageUrl)}/${h(app.ref)}/revoke" data-once><input type="hidden" name="csrf" value="${h(o.csrf)}">
<div class="actions"><a class="button" href="${h(o.pageUrl)}">Cancel</a><button class="danger" type="submit">Yes, revoke its access</button></div></form></div>`;
}
