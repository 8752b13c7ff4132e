// The hub's home page: what the signed-in user is in this hub, and (for its admins) the way in.
import type { Membership } from '../../../domain/web-sessions/web-session.service.ts';
import { escapeHtml as h } from '../../shared/html.ts';

export function hubHomeView(hub: Membership, hubUrl: string): string {
  const admin = hub.role === 'hub_admin';
  return `<div class="card"><h1>${h(hub.hubName)}</h1>
<p>You are ${admin ? 'a <strong>hub administrator</strong> of this hub' : `a <strong>member</strong> of this hub${hub.workspaceName ? ` in the workspace <strong>${h(hub.workspaceName)}</strong>` : ''}`}.</p>
${admin ? `<ul><li><a href="${h(hubUrl)}/opt-ins">Playbook opt-ins report</a> — filter, page through and download every workspace's opt-ins as CSV.</li>
<li><a href="${h(hubUrl)}/spend">Spend dashboard</a> — paid ad spend per workspace for today, yesterday, the last 7 and 30 days.</li>
<li><a href="${h(hubUrl)}/settings/api">Manage Hub → API</a> — API keys for dashboards, spreadsheets, automation and AI tools.</li></ul>`
  : '<p class="muted">Hub-wide reports and API keys are managed by the hub\'s administrators.</p>'}</div>`;
}
