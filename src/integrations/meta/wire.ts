// Meta's wire format where the client and the sandbox must agree: written once, from Meta's
// documentation, so the sandbox cannot drift from what the client expects of the real Graph.

/**
 * The Insights breakdown that splits each day into the ad account's own hours. Its value is the
 * hour as a range, "05:00:00 - 05:59:59" (Marketing API › Insights › Breakdowns; the same shape in
 * facebook-nodejs-business-sdk fixtures and every public client we read).
 */
export const HOURLY_BREAKDOWN = 'hourly_stats_aggregated_by_advertiser_time_zone';

const HOUR_LABELS = Array.from({ length: 24 }, (_, h) => {
  const hh = String(h).padStart(2, '0');
  return `${hh}:00:00 - ${hh}:59:59`;
});

/** 5 → "05:00:00 - 05:59:59". */
export const hourLabel = (hour: number): string => HOUR_LABELS[hour]!;

/** "05:00:00 - 05:59:59" → 5; undefined for any other text. */
export function parseHourLabel(text: string): number | undefined {
  // The first two characters name the only label the text can be; the comparison checks it whole.
  const hour = (text.charCodeAt(0) - 48) * 10 + (text.charCodeAt(1) - 48);
  return hour >= 0 && hour <= 23 && text === HOUR_LABELS[hour] ? hour : undefined;
}

/**
 * The body of every Graph error: `{ "error": { … } }` (Graph API › Handling Errors). `message` is
 * for developers; `error_user_msg` (with `error_user_title`), when present, is meant for the person
 * using the app, in the request's locale.
 */
export interface GraphErrorBody {
  message: string;
  type: string;
  code: number;
  error_subcode?: number;
  is_transient?: boolean;
  error_user_title?: string;
  error_user_msg?: string;
  fbtrace_id?: string;
}

/** An async report run's `async_status` values (AdReportRun; Insights › Asynchronous Jobs). */
export type AsyncStatus = 'Job Not Started' | 'Job Started' | 'Job Running' | 'Job Completed' | 'Job Failed' | 'Job Skipped';
