// Manage Hub → Channels: every workspace channel with its state in words an admin can act on
// (connected / needs reconnect and why / failing / sandbox), its last publish, its last error in
// the network's own words, its token's expiry (flagged a week ahead), and the deliveries still
// being confirmed. The "Connect …" actions of the networks (Meta Pages and Instagram, Google
// Business Profile) are passed in: connectActionsCard renders whatever the routes give it.
import type { ChannelState, ChannelStatusView } from '../../../domain/channels/channel-status.ts';
import { escapeHtml as h } from '../../shared/html.ts';
import { agoTag, count, counted } from './format.ts';
import { manageTabs } from './layout.ts';

/** One network's way to connect channels, rendered in the Connect card (a link or a small form). */
export interface ConnectAction {
  /** Stable id, used as the element's id (e.g. "connect-meta"). */
  id: string;
  /** The button's words, e.g. "Connect Facebook Pages and Instagram". */
  label: string;
  /** A GET link that starts connecting (an OAuth redirect, a chooser page). */
  href: string;
  /** One line under the button: what it connects, what is asked. */
  note?: string;
}

export interface ChannelsPage {
  hubUrl: string;
  now: Date;
  channels: ChannelStatusView[];
  total: number;
  connectActions: ConnectAction[];
  notice?: string;
}

const PLATFORM_NAMES: Record<string, string> = {
  facebook: 'Facebook Page',
  instagram: 'Instagram',
  google_business: 'Google Business Profile',
  linkedin: 'LinkedIn',
  x: 'X',
  tiktok: 'TikTok',
};
const PILL: Record<ChannelState, string> = { connected: 'live', needs_reconnect: 'revoked', failing: 'warn', sandbox: '' };
const WORDS: Record<ChannelState, string> = {
  connected: 'Connected',
  needs_reconnect: 'Needs reconnect',
  failing: 'Last publish failed',
  sandbox: 'Sandbox',
};

/** The Connect card: each network's action, or what to expect when this server has none. */
export function connectActionsCard(actions: ConnectAction[]): string {
  const body =
    actions.length === 0
      ? '<p class="muted" data-no-connect>No network can be connected on this server yet. Channels made through the API publish to the sandbox: nothing leaves hubops.</p>'
      : `<div class="actions">${actions
          .map(
            (a) =>
              `<div id="${h(a.id)}" data-connect-action><a class="button primary" href="${h(a.href)}">${h(a.label)}</a>${a.note ? `<br><small>${h(a.note)}</small>` : ''}</div>`,
          )
          .join('')}</div>`;
  return `<section class="card" aria-labelledby="connect-title"><h2 id="connect-title">Connect a network</h2>${body}</section>`;
}

function stateCell(c: ChannelStatusView, now: Date): string {
  const facts: [string, string][] = [['Last publish', c.lastPublishedAt ? agoTag(c.lastPublishedAt, now) : 'none yet']];
  if (c.failureMessage)
    facts.push([
      `Last error, in ${h(PLATFORM_NAMES[c.platform] ?? c.platform)}'s words`,
      `<q data-platform-message>${h(c.failureMessage)}</q>${c.failureCode ? ` <small>(code <code>${h(c.failureCode)}</code>)</small>` : ''}${c.failingSince ? ` <small>since ${agoTag(c.failingSince, now)}</small>` : ''}`,
    ]);
  if (c.tokenExpiresAt) {
    const day = `<strong>${h(c.tokenExpiresAt.toISOString().slice(0, 10))}</strong>`;
    facts.push([
      'Token expires',
      c.tokenExpiresSoon
        ? `<span class="token-warning" data-token-expires-soon>on ${day}: connect it again before then, or publishing stops</span>`
        : `on ${day}`,
    ]);
  }
  if (c.unconfirmed > 0)
    facts.push([
      'Being confirmed',
      `${counted(c.unconfirmed, 'post')} sent without an answer yet: looked up on the network, never sent twice`,
    ]);
  return `<span class="pill ${PILL[c.state]}" data-state="${h(c.state)}">${h(WORDS[c.state])}</span>
<p data-state-text>${h(c.stateText)}</p><dl class="pairs facts">${facts.map(([k, v]) => `<dt>${k}</dt><dd>${v}</dd>`).join('')}</dl>`;
}

/**
 * The handle beside the name, unless the name already is it: a channel connected through Meta is
 * named after its Instagram account ("@brewline.denver", handle "brewline.denver"), and showing
 * both said the same thing twice.
 */
function handleBesideName(c: ChannelStatusView): string | null {
  const bare = (text: string) => text.trim().replace(/^@/, '').toLowerCase();
  return c.handle && bare(c.handle) !== bare(c.name) ? c.handle : null;
}

export function channelsView(o: ChannelsPage): string {
  const rows = o.channels
    .map((c) => {
      const handle = handleBesideName(c);
      return `<tr data-channel="${h(c.id)}"><td data-label="Channel"><strong>${h(c.name)}</strong>${handle ? ` <small>${h(handle)}</small>` : ''}<br><small>${h(PLATFORM_NAMES[c.platform] ?? c.platform)}</small>${c.connectionLabel ? `<br><small>via ${h(c.connectionLabel)}</small>` : ''}</td>
<td data-label="Workspace">${h(c.workspaceName)}</td>
<td data-label="Status" class="wide">${stateCell(c, o.now)}</td></tr>`;
    })
    .join('');
  const list =
    o.total === 0
      ? '<p class="muted">No channels yet. Connect a network above, or create channels through the API.</p>'
      : `${o.total > o.channels.length ? `<p class="muted">Showing ${count(o.channels.length)} of ${count(o.total)} channels, those needing attention first.</p>` : ''}
<table class="stack channels"><thead><tr><th>Channel</th><th>Workspace</th><th>Status</th></tr></thead><tbody>${rows}</tbody></table>`;
  return `<h1>Manage Hub · Channels</h1>${manageTabs(o.hubUrl, 'channels')}${o.notice ? `<p class="notice" role="status">${h(o.notice)}</p>` : ''}
${connectActionsCard(o.connectActions)}
<section class="card" aria-labelledby="channels-title"><h2 id="channels-title">Workspace channels</h2>${list}</section>`;
}
