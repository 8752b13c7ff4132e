// When a publication's figures are read: often in its first days, when they move, then rarely,
// then never (Meta's lifetime figures barely move after four weeks, and Page Insights keep two
// years). Documented in docs/channels.md ("Organic insights").

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** Reads after publishing: 1 h, 6 h, 24 h, 3 days, 7 days, 28 days; then the figures stay as last read. */
export const INSIGHTS_SCHEDULE_MS: readonly number[] = Object.freeze([HOUR, 6 * HOUR, DAY, 3 * DAY, 7 * DAY, 28 * DAY]);
/** After a failure (the network's, or an unreadable answer): try again this much later, within the schedule. */
export const INSIGHTS_RETRY_MS = HOUR;
/** After a failure an admin must mend (token expired, permission missing): try again a day later. */
export const INSIGHTS_RETRY_ADMIN_MS = DAY;
/** A claimed read is leased this long; a claim older than this (its instance died) is taken over. */
export const INSIGHTS_LEASE_MS = 5 * 60_000;

/** The first read: an hour after publishing (due at once for a publication older than that). */
export const firstReadAt = (publishedAt: Date): Date => new Date(publishedAt.getTime() + INSIGHTS_SCHEDULE_MS[0]!);

/** The next scheduled read after `now`, skipping points already passed; null when the schedule is over. */
export function nextReadAt(publishedAt: Date, now: Date): Date | null {
  for (const offset of INSIGHTS_SCHEDULE_MS) {
    const at = publishedAt.getTime() + offset;
    if (at > now.getTime()) return new Date(at);
  }
  return null;
}
