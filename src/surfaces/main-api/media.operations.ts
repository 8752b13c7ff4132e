import { Type } from 'typebox';
import { MEDIA_CURSOR, getMedia, listMedia } from '../../domain/media/media.service.ts';
import { IMAGE_MAX_BYTES, VIDEO_MAX_BYTES } from '../../policy.ts';
import { defineOperation } from '../operation.ts';
import { Page, pageParameters } from '../shared/paging.ts';
import type { MainContext } from './context.ts';
import { Id, Nullable, positionCursorFormat, Timestamp, workspaceFilter } from './schemas.ts';

// The media library (Media): list and read. POST /media is multipart and lives in media-upload.ts.

const mediaCursor = positionCursorFormat(MEDIA_CURSOR);

const MB = 1024 * 1024;

export const MediaSchema = Type.Object({
  _id: Type.String({ description: 'Media id: use it in a post’s mediaIds.' }),
  workspaceId: Type.String(),
  kind: Type.Enum(['image', 'video']),
  contentType: Type.Enum(['image/jpeg', 'image/png', 'image/webp', 'image/gif', 'video/mp4', 'video/quicktime'], {
    description: 'Detected from the file’s bytes at upload (the declared type is not trusted).',
  }),
  filename: Type.String({ description: 'The uploaded name, its extension matching the content.' }),
  byteSize: Type.Integer(),
  width: Type.Integer({ description: 'Pixels (for a video, as displayed, rotation applied).' }),
  height: Type.Integer({ description: 'Pixels.' }),
  durationMs: Nullable(Type.Integer(), 'Length of a video in milliseconds; null for images.'),
  sha256: Type.String({ description: 'SHA-256 of the bytes, hex.' }),
  createdBy: Nullable(Type.String(), 'The uploader (null for imported assets).'),
  createdAt: Timestamp('When it was uploaded.'),
});

const LIST_MEDIA =
  'The media library of the workspaces in your scope: images (JPEG, PNG, WebP, GIF) and videos (MP4, MOV) with their detected type, size, dimensions and duration, oldest upload first.';

export const mediaOperations = [
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
];
