// The playbook opt-ins report: its filters, one page of opt-ins, the pager and the CSV link.
import { OPT_IN_STATUSES, type OptInRow } from '../../../domain/opt-ins/opt-in.ts';
import { escapeHtml as h } from '../../shared/html.ts';
import { statusLabel, when } from './layout.ts';

export interface OptInReportView {
  /** The report's own URL (without a query). */
  url: string;
  /** The filters as entered, and what is wrong with each (plus `cursor`: a stale page link). */
  values: Record<string, string>;
  errors: Record<string, string>;
  playbooks: { id: string; name: string }[];
  /** The hub's workspaces, or undefined when there are too many to choose from a list. */
  workspaces: { id: string; name: string }[] | undefined;
  rows: OptInRow[];
  valid: boolean;
  firstPage: boolean;
  nextCursor: string | null;
  pageSize: number;
}

/** `?a=1&b=2` from the filters (and `extra`), or '' when there are none. */
function filterQueryString(values: Record<string, string>, extra: Record<string, string> = {}): string {
  const s = new URLSearchParams({ ...values, ...extra }).toString();
  return s ? `?${s}` : '';
}

export function optInReportView(o: OptInReportView): string {
  const { url: u, values: v, errors } = o;
  const err = (k: string) => (errors[k] ? `<p class="field-error" id="${k}-error">${h(errors[k]!)}</p>` : '');
  const inv = (k: string) => (errors[k] ? ` class="invalid" aria-describedby="${k}-error"` : '');
  const workspaceField = o.workspaces
    ? `<select id="f-workspace" name="workspace"><option value="">All workspaces</option>${o.workspaces.map((w) => `<option value="${h(w.id)}"${v.workspace === w.id ? ' selected' : ''}>${h(w.name)}</option>`).join('')}</select>`
    : `<input id="f-workspace" name="workspace" placeholder="workspace id" value="${h(v.workspace ?? '')}">`;
  const filters = `<form method="get" action="${h(u)}" class="card" novalidate><div class="row">
<div><label for="f-playbook">Playbook</label><select id="f-playbook" name="playbook"><option value="">All playbooks</option>${o.playbooks.map((p) => `<option value="${h(p.id)}"${v.playbook === p.id ? ' selected' : ''}>${h(p.name)}</option>`).join('')}</select></div>
<div><label for="f-status">Status</label><select id="f-status" name="status"${inv('status')}><option value="">Any status</option>${OPT_IN_STATUSES.map((s) => `<option value="${s}"${v.status === s ? ' selected' : ''}>${h(statusLabel(s))}</option>`).join('')}</select>${err('status')}</div>
<div><label for="f-from">Opted in from</label><input id="f-from" name="from" type="date" value="${h(v.from ?? '')}"${inv('from')}>${err('from')}</div>
<div><label for="f-to">Opted in to</label><input id="f-to" name="to" type="date" value="${h(v.to ?? '')}"${inv('to')}>${err('to')}</div>
<div><label for="f-workspace">Workspace</label>${workspaceField}</div></div>
<div class="actions"><button class="primary" type="submit">Apply filters</button><a class="button" href="${h(u)}">Clear</a>
<a class="button" id="download-csv" href="${h(u)}.csv${h(filterQueryString(v))}" download>Download CSV</a></div>
<p class="muted"><small>The CSV holds every matching opt-in (not just this page), one row per opt-in, exactly as the Hub API returns them. Dates are UTC.</small></p></form>`;
  const table = o.rows.length
    ? `<table id="opt-ins"><thead><tr><th>Playbook</th><th>Workspace</th><th>Status</th><th>Opted in</th><th>Updated</th><th class="num">Budget</th></tr></thead><tbody>
${o.rows.map((r) => `<tr data-id="${h(r.id)}"><td>${h(r.playbook.name)}</td><td>${h(r.workspace.name)}</td><td><span class="pill${r.status === 'active' ? ' live' : ''}">${h(statusLabel(r.status))}</span></td>
<td>${h(when(r.optedInAt))}</td><td>${h(when(r.updatedAt))}</td><td class="num">${r.budgetCents === null ? '—' : `$${(r.budgetCents / 100).toFixed(2)}${r.budgetType ? ` <small>${h(r.budgetType)}</small>` : ''}`}</td></tr>`).join('')}</tbody></table>`
    : `<p class="muted">${o.valid ? 'No opt-ins match these filters.' : 'Fix the filters above to see opt-ins.'}</p>`;
  const pager = `<div class="pager">${o.firstPage ? '' : `<a class="button" href="${h(u + filterQueryString(v))}">First page</a>`}${o.nextCursor ? `<a class="button" rel="next" href="${h(u + filterQueryString(v, { cursor: o.nextCursor }))}">Next page</a>` : ''}</div>`;
  return `<h1>Playbook opt-ins</h1>${errors.cursor ? `<p class="notice">${h(errors.cursor)}</p>` : ''}${filters}<div class="card">${table}${pager}
<p class="muted"><small>Oldest change first, ${o.pageSize} per page.</small></p></div>`;
}
