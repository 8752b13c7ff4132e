import type { Attributes, Context, Span, Tracer } from '@opentelemetry/api';

// OpenTelemetry traces, off unless an OTLP endpoint is configured (config.ts: otelTracesUrl).
// Off, nothing here is loaded (the SDK is imported on start) and every caller's first check,
// `tracer()`, says undefined: no hook is registered and no wrapper is installed. On, spans are
// made by hand at three places rather than by auto-instrumentation, which for ESM needs an
// --import loader hook and patches modules by name: the HTTP requests (surfaces/shared/tracing.ts),
// the database queries (db/database.ts) and the calls to ad platforms (traceOutbound, below).
// No attribute carries a secret: routes as templates, SQL without its values, outbound URLs
// without their query string, and no header.

type Api = typeof import('@opentelemetry/api');

interface Tracing {
  api: Api;
  tracer: Tracer;
  shutdown(): Promise<void>;
  flush(): Promise<void>;
}

let current: Tracing | undefined;

export interface TracingSettings {
  /** The OTLP/HTTP traces URL (JSON encoding). */
  url: string;
  serviceName: string;
  /** The share of new traces kept (a request whose parent was sampled is always kept). */
  sampleRatio: number;
  version: string;
}

/**
 * Starts the SDK: a tracer provider with W3C trace context propagation and AsyncLocalStorage
 * context, a batch exporter to `url`. Once per process; the returned handle flushes and stops it.
 */
export async function startTracing(settings: TracingSettings): Promise<{ flush(): Promise<void>; shutdown(): Promise<void> }> {
  if (current) throw new Error('tracing is already started');
  const [
    api,
    { NodeTracerProvider },
    { BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler },
    { OTLPTraceExporter },
    resources,
  ] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const provider = new NodeTracerProvider({
    resource: resources.resourceFromAttributes({ 'service.name': settings.serviceName, 'service.version': settings.version }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(settings.sampleRatio) }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: settings.url }))],
  });
  provider.register();
  const tracing: Tracing = {
    api,
    tracer: provider.getTracer('hubops', settings.version),
    flush: () => provider.forceFlush(),
    shutdown: async () => {
      await provider.shutdown();
      api.trace.disable();
      api.context.disable();
      api.propagation.disable();
      if (current === tracing) current = undefined;
    },
  };
  current = tracing;
  return { flush: tracing.flush, shutdown: tracing.shutdown };
}

/** The running tracing, or undefined when it is off (the one check every instrumented place makes). */
export function tracing(): Tracing | undefined {
  return current;
}

/** SQL's first keyword (SELECT, WITH, UPDATE…): the span's name and db.operation.name. */
function operationOf(text: string): string {
  const match = /^\s*(?:--[^\n]*\n\s*|\/\*[\s\S]*?\*\/\s*)*([A-Za-z]+)/.exec(text);
  return match ? match[1]!.toUpperCase() : 'QUERY';
}

/** Longest SQL text kept in db.query.text. */
const QUERY_TEXT_MAX = 4_096;

/**
 * The span of one database statement, a child of the active span; undefined outside any span (the
 * publisher's and the sync loop's polls every second would each be a trace of their own) or when
 * tracing is off. Its text is the statement as sent, with $1… placeholders: never the values.
 */
export function startQuerySpan(text: string, server: { host?: string | undefined; port?: number | undefined }): Span | undefined {
  const t = current;
  if (!t) return undefined;
  const parent = t.api.trace.getSpan(t.api.context.active());
  if (!parent) return undefined;
  const operation = operationOf(text);
  const attributes: Attributes = {
    'db.system.name': 'postgresql',
    'db.operation.name': operation,
    'db.query.text': text.length > QUERY_TEXT_MAX ? `${text.slice(0, QUERY_TEXT_MAX)}…` : text,
  };
  if (server.host && !server.host.startsWith('/')) attributes['server.address'] = server.host;
  if (server.port) attributes['server.port'] = server.port;
  return t.tracer.startSpan(operation, { kind: t.api.SpanKind.CLIENT, attributes });
}

/** Ends a span, marking it failed with the error's class (not its message, which may quote input). */
export function endSpan(span: Span, error?: unknown): void {
  if (error !== undefined && current) {
    const name = (error as { code?: unknown })?.code ?? (error as Error)?.name ?? 'error';
    span.setAttribute('error.type', String(name));
    span.setStatus({ code: current.api.SpanStatusCode.ERROR });
  }
  span.end();
}

/**
 * A call to an ad platform, as a client span: method, host, port and path (never the query
 * string, which carries OAuth codes and secrets on Meta's token exchange, nor any header), and
 * the status the answer had. Off: `run` alone.
 */
export async function traceOutbound<T extends { status: number }>(
  platform: string,
  method: string,
  url: URL,
  run: () => Promise<T>,
): Promise<T> {
  const t = current;
  if (!t) return run();
  const span = t.tracer.startSpan(`${method}`, {
    kind: t.api.SpanKind.CLIENT,
    attributes: {
      'http.request.method': method,
      'server.address': url.hostname,
      'server.port': Number(url.port) || (url.protocol === 'https:' ? 443 : 80),
      'url.scheme': url.protocol.replace(':', ''),
      'url.path': url.pathname,
      'hubops.platform': platform,
    },
  });
  try {
    const answer = await t.api.context.with(t.api.trace.setSpan(t.api.context.active(), span), run);
    span.setAttribute('http.response.status_code', answer.status);
    if (answer.status >= 400) span.setStatus({ code: t.api.SpanStatusCode.ERROR });
    span.end();
    return answer;
  } catch (error) {
    endSpan(span, error);
    throw error;
  }
}

/**
 * `work` inside a span of its own (a background job's unit: one account's sync), a root span
 * unless one is active. Off: `work` alone.
 */
export async function inSpan<T>(name: string, attributes: Attributes, work: () => Promise<T>): Promise<T> {
  const t = current;
  if (!t) return work();
  return t.tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      const result = await work();
      span.end();
      return result;
    } catch (error) {
      endSpan(span, error);
      throw error;
    }
  });
}

/** The ids of the span active now, for a log line; undefined when tracing is off or none is active. */
export function activeTraceIds(context?: Context): { trace_id: string; span_id: string } | undefined {
  const t = current;
  if (!t) return undefined;
  const span = t.api.trace.getSpan(context ?? t.api.context.active());
  if (!span) return undefined;
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}
