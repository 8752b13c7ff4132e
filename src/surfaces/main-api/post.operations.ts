import { Type } from 'typebox';
import { SOCIAL_PLATFORMS } from '../../domain/channels/channel.ts';
import { MAX_CHANNELS, MAX_IMAGES, MAX_TEXT_LENGTH, NEW_POST_STATUSES, POST_STATUSES, TEXT_LIMITS } from '../../domain/posts/post.ts';
import { POST_CURSOR, createPost, getPost, listPosts } from '../../domain/posts/post.service.ts';
import { INSTAGRAM_CAROUSEL_MAX_ITEMS, INSTAGRAM_MAX_HASHTAGS, INSTAGRAM_MAX_MENTIONS } from '../../integrations/meta-pages/rules.ts';
import { IDEMPOTENCY_KEY_TTL_MS } from '../../policy.ts';
import { defineOperation, replayable } from '../operation.ts';
import { Page, pageParameters } from '../shared/paging.ts';
import { checkedString } from '../shared/formats.ts';
import { INSTANT, TIMESTAMP_OR_DATE } from '../shared/time-formats.ts';
import type { MainContext } from './context.ts';
import { Id, Nullable, positionCursorFormat, Timestamp, workspaceFilter } from './schemas.ts';

// Posts (Organic): list, read, create (draft, scheduled or now).

const postCursor = positionCursorFormat(POST_CURSOR);

const platformLimits = SOCIAL_PLATFORMS.map((p) => `${p} ${TEXT_LIMITS[p].toLocaleString('en-US')}`).join(', ');

const DeliverySchema = Type.Object({
  channelId: Type.String(),
  platform: Type.Enum([...SOCIAL_PLATFORMS]),
  status: Type.Enum(['pending', 'publishing', 'published', 'failed', 'unconfirmed'], {
    description:
      'pending (queued) until the publisher sends the post to this channel (also while a throttled network makes it wait, and after a send that published nothing and may succeed later, until its retry); publishing while the request is on its way; published; failed (see failureKind, error, platformMessage); unconfirmed when it may have reached the network but no answer came: the publisher looks the publication up and never sends it again blindly.',
  }),
  externalId: Nullable(Type.String(), 'The platform’s id of the publication (sandbox_… in the sandbox).'),
  error: Nullable(Type.String(), 'Why this channel failed, in our words.'),
  deliveredAt: Nullable(Type.String({ format: 'date-time' }), 'When the channel was published to (or failed).'),
  failureKind: Nullable(
    Type.String(),
    'Why it failed: needs_reconnect, missing_permission, invalid_request, platform_error, bad_answer, unreachable, not_confirmed (the publication could not be looked up: check the channel), publisher_stopped; or why it waits: throttled, processing (Instagram still processing the media: the next attempt waits for it), platform_error or unreachable (pending: sent again after the wait), no_answer or publisher_stopped (unconfirmed).',
  ),
  platformMessage: Nullable(Type.String(), 'The network’s own words about the failure or the wait.'),
  url: Nullable(Type.String(), 'The publication’s public address, when the network gives one.'),
  attemptedAt: Nullable(Type.String({ format: 'date-time' }), 'When the current (or last) attempt to send began.'),
});

const PostSchema = Type.Object({
  _id: Type.String(),
  workspaceId: Type.String(),
  text: Type.String(),
  channelIds: Type.Array(Type.String(), { description: 'Target channels, in the order given.' }),
  mediaIds: Type.Array(Type.String(), { description: 'Attached media assets, in order.' }),
  status: Type.Enum([...POST_STATUSES], {
    description:
      'draft: not scheduled; scheduled: waits for scheduledAt; publishing: being sent, or a delivery is still pending (throttled) or unconfirmed (being looked up); published: every channel has it; failed: at least one channel failed and none is still open (see error and deliveries).',
  }),
  scheduledAt: Nullable(Type.String({ format: 'date-time' }), 'When the post is (or was) due; null for an undated draft.'),
  publishedAt: Nullable(Type.String({ format: 'date-time' }), 'When publishing finished; set only on published posts.'),
  error: Nullable(Type.String(), 'Why a failed post failed, per channel.'),
  calendarAt: Timestamp(
    'Where the post sits on the calendar: scheduledAt, else publishedAt, else createdAt. Lists are ordered and filtered by it.',
  ),
  deliveries: Type.Array(DeliverySchema, { description: 'One per target channel: its delivery state.' }),
  createdBy: Nullable(Type.String(), 'The user who created it (null for imported posts).'),
  createdAt: Timestamp('When the post was created.'),
  updatedAt: Timestamp('When the post last changed.'),
});

// ---------------------------------------------------------------------------------------------
// Descriptions shared by an operation's REST and MCP wording

const CREATE_POST = [
  'Creates a draft, or schedules a post for `scheduledAt` (in the future, at most 366 days ahead) or for now (`publishNow: true`); the publisher sends it to each target channel when it is due.',
  `Text limits (Unicode characters) apply per target platform: ${platformLimits}. Attach up to ${MAX_IMAGES} images or exactly one video (not both; X takes at most 4 images; Instagram and TikTok need an image or a video).`,
  `The networks' own rules apply too, checked when the post is made rather than when it is due: Instagram takes JPEG images only, at most ${INSTAGRAM_CAROUSEL_MAX_ITEMS} items, ${INSTAGRAM_MAX_HASHTAGS} hashtags and ${INSTAGRAM_MAX_MENTIONS} @ mentions in a caption; Google Business Profile takes photos, not video. A post one of its channels would refuse is refused with invalid_request (400), nothing saved, its issue naming the field, the channel and the rule.`,
  'Channels and media must belong to the post’s workspace (see list_channels and list_media). A hub admin acting hub-wide names the workspace; others post to their active workspace.',
];

export const postOperations = [
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
      from: Type.Optional(
        checkedString(TIMESTAMP_OR_DATE, {
          maxLength: 64,
          description: 'Only posts with calendarAt at or after this instant (a date: 00:00 UTC).',
          examples: ['2026-11-01'],
        }),
      ),
      to: Type.Optional(
        checkedString(TIMESTAMP_OR_DATE, {
          maxLength: 64,
          description: 'Only posts with calendarAt at or before this instant (a date: through the end of that UTC day).',
          examples: ['2026-11-30'],
        }),
      ),
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
      `Send an Idempotency-Key header to retry safely: the same key and body within ${IDEMPOTENCY_KEY_TTL_MS / 3_600_000} hours returns the first post (with Idempotent-Replayed: true) and creates nothing; the same key with another body is refused with 422 idempotency_key_reused.`,
    ].join(' '),
    // A tool call has no request headers to send.
    mcp: {
      description: [
        ...CREATE_POST,
        'A tool call is not idempotent: if a call fails mid-way, check list_posts before creating the post again.',
      ].join(' '),
    },
    input: Type.Object({
      workspaceId: Type.Optional(
        Id('The workspace to post in: required when acting hub-wide; otherwise your active workspace (it may be given, and must match).'),
      ),
      text: Type.String({
        maxLength: MAX_TEXT_LENGTH,
        description: `The post text. May be empty only when media is attached. Limits per platform: ${platformLimits}.`,
      }),
      channelIds: Type.Optional(
        Type.Array(Id('A channel _id.'), {
          maxItems: MAX_CHANNELS,
          uniqueItems: true,
          default: [],
          description: `Target channels (at most ${MAX_CHANNELS}); at least one to schedule. A draft may have none yet.`,
        }),
      ),
      mediaIds: Type.Optional(
        Type.Array(Id('A media _id.'), {
          maxItems: MAX_IMAGES,
          uniqueItems: true,
          default: [],
          description: `Media assets in display order: up to ${MAX_IMAGES} images or exactly one video.`,
        }),
      ),
      status: Type.Enum([...NEW_POST_STATUSES], {
        description: 'draft: save without publishing; scheduled: publish at scheduledAt (or now with publishNow).',
      }),
      scheduledAt: Type.Optional(
        checkedString(INSTANT, {
          maxLength: 64,
          description:
            'When to publish (ISO 8601 with Z or an offset). Required for status scheduled unless publishNow; optional on a draft (its planned time).',
          examples: ['2026-12-01T15:00:00Z'],
        }),
      ),
      publishNow: Type.Optional(
        Type.Boolean({ description: 'With status scheduled and no scheduledAt: publish as soon as possible (within seconds).' }),
      ),
    }),
    output: PostSchema,
    handler: async (ctx: MainContext, input) => replayable(await createPost(ctx, ctx.caller, input, ctx.idempotencyKey)),
  }),
];
