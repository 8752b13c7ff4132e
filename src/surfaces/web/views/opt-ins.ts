// The playbook opt-ins report: its filters, the total, one page of opt-ins sorted by a column,
// previous/next, and the CSV link.
import type { OptInReportRow } from '../../../domain/opt-ins/opt-in.service.ts';
import { OPT_IN_STATUSES, type OptInReportSort } from '../../../domain/opt-ins/opt-in.ts';
import { escapeHtml as h } from '../../shared/html.ts';
import { counted, money, when } from './format.ts';
import { statusLabel } from './layout.ts';

export interface ReportOrder {
  sort: OptInReportSort;
  descending: boolean;
}

export interface OptInReportView {
  /** The report's own URL (without a query). */
  url: string;
  /** The filters as entered, and what is wrong with each. */
  values: Record<string, string>;
  errors: Record<string, string>;
  /** What was wrong with the sort or the page asked for, and what is shown instead. */
  notices: string[];
  playbooks: { id: string; name: string }[];
  /** The hub's workspaces, or undefined when there are too many to choose from a list. */
  workspaces: { id: string; name: string }[] | undefined;
  rows: OptInReportRow[];
  /** Matching opt-ins; undefined while the filters are invalid. */
  total: number | undefined;
  order: ReportOrder;
  page: number;
  pageSize: number;
}

const COLUMNS: { sort: OptInReportSort; label: string; first: 'asc' | 'desc' }[] = [
  { sort: 'playbook', label: 'Playbook', first: 'asc' },
  { sort: 'workspace', label: 'Workspace', first: 'asc' },
  { sort: 'status', label: 'Status', first: 'asc' },
  { sort: 'opted_in', label: 'Opted in', first: 'desc' },
  { sort: 'updated', label: 'Updated', first: 'desc' },
];

const ORDER_WORDS: Record<OptInReportSort, [string, string]> = {
  playbook: ['playbook A–Z', 'playbook Z–A'],
  workspace: ['workspace A–Z', 'workspace Z–A'],
  status: ['status, in lifecycle order (pending first)', 'status, in reverse lifecycle order'],
  opted_in: ['opted in, oldest first', 'opted in, newest first'],
  updated: ['last update, oldest first', 'last update, newest first'],
};

/** `?a=1&b=2` from the filters, the order and `extra`, or '' when there are none. */
function queryString(values: Record<string, string>, extra: Record<string, string> = {}): string {
  const s = new URLSearchParams({ ...values, ...extra }).toString();
  return s ? `?${s}` : '';
}

export function optInReportView(o: OptInReportView): string {
  const { url: u, values: v, errors, order } = o;
  const orderParams = { sort: order.sort, dir: order.descending ? 'desc' : 'asc' };
  const err = (k: string) => (errors[k] ? `<p class="field-error" id="${k}-error">${h(errors[k]!)}</p>` : '');
  const invalid = (k: string) => (errors[k] ? ` class="invalid" aria-describedby="${k}-error"` : '');
  // Text, not type="date": a date input shows the browser's locale (mm/dd/yyyy); this one is ISO
  // everywhere. The numeric keypad has no "-", so 20261124 (ISO 8601 basic) is accepted too.
  const dateInput = (name: 'from' | 'to') =>
    `<input id="f-${name}" name="${name}" type="text" inputmode="numeric" autocomplete="off" maxlength="10" placeholder="YYYY-MM-DD" value="${h(v[name] ?? '')}"${invalid(name) || ' aria-describedby="date-hint"'}>`;
  const workspaceField = o.workspaces
    ? `<select id="f-workspace" name="workspace"><option value="">All workspaces</option>${o.workspaces.map((w) => `<option value="${h(w.id)}"${v.workspace === w.id ? ' selected' : ''}>${h(w.name)}</option>`).join('')}</select>`
    : `<input id="f-workspace" name="workspace" placeholder="workspace id" value="${h(v.workspace ?? '')}">`;
  const filters = `<form method="get" action="${h(u)}" class="card" novalidate><div class="row">
<div><label for="f-playbook">Playbook</label><select id="f-playbook" name="playbook"><option value="">All playbooks</option>${o.playbooks.map((p) => `<option value="${h(p.id)}"${v.playbook === p.id ? ' selected' : ''}>${h(p.name)}</option>`).join('')}</select></div>
<div><label for="f-status">Status</label><select id="f-status" name="status"${invalid('status')}><option value="">Any status</option>${OPT_IN_STATUSES.map((s) => `<option value="${s}"${v.status === s ? ' selected' : ''}>${h(statusLabel(s))}</option>`).join('')}</select>${err('status')}</div>
<div><label for="f-from">Opted in from</label>${dateInput('from')}${err('from')}</div>
<div><label for="f-to">Opted in to</label>${dateInput('to')}${err('to')}</div>
<div><label for="f-workspace">Workspace</label>${workspaceField}</div></div>
<p class="muted" id="date-hint"><small>Dates as YYYY-MM-DD (UTC), both ends included.</small></p>
<div class="row"><div><label for="f-sort">Sort by</label><select id="f-sort" name="sort">${COLUMNS.map((c) => `<option value="${c.sort}"${c.sort === order.sort ? ' selected' : ''}>${h(c.label)}</option>`).join('')}</select></div>
<div><label for="f-dir">Order</label><select id="f-dir" name="dir"><option value="asc"${order.descending ? '' : ' selected'}>Ascending</option><option value="desc"${order.descending ? ' selected' : ''}>Descending</option></select></div></div>
<div class="actions"><button class="primary" type="submit">Apply filters</button><a class="button" href="${h(u + queryString(orderParams))}">Clear</a>
<a class="button" id="download-csv" href="${h(u)}.csv${h(queryString(v))}" download>Download CSV</a></div>
<p class="muted"><small>The CSV holds every matching opt-in (not just this page), one row per opt-in, exactly as the Hub API returns them, oldest change first. Dates are UTC.</small></p></form>`;
  // A column header sorts by its column; on the column already sorted by, it reverses the order.
  const header = COLUMNS.map((c) => {
    const on = order.sort === c.sort;
    const dir = on ? (order.descending ? 'asc' : 'desc') : c.first;
    const arrow = on ? (order.descending ? ' ▼' : ' ▲') : '';
    const aria = on ? ` aria-sort="${order.descending ? 'descending' : 'ascending'}"` : '';
    return `<th${aria}><a data-sort="${c.sort}" href="${h(u + queryString(v, { sort: c.sort, dir }))}">${h(c.label)}${arrow}</a></th>`;
  }).join('');
  const table = o.rows.length
    ? `<table id="opt-ins" class="stack"><thead><tr>${header}<th class="num">Budget</th></tr></thead><tbody>
${o.rows
  .map(
    (
      r,
    ) => `<tr data-id="${h(r.id)}"><td data-label="Playbook">${h(r.playbookName)}</td><td data-label="Workspace">${h(r.workspaceName)}</td><td data-label="Status"><span class="pill${r.status === 'active' ? ' live' : ''}">${h(statusLabel(r.status))}</span></td>
<td data-label="Opted in">${h(when(r.optedInAt))}</td><td data-label="Updated">${h(when(r.updatedAt))}</td><td class="num" data-label="Budget">${r.budgetCents === null ? '—' : `${h(money(r.budgetCents))}${r.budgetType ? ` <small>${h(r.budgetType)}</small>` : ''}`}</td></tr>`,
  )
  .join('')}</tbody></table>`
    : `<p class="muted">${o.total === undefined ? 'Fix the filters above to see opt-ins.' : 'No opt-ins match these filters.'}</p>`;
  const pages = o.total === undefined ? 0 : Math.max(1, Math.ceil(o.total / o.pageSize));
  const pageLink = (page: number, rel: 'prev' | 'next', text: string) =>
    `<a class="button" rel="${rel}" href="${h(u + queryString(v, { ...orderParams, ...(page > 1 ? { page: String(page) } : {}) }))}">${text}</a>`;
  const pager =
    o.total === undefined
      ? ''
      : `<div class="pager">${o.page > 1 ? pageLink(o.page - 1, 'prev', '← Previous') : ''}${o.page < pages ? pageLink(o.page + 1, 'next', 'Next →') : ''}</div>`;
  const summary =
    o.total === undefined
      ? ''
      : `<p><strong data-total="${o.total}">${h(counted(o.total, 'opt-in'))}</strong>${o.total > 0 ? ` · page ${o.page} of ${pages}` : ''} · sorted by ${h(ORDER_WORDS[order.sort][order.descending ? 1 : 0])}</p>`;
  return `<h1>Playbook opt-ins</h1>${o.notices.map((n) => `<p class="notice" role="status">${h(n)}</p>`).join('')}${filters}<div class="card">${summary}${table}${pager}
<p class="muted"><small>${o.pageSize} per page. Times are UTC.</small></p></div>`;
}
