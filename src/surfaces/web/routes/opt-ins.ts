// The playbook opt-ins report: filters, a sort by column, offset pages with the total, and every
// matching opt-in as a streamed CSV (in the Hub API's keyset order, whatever the page's sort).
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { OPT_IN_REPORT_SORTS, OPT_IN_STATUSES, type OptInReportSort } from '../../../domain/opt-ins/opt-in.ts';
import { optInExportPages } from '../../../domain/opt-ins/opt-in-export.service.ts';
import { countOptInReport, findOptInReportPage, type OptInReportFilters } from '../../../domain/opt-ins/opt-in.service.ts';
import { hubPlaybooks, hubWorkspaces, visibleFieldKeys } from '../../../domain/tenancy/tenancy.service.ts';
import { DATE_RANGE_MESSAGE, parseDate } from '../../../platform/time.ts';
import { appPage, one, refuse, type Query, type Web } from '../context.ts';
import { CSV_CONTENT_TYPE, csvLine, optInCsvHeader, optInCsvValues } from '../../shared/csv.ts';
import { shell } from '../views/layout.ts';
import { optInReportView, type ReportOrder } from '../views/opt-ins.ts';

const REPORT_PAGE_SIZE = 50;
/** Above this many workspaces the filter is a text field for the id, not a list. */
const WORKSPACE_SELECT_MAX = 500;
const DAY_MS = 86_400_000;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
/** ISO 8601's basic form (20261124): what a phone's numeric keypad, which has no "-", can type. */
const BASIC_DATE = /^(\d{4})(\d{2})(\d{2})$/;
/** The report opens on the latest changes. */
const DEFAULT_ORDER: ReportOrder = { sort: 'updated', descending: true };
/** Page numbers are plain decimal digits, 1 to this. */
const PAGE = /^[1-9]\d{0,6}$/;

interface Filters {
  query: Omit<OptInReportFilters, 'hubId'>;
  values: Record<string, string>;
  errors: Record<string, string>;
}

/** The report's filters from the query string: as entered (for the form), as a query, and what is wrong. */
function parseFilters(q: Query): Filters {
  const values: Record<string, string> = {};
  const errors: Record<string, string> = {};
  const query: Filters['query'] = {};
  for (const k of ['playbook', 'status', 'from', 'to', 'workspace'] as const) {
    const v = one(q[k])?.trim();
    if (v) values[k] = v.slice(0, 200);
  }
  if (values.playbook) query.playbookId = values.playbook;
  if (values.workspace) query.workspaceId = values.workspace;
  if (values.status) {
    if ((OPT_IN_STATUSES as readonly string[]).includes(values.status)) query.status = values.status;
    else errors.status = 'Choose a status from the list.';
  }
  const day = (name: 'from' | 'to') => {
    const v = values[name]?.replace(BASIC_DATE, '$1-$2-$3');
    if (!v) return undefined;
    values[name] = v;
    const date = parseDate(v);
    // A real month and day (checked in a leap year) but a year before 1970: the range is what is wrong.
    if (!date)
      errors[name] = DATE.test(v) && parseDate(`2000${v.slice(4)}`) ? `The date ${DATE_RANGE_MESSAGE}.` : 'Enter a date as YYYY-MM-DD.';
    return date;
  };
  const from = day('from');
  const to = day('to');
  if (from) query.optedInFrom = from;
  // "to" is a whole day: opted in before the next one.
  if (to) query.optedInBefore = new Date(to.getTime() + DAY_MS);
  if (from && to && to < from) errors.to = 'The end date must be on or after the start date.';
  return { query, values, errors };
}

/** The sort and page asked for; what is not understood is said in `notices` and the default used. */
function parseOrder(q: Query): { order: ReportOrder; page: number; notices: string[] } {
  const notices: string[] = [];
  const order = { ...DEFAULT_ORDER };
  const sort = one(q.sort);
  const dir = one(q.dir);
  if (sort !== undefined || dir !== undefined) {
    if (sort !== undefined && !(OPT_IN_REPORT_SORTS as readonly string[]).includes(sort))
      notices.push(`The report cannot be sorted by “${sort.slice(0, 40)}”; it is sorted by last update, newest first.`);
    else if (dir !== undefined && dir !== 'asc' && dir !== 'desc')
      notices.push('The order must be asc or desc; the report is sorted by last update, newest first.');
    else if (sort !== undefined) {
      order.sort = sort as OptInReportSort;
      order.descending = dir === 'desc';
    } else order.descending = dir === 'desc';
  }
  const pageText = one(q.page);
  let page = 1;
  if (pageText !== undefined) {
    if (PAGE.test(pageText)) page = Number(pageText);
    else notices.push('The page must be a whole number from 1; showing the first page.');
  }
  return { order, page, notices };
}

export function optInRoutes(app: FastifyInstance, { deps, paths, sessions }: Web): void {
  app.get<{ Params: { hubId: string }; Querystring: Query }>(`${paths.app}/hubs/:hubId/opt-ins`, async (request, reply) => {
    const ctx = await sessions.hubCtx(request, reply, request.params.hubId, true);
    if (!ctx) return reply;
    const hubId = ctx.hub.hubId;
    const f = parseFilters(request.query);
    const { order, notices, ...asked } = parseOrder(request.query);
    const valid = Object.keys(f.errors).length === 0;
    const filters = { hubId, ...f.query };
    const [playbooks, workspaces, total] = await Promise.all([
      hubPlaybooks(deps.db, hubId),
      hubWorkspaces(deps.db, hubId, WORKSPACE_SELECT_MAX + 1),
      valid ? countOptInReport(deps.db, filters) : undefined,
    ]);
    // Offset pages: a page past the last (a stale link, fewer rows since) shows the last one.
    const pages = Math.max(1, Math.ceil((total ?? 0) / REPORT_PAGE_SIZE));
    const page = Math.min(asked.page, pages);
    if (page < asked.page) notices.push(`There is no page ${asked.page}; showing page ${page}, the last.`);
    const rows = total
      ? await findOptInReportPage(deps.db, { ...filters, ...order, offset: (page - 1) * REPORT_PAGE_SIZE, limit: REPORT_PAGE_SIZE })
      : [];
    const body = optInReportView({
      url: `${paths.hub(hubId)}/opt-ins`,
      values: f.values,
      errors: f.errors,
      notices,
      playbooks,
      workspaces: workspaces.length <= WORKSPACE_SELECT_MAX ? workspaces : undefined,
      rows,
      total,
      order,
      page,
      pageSize: REPORT_PAGE_SIZE,
    });
    return appPage(reply, valid ? 200 : 400, (n) => shell(sessions.shellOf(ctx, 'opt-ins'), 'Playbook opt-ins', body, n));
  });

  app.get<{ Params: { hubId: string }; Querystring: Query }>(`${paths.app}/hubs/:hubId/opt-ins.csv`, async (request, reply) => {
    const ctx = await sessions.hubCtx(request, reply, request.params.hubId, true);
    if (!ctx) return reply;
    const hubId = ctx.hub.hubId;
    const f = parseFilters(request.query);
    if (Object.keys(f.errors).length)
      return refuse(reply, 400, 'Invalid filters', Object.values(f.errors).join(' '), {
        href: `${paths.hub(hubId)}/opt-ins`,
        text: 'Back to the report',
      });
    const fieldKeys = await visibleFieldKeys(deps.db, hubId);
    // Keyset pages, written as they arrive: Readable.from waits for the socket to drain before
    // asking for the next page, so memory holds one page whatever the size of the hub. The same
    // export, columns and cells as the Hub API's /playbook-opt-ins.csv (shared/csv.ts).
    async function* lines(): AsyncGenerator<string> {
      yield csvLine(optInCsvHeader(fieldKeys));
      for await (const rows of optInExportPages(deps.db, { hubId, ...f.query })) {
        let chunk = '';
        for (const row of rows) chunk += csvLine(optInCsvValues(row, fieldKeys));
        yield chunk;
      }
    }
    const stamp = deps.clock.now().toISOString().slice(0, 10);
    reply.headers({
      'content-type': CSV_CONTENT_TYPE,
      'content-disposition': `attachment; filename="opt-ins-${hubId.replace(/[^A-Za-z0-9_-]/g, '_')}-${stamp}.csv"`,
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    });
    return reply.send(Readable.from(lines()));
  });
}
