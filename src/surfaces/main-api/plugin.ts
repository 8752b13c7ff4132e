import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import type { MediaStore } from '../../domain/media/media-store.ts';
import type { Clock } from '../../platform/clock.ts';
import { buildOpenApi, type OpenApiDocument } from '../openapi.ts';
import type { Operation } from '../operation.ts';
import { idempotencyKeyOf, mountRest, serveDocument } from '../rest.ts';
import type { InputValidator } from '../shared/inputs.ts';
import { ACCESS_TOKEN_TTL_S, COMPRESSION_MIN_BYTES, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, PLAN_LIMITS, PLAN_WINDOW_MS } from '../../policy.ts';
import { authorizationServerMetadataUrl, oauthUrl, SCOPE } from '../shared/oauth.ts';
import type { BearerAuth } from './auth.ts';
import type { MainContext } from './context.ts';
import { mediaUploadOpenApi, registerMediaUpload } from './media-upload.ts';

export interface MainApiDeps {
  config: Config;
  db: Db;
  clock: Clock;
  media: MediaStore;
  auth: BearerAuth;
  operations: readonly Operation<MainContext>[];
  /** The app's validation of operation input (its formats; its cursor key). */
  inputs: InputValidator;
  version: string;
}

const RATE_HEADERS = {
  RateLimit: {
    description: 'Remaining requests (r) and seconds until a request frees up (t), e.g. `"per-user-client";r=57;t=41`.',
    schema: { type: 'string' },
  },
  'RateLimit-Policy': {
    description: `The plan’s limit, e.g. \`"per-user-client";q=${PLAN_LIMITS.standard};w=${PLAN_WINDOW_MS / 1000}\`.`,
    schema: { type: 'string' },
  },
};

const ACCESS_TOKEN_HOURS = ACCESS_TOKEN_TTL_S / 3600;
const PLAN_WINDOW = PLAN_WINDOW_MS === 60_000 ? 'minute' : `${PLAN_WINDOW_MS / 1000} s`;

const ErrorSchema = Type.Object({
  error: Type.String({
    description:
      'invalid_request, invalid_token, insufficient_scope, not_found, rate_limited, idempotency_key_reused, hub_access_suspended, service_unavailable, internal_error.',
  }),
  message: Type.String(),
  issues: Type.Optional(Type.Array(Type.Object({ field: Type.String(), message: Type.String() }))),
  requestId: Type.Optional(Type.String()),
});

export function mainOpenApi(config: Config, version: string, operations: readonly Operation<MainContext>[]): OpenApiDocument {
  const document = buildOpenApi(operations, {
    title: 'hubops API',
    version,
    description: [
      "The main hubops API: the caller's hub and workspaces, posts, media, and organic, paid and review analytics.",
      `Every request needs \`Authorization: Bearer <ACCESS_TOKEN>\` from the OAuth 2.1 authorization code flow with PKCE (S256) — discovery at ${authorizationServerMetadataUrl(config)}, scope \`${SCOPE}\`. Access tokens live ${ACCESS_TOKEN_HOURS} hour${ACCESS_TOKEN_HOURS === 1 ? '' : 's'}; refresh tokens rotate on every use.`,
      `Records are identified by \`_id\`. Lists page with \`limit\` (1–${MAX_PAGE_SIZE}, default ${DEFAULT_PAGE_SIZE}) and an opaque \`cursor\`, returning \`{data, nextCursor}\`.`,
      `Limits: ${PLAN_LIMITS.standard} requests per ${PLAN_WINDOW} per user and client on the Standard plan, ${PLAN_LIMITS.partner} on Partner; a 429 carries Retry-After. Errors have the body {"error", "message"} (400 adds "issues").`,
      `Every GET answers with a strong ETag, a hash of its body: send it back in If-None-Match and an unchanged answer is 304 Not Modified, without a body, and not counted against the plan’s limit. Send Accept-Encoding (br, gzip, zstd) and bodies above about ${COMPRESSION_MIN_BYTES / 1024} KB come compressed, with \`Vary: Accept-Encoding\`.`,
      `The same operations are MCP tools at ${config.baseUrl}/mcp.`,
    ].join('\n\n'),
    serverUrl: config.baseUrl,
    securityScheme: {
      type: 'oauth2',
      flows: {
        authorizationCode: {
          authorizationUrl: oauthUrl(config, 'authorization'),
          tokenUrl: oauthUrl(config, 'token'),
          refreshUrl: oauthUrl(config, 'token'),
          scopes: { [SCOPE]: 'Full access to the hub on the user’s behalf.' },
        },
      },
    },
    errors: {
      '400': { description: 'invalid_request: a parameter or body field is invalid; `issues` names each.' },
      '401': { description: 'invalid_token: missing, expired, revoked or for another resource (see WWW-Authenticate).' },
      '403': { description: 'insufficient_scope, or hub_access_suspended.' },
      '404': { description: 'not_found: does not exist or is outside what the token may see.' },
      '429': {
        description: 'rate_limited: retry after Retry-After seconds.',
        headers: { 'Retry-After': { schema: { type: 'integer' } }, ...RATE_HEADERS },
      },
    },
    successHeaders: RATE_HEADERS,
    errorSchema: ErrorSchema,
  });
  // A POST with an Idempotency-Key may also be refused as a reuse with another request.
  const createPost = document.paths['/posts']!.post!;
  createPost.responses['422'] = {
    description: 'idempotency_key_reused: this Idempotency-Key was already used with another request.',
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  };
  // POST /media is multipart, so it is declared by hand next to its route; it answers the errors
  // any create does, and those of an upload.
  const { '201': _post, ...createErrors } = createPost.responses;
  const { '201': created, ...uploadErrors } = mediaUploadOpenApi.responses;
  (document.paths['/media'] ??= {}).post = {
    ...mediaUploadOpenApi,
    responses: { '201': { ...created!, headers: RATE_HEADERS }, ...createErrors, ...uploadErrors },
  };
  return document;
}

export async function mainApiPlugin(app: FastifyInstance, deps: MainApiDeps): Promise<void> {
  serveDocument(app, '/openapi.json', mainOpenApi(deps.config, deps.version, deps.operations));

  app.addHook('onSend', async (request, reply) => {
    if (request.headers.authorization && !reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
  });

  const contextFor = async (request: FastifyRequest, reply: FastifyReply): Promise<MainContext> => ({
    db: deps.db,
    clock: deps.clock,
    media: deps.media,
    caller: await deps.auth.authenticate(request, reply, { audience: deps.config.baseUrl }),
    idempotencyKey: idempotencyKeyOf(request),
  });
  // A main API read is compared by its body's hash once built: a 304 saves the transfer, and its
  // charge is given back (it is not counted against the plan's limit).
  mountRest(app, deps.operations, {
    now: () => deps.clock.now(),
    inputs: deps.inputs,
    admitted: async (request, reply, _op, _options, work) => work(await contextFor(request, reply)),
    notModified: async (ctx, reply) => deps.auth.giveBack(ctx.caller, reply),
  });
  await registerMediaUpload(app, { resolveContext: contextFor });
}
