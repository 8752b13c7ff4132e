// GET {base_url}/media-public/<mediaId>?exp=…&sig=…: a post's media bytes at a signed, expiring URL,
// for the networks that fetch media by URL (Instagram, Meta). No session: the signature is the
// authority (src/domain/media/media-url.ts). Anything invalid, altered, expired or missing is the
// same bare 404, so the answer never tells whether a media id exists; a valid one gets the bytes
// with their type and length and nothing else (no filename, no ids in headers).
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Db } from '../db/database.ts';
import type { MediaStore } from '../domain/media/media-store.ts';
import { openSignedMedia } from '../domain/media/media.service.ts';
import { MEDIA_PUBLIC_PATH, type MediaUrlSigner } from '../domain/media/media-url.ts';
import type { Clock } from '../platform/clock.ts';

export interface MediaPublicOptions {
  prefix: string;
  db: Db;
  media: MediaStore;
  signer: MediaUrlSigner;
  clock: Clock;
}

const NOT_FOUND = { error: 'not_found', message: 'No such media, or the link expired.' };

const notFound = (reply: FastifyReply) =>
  reply.code(404).headers({ 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' }).send(NOT_FOUND);

export async function mediaPublicRoutes(app: FastifyInstance, options: MediaPublicOptions): Promise<void> {
  app.get(`${options.prefix}${MEDIA_PUBLIC_PATH}/:mediaId`, async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const object = await openSignedMedia(options, options.signer, {
      mediaId: (request.params as { mediaId?: unknown }).mediaId,
      exp: query.exp,
      sig: query.sig,
    });
    if (!object) return notFound(reply);
    return reply
      .code(200)
      .headers({
        'content-type': object.contentType,
        'content-length': String(object.size),
        // The URL expires; a network's fetch may be retried from a private cache for a short while.
        'cache-control': 'private, max-age=300',
        'x-content-type-options': 'nosniff',
        'content-security-policy': "default-src 'none'; sandbox",
        'referrer-policy': 'no-referrer',
        'cross-origin-resource-policy': 'cross-origin',
      })
      .send(object.stream);
  });
}
