// Manage Hub → API: the addresses, the hub's keys (state, expiry, requests and unchanged answers per day), the Create key
// form, the new key shown once, and the confirmations before a roll and a revocation.
import type { DailyKeyUsage, KeySummary } from '../../../domain/api-keys/api-key.service.ts';
import { KEY_NAME_MAX_LENGTH, keyState, predecessorsStillWorking } from '../../../domain/api-keys/api-key.ts';
import { KEY_LIFETIME_DAYS, KEY_ROLL_GRACE_DEFAULT_MS, KEY_ROLL_GRACE_MS } from '../../../policy.ts';
import { escapeHtml as h } from '../../shared/html.ts';
import { count, counted, when } from './format.ts';
import { manageTabs } from './layout.ts';

export interface KeyFormErrors {
  name?: string;
  scope?: string;
  expires?: string;
}

export interface ApiTabState {
  formToken: string;
  name?: string;
  scope?: string;
  /** The expiry field as sent: `never` or a number of days. */
  expires?: string;
  errors?: KeyFormErrors;
  /** The key just made with a form token; its secret only the first time the page is shown. */
  created?: { keyId: string; key: string | undefined };
  notice?: string;
}

const BAR = 5;
const CHART_HEIGHT = 28;

/** The unchanged (304) part of a bar: the bar's colour, lighter (an SVG attribute, which the page's CSP allows). */
const UNCHANGED_OPACITY = '0.4';

const UNCHANGED_HELP =
  'Requests from a tool that already had the latest data: hubops answered 304 Not Modified and sent nothing again. They are free: they do not count against the rate limit.';

/**
 * A key's requests per day as a bar chart: inline SVG, no script. Its text alternative (the
 * period, the total, the unchanged answers, the busiest day) is its accessible name; each bar's
 * date and counts are its tooltip. A day's unchanged (304) answers are the lighter top of its bar.
 */
function dailyChart(days: string[], counts: number[] | undefined, unchanged: number[] | undefined): string {
  const series = counts ?? days.map(() => 0);
  const total = series.reduce((a, b) => a + b, 0);
  const totalUnchanged = (unchanged ?? []).reduce((a, b) => a + b, 0);
  const peak = Math.max(...series);
  const busiest = series.indexOf(peak);
  const label = `Requests per day, ${days[0]} to ${days.at(-1)} (UTC): ${counted(total, 'request')}${totalUnchanged ? ` (${count(totalUnchanged)} unchanged, 304)` : ''}${total ? `, most on ${days[busiest]} (${count(peak)})` : ''}.`;
  const bars = series
    .map((n, i) => {
      const height = n === 0 ? 0 : Math.max(2, Math.round((n / peak) * (CHART_HEIGHT - 2)));
      const x = `x="${i * BAR}" width="${BAR - 1}"`;
      const free = unchanged?.[i] ?? 0;
      if (free === 0)
        return `<rect class="${n ? 'bar' : 'prior'}" ${x} y="${CHART_HEIGHT - Math.max(height, 1)}" height="${Math.max(height, 1)}"><title>${days[i]}: ${count(n)}</title></rect>`;
      // At least a pixel each for the counted part and the unchanged part, so a small share still shows.
      const top = Math.min(height - (free < n ? 1 : 0), Math.max(1, Math.round((free / n) * height)));
      const charged = height - top;
      return `<g><title>${days[i]}: ${count(n)}, ${count(free)} unchanged (304)</title>${charged ? `<rect class="bar" ${x} y="${CHART_HEIGHT - charged}" height="${charged}"/>` : ''}<rect class="bar" fill-opacity="${UNCHANGED_OPACITY}" ${x} y="${CHART_HEIGHT - height}" height="${top}"/></g>`;
    })
    .join('');
  return `<svg class="chart spark" role="img" aria-label="${h(label)}" width="${days.length * BAR}" height="${CHART_HEIGHT}" viewBox="0 0 ${days.length * BAR} ${CHART_HEIGHT}"><title>${h(label)}</title>${bars}</svg>`;
}

/** The state: a short pill (active, rolled, expired, revoked), and for a rolled or expired key when and by what. */
function stateCell(k: KeySummary, keys: KeySummary[], now: Date): string {
  const state = keyState(k, now);
  const successor = k.replacedBy ? keys.find((s) => s.id === k.replacedBy) : undefined;
  const by = successor ? `<br><small>replaced by <code class="token">${h(successor.start)}…</code></small>` : '';
  if (state === 'revoked') return `<span class="pill revoked">Revoked</span><br><small>${h(when(k.revokedAt))}</small>`;
  if (state === 'expired')
    return `<span class="pill revoked">Expired</span><br><small>${k.replacedBy ? 'rolled, ended' : 'on'} ${h(when(k.expiresAt))}</small>${by}`;
  if (state === 'rolled') return `<span class="pill warn">Rolled</span><br><small>valid until ${h(when(k.expiresAt))}</small>${by}`;
  return '<span class="pill live">Active</span>';
}

function revealOf(state: ApiTabState, keys: KeySummary[]): string {
  if (!state.created) return '';
  const createdKey = keys.find((k) => k.id === state.created!.keyId);
  if (!state.created.key) {
    return `<p class="notice" role="status">The key “${h(createdKey?.name ?? '')}” was created and has already been shown once; it cannot be shown again. If you did not copy it, revoke it and create another.</p>`;
  }
  const replaced = keys.find((k) => k.replacedBy === state.created!.keyId);
  const rolled = replaced
    ? `<p>This key replaces <code class="token">${h(replaced.start)}…</code>, which ${replaced.expiresAt && replaced.expiresAt <= (createdKey?.createdAt ?? '') ? 'stopped working at once' : `keeps working until ${h(when(replaced.expiresAt))}`}. Put the new key in the tool before then.</p>`
    : '';
  return `<div class="secret" role="alert" data-new-key><h2>Your new ${createdKey?.scope === 'embed' ? 'embed signing key' : 'key'} “${h(createdKey?.name ?? '')}”</h2>
<p><strong>Copy it now: it will not be shown again.</strong> ${
    createdKey?.scope === 'embed'
      ? "This is the private key your server signs embed tokens with (Ed25519); hubops keeps only its public key. Store it in your server's secret settings; it must never reach a browser."
      : "hubops keeps only a fingerprint of it. Store it in the tool's secret settings, never in a page or a spreadsheet cell."
  }</p>${rolled}
<code id="new-key">${h(state.created.key)}</code><button type="button" class="primary" data-copy-target="new-key">Copy key</button>
<p><small>Key id (not secret; embed tokens name it as <code>kid</code>): <code class="token">${h(state.created.keyId)}</code>${createdKey?.expiresAt ? `. Expires ${h(when(createdKey.expiresAt))}` : ''}</small></p></div>`;
}

/** A key's requests, and for a read key how many were answered 304 (free against the limit), over its chart. */
function requestsCell(k: KeySummary, usage: DailyKeyUsage): string {
  const unchanged =
    k.scope === 'read'
      ? `<br><small data-not-modified title="${h(UNCHANGED_HELP)}">${count(k.notModifiedCount)} unchanged (304), not counted against the limit</small>`
      : '';
  return `<span data-requests>${count(k.requestCount)}</span> in all${unchanged}<br>${dailyChart(usage.days, usage.counts.get(k.id), usage.notModified.get(k.id))}`;
}

export function apiTabView(
  o: { baseUrl: string; hubUrl: string; csrf: string; keys: KeySummary[]; usage: DailyKeyUsage; now: Date },
  state: ApiTabState,
): string {
  const { keys, now } = o;
  const u = o.hubUrl;
  const hubApi = `${o.baseUrl}/v1/hub`;
  const urls = [
    ['API base URL', 'url-api', hubApi],
    ['OpenAPI spec URL', 'url-openapi', `${hubApi}/openapi.json`],
    ['MCP URL', 'url-mcp', `${hubApi}/mcp`],
  ];
  const keyUrl = (k: KeySummary, action: string) => `${h(u)}/settings/api/keys/${encodeURIComponent(k.id)}/${action}`;
  const rows = keys
    .map((k) => {
      const state = keyState(k, now);
      const actions = [
        state === 'active' && k.scope !== 'embed' ? `<a class="button" href="${keyUrl(k, 'roll')}">Roll</a>` : '',
        state === 'active' || state === 'rolled' ? `<a class="button" href="${keyUrl(k, 'revoke')}">Revoke</a>` : '',
      ].join('');
      return `<tr data-key-id="${h(k.id)}" data-state="${state}"><td data-label="Name">${h(k.name)}<br><small>id <code class="token">${h(k.id)}</code></small></td>
<td data-label="Scope">${k.scope === 'read' ? 'read' : k.legacyEmbed ? 'embed <span class="pill revoked" title="Made before embed key pairs: anyone who can read hubops\'s database could sign with it. Create a new embed key and revoke this one.">legacy: replace</span>' : 'embed'}</td>
<td data-label="Key starts"><code class="token">${h(k.start)}…</code></td>
<td data-label="Created">${h(when(k.createdAt))}<br><small data-expires>${k.expiresAt ? `expires ${h(when(k.expiresAt))}` : 'never expires'}</small></td>
<td data-label="Requests">${requestsCell(k, o.usage)}</td>
<td data-label="Last used">${h(when(k.lastUsedAt))}</td>
<td data-label="State">${stateCell(k, keys, now)}</td><td class="actions-cell">${actions ? `<div class="actions">${actions}</div>` : ''}</td></tr>`;
    })
    .join('');
  const e = state.errors ?? {};
  const scope = state.scope === 'embed' ? 'embed' : 'read';
  const expires = state.expires ?? 'never';
  const lifetimes = [['never', 'Never'], ...KEY_LIFETIME_DAYS.map((d) => [String(d), `In ${d} days`])];
  // A form sent back with an error (or expired) comes first, under the notice: at 390 px it sat
  // thousands of pixels below the top of the page, where nobody saw why nothing happened.
  const retry = state.errors !== undefined || state.name !== undefined;
  const firstInvalid = e.name ? 'name' : e.scope ? 'scope' : e.expires ? 'expires' : undefined;
  const focus = (field: string) => (firstInvalid === field ? ' autofocus' : '');
  const createCard = `<div class="card" id="create-key"><h2>Create key</h2>
<form method="post" action="${h(u)}/settings/api/keys" data-once novalidate>
<input type="hidden" name="csrf" value="${h(o.csrf)}"><input type="hidden" name="form_token" value="${h(state.formToken)}">
<label for="key-name">Name</label><input id="key-name" name="name" maxlength="${KEY_NAME_MAX_LENGTH}" placeholder="e.g. Looker dashboard" value="${h(state.name ?? '')}"${e.name ? ' class="invalid" aria-describedby="name-error"' : ''}${focus('name')}>
${e.name ? `<p class="field-error" id="name-error">${h(e.name)}</p>` : ''}
<label>Scope</label><div class="radio" role="radiogroup">
<label><input type="radio" name="scope" value="read"${scope === 'read' ? ' checked' : ''}${focus('scope')}> read — calls the Hub API</label>
<label><input type="radio" name="scope" value="embed"${scope === 'embed' ? ' checked' : ''}> embed — only signs embedded views</label></div>
${e.scope ? `<p class="field-error" id="scope-error">${h(e.scope)}</p>` : ''}
<label for="key-expires">Expires</label><select id="key-expires" name="expires_in_days"${e.expires ? ' class="invalid" aria-describedby="expires-error"' : ''}${focus('expires')}>${lifetimes.map(([value, text]) => `<option value="${value}"${value === expires ? ' selected' : ''}>${text}</option>`).join('')}</select>
${e.expires ? `<p class="field-error" id="expires-error">${h(e.expires)}</p>` : ''}
<div class="actions"><button class="primary" type="submit">Create key</button></div></form></div>`;
  return `<h1>Manage Hub · API</h1>${manageTabs(u, 'api')}${state.notice ? `<p class="notice" role="status">${h(state.notice)}</p>` : ''}${revealOf(state, keys)}${retry ? createCard : ''}
<div class="card"><h2>Addresses</h2><div class="urls">${urls.map(([label, id, value]) => `<span class="muted">${h(label!)}</span><code id="${id}">${h(value!)}</code><button type="button" data-copy-target="${id}">Copy</button>`).join('')}</div>
<p class="muted"><small>Every Hub API request sends <code>Authorization: Bearer &lt;key&gt;</code> from server-side code. AI assistants that cannot send a fixed header connect to <code>${h(o.baseUrl)}/mcp</code> with their own sign-in instead.</small></p></div>
<div class="card"><h2>Keys</h2>
<p>Give each tool its own key, named after it (“Looker dashboard”, “Zapier sync”). Then you can see which tool makes which requests, and revoke one integration without breaking the others. Roll a key to replace its secret: the old one keeps working for the grace period you choose.</p>
<p><a class="button primary" href="#create-key">Create key</a></p>
${keys.length ? `<table class="stack keys"><thead><tr><th>Name</th><th>Scope</th><th>Key starts</th><th>Created</th><th>Requests (last 30 days)</th><th>Last used</th><th>State</th><th><span class="muted">Actions</span></th></tr></thead><tbody>${rows}</tbody></table>` : '<p class="muted">No keys yet.</p>'}
<p class="muted"><small>Request counts, daily requests (UTC days) and last-use times are updated about every ten seconds.
<strong>Unchanged (304)</strong>: requests from a tool that already had the latest data, answered “304 Not Modified” without sending it again. They are free: they do not count against the rate limit. In the chart they are the lighter top of each day’s bar.</small></p></div>
${retry ? '' : createCard}`;
}

const graceText = (ms: number) => (ms === 0 ? 'Stop at once' : `For ${ms / 3_600_000} hour${ms === 3_600_000 ? '' : 's'}`);

export function rollKeyView(o: { apiTabUrl: string; csrf: string; formToken: string; key: KeySummary; notice?: string }): string {
  const { key } = o;
  const u = o.apiTabUrl;
  return `<div class="card"><h1>Roll “${h(key.name)}”?</h1>${o.notice ? `<p class="notice" role="status">${h(o.notice)}</p>` : ''}
<p>A new ${h(key.scope)} key with the same name replaces <code class="token">${h(key.start)}…</code>; ${
    key.expiresAt
      ? `like this one, it expires ${Math.round((Date.parse(key.expiresAt) - Date.parse(key.createdAt)) / 86_400_000)} days after its creation`
      : 'like this one, it never expires'
  }. It is shown once, on the next page. The old secret keeps working for the grace period you choose, so the tool can switch without an outage; then it stops working.</p>
<form method="post" action="${h(u)}/keys/${encodeURIComponent(key.id)}/roll" data-once>
<input type="hidden" name="csrf" value="${h(o.csrf)}"><input type="hidden" name="form_token" value="${h(o.formToken)}">
<label for="grace">Old secret keeps working</label><select id="grace" name="grace_hours">${KEY_ROLL_GRACE_MS.map((ms) => `<option value="${ms / 3_600_000}"${ms === KEY_ROLL_GRACE_DEFAULT_MS ? ' selected' : ''}>${graceText(ms)}</option>`).join('')}</select>
<div class="actions"><a class="button" href="${h(u)}">Cancel</a><button class="primary" type="submit">Roll key</button></div></form></div>`;
}

export function revokeKeyView(o: { apiTabUrl: string; csrf: string; key: KeySummary; keys: KeySummary[]; now: Date }): string {
  const { key } = o;
  const u = o.apiTabUrl;
  const older = predecessorsStillWorking(key.id, o.keys, o.now);
  const successor = keyState(key, o.now) === 'rolled' ? o.keys.find((k) => k.id === key.replacedBy) : undefined;
  const alsoEnds = older.length
    ? `<p data-also-ends>The old secret${older.length > 1 ? 's' : ''} it replaced, ${older.map((k) => `<code class="token">${h(k.start)}…</code> (valid until ${h(when(k.expiresAt))})`).join(' and ')}, stop${older.length > 1 ? '' : 's'} working with it.</p>`
    : '';
  const staysValid = successor
    ? `<p data-stays-valid>This is the old secret of a rolled key: only it stops working, now instead of ${h(when(key.expiresAt))}. The key that replaced it, <code class="token">${h(successor.start)}…</code>, keeps working; revoke that one to stop the tool altogether (it ends this one too).</p>`
    : '';
  return `<div class="card"><h1>Revoke “${h(key.name)}”?</h1>
<p>The key <code class="token">${h(key.start)}…</code> (${h(key.scope)}, ${counted(key.requestCount, 'request')}, last used ${h(when(key.lastUsedAt))}) will stop working immediately, everywhere. This cannot be undone: the tool that uses it will need a new key.</p>${alsoEnds}${staysValid}
<form method="post" action="${h(u)}/keys/${encodeURIComponent(key.id)}/revoke" data-once><input type="hidden" name="csrf" value="${h(o.csrf)}">
<div class="actions"><a class="button" href="${h(u)}">Cancel</a><button class="danger" type="submit">Yes, revoke this key</button></div></form></div>`;
}

/** The API tab's notice after a revocation: what stopped working (the old secrets that ended with the key too). */
export function revokedNotice(keyId: string, keys: readonly KeySummary[]): string {
  const key = keys.find((k) => k.id === keyId);
  const endedWith: KeySummary[] = [];
  for (let current = keys.find((k) => k.replacedBy === keyId); current; current = keys.find((k) => k.replacedBy === current!.id)) {
    if (key?.revokedAt && current.revokedAt === key.revokedAt) endedWith.push(current);
  }
  return endedWith.length
    ? `The key was revoked, and with it the old secret${endedWith.length > 1 ? 's' : ''} it replaced (${endedWith.map((k) => `${k.start}…`).join(', ')}), which ${endedWith.length > 1 ? 'were' : 'was'} still in the grace period. Requests with any of them are refused from now on.`
    : 'The key was revoked. Requests with it are refused from now on.';
}
