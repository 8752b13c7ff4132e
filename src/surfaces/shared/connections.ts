import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';

// What the app does with the connections themselves, on every surface.

/**
 * A response sent before its request's body was read to the end (a 413 on a declared size, a 401
 * or 415 refused before reading, oidc-provider's refusal of a body over its limit) ends the
 * connection. Otherwise the connection stays open expecting the rest of the body: a client that
 * stops sending it after the refusal, as it should, has its next request on that socket read as
 * body bytes and never answered (behind a proxy that reuses connections, another user's request).
 * RFC 9112 §9.3: a server that does not read the whole body closes the connection after answering.
 */
export function closeAfterUnreadBody(fastify: FastifyInstance): void {
  // Fastify's replies (every route, the error handler, 404/405): said in the answer, `Connection:
  // close`, so the client does not reuse the socket; Node then ends it after the response.
  fastify.addHook('onSend', async (request, reply) => {
    if (!request.raw.complete) reply.header('connection', 'close');
  });
  // Replies Fastify does not send (oidc-provider's, behind reply.hijack()): ended after the response.
  fastify.addHook('onRequest', async (request, reply) => {
    reply.raw.once('finish', () => {
      if (!request.raw.complete) endConnection(request.raw);
    });
  });
}

function endConnection(request: IncomingMessage): void {
  const socket = request.socket;
  if (!socket.destroyed) socket.end(() => socket.destroy());
}

/** What the log says when a client hangs up before its request was read to the end. */
export const CLIENT_WENT_AWAY = 'client closed the connection before the request was complete';

/**
 * The client closed its connection before its request was read to the end (a hang-up mid-upload):
 * whatever failed after that (the body's parser, a write cut short) is its doing, not ours nor
 * the database's, and no answer can reach it.
 */
export function clientWentAway(request: FastifyRequest): boolean {
  return !request.raw.complete && request.raw.destroyed;
}

/** Thrown by a route that finds its client gone before it starts reading the body (see clientWentAway). */
export class ClientWentAway extends Error {
  constructor() {
    super(CLIENT_WENT_AWAY);
  }
}
