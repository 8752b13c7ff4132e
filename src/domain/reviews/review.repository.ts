import { sql, type Kysely } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import type { DateRange } from '../periods.ts';
import { workspacesInScope, type WorkspaceScope } from '../scope.ts';
import type { RatingCounts, ReviewCounts } from './review.ts';

export interface ReviewDay {
  hubId: string;
  workspaceId: string;
  date: string;
  /** Reviews received that day by star rating, 1 to 5. */
  newReviews: RatingCounts;
  /** How many of them have a reply. */
  responded: number;
}

/**
 * Writes review days (replacing a stored day), then brings the running totals of the workspaces
 * touched up to date: each day's total_* is the sum of new_* over that day and all before it.
 * This is the only write path of review_days, which is what keeps the totals exact.
 */
export async function saveReviewDays(trx: Kysely<Database>, days: ReviewDay[], chunk = 2_000): Promise<void> {
  if (days.length === 0) return;
  for (let i = 0; i < days.length; i += chunk) {
    // Totals start equal to the day's counts (always valid); the statement below sets them.
    const rows = days.slice(i, i + chunk).map((d) => {
      const [n1, n2, n3, n4, n5] = d.newReviews;
      return {
        hub_id: d.hubId,
        workspace_id: d.workspaceId,
        date: d.date,
        new_1: n1,
        new_2: n2,
        new_3: n3,
        new_4: n4,
        new_5: n5,
        responded: d.responded,
        total_1: n1,
        total_2: n2,
        total_3: n3,
        total_4: n4,
        total_5: n5,
        total_responded: d.responded,
      };
    });
    await trx
      .insertInto('review_days')
      .values(rows)
      .onConflict((oc) =>
        oc.columns(['hub_id', 'workspace_id', 'date']).doUpdateSet((eb) => ({
          new_1: eb.ref('excluded.new_1'),
          new_2: eb.ref('excluded.new_2'),
          new_3: eb.ref('excluded.new_3'),
          new_4: eb.ref('excluded.new_4'),
          new_5: eb.ref('excluded.new_5'),
          responded: eb.ref('excluded.responded'),
          total_1: eb.ref('excluded.total_1'),
          total_2: eb.ref('excluded.total_2'),
          total_3: eb.ref('excluded.total_3'),
          total_4: eb.ref('excluded.total_4'),
          total_5: eb.ref('excluded.total_5'),
          total_responded: eb.ref('excluded.total_responded'),
        })),
      )
      .execute();
  }
  const hubIds = days.map((d) => d.hubId);
  const workspaceIds = days.map((d) => d.workspaceId);
  await sql`
    UPDATE review_days d
       SET total_1 = s.t1, total_2 = s.t2, total_3 = s.t3, total_4 = s.t4, total_5 = s.t5, total_responded = s.tr
      FROM (SELECT r.hub_id, r.workspace_id, r.date,
                   sum(r.new_1) OVER w AS t1, sum(r.new_2) OVER w AS t2, sum(r.new_3) OVER w AS t3,
                   sum(r.new_4) OVER w AS t4, sum(r.new_5) OVER w AS t5, sum(r.responded) OVER w AS tr
              FROM review_days r
             WHERE (r.hub_id, r.workspace_id) IN (SELECT DISTINCT * FROM unnest(${hubIds}::text[], ${workspaceIds}::text[]))
            WINDOW w AS (PARTITION BY r.hub_id, r.workspace_id ORDER BY r.date)) s
     WHERE d.hub_id = s.hub_id AND d.workspace_id = s.workspace_id AND d.date = s.date
       AND (d.total_1, d.total_2, d.total_3, d.total_4, d.total_5, d.total_responded)
           IS DISTINCT FROM (s.t1, s.t2, s.t3, s.t4, s.t5, s.tr)`.execute(trx);
}

export interface WorkspaceReviewCounts extends ReviewCounts {
  workspaceId: string;
  workspaceName: string;
}

/**
 * Per workspace of the scope: running totals at the end of the range minus those the day before
 * it starts — two index lookups per workspace, however long the history.
 */
export async function countReviews(db: Db, scope: WorkspaceScope, range: DateRange): Promise<WorkspaceReviewCounts[]> {
  type Totals = { t1: string | null; t2: string | null; t3: string | null; t4: string | null; t5: string | null; tr: string | null };
  const result = await sql<{ id: string; name: string; end: Totals; before: Totals }>`
    SELECT w.id, w.name, to_jsonb(e) AS end, to_jsonb(b) AS before
      FROM workspaces w
      LEFT JOIN LATERAL (
        SELECT total_1 AS t1, total_2 AS t2, total_3 AS t3, total_4 AS t4, total_5 AS t5, total_responded AS tr
          FROM review_days d WHERE d.hub_id = w.hub_id AND d.workspace_id = w.id AND d.date <= ${range.endDate}::date
         ORDER BY d.date DESC LIMIT 1) e ON true
      LEFT JOIN LATERAL (
        SELECT total_1 AS t1, total_2 AS t2, total_3 AS t3, total_4 AS t4, total_5 AS t5, total_responded AS tr
          FROM review_days d WHERE d.hub_id = w.hub_id AND d.workspace_id = w.id AND d.date < ${range.startDate}::date
         ORDER BY d.date DESC LIMIT 1) b ON true
     WHERE ${workspacesInScope(scope, 'w')}`.execute(db.kysely);
  const counts = (t: Totals | null): RatingCounts => [
    Number(t?.t1 ?? 0),
    Number(t?.t2 ?? 0),
    Number(t?.t3 ?? 0),
    Number(t?.t4 ?? 0),
    Number(t?.t5 ?? 0),
  ];
  return result.rows.map((r) => {
    const all = counts(r.end);
    const before = counts(r.before);
    const allResponded = Number(r.end?.tr ?? 0);
    return {
      workspaceId: r.id,
      workspaceName: r.name,
      all,
      allResponded,
      new: all.map((n, i) => n - before[i]!) as RatingCounts,
      newResponded: allResponded - Number(r.before?.tr ?? 0),
    };
  });
}
