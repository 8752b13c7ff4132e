import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { JsonText } from '../platform/json-text.ts';
import { JSON_MAX_DEPTH, type RatePolicy } from '../policy.ts';
import { resultValue, runOperation, type Operation, type OperationInfo } from './operation.ts';
import { nestsDeeperThan } from './rest.ts';
import { refusalOf } from './shared/errors.ts';

// MCP tools from the operation declarations, served over stateless Streamable HTTP: a new server
// and transport per request (no sessions to share between instances). The SDK is loaded on the
// first MCP request, so a process that serves none does not carry it.

type Sdk = typeof import('@modelcontextprotocol/sdk/server/index.js') &
  typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js') &
  typeof import('@modelcontextprotocol/sdk/types.js');
let loading: Promise<Sdk> | undefined;
const sdk = (): Promise<Sdk> =>
  (loading ??= Promise.all([
    import('@modelcontextprotocol/sdk/server/index.js'),
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]).then(([server, transport, types]) => ({ ...server, ...transport, ...types })));

export interface McpEndpoint<Ctx> {
  name: string;
  version: string;
  instructions: string;
  operations: readonly Operation<Ctx>[];
}

/**
 * Charges the `nth` tool call of one MCP request (numbered from 1) against the caller's limits,
 * with the operation's extra limit if it has one; throws a refusal (429) to refuse the call. The
 * rule every MCP endpoint follows: the HTTP request was charged once when it was authenticated,
 * and its first tool call uses that charge (taking only the extra limit); a JSON-RPC batch is
 * charged once more for every tool call after the first. A refused tool call consumes nothing.
 */
export type ToolCallCharge = (extraLimit: RatePolicy | undefined, nth: number) => Promise<void>;

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
    const detail = refusal.issues ? ` ${refusal.issues.map((i) => `${i.field}: ${i.message}`).join('; ')}` : '';
    return { isError: true, content: [{ type: 'text', text: `${refusal.code}: ${refusal.message}${detail}` }] };
  }
  onUnexpected(error);
  return { isError: true, content: [{ type: 'text', text: 'internal_error: the tool failed unexpectedly; try again later.' }] };
}

// The tool list of each list of operations, built once: a server is made per request, the
// declarations never change.
const toolLists = new WeakMap<readonly OperationInfo[], unknown[]>();

/**
 * All four hints, always stated: directory reviews refuse a tool that leaves one to its default
 * (the defaults assume a destructive, open-world tool). docs/mcp.md "Tools" tables them.
 */
function toolAnnotations(op: OperationInfo): { title: string; readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: boolean } {
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

/** The tools of a server in the order of its operations, which each server declares on purpose. */
function toolsOf(operations: readonly OperationInfo[]): unknown[] {
  let tools = toolLists.get(operations);
  if (!tools) {
    tools = operations.map((op) => ({
      name: op.name,
      title: op.title,
      description: op.mcp?.description ?? op.description,
      inputSchema: JSON.parse(JSON.stringify(op.input)),
      outputSchema: JSON.parse(JSON.stringify(op.output)),
      annotations: toolAnnotations(op),
    }));
    toolLists.set(operations, tools);
  }
  return tools;
}

/** The MCP server of one request: `charge` is asked before each tool call runs (see ToolCallCharge). */
async function createMcpServer<Ctx>(endpoint: McpEndpoint<Ctx>, ctx: Ctx, charge: ToolCallCharge, onUnexpected: (error: unknown) => void): Promise<Server> {
  const { Server, ListToolsRequestSchema, CallToolRequestSchema, ErrorCode } = await sdk();
  const server = new Server({ name: endpoint.name, version: endpoint.version }, { capabilities: { tools: {} }, instructions: endpoint.instructions });
  const byName = new Map(endpoint.operations.map((op) => [op.name, op]));
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: toolsOf(endpoint.operations) as never }));
  let toolCalls = 0;
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const op = byName.get(request.params.name);
    // A protocol error, as in the MCP specification's own "Unknown tool" example: the call names
    // nothing that could run, unlike a tool that ran and failed (isError).
    // (Not McpError, which would prefix the message with "MCP error -32602: ".)
    if (!op) throw Object.assign(new Error(`Unknown tool: ${request.params.name.slice(0, 200)}`), { code: ErrorCode.InvalidParams });
    try {
      await charge(op.extraLimit, ++toolCalls);
      return toolResult(await runOperation(op, ctx, request.params.arguments ?? {}));
    } catch (error) {
      return toolError(error, onUnexpected);
    }
  });
  reportInvalidParams(server);
  return server;
}

type RequestHandler = (request: unknown, extra: unknown) => Promise<unknown>;

/**
 * The SDK checks each request's params against its schema before the handler runs and reports a
 * mismatch (tools/call without a name, arguments that are not an object) as -32603 Internal
 * error quoting the validator; JSON-RPC calls it -32602 Invalid params. The check throws
 * synchronously, a handler's failure rejects: only the former is rewritten. (The handler map is
 * the SDK's own, pinned; test/mcp/hub-mcp.test.ts notices if it moves.)
 */
function reportInvalidParams(server: Server): void {
  const handlers = (server as unknown as { _requestHandlers: Map<string, RequestHandler> })._requestHandlers;
  for (const [method, handle] of handlers) {
    handlers.set(method, (request, extra) => {
      try {
        return handle(request, extra);
      } catch (error) {
        const issues = (error as { issues?: { path: PropertyKey[]; message: string }[] }).issues ?? [];
        const detail = issues.map((i) => `${i.path.map(String).join('.') || 'params'}: ${i.message}`).join('; ');
        throw Object.assign(new Error(`Invalid params for ${method}${detail ? `: ${detail}` : '.'}`), { code: -32602 });
      }
    });
  }
}

/** The body of a POST whose JSON did not parse (see acceptAnyJson). */
const UNPARSABLE = Symbol('unparsable JSON');
/** The body of a POST whose JSON nests deeper than any message may (see acceptAnyJson). */
const TOO_DEEP = Symbol('JSON too deep');

/**
 * Makes JSON bodies in this Fastify scope never fail to parse: an unparsable one (or one with
 * `__proto__` keys) reaches serveMcp, which answers it as JSON-RPC requires (-32700), where
 * Fastify's parser would have answered with our REST error body. So does one nested deeper than
 * JSON_MAX_DEPTH (-32600), which the input rule at the door would refuse in REST's shape.
 */
export function acceptAnyJson(scope: FastifyInstance): void {
  const parseJson = scope.getDefaultJsonParser('error', 'error');
  scope.removeContentTypeParser('application/json');
  scope.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    parseJson(request, body as string, (error: Error | null, value: unknown) => done(null, error ? UNPARSABLE : nestsDeeperThan(value, JSON_MAX_DEPTH) ? TOO_DEEP : value));
  });
}

/**
 * JSON-RPC 2.0's answer to a body that is not JSON (-32700) or not a request, notification or
 * response (-32600: a non-object, no `method`, an empty batch). The SDK would call the latter a
 * parse error, and take an empty batch as nothing to do.
 */
async function invalidBody(body: unknown): Promise<{ code: number; message: string; id: string | number | null } | undefined> {
  if (body === UNPARSABLE) return { code: -32700, message: 'Parse error: the body is not valid JSON.', id: null };
  if (body === TOO_DEEP) return { code: -32600, message: `Invalid Request: the body nests objects and arrays more than ${JSON_MAX_DEPTH} levels deep.`, id: null };
  const { JSONRPCMessageSchema } = await sdk();
  const messages = Array.isArray(body) ? body : [body];
  if (messages.length === 0) return { code: -32600, message: 'Invalid Request: an empty batch.', id: null };
  for (const message of messages) {
    if (JSONRPCMessageSchema.safeParse(message).success) continue;
    const fields = message !== null && typeof message === 'object' && !Array.isArray(message) ? (message as { id?: unknown; method?: unknown }) : undefined;
    const fault = !fields ? 'is not a JSON object' : typeof fields.method !== 'string' ? 'has no method' : 'is not a JSON-RPC 2.0 message';
    return {
      code: -32600,
      message: `Invalid Request: ${Array.isArray(body) ? 'a message of the batch' : 'the message'} ${fault}; send {"jsonrpc": "2.0", "id", "method", "params"}.`,
      // The id when it can be told (a single message), as JSON-RPC asks; otherwise null.
      id: !Array.isArray(body) && (typeof fields?.id === 'string' || typeof fields?.id === 'number') ? fields.id : null,
    };
  }
  return undefined;
}

/** Serves one MCP HTTP request; the reply is hijacked (headers already set on it are kept), never cached. */
export async function serveMcp<Ctx>(endpoint: McpEndpoint<Ctx>, ctx: Ctx, charge: ToolCallCharge, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const invalid = await invalidBody(request.body);
  if (invalid) {
    const { id, ...error } = invalid;
    await reply.code(400).header('cache-control', 'no-store').send({ jsonrpc: '2.0', id, error });
    return;
  }
  const server = await createMcpServer(endpoint, ctx, charge, (error) => request.log.error({ err: error }, 'MCP tool failed'));
  const { StreamableHTTPServerTransport } = await sdk();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  reply.hijack();
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) reply.raw.setHeader(name, value as string);
  // Hijacked replies skip onSend hooks; every MCP answer is about one caller's data.
  reply.raw.setHeader('cache-control', 'no-store');
  reply.raw.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(request.raw, reply.raw, request.body);
}
