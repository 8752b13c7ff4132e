// The hub's home page: what the signed-in user is in this hub, and the ways in from here.
import type { Membership } from '../../../domain/web-sessions/web-session.service.ts';
import { escapeHtml as h } from '../../shared/html.ts';

const link = (href: string, title: string, what: string) => `<li><a href="${h(href)}">${h(title)}<small>${h(what)}</small></a></li>`;

export function hubHomeView(hub: Membership, hubUrl: string, appUrl: string): string {
  const admin = hub.role === 'hub_admin';
  const connected = link(
    `${appUrl}/connected-apps`,
    'Connected apps',
    'The apps and AI assistants you allowed to use hubops on your behalf; revoke any of them.',
  );
  return `<div class="card"><h1>${h(hub.hubName)}</h1>
<p>You are ${admin ? 'a <strong>hub administrator</strong> of this hub' : `a <strong>member</strong> of this hub${hub.workspaceName ? ` in the workspace <strong>${h(hub.workspaceName)}</strong>` : ''}`}.</p>
${
  admin
    ? `<ul class="links">${link(`${hubUrl}/opt-ins`, 'Playbook opt-ins report', "Filter, sort, page through and download every workspace's opt-ins as CSV.")}
${link(`${hubUrl}/spend`, 'Spend dashboard', 'Paid ad spend per workspace for today, yesterday, the last 7 and 30 days.')}
${link(`${hubUrl}/settings/api`, 'Manage Hub → API', 'API keys for dashboards, spreadsheets, automation and AI tools.')}
${connected}</ul>`
    : `<p class="muted">Hub-wide reports and API keys are managed by the hub's administrators.</p><ul class="links">${connected}</ul>`
}</div>`;
}
