import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import type { Caller } from '../../domain/caller.ts';
import { DocIndex, guideEntries, openApiEntries } from './docs.ts';
import type { MediaStore } from '../../domain/media/media-store.ts';
import type { Clock } from '../../platform/clock.ts';
import { hubOpenApi, HUB_API_PREFIX } from '../hub-api/plugin.ts';
import type { BearerAuth } from '../main-api/auth.ts';
import { mainOperations } from '../main-api/operations.ts';
import { mainOpenApi } from '../main-api/plugin.ts';
import { mcpAppResources } from '../mcp-apps/resources.ts';
import { acceptAnyJson, mcpHandler } from '../mcp.ts';
import { ApiError } from '../shared/errors.ts';
import { readGuideFiles, servedMarkdown } from '../shared/guide-files.ts';
import { loopbackAliasRefusal } from '../shared/loopback-alias.ts';
import type { InputValidator } from '../shared/inputs.ts';
import { SCOPE } from '../shared/oauth.ts';
import type { ReportCaches } from '../shared/report-caches.ts';
import { ADD_MEDIA_BODY_LIMIT } from './add-media.ts';
import { mainMcpTools, type McpMainContext } from './tools.ts';

// The main MCP server at {base_url}/mcp: stateless Streamable HTTP (a new server per POST) for
// 2026-07-28 and the 2025 revisions (see mcp.ts), protected by the same OAuth 2.1 server as the
// REST API and following the MCP authorization specification (unchanged from 2025-11-25 to
// 2026-07-28 for a protected resource):
// - RFC 9728 protected-resource metadata at /.well-known/oauth-protected-resource + the resource
//   path (path-aware form) only: the root form would describe a resource that is the origin;
// - a 401 carries `WWW-Authenticate: Bearer resource_metadata="…", scope="service:full"` (and
//   error="invalid_token" when a token was presented), which starts a client's discovery;
// - access tokens must have been issued for this resource (RFC 8707 audience `{base_url}/mcp`):
//   a token for the REST API is refused here, as an MCP token is refused by the REST API;
// - tokens only from the Authorization header; every POST counts against the plan's limit like a
//   REST request, and each further tool call in a JSON-RPC batch counts once more;
// - a request with a foreign Origin header (a web page) is refused with 403 (DNS rebinding).

export interface McpMainDeps {
  config: Config;
  db: Db;
  clock: Clock;
  media: MediaStore;
  auth: BearerAuth;
  caches: ReportCaches;
  /** The app's validation of tool arguments (its formats; its cursor key). */
  inputs: InputValidator;
  version: string;
}

const WELL_KNOWN = '/.well-known/oauth-protected-resource';

/** The MCP server as an OAuth protected resource: its identifier and where its metadata lives. */
export function mcpResource(config: Config): { resource: string; path: string; metadataPath: string; metadataUrl: string } {
  const resource = `${config.baseUrl}/mcp`;
  const url = new URL(resource);
  // RFC 9728 §3.1: the well-known segment goes between the host and the resource's path.
  const metadataPath = `${WELL_KNOWN}${url.pathname}`;
  return { resource, path: url.pathname, metadataPath, metadataUrl: `${url.origin}${metadataPath}` };
}

/** The RFC 9728 protected-resource metadata document of the MCP server. */
export function protectedResourceMetadata(config: Config): Record<string, unknown> {
  return {
    resource: mcpResource(config).resource,
    authorization_servers: [config.siteUrl],
    scopes_supported: [SCOPE],
    bearer_methods_supported: ['header'],
    resource_name: 'hubops MCP server',
    resource_documentation: `${config.baseUrl}/openapi.json`,
  };
}

async function buildDocIndex(config: Config, version: string): Promise<DocIndex> {
  const guide = await readGuideFiles();
  return new DocIndex([
    // As /docs shows them: the examples with this server's address for `$BASE`.
    ...guide.flatMap((file) => guideEntries(file.page, servedMarkdown(file.text, config.baseUrl))),
    ...openApiEntries(mainOpenApi(config, version, mainOperations), 'openapi-main'),
    ...openApiEntries(hubOpenApi(config, version), 'openapi-hub'),
  ]);
}

function instructions(config: Config): string {
  return [
    'hubops: marketing operations for franchise networks. An account owns hubs (brands); a hub has workspaces (locations).',
    'Call whoami first: it says which hub you act in and whether the token is bound to one workspace (workspace: null means a hub admin acting across the whole hub, who must pass workspaceId when creating posts or media).',
    'Records are identified by _id; lists return {data, nextCursor} — pass nextCursor back as cursor until it is null. Money is in integer cents. Dates are UTC days (YYYY-MM-DD).',
    'Organic: list_channels gives the channel ids a post targets; create_post drafts or schedules a post; organic_analytics and google_review_summaries report per workspace.',
    'Paid: paid_analytics reports per workspace and campaign; list_playbooks lists the hub’s playbooks; list_playbook_opt_ins, get_opt_in_summary and get_spend_by_workspace are hub-wide and need a hub admin’s whole-hub token. Check asOf and freshness before quoting spend.',
    'Media: list_media and get_media read the library; add_media adds an image or video from a public URL or base64 content, to use in a post’s mediaIds.',
    `Docs: search_docs and read_doc search this service's guide (README and docs pages) and its OpenAPI documents (${config.baseUrl}/openapi.json, ${config.baseUrl}${HUB_API_PREFIX}/openapi.json).`,
  ].join('\n');
}

export async function mcpMainPlugin(app: FastifyInstance, deps: McpMainDeps): Promise<void> {
  const resource = mcpResource(deps.config);
  const metadata = JSON.stringify(protectedResourceMetadata(deps.config));
  let docs: Promise<DocIndex> | undefined;
  const docIndex = () =>
    (docs ??= buildDocIndex(deps.config, deps.version).catch((error: unknown) => {
      docs = undefined;
      throw error;
    }));
  const serveMcp = mcpHandler<McpMainContext>(
    {
      name: 'hubops',
      version: deps.version,
      instructions: instructions(deps.config),
      operations: mainMcpTools,
      inputs: deps.inputs,
      resources: mcpAppResources,
    },
    app.log,
  );

  // Reached by another loopback name than BASE_URL's: the resource, its metadata and its tokens'
  // audience are BASE_URL's, so an SDK would fail on a resource mismatch; say which URL to use.
  app.addHook('onRequest', async (request) => {
    const refusal = loopbackAliasRefusal(
      deps.config.baseUrl,
      request.headers.host,
      `this MCP server (${resource.resource}) and its tokens`,
    );
    if (refusal) throw new ApiError(421, 'misdirected_request', refusal);
  });

  // RFC 9728 metadata at the path-aware URL of the resource only (clients find it through the
  // 401's resource_metadata). No root document: RFC 9728 §3.3 would make its resource the origin,
  // which is no protected resource here, and a client probing for another endpoint of this origin
  // (/v1/hub/mcp) must not find a document that it could take for its own.
  app.get(resource.metadataPath, async (_request, reply) =>
    reply.type('application/json').headers({ 'cache-control': 'public, max-age=3600', 'access-control-allow-origin': '*' }).send(metadata),
  );

  // Streamable HTTP: "servers MUST validate the Origin header" (DNS rebinding). Server-side
  // clients send none; a browser page of another origin is refused (no CORS is offered either).
  const ownOrigin = new URL(resource.resource).origin;
  const refuseForeignOrigin = async (request: FastifyRequest) => {
    const origin = request.headers.origin;
    if (origin !== undefined && origin !== ownOrigin) {
      throw new ApiError(
        403,
        'origin_not_allowed',
        `Requests from the web origin ${origin.slice(0, 200)} are not accepted; MCP clients call this server from their own process, at ${resource.resource}.`,
      );
    }
  };

  const callers = new WeakMap<FastifyRequest, Caller>();
  // In a scope of its own, so that a body that is not JSON gets JSON-RPC's parse error.
  await app.register(async (scope) => {
    acceptAnyJson(scope);
    scope.route({
      method: 'POST',
      url: resource.path,
      // Room for add_media's base64 content; the caller is authenticated before the body is read.
      bodyLimit: ADD_MEDIA_BODY_LIMIT,
      onRequest: async (request, reply) => {
        await refuseForeignOrigin(request);
        const caller = await deps.auth.authenticate(request, reply, {
          audience: resource.resource,
          challenge: { resource_metadata: resource.metadataUrl, scope: SCOPE },
        });
        callers.set(request, caller);
      },
      handler: async (request, reply) => {
        const caller = callers.get(request)!;
        const ctx: McpMainContext = { db: deps.db, clock: deps.clock, media: deps.media, caller, caches: deps.caches, docs: docIndex };
        return serveMcp(ctx, (extraLimit, nth) => deps.auth.chargeToolCall(caller, extraLimit, nth), request, reply);
      },
    });
  });

  // Stateless: no server-sent event stream to open and no session to delete.
  app.route({
    method: ['GET', 'DELETE'],
    url: resource.path,
    handler: async (request, reply) => {
      await refuseForeignOrigin(request);
      reply.header('allow', 'POST');
      throw new ApiError(405, 'method_not_allowed', 'This MCP server is stateless: send JSON-RPC requests with POST.');
    },
  });
}
