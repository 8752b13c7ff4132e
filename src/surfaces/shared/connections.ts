import type { IncomingMessage, ServerOptions, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HEADERS_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS, MAX_CONNECTIONS, REQUEST_BODY_TIMEOUT_MS, UPLOAD_TIMEOUT_MS } from '../../policy.ts';

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
  // (Plain callbacks: every request runs them, and an async hook costs a promise and a microtask.)
  fastify.addHook('onSend', (request, reply, payload, done) => {
    if (bodyUnread(request.raw)) reply.header('connection', 'close');
    done(null, payload);
  });
  // Replies Fastify does not send (oidc-provider's, behind reply.hijack()): ended after the response.
  fastify.addHook('onRequest', (request, reply, done) => {
    if (announcesBody(request.raw)) {
      reply.raw.once('finish', () => {
        if (bodyUnread(request.raw)) endConnection(request.raw);
      });
    }
    done();
  });
}

/** A request that says a body follows (a length above zero, or chunks). */
const announcesBody = (request: IncomingMessage): boolean =>
  request.headers['transfer-encoding'] !== undefined ||
  (request.headers['content-length'] !== undefined && request.headers['content-length'] !== '0');

const bodyUnread = (request: IncomingMessage): boolean => announcesBody(request) && !request.complete;

function endConnection(request: IncomingMessage): void {
  const socket = request.socket;
  // An injected request (tests, light-my-request) has no real socket to end.
  if (!socket.destroyed && typeof socket.end === 'function') socket.end(() => socket.destroy());
}

/** What the log says when a client hangs up before its request was read to the end. */
const CLIENT_WENT_AWAY = 'client closed the connection before the request was complete';

/**
 * The client closed its connection before its request was read to the end (a hang-up mid-upload):
 * whatever failed after that (the body's parser, a write cut short) is its doing, not ours nor
 * the database's, and no answer can reach it.
 */
export function clientWentAway(request: FastifyRequest): boolean {
  return !request.raw.complete && request.raw.destroyed && !bodyTimedOut.has(request.raw);
}

/** Thrown by a route that finds its client gone before it starts reading the body (see clientWentAway). */
export class ClientWentAway extends Error {
  constructor() {
    super(CLIENT_WENT_AWAY);
  }
}

/** How long a client may take, and how many connections an instance holds (src/policy.ts; tests shorten them). */
export interface ConnectionLimits {
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  uploadTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxConnections: number;
}

export const CONNECTION_LIMITS: ConnectionLimits = Object.freeze({
  headersTimeoutMs: HEADERS_TIMEOUT_MS,
  bodyTimeoutMs: REQUEST_BODY_TIMEOUT_MS,
  uploadTimeoutMs: UPLOAD_TIMEOUT_MS,
  keepAliveTimeoutMs: KEEP_ALIVE_TIMEOUT_MS,
  maxConnections: MAX_CONNECTIONS,
});

/** How often Node looks for requests over their head or whole-request time (its default, 30 s, would add up to that much). */
const TIMEOUT_CHECK_MS = 1_000;

/**
 * Fastify's server options for the limits. Node closes a connection whose request head is not in
 * within `headersTimeout` of its first byte, and any request not received whole within
 * `requestTimeout`, with a 408 (https://nodejs.org/api/http.html#serverheaderstimeout): the
 * latter is the uploads' limit, the one that holds for every request; shorter body deadlines are
 * per request (limitSlowClients). Fastify leaves requestTimeout off by default.
 */
export function serverOptions(limits: ConnectionLimits): {
  keepAliveTimeout: number;
  requestTimeout: number;
  http: ServerOptions;
} {
  return {
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    requestTimeout: limits.uploadTimeoutMs,
    http: { headersTimeout: limits.headersTimeoutMs, connectionsCheckingInterval: TIMEOUT_CHECK_MS },
  };
}

/** Requests whose body deadline passed, and the deadline timers of requests still receiving one. */
const bodyTimedOut = new WeakSet<IncomingMessage>();
const bodyDeadlines = new WeakMap<
  IncomingMessage,
  { timer: NodeJS.Timeout; startedAt: number; response: ServerResponse; uploadTimeoutMs: number }
>();

/**
 * What Node's timeouts do not cover: a connection that never sends a byte (Node starts the head's
 * clock at the first byte), and a body dripped slowly on a route that is not an upload. Plus the
 * cap on connections per instance (Node closes one beyond it at once).
 */
export function limitSlowClients(fastify: FastifyInstance, limits: ConnectionLimits): void {
  fastify.server.maxConnections = limits.maxConnections;
  fastify.server.on('connection', (socket: Socket) => {
    const silent = setTimeout(() => {
      if (socket.bytesRead === 0) socket.destroy();
    }, limits.headersTimeoutMs);
    silent.unref();
    socket.once('close', () => clearTimeout(silent));
  });
  fastify.addHook('onRequest', (request, reply, done) => {
    const raw = request.raw;
    if (raw.headers['content-length'] !== undefined || raw.headers['transfer-encoding'] !== undefined) {
      armBodyDeadline(raw, reply.raw, Date.now(), limits.bodyTimeoutMs, limits.uploadTimeoutMs);
      reply.raw.once('close', () => clearTimeout(bodyDeadlines.get(raw)?.timer));
    }
    done();
  });
}

/** An upload (its caller authenticated) gets the uploads' limit for its body instead, counted from its headers. */
export function allowUploadTime(request: FastifyRequest): void {
  const deadline = bodyDeadlines.get(request.raw);
  if (!deadline) return;
  clearTimeout(deadline.timer);
  armBodyDeadline(request.raw, deadline.response, deadline.startedAt, deadline.uploadTimeoutMs, deadline.uploadTimeoutMs);
}

/** The body not in by then: a 408 as Node words it for its own request timeout, and the connection closed. */
function armBodyDeadline(raw: IncomingMessage, response: ServerResponse, startedAt: number, ms: number, uploadTimeoutMs: number): void {
  const socket = raw.socket;
  const timer = setTimeout(
    () => {
      // Answered already (a refusal before the body): closeAfterUnreadBody ends the connection.
      if (raw.complete || socket.destroyed || response.headersSent) return;
      bodyTimedOut.add(raw);
      const body = JSON.stringify({ error: 'request_timeout', message: `The request body did not arrive within ${ms / 1000} s.` });
      // Written on the socket, not through the response the route may still answer on: the route's
      // body reader fails when the socket closes, and the error handler knows why (endedEarly).
      socket.end(
        `HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        () => socket.destroy(),
      );
    },
    Math.max(0, startedAt + ms - Date.now()),
  );
  timer.unref();
  bodyDeadlines.set(raw, { timer, startedAt, response, uploadTimeoutMs });
}

/**
 * Why a failed request can get no answer, for the log (info: neither ours nor the database's
 * doing), or undefined when it can: its body missed its deadline and the connection was closed
 * with a 408, or the client hung up before its request was read to the end.
 */
export function endedEarly(request: FastifyRequest): string | undefined {
  if (bodyTimedOut.has(request.raw)) return BODY_TIMED_OUT;
  if (clientWentAway(request)) return CLIENT_WENT_AWAY;
  return undefined;
}

const BODY_TIMED_OUT = 'request body did not arrive in time: answered 408 and closed the connection';
