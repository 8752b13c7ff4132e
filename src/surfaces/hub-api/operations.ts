import { Type } from 'typebox';
import type { Db } from '../../db/database.ts';
import { OPT_IN_CURSOR, OPT_IN_STATUSES, SOLUTIONS } from '../../domain/opt-ins/opt-in.ts';
import { cachedOptInSummary, listOptIns, optInPageValidator, optInSummaryValidator } from '../../domain/opt-ins/opt-in.service.ts';
import { PERIODS } from '../../domain/periods.ts';
import { FRESHNESS } from '../../domain/spend/spend.ts';
import { spendReport, spendReportValidator } from '../../domain/spend/spend.service.ts';
import type { Clock } from '../../platform/clock.ts';
import { HUB_SPEND_LIMIT, HUB_SUMMARY_LIMIT, SPEND_STALE_AFTER_MS, type RatePolicy } from '../../policy.ts';
import { REPORT_VIEW_URI } from '../mcp-apps/resources.ts';
import { defineOperation, Validated, type Operation } from '../operation.ts';
import { checkedString } from '../shared/formats.ts';
import { cursorFormat, NOT_OUR_CURSOR, Page, pageParameters } from '../shared/paging.ts';
import type { ReportCaches } from '../shared/report-caches.ts';
import { TIMESTAMP_OR_DATE } from '../shared/time-formats.ts';

/** What every Hub API operation runs with: the hub of the calling key, and the services. */
export interface HubContext {
  db: Db;
  clock: Clock;
  hubId: string;
  caches: ReportCaches;
}

const optInCursor = cursorFormat('opaque-cursor', OPT_IN_CURSOR, NOT_OUR_CURSOR);

const STALE_HOURS = SPEND_STALE_AFTER_MS / 3_600_000;

const Timestamp = (description: string) => Type.String({ format: 'date-time', description });
const DateOnly = (description: string) => Type.String({ format: 'date', description });
const FieldValues = Type.Object(
  {},
  {
    additionalProperties: Type.Union([Type.String(), Type.Number(), Type.Boolean()]),
    description:
      "The hub's custom workspace fields by bare key (no `custom.` prefix). Archived fields are omitted; `{}` when the workspace has no values.",
  },
);

const OptInRowSchema = Type.Object({
  id: Type.String({ description: 'Unique row key. Merge pages (and incremental pulls) by it.' }),
  playbook: Type.Object({
    id: Type.String({ description: 'Playbook identifier; group and filter by this, never by name.' }),
    name: Type.String({ description: 'Display name exactly as stored: not unique, may carry trailing spaces.' }),
    solutions: Type.Array(Type.Enum([...SOLUTIONS]), {
      description: 'Ad solutions the playbook runs on; usually one, several for a multi-platform playbook.',
    }),
  }),
  workspace: Type.Object({
    id: Type.String({ description: 'Workspace (location) identifier; group and filter by this.' }),
    name: Type.String({ description: 'Workspace display name; not a key.' }),
    fields: FieldValues,
  }),
  status: Type.Enum([...OPT_IN_STATUSES], {
    description: 'Opt-in status. Suggested labels: active = "Live", in_review = "Awaiting approval", questions_only = "Questions only".',
  }),
  optedInAt: Timestamp('When the workspace opted in (UTC, milliseconds). Decides whether a row is a new opt-in.'),
  updatedAt: Timestamp('When the row last changed, including status changes (UTC, milliseconds). Rows are ordered by it.'),
  budgetCents: Type.Union([Type.Integer(), Type.Null()], {
    description: 'Budget in cents (dollars = cents / 100); null e.g. on a questions-only opt-in.',
  }),
  budgetType: Type.Union([Type.Enum(['lifetime', 'daily']), Type.Null()], {
    description: 'lifetime or daily budget; null e.g. on a questions-only opt-in.',
  }),
  variant: Type.Object(
    {},
    {
      additionalProperties: Type.String(),
      description: 'Chosen copy/audience variant, dimension → option; `{}` when the playbook has no variants.',
    },
  ),
  responses: Type.Array(Type.Object({ question: Type.String(), answer: Type.String() }), {
    description: "The workspace's answers to the playbook's questions.",
  }),
});

const RangeCounts = {
  startDate: DateOnly('First UTC day of the range (inclusive).'),
  endDate: DateOnly('Last UTC day of the range (inclusive).'),
  optIns: Type.Integer({ description: 'Opt-ins (any status) whose optedInAt falls on a day of the range.' }),
  workspaces: Type.Integer({ description: 'Distinct workspaces among those opt-ins.' }),
};

const OptInSummarySchema = Type.Object({
  timezone: Type.Literal('UTC'),
  asOf: Timestamp(
    "The instant these figures have been current since: the last change to the hub's opt-ins that moved a count, or 00:00 UTC today, whichever is later. Not when the response was built: the same figures give the same response (and ETag) all day.",
  ),
  activeOptIns: Type.Integer({ description: 'Opt-ins whose status is active now.' }),
  periods: Type.Array(
    Type.Object({
      period: Type.Enum([...PERIODS]),
      ...RangeCounts,
      prior: Type.Object(RangeCounts, { description: 'The same number of days immediately before.' }),
    }),
    { description: 'One entry each for today (so far), yesterday, last_7_days (today and the 6 days before), last_30_days.' },
  ),
});

const DateRangeSchema = Type.Object({ startDate: DateOnly('First UTC day (inclusive).'), endDate: DateOnly('Last UTC day (inclusive).') });

const SpendSchema = Type.Object({
  period: Type.Enum([...PERIODS]),
  timezone: Type.Literal('UTC'),
  current: DateRangeSchema,
  prior: DateRangeSchema,
  asOf: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description:
      'The oldest completed ad-account sync behind the figures; null when no account has completed a sync. Check it (and freshness) before publishing numbers, especially early in the day.',
  }),
  freshness: Type.Enum([...FRESHNESS], {
    description: `no_accounts: the hub has no ad account; syncing: a sync is running; failed: an account’s latest sync failed; never_synced: an account never completed a sync; stale: asOf is older than ${STALE_HOURS} hours; fresh otherwise.`,
  }),
  totals: Type.Object({
    spendCents: Type.Integer({ description: "Sum of the workspaces' spendCents plus unattributedSpendCents." }),
    priorSpendCents: Type.Integer({ description: "Sum of the workspaces' priorSpendCents plus priorUnattributedSpendCents." }),
    unattributedSpendCents: Type.Integer({ description: 'Spend in the current range that could not be matched to a workspace.' }),
    priorUnattributedSpendCents: Type.Integer({ description: 'Unattributed spend in the prior range.' }),
  }),
  workspaces: Type.Array(
    Type.Object({
      id: Type.String(),
      name: Type.String(),
      fields: FieldValues,
      spendCents: Type.Integer({ description: 'Spend in the current range, in cents.' }),
      priorSpendCents: Type.Integer({ description: 'Spend in the prior range, in cents.' }),
    }),
    { description: 'Every workspace of the hub (0 when it had no spend), by spendCents descending, then id.' },
  ),
});

/** Whom a report's own limit counts: each API key on the Hub API, each user and client on the main MCP server. */
export type LimitSubject = 'per key' | 'per user and client';

/** A report's own limit, as its description states it. */
const limitedTo = (window: RatePolicy, per: LimitSubject) =>
  `Limited to ${window.limit} requests per ${window.windowMs === 60_000 ? 'minute' : `${window.windowMs / 1000} s`} ${per}.`;

/** The Hub API's operations, their limits worded for the surface that counts them `per` its subject. */
export function hubOperationsFor(per: LimitSubject): Operation<HubContext>[] {
  return [
    defineOperation({
      name: 'list_playbook_opt_ins',
      effect: 'read',
      rest: { path: '/playbook-opt-ins' },
      title: 'List playbook opt-ins',
      description: [
        "Every workspace opt-in across the hub's playbooks: one row per workspace per playbook opt-in, the same data as the in-app bulk report download.",
        'Rows are ordered by (updatedAt, id), oldest change first. Page with `cursor` until `nextCursor` is null.',
        'For incremental pulls pass the largest `updatedAt` you have received as `since`: the boundary row comes back again, so merge rows by `id`; use `optedInAt` to tell new opt-ins from updates.',
        'A row that changes while you page moves to the end and is returned again; nothing is skipped. A full pull every 15 minutes is plenty.',
        "Over HTTP each page has a strong ETag: send it back in If-None-Match and an unchanged page is 304 Not Modified, which does not count against the limits. A page changes when one of its rows changes, a row joins or leaves it, or the hub's workspaces, custom fields or playbooks change (every row embeds them, so every page of the hub changes then); a change to a row on another page leaves it as it was.",
      ].join(' '),
      input: Type.Object({
        since: Type.Optional(
          checkedString(TIMESTAMP_OR_DATE, {
            maxLength: 64,
            description:
              'Only opt-ins created or changed at or after this instant (inclusive). ISO 8601 with Z or an offset, or a date (00:00 UTC).',
            examples: ['2026-11-02T09:00:00Z'],
          }),
        ),
        playbookId: Type.Optional(Type.String({ maxLength: 64, description: 'Only this playbook. An unknown id gives an empty page.' })),
        status: Type.Optional(Type.Enum([...OPT_IN_STATUSES], { description: 'Only opt-ins in this status.' })),
        ...pageParameters('Rows', optInCursor),
      }),
      output: Page(OptInRowSchema),
      validator: (ctx: HubContext, input) => optInPageValidator(ctx.db, ctx.hubId, input),
      handler: async (ctx: HubContext, input) => {
        const { json, validator } = await listOptIns(ctx.db, ctx.caches.catalogs, ctx.hubId, input);
        return new Validated(json, validator);
      },
    }),
    defineOperation({
      name: 'get_opt_in_summary',
      effect: 'read',
      rest: { path: '/opt-in-summary' },
      // Clients with the MCP Apps extension show the figures in an interactive view.
      mcp: { ui: REPORT_VIEW_URI },
      title: 'Opt-in summary',
      description: [
        'Counts of new opt-ins for today (so far), yesterday, the last 7 days and the last 30 days (UTC days), each with the same-length period before it, plus the number of opt-ins active now.',
        'It agrees exactly with /playbook-opt-ins: rows whose optedInAt falls in last_7_days count to its optIns; rows with status active count to activeOptIns.',
        'Over HTTP its ETag and Last-Modified (= asOf) change only when an opt-in is added or deleted, or moves to another workspace, another UTC day of optedInAt, or in or out of active, and at 00:00 UTC; a conditional request answered 304 Not Modified does not count against the limits.',
        limitedTo(HUB_SUMMARY_LIMIT, per),
      ].join(' '),
      input: Type.Object({}),
      output: OptInSummarySchema,
      extraLimit: HUB_SUMMARY_LIMIT,
      lastModified: true,
      validator: (ctx: HubContext) => optInSummaryValidator(ctx.db, ctx.hubId, ctx.clock),
      handler: async (ctx: HubContext) => {
        const { summary, validator } = await cachedOptInSummary(ctx.db, ctx.hubId, ctx.clock, ctx.caches.summaries);
        return new Validated(summary, validator);
      },
    }),
    defineOperation({
      name: 'get_spend_by_workspace',
      effect: 'read',
      rest: { path: '/spend-by-workspace' },
      // Clients with the MCP Apps extension show the figures in an interactive view.
      mcp: { ui: REPORT_VIEW_URI },
      title: 'Paid ad spend by workspace',
      description: [
        'Paid ad spend per workspace for a period (UTC days; today is partial), with the same-length prior period, unattributed spend, and how fresh the figures are.',
        'Money is in integer cents (dollars = cents / 100). Check asOf and freshness before publishing numbers.',
        'The first request for a period each day computes the figures; later ones are fast.',
        `Over HTTP its ETag changes with the spend, the workspaces and their fields, asOf (the oldest ad account sync), freshness (a sync ${STALE_HOURS} hours old turns stale) and the UTC day; a conditional request answered 304 Not Modified does not count against the limits. No Last-Modified: a sync state or freshness changes at no single recorded time.`,
        limitedTo(HUB_SPEND_LIMIT, per),
      ].join(' '),
      input: Type.Object({
        period: Type.Optional(
          Type.Enum([...PERIODS], {
            default: 'last_30_days',
            description: 'today [D, D], yesterday [D-1, D-1], last_7_days [D-6, D] or last_30_days [D-29, D], with D today in UTC.',
          }),
        ),
      }),
      output: SpendSchema,
      extraLimit: HUB_SPEND_LIMIT,
      validator: (ctx: HubContext, input) => spendReportValidator(ctx.db, ctx.hubId, input.period ?? 'last_30_days', ctx.clock),
      handler: async (ctx: HubContext, input) => {
        const { json, validator } = await spendReport(ctx.db, ctx.hubId, input.period ?? 'last_30_days', ctx.clock, ctx.caches.spend);
        return new Validated(json, validator);
      },
    }),
  ];
}

/** The Hub API's operations: REST routes, its OpenAPI document and the Hub MCP server's tools. */
export const hubOperations = hubOperationsFor('per key');
