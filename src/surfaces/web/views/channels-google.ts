// Manage Hub → Business Profile: the hub's locations connected to workspaces, each with its
// state in words a person can act on (reviews synced when, last post, last failure in Google's
// words), Connect Google Business Profile, and the chooser of locations that follows the consent.
import type { BusinessLocation } from '../../../integrations/google-business/client.ts';
import { escapeHtml as h } from '../../shared/html.ts';
import { agoTag } from './format.ts';
import { manageTabs } from './layout.ts';

export interface BusinessChannelLine {
  id: string;
  name: string;
  externalId: string | null;
  workspaceName: string;
  connected: boolean;
  lastPublishedAt: Date | null;
  /** The channel's own last failure (publishing), else its review sync's. */
  failureKind: string | null;
  failureMessage: string | null;
  reviews: number;
  reviewsSyncedAt: Date | null;
}

const FAILURE_WORDS: Record<string, string> = {
  needs_reconnect: 'Needs reconnect: the Google sign-in expired or was revoked. Connect Google Business Profile again.',
  not_approved: 'API access not yet approved: the operator must request Business Profile API access from Google.',
  missing_permission: 'Google refuses access to this location: sign in with an account that manages it.',
  rejected: 'Google rejected the last post.',
};

export function businessProfileView(o: {
  hubUrl: string;
  now: Date;
  lines: BusinessChannelLine[];
  setUp: boolean;
  notice?: string;
}): string {
  const u = o.hubUrl;
  const rows = o.lines
    .map((l) => {
      const failure = l.failureKind
        ? `<p class="error"><strong>${h(FAILURE_WORDS[l.failureKind] ?? 'The last attempt failed; it is retried by itself.')}</strong>${l.failureMessage ? ` Google said: “${h(l.failureMessage)}”` : ''}</p>`
        : '';
      return `<section class="card"><h2>${h(l.name)}</h2><p class="muted"><code class="token">${h(l.externalId ?? '')}</code> · for <strong>${h(l.workspaceName)}</strong></p>
<p>${l.reviewsSyncedAt ? `${h(String(l.reviews))} reviews, synced ${agoTag(l.reviewsSyncedAt, o.now)}` : 'Reviews not synced yet: the first sync starts within 15 seconds.'} · ${l.lastPublishedAt ? `last post ${agoTag(l.lastPublishedAt, o.now)}` : 'no post published yet'}</p>${failure}</section>`;
    })
    .join('');
  return `${manageTabs(u, 'channels')}
<div class="card"><h1>Google Business Profile</h1>
${o.notice ? `<p class="notice" role="status">${h(o.notice)}</p>` : ''}
<p>Posts made for a connected location's workspace appear on its Business Profile; its Google reviews sync every hour and feed the review summaries.</p>
${
  o.setUp
    ? `<p><a class="button primary" href="${h(u)}/settings/channels/google/connect">Connect Google Business Profile</a></p>`
    : '<p class="muted">Not set up on this server: the operator sets GOOGLE_OAUTH_CLIENT_ID and GOOGLE_OAUTH_CLIENT_SECRET (docs/channels.md).</p>'
}</div>
${o.lines.length ? rows : '<p class="muted">No location is connected yet.</p>'}`;
}

export function chooseLocationsView(o: {
  hubUrl: string;
  csrf: string;
  pending: string;
  locations: BusinessLocation[];
  workspaces: { id: string; name: string }[];
  error?: string;
}): string {
  const u = o.hubUrl;
  const options = (selected: string) =>
    `<option value="">Do not connect</option>${o.workspaces.map((w) => `<option value="${h(w.id)}"${w.id === selected ? ' selected' : ''}>${h(w.name)}</option>`).join('')}`;
  const rows = o.locations
    .map(
      (l, i) => `<li><label for="loc-${i}"><strong>${h(l.title)}</strong>${l.address ? `<br><small>${h(l.address)}</small>` : ''}</label>
<input type="hidden" name="location" value="${h(l.name)}"><select id="loc-${i}" name="workspace">${options('')}</select></li>`,
    )
    .join('');
  return `<div class="card"><h1>Choose locations</h1>
${o.error ? `<p class="error" role="alert">${h(o.error)}</p>` : ''}
${
  o.locations.length
    ? `<p>These are the Business Profile locations the Google sign-in manages (${h(String(o.locations.length))}). Choose the workspace each one is; leave the others unconnected.</p>
<form method="post" action="${h(u)}/settings/channels/google/choose" data-once><input type="hidden" name="csrf" value="${h(o.csrf)}"><input type="hidden" name="pending" value="${h(o.pending)}">
<ul class="choices">${rows}</ul>
<div class="actions"><a class="button" href="${h(u)}/settings/channels/google">Cancel</a><button class="primary" type="submit">Connect locations</button></div></form>`
    : `<p>The Google sign-in manages no Business Profile location.</p><p><a class="button" href="${h(u)}/settings/channels/google">Back</a></p>`
}</div>`;
}
