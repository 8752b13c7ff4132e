import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../platform/errors.ts';
import { JsonText } from '../platform/json-text.ts';
import { runOperation, type Operation } from './operation.ts';

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
  operations: Operation<Ctx>[];
  /** Called before each tool runs (e.g. an operation's extra rate limit); throw ApiError to refuse. */
  beforeTool?: (op: Operation<Ctx>) => Promise<void>;
}

function toolResult(value: unknown): CallToolResult {
  const structured = value instanceof JsonText ? value.value() : value;
  const text = value instanceof JsonText ? value.text : JSON.stringify(value);
  return { content: [{ type: 'text', text }], structuredContent: structured as Record<string, unknown> };
}

function toolError(error: unknown, onUnexpected: (error: unknown) => void): CallToolResult {
  if (error instanceof ApiError) {
    const detail = error.issues ? ` ${error.issues.map((i) => `${i.field}: ${i.message}`).join('; ')}` : '';
    return { isError: true, content: [{ type: 'text', text: `${error.code}: ${error.message}${detail}` }] };
  }
  onUnexpected(error);
  return { isError: true, content: [{ type: 'text', text: 'internal_error: the tool failed unexpectedly; try again later.' }] };
}

// The tool list of each list of operations, built once: a server is made per request, the
// declarations never change.
const toolLists = new WeakMap<Operation<never>[], unknown[]>();

function toolsOf<Ctx>(operations: Operation<Ctx>[]): unknown[] {
  const key = operations as Operation<never>[];
  let tools = toolLists.get(key);
  if (!tools) {
    tools = operations.map((op) => ({
      name: op.name,
      title: op.title,
      description: op.description,
      inputSchema: JSON.parse(JSON.stringify(op.input)),
      outputSchema: JSON.parse(JSON.stringify(op.output)),
      // GET operations only read; POST operations only create (nothing is overwritten or deleted).
      annotations: { title: op.title, readOnlyHint: op.method === 'GET', ...(op.method === 'GET' ? {} : { destructiveHint: false }), openWorldHint: op.openWorld ?? false },
    }));
    toolLists.set(key, tools);
  }
  return tools;
}

export async function createMcpServer<Ctx>(endpoint: McpEndpoint<Ctx>, ctx: Ctx, onUnexpected: (error: unknown) => void): Promise<Server> {
  const { Server, ListToolsRequestSchema, CallToolRequestSchema } = await sdk();
  const server = new Server({ name: endpoint.name, version: endpoint.version }, { capabilities: { tools: {} }, instructions: endpoint.instructions });
  const byName = new Map(endpoint.operations.map((op) => [op.name, op]));
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: toolsOf(endpoint.operations) as never }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const op = byName.get(request.params.name);
    if (!op) return { isError: true, content: [{ type: 'text', text: `Unknown tool ${request.params.name}.` }] };
    try {
      await endpoint.beforeTool?.(op);
      return toolResult(await runOperation(op, ctx, request.params.arguments ?? {}));
    } catch (error) {
      return toolError(error, onUnexpected);
    }
  });
  return server;
}

/** Serves one MCP HTTP request; the reply is hijacked (headers already set on it are kept), never cached. */
export async function serveMcp<Ctx>(endpoint: McpEndpoint<Ctx>, ctx: Ctx, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const server = await createMcpServer(endpoint, ctx, (error) => request.log.error({ err: error }, 'MCP tool failed'));
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
