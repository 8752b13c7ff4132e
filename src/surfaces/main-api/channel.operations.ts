import { Type } from 'typebox';
import { SOCIAL_PLATFORMS } from '../../domain/channels/channel.ts';
import { CHANNEL_CURSOR, listChannels } from '../../domain/channels/channel.service.ts';
import { defineOperation } from '../operation.ts';
import { Page, pageParameters } from '../shared/paging.ts';
import type { MainContext } from './context.ts';
import { Nullable, positionCursorFormat, Timestamp, workspaceFilter } from './schemas.ts';

// The social channels a post is sent to (Organic).

const channelCursor = positionCursorFormat(CHANNEL_CURSOR);

const ChannelSchema = Type.Object({
  _id: Type.String({ description: 'Channel id: use it in a post’s channelIds.' }),
  workspaceId: Type.String(),
  platform: Type.Enum([...SOCIAL_PLATFORMS]),
  name: Type.String({ description: 'Display name of the page, profile or listing.' }),
  handle: Nullable(Type.String(), 'The account handle (e.g. @brewline_denver), when the platform has one.'),
  connected: Type.Boolean({
    description: 'False when the platform connection expired or was revoked: the channel receives nothing until reconnected.',
  }),
  createdAt: Timestamp('When the channel was connected.'),
});

export const channelOperations = [
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
];
