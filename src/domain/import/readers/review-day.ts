// Reads a `reviewDay` line: the Google reviews a workspace received on one day, by star rating.

import type { RatingCounts } from '../../reviews/review.ts';
import { INT32_MAX, isObject, shown, type FieldReader } from '../field-reader.ts';
import type { ReviewDayRecord } from '../records.ts';

const STAR_RATINGS = ['1', '2', '3', '4', '5'];

function readNewReviews(r: FieldReader): RatingCounts {
  const raw = r.raw('newReviews');
  const newReviews: RatingCounts = [0, 0, 0, 0, 0];
  if (!isObject(raw)) {
    r.fail('newReviews', `must be an object of counts by star rating, like {"4":2,"5":7}; got ${shown(raw)}`);
    return newReviews;
  }
  for (const [rating, count] of Object.entries(raw)) {
    if (!STAR_RATINGS.includes(rating)) r.fail(`newReviews.${rating}`, 'is not a star rating (1 to 5)');
    else if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 0 || count > INT32_MAX)
      r.fail(`newReviews.${rating}`, `must be a whole number, 0 or more; got ${shown(count)}`);
    else newReviews[Number(rating) - 1] = count;
  }
  return newReviews;
}

export function readReviewDay(r: FieldReader): ReviewDayRecord {
  const newReviews = readNewReviews(r);
  const responded = r.count('responded', INT32_MAX);
  const received = newReviews.reduce((a, b) => a + b, 0);
  if (responded > received) r.fail('responded', `must not exceed the ${received} new reviews of the day`);
  return { type: 'reviewDay', line: r.line, workspaceId: r.ref('workspaceId'), date: r.date('date'), newReviews, responded };
}
