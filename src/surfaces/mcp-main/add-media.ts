import { Type } from 'typebox';
import { IMAGE_MAX_BYTES, VIDEO_MAX_BYTES } from '../../policy.ts';
import { addMediaFromBuffer, uploadMedia } from '../../domain/media/media.service.ts';
import { scopeOf, targetWorkspace } from '../../domain/scope.ts';
import { UrlFetchFailed, UrlRefused, UrlTooLarge, safeFetch, type FetchedUrl, type SafeFetchOptions } from '../../platform/safe-fetch.ts';
import { BASE64_MEDIA_MAX_BYTES, URL_FETCH_MAX_REDIRECTS, URL_FETCH_TIMEOUT_MS } from '../../policy.ts';
import { MediaSchema } from '../main-api/media.operations.ts';
import type { MainContext } from '../main-api/context.ts';
import { defineOperation } from '../operation.ts';
import { ApiError, invalidRequest } from '../shared/errors.ts';

// add_media: the MCP counterpart of the multipart POST /media. An agent cannot stream a file
// part, so it gives either a URL, fetched here (public internet only: platform/safe-fetch.ts)
// and streamed into the media service like an upload, or the bytes as base64 for small files.
// Either way the media service sniffs the type, enforces the per-kind size limits and reads the
// dimensions, exactly as for an upload.

const MB = 1024 * 1024;
/** Base64 of BASE64_MEDIA_MAX_BYTES, plus room for line breaks or a data: URL prefix. */
const BASE64_MAX_CHARS = Math.ceil(BASE64_MEDIA_MAX_BYTES / 3) * 4 + 64 * 1024;
/** Room in an MCP request body for a tool call carrying the largest base64 content. */
export const ADD_MEDIA_BODY_LIMIT = BASE64_MAX_CHARS + 256 * 1024;

/** How URLs are fetched: public internet addresses only (the default rule), the video size limit. */
const URL_FETCH: Readonly<SafeFetchOptions> = Object.freeze({
  maxBytes: VIDEO_MAX_BYTES,
  timeoutMs: URL_FETCH_TIMEOUT_MS,
  maxRedirects: URL_FETCH_MAX_REDIRECTS,
});

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const BASE64URL = /^[A-Za-z0-9_-]*={0,2}$/;

function decodeBase64(text: string): Buffer {
  const data = text.replace(/^data:[\w.+-]+\/[\w.+-]+;base64,/i, '').replace(/\s+/g, '');
  if ((!BASE64.test(data) && !BASE64URL.test(data)) || data.length % 4 === 1) {
    throw invalidRequest([
      { field: 'base64', message: 'is not valid base64 (standard or URL-safe alphabet; a data: URL prefix is accepted)' },
    ]);
  }
  const bytes = Buffer.from(data, BASE64.test(data) ? 'base64' : 'base64url');
  if (bytes.length === 0) throw invalidRequest([{ field: 'base64', message: 'is empty' }]);
  if (bytes.length > BASE64_MEDIA_MAX_BYTES) {
    const message = `decodes to ${(bytes.length / MB).toFixed(1)} MB; base64 content is limited to ${BASE64_MEDIA_MAX_BYTES / MB} MB — give a url instead`;
    throw new ApiError(413, 'payload_too_large', `base64: ${message}`, { issues: [{ field: 'base64', message }] });
  }
  return bytes;
}

function urlError(error: unknown): unknown {
  if (error instanceof UrlRefused) {
    const message = `refused: ${error.message}`;
    return new ApiError(400, 'url_refused', `url: ${message}`, { issues: [{ field: 'url', message }] });
  }
  if (error instanceof UrlTooLarge) {
    const message = `is larger than ${error.maxBytes / MB} MB, the limit for videos`;
    return new ApiError(413, 'payload_too_large', `url: ${message}`, { issues: [{ field: 'url', message }] });
  }
  if (error instanceof UrlFetchFailed) {
    const message = `could not be fetched: ${error.message}`;
    return new ApiError(422, 'url_fetch_failed', `url: ${message}`, { issues: [{ field: 'url', message }] });
  }
  return error;
}

/** The last path segment of a URL, as a display file name (the bytes decide the type). */
function filenameOf(url: string): string | undefined {
  const last = new URL(url).pathname.split('/').filter(Boolean).pop();
  if (!last) return undefined;
  try {
    return decodeURIComponent(last);
  } catch {
    return last;
  }
}

export const addMediaOperation = defineOperation({
  name: 'add_media',
  effect: 'create',
  // No REST route: over HTTP, POST /media is the multipart upload (main-api/media-upload.ts).
  title: 'Add a media asset',
  openWorld: true,
  description: [
    'Adds an image (JPEG, PNG, WebP, GIF) or a video (MP4, MOV) to the media library, for use in a post’s mediaIds. Give exactly one of:',
    `\`url\` — an http(s) address on the public internet that the server downloads (at most ${URL_FETCH.maxRedirects} redirects, ${URL_FETCH.timeoutMs / 1000} s; addresses of private, loopback, link-local and other non-public networks are refused); or`,
    `\`base64\` — the file's bytes in base64 (at most ${BASE64_MEDIA_MAX_BYTES / MB} MB decoded; a data: URL is accepted).`,
    `The type is detected from the bytes (never from the name or a declared type); images up to ${IMAGE_MAX_BYTES / MB} MB, videos up to ${VIDEO_MAX_BYTES / MB} MB. A hub admin acting hub-wide names the workspace; others add to their active workspace.`,
  ].join(' '),
  input: Type.Object({
    workspaceId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description:
          'The workspace to add it to: required when acting hub-wide; otherwise your active workspace (it may be given, and must match).',
      }),
    ),
    url: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2048,
        description: 'An http or https URL on the public internet.',
        examples: ['https://cdn.example.com/photos/storefront.jpg'],
      }),
    ),
    base64: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: BASE64_MAX_CHARS,
        description: `The file's bytes, base64-encoded (at most ${BASE64_MEDIA_MAX_BYTES / MB} MB decoded).`,
      }),
    ),
    filename: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        description: 'A display name; its extension is corrected to match the content. Default: the URL’s last path segment, or "upload".',
      }),
    ),
  }),
  output: MediaSchema,
  handler: async (ctx: MainContext, input) => {
    if ((input.url === undefined) === (input.base64 === undefined)) {
      const message = 'give exactly one of url and base64';
      throw invalidRequest([{ field: input.url === undefined ? 'url' : 'base64', message }]);
    }
    if (input.base64 !== undefined) {
      return addMediaFromBuffer(ctx, ctx.caller, decodeBase64(input.base64), { filename: input.filename, workspaceId: input.workspaceId });
    }
    // Refuse a missing or foreign workspace before downloading anything.
    const workspaceId = await targetWorkspace(ctx.db, scopeOf(ctx.caller), input.workspaceId);
    let fetched: FetchedUrl | undefined;
    try {
      fetched = await safeFetch(input.url!, URL_FETCH);
      const upload = await uploadMedia(ctx, ctx.caller, fetched.body, {
        filename: input.filename ?? filenameOf(fetched.url),
        declaredType: fetched.contentType,
        workspaceId,
      });
      return upload.value;
    } catch (error) {
      throw urlError(error);
    } finally {
      fetched?.close();
    }
  },
});
