// The Hub API's CSV exports: the whole data set in one URL, for spreadsheets and BI tools whose
// import fetches one URL and cannot follow cursors (docs/spreadsheets.md). `GET /playbook-opt-ins.csv`
// streams every opt-in matching the JSON list's filters, keyset page by keyset page;
// `GET /spend-by-workspace.csv` is the spend report of a period, one row per workspace. Same key,
// same browser refusal, same ETag/304 and compression as the JSON reads. Counted once per request,
// whatever its rows: in the per-key window and in a window of its own (HUB_EXPORT_LIMIT; the
// spend CSV in the spend report's), and a 304 is free. Not MCP tools: a model reads the paged JSON.
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type, type TObject, type TSchema } from 'typebox';
import {
  optInExportPages,
  optInExportState,
  optInExportValidator,
  type OptInExportFilters,
} from '../../domain/opt-ins/opt-in-export.service.ts';
import { parseSince } from '../../domain/opt-ins/opt-in.ts';
import type { Period } from '../../domain/periods.ts';
import { spendReport, spendReportValidator } from '../../domain/spend/spend.service.ts';
import { visibleFieldKeys } from '../../domain/tenancy/tenancy.service.ts';
import {
  conditionsOf,
  entityTag,
  evaluateConditions,
  representationTag,
  validatorHeaders,
  type Validator,
} from '../../platform/validators.ts';
import { HUB_EXPORT_LIMIT, HUB_SPEND_LIMIT, type RatePolicy } from '../../policy.ts';
import { fromQueryText, type OperationInfo } from '../operation.ts';
import { REVALIDATE } from '../rest.ts';
import { negotiateCoding } from '../shared/compression.ts';
import { CSV_CONTENT_TYPE, csvLine, decimalAmount, optInCsvHeader, optInCsvValues, UTF8_BOM, type CsvCell } from '../shared/csv.ts';
import { ApiError, invalidRequest } from '../shared/errors.ts';
import type { InputValidator } from '../shared/inputs.ts';
import type { Admission, HubApiGuard } from './guard.ts';
import { hubOperations, type HubContext } from './operations.ts';

const inputOf = (name: string): TObject => hubOperations.find((op) => op.name === name)!.input;

const Bom = Type.Optional(
  Type.Boolean({
    default: false,
    description:
      'true: start the file with a UTF-8 byte-order mark, which Excel needs to read accents and other non-ASCII text right when the file is opened by double-click. Leave it off for Google Sheets, Power Query, Apps Script and scripts: they read UTF-8 as it is and would keep the mark in the first header.',
  }),
);

/** The JSON list's filters exactly (its schema's properties), without its paging, and `bom`. */
const { since, playbookId, status } = inputOf('list_playbook_opt_ins').properties;
const OptInsCsvInput = Type.Object({ since: since!, playbookId: playbookId!, status: status!, bom: Bom });
const SpendCsvInput = Type.Object({ period: inputOf('get_spend_by_workspace').properties.period!, bom: Bom });

/** Paging parameters of the JSON list: refused by name, so nobody believes they paged a CSV. */
const PAGING = ['cursor', 'limit'];

/** A CSV export as the index, the OpenAPI document and the routes read it. */
export interface CsvExport extends OperationInfo {
  readonly rest: { readonly path: string };
  /** The JSON read with the same data, paged or whole. */
  readonly jsonPath: string;
  readonly extraLimit: RatePolicy;
}

export const hubCsvExports: readonly CsvExport[] = [
  {
    name: 'export_playbook_opt_ins_csv',
    effect: 'read',
    rest: { path: '/playbook-opt-ins.csv' },
    jsonPath: '/playbook-opt-ins',
    title: 'Playbook opt-ins as CSV (every row, one response)',
    description: [
      'Every opt-in matching the filters of /playbook-opt-ins (since, playbookId, status) in one streamed CSV, ordered by (updatedAt, id): no paging, for spreadsheets and BI tools that import one URL.',
      'One row per opt-in. Columns: id, playbook_id, playbook_name, playbook_solutions (joined with |), workspace_id, workspace_name, field_<key> (one per non-archived custom field, by key), status, opted_in_at, updated_at, budget_cents, budget_amount (cents / 100, two decimals), budget_type, variant (one `dimension: option` line per dimension, by dimension), responses (one `question: answer` line per response, in order). Money in cents and as a decimal amount. Text cells that start with = + - @, tab or carriage return get a leading apostrophe (formula-injection safe). RFC 4180: comma-separated, CRLF line ends, a field with a comma, quote or line break quoted, quotes doubled; UTF-8, with a byte-order mark only with bom=true.',
      'A row that changes while the CSV streams may come twice (its new state last): keep the last row per id if it matters.',
      `Counted as one request whatever its size: once against the per-key limit and once against a limit of its own, ${HUB_EXPORT_LIMIT.limit} per key per minute; a 304 Not Modified is free. Its strong ETag changes when any of its rows, the hub's workspaces, custom fields or playbooks change.`,
    ].join(' '),
    input: OptInsCsvInput,
    output: Type.String({ description: 'text/csv' }),
    extraLimit: HUB_EXPORT_LIMIT,
    conditional: true,
    mediaType: 'text/csv',
  },
  {
    name: 'export_spend_by_workspace_csv',
    effect: 'read',
    rest: { path: '/spend-by-workspace.csv' },
    jsonPath: '/spend-by-workspace',
    title: 'Paid ad spend by workspace as CSV',
    description: [
      'The /spend-by-workspace report of a period as CSV: one row per workspace of the hub (by spend, descending, then id), then one row of unattributed spend (empty workspace_id, workspace_name `(unattributed)`), so that the spend column sums to the total.',
      'Columns: period, start_date, end_date, prior_start_date, prior_end_date, as_of, freshness, workspace_id, workspace_name, field_<key> (one per non-archived custom field, by key), spend_cents, spend_amount, prior_spend_cents, prior_spend_amount (amounts: cents / 100, two decimals).',
      'Every row repeats the period, its UTC dates, as_of and freshness: check freshness before publishing numbers. Same CSV rules as /playbook-opt-ins.csv.',
      `Counted like /spend-by-workspace: against the per-key limit and the report's own, ${HUB_SPEND_LIMIT.limit} per key per minute; a 304 Not Modified is free.`,
    ].join(' '),
    input: SpendCsvInput,
    output: Type.String({ description: 'text/csv' }),
    extraLimit: HUB_SPEND_LIMIT,
    conditional: true,
    mediaType: 'text/csv',
  },
];

/** What one export answers: its validator (cheap, before any row), and its lines. */
interface Prepared {
  validator: Validator;
  lines(): AsyncGenerator<string>;
}

interface SpendJson {
  period: Period;
  current: { startDate: string; endDate: string };
  prior: { startDate: string; endDate: string };
  asOf: string | null;
  freshness: string;
  totals: { unattributedSpendCents: number; priorUnattributedSpendCents: number };
  workspaces: {
    id: string;
    name: string;
    fields: Record<string, string | number | boolean>;
    spendCents: number;
    priorSpendCents: number;
  }[];
}

const representation = (bom: boolean) => `csv${bom ? '+bom' : ''}`;

async function prepareOptIns(ctx: HubContext, input: Record<string, unknown>): Promise<Prepared> {
  const filters: OptInExportFilters = {
    hubId: ctx.hubId,
    since: input.since === undefined ? undefined : parseSince(input.since as string),
    playbookId: input.playbookId as string | undefined,
    status: input.status as string | undefined,
  };
  const bom = input.bom === true;
  const state = await optInExportState(ctx.db, filters);
  const { fieldKeys } = state;
  return {
    validator: optInExportValidator(filters, state, representation(bom)),
    async *lines() {
      yield (bom ? UTF8_BOM : '') + csvLine(optInCsvHeader(fieldKeys));
      // One string per page: the socket drains it before the next page is read.
      for await (const rows of optInExportPages(ctx.db, filters)) {
        let chunk = '';
        for (const row of rows) chunk += csvLine(optInCsvValues(row, fieldKeys));
        yield chunk;
      }
    },
  };
}

async function prepareSpend(ctx: HubContext, input: Record<string, unknown>): Promise<Prepared> {
  const period = input.period as Period;
  const bom = input.bom === true;
  const [fieldKeys, state] = await Promise.all([
    visibleFieldKeys(ctx.db, ctx.hubId),
    spendReportValidator(ctx.db, ctx.hubId, period, ctx.clock),
  ]);
  const tagOf = (v: Validator) => ({ etag: entityTag('spend-csv', representation(bom), v.etag, fieldKeys.join('\u0000')) });
  return {
    validator: tagOf(state),
    async *lines() {
      const { json } = await spendReport(ctx.db, ctx.hubId, period, ctx.clock, ctx.caches.spend);
      const report = JSON.parse(json.parts.join('')) as SpendJson;
      const head = [report.period, report.current.startDate, report.current.endDate, report.prior.startDate, report.prior.endDate];
      const meta: CsvCell[] = [...head, report.asOf, report.freshness];
      const money = (cents: number, prior: number): CsvCell[] => [cents, decimalAmount(cents), prior, decimalAmount(prior)];
      let chunk =
        (bom ? UTF8_BOM : '') +
        csvLine([
          'period',
          'start_date',
          'end_date',
          'prior_start_date',
          'prior_end_date',
          'as_of',
          'freshness',
          'workspace_id',
          'workspace_name',
          ...fieldKeys.map((k) => `field_${k}`),
          'spend_cents',
          'spend_amount',
          'prior_spend_cents',
          'prior_spend_amount',
        ]);
      for (const w of report.workspaces) {
        chunk += csvLine([...meta, w.id, w.name, ...fieldKeys.map((k) => w.fields[k]), ...money(w.spendCents, w.priorSpendCents)]);
      }
      const none = fieldKeys.map(() => null);
      chunk += csvLine([
        ...meta,
        null,
        '(unattributed)',
        ...none,
        ...money(report.totals.unattributedSpendCents, report.totals.priorUnattributedSpendCents),
      ]);
      yield chunk;
    },
  };
}

const PREPARE: Record<string, (ctx: HubContext, input: Record<string, unknown>) => Promise<Prepared>> = {
  export_playbook_opt_ins_csv: prepareOptIns,
  export_spend_by_workspace_csv: prepareSpend,
};

/** A safe file name for Content-Disposition: `opt-ins-<hub>-<date>.csv`. */
const fileName = (stem: string, hubId: string, now: Date) =>
  `${stem}-${hubId.replace(/[^A-Za-z0-9_-]/g, '_')}-${now.toISOString().slice(0, 10)}.csv`;

const preconditionFailed = () =>
  new ApiError(
    412,
    'precondition_failed',
    'If-Match names no ETag of the current answer (or it changed after If-Unmodified-Since): fetch it again without the condition.',
  );

export interface CsvRoutesDeps {
  guard: HubApiGuard;
  inputs: InputValidator;
  contextFor(admission: Admission): HubContext;
  now(): Date;
}

/** Mounts the CSV exports (GET, and HEAD without running the export). */
export function mountHubCsv(app: FastifyInstance, deps: CsvRoutesDeps): void {
  for (const exp of hubCsvExports) {
    app.get(exp.rest.path, async (request: FastifyRequest, reply: FastifyReply) => {
      const { guard } = deps;
      guard.refuseBrowsers(request);
      const now = deps.now();
      const conditions = conditionsOf(request.headers, now);
      const coding = negotiateCoding(request.headers['accept-encoding']);
      // A conditional request is counted only once its validator did not match (a 304 is free).
      const admission = await guard.authenticate(request, reply, { extra: exp.extraLimit, charge: conditions === undefined });
      const charge = () => (conditions ? guard.chargeLater(admission, reply, exp.extraLimit) : Promise.resolve());
      let prepared: Prepared;
      try {
        const query = request.query as Record<string, unknown>;
        const paging = PAGING.filter((name) => query[name] !== undefined);
        if (paging.length > 0) {
          throw invalidRequest(
            paging.map((field) => ({
              field,
              message: `a CSV export is every matching row in one response and takes no ${field}: drop it (page with ${exp.jsonPath} for JSON)`,
            })),
          );
        }
        const input = deps.inputs.validate(exp.input as TSchema as TObject, fromQueryText(exp.input, query)) as Record<string, unknown>;
        prepared = await PREPARE[exp.name]!(deps.contextFor(admission), input);
      } catch (error) {
        // Refused input is charged like any request: only a 304 is free.
        await charge();
        throw error;
      }
      const tag = representationTag(prepared.validator, coding);
      const verdict = conditions ? evaluateConditions(conditions, prepared.validator, tag) : 'full';
      if (verdict === 'not-modified') {
        await guard.notModified(admission, reply, exp.extraLimit, false);
        return reply
          .code(304)
          .headers({ ...validatorHeaders(prepared.validator, tag), ...REVALIDATE })
          .send();
      }
      await charge();
      if (verdict === 'precondition-failed') throw preconditionFailed();
      reply.headers({
        ...validatorHeaders(prepared.validator, tag),
        ...REVALIDATE,
        'content-type': CSV_CONTENT_TYPE,
        'content-disposition': `attachment; filename="${fileName(exp.rest.path.slice(1, -4), admission.caller.hubId, now)}"`,
        'x-content-type-options': 'nosniff',
      });
      if (request.method === 'HEAD') return reply.send('');
      return reply.send(Readable.from(prepared.lines()));
    });
  }
}
