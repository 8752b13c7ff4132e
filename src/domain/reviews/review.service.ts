import type { Db } from '../../db/database.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Caller } from '../caller.ts';
import { reportScope, type ReportInput, type WorkspaceRef } from '../analytics/analytics.service.ts';
import type { DateRange } from '../periods.ts';
import { countReviews } from './review.repository.ts';
import { NO_REVIEWS, addReviewCounts, reviewSummary, type ReviewSummary } from './review.ts';

export interface ReviewReport extends DateRange {
  timezone: 'UTC';
  workspaces: (ReviewSummary & { workspace: WorkspaceRef })[];
  totals: ReviewSummary;
}

/** Google review summaries per workspace (most new reviews first) and for the whole scope. */
export async function googleReviewSummaries(deps: { db: Db; clock: Clock }, caller: Caller, input: ReportInput): Promise<ReviewReport> {
  const { range, scope } = reportScope(deps.clock, caller, input);
  const counts = scope ? await countReviews(deps.db, scope, range) : [];
  const workspaces = counts
    .map((c) => ({ workspace: { _id: c.workspaceId, name: c.workspaceName }, ...reviewSummary(c) }))
    .sort((a, b) => b.newReviews - a.newReviews || (a.workspace._id < b.workspace._id ? -1 : 1));
  return { timezone: 'UTC', ...range, workspaces, totals: reviewSummary(counts.reduce(addReviewCounts, NO_REVIEWS)) };
}
