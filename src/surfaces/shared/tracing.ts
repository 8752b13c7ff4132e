import type { Context, Span } from '@opentelemetry/api';
import type { FastifyInstance } from 'fastify';
import { UNMATCHED_ROUTE } from '../../platform/metrics.ts';
import { endSpan, tracing } from '../../platform/tracing.ts';

// A server span for every request (when tracing is on): named by method and route template, a
// child of the caller's span when its `traceparent` header names one. Its context is entered
// twice — on arrival, and again before the handler, since a body is read in the socket's context,
// not the request's — so the database and outbound spans made while answering are its children.

const spans = new WeakMap<object, { span: Span; context: Context }>();

/** Registers the hooks when tracing is on; nothing at all when it is off. */
export function traceRequests(fastify: FastifyInstance): void {
  const t = tracing();
  if (!t) return;
  const { api, tracer } = t;
  fastify.addHook('onRequest', (request, _reply, done) => {
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE;
    const parent = api.propagation.extract(api.ROOT_CONTEXT, request.headers);
    const span = tracer.startSpan(
      `${request.method} ${route}`,
      {
        kind: api.SpanKind.SERVER,
        attributes: {
          'http.request.method': request.method,
          'http.route': route,
          'url.scheme': request.protocol,
          'network.protocol.version': request.raw.httpVersion,
          'client.address': request.clientAddress,
        },
      },
      parent,
    );
    const context = api.trace.setSpan(parent, span);
    spans.set(request, { span, context });
    const { traceId, spanId } = span.spanContext();
    request.traceIds = { trace_id: traceId, span_id: spanId };
    api.context.with(context, done);
  });
  fastify.addHook('preHandler', (request, _reply, done) => {
    const entry = spans.get(request);
    if (entry) api.context.with(entry.context, done);
    else done();
  });
  fastify.addHook('onResponse', (request, reply, done) => {
    const entry = spans.get(request);
    if (entry) {
      spans.delete(request);
      entry.span.setAttribute('http.response.status_code', reply.statusCode);
      if (reply.statusCode >= 500) entry.span.setStatus({ code: api.SpanStatusCode.ERROR });
      entry.span.end();
    }
    done();
  });
  // A client that hung up: its span ends without a status.
  fastify.addHook('onRequestAbort', (request, done) => {
    const entry = spans.get(request);
    if (entry) {
      spans.delete(request);
      entry.span.setAttribute('error.type', 'aborted');
      endSpan(entry.span);
    }
    done();
  });
}
