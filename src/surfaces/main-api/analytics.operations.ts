import { Type } from 'typebox';
import { organicAnalytics, paidAnalytics } from '../../domain/analytics/analytics.service.ts';
import { DEFAULT_RANGE_DAYS, MAX_RANGE_DAYS } from '../../domain/analytics/date-range.ts';
import { SOCIAL_PLATFORMS } from '../../domain/channels/channel.ts';
import { googleReviewSummaries } from '../../domain/reviews/review.service.ts';
import { AD_PLATFORMS } from '../../domain/spend/spend.ts';
import { defineOperation } from '../operation.ts';
import { checkedString } from '../shared/formats.ts';
import { CALENDAR_DATE } from '../shared/time-formats.ts';
import type { MainContext } from './context.ts';
import { Nullable, workspaceFilter } from './schemas.ts';

// The analytics reports over a range of UTC days: organic and paid performance, Google reviews.

const range = {
  from: Type.Optional(
    checkedString(CALENDAR_DATE, {
      description: `First UTC day, inclusive (YYYY-MM-DD). Default: ${DEFAULT_RANGE_DAYS - 1} days before \`to\`.`,
    }),
  ),
  to: Type.Optional(
    checkedString(CALENDAR_DATE, {
      description: `Last UTC day, inclusive (YYYY-MM-DD). Default: today, or \`from\` when that is later. At most ${MAX_RANGE_DAYS} days from \`from\`.`,
    }),
  ),
};

const WorkspaceRef = Type.Object({ _id: Type.String(), name: Type.String() }, { description: 'The workspace (location) of the row.' });
const ReportHead = {
  timezone: Type.Literal('UTC'),
  startDate: Type.String({ format: 'date', description: 'First UTC day of the report (inclusive).' }),
  endDate: Type.String({ format: 'date', description: 'Last UTC day of the report (inclusive).' }),
};

const ratio = (description: string) =>
  Nullable(Type.Number(), `${description} Rounded to 4 decimals (0.0523 = 5.23 %); null when the denominator is 0.`);

const OrganicFigures = {
  posts: Type.Integer({ description: 'Posts published, as the platforms count them.' }),
  impressions: Type.Integer(),
  reach: Type.Integer({ description: 'Sum of the daily reach (people reached each day), not unique people over the range.' }),
  likes: Type.Integer(),
  comments: Type.Integer(),
  shares: Type.Integer(),
  saves: Type.Integer(),
  engagement: Type.Integer({ description: 'likes + comments + shares + saves.' }),
  engagementRate: ratio('engagement / reach.'),
  earnedMediaValueCents: Type.Integer({
    description:
      'Σ over platforms of impressions × the hub’s CPM for that platform / 1000, in cents (rounded half up per workspace). Totals: the sum of the workspaces’.',
  }),
};

const PaidFigures = {
  spendCents: Type.Integer({ description: 'Spend in cents (dollars = cents / 100).' }),
  impressions: Type.Integer(),
  clicks: Type.Integer(),
  ctr: ratio('Click-through rate: clicks / impressions.'),
  cpcCents: Nullable(Type.Integer(), 'Cost per click: spend / clicks, whole cents (half up); null without clicks.'),
  results: Type.Integer({ description: 'Conversions the campaigns optimise for (leads, purchases, …).' }),
  costPerResultCents: Nullable(Type.Integer(), 'spend / results, whole cents (half up); null without results.'),
};

const Distribution = (description: string) =>
  Type.Object(
    {
      1: Type.Integer(),
      2: Type.Integer(),
      3: Type.Integer(),
      4: Type.Integer(),
      5: Type.Integer(),
    },
    { description },
  );

const ReviewFigures = {
  averageRating: Nullable(Type.Number(), 'Average stars (1–5) of all reviews up to endDate, 2 decimals; null without reviews.'),
  reviewCount: Type.Integer({ description: 'All reviews up to endDate.' }),
  ratingDistribution: Distribution('All reviews up to endDate by star rating.'),
  newReviews: Type.Integer({ description: 'Reviews received from startDate to endDate.' }),
  newAverageRating: Nullable(Type.Number(), 'Average stars of the new reviews, 2 decimals; null without new reviews.'),
  newRatingDistribution: Distribution('The new reviews by star rating.'),
  respondedReviews: Type.Integer({ description: 'New reviews that have a reply.' }),
  responseRate: ratio('respondedReviews / newReviews.'),
};

export const analyticsOperations = [
  defineOperation({
    name: 'organic_analytics',
    effect: 'read',
    rest: { path: '/analytics/organic' },
    title: 'Organic social performance',
    description: [
      `Organic post performance per workspace and in total over a range of UTC days (default: the last ${DEFAULT_RANGE_DAYS} days, today included; at most ${MAX_RANGE_DAYS} days): posts, impressions, reach, likes, comments, shares, saves,`,
      'engagement (likes + comments + shares + saves), engagement rate (engagement / reach) and earned media value (impressions × the hub’s CPM for the platform / 1000, in cents; `cpm` lists the CPMs used, a platform without one counts 0).',
      'Every workspace in scope is listed (zeros when it has no figures), most impressions first. Totals are computed from the summed counts (rates are not averaged); totals.earnedMediaValueCents is the sum of the rows.',
    ].join(' '),
    input: Type.Object({
      workspaceId: workspaceFilter,
      platform: Type.Optional(Type.Enum([...SOCIAL_PLATFORMS], { description: 'Only this platform.' })),
      ...range,
    }),
    output: Type.Object({
      ...ReportHead,
      cpm: Type.Array(
        Type.Object({
          platform: Type.Enum([...SOCIAL_PLATFORMS]),
          cpmCents: Type.Integer({ description: 'Cents per 1,000 impressions.' }),
        }),
        { description: 'The hub’s CPM per platform used for earned media value.' },
      ),
      workspaces: Type.Array(Type.Object({ workspace: WorkspaceRef, ...OrganicFigures })),
      totals: Type.Object(OrganicFigures),
    }),
    handler: (ctx: MainContext, input) => organicAnalytics(ctx, ctx.caller, input),
  }),
  defineOperation({
    name: 'paid_analytics',
    effect: 'read',
    rest: { path: '/analytics/paid' },
    title: 'Paid campaign performance',
    description: [
      `Paid ad performance per workspace, per campaign and in total over a range of UTC days (default: the last ${DEFAULT_RANGE_DAYS} days, today included — today is partial; at most ${MAX_RANGE_DAYS} days):`,
      'spend (cents), impressions, clicks, CTR (clicks / impressions), CPC (spend / clicks), results and cost per result (spend / results).',
      'Every workspace in scope is listed (zeros when it ran nothing), most spend first; campaigns most spend first. Totals equal the sum of the workspaces (and of the campaigns); ratios are computed from the totals.',
    ].join(' '),
    input: Type.Object({
      workspaceId: workspaceFilter,
      platform: Type.Optional(Type.Enum([...AD_PLATFORMS], { description: 'Only this ad platform.' })),
      ...range,
    }),
    output: Type.Object({
      ...ReportHead,
      workspaces: Type.Array(Type.Object({ workspace: WorkspaceRef, ...PaidFigures })),
      campaigns: Type.Array(
        Type.Object({
          campaignId: Type.String({ description: 'The ad platform’s campaign id.' }),
          campaignName: Type.String({ description: 'Its name on the latest day in the range.' }),
          platform: Type.Enum([...AD_PLATFORMS]),
          workspaces: Type.Integer({ description: 'Workspaces in scope that ran it in the range.' }),
          ...PaidFigures,
        }),
      ),
      totals: Type.Object(PaidFigures),
    }),
    handler: (ctx: MainContext, input) => paidAnalytics(ctx, ctx.caller, input),
  }),
  defineOperation({
    name: 'google_review_summaries',
    effect: 'read',
    rest: { path: '/analytics/google-reviews' },
    title: 'Google review summaries',
    description: [
      'Google Business Profile reviews per workspace and in total: average rating, review count and rating distribution of all reviews up to `to`,',
      `and for the range of UTC days (default: the last ${DEFAULT_RANGE_DAYS} days; at most ${MAX_RANGE_DAYS}): new reviews, their average and distribution, how many have a reply, and the response rate (replied / new).`,
      'Every workspace in scope is listed, most new reviews first. Totals are exact sums (averages weighted by review counts).',
    ].join(' '),
    input: Type.Object({ workspaceId: workspaceFilter, ...range }),
    output: Type.Object({
      ...ReportHead,
      workspaces: Type.Array(Type.Object({ workspace: WorkspaceRef, ...ReviewFigures })),
      totals: Type.Object(ReviewFigures),
    }),
    handler: (ctx: MainContext, input) => googleReviewSummaries(ctx, ctx.caller, input),
  }),
];
