import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { AdPlatform, SocialPlatform } from '../../db/schema.ts';
import type { DateRange } from '../periods.ts';
import { inScope, workspacesInScope, type WorkspaceScope } from '../scope.ts';
import type { OrganicCounts, PaidCounts } from './metrics.ts';

// Daily metrics summed over a date range per workspace of the scope; every workspace is listed,
// with no platform rows when it has no figures.

export interface OrganicSums {
  workspaceId: string;
  workspaceName: string;
  byPlatform: (OrganicCounts & { platform: SocialPlatform })[];
}

export async function sumOrganic(
  db: Db,
  scope: WorkspaceScope,
  range: DateRange,
  platform: SocialPlatform | undefined,
): Promise<OrganicSums[]> {
  const result = await sql<{ id: string; name: string; platform: SocialPlatform | null } & Record<keyof OrganicCounts, string | null>>`
    SELECT w.id, w.name, m.platform,
           sum(m.posts) AS posts, sum(m.impressions) AS impressions, sum(m.reach) AS reach, sum(m.likes) AS likes,
           sum(m.comments) AS comments, sum(m.shares) AS shares, sum(m.saves) AS saves
      FROM workspaces w
      LEFT JOIN (
             -- Imported rows, and the synced insights of connected channels (migration 021) summed
             -- per workspace, UTC day of publication and platform where no row was imported for
             -- that day: an imported row is the operator's figure for its day and is never added to.
             SELECT hub_id, workspace_id, date, platform, posts, impressions, reach, likes, comments, shares, saves
               FROM organic_metrics
              WHERE date BETWEEN ${range.startDate}::date AND ${range.endDate}::date
             UNION ALL
             SELECT s.hub_id, s.workspace_id, s.date, s.platform, count(*)::int, sum(s.impressions), sum(s.reach), sum(s.likes),
                    sum(s.comments), sum(s.shares), sum(s.saves)
               FROM organic_post_insights s
              WHERE s.has_figures AND s.date BETWEEN ${range.startDate}::date AND ${range.endDate}::date
                AND NOT EXISTS (SELECT 1 FROM organic_metrics o
                                 WHERE o.hub_id = s.hub_id AND o.workspace_id = s.workspace_id AND o.date = s.date AND o.platform = s.platform)
              GROUP BY s.hub_id, s.workspace_id, s.date, s.platform
           ) m
        ON m.hub_id = w.hub_id AND m.workspace_id = w.id
       ${platform !== undefined ? sql`AND m.platform = ${platform}` : sql``}
     WHERE ${workspacesInScope(scope, 'w')}
     GROUP BY w.id, w.name, m.platform
     ORDER BY w.id, m.platform`.execute(db.kysely);
  const byWorkspace = new Map<string, OrganicSums>();
  for (const r of result.rows) {
    let sums = byWorkspace.get(r.id);
    if (!sums) byWorkspace.set(r.id, (sums = { workspaceId: r.id, workspaceName: r.name, byPlatform: [] }));
    if (r.platform === null) continue;
    sums.byPlatform.push({
      platform: r.platform,
      posts: Number(r.posts),
      impressions: Number(r.impressions),
      reach: Number(r.reach),
      likes: Number(r.likes),
      comments: Number(r.comments),
      shares: Number(r.shares),
      saves: Number(r.saves),
    });
  }
  return [...byWorkspace.values()];
}

export async function findHubCpm(db: Db, hubId: string): Promise<Map<SocialPlatform, number>> {
  const rows = await db.kysely
    .selectFrom('hub_cpm')
    .select(['platform', 'cpm_cents'])
    .where('hub_id', '=', hubId)
    .orderBy('platform')
    .execute();
  return new Map(rows.map((r) => [r.platform, r.cpm_cents]));
}

export interface PaidSums extends PaidCounts {
  workspaceId: string;
  workspaceName: string;
}

export async function sumPaidByWorkspace(
  db: Db,
  scope: WorkspaceScope,
  range: DateRange,
  platform: AdPlatform | undefined,
): Promise<PaidSums[]> {
  const result = await sql<{ id: string; name: string } & Record<keyof PaidCounts, string>>`
    SELECT w.id, w.name,
           coalesce(sum(m.spend_cents), 0) AS "spendCents", coalesce(sum(m.impressions), 0) AS impressions,
           coalesce(sum(m.clicks), 0) AS clicks, coalesce(sum(m.results), 0) AS results
      FROM workspaces w
      LEFT JOIN paid_metrics m
        ON m.hub_id = w.hub_id AND m.workspace_id = w.id
       AND m.date BETWEEN ${range.startDate}::date AND ${range.endDate}::date
       ${platform !== undefined ? sql`AND m.platform = ${platform}` : sql``}
     WHERE ${workspacesInScope(scope, 'w')}
     GROUP BY w.id, w.name`.execute(db.kysely);
  return result.rows.map((r) => ({
    workspaceId: r.id,
    workspaceName: r.name,
    spendCents: Number(r.spendCents),
    impressions: Number(r.impressions),
    clicks: Number(r.clicks),
    results: Number(r.results),
  }));
}

export interface CampaignSums extends PaidCounts {
  campaignId: string;
  /** The name on the campaign's latest day in the range. */
  campaignName: string;
  platform: AdPlatform;
  /** Workspaces of the scope that ran it in the range. */
  workspaces: number;
}

export async function sumPaidByCampaign(
  db: Db,
  scope: WorkspaceScope,
  range: DateRange,
  platform: AdPlatform | undefined,
): Promise<CampaignSums[]> {
  const result = await sql<
    { campaign_id: string; campaign_name: string; platform: AdPlatform; workspaces: string } & Record<keyof PaidCounts, string>
  >`
    SELECT m.campaign_id, (array_agg(m.campaign_name ORDER BY m.date DESC))[1] AS campaign_name, m.platform,
           count(DISTINCT m.workspace_id) AS workspaces,
           sum(m.spend_cents) AS "spendCents", sum(m.impressions) AS impressions, sum(m.clicks) AS clicks, sum(m.results) AS results
      FROM paid_metrics m
     WHERE ${inScope(scope, 'm')}
       AND m.date BETWEEN ${range.startDate}::date AND ${range.endDate}::date
       ${platform !== undefined ? sql`AND m.platform = ${platform}` : sql``}
     GROUP BY m.platform, m.campaign_id`.execute(db.kysely);
  return result.rows.map((r) => ({
    campaignId: r.campaign_id,
    campaignName: r.campaign_name,
    platform: r.platform,
    workspaces: Number(r.workspaces),
    spendCents: Number(r.spendCents),
    impressions: Number(r.impressions),
    clicks: Number(r.clicks),
    results: Number(r.results),
  }));
}
