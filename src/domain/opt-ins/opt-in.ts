import { invalid } from '../../platform/errors.ts';
import { parseDate, parseTimestamp } from '../../platform/time.ts';
import { positionCursor, type Position } from '../keyset.ts';

export const OPT_IN_STATUSES = [
  'pending',
  'pending_billing',
  'in_review',
  'deploying',
  'active',
  'partially-deployed',
  'failed',
  'cleanup_failed',
  'cancelling',
  'cancelled',
  'completed',
  'paused',
  'questions_only',
] as const;
export type OptInStatus = (typeof OPT_IN_STATUSES)[number];

export const SOLUTIONS = ['meta', 'google_ads', 'chatgpt_ads', 'organic_social'] as const;
export type Solution = (typeof SOLUTIONS)[number];

/** The web admin's opt-ins report's sortable columns. */
export const OPT_IN_REPORT_SORTS = ['workspace', 'playbook', 'status', 'opted_in', 'updated'] as const;
export type OptInReportSort = (typeof OPT_IN_REPORT_SORTS)[number];

/** One opt-in row exactly as the Hub API and the CSV report present it. */
export interface OptInRow {
  id: string;
  playbook: { id: string; name: string; solutions: Solution[] };
  workspace: { id: string; name: string; fields: Record<string, string | number | boolean> };
  status: OptInStatus;
  optedInAt: string;
  updatedAt: string;
  budgetCents: number | null;
  budgetType: 'lifetime' | 'daily' | null;
  variant: Record<string, string>;
  responses: { question: string; answer: string }[];
}

/** Where a page of opt-ins ended: the (updatedAt, id) of its last row, at the database's full precision. */
export type PageCursor = Position;

// The opt-in list accepts cursor timestamps with 0 to 6 fractional digits (it issues 6).
export const OPT_IN_CURSOR = positionCursor('opt-ins', { anyFraction: true });

/** `since`: an ISO 8601 timestamp with Z or an offset, or a date meaning 00:00 UTC. */
export function parseSince(text: string): Date {
  const at = parseTimestamp(text) ?? parseDate(text);
  if (!at) {
    throw invalid([
      { field: 'since', message: 'must be an ISO 8601 timestamp with Z or an offset (2026-11-02T09:00:00Z) or a date (2026-11-02)' },
    ]);
  }
  return at;
}
