import { ratio } from '../analytics/metrics.ts';

// Google review summaries from counts by star rating. "All" counts are every review up to the
// end of the range; "new" counts are those received within it.

export type RatingCounts = [number, number, number, number, number];
export type Distribution = Record<'1' | '2' | '3' | '4' | '5', number>;

export interface ReviewCounts {
  all: RatingCounts;
  /** Every review up to the end of the range that has a reply. */
  allResponded: number;
  new: RatingCounts;
  /** Reviews received in the range that have a reply. */
  newResponded: number;
}

export interface ReviewSummary {
  /** Average star rating of all reviews up to the end of the range, 2 decimals; null without reviews. */
  averageRating: number | null;
  reviewCount: number;
  ratingDistribution: Distribution;
  newReviews: number;
  newAverageRating: number | null;
  newRatingDistribution: Distribution;
  respondedReviews: number;
  /** Share of the new reviews that have a reply (4 decimals); null without new reviews. */
  responseRate: number | null;
}

export const NO_REVIEWS: ReviewCounts = { all: [0, 0, 0, 0, 0], allResponded: 0, new: [0, 0, 0, 0, 0], newResponded: 0 };

const sum = (counts: RatingCounts) => counts.reduce((a, b) => a + b, 0);

function average(counts: RatingCounts): number | null {
  const n = sum(counts);
  if (n === 0) return null;
  const stars = counts.reduce((total, count, i) => total + count * (i + 1), 0);
  return Math.round((stars / n) * 100) / 100;
}

const distribution = (counts: RatingCounts): Distribution => ({
  '1': counts[0],
  '2': counts[1],
  '3': counts[2],
  '4': counts[3],
  '5': counts[4],
});

export function addReviewCounts(a: ReviewCounts, b: ReviewCounts): ReviewCounts {
  const add = (x: RatingCounts, y: RatingCounts) => x.map((v, i) => v + y[i]!) as RatingCounts;
  return {
    all: add(a.all, b.all),
    allResponded: a.allResponded + b.allResponded,
    new: add(a.new, b.new),
    newResponded: a.newResponded + b.newResponded,
  };
}

export function reviewSummary(counts: ReviewCounts): ReviewSummary {
  return {
    averageRating: average(counts.all),
    reviewCount: sum(counts.all),
    ratingDistribution: distribution(counts.all),
    newReviews: sum(counts.new),
    newAverageRating: average(counts.new),
    newRatingDistribution: distribution(counts.new),
    respondedReviews: counts.newResponded,
    responseRate: ratio(counts.newResponded, sum(counts.new)),
  };
}
