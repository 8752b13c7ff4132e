import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import pino, { type Bindings, type ChildLoggerOptions, type Logger, type LoggerOptions } from 'pino';

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's trace and span ids while tracing is on (surfaces/shared/tracing.ts), for its log line; else null. */
    traceIds: { trace_id: string; span_id: string } | null;
  }
}

// Secrets never reach a log line: credentials in headers and any field that carries one.
const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-api-key"]',
  'res.headers["set-cookie"]',
  '*.authorization',
  '*.password',
  '*.key',
  '*.token',
  '*.access_token',
  '*.refresh_token',
  '*.client_secret',
  '*.code_verifier',
];

// Query parameters that carry a credential: embed tokens, OAuth codes, the web app's one-time
// form token (`created`, which reveals a new key once), a signed media URL's signature (`sig`), and anything a client wrongly puts in a
// URL. Request URLs are logged, so their values are masked first.
const SECRET_QUERY =
  /([?&](?:token|access_token|refresh_token|code|code_verifier|client_secret|key|api_key|password|created|pending|state|sig)=)[^&#]*/gi;

export function redactQuery(url: string): string {
  return url.replace(SECRET_QUERY, '$1[redacted]');
}

function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    serializers: {
      // Fastify's lines about a failed response (LogController) carry the request: its URL with
      // credentials in the query string masked, never its headers.
      req: (request: { method: string; url: string; clientAddress?: string; id?: string }) => ({
        id: request.id,
        method: request.method,
        url: redactQuery(request.url),
        // The client's address under TRUST_PROXY.
        remoteAddress: request.clientAddress,
      }),
      // An error as pino writes one, less what a database error quotes of the rows: PostgreSQL's
      // `detail` ("Failing row contains (…)": a post's text, a customer's name), `where`, the
      // internal query. Its code, constraint and table stay: they say what failed.
      err: (error: Error) => {
        const line = pino.stdSerializers.err(error) as Record<string, unknown>;
        for (const field of QUOTING_FIELDS) delete line[field];
        return line;
      },
    },
  };
}

/** Fields of node-postgres's DatabaseError that may quote row values or SQL. */
const QUOTING_FIELDS = ['detail', 'where', 'internalQuery', 'hint'] as const;

export const LOG_FORMATS = ['pretty', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** LOG_FORMAT when set; otherwise lines for a person on a terminal, JSON for a log collector. */
export function chooseLogFormat(setting: LogFormat | undefined, stdoutIsTerminal: boolean): LogFormat {
  return setting ?? (stdoutIsTerminal ? 'pretty' : 'json');
}

const LEVEL_NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
// Shown by the line's layout (or not at all) rather than as key=value.
const LAYOUT_FIELDS = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'reqId', 'err']);
const REQUEST_FIELDS = new Set([...LAYOUT_FIELDS, 'method', 'url', 'statusCode', 'responseTime', 'remoteAddress', 'trace_id', 'span_id']);
// A cursor or other long query value says nothing to a reader: its start is enough to tell two apart.
const LONG_QUERY_VALUE = /([?&][^=&#]+=)([^&#]{13})[^&#]{12,}/g;

function fieldText(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return typeof value === 'string' && /[\s"]/.test(text) ? JSON.stringify(text) : text;
}

/**
 * One pino JSON line as a person reads it: `17:02:55 GET /v1/hub/… 200 3.1 ms from 127.0.0.1 req=…` for a
 * request, `17:02:55 WARN message key=value … err="…"` otherwise. It formats what pino has
 * already redacted, so the same secrets are hidden in both formats. `stacks`: show an error's
 * stack (LOG_LEVEL=debug), else its message only.
 */
export function formatPretty(line: Record<string, unknown>, options: { stacks: boolean } = { stacks: false }): string {
  const time = new Date(typeof line.time === 'number' ? line.time : Date.now()).toTimeString().slice(0, 8);
  const level = typeof line.level === 'number' ? line.level : 30;
  const parts = [time];
  const isRequest = typeof line.method === 'string' && typeof line.statusCode === 'number';
  if (isRequest) {
    if (level !== 30) parts.push(LEVEL_NAMES[level] ?? String(level));
    parts.push(String(line.method), String(line.url ?? '').replace(LONG_QUERY_VALUE, '$1$2…'), String(line.statusCode));
    if (typeof line.responseTime === 'number') parts.push(`${line.responseTime.toFixed(1)} ms`);
    if (typeof line.remoteAddress === 'string') parts.push(`from ${line.remoteAddress}`);
  } else {
    parts.push(LEVEL_NAMES[level] ?? String(level));
    if (typeof line.msg === 'string') parts.push(line.msg);
  }
  const layout = isRequest ? REQUEST_FIELDS : LAYOUT_FIELDS;
  for (const [key, value] of Object.entries(line)) if (!layout.has(key) && value !== undefined) parts.push(`${key}=${fieldText(value)}`);
  if (typeof line.reqId === 'string') parts.push(`req=${line.reqId}`);
  if (isRequest && typeof line.trace_id === 'string') parts.push(`trace=${line.trace_id}`);
  const err = line.err as { message?: unknown; stack?: unknown } | undefined;
  let text = parts.join(' ');
  if (err && typeof err === 'object') {
    text += ` err=${fieldText(String(err.message ?? ''))}`;
    if (options.stacks && typeof err.stack === 'string') text += `\n${err.stack.replace(/^/gm, '    ')}`;
  }
  return `${text}\n`;
}

/** The process's logger: JSON lines on stdout, or the same lines formatted for a person. */
export function createLogger(options: { level: string; format: LogFormat }, out: NodeJS.WritableStream = process.stdout): Logger {
  if (options.format === 'json') return pino(loggerOptions(options.level), out);
  const stacks = options.level === 'debug' || options.level === 'trace';
  return pino(loggerOptions(options.level), {
    write: (json: string) => out.write(formatPretty(JSON.parse(json) as Record<string, unknown>, { stacks })),
  });
}

/** /healthz and /readyz, at the root or under BASE_URL's path. */
const HEALTH_CHECK = /\/(?:healthz|readyz)$/;

interface ServedRequest {
  method: string;
  url: string;
  statusCode: number;
  /** Milliseconds from the request's arrival to the end of its response. */
  ms: number;
  /** The client's address (TRUST_PROXY). */
  client: string;
  /** With tracing on: the ids of the request's span. */
  traceIds?: { trace_id: string; span_id: string } | null;
}

/**
 * The one log line of a served request: method, path with credentials masked, status and time;
 * the logger's bindings add the request id. Health checks are polled every few seconds and say
 * nothing when they pass, so only a failing one is logged. A 5xx, or a response that broke
 * off with an error, is an error line with that error.
 */
function logRequest(log: Pick<Logger, 'info' | 'error'>, request: ServedRequest, err?: Error | null): void {
  const path = request.url.split('?')[0]!.replace(/(.)\/+$/, '$1');
  if (HEALTH_CHECK.test(path) && request.statusCode < 500 && !err) return;
  const fields = {
    method: request.method,
    url: redactQuery(request.url),
    statusCode: request.statusCode,
    responseTime: Math.round(request.ms * 10) / 10,
    remoteAddress: request.client,
    ...request.traceIds,
  };
  if (err) log.error({ ...fields, err }, 'request');
  else if (request.statusCode >= 500) log.error(fields, 'request');
  else log.info(fields, 'request');
}

/**
 * Fastify's per-request lines (one on arrival, one on completion, with whole request objects)
 * give way to logRequest's one line on completion. Its other lines — errors while writing a
 * response — stay as Fastify writes them.
 */
export class RequestLogController extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    // A line that would not be written is not built (LOG_LEVEL=warn: every request that went well).
    if (!error && reply.statusCode < 500 && !levelEnabled(reply.log, 'info')) return;
    logRequest(
      reply.log,
      {
        method: request.method,
        url: request.url,
        statusCode: reply.statusCode,
        ms: reply.elapsedTime,
        client: request.clientAddress,
        traceIds: request.traceIds,
      },
      error,
    );
  }
}

/** Whether `log` writes lines of `level` (a logger that cannot say is taken to write them). */
function levelEnabled(log: FastifyBaseLogger, level: string): boolean {
  const ask = (log as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled;
  return typeof ask === 'function' ? ask.call(log, level) : true;
}

type LevelName = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/**
 * A request's logger, made on first use. Fastify gives every request a child logger with its
 * request id bound; making a pino child costs more than a cheap request's own work (its bindings
 * serialised, its level methods rebuilt), yet most requests write no line at the configured level
 * (every 304 at LOG_LEVEL=warn). This one asks the parent whether a level is on, and makes the
 * child only for a line that is written: the same lines, with the same request id.
 */
export class RequestLogger {
  readonly #parent: Logger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;
  #child: Logger | undefined;

  constructor(parent: Logger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  get level(): string {
    return (this.#child ?? this.#parent).level;
  }

  set level(level: string) {
    this.#made().level = level;
  }

  isLevelEnabled(level: string): boolean {
    return (this.#child ?? this.#parent).isLevelEnabled(level);
  }

  fatal(...args: unknown[]): void {
    this.#write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.#write('error', args);
  }
  warn(...args: unknown[]): void {
    this.#write('warn', args);
  }
  info(...args: unknown[]): void {
    this.#write('info', args);
  }
  debug(...args: unknown[]): void {
    this.#write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.#write('trace', args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.#made().child(bindings, options);
  }

  /** The child's own bindings (the request id): pino's bindings() of the child it stands for. */
  bindings(): Bindings {
    return this.#child ? this.#child.bindings() : { ...this.#parent.bindings(), ...this.#bindings };
  }

  #write(level: LevelName, args: unknown[]): void {
    if (this.#child === undefined && !this.#parent.isLevelEnabled(level)) return;
    (this.#made()[level] as (...a: unknown[]) => void)(...args);
  }

  #made(): Logger {
    this.#child ??= this.#parent.child(this.#bindings, this.#options);
    return this.#child;
  }
}

/**
 * Fastify's childLoggerFactory for a pino logger: each request's logger is a RequestLogger, made
 * into a pino child on its first written line. A logger that cannot say which levels it writes
 * gets its children at once, as Fastify's own factory makes them; so does a request whose route
 * or plugin sets its own logLevel, since the parent's level no longer says which lines it writes.
 */
export function requestLoggers(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  const parent = logger as unknown as Logger;
  if (typeof parent.isLevelEnabled !== 'function' || options.level !== undefined) return logger.child(bindings, options);
  return new RequestLogger(parent, bindings, options) as unknown as FastifyBaseLogger;
}
