// The playbook opt-ins report: filters, keyset pages, and every matching opt-in as a streamed CSV.
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { decodeOptInCursor, encodeOptInCursor, OPT_IN_STATUSES, type OptInRow, type PageCursor } from '../../../domain/opt-ins/opt-in.ts';
import { findOptInPage, type OptInPageQuery } from '../../../domain/opt-ins/opt-in.repository.ts';
import { hubPlaybooks, hubWorkspaces, visibleFieldKeys } from '../../../domain/tenancy/hub-directory.repository.ts';
import { DATE_RANGE_MESSAGE, parseDate } from '../../../platform/time.ts';
import { appPage, one, refuse, type Query, type Web } from '../context.ts';
import { csvLine, optInCsvHeader, optInCsvValues } from '../csv.ts';
import { shell } from '../views/layout.ts';
import { optInReportView } from '../views/opt-ins.ts';

const REPORT_PAGE_SIZE = 50;
/** Rows per keyset page of the CSV stream: big enough to amortise the query, small in memory. */
const CSV_PAGE_SIZE = 2000;
/** Above this many workspaces the filter is a text field for the id, not a list. */
const WORKSPACE_SELECT_MAX = 500;
const DAY_MS = 86_400_000;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

interface Filters {
  query: Omit<OptInPageQuery, 'hubId' | 'limit' | 'after'>;
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
    const v = values[name];
    if (!v) return undefined;
    const date = parseDate(v);
    // A real month and day (checked in a leap year) but a year before 1970: the range is what is wrong.
    if (!date) errors[name] = DATE.test(v) && parseDate(`2000${v.slice(4)}`) ? `The date ${DATE_RANGE_MESSAGE}.` : 'Enter a date as YYYY-MM-DD.';
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

export function optInRoutes(app: FastifyInstance, { deps, paths, sessions }: Web): void {
  app.get<{ Params: { hubId: string }; Querystring: Query }>(`${paths.app}/hubs/:hubId/opt-ins`, async (request, reply) => {
    const ctx = await sessions.hubCtx(request, reply, request.params.hubId, true);
    if (!ctx) return reply;
    const hubId = ctx.hub.hubId;
    const f = parseFilters(request.query);
    let after: PageCursor | undefined;
    const cursor = one(request.query.cursor);
    if (cursor) {
      try {
        after = decodeOptInCursor(cursor);
      } catch {
        f.errors.cursor = 'That page link is no longer valid; showing the first page.';
      }
    }
    const valid = !f.errors.status && !f.errors.from && !f.errors.to;
    const [playbooks, workspaces, found] = await Promise.all([
      hubPlaybooks(deps.db, hubId),
      hubWorkspaces(deps.db, hubId, WORKSPACE_SELECT_MAX + 1),
      valid ? findOptInPage(deps.db, deps.catalogs, { hubId, ...f.query, after, limit: REPORT_PAGE_SIZE }) : undefined,
    ]);
    const body = optInReportView({
      url: `${paths.hub(hubId)}/opt-ins`,
      values: f.values,
      errors: f.errors,
      playbooks,
      workspaces: workspaces.length <= WORKSPACE_SELECT_MAX ? workspaces : undefined,
      rows: found ? (JSON.parse(found.json.join('')) as OptInRow[]) : [],
      valid,
      firstPage: !after,
      nextCursor: found?.next ? encodeOptInCursor(found.next) : null,
      pageSize: REPORT_PAGE_SIZE,
    });
    return appPage(reply, valid ? 200 : 400, (n) => shell(sessions.shellOf(ctx, 'opt-ins'), 'Playbook opt-ins', body, n));
  });

  app.get<{ Params: { hubId: string }; Querystring: Query }>(`${paths.app}/hubs/:hubId/opt-ins.csv`, async (request, reply) => {
    const ctx = await sessions.hubCtx(request, reply, request.params.hubId, true);
    if (!ctx) return reply;
    const hubId = ctx.hub.hubId;
    const f = parseFilters(request.query);
    if (Object.keys(f.errors).length) return refuse(reply, 400, 'Invalid filters', Object.values(f.errors).join(' '), { href: `${paths.hub(hubId)}/opt-ins`, text: 'Back to the report' });
    const fieldKeys = await visibleFieldKeys(deps.db, hubId);
    // Keyset pages, written as they arrive: Readable.from waits for the socket to drain before
    // asking for the next page, so memory holds one page whatever the size of the hub.
    async function* lines(): AsyncGenerator<string> {
      yield csvLine(optInCsvHeader(fieldKeys));
      let after: PageCursor | undefined;
      for (;;) {
        const page = await findOptInPage(deps.db, deps.catalogs, { hubId, ...f.query, after, limit: CSV_PAGE_SIZE });
        let chunk = '';
        for (const row of JSON.parse(page.json.join('')) as OptInRow[]) chunk += csvLine(optInCsvValues(row, fieldKeys));
        if (chunk) yield chunk;
        if (!page.next) return;
        after = page.next;
      }
    }
    const stamp = deps.clock.now().toISOString().slice(0, 10);
    reply.headers({
      'content-type': 'text/csv; charset=utf-8; header=present',
      'content-disposition': `attachment; filename="opt-ins-${hubId.replace(/[^A-Za-z0-9_-]/g, '_')}-${stamp}.csv"`,
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    });
    return reply.send(Readable.from(lines()));
  });
}
