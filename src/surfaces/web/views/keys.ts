// Manage Hub → API: the addresses, the hub's keys, the Create key form, the new key shown once,
// and the confirmation before a revocation.
import type { KeySummary } from '../../../domain/api-keys/api-key.repository.ts';
import { KEY_NAME_MAX_LENGTH } from '../../../domain/api-keys/api-key.ts';
import { escapeHtml as h } from '../../shared/html.ts';
import { when } from './layout.ts';

export interface KeyFormErrors {
  name?: string;
  scope?: string;
}

export interface ApiTabState {
  formToken: string;
  name?: string;
  scope?: string;
  errors?: KeyFormErrors;
  /** The key just made with a form token; its secret only the first time the page is shown. */
  created?: { keyId: string; key: string | undefined };
  notice?: string;
}

export function apiTabView(o: { baseUrl: string; hubUrl: string; csrf: string; keys: KeySummary[] }, state: ApiTabState): string {
  const { keys } = o;
  const u = o.hubUrl;
  const hubApi = `${o.baseUrl}/v1/hub`;
  const urls = [['API base URL', 'url-api', hubApi], ['OpenAPI spec URL', 'url-openapi', `${hubApi}/openapi.json`], ['MCP URL', 'url-mcp', `${hubApi}/mcp`]];
  const createdKey = state.created ? keys.find((k) => k.id === state.created!.keyId) : undefined;
  const reveal = state.created
    ? state.created.key
      ? `<div class="secret" role="alert" data-new-key><h2>Your new ${createdKey?.scope === 'embed' ? 'embed signing key' : 'key'} “${h(createdKey?.name ?? '')}”</h2>
<p><strong>Copy it now: it will not be shown again.</strong> ${createdKey?.scope === 'embed'
    ? 'This is the private key your server signs embed tokens with (Ed25519); hubops keeps only its public key. Store it in your server\'s secret settings; it must never reach a browser.'
    : 'hubops keeps only a fingerprint of it. Store it in the tool\'s secret settings, never in a page or a spreadsheet cell.'}</p>
<code id="new-key">${h(state.created.key)}</code><button type="button" class="primary" data-copy-target="new-key">Copy key</button>
<p><small>Key id (not secret; embed tokens name it as <code>kid</code>): <code>${h(state.created.keyId)}</code></small></p></div>`
      : `<p class="notice" role="status">The key “${h(createdKey?.name ?? '')}” was created and has already been shown once; it cannot be shown again. If you did not copy it, revoke it and create another.</p>`
    : '';
  const rows = keys.map((k) => `<tr data-key-id="${h(k.id)}"><td>${h(k.name)}<br><small>id <code>${h(k.id)}</code></small></td><td>${k.scope === 'read' ? 'read' : k.legacyEmbed ? 'embed <span class="pill revoked" title="Made before embed key pairs: anyone who can read hubops\'s database could sign with it. Create a new embed key and revoke this one.">legacy: replace</span>' : 'embed'}</td><td><code>${h(k.start)}…</code></td>
<td>${h(when(k.createdAt))}</td><td class="num" data-requests>${k.requestCount}</td><td>${h(when(k.lastUsedAt))}</td>
<td>${k.revokedAt ? `<span class="pill revoked">Revoked ${h(k.revokedAt.slice(0, 10))}</span>` : '<span class="pill live">Active</span>'}</td>
<td>${k.revokedAt ? '' : `<a class="button" href="${h(u)}/settings/api/keys/${encodeURIComponent(k.id)}/revoke">Revoke</a>`}</td></tr>`).join('');
  const e = state.errors ?? {};
  const scope = state.scope === 'embed' ? 'embed' : 'read';
  return `<h1>Manage Hub · API</h1>${state.notice ? `<p class="notice" role="status">${h(state.notice)}</p>` : ''}${reveal}
<div class="card"><h2>Addresses</h2><div class="urls">${urls.map(([label, id, value]) => `<span class="muted">${h(label!)}</span><code id="${id}">${h(value!)}</code><button type="button" data-copy-target="${id}">Copy</button>`).join('')}</div>
<p class="muted"><small>Every Hub API request sends <code>Authorization: Bearer &lt;key&gt;</code> from server-side code. AI assistants that cannot send a fixed header connect to <code>${h(o.baseUrl)}/mcp</code> with their own sign-in instead.</small></p></div>
<div class="card"><h2>Keys</h2>
<p>Give each tool its own key, named after it (“Looker dashboard”, “Zapier sync”). Then you can see which tool makes which requests, and revoke one integration without breaking the others.</p>
${keys.length ? `<table><thead><tr><th>Name</th><th>Scope</th><th>Key starts</th><th>Created</th><th class="num">Requests</th><th>Last used</th><th>State</th><th></th></tr></thead><tbody>${rows}</tbody></table>` : '<p class="muted">No keys yet.</p>'}
<p class="muted"><small>Request counts and last-use times are updated about every ten seconds.</small></p></div>
<div class="card"><h2>Create key</h2>
<form method="post" action="${h(u)}/settings/api/keys" data-once novalidate>
<input type="hidden" name="csrf" value="${h(o.csrf)}"><input type="hidden" name="form_token" value="${h(state.formToken)}">
<label for="key-name">Name</label><input id="key-name" name="name" maxlength="${KEY_NAME_MAX_LENGTH}" placeholder="e.g. Looker dashboard" value="${h(state.name ?? '')}"${e.name ? ' class="invalid" aria-describedby="name-error"' : ''}>
${e.name ? `<p class="field-error" id="name-error">${h(e.name)}</p>` : ''}
<label>Scope</label><div class="radio" role="radiogroup">
<label><input type="radio" name="scope" value="read"${scope === 'read' ? ' checked' : ''}> read — calls the Hub API</label>
<label><input type="radio" name="scope" value="embed"${scope === 'embed' ? ' checked' : ''}> embed — only signs embedded views</label></div>
${e.scope ? `<p class="field-error" id="scope-error">${h(e.scope)}</p>` : ''}
<div class="actions"><button class="primary" type="submit">Create key</button></div></form></div>`;
}

export function revokeKeyView(o: { apiTabUrl: string; csrf: string; key: KeySummary }): string {
  const { key } = o;
  const u = o.apiTabUrl;
  return `<div class="card"><h1>Revoke “${h(key.name)}”?</h1>
<p>The key <code>${h(key.start)}…</code> (${h(key.scope)}, ${key.requestCount} requests, last used ${h(when(key.lastUsedAt))}) will stop working immediately, everywhere. This cannot be undone: the tool that uses it will need a new key.</p>
<form method="post" action="${h(u)}/keys/${encodeURIComponent(key.id)}/revoke" data-once><input type="hidden" name="csrf" value="${h(o.csrf)}">
<div class="actions"><a class="button" href="${h(u)}">Cancel</a><button class="danger" type="submit">Yes, revoke this key</button></div></form></div>`;
}
