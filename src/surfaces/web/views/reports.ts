// Report bodies shared by the app pages and the embeds: the spend dashboard and the opt-in summary.
import type { WebOptInSummary } from '../../../domain/opt-ins/opt-in.service.ts';
import { PERIODS, type Period } from '../../../domain/periods.ts';
import {
  ACCOUNT_CONCERNS,
  accountConcern,
  proRataToTimeOfDay,
  type AccountConcern,
  type AdAccountStatus,
  type Freshness,
} from '../../../domain/spend/spend.ts';
import { SPEND_STALE_AFTER_MS } from '../../../policy.ts';
import { escapeHtml as h } from '../../shared/html.ts';
import { agoTag, count, counted, money, timeOfDay, when } from './format.ts';
import { change } from './layout.ts';

export interface SpendReport {
  period: Period;
  current: { startDate: string; endDate: string };
  prior: { startDate: string; endDate: string };
  asOf: string | null;
  freshness: Freshness;
  totals: { spendCents: number; priorSpendCents: number; unattributedSpendCents: number; priorUnattributedSpendCents?: number };
  workspaces: { id: string; name: string; spendCents: number; priorSpendCents: number }[];
}

/** What the dashboard reads besides the reports: the moment it is drawn, and each ad account's sync. */
interface SpendLive {
  now: Date;
  accounts: AdAccountStatus[];
}

const PERIOD_LABELS: Record<Period, string> = {
  today: 'Today (so far)',
  yesterday: 'Yesterday',
  last_7_days: 'Last 7 days',
  last_30_days: 'Last 30 days',
};
const CHART_TOP = 8;
/** Accounts the banner names before it says "and N more". */
const BANNER_ACCOUNTS_MAX = 10;

const range = (r: { startDate: string; endDate: string }) => (r.startDate === r.endDate ? r.startDate : `${r.startDate} – ${r.endDate}`);

/** The banner's colour: the worst concern among the accounts decides. */
const CONCERN_CLASS: Record<AccountConcern, 'bad' | 'warn'> = { failed: 'bad', never_synced: 'bad', syncing: 'warn', stale: 'warn' };

function accountLine(a: AdAccountStatus, concern: AccountConcern, now: Date): string {
  const last = a.lastSyncedAt ? `last complete sync ${agoTag(a.lastSyncedAt, now)}` : 'no complete sync yet';
  const state =
    concern === 'failed'
      ? `last sync failed; ${last}`
      : concern === 'syncing'
        ? `syncing now; ${last}`
        : concern === 'never_synced' || !a.lastSyncedAt
          ? 'never synced'
          : `synced ${agoTag(a.lastSyncedAt, now)}`;
  return `<li data-account="${h(a.id)}" data-concern="${concern}"><strong>${h(a.name)}</strong>: ${state}</li>`;
}

/**
 * The freshness banner, in plain words: every account that is failed, syncing, never synced or
 * stale, worst first, with its times in words. `data-freshness` is the Hub API's value.
 */
function freshnessBanner(freshness: Freshness, asOf: string | null, live: SpendLive): string {
  const { now } = live;
  if (freshness === 'no_accounts') {
    return `<div class="banner warn" role="status" data-freshness="no_accounts"><strong>Heads up:</strong> No ad accounts are connected to this hub yet, so there is no spend to show.</div>`;
  }
  const concerns = live.accounts
    .map((a) => ({ a, concern: accountConcern(a, now) }))
    .filter((x): x is { a: AdAccountStatus; concern: AccountConcern } => x.concern !== undefined)
    .sort((x, y) => ACCOUNT_CONCERNS.indexOf(x.concern) - ACCOUNT_CONCERNS.indexOf(y.concern));
  const upTo = asOf ? ` Complete data up to ${agoTag(new Date(asOf), now)}.` : '';
  if (concerns.length === 0) {
    return `<div class="banner fresh" role="status" data-freshness="${freshness}"><strong>Up to date:</strong> every ad account has synced within the last ${SPEND_STALE_AFTER_MS / 3_600_000} hours.${upTo}</div>`;
  }
  const worst = CONCERN_CLASS[concerns[0]!.concern];
  const summary = worst === 'bad' ? 'These figures may be incomplete.' : 'These figures may be out of date or may still change.';
  const shown = concerns
    .slice(0, BANNER_ACCOUNTS_MAX)
    .map(({ a, concern }) => accountLine(a, concern, now))
    .join('');
  const more =
    concerns.length > BANNER_ACCOUNTS_MAX ? `<li>and ${counted(concerns.length - BANNER_ACCOUNTS_MAX, 'more account')}</li>` : '';
  return `<div class="banner ${worst}" role="status" data-freshness="${freshness}"><strong>Heads up:</strong> ${summary}${upTo}<ul>${shown}${more}</ul></div>`;
}

interface Line {
  label: string;
  cur: number;
  prior: number;
}

/**
 * A labelled bar: this period (thick) over the prior one (thin), as a share of `max` in percent of
 * the row's width. No viewBox: the bars stretch with the page while the row stays 24 px high.
 */
function barRow(b: Line, max: number): string {
  const pct = (cents: number) => `${cents > 0 ? Math.max(0.5, Math.round((cents / max) * 1000) / 10) : 0}%`;
  return `<div class="bar-row" data-bar="named"><div><span title="${h(b.label)}">${h(b.label.length > 40 ? `${b.label.slice(0, 39)}…` : b.label)}</span> · <strong>${h(money(b.cur))}</strong> <small>(prior ${h(money(b.prior))})</small></div>
<svg class="chart" aria-hidden="true" width="100%" height="24"><rect class="bar" x="0" y="0" width="${pct(b.cur)}" height="14"></rect><rect class="prior" x="0" y="17" width="${pct(b.prior)}" height="7"></rect></svg></div>`;
}

/**
 * The top workspaces as bars scaled to the largest of them; "Others" (the rest summed) and
 * "Unattributed" are totals listed under the bars, not drawn, so a long tail cannot dwarf them.
 */
function spendChart(report: SpendReport, top = CHART_TOP): string {
  const named = report.workspaces.slice(0, top).map((w) => ({ label: w.name, cur: w.spendCents, prior: w.priorSpendCents }));
  const rest = report.workspaces.slice(top);
  const totals: (Line & { kind: string })[] = [];
  if (rest.length > 0) {
    totals.push({
      kind: 'others',
      label: `Others (${counted(rest.length, 'workspace')})`,
      cur: rest.reduce((s, w) => s + w.spendCents, 0),
      prior: rest.reduce((s, w) => s + w.priorSpendCents, 0),
    });
  }
  const unattributed = { cur: report.totals.unattributedSpendCents, prior: report.totals.priorUnattributedSpendCents ?? 0 };
  if (unattributed.cur > 0 || unattributed.prior > 0) totals.push({ kind: 'unattributed', label: 'Unattributed', ...unattributed });
  if (named.length === 0 && totals.length === 0) return '<p class="muted">No workspaces yet.</p>';
  const max = Math.max(1, ...named.map((b) => Math.max(b.cur, b.prior)));
  const rows = named.map((b) => barRow(b, max)).join('');
  const listed = totals
    .map(
      (t) => `<li data-bar="${t.kind}">${h(t.label)}: <strong>${h(money(t.cur))}</strong> <small>(prior ${h(money(t.prior))})</small></li>`,
    )
    .join('');
  return `<div role="group" aria-label="Spend by workspace, ${h(PERIOD_LABELS[report.period])}">${rows}
<p class="muted"><small>Thick bar: ${h(PERIOD_LABELS[report.period].toLowerCase())} · thin bar: prior period${named.length ? `; bars are to scale with the top ${named.length === 1 ? 'workspace' : `${named.length} workspaces`}` : ''}.</small></p>
${listed ? `<ul class="chart-totals">${listed}</ul>` : ''}</div>`;
}

/** One period's tile. Today so far is compared with yesterday by the same time of day. */
function tile(r: SpendReport, live: SpendLive): string {
  const head = `<div class="muted">${h(PERIOD_LABELS[r.period])}</div><div class="big">${h(money(r.totals.spendCents))}</div>`;
  const unattributed = `<small>Unattributed: ${h(money(r.totals.unattributedSpendCents))}</small>`;
  if (r.period !== 'today') {
    return `${head}<div>${change(r.totals.spendCents, r.totals.priorSpendCents)} <small>vs. ${h(money(r.totals.priorSpendCents))} (${h(range(r.prior))})</small></div>${unattributed}`;
  }
  const by = timeOfDay(live.now);
  const sameHours = proRataToTimeOfDay(r.totals.priorSpendCents, live.now);
  const why = `Spend is recorded per day, so yesterday by ${by} is estimated: yesterday's ${money(r.totals.priorSpendCents)} scaled to the share of the day gone by.`;
  return `${head}<div data-compare="same-hours">${change(r.totals.spendCents, sameHours)} <small>vs. yesterday by ${h(by)}: <abbr title="${h(why)}">est.</abbr> ${h(money(sameHours))}</small></div>${unattributed}`;
}

/** The spend dashboard body: four periods with the prior comparison, chart and table for `selected`. */
export function spendView(reports: SpendReport[], selected: Period, periodHref: ((p: Period) => string) | null, live: SpendLive): string {
  const chosen = reports.find((r) => r.period === selected) ?? reports[reports.length - 1]!;
  const stats = PERIODS.map((p) => {
    const r = reports.find((x) => x.period === p)!;
    const inner = tile(r, live);
    return `<div class="stat${p === chosen.period ? ' on' : ''}" data-period="${p}">${periodHref ? `<a href="${h(periodHref(p))}">${inner}</a>` : inner}</div>`;
  }).join('');
  const top = chosen.workspaces.slice(0, 25);
  const cells = (w: { spend: number; prior: number }) =>
    `<td class="num" data-label="Spend">${h(money(w.spend))}</td><td class="num" data-label="Prior period">${h(money(w.prior))}</td>`;
  const table = `<table class="stack"><thead><tr><th>Workspace</th><th class="num">Spend</th><th class="num">Prior period</th><th class="num">Change</th></tr></thead><tbody>
${top.map((w) => `<tr><td data-label="Workspace">${h(w.name)}</td>${cells({ spend: w.spendCents, prior: w.priorSpendCents })}<td class="num" data-label="Change">${change(w.spendCents, w.priorSpendCents)}</td></tr>`).join('')}
<tr><td data-label="Workspace"><em>Unattributed</em> <small>(spend not matched to a workspace)</small></td>${cells({ spend: chosen.totals.unattributedSpendCents, prior: chosen.totals.priorUnattributedSpendCents ?? 0 })}<td></td></tr>
</tbody></table>${chosen.workspaces.length > top.length ? `<p class="muted">Showing the top ${top.length} of ${count(chosen.workspaces.length)} workspaces.</p>` : ''}`;
  return `${freshnessBanner(chosen.freshness, chosen.asOf, live)}<div class="grid4">${stats}</div>
<div class="card"><h2>${h(PERIOD_LABELS[chosen.period])}: ${h(range(chosen.current))} (UTC)</h2>${spendChart(chosen)}</div>
<div class="card"><h2>By workspace</h2>${table}</div>`;
}

/** Live opt-ins and new opt-ins per period; today so far against yesterday by the same time of day. */
export function optInSummaryView(summary: WebOptInSummary): string {
  const by = timeOfDay(new Date(summary.asOf));
  const rows = summary.periods
    .map((p) => {
      const prior = p.period === 'today' ? summary.yesterdaySameHours : p.prior;
      const dates = p.period === 'today' ? `${h(range(p))} <small>vs. yesterday by ${h(by)}</small>` : h(range(p));
      return `<tr data-period="${p.period}"><td data-label="Period">${h(PERIOD_LABELS[p.period])}</td><td data-label="Dates (UTC)">${dates}</td>
<td class="num" data-label="Opt-ins">${count(p.optIns)}</td><td class="num" data-label="Prior">${count(prior.optIns)}</td><td class="num" data-label="Change">${change(p.optIns, prior.optIns)}</td><td class="num" data-label="Workspaces">${count(p.workspaces)}</td><td class="num" data-label="Prior workspaces">${count(prior.workspaces)}</td></tr>`;
    })
    .join('');
  return `<div class="grid4"><div class="stat"><div class="muted">Live opt-ins now</div><div class="big" data-active>${count(summary.activeOptIns)}</div></div></div>
<div class="card"><h2>New opt-ins</h2><table class="stack"><thead><tr><th>Period</th><th>Dates (UTC)</th><th class="num">Opt-ins</th><th class="num">Prior</th><th class="num">Change</th><th class="num">Workspaces</th><th class="num">Prior</th></tr></thead>
<tbody>${rows}</tbody></table><p class="muted"><small>As of ${h(when(summary.asOf))}. Today so far is compared with yesterday up to the same time of day.</small></p></div>`;
}
