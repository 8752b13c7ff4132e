// Report bodies shared by the app pages and the embeds: the spend dashboard and the opt-in summary.
import type { OptInSummary } from '../../../domain/opt-ins/opt-in.service.ts';
import { PERIODS, type Period } from '../../../domain/periods.ts';
import type { Freshness } from '../../../domain/spend/spend.ts';
import { escapeHtml as h } from '../../shared/html.ts';
import { change, money, when } from './layout.ts';

export interface SpendReport {
  period: Period;
  current: { startDate: string; endDate: string };
  prior: { startDate: string; endDate: string };
  asOf: string | null;
  freshness: Freshness;
  totals: { spendCents: number; priorSpendCents: number; unattributedSpendCents: number; priorUnattributedSpendCents?: number };
  workspaces: { id: string; name: string; spendCents: number; priorSpendCents: number }[];
}

const PERIOD_LABELS: Record<Period, string> = { today: 'Today (so far)', yesterday: 'Yesterday', last_7_days: 'Last 7 days', last_30_days: 'Last 30 days' };
const CHART_TOP = 8;

/** The freshness banner, in plain words. */
function freshnessBanner(freshness: Freshness, asOf: string | null): string {
  const at = asOf ? `${when(asOf)}` : 'never';
  const [cls, text] = ({
    fresh: ['fresh', `Figures are up to date. They include every ad-account sync up to ${at}.`],
    stale: ['warn', `These figures may be out of date: the oldest ad-account sync behind them finished at ${at}, more than 6 hours ago.`],
    syncing: ['warn', `An ad account is syncing right now, so these figures may still change. Complete data up to ${at}.`],
    failed: ['bad', `The latest sync of at least one ad account failed, so these figures may be incomplete. Complete data up to ${at}.`],
    never_synced: ['bad', 'At least one ad account has never finished a sync, so these figures are incomplete.'],
    no_accounts: ['warn', 'No ad accounts are connected to this hub yet, so there is no spend to show.'],
  } as const)[freshness];
  return `<div class="banner ${cls}" role="status" data-freshness="${freshness}"><strong>${freshness === 'fresh' ? 'Up to date' : 'Heads up'}:</strong> ${h(text)} <small>(asOf: ${h(asOf ?? 'null')})</small></div>`;
}

/** Horizontal bars: the top N workspaces by spend, then "Others" (the rest summed), current vs prior. */
function spendChart(report: SpendReport, top = CHART_TOP): string {
  const leaders = report.workspaces.slice(0, top);
  const rest = report.workspaces.slice(top);
  const bars = leaders.map((w) => ({ label: w.name, cur: w.spendCents, prior: w.priorSpendCents, other: false }));
  if (rest.length > 0) {
    bars.push({ label: `Others (${rest.length} workspaces)`, cur: rest.reduce((s, w) => s + w.spendCents, 0), prior: rest.reduce((s, w) => s + w.priorSpendCents, 0), other: true });
  }
  if (report.totals.unattributedSpendCents > 0 || (report.totals.priorUnattributedSpendCents ?? 0) > 0) {
    bars.push({ label: 'Unattributed', cur: report.totals.unattributedSpendCents, prior: report.totals.priorUnattributedSpendCents ?? 0, other: true });
  }
  if (bars.length === 0) return '<p class="muted">No workspaces yet.</p>';
  const max = Math.max(1, ...bars.map((b) => Math.max(b.cur, b.prior)));
  const labelW = 230;
  const barW = 520;
  const rowH = 34;
  const height = bars.length * rowH + 24;
  const rows = bars.map((b, i) => {
    const y = i * rowH + 4;
    const name = b.label.length > 34 ? `${b.label.slice(0, 33)}…` : b.label;
    return `<g><title>${h(b.label)}: ${h(money(b.cur))} (prior ${h(money(b.prior))})</title>
<text x="0" y="${y + 15}">${h(name)}</text>
<rect class="${b.other ? 'other' : 'bar'}" x="${labelW}" y="${y}" width="${Math.max(1, Math.round((b.cur / max) * barW))}" height="14" rx="3"></rect>
<rect class="prior" x="${labelW}" y="${y + 17}" width="${Math.max(1, Math.round((b.prior / max) * barW))}" height="7" rx="2"></rect>
<text x="${labelW + barW + 8}" y="${y + 15}">${h(money(b.cur))}</text></g>`;
  }).join('');
  return `<svg class="chart" role="img" aria-label="Spend by workspace, ${h(PERIOD_LABELS[report.period])}" viewBox="0 0 ${labelW + barW + 110} ${height}" width="100%">${rows}
<text x="${labelW}" y="${height - 4}" class="legend">Thick bar: ${h(PERIOD_LABELS[report.period].toLowerCase())} · thin bar: prior period</text></svg>`;
}

/** The spend dashboard body: four periods with the prior comparison, chart and table for `selected`. */
export function spendView(reports: SpendReport[], selected: Period, periodHref: ((p: Period) => string) | null): string {
  const chosen = reports.find((r) => r.period === selected) ?? reports[reports.length - 1]!;
  const stats = PERIODS.map((p) => {
    const r = reports.find((x) => x.period === p)!;
    const inner = `<div class="muted">${h(PERIOD_LABELS[p])}</div><div class="big">${h(money(r.totals.spendCents))}</div>
<div>${change(r.totals.spendCents, r.totals.priorSpendCents)} <small>vs ${h(money(r.totals.priorSpendCents))} (${h(r.prior.startDate)}${r.prior.startDate === r.prior.endDate ? '' : ` – ${h(r.prior.endDate)}`})</small></div>
<small>Unattributed: ${h(money(r.totals.unattributedSpendCents))}</small>`;
    return `<div class="stat${p === chosen.period ? ' on' : ''}" data-period="${p}">${periodHref ? `<a href="${h(periodHref(p))}">${inner}</a>` : inner}</div>`;
  }).join('');
  const top = chosen.workspaces.slice(0, 25);
  const table = `<table><thead><tr><th>Workspace</th><th class="num">Spend</th><th class="num">Prior period</th><th class="num">Change</th></tr></thead><tbody>
${top.map((w) => `<tr><td>${h(w.name)}</td><td class="num">${h(money(w.spendCents))}</td><td class="num">${h(money(w.priorSpendCents))}</td><td class="num">${change(w.spendCents, w.priorSpendCents)}</td></tr>`).join('')}
<tr><td><em>Unattributed</em> <small>(spend not matched to a workspace)</small></td><td class="num">${h(money(chosen.totals.unattributedSpendCents))}</td><td class="num">${h(money(chosen.totals.priorUnattributedSpendCents ?? 0))}</td><td></td></tr>
</tbody></table>${chosen.workspaces.length > top.length ? `<p class="muted">Showing the top ${top.length} of ${chosen.workspaces.length} workspaces.</p>` : ''}`;
  return `${freshnessBanner(chosen.freshness, chosen.asOf)}<div class="grid4">${stats}</div>
<div class="card"><h2>${h(PERIOD_LABELS[chosen.period])}: ${h(chosen.current.startDate)}${chosen.current.startDate === chosen.current.endDate ? '' : ` – ${h(chosen.current.endDate)}`} (UTC)</h2>${spendChart(chosen)}</div>
<div class="card"><h2>By workspace</h2>${table}</div>`;
}

export function optInSummaryView(summary: OptInSummary): string {
  const rows = summary.periods.map((p) => `<tr><td>${h(PERIOD_LABELS[p.period])}</td><td>${h(p.startDate)}${p.startDate === p.endDate ? '' : ` – ${h(p.endDate)}`}</td>
<td class="num">${p.optIns}</td><td class="num">${p.prior.optIns}</td><td class="num">${change(p.optIns, p.prior.optIns)}</td><td class="num">${p.workspaces}</td><td class="num">${p.prior.workspaces}</td></tr>`).join('');
  return `<div class="grid4"><div class="stat"><div class="muted">Live opt-ins now</div><div class="big" data-active>${summary.activeOptIns}</div></div></div>
<div class="card"><h2>New opt-ins</h2><table><thead><tr><th>Period</th><th>Dates (UTC)</th><th class="num">Opt-ins</th><th class="num">Prior</th><th class="num">Change</th><th class="num">Workspaces</th><th class="num">Prior</th></tr></thead>
<tbody>${rows}</tbody></table><p class="muted"><small>As of ${h(when(summary.asOf))}.</small></p></div>`;
}
