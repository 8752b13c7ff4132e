import { decodeCursor, encodeCursor, isValidCursor } from '../../platform/cursor.ts';
import { invalid } from '../../platform/errors.ts';
import { parseDate, parseTimestamp } from '../../platform/time.ts';

export const OPT_IN_STATUSES = [
  'pending', 'pending_billing', 'in_review', 'deploying', 'active', 'partially-deployed', 'failed',
  'cleanup_failed', 'cancelling', 'cancelled', 'completed', 'paused', 'questions_only',
] as const;
export type OptInStatus = (typeof OPT_IN_STATUSES)[number];

export const SOLUTIONS = ['meta', 'google_ads', 'chatgpt_ads', 'organic_social'] as const;
export type Solution = (typeof SOLUTIONS)[number];

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

/** Where a page ended: the (updatedAt, id) of its last row, at the database's full precision. */
export interface PageCursor {
  updatedAt: string; // ISO timestamp, microseconds kept
  id: string;
}

const CURSOR_KIND = 'opt-ins';
const TIMESTAMP_IN_CURSOR = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;
const validPart = (part: string, index: number) => index !== 0 || (TIMESTAMP_IN_CURSOR.test(part) && parseTimestamp(part) !== undefined);

export function encodeOptInCursor(cursor: PageCursor): string {
  return encodeCursor(CURSOR_KIND, [cursor.updatedAt, cursor.id]);
}

export function decodeOptInCursor(text: string): PageCursor {
  const [updatedAt, id] = decodeCursor(text, CURSOR_KIND, 2, validPart) as [string, string];
  return { updatedAt, id };
}

export const isValidOptInCursor = (text: string): boolean => isValidCursor(text, CURSOR_KIND, 2, validPart);

/** `since`: an ISO 8601 timestamp with Z or an offset, or a date meaning 00:00 UTC. */
export function parseSince(text: string): Date {
  const at = parseTimestamp(text) ?? parseDate(text);
  if (!at) {
    throw invalid([{ field: 'since', message: 'must be an ISO 8601 timestamp with Z or an offset (2026-11-02T09:00:00Z) or a date (2026-11-02)' }]);
  }
  return at;
}

export function isValidSince(text: string): boolean {
  try {
    parseSince(text);
    return true;
  } catch {
    return false;
  }
}
