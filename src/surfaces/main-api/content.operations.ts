import { Type, type TSchema } from 'typebox';
import { organicAnalytics, paidAnalytics } from '../../domain/analytics/analytics.service.ts';
import { DEFAULT_RANGE_DAYS, MAX_RANGE_DAYS } from '../../domain/analytics/date-range.ts';
import { SOCIAL_PLATFORMS } from '../../domain/channels/channel.ts';
import { CHANNEL_CURSOR, listChannels } from '../../domain/channels/channel.service.ts';
import { AD_PLATFORMS } from '../../domain/spend/spend.ts';
import { isValidPosition } from '../../domain/keyset.ts';
import { IMAGE_MAX_BYTES, VIDEO_MAX_BYTES } from '../../policy.ts';
import { MEDIA_CURSOR, getMedia, listMedia } from '../../domain/media/media.service.ts';
import { MAX_CHANNELS, MAX_IMAGES, MAX_TEXT_LENGTH, NEW_POST_STATUSES, POST_STATUSES, TEXT_LIMITS } from '../../domain/posts/post.ts';
import { POST_CURSOR, createPost, getPost, listPosts } from '../../domain/posts/post.service.ts';
import { googleReviewSummaries } from '../../domain/reviews/review.service.ts';
import { defineOperation, replayable } from '../operation.ts';
import { cursorFormat, Page, pageParameters } from '../shared/paging.ts';
import { CALENDAR_DATE, INSTANT, TIMESTAMP_OR_DATE } from '../shared/time-formats.ts';
import type { MainContext } from './context.ts';

// The main API's content operations: posts and channels (Organic), the media library (Media),
// and the analytics reports (Organic, Paid). Each is a REST route, an OpenAPI path and an MCP
// tool from this one declaration. POST /media is multipart and lives in media-upload.ts.

const cursorOf = (kind: string) => cursorFormat(`${kind}-cursor`, isValidPosition(kind));
const postCursor = cursorOf(POST_CURSOR);
const mediaCursor = cursorOf(MEDIA_CURSOR);
const channelCursor = cursorOf(CHANNEL_CURSOR);

const MB = 1024 * 1024;
const Nullable = <T extends TSchema>(schema: T, description: string) => Type.Union([schema, Type.Null()], { description });
const Timestamp = (description: string) => Type.String({ format: 'date-time', description });
const Id = (description: string) => Type.String({ minLength: 1, maxLength: 64, description });

const workspaceFilter = Type.Optional(Id('Only this workspace. One outside your scope gives an empty result (as does an unknown id).'));

const range = {
  from: Type.Optional(Type.String({ format: CALENDAR_DATE, description: `First UTC day, inclusive (YYYY-MM-DD). Default: ${DEFAULT_RANGE_DAYS - 1} days before \`to\`.` })),
  to: Type.Optional(Type.String({ format: CALENDAR_DATE, description: `Last UTC day, inclusive (YYYY-MM-DD). Default: today, or \`from\` when that is later. At most ${MAX_RANGE_DAYS} days from \`from\`.` })),
};

const WorkspaceRef = Type.Object({ _id: Type.String(), name: Type.String() }, { description: 'The workspace (location) of the row.' });
const ReportHead = {
  timezone: Type.Literal('UTC'),
  startDate: Type.String({ format: 'date', description: 'First UTC day of the report (inclusive).' }),
  endDate: Type.String({ format: 'date', description: 'Last UTC day of the report (inclusive).' }),
};

// ---------------------------------------------------------------------------------------------
// Schemas of records

const platformLimits = SOCIAL_PLATFORMS.map((p) => `${p} ${TEXT_LIMITS[p].toLocaleString('en-US')}`).join(', ');

const ChannelSchema = Type.Object({
  _id: Type.String({ description: 'Channel id: use it in a post’s channelIds.' }),
  workspaceId: Type.String(),
  platform: Type.Enum([...SOCIAL_PLATFORMS]),
  name: Type.String({ description: 'Display name of the page, profile or listing.' }),
  handle: Nullable(Type.String(), 'The account handle (e.g. @brewline_denver), when the platform has one.'),
  connected: Type.Boolean({ description: 'False when the platform connection expired or was revoked: the channel receives nothing until reconnected.' }),
  createdAt: Timestamp('When the channel was connected.'),
});

const DeliverySchema = Type.Object({
  channelId: Type.String(),
  platform: Type.Enum([...SOCIAL_PLATFORMS]),
  status: Type.Enum(['pending', 'published', 'failed'], { description: 'pending until the publisher has sent the post to this channel.' }),
  externalId: Nullable(Type.String(), 'The platform’s id of the publication (sandbox_… in the sandbox).'),
  error: Nullable(Type.String(), 'Why this channel failed.'),
  deliveredAt: Nullable(Type.String({ format: 'date-time' }), 'When the channel was published to (or failed).'),
});

const PostSchema = Type.Object({
  _id: Type.String(),
  workspaceId: Type.String(),
  text: Type.String(),
  channelIds: Type.Array(Type.String(), { description: 'Target channels, in the order given.' }),
  mediaIds: Type.Array(Type.String(), { description: 'Attached media assets, in order.' }),
  status: Type.Enum([...POST_STATUSES], {
    description: 'draft: not scheduled; scheduled: waits for scheduledAt; publishing: being sent now; published: every channel has it; failed: at least one channel failed (see error and deliveries).',
  }),
  scheduledAt: Nullable(Type.String({ format: 'date-time' }), 'When the post is (or was) due; null for an undated draft.'),
  publishedAt: Nullable(Type.String({ format: 'date-time' }), 'When publishing finished; set only on published posts.'),
  error: Nullable(Type.String(), 'Why a failed post failed, per channel.'),
  calendarAt: Timestamp('Where the post sits on the calendar: scheduledAt, else publishedAt, else createdAt. Lists are ordered and filtered by it.'),
  deliveries: Type.Array(DeliverySchema, { description: 'One per target channel: its delivery state.' }),
  createdBy: Nullable(Type.String(), 'The user who created it (null for imported posts).'),
  createdAt: Timestamp('When the post was created.'),
  updatedAt: Timestamp('When the post last changed.'),
});

export const MediaSchema = Type.Object({
  _id: Type.String({ description: 'Media id: use it in a post’s mediaIds.' }),
  workspaceId: Type.String(),
  kind: Type.Enum(['image', 'video']),
  contentType: Type.Enum(['image/jpeg', 'image/png', 'image/webp', 'image/gif', 'video/mp4', 'video/quicktime'], { description: 'Detected from the file’s bytes at upload (the declared type is not trusted).' }),
  filename: Type.String({ description: 'The uploaded name, its extension matching the content.' }),
  byteSize: Type.Integer(),
  width: Type.Integer({ description: 'Pixels (for a video, as displayed, rotation applied).' }),
  height: Type.Integer({ description: 'Pixels.' }),
  durationMs: Nullable(Type.Integer(), 'Length of a video in milliseconds; null for images.'),
  sha256: Type.String({ description: 'SHA-256 of the bytes, hex.' }),
  createdBy: Nullable(Type.String(), 'The uploader (null for imported assets).'),
  createdAt: Timestamp('When it was uploaded.'),
});

const ratio = (description: string) => Nullable(Type.Number(), `${description} Rounded to 4 decimals (0.0523 = 5.23 %); null when the denominator is 0.`);

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
  earnedMediaValueCents: Type.Integer({ description: 'Σ over platforms of impressions × the hub’s CPM for that platform / 1000, in cents (rounded half up per workspace). Totals: the sum of the workspaces’.' }),
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

const Distribution = (description: string) => Type.Object({
  1: Type.Integer(), 2: Type.Integer(), 3: Type.Integer(), 4: Type.Integer(), 5: Type.Integer(),
}, { description });

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

// ---------------------------------------------------------------------------------------------
// Descriptions shared by an operation's REST and MCP wording

const CREATE_POST = [
  'Creates a draft, or schedules a post for `scheduledAt` (in the future, at most 366 days ahead) or for now (`publishNow: true`); the publisher sends it to each target channel when it is due.',
  `Text limits (Unicode characters) apply per target platform: ${platformLimits}. Attach up to ${MAX_IMAGES} images or exactly one video (not both; X takes at most 4 images; Instagram and TikTok need an image or a video).`,
  'Channels and media must belong to the post’s workspace (see list_channels and list_media). A hub admin acting hub-wide names the workspace; others post to their active workspace.',
];

const LIST_MEDIA = 'The media library of the workspaces in your scope: images (JPEG, PNG, WebP, GIF) and videos (MP4, MOV) with their detected type, size, dimensions and duration, oldest upload first.';

// ---------------------------------------------------------------------------------------------

export const contentOperations = [
  defineOperation({
    name: 'list_channels',
    effect: 'read',
    rest: { path: '/channels' },
    title: 'List social channels',
    description: [
      'The social accounts (Instagram, Facebook, LinkedIn, X, TikTok, Google Business Profile) connected to the workspaces in your scope: the targets a post can be sent to.',
      'Ordered by connection time, then _id. Page with `cursor` until `nextCursor` is null.',
    ].join(' '),
    input: Type.Object({
      workspaceId: workspaceFilter,
      platform: Type.Optional(Type.Enum([...SOCIAL_PLATFORMS], { description: 'Only channels of this platform.' })),
      ...pageParameters('Channels', channelCursor),
    }),
    output: Page(ChannelSchema),
    handler: (ctx: MainContext, input) => listChannels(ctx.db, ctx.caller, input),
  }),
  defineOperation({
    name: 'list_posts',
    effect: 'read',
    rest: { path: '/posts' },
    title: 'List posts',
    description: [
      'Draft, scheduled, publishing, published and failed posts of the workspaces in your scope, ordered by calendarAt (the scheduled time, else the publish time, else the creation time), then _id.',
      '`from` and `to` select by calendarAt (a date covers its whole UTC day). Page with `cursor` until `nextCursor` is null; a post being published keeps its place.',
    ].join(' '),
    input: Type.Object({
      workspaceId: workspaceFilter,
      status: Type.Optional(Type.Enum([...POST_STATUSES], { description: 'Only posts in this status.' })),
      from: Type.Optional(Type.String({ format: TIMESTAMP_OR_DATE, maxLength: 64, description: 'Only posts with calendarAt at or after this instant (a date: 00:00 UTC).', examples: ['2026-11-01'] })),
      to: Type.Optional(Type.String({ format: TIMESTAMP_OR_DATE, maxLength: 64, description: 'Only posts with calendarAt at or before this instant (a date: through the end of that UTC day).', examples: ['2026-11-30'] })),
      ...pageParameters('Posts', postCursor),
    }),
    output: Page(PostSchema),
    handler: (ctx: MainContext, input) => listPosts(ctx.db, ctx.caller, input),
  }),
  defineOperation({
    name: 'get_post',
    effect: 'read',
    rest: { path: '/posts/:id' },
    title: 'Get a post',
    description: 'One post with its per-channel delivery state. 404 when it does not exist or is outside your scope.',
    input: Type.Object({ id: Id('The post’s _id.') }),
    output: PostSchema,
    handler: (ctx: MainContext, input) => getPost(ctx.db, ctx.caller, input.id),
  }),
  defineOperation({
    name: 'create_post',
    effect: 'create',
    rest: { path: '/posts' },
    title: 'Create a post',
    // A scheduled post is published to the channels' social networks: public, outside hubops.
    openWorld: true,
    description: [
      ...CREATE_POST,
      'Send an Idempotency-Key header to retry safely: the same key and body within 24 hours returns the first post (with Idempotent-Replayed: true) and creates nothing; the same key with another body is refused with 422 idempotency_key_reused.',
    ].join(' '),
    // A tool call has no request headers to send.
    mcp: { description: [...CREATE_POST, 'A tool call is not idempotent: if a call fails mid-way, check list_posts before creating the post again.'].join(' ') },
    input: Type.Object({
      workspaceId: Type.Optional(Id('The workspace to post in: required when acting hub-wide; otherwise your active workspace (it may be given, and must match).')),
      text: Type.String({ maxLength: MAX_TEXT_LENGTH, description: `The post text. May be empty only when media is attached. Limits per platform: ${platformLimits}.` }),
      channelIds: Type.Optional(Type.Array(Id('A channel _id.'), { maxItems: MAX_CHANNELS, uniqueItems: true, default: [], description: `Target channels (at most ${MAX_CHANNELS}); at least one to schedule. A draft may have none yet.` })),
      mediaIds: Type.Optional(Type.Array(Id('A media _id.'), { maxItems: MAX_IMAGES, uniqueItems: true, default: [], description: `Media assets in display order: up to ${MAX_IMAGES} images or exactly one video.` })),
      status: Type.Enum([...NEW_POST_STATUSES], { description: 'draft: save without publishing; scheduled: publish at scheduledAt (or now with publishNow).' }),
      scheduledAt: Type.Optional(Type.String({ format: INSTANT, maxLength: 64, description: 'When to publish (ISO 8601 with Z or an offset). Required for status scheduled unless publishNow; optional on a draft (its planned time).', examples: ['2026-12-01T15:00:00Z'] })),
      publishNow: Type.Optional(Type.Boolean({ description: 'With status scheduled and no scheduledAt: publish as soon as possible (within seconds).' })),
    }),
    output: PostSchema,
    handler: async (ctx: MainContext, input) => replayable(await createPost(ctx, ctx.caller, input, ctx.idempotencyKey)),
  }),
  defineOperation({
    name: 'list_media',
    effect: 'read',
    rest: { path: '/media' },
    title: 'List media assets',
    description: [
      LIST_MEDIA,
      `Upload new ones with POST /media (multipart/form-data: a \`file\` part, and \`workspaceId\` when acting hub-wide); images up to ${IMAGE_MAX_BYTES / MB} MB, videos up to ${VIDEO_MAX_BYTES / MB} MB.`,
      'Page with `cursor` until `nextCursor` is null.',
    ].join(' '),
    // A tool adds media with add_media, not with a multipart upload.
    mcp: { description: [LIST_MEDIA, 'Add new ones with add_media.', 'Page with `cursor` until `nextCursor` is null.'].join(' ') },
    input: Type.Object({
      workspaceId: workspaceFilter,
      kind: Type.Optional(Type.Enum(['image', 'video'], { description: 'Only images or only videos.' })),
      ...pageParameters('Assets', mediaCursor),
    }),
    output: Page(MediaSchema),
    handler: (ctx: MainContext, input) => listMedia(ctx.db, ctx.caller, input),
  }),
  defineOperation({
    name: 'get_media',
    effect: 'read',
    rest: { path: '/media/:id' },
    title: 'Get a media asset',
    description: 'One media asset. 404 when it does not exist or is outside your scope.',
    input: Type.Object({ id: Id('The asset’s _id.') }),
    output: MediaSchema,
    handler: (ctx: MainContext, input) => getMedia(ctx.db, ctx.caller, input.id),
  }),
  defineOperation({
    name: 'organic_analytics',
    effect: 'read',
    rest: { path: '/analytics/organic' },
    title: 'Organic social performance',
    description: [
      'Organic post performance per workspace and in total over a range of UTC days (default: the last 30 days, today included; at most 366 days): posts, impressions, reach, likes, comments, shares, saves,',
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
      cpm: Type.Array(Type.Object({ platform: Type.Enum([...SOCIAL_PLATFORMS]), cpmCents: Type.Integer({ description: 'Cents per 1,000 impressions.' }) }), { description: 'The hub’s CPM per platform used for earned media value.' }),
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
      'Paid ad performance per workspace, per campaign and in total over a range of UTC days (default: the last 30 days, today included — today is partial; at most 366 days):',
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
      campaigns: Type.Array(Type.Object({
        campaignId: Type.String({ description: 'The ad platform’s campaign id.' }),
        campaignName: Type.String({ description: 'Its name on the latest day in the range.' }),
        platform: Type.Enum([...AD_PLATFORMS]),
        workspaces: Type.Integer({ description: 'Workspaces in scope that ran it in the range.' }),
        ...PaidFigures,
      })),
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
      'and for the range of UTC days (default: the last 30 days; at most 366): new reviews, their average and distribution, how many have a reply, and the response rate (replied / new).',
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
