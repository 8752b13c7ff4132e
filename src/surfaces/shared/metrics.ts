import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest, onResponseHookHandler } from 'fastify';
import type { Config } from '../../config.ts';
import { UNMATCHED_ROUTE, type Metrics } from '../../platform/metrics.ts';

// /metrics: where Prometheus scrapes, and the hooks that count requests for it.

declare module 'fastify' {
  interface FastifyRequest {
    /** The Hub API key's id once the guard knows it (never the key): its requests are counted by it. */
    hubKeyId: string | null;
  }
}

/** Gives every request its `hubKeyId` slot (set by the Hub API guard), whether metrics are on or not. */
export function decorateHubKeyId(fastify: FastifyInstance): void {
  fastify.decorateRequest('hubKeyId', null);
}

/**
 * Counts every answered request. Each route gets its own onResponse hook with its recorder bound
 * at registration (onRoute), so a request costs no lookup of its route and allocates nothing
 * after the first of its method and status; requests that match no route are counted by one
 * global hook under UNMATCHED_ROUTE. Must be called before any route is added.
 */
export function countRequests(fastify: FastifyInstance, metrics: Metrics): void {
  fastify.addHook('onRoute', (route) => {
    const record = metrics.http.route(route.url);
    const hook: onResponseHookHandler = (request, reply, done) => {
      record(request.method, reply.statusCode, reply.elapsedTime / 1000);
      if (request.hubKeyId !== null) metrics.hubKeys.record(request.hubKeyId, reply.statusCode);
      done();
    };
    const existing = route.onResponse;
    route.onResponse = existing === undefined ? [hook] : Array.isArray(existing) ? [...existing, hook] : [existing, hook];
  });
  const unmatched = metrics.http.route(UNMATCHED_ROUTE);
  fastify.addHook('onResponse', (request, reply, done) => {
    if (request.is404) unmatched(request.method, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * Whether an Authorization header carries the metrics token. Compared as SHA-256 digests in
 * constant time: neither where the two differ nor the token's length shows in the timing.
 */
export function metricsTokenMatches(expected: Buffer, header: string | undefined): boolean {
  const presented = header?.match(/^Bearer[ ]+(\S+)\s*$/i)?.[1];
  return presented !== undefined && timingSafeEqual(expected, digest(presented));
}

const REFUSAL = JSON.stringify({ error: 'unauthorized', message: 'Send the metrics token: Authorization: Bearer <METRICS_TOKEN>.' });

/** One scrape: 401 without the token (the body says nothing about the metrics), else the exposition text. */
async function answer(metrics: Metrics, token: Buffer | undefined, authorization: string | undefined) {
  if (token && !metricsTokenMatches(token, authorization))
    return {
      status: 401,
      type: 'application/json; charset=utf-8',
      body: REFUSAL,
      headers: { 'www-authenticate': 'Bearer realm="hubops-metrics"', 'cache-control': 'no-store' },
    };
  return { status: 200, type: metrics.contentType, body: await metrics.scrape(), headers: { 'cache-control': 'no-store' } };
}

/**
 * GET /metrics on the main listener, when METRICS_TOKEN is set and METRICS_PORT is not: a scrape
 * without the token is 401. Without either setting there is no /metrics at all (404).
 */
export function serveMetrics(fastify: FastifyInstance, config: Config, metrics: Metrics): void {
  if (config.metricsPort !== undefined || config.metricsToken === undefined) return;
  const token = digest(config.metricsToken);
  fastify.get('/metrics', async (request: FastifyRequest, reply: FastifyReply) => {
    const scrape = await answer(metrics, token, request.headers.authorization);
    return reply.code(scrape.status).headers(scrape.headers).type(scrape.type).send(scrape.body);
  });
}

export interface MetricsListener {
  /** Where it listens (the port chosen when METRICS_PORT was 0 in a test). */
  readonly port: number;
  close(): Promise<void>;
}

/**
 * /metrics on a listener of its own (METRICS_PORT at METRICS_HOST), token-checked when
 * METRICS_TOKEN is set too. It answers GET /metrics and 404 to anything else, and its scrapes are
 * not counted among the app's requests.
 */
export async function listenForMetrics(config: Config, metrics: Metrics, port = config.metricsPort): Promise<MetricsListener | undefined> {
  if (port === undefined) return undefined;
  const token = config.metricsToken === undefined ? undefined : digest(config.metricsToken);
  const server = http.createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify({ error: 'not_found' }));
      return;
    }
    answer(metrics, token, request.headers.authorization).then(
      (scrape) =>
        response
          .writeHead(scrape.status, { ...scrape.headers, 'content-type': scrape.type })
          .end(request.method === 'HEAD' ? undefined : scrape.body),
      () => response.writeHead(500, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify({ error: 'internal_error' })),
    );
  });
  // A scraper keeps its connection alive between scrapes; a stop must not wait on it.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, config.metricsHost, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
