// Manage Hub → Ad accounts: the hub's ad accounts with their state in words a person can act on,
// Connect Meta (OAuth, or a pasted system-user token), Google Ads (OAuth) and ChatGPT Ads (a pasted
// API key), the account chooser that follows OAuth, Sync
// now, Disconnect (with what happens to past figures), each account's default workspace, and the unattributed spend, largest first,
// each line with a one-step "assign to workspace".
import { PLATFORM_NAMES, TOKEN_MAX_LENGTH, type AdAccountView, type UnattributedLine } from '../../../domain/ad-sync/ad-account.service.ts';
import type { AdPlatform } from '../../../db/schema.ts';
import type { PlatformAdAccount } from '../../../integrations/ad-platform.ts';
import { escapeHtml as h } from '../../shared/html.ts';
import { agoTag, moneyIn } from './format.ts';
import { manageTabs } from './layout.ts';

/** A pasted token is at most this long (Meta's are a few hundred characters). */

export interface AdAccountsPageState {
  notice?: string;
  /** The paste-token form's error, next to its field (the token itself is never shown again). */
  tokenError?: string;
  /** The API-key form's error (ChatGPT Ads), next to its field. */
  apiKeyError?: string;
  /** The unattributed line whose assignment failed, and why. */
  assignError?: { key: string; message: string };
}

export interface AdAccountsPage {
  hubUrl: string;
  csrf: string;
  now: Date;
  accounts: AdAccountView[];
  unattributed: UnattributedLine[];
  /** The hub's workspaces for the assign list; undefined when there are too many (then an id field). */
  workspaces: { id: string; name: string }[] | undefined;
  /** Whether the operator configured a Meta app (META_APP_ID, META_APP_SECRET): OAuth connect shown. */
  metaOAuth: boolean;
  /** Whether the operator configured a Google OAuth client (GOOGLE_OAUTH_CLIENT_ID/SECRET): Connect Google Ads shown. */
  googleOAuth: boolean;
}

const PILL: Record<AdAccountView['status'], string> = {
  connected: 'live',
  syncing: 'warn',
  rescheduled: 'warn',
  retrying: 'warn',
  never_synced: 'warn',
  needs_reconnect: 'revoked',
  missing_permission: 'revoked',
  failed: 'revoked',
  disconnected: '',
};

const STATUS_WORDS: Record<AdAccountView['status'], string> = {
  connected: 'Connected',
  syncing: 'Syncing',
  rescheduled: 'Rescheduled',
  retrying: 'Retrying',
  never_synced: 'Not synced yet',
  needs_reconnect: 'Needs reconnect',
  missing_permission: 'Missing permission',
  failed: 'Failed',
  disconnected: 'Disconnected',
};

/** Where each platform's Connect form is on the page (Reconnect links to it). */
const CONNECT_CARD: Record<AdPlatform, string> = { meta: 'connect', google_ads: 'connect-google', chatgpt_ads: 'connect-chatgpt' };

const platformName = (p: string) => PLATFORM_NAMES[p as AdPlatform] ?? p;

/**
 * What the admin reads about one account: the service's sentence (what to do, retries and
 * reschedules included), then the facts behind it, each labelled.
 */
function statusCell(a: AdAccountView, now: Date): string {
  const facts: [string, string][] = [
    ['Last complete sync', a.lastCompleteSyncAt ? agoTag(a.lastCompleteSyncAt, now) : 'none yet'],
    [
      'Complete through',
      a.completeThrough ? `<strong>${h(a.completeThrough)}</strong> <small>(the account's days; today is always partial)</small>` : '—',
    ],
  ];
  if (a.failureMessage)
    facts.push([`Last error, in ${h(platformName(a.platform))}'s words`, `<q data-platform-message>${h(a.failureMessage)}</q>`]);
  if (a.tokenExpiresAt && a.status !== 'disconnected') {
    const day = `<strong>${h(a.tokenExpiresAt.toISOString().slice(0, 10))}</strong>`;
    facts.push([
      'Token expires',
      a.tokenExpiresSoon
        ? `<span class="token-warning" data-token-expires-soon>on ${day}: connect it again before then, or syncing stops</span>`
        : `on ${day}`,
    ]);
  }
  return `<span class="pill ${PILL[a.status]}" data-status="${h(a.status)}">${h(STATUS_WORDS[a.status] ?? a.status)}</span>
<p data-status-text>${h(a.statusText)}</p><dl class="pairs facts">${facts.map(([k, v]) => `<dt>${k}</dt><dd>${v}</dd>`).join('')}</dl>`;
}

/** The account's default workspace (third rule of attribution), chosen or cleared in one step. */
function defaultWorkspaceForm(o: AdAccountsPage, a: AdAccountView, action: string, i: number): string {
  const id = `default-ws-${i}`;
  const current = a.defaultWorkspaceId ?? '';
  const field = o.workspaces
    ? `<select id="${id}" name="workspace"><option value=""${current === '' ? ' selected' : ''}>None: leave it unattributed</option>${o.workspaces.map((w) => `<option value="${h(w.id)}"${w.id === current ? ' selected' : ''}>${h(w.name)}</option>`).join('')}</select>`
    : `<input id="${id}" name="workspace" value="${h(current)}" placeholder="Workspace id, or empty for none">`;
  return `<form class="default-ws" method="post" action="${action}" data-once data-default-workspace><input type="hidden" name="csrf" value="${h(o.csrf)}">
<label for="${id}">Default workspace <small class="muted">(spend no assignment or [ws:…] token claims)</small></label>${field}<button type="submit">Save</button></form>`;
}

function accountRows(o: AdAccountsPage, accounts: AdAccountView[]): string {
  const u = o.hubUrl;
  return accounts
    .map((a, i) => {
      const base = `${h(u)}/settings/ad-accounts/${encodeURIComponent(a.id)}`;
      const live = a.status !== 'disconnected';
      const actions = live
        ? `<div class="actions">
<form method="post" action="${base}/sync" data-once><input type="hidden" name="csrf" value="${h(o.csrf)}"><button type="submit"${a.status === 'syncing' ? ' disabled title="A sync is running"' : ''}>Sync now</button></form>
${a.status === 'needs_reconnect' || a.status === 'missing_permission' || a.tokenExpiresSoon ? `<a class="button primary" href="#${CONNECT_CARD[a.platform]}">Reconnect</a>` : ''}
<a class="button" href="${base}/disconnect">Disconnect</a></div>`
        : '';
      return `<tr data-ad-account="${h(a.id)}"><td data-label="Account"><strong>${h(a.name)}</strong><br><small>${h(platformName(a.platform))} <code class="token">${h(a.externalId)}</code></small><br><small>${h(a.currency)} · ${h(a.timeZone)}</small></td>
<td data-label="Status" class="wide">${statusCell(a, o.now)}${live ? defaultWorkspaceForm(o, a, `${base}/default-workspace`, i) : ''}</td><td class="actions-cell">${actions}</td></tr>`;
    })
    .join('');
}

/** The line's key in the page (anchor and error placement): account, campaign, ad set. */
export const lineKey = (l: { adAccountId: string; campaignId: string; adSetId: string }) => `${l.adAccountId}|${l.campaignId}|${l.adSetId}`;

const REASONS: Record<string, string> = {
  no_match: 'No mapping, no [ws:…] token and no default workspace',
  unknown_workspace_token: 'Its [ws:…] token names no workspace of this hub',
};

function workspaceField(o: AdAccountsPage, id: string): string {
  if (o.workspaces) {
    return `<select id="${id}" name="workspace" required><option value="">Choose a workspace…</option>${o.workspaces.map((w) => `<option value="${h(w.id)}">${h(w.name)}</option>`).join('')}</select>`;
  }
  return `<input id="${id}" name="workspace" required placeholder="Workspace id, e.g. ws_…">`;
}

function unattributedCard(o: AdAccountsPage, state: AdAccountsPageState): string {
  const lines = o.unattributed;
  const rows = lines
    .map((l, i) => {
      const key = lineKey(l);
      const error = state.assignError?.key === key ? `<p class="field-error" role="alert">${h(state.assignError.message)}</p>` : '';
      return `<tr data-unattributed="${h(key)}"><td data-label="Campaign">${h(l.campaignName)}<br><small><code class="token">${h(l.campaignId)}</code></small></td>
<td data-label="Ad set">${h(l.adSetName)}<br><small><code class="token">${h(l.adSetId)}</code></small></td>
<td data-label="Account">${h(l.accountName)}</td>
<td data-label="Spend" class="num" data-spend-cents="${l.spendCents}">${h(moneyIn(l.spendCents, currencyOf(o, l.adAccountId)))}</td>
<td data-label="Why">${h(REASONS[l.reason] ?? l.reason)}</td>
<td class="actions-cell"><form class="assign" method="post" action="${h(o.hubUrl)}/settings/ad-accounts/assign" data-once>
<input type="hidden" name="csrf" value="${h(o.csrf)}"><input type="hidden" name="ad_account" value="${h(l.adAccountId)}"><input type="hidden" name="campaign" value="${h(l.campaignId)}"><input type="hidden" name="ad_set" value="${h(l.adSetId)}">
<label for="assign-ws-${i}">Assign to workspace</label>${workspaceField(o, `assign-ws-${i}`)}
<div class="radio" role="radiogroup" aria-label="What to assign"><label><input type="radio" name="level" value="ad_set" checked> this ad set</label><label><input type="radio" name="level" value="campaign"> the whole campaign</label></div>
${error}<button class="primary" type="submit">Assign</button></form></td></tr>`;
    })
    .join('');
  return `<div class="card" id="unattributed"><h2>Unattributed spend</h2>
<p>Spend that matched no workspace, largest first. Assign a campaign or ad set once: its past and future spend counts for that workspace at once, with nothing fetched again. Rules, first match wins: your assignment (ad set, then campaign), a <code>[ws:&lt;workspace id&gt;]</code> token in the ad set's name, then the campaign's, then the account's default workspace.</p>
${lines.length ? `<table class="stack unattributed"><thead><tr><th>Campaign</th><th>Ad set</th><th>Account</th><th class="num">Spend</th><th>Why</th><th><span class="muted">Assign</span></th></tr></thead><tbody>${rows}</tbody></table>` : '<p class="muted" data-no-unattributed>All synced spend is attributed to a workspace.</p>'}</div>`;
}

const currencyOf = (o: AdAccountsPage, adAccountId: string) => o.accounts.find((a) => a.id === adAccountId)?.currency ?? 'USD';

export function adAccountsView(o: AdAccountsPage, state: AdAccountsPageState = {}): string {
  const u = o.hubUrl;
  const live = o.accounts.filter((a) => a.status !== 'disconnected');
  const gone = o.accounts.filter((a) => a.status === 'disconnected');
  const table = (accounts: AdAccountView[], cls: string) =>
    `<table class="stack ad-accounts ${cls}"><thead><tr><th>Account</th><th>Status</th><th><span class="muted">Actions</span></th></tr></thead><tbody>${accountRows(o, accounts)}</tbody></table>`;
  // A link, not a form: the dialog is on Meta's origin, which the pages' CSP (form-action 'self')
  // would not let a form submission be redirected to. The state in it binds the answer to this session.
  const oauth = o.metaOAuth
    ? `<p>Sign in with Facebook and allow hubops to read your ads (<code>ads_read</code>, <code>business_management</code>); then choose the ad accounts to add.</p>
<div class="actions"><a class="button primary" href="${h(u)}/settings/ad-accounts/meta/connect" data-connect-meta>Connect Meta</a></div>`
    : '<p class="muted" data-no-oauth><small>Signing in with Facebook is not set up on this server (the operator sets META_APP_ID and META_APP_SECRET). You can still paste a system-user token.</small></p>';
  const e = state.tokenError;
  const k = state.apiKeyError;
  const google = o.googleOAuth
    ? `<p>Sign in with Google and allow hubops to see your Google Ads data (<code>adwords</code>, offline access); then choose the accounts to add. Accounts you reach through a manager account are listed too.</p>
<div class="actions"><a class="button primary" href="${h(u)}/settings/ad-accounts/google/connect" data-connect-google>Connect Google Ads</a></div>`
    : '<p class="muted" data-no-google><small>Google Ads is not set up on this server (the operator sets GOOGLE_OAUTH_CLIENT_ID and GOOGLE_OAUTH_CLIENT_SECRET).</small></p>';
  return `<h1>Manage Hub · Ad accounts</h1>${manageTabs(u, 'ad-accounts')}${state.notice ? `<p class="notice" role="status">${h(state.notice)}</p>` : ''}
<div class="card"><h2>Ad accounts</h2>
<p>Spend syncs by itself about every hour, in UTC days. An account that needs you says so here.</p>
${live.length ? table(live, 'live') : '<p class="muted" data-no-accounts>No ad account is connected yet: connect one below, and its spend arrives by itself.</p>'}
${gone.length ? `<details class="disconnected"><summary>Disconnected accounts (${gone.length})</summary><p class="muted"><small>Their past figures stay in the reports; they no longer sync and no longer count toward how fresh the figures are.</small></p>${table(gone, 'gone')}</details>` : ''}</div>
<div class="card" id="connect"><h2>Connect Meta</h2>${oauth}
<form method="post" action="${h(u)}/settings/ad-accounts/token" data-once novalidate><input type="hidden" name="csrf" value="${h(o.csrf)}">
<label for="meta-token">Or paste a system-user token</label>
<p class="muted"><small>Business Manager → Business settings → System users → Generate token, with <code>ads_read</code>. hubops keeps it encrypted and never shows it again.</small></p>
<input id="meta-token" name="token" type="password" autocomplete="off" spellcheck="false" maxlength="${TOKEN_MAX_LENGTH}"${e ? ' class="invalid" aria-describedby="token-error"' : ''}>
${e ? `<p class="field-error" id="token-error" role="alert">${h(e)}</p>` : ''}
<div class="actions"><button type="submit">Use this token</button></div></form></div>
<div class="card" id="connect-google"><h2>Connect Google Ads</h2>${google}</div>
<div class="card" id="connect-chatgpt"><h2>Connect ChatGPT Ads</h2>
<form method="post" action="${h(u)}/settings/ad-accounts/api-key" data-once novalidate><input type="hidden" name="csrf" value="${h(o.csrf)}">
<label for="chatgpt-key">The ad account's API key</label>
<p class="muted"><small>ChatGPT Ads has no sign-in for apps: each ad account has its own API key (Ads Manager → Settings → API keys). One key connects one account. hubops keeps it encrypted and never shows it again.</small></p>
<input id="chatgpt-key" name="key" type="password" autocomplete="off" spellcheck="false" maxlength="${TOKEN_MAX_LENGTH}"${k ? ' class="invalid" aria-describedby="key-error"' : ''}>
${k ? `<p class="field-error" id="key-error" role="alert">${h(k)}</p>` : ''}
<div class="actions"><button type="submit">Connect this account</button></div></form></div>
${unattributedCard(o, state)}`;
}

const NO_ACCOUNTS: Record<AdPlatform, string> = {
  meta: 'The token works, but it can read no ad account. Give the user or system user access to the ad accounts in Business Manager, then connect again.',
  google_ads:
    'Google accepted the sign-in, but that Google user can reach no Google Ads account. Add the user to an account (or its manager account) in Google Ads → Admin → Access and security, then connect again.',
  chatgpt_ads: 'The API key works, but it reads no ad account.',
};

/** The chooser after Connect (or Reconnect): the accounts the token can read, the ones already connected marked. */
export function chooseAccountsView(o: {
  hubUrl: string;
  csrf: string;
  pending: string;
  platform: AdPlatform;
  accounts: PlatformAdAccount[];
  connected: Set<string>;
  error?: string;
}): string {
  const u = o.hubUrl;
  const rows = o.accounts
    .map((a, i) => {
      const already = o.connected.has(a.externalId);
      // A connected account can be chosen again: that is how it is reconnected (it keeps its synced days).
      return `<li><label class="check"><input type="checkbox" name="account" value="${h(a.externalId)}" id="acct-${i}">
<span><strong>${h(a.name)}</strong> <code class="token">${h(a.externalId)}</code><br><small>${h(a.currency)} · ${h(a.timeZone)}${a.accessVia ? ` · through manager account <code class="token">${h(a.accessVia)}</code>` : ''}${a.active ? '' : ` · not active on ${h(platformName(o.platform))} (${h(a.status)})`}${already ? ' · <span data-already>already connected: choose it to reconnect it with this token</span>' : ''}</small></span></label></li>`;
    })
    .join('');
  return `<div class="card"><h1>Choose ad accounts</h1>
${o.error ? `<p class="error" role="alert">${h(o.error)}</p>` : ''}
${
  o.accounts.length
    ? `<p>These are the ad accounts the token can read. Choose the ones whose spend belongs to this hub; each syncs on its own, ${h(String(o.accounts.length))} found.</p>
<form method="post" action="${h(u)}/settings/ad-accounts/choose" data-once><input type="hidden" name="csrf" value="${h(o.csrf)}"><input type="hidden" name="pending" value="${h(o.pending)}">
<ul class="choices">${rows}</ul>
<label for="conn-label">Name this connection (optional)</label><input id="conn-label" name="label" maxlength="200" placeholder="e.g. Agency system user">
<div class="actions"><a class="button" href="${h(u)}/settings/ad-accounts">Cancel</a><button class="primary" type="submit">Add accounts</button></div></form>`
    : `<p>${h(NO_ACCOUNTS[o.platform])}</p><p><a class="button" href="${h(u)}/settings/ad-accounts">Back to Ad accounts</a></p>`
}</div>`;
}

export function disconnectView(o: { hubUrl: string; csrf: string; account: AdAccountView }): string {
  const { account: a } = o;
  const u = `${o.hubUrl}/settings/ad-accounts`;
  return `<div class="card"><h1>Disconnect “${h(a.name)}”?</h1>
<p>hubops stops syncing <code class="token">${h(a.externalId)}</code> and erases its access token.</p>
<ul><li><strong>Past figures stay:</strong> the spend already synced remains in the spend report, the Hub API and the dashboard, attributed as it is now.</li>
<li>The account <strong>no longer counts toward freshness</strong>: the reports stop waiting for it, so it can never make them stale or failed.</li>
<li>To sync it again later, connect it again.</li></ul>
<form method="post" action="${h(u)}/${encodeURIComponent(a.id)}/disconnect" data-once><input type="hidden" name="csrf" value="${h(o.csrf)}">
<div class="actions"><a class="button" href="${h(u)}">Cancel</a><button class="danger" type="submit">Yes, disconnect</button></div></form></div>`;
}
