import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Config } from '../../config.ts';
import { mcpAppResources } from '../mcp-apps/resources.ts';
import { acceptAnyJson, mcpHandler } from '../mcp.ts';
import { buildOpenApi, type OpenApiDocument } from '../openapi.ts';
import { verbOf } from '../operation.ts';
import { mountRest, serveDocument } from '../rest.ts';
import { ApiError } from '../shared/errors.ts';
import type { InputValidator } from '../shared/inputs.ts';
import { COMPRESSION_MIN_BYTES, HUB_CONDITIONAL_LIMIT, HUB_EXPORT_LIMIT, HUB_KEY_LIMIT, HUB_SUMMARY_LIMIT } from '../../policy.ts';
import { hubCsvExports, mountHubCsv } from './csv.ts';
import type { Admission, HubApiGuard } from './guard.ts';
import { hubOperations, type HubContext } from './operations.ts';

export const HUB_API_PREFIX = '/v1/hub';

export interface HubApiDeps {
  config: Config;
  guard: HubApiGuard;
  context: Omit<HubContext, 'hubId'>;
  /** The app's validation of operation input (its formats; its cursor key). */
  inputs: InputValidator;
  version: string;
}

const ErrorSchema = Type.Object({
  error: Type.String({
    description:
      'Machine-readable code: invalid_request, invalid_api_key, hub_access_suspended, rate_limited, browser_request_rejected, not_found, service_unavailable, internal_error.',
  }),
  message: Type.String({ description: 'What went wrong, for people.' }),
  issues: Type.Optional(
    Type.Array(Type.Object({ field: Type.String(), message: Type.String() }), { description: 'On 400: one entry per invalid parameter.' }),
  ),
  requestId: Type.Optional(Type.String({ description: 'On 500: quote it to support.' })),
});

const RATE_HEADERS = {
  RateLimit: {
    description: `Remaining requests (r) and seconds until a request frees up (t) per policy, e.g. \`"${HUB_KEY_LIMIT.policy}";r=87;t=41\`.`,
    schema: { type: 'string' },
  },
  'RateLimit-Policy': {
    description: `The limits that apply, e.g. \`"${HUB_KEY_LIMIT.policy}";q=${HUB_KEY_LIMIT.limit};w=${HUB_KEY_LIMIT.windowMs / 1000}\`.`,
    schema: { type: 'string' },
  },
};

export function hubOpenApi(config: Config, version: string): OpenApiDocument {
  // The CSV exports are read operations of their own route (csv.ts), documented beside the JSON reads; not MCP tools.
  return buildOpenApi([...hubOperations, ...hubCsvExports], {
    title: 'hubops Hub API',
    version,
    description: [
      "Read-only access to one hub's playbook opt-ins and paid ad spend, for dashboards, spreadsheets, automation tools, AI app builders and AI assistants.",
      'Authenticate every request with `Authorization: Bearer <HUB_API_KEY>` (a read key created by a hub admin under profile menu → Manage Hub → API). A key reads only its own hub.',
      "Call it from server-side code only: requests from browsers (an Origin header, a CORS preflight, or Sec-Fetch-Mode: cors with a Sec-Fetch-Site header) are refused with 403 browser_request_rejected, except same-origin ones from this server's own API reference page (/docs/api/hub).",
      `Limits: ${HUB_KEY_LIMIT.limit} requests per key in any rolling ${HUB_KEY_LIMIT.windowMs / 1000} s, and in addition ${HUB_SUMMARY_LIMIT.limit} per key per ${HUB_SUMMARY_LIMIT.windowMs / 1000} s on each of /opt-in-summary and /spend-by-workspace (and its .csv), and ${HUB_EXPORT_LIMIT.limit} per key per ${HUB_EXPORT_LIMIT.windowMs / 1000} s on /playbook-opt-ins.csv, which counts as one request whatever its rows. Every response carries RateLimit and RateLimit-Policy headers; a 429 carries Retry-After (seconds). A request answered 304 Not Modified is not counted against the limits (it still needs a valid key); conditional requests have a ceiling of their own, ${HUB_CONDITIONAL_LIMIT.limit} per key per ${HUB_CONDITIONAL_LIMIT.windowMs / 1000} s.`,
      `Polling: every GET answers with a strong ETag (and /opt-in-summary with Last-Modified) derived from what the database already knows about the hub. Send it back in If-None-Match (or If-Modified-Since) and an unchanged answer is 304 Not Modified, without a body; a malformed value is ignored. \`Cache-Control: private, no-cache, must-revalidate\` lets your own HTTP cache revalidate by itself. A tag names the representation your Accept-Encoding selects (a \`-br\`/\`-gzip\`/\`-zstd\` suffix when it asks for one): send it back with the same Accept-Encoding. If-Match is honoured too: 412 when it names no current tag. Send Accept-Encoding (br, gzip, zstd) and bodies above about ${COMPRESSION_MIN_BYTES / 1024} KB come compressed, with \`Vary: Accept-Encoding\`.`,
      `Errors have the body {"error": CODE, "message": TEXT} and, on 400, "issues": [{"field", "message"}]. Unknown query parameters are ignored. The same operations are MCP tools at ${config.baseUrl}${HUB_API_PREFIX}/mcp.`,
    ].join('\n\n'),
    serverUrl: `${config.baseUrl}${HUB_API_PREFIX}`,
    securityScheme: { type: 'http', scheme: 'bearer', description: 'A Hub API read key, e.g. `hubops_…`.' },
    errors: {
      '400': { description: 'invalid_request: a query parameter is invalid; `issues` names each field.' },
      '401': {
        description:
          'invalid_api_key: the key is missing, mistyped, revoked, expired (a rolled key: once its grace period is over), or an embed key.',
      },
      '403': { description: 'hub_access_suspended: the hub’s access is suspended; or browser_request_rejected.' },
      '429': {
        description: 'rate_limited: wait Retry-After seconds (the window rolls over about a minute).',
        headers: { 'Retry-After': { schema: { type: 'integer' } }, ...RATE_HEADERS },
      },
      '503': { description: 'service_unavailable: a dependency is down; retry shortly.' },
    },
    successHeaders: RATE_HEADERS,
    errorSchema: ErrorSchema,
  });
}

/**
 * GET /v1/hub: what a client finds at the API's base URL without a key. The endpoints come from
 * the operation declarations, as the OpenAPI document's paths do, so the two cannot differ.
 */
function hubIndex(config: Config, version: string) {
  const base = `${config.baseUrl}${HUB_API_PREFIX}`;
  return {
    name: 'hubops Hub API',
    version,
    description: "Read-only access to one hub's playbook opt-ins and paid ad spend.",
    openapi: `${base}/openapi.json`,
    mcp: `${base}/mcp`,
    authentication: {
      scheme: 'bearer',
      header: 'Authorization: Bearer <HUB_API_KEY>',
      keys: `A hub admin creates a read key in the web admin (${config.baseUrl}/app): profile menu → Manage Hub → API. Call the API from server-side code only: browsers are refused.`,
    },
    endpoints: [...hubOperations, ...hubCsvExports].flatMap((op) =>
      op.rest
        ? [
            {
              operationId: op.name,
              method: verbOf(op),
              url: `${base}${op.rest.path}`,
              title: op.title,
              parameters: Object.keys(op.input.properties),
            },
          ]
        : [],
    ),
  };
}

/**
 * A refused key on the MCP endpoint is 403 `invalid_api_key`, where the REST API answers 401: to
 * an MCP client an HTTP 401 means "start OAuth" (MCP authorization spec), and real clients (the
 * MCP Inspector, mcp-remote) do so on any 401 — discovering the main API's authorization server
 * on this origin and opening a sign-in page that can never give them a Hub API key. A 403 they
 * report as it is, with our message (see docs/mcp.md, Hub MCP endpoint).
 */
function refusedForMcp(error: unknown): unknown {
  if (!(error instanceof ApiError) || error.status !== 401) return error;
  const { 'www-authenticate': _challenge, ...headers } = error.headers;
  return new ApiError(403, error.code, error.message, { headers });
}

export async function hubApiPlugin(app: FastifyInstance, deps: HubApiDeps): Promise<void> {
  const { guard } = deps;
  const contextFor = ({ caller, db }: Admission): HubContext => ({ ...deps.context, db, hubId: caller.hubId });

  // Every response is about one hub's private data: never kept by a cache, unless it carries a
  // validator (then `private, no-cache, must-revalidate`: only the caller's own cache, revalidating every time).
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
    done(null, payload);
  });

  serveDocument(app, '/openapi.json', hubOpenApi(deps.config, deps.version));
  serveDocument(app, '/', hubIndex(deps.config, deps.version));

  // REST answers only after the operation, so a known key's verdict can ride along with its
  // first query: whileAdmitted gives the answer back once the verdict holds. A conditional read is
  // charged only once its validator did not match: a 304 costs no part of the limits.
  const admissions = new WeakMap<HubContext, Admission>();
  mountRest(app, hubOperations, {
    now: () => deps.context.clock.now(),
    inputs: deps.inputs,
    admitted(request, reply, op, { charge }, work) {
      guard.refuseBrowsers(request);
      return guard.whileAdmitted(request, reply, { extra: op.extraLimit, charge }, (admission) => {
        const ctx = contextFor(admission);
        admissions.set(ctx, admission);
        return work(ctx);
      });
    },
    async charge(ctx, reply, op) {
      const admission = admissions.get(ctx)!;
      admissions.set(ctx, { ...admission, charge: await guard.chargeLater(admission, reply, op.extraLimit) });
    },
    notModified: (ctx, reply, op, charged) => guard.notModified(admissions.get(ctx)!, reply, op.extraLimit, charged),
  });

  // The CSV exports: authenticated, limited and validated as the JSON reads are (csv.ts).
  mountHubCsv(app, { guard, inputs: deps.inputs, contextFor, now: () => deps.context.clock.now() });

  const serveMcp = mcpHandler<HubContext>(
    {
      name: 'hubops-hub-api',
      version: deps.version,
      instructions:
        "Read-only tools over one hub's playbook opt-ins and paid ad spend. Group and filter by playbook.id and workspace.id, never by name. Money is in cents. Check asOf and freshness before quoting spend.",
      operations: hubOperations,
      inputs: deps.inputs,
      resources: mcpAppResources,
    },
    app.log,
  );
  // The key's verdict is read before any tool runs (no riding along). In a scope of its own, so
  // that a body that is not JSON gets JSON-RPC's parse error.
  await app.register(async (scope) => {
    acceptAnyJson(scope);
    scope.post('/mcp', async (request, reply) => {
      guard.refuseBrowsers(request);
      const admission = await guard.authenticate(request, reply, {}).catch((error: unknown) => {
        throw refusedForMcp(error);
      });
      return serveMcp(contextFor(admission), (extraLimit, nth) => guard.chargeToolCall(admission, extraLimit, nth), request, reply);
    });
  });

  // Stateless MCP: no server-sent event stream to open and no session to delete.
  app.route({
    method: ['GET', 'DELETE'],
    url: '/mcp',
    handler: async (request, reply) => {
      guard.refuseBrowsers(request);
      reply.header('allow', 'POST');
      throw new ApiError(405, 'method_not_allowed', 'This MCP endpoint is stateless: send JSON-RPC requests with POST.');
    },
  });

  // Browsers preflight before any cross-origin call with a header: refuse it outright.
  app.options('/*', async (request) => {
    guard.refuseBrowsers(request);
  });

  for (const path of new Set([...hubOperations, ...hubCsvExports].flatMap((op) => (op.rest ? [op.rest.path] : [])))) {
    app.route({
      method: ['POST', 'PUT', 'PATCH', 'DELETE'],
      url: path,
      handler: async (_request, reply) => {
        reply.header('allow', 'GET, HEAD'); // Fastify answers HEAD wherever GET is
        throw new ApiError(405, 'method_not_allowed', 'The Hub API is read-only: use GET (or HEAD).');
      },
    });
  }
}
