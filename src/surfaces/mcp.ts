import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type {
  AuthInfo,
  CacheHint,
  CallToolResult,
  JSONRPCRequest,
  McpHttpHandler,
  McpRequestContext,
  Result,
  Server,
  ServerContext,
  Tool,
} from '@modelcontextprotocol/server';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { JsonText } from '../platform/json-text.ts';
import { JSON_MAX_DEPTH, type RatePolicy } from '../policy.ts';
import { resultValue, runOperation, type Operation, type OperationInfo } from './operation.ts';
import { nestsDeeperThan } from './rest.ts';
import { refusalOf } from './shared/errors.ts';
import type { InputValidator } from './shared/inputs.ts';

// MCP tools from the operation declarations, on the official SDK v2, stateless: every request is
// answered by a server made for it (no sessions to share between instances). Two legs, one
// factory: a request carrying the 2026-07-28 per-request envelope goes to the SDK's handler, a
// 2025-era one (initialize handshake, no envelope) to a stateless Streamable HTTP transport that
// answers in JSON. docs/mcp.md "Protocol revisions" says what is served and refused. The SDK is
// loaded on the first MCP request, so a process that serves none does not carry it.

type Sdk = typeof import('@modelcontextprotocol/server');
let loading: Promise<Sdk> | undefined;
const sdk = (): Promise<Sdk> => (loading ??= import('@modelcontextprotocol/server'));

/**
 * The revisions both endpoints serve, newest first. 2026-07-28 is negotiated per request; the
 * 2025 ones by `initialize` (an older offer is answered with 2025-11-25). 2025-03-26 stays because
 * the spec has servers assume it for a request without MCP-Protocol-Version; 2024-11-05 defined
 * the HTTP+SSE transport, which no client of a Streamable HTTP endpoint speaks.
 */
const SERVED_PROTOCOL_VERSIONS = ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26'];

/** The first revision without JSON-RPC batches (its clients MUST send one message per POST). */
const NO_BATCHES_FROM = '2025-06-18';

/**
 * How long clients may keep the results that depend only on the endpoint (tools/list,
 * resources/list and /read, server/discover) on 2026-07-28: the same for every caller, so shared
 * caches may keep them too, and they change only with a release.
 */
const ENDPOINT_CACHE: CacheHint = { ttlMs: 3_600_000, cacheScope: 'public' };

/** A static resource an endpoint serves (e.g. the HTML of an MCP Apps view, `ui://…`). */
export interface McpResource {
  readonly uri: string;
  readonly name: string;
  readonly title?: string;
  readonly description?: string;
  readonly mimeType: string;
  readonly text: string;
  readonly _meta?: Readonly<Record<string, unknown>>;
}

export interface McpEndpoint<Ctx> {
  name: string;
  version: string;
  instructions: string;
  operations: readonly Operation<Ctx>[];
  /** The app's validation of tool arguments (its formats; its cursor key). */
  inputs: InputValidator;
  /** Served by resources/list and resources/read; the `resources` capability only when there are some. */
  resources?: readonly McpResource[];
}

/**
 * Charges the `nth` tool call of one MCP request (numbered from 1) against the caller's limits,
 * with the operation's extra limit if it has one; throws a refusal (429) to refuse the call. The
 * rule every MCP endpoint follows: the HTTP request was charged once when it was authenticated,
 * and its first tool call uses that charge (taking only the extra limit); a JSON-RPC batch is
 * charged once more for every tool call after the first. A refused tool call consumes nothing.
 */
export type ToolCallCharge = (extraLimit: RatePolicy | undefined, nth: number) => Promise<void>;

/** Serves one MCP HTTP request, answered through the reply (so the app's onSend hooks apply), never cached. */
type ServeMcp<Ctx> = (ctx: Ctx, charge: ToolCallCharge, request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;

/** What one HTTP request gives the servers made for it: it reaches the SDK's factory as `authInfo.extra`. */
interface RequestScope<Ctx> {
  ctx: Ctx;
  charge: ToolCallCharge;
  onUnexpected: (error: unknown) => void;
  /** Tool calls so far in this HTTP request (a 2025-03-26 batch has several). */
  toolCalls: number;
}

const SCOPE_KEY = 'hubops.request';

function toolResult(result: unknown): CallToolResult {
  const value = resultValue(result);
  const structured = value instanceof JsonText ? value.value() : value;
  const text = value instanceof JsonText ? value.text : JSON.stringify(value);
  return { content: [{ type: 'text', text }], structuredContent: structured as Record<string, unknown> };
}

/** A refusal as a tool error, worded as its REST answer: `code: message`, then each bad field. */
function toolError(error: unknown, onUnexpected: (error: unknown) => void): CallToolResult {
  const refusal = refusalOf(error);
  if (refusal) {
    // Each bad field once: a message about one field already says it.
    const unsaid = (refusal.issues ?? []).map((i) => `${i.field}: ${i.message}`).filter((issue) => !refusal.message.includes(issue));
    const detail = unsaid.length > 0 ? ` ${unsaid.join('; ')}` : '';
    return { isError: true, content: [{ type: 'text', text: `${refusal.code}: ${refusal.message}${detail}` }] };
  }
  onUnexpected(error);
  return { isError: true, content: [{ type: 'text', text: 'internal_error: the tool failed unexpectedly; try again later.' }] };
}

/**
 * All four hints, always stated: directory reviews refuse a tool that leaves one to its default
 * (the defaults assume a destructive, open-world tool). docs/mcp.md "Tools" tables them.
 */
function toolAnnotations(op: OperationInfo): {
  title: string;
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
} {
  const reads = op.effect === 'read';
  return {
    title: op.title,
    readOnlyHint: reads,
    // No operation overwrites or deletes: a creation only adds.
    destructiveHint: false,
    // A read changes nothing however often it runs; a creation adds again on every call, as a
    // tool call carries no Idempotency-Key.
    idempotentHint: reads,
    openWorldHint: op.openWorld ?? false,
  };
}

/**
 * The tools of an endpoint in the order of its operations, which each endpoint declares on
 * purpose (the order is the same on every call). A tool with an MCP Apps view links its `ui://`
 * resource both ways hosts read it: `ui.resourceUri`, and the older flat `ui/resourceUri`.
 */
function toolsOf(endpoint: McpEndpoint<unknown>): Tool[] {
  const served = new Set((endpoint.resources ?? []).map((resource) => resource.uri));
  return endpoint.operations.map((op) => {
    const ui = op.mcp?.ui;
    if (ui !== undefined && (!ui.startsWith('ui://') || !served.has(ui)))
      throw new Error(`MCP tool ${op.name} links ${ui}, which ${endpoint.name} does not serve as a ui:// resource`);
    return {
      name: op.name,
      title: op.title,
      description: op.mcp?.description ?? op.description,
      inputSchema: JSON.parse(JSON.stringify(op.input)),
      outputSchema: JSON.parse(JSON.stringify(op.output)),
      annotations: toolAnnotations(op),
      ...(ui === undefined ? {} : { _meta: { ui: { resourceUri: ui }, 'ui/resourceUri': ui } }),
    };
  });
}

/**
 * The SDK's Server, reporting a request whose params do not fit its method as JSON-RPC does:
 * -32602 Invalid params naming each bad field. SDK v2 throws a plain Error quoting the
 * validator's issues as JSON for most methods (answered -32603 Internal error), and words
 * tools/call's -32602 the same way; both become `Invalid params for <method>: <field>: <problem>`.
 */
function serverClass(sdk: Sdk): typeof Server {
  const invalidParams = (method: string, error: unknown): unknown => {
    if (!(error instanceof Error) || (error instanceof sdk.ProtocolError && error.code !== sdk.ProtocolErrorCode.InvalidParams))
      return error;
    let issues: unknown;
    try {
      issues = JSON.parse(error.message.replace(/^Invalid tools\/call request: /, ''));
    } catch {
      return error;
    }
    if (!Array.isArray(issues) || !issues.every((i) => Array.isArray(i?.path) && typeof i.message === 'string')) return error;
    const detail = (issues as { path: unknown[]; message: string }[])
      .map((i) => `${i.path.map(String).join('.') || 'params'}: ${i.message}`)
      .join('; ');
    return new sdk.ProtocolError(sdk.ProtocolErrorCode.InvalidParams, `Invalid params for ${method}: ${detail}`);
  };
  return class extends sdk.Server {
    protected override _wrapHandler(method: string, handler: (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>) {
      const wrapped = super._wrapHandler(method, handler);
      return async (request: JSONRPCRequest, ctx: ServerContext) => {
        try {
          return await wrapped(request, ctx);
        } catch (error) {
          throw invalidParams(method, error);
        }
      };
    }
  };
}

/** The MCP server answering one HTTP request: `charge` is asked before each tool call runs (see ToolCallCharge). */
function createServer<Ctx>(
  sdk: Sdk,
  McpServer: typeof Server,
  endpoint: McpEndpoint<Ctx>,
  tools: Tool[],
  scope: RequestScope<Ctx>,
): Server {
  const resources = endpoint.resources ?? [];
  const server = new McpServer(
    { name: endpoint.name, version: endpoint.version },
    {
      capabilities: { tools: {}, ...(resources.length > 0 ? { resources: {} } : {}) },
      instructions: endpoint.instructions,
      supportedProtocolVersions: SERVED_PROTOCOL_VERSIONS,
      cacheHints: {
        'tools/list': ENDPOINT_CACHE,
        'resources/list': ENDPOINT_CACHE,
        'resources/read': ENDPOINT_CACHE,
        'server/discover': ENDPOINT_CACHE,
      },
    },
  );
  const operations = new Map(endpoint.operations.map((op, i) => [op.name, { op, tool: tools[i]! }]));
  server.setRequestHandler('tools/list', async () => ({ tools }));
  server.setRequestHandler('tools/call', async (request) => {
    const found = operations.get(request.params.name);
    // A protocol error, as in the MCP specification's own "Unknown tool" example: the call names
    // nothing that could run, unlike a tool that ran and failed (isError).
    if (!found) throw new sdk.ProtocolError(sdk.ProtocolErrorCode.InvalidParams, `Unknown tool: ${request.params.name.slice(0, 200)}`);
    let result: CallToolResult;
    try {
      await scope.charge(found.op.extraLimit, ++scope.toolCalls);
      result = toolResult(await runOperation(found.op, scope.ctx, request.params.arguments ?? {}, endpoint.inputs));
    } catch (error) {
      result = toolError(error, scope.onUnexpected);
    }
    return server.projectCallToolResult(result, found.tool.outputSchema);
  });
  if (resources.length > 0) {
    const byUri = new Map(resources.map((resource) => [resource.uri, resource]));
    server.setRequestHandler('resources/list', async () => ({
      resources: resources.map(({ text: _text, ...listed }) => ({ ...listed, _meta: listed._meta && { ...listed._meta } })),
    }));
    server.setRequestHandler('resources/read', async (request) => {
      const resource = byUri.get(request.params.uri);
      // The SDK answers it as 2026-07-28 requires of every revision: -32602 naming the URI.
      if (!resource) throw new sdk.ResourceNotFoundError(request.params.uri.slice(0, 500));
      return {
        contents: [
          {
            uri: resource.uri,
            mimeType: resource.mimeType,
            text: resource.text,
            ...(resource._meta ? { _meta: { ...resource._meta } } : {}),
          },
        ],
      };
    });
  }
  return server;
}

/** The body of a POST whose JSON did not parse (see acceptAnyJson). */
const UNPARSABLE = Symbol('unparsable JSON');
/** The body of a POST whose JSON nests deeper than any message may (see acceptAnyJson). */
const TOO_DEEP = Symbol('JSON too deep');

/**
 * Makes JSON bodies in this Fastify scope never fail to parse: an unparsable one (or one with
 * `__proto__` keys) reaches the MCP handler, which answers it as JSON-RPC requires (-32700),
 * where Fastify's parser would have answered with our REST error body. So does one nested deeper
 * than JSON_MAX_DEPTH (-32600), which the input rule at the door would refuse in REST's shape.
 */
export function acceptAnyJson(scope: FastifyInstance): void {
  const parseJson = scope.getDefaultJsonParser('error', 'error');
  scope.removeContentTypeParser('application/json');
  scope.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    parseJson(request, body as string, (error: Error | null, value: unknown) =>
      done(null, error ? UNPARSABLE : nestsDeeperThan(value, JSON_MAX_DEPTH) ? TOO_DEEP : value),
    );
  });
}

/**
 * JSON-RPC 2.0's answer to a body that is not JSON (-32700) or not a request, notification or
 * response (-32600: a non-object, no `method`, an empty batch), in our words and before any
 * server is made; and MCP's to a batch from a revision that has none (2025-06-18 removed them).
 */
function invalidBody(
  sdk: Sdk,
  body: unknown,
  protocolVersion: string | undefined,
): { code: number; message: string; id: string | number | null } | undefined {
  if (body === UNPARSABLE) return { code: -32700, message: 'Parse error: the body is not valid JSON.', id: null };
  if (body === TOO_DEEP)
    return {
      code: -32600,
      message: `Invalid Request: the body nests objects and arrays more than ${JSON_MAX_DEPTH} levels deep.`,
      id: null,
    };
  const messages = Array.isArray(body) ? body : [body];
  if (messages.length === 0) return { code: -32600, message: 'Invalid Request: an empty batch.', id: null };
  for (const message of messages) {
    if (
      sdk.isJSONRPCRequest(message) ||
      sdk.isJSONRPCNotification(message) ||
      sdk.isJSONRPCResultResponse(message) ||
      sdk.isJSONRPCErrorResponse(message)
    )
      continue;
    const fields =
      message !== null && typeof message === 'object' && !Array.isArray(message)
        ? (message as { id?: unknown; method?: unknown })
        : undefined;
    const fault = !fields ? 'is not a JSON object' : typeof fields.method !== 'string' ? 'has no method' : 'is not a JSON-RPC 2.0 message';
    return {
      code: -32600,
      message: `Invalid Request: ${Array.isArray(body) ? 'a message of the batch' : 'the message'} ${fault}; send {"jsonrpc": "2.0", "id", "method", "params"}.`,
      // The id when it can be told (a single message), as JSON-RPC asks; otherwise null.
      id: !Array.isArray(body) && (typeof fields?.id === 'string' || typeof fields?.id === 'number') ? fields.id : null,
    };
  }
  if (Array.isArray(body) && protocolVersion !== undefined && protocolVersion >= NO_BATCHES_FROM) {
    return {
      code: -32600,
      message: `Invalid Request: MCP ${protocolVersion} has no JSON-RPC batches; send one message per POST.`,
      id: null,
    };
  }
  return undefined;
}

/**
 * The request as the SDK reads it: method and headers; the body goes alongside, already parsed.
 * The SDK does not use the URL, so it is a fixed one: the Host header is the caller's to garble.
 */
function webRequest(request: FastifyRequest, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (name.startsWith(':') || value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  return new Request('http://mcp.invalid/', { method: request.method, headers, signal });
}

/** The SDK's answer as the Fastify reply: status, headers and body (an event stream is piped as it comes). */
async function sendResponse(request: FastifyRequest, reply: FastifyReply, response: Response): Promise<FastifyReply> {
  reply.code(response.status);
  response.headers.forEach((value, name) => {
    if (name !== 'cache-control' && name !== 'content-length') reply.header(name, value);
  });
  // Every MCP answer is about one caller's data.
  reply.header('cache-control', 'no-store');
  if (response.status >= 500) request.log.error({ status: response.status }, 'the MCP SDK failed to answer');
  if (response.body === null) return reply.send();
  if (response.headers.get('content-type')?.startsWith('text/event-stream'))
    return reply.send(Readable.fromWeb(response.body as WebReadableStream));
  return reply.send(await response.text());
}

/**
 * The MCP handler of an endpoint: the SDK's, made once on the first request, with the request's
 * own context handed to the server factory through `authInfo.extra` (the SDK passes it through
 * untouched; we authenticate before, in the route). Throws at once when a tool links a view the
 * endpoint does not serve. `log` gets what the SDK reports beside its answers.
 */
export function mcpHandler<Ctx>(endpoint: McpEndpoint<Ctx>, log: FastifyBaseLogger): ServeMcp<Ctx> {
  const tools = toolsOf(endpoint as McpEndpoint<unknown>);
  let ready:
    | Promise<{
        sdk: Sdk;
        modern: McpHttpHandler;
        legacy: (request: Request, authInfo: AuthInfo, parsedBody: unknown) => Promise<Response>;
      }>
    | undefined;
  const load = () =>
    (ready ??= sdk().then((sdk) => {
      const McpServer = serverClass(sdk);
      // A request the SDK refused (its answer says why) is the client's affair; anything else is ours.
      const report = (error: Error) => {
        const refusal =
          error instanceof sdk.UnsupportedProtocolVersionError ||
          error instanceof sdk.MissingRequiredClientCapabilityError ||
          /^(Rejected inbound request|Bad Request|Not Acceptable|Unsupported Media Type|Invalid Request|Parse error|Method not allowed)/i.test(
            error.message,
          );
        if (refusal) log.debug({ err: error }, 'the MCP SDK refused a request');
        else log.error({ err: error }, 'the MCP SDK failed');
      };
      const factory = ({ authInfo }: Pick<McpRequestContext, 'authInfo'>) =>
        createServer(sdk, McpServer, endpoint, tools, authInfo!.extra![SCOPE_KEY] as RequestScope<Ctx>);
      // The 2025 leg, stateless as createMcpHandler's own but answering in JSON, not an event
      // stream: no tool of ours sends anything before its result (the SDK's isLegacyRequest
      // pattern for a legacy leg of one's own).
      const legacy = async (request: Request, authInfo: AuthInfo, parsedBody: unknown): Promise<Response> => {
        const server = factory({ authInfo });
        const transport = new sdk.WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
        transport.onerror = report;
        const teardown = () => Promise.all([transport.close(), server.close()]).catch(report);
        request.signal.addEventListener('abort', () => void teardown(), { once: true });
        try {
          await server.connect(transport);
          return await transport.handleRequest(request, { authInfo, parsedBody });
        } catch (error) {
          // As the SDK's own stateless leg answers a failure: JSON-RPC's internal error.
          report(error instanceof Error ? error : new Error(String(error)));
          return Response.json({ jsonrpc: '2.0', id: null, error: { code: -32603, message: 'Internal error' } }, { status: 500 });
        } finally {
          await teardown();
        }
      };
      return { sdk, modern: sdk.createMcpHandler(factory, { legacy: 'reject', onerror: report }), legacy };
    }));

  return async (ctx, charge, request, reply) => {
    const { sdk, modern, legacy } = await load();
    const version = request.headers['mcp-protocol-version'];
    if (version !== undefined && (typeof version !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(version))) {
      // The SDK would echo the value, however long; a revision is a date.
      const message = `Bad Request: Unsupported protocol version (supported versions: ${SERVED_PROTOCOL_VERSIONS.join(', ')})`;
      return reply
        .code(400)
        .header('cache-control', 'no-store')
        .send({ jsonrpc: '2.0', id: null, error: { code: -32000, message } });
    }
    const invalid = invalidBody(sdk, request.body, version);
    if (invalid) {
      const { id, ...error } = invalid;
      return reply.code(400).header('cache-control', 'no-store').send({ jsonrpc: '2.0', id, error });
    }
    const scope: RequestScope<Ctx> = {
      ctx,
      charge,
      onUnexpected: (error) => request.log.error({ err: error }, 'MCP tool failed'),
      toolCalls: 0,
    };
    const authInfo: AuthInfo = { token: '', clientId: '', scopes: [], extra: { [SCOPE_KEY]: scope } };
    const aborted = new AbortController();
    reply.raw.once('close', () => aborted.abort());
    const web = webRequest(request, aborted.signal);
    const response = (await sdk.isLegacyRequest(web, request.body))
      ? await legacy(web, authInfo, request.body)
      : await modern.fetch(web, { authInfo, parsedBody: request.body });
    return sendResponse(request, reply, response);
  };
}
