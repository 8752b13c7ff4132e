import type { Db } from '../../db/database.ts';
import type { AdPlatform, SocialPlatform } from '../../db/schema.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Caller } from '../caller.ts';
import type { DateRange } from '../periods.ts';
import { narrowScope, scopeOf, type WorkspaceScope } from '../scope.ts';
import { findHubCpm, sumOrganic, sumPaidByCampaign, sumPaidByWorkspace } from './analytics.repository.ts';
import { reportRange } from './date-range.ts';
import {
  ZERO_ORGANIC,
  ZERO_PAID,
  addOrganic,
  addPaid,
  earnedMediaValueCents,
  organicFigures,
  paidFigures,
  type OrganicFigures,
  type PaidFigures,
} from './metrics.ts';

export interface ReportInput {
  workspaceId?: string;
  from?: string;
  to?: string;
}

export interface WorkspaceRef {
  _id: string;
  name: string;
}

interface Report<Row, Totals> extends DateRange {
  timezone: 'UTC';
  workspaces: Row[];
  totals: Totals;
}

export interface OrganicReport extends Report<OrganicFigures & { workspace: WorkspaceRef }, OrganicFigures> {
  cpm: { platform: SocialPlatform; cpmCents: number }[];
}

export interface PaidReport extends Report<PaidFigures & { workspace: WorkspaceRef }, PaidFigures> {
  campaigns: (PaidFigures & { campaignId: string; campaignName: string; platform: AdPlatform; workspaces: number })[];
}

/** The range and the scope of a report; no scope when the workspace filter is outside the caller's. */
export function reportScope(clock: Clock, caller: Caller, input: ReportInput): { range: DateRange; scope: WorkspaceScope | undefined } {
  return { range: reportRange(input, clock.now()), scope: narrowScope(scopeOf(caller), input.workspaceId) };
}

const byIdThen =
  <T extends { workspace: WorkspaceRef }>(metric: (row: T) => number) =>
  (a: T, b: T) =>
    metric(b) - metric(a) || (a.workspace._id < b.workspace._id ? -1 : a.workspace._id > b.workspace._id ? 1 : 0);

/**
 * Organic performance per workspace and in total. Earned media value uses the hub's CPM per
 * platform (a platform without one contributes 0); the total is the sum of the workspaces'.
 */
export async function organicAnalytics(
  deps: { db: Db; clock: Clock },
  caller: Caller,
  input: ReportInput & { platform?: SocialPlatform },
): Promise<OrganicReport> {
  const { range, scope } = reportScope(deps.clock, caller, input);
  const cpm = await findHubCpm(deps.db, caller.hub.id);
  const sums = scope ? await sumOrganic(deps.db, scope, range, input.platform) : [];
  const workspaces = sums
    .map((s) => {
      const counts = s.byPlatform.reduce(addOrganic, ZERO_ORGANIC);
      const emv = earnedMediaValueCents(new Map(s.byPlatform.map((p) => [p.platform, p.impressions])), cpm);
      return { workspace: { _id: s.workspaceId, name: s.workspaceName }, ...organicFigures(counts, emv) };
    })
    .sort(byIdThen((row) => row.impressions));
  const totals = organicFigures(
    workspaces.reduce(addOrganic, ZERO_ORGANIC),
    workspaces.reduce((sum, w) => sum + w.earnedMediaValueCents, 0),
  );
  return {
    timezone: 'UTC',
    ...range,
    cpm: [...cpm].map(([platform, cpmCents]) => ({ platform, cpmCents })),
    workspaces,
    totals,
  };
}

/** Paid performance per workspace, per campaign, and in total. */
export async function paidAnalytics(
  deps: { db: Db; clock: Clock },
  caller: Caller,
  input: ReportInput & { platform?: AdPlatform },
): Promise<PaidReport> {
  const { range, scope } = reportScope(deps.clock, caller, input);
  const [byWorkspace, byCampaign] = scope
    ? await Promise.all([
        sumPaidByWorkspace(deps.db, scope, range, input.platform),
        sumPaidByCampaign(deps.db, scope, range, input.platform),
      ])
    : [[], []];
  const workspaces = byWorkspace
    .map(({ workspaceId, workspaceName, ...counts }) => ({ workspace: { _id: workspaceId, name: workspaceName }, ...paidFigures(counts) }))
    .sort(byIdThen((row) => row.spendCents));
  const campaigns = byCampaign
    .map(({ campaignId, campaignName, platform, workspaces: count, ...counts }) => ({
      campaignId,
      campaignName,
      platform,
      workspaces: count,
      ...paidFigures(counts),
    }))
    .sort((a, b) => b.spendCents - a.spendCents || (a.platform + a.campaignId < b.platform + b.campaignId ? -1 : 1));
  return { timezone: 'UTC', ...range, workspaces, campaigns, totals: paidFigures(workspaces.reduce(addPaid, ZERO_PAID)) };
}
