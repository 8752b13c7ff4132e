import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Replayable } from '../../domain/idempotency/idempotency.ts';
import { MAX_DIMENSION, MAX_DURATION_MS } from '../../domain/media/media-info.ts';
import { IDEMPOTENCY_KEY_TTL_MS, IMAGE_MAX_BYTES, VIDEO_MAX_BYTES } from '../../policy.ts';
import { uploadMedia } from '../../domain/media/media.service.ts';
import type { MediaAsset } from '../../domain/media/media.ts';
import type { OpenApiOperation } from '../openapi.ts';
import { idempotencyKeyOf, REPLAYED_HEADER } from '../rest.ts';
import { allowUploadTime, ClientWentAway, clientWentAway } from '../shared/connections.ts';
import { ApiError, invalidRequest } from '../shared/errors.ts';
import { MediaSchema } from './media.operations.ts';
import type { MainContext } from './context.ts';

// POST /media: multipart/form-data with one part named `file` (and, for a hub admin acting
// hub-wide, a `workspaceId` field before it or in the query string). The bytes stream straight
// into the media service, which sniffs, limits, inspects and stores them; nothing is buffered
// whole in memory and nothing is stored unless the upload is accepted.

export interface MediaUploadDeps {
  /** Authenticates the request (and applies rate limits) and returns its context; throws ApiError. */
  resolveContext(request: FastifyRequest, reply: FastifyReply): Promise<MainContext>;
}

// Room for the multipart envelope (boundaries, part headers, small fields) around the file.
const ENVELOPE_BYTES = 64 * 1024;
const FILE_FIELD = 'file';

const MB = 1024 * 1024;
const HOUR_MS = 3_600_000;

/** The OpenAPI operation of POST /media (multipart, so not generated from a JSON declaration). */
export const mediaUploadOpenApi: OpenApiOperation = {
  operationId: 'upload_media',
  summary: 'Upload a media asset',
  description: [
    `Adds an image (JPEG, PNG, WebP, GIF; up to ${IMAGE_MAX_BYTES / MB} MB) or a video (MP4, MOV; up to ${VIDEO_MAX_BYTES / MB} MB) to the media library, for use in posts.`,
    'Send multipart/form-data with the file in a part named `file`; a hub admin acting hub-wide also sends `workspaceId` (a form field before the file, or a query parameter).',
    'The type is detected from the bytes (the declared type and the file name are not trusted; the name’s extension is corrected), and the dimensions and a video’s duration are read from the file.',
    `A file claiming a side over ${MAX_DIMENSION.toLocaleString('en-US')} pixels or a duration over ${MAX_DURATION_MS / HOUR_MS} hours is refused with 400; a duration the file marks as unknown is null.`,
    'Unsupported content is refused with 415 unsupported_media_type, oversize files with 413 payload_too_large as soon as they pass the limit; nothing is stored unless the upload is accepted.',
    `Send an Idempotency-Key header to retry safely: the same key with the same file within ${IDEMPOTENCY_KEY_TTL_MS / HOUR_MS} hours returns the first asset (Idempotent-Replayed: true); with another file, 422 idempotency_key_reused.`,
  ].join(' '),
  parameters: [
    {
      name: 'workspaceId',
      in: 'query',
      required: false,
      description: 'The workspace to add the asset to (hub-wide callers); otherwise the active workspace.',
      schema: { type: 'string', maxLength: 64 },
    },
    {
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description: '1 to 255 visible ASCII characters, e.g. a UUID.',
      schema: { type: 'string', maxLength: 255 },
    },
  ],
  requestBody: {
    required: true,
    content: {
      'multipart/form-data': {
        schema: {
          type: 'object',
          required: ['file'],
          properties: {
            workspaceId: { type: 'string', maxLength: 64, description: 'As the query parameter; put it before the file part.' },
            file: { type: 'string', format: 'binary', description: 'The image or video.' },
          },
        },
      },
    },
  },
  responses: {
    '201': { description: 'The new asset.', content: { 'application/json': { schema: JSON.parse(JSON.stringify(MediaSchema)) } } },
    '413': {
      description: `payload_too_large: the file passed its kind's limit (${IMAGE_MAX_BYTES / MB} MB for an image, ${VIDEO_MAX_BYTES / MB} MB for a video).`,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    },
    '415': {
      description: 'unsupported_media_type: not multipart/form-data, or a file that is not a JPEG, PNG, WebP, GIF, MP4 or MOV.',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    },
  },
};

/** What the multipart parser threw while reading the body, kept apart from errors of our own. */
class UnreadableBody extends Error {
  readonly reason: unknown;

  constructor(reason: unknown) {
    super('the request body is not readable multipart/form-data');
    this.reason = reason;
  }
}

/**
 * The parser's parts or a part's bytes, with whatever the parser throws wrapped as UnreadableBody.
 * Errors thrown by the consumer (the media service, the database) never pass through here.
 */
async function* fromParser<T>(source: AsyncIterable<T>): AsyncGenerator<T> {
  try {
    for await (const item of source) yield item;
  } catch (error) {
    throw new UnreadableBody(error);
  }
}

/** A body the parser refused, in our words: its messages (and busboy's) are not for clients. */
function unreadable(reason: unknown): ApiError {
  const code = (reason as { code?: unknown } | null)?.code;
  if (code === 'FST_REQ_FILE_TOO_LARGE') {
    const message = `is larger than ${VIDEO_MAX_BYTES / MB} MB, the limit for videos`;
    return new ApiError(413, 'payload_too_large', `file: ${message}`, { issues: [{ field: 'file', message }] });
  }
  const message =
    code === 'FST_FILES_LIMIT' || code === 'FST_PARTS_LIMIT' || code === 'FST_FIELDS_LIMIT'
      ? 'has more parts than an upload takes: one part named "file", and optionally a "workspaceId" field'
      : 'is not valid multipart/form-data: it is cut short or malformed (check the boundary, and that the whole body was sent)';
  return invalidRequest([{ field: 'body', message }]);
}

function unsupportedRequest(): ApiError {
  const message = 'must be multipart/form-data with the media in a part named "file"';
  return new ApiError(415, 'unsupported_media_type', `body: ${message}`, { issues: [{ field: 'body', message }] });
}

export async function registerMediaUpload(app: FastifyInstance, deps: MediaUploadDeps): Promise<void> {
  await app.register(async (scope) => {
    await scope.register(multipart, {
      // The service enforces the real per-kind limits while streaming; these only bound the parser.
      limits: { fileSize: VIDEO_MAX_BYTES + 1, files: 1, fields: 5, fieldSize: 1_000, parts: 6, headerPairs: 50 },
    });

    scope.post('/media', async (request, reply) => {
      const ctx = await deps.resolveContext(request, reply);
      // Authenticated: its body may take the uploads' longer time (UPLOAD_TIMEOUT_MS), not a JSON body's.
      allowUploadTime(request);
      // Refuse a declared oversize body before reading any of it.
      const length = Number(request.headers['content-length']);
      if (Number.isFinite(length) && length > VIDEO_MAX_BYTES + ENVELOPE_BYTES) {
        const message = `is larger than ${VIDEO_MAX_BYTES / MB} MB, the limit for videos`;
        throw new ApiError(413, 'payload_too_large', `file: ${message}`, { issues: [{ field: 'file', message }] });
      }
      if (!request.isMultipart()) throw unsupportedRequest();
      // Gone while it was being authenticated: the parser would wait for ever for a body that ended.
      if (clientWentAway(request)) throw new ClientWentAway();

      const query = request.query as Record<string, unknown>;
      let workspaceId = typeof query.workspaceId === 'string' ? query.workspaceId : undefined;
      let upload: Replayable<MediaAsset> | undefined;
      try {
        for await (const part of fromParser(request.parts())) {
          if (part.type === 'field') {
            if (part.fieldname === 'workspaceId' && typeof part.value === 'string') workspaceId = part.value;
            continue;
          }
          if (part.fieldname !== FILE_FIELD || upload) {
            part.file.resume(); // drain it: only the one `file` part is read
            continue;
          }
          upload = await uploadMedia(
            ctx,
            ctx.caller,
            fromParser(part.file),
            { filename: part.filename, declaredType: part.mimetype, workspaceId },
            idempotencyKeyOf(request),
          );
        }
      } catch (error) {
        // Only what the parser threw is the client's 400; anything else (the database down, a
        // disk error, a bug) goes to the app's handler: 503, or a 500 logged with its stack.
        if (error instanceof UnreadableBody) throw unreadable(error.reason);
        throw error;
      }
      if (!upload) throw invalidRequest([{ field: FILE_FIELD, message: 'is required: send the media as a multipart part named "file"' }]);
      if (upload.replayed) reply.header(REPLAYED_HEADER, 'true');
      return reply.code(201).send(upload.value);
    });
  });
}
