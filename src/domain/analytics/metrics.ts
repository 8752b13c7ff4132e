// The derived figures of the analytics reports, as pure functions over summed counts. Money is in
// whole cents, rounded half up; ratios are rounded to 4 decimal places (0.0523 = 5.23 %) and are
// null when their denominator is 0. Totals are built from the summed counts, never by averaging
// ratios.

/** a / b rounded half up, for non-negative integers. */
export function divideRounded(a: number, b: number): number {
  return Math.floor((2 * a + b) / (2 * b));
}

export function ratio(numerator: number, denominator: number): number | null {
  return denominator > 0 ? Math.round((numerator / denominator) * 10_000) / 10_000 : null;
}

export interface OrganicCounts {
  posts: number;
  impressions: number;
  reach: number;
  likes: number;
  comments: number;
  shares: number;
  saves: number;
}

export interface OrganicFigures extends OrganicCounts {
  /** likes + comments + shares + saves */
  engagement: number;
  /** engagement / reach */
  engagementRate: number | null;
  earnedMediaValueCents: number;
}

export const ZERO_ORGANIC: OrganicCounts = { posts: 0, impressions: 0, reach: 0, likes: 0, comments: 0, shares: 0, saves: 0 };

export function addOrganic(a: OrganicCounts, b: OrganicCounts): OrganicCounts {
  return {
    posts: a.posts + b.posts,
    impressions: a.impressions + b.impressions,
    reach: a.reach + b.reach,
    likes: a.likes + b.likes,
    comments: a.comments + b.comments,
    shares: a.shares + b.shares,
    saves: a.saves + b.saves,
  };
}

/**
 * Earned media value in cents: Σ over platforms of impressions × the hub's CPM for that platform
 * (cents per 1,000 impressions) / 1,000, rounded half up once. Exact in BigInt.
 */
export function earnedMediaValueCents(impressionsByPlatform: Map<string, number>, cpmCents: Map<string, number>): number {
  let milliCents = 0n;
  for (const [platform, impressions] of impressionsByPlatform) milliCents += BigInt(impressions) * BigInt(cpmCents.get(platform) ?? 0);
  return Number((milliCents * 2n + 1000n) / 2000n);
}

export function organicFigures(counts: OrganicCounts, earnedMediaValue: number): OrganicFigures {
  const engagement = counts.likes + counts.comments + counts.shares + counts.saves;
  return { ...counts, engagement, engagementRate: ratio(engagement, counts.reach), earnedMediaValueCents: earnedMediaValue };
}

export interface PaidCounts {
  spendCents: number;
  impressions: number;
  clicks: number;
  results: number;
}

export interface PaidFigures extends PaidCounts {
  /** clicks / impressions */
  ctr: number | null;
  /** spend / clicks, whole cents */
  cpcCents: number | null;
  /** spend / results, whole cents */
  costPerResultCents: number | null;
}

export const ZERO_PAID: PaidCounts = { spendCents: 0, impressions: 0, clicks: 0, results: 0 };

export function addPaid(a: PaidCounts, b: PaidCounts): PaidCounts {
  return {
    spendCents: a.spendCents + b.spendCents,
    impressions: a.impressions + b.impressions,
    clicks: a.clicks + b.clicks,
    results: a.results + b.results,
  };
}

export function paidFigures(counts: PaidCounts): PaidFigures {
  return {
    ...counts,
    ctr: ratio(counts.clicks, counts.impressions),
    cpcCents: counts.clicks > 0 ? divideRounded(counts.spendCents, counts.clicks) : null,
    costPerResultCents: counts.results > 0 ? divideRounded(counts.spendCents, counts.results) : null,
  };
}
