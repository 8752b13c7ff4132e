// Manage Hub → Facebook & Instagram: the hub's Meta channels with their state, "Connect Facebook
// Pages / Instagram", and the chooser that maps each Page and linked Instagram account to a workspace.
import type { ChoosablePage, MetaChannelRow } from '../../../domain/organic/meta-connect.service.ts';
import { escapeHtml as h } from '../../shared/html.ts';

export const META_CHANNEL_PATH = '/settings/channels/meta';

export function metaChannelsView(o: { hubUrl: string; channels: MetaChannelRow[]; canConnect: boolean; notice?: string }): string {
  const u = `${o.hubUrl}${META_CHANNEL_PATH}`;
  const state = (c: MetaChannelRow) =>
    !c.connectionId
      ? 'not connected'
      : c.failureKind
        ? `${c.failureKind === 'needs_reconnect' ? 'needs reconnect' : 'failing'}${c.failureMessage ? `: “${h(c.failureMessage)}”` : ''}`
        : 'connected';
  const rows = o.channels
    .map(
      (c) =>
        `<tr><td>${c.platform === 'facebook' ? 'Facebook Page' : 'Instagram'}</td><td><strong>${h(c.name)}</strong> <code class="token">${h(c.externalId)}</code></td><td>${h(c.workspaceName)}</td><td data-state>${state(c)}</td></tr>`,
    )
    .join('');
  return `<div class="card"><h1>Facebook &amp; Instagram</h1>
${o.notice ? `<p class="notice" role="status">${h(o.notice)}</p>` : ''}
<p>Posts go out to the Facebook Pages and Instagram professional accounts connected here; their insights come back by themselves.</p>
${
  o.canConnect
    ? `<p><a class="button primary" id="connect-meta-pages" href="${h(u)}/connect">Connect Facebook Pages / Instagram</a></p>`
    : '<p>Signing in with Facebook is not set up on this server (META_APP_ID and META_APP_SECRET).</p>'
}
${
  o.channels.length
    ? `<div class="scroll"><table class="channels-meta"><thead><tr><th>Network</th><th>Channel</th><th>Workspace</th><th>State</th></tr></thead><tbody>${rows}</tbody></table></div>`
    : '<p>No Facebook Page or Instagram account is connected yet.</p>'
}</div>`;
}

export function chooseMetaChannelsView(o: {
  hubUrl: string;
  csrf: string;
  /** The opaque handle of the sign-in held server-side for this session (never a token). */
  pending: string;
  pages: ChoosablePage[];
  workspaces: { id: string; name: string }[];
  error?: string;
}): string {
  const u = `${o.hubUrl}${META_CHANNEL_PATH}`;
  const select = (name: string, label: string, id: string) =>
    `<label for="${h(id)}">${label}</label><select id="${h(id)}" name="${h(name)}"><option value="">Do not connect</option>${o.workspaces
      .map((w) => `<option value="${h(w.id)}">${h(w.name)}</option>`)
      .join('')}</select>`;
  const rows = o.pages
    .map(
      (
        p,
        i,
      ) => `<li class="meta-page"><p><strong>${h(p.name)}</strong> <small>Facebook Page <code class="token">${h(p.id)}</code></small></p>
${select(`facebook:${p.id}`, 'Post to this Page for workspace', `page-${i}`)}
${
  p.instagram
    ? `<p><strong>@${h(p.instagram.username)}</strong> <small>Instagram account linked to this Page</small></p>${select(`instagram:${p.instagram.id}`, 'Post to this Instagram account for workspace', `ig-${i}`)}`
    : '<p><small>No Instagram professional account is linked to this Page.</small></p>'
}</li>`,
    )
    .join('');
  return `<div class="card"><h1>Choose Pages and Instagram accounts</h1>
${o.error ? `<p class="error" role="alert">${h(o.error)}</p>` : ''}
${
  o.pages.length
    ? `<p>Map each Page and Instagram account to the workspace whose posts it publishes. A channel already connected keeps its workspace and takes the new token.</p>
<form method="post" action="${h(u)}/choose" data-once><input type="hidden" name="csrf" value="${h(o.csrf)}"><input type="hidden" name="pending" value="${h(o.pending)}">
<ul class="choices">${rows}</ul>
<div class="actions"><a class="button" href="${h(u)}">Cancel</a><button class="primary" type="submit">Connect channels</button></div></form>`
    : `<p>This Facebook sign-in manages no Page. Pages are chosen in Facebook's dialog: connect again and tick them.</p><p><a class="button" href="${h(u)}">Back</a></p>`
}</div>`;
}
