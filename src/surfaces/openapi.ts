import type { TObject, TSchema } from 'typebox';
import { verbOf, type OperationInfo } from './operation.ts';

// OpenAPI 3.1 from the operation declarations: the same schemas that validate requests. Only
// operations with a REST route are documented; MCP-only tools have none.

/** A JSON Schema, as JSON. */
export type JsonSchema = Record<string, unknown>;

export interface OpenApiParameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  description?: string | undefined;
  schema: JsonSchema;
  example?: unknown;
}

export interface OpenApiOperation {
  operationId: string;
  summary: string;
  description: string;
  parameters?: OpenApiParameter[];
  requestBody?: { required: boolean; content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, { description: string; headers?: Record<string, unknown>; content?: Record<string, { schema: JsonSchema }> }>;
  'x-rate-limit'?: { policy: string; requests: number; windowSeconds: number };
}

export interface OpenApiDocument {
  openapi: '3.1.0';
  info: { title: string; version: string; description: string };
  servers: { url: string }[];
  security: Record<string, string[]>[];
  paths: Record<string, Record<string, OpenApiOperation>>;
  components: { securitySchemes: Record<string, Record<string, unknown>>; schemas: Record<string, JsonSchema> };
}

export interface OpenApiOptions {
  title: string;
  version: string;
  description: string;
  serverUrl: string;
  securityScheme: Record<string, unknown>;
  /** Error responses every operation can give, by status. */
  errors: Record<string, { description: string; headers?: Record<string, unknown> }>;
  /** Headers every successful response carries (a read's 304 too). */
  successHeaders?: Record<string, unknown>;
  errorSchema: TSchema;
}

/** Drops TypeBox's internal symbols and keys JSON Schema does not know. */
function plain(schema: TSchema): JsonSchema {
  return JSON.parse(JSON.stringify(schema)) as JsonSchema;
}

// Conditional requests and compression (RFC 9110 §8.8, §13; src/surfaces/rest.ts): what every
// read accepts and answers, documented with standard fields so that generated clients and
// HTTP-cache-aware libraries see them.

const STRING = { type: 'string' };

function conditionalParameters(sendsLastModified: boolean): OpenApiParameter[] {
  return [
    {
      name: 'If-None-Match',
      in: 'header',
      required: false,
      description:
        'The ETag of a response you hold (or several, comma-separated): 304 Not Modified, without a body, while it still names the current answer for the same Accept-Encoding (weak comparison: `W/` is ignored; a tag with another coding’s `-br`/`-gzip`/`-zstd` suffix names another representation). A malformed value is ignored (full response).',
      schema: STRING,
      example: '"Tq3aUhbm6BZcxF1nLnE5kQ"',
    },
    {
      name: 'If-Modified-Since',
      in: 'header',
      required: false,
      description: sendsLastModified
        ? 'The Last-Modified of a response you hold (an HTTP date): 304 Not Modified while nothing changed since. Ignored with If-None-Match or when in the future; a malformed value is ignored (full response).'
        : 'Accepted, but this read sends no Last-Modified, so it always gets the full response: use If-None-Match. A malformed value is ignored.',
      schema: STRING,
      example: 'Tue, 24 Nov 2026 17:11:24 GMT',
    },
    {
      name: 'If-Match',
      in: 'header',
      required: false,
      description:
        'ETags (or `*`): the answer only if it is still one of them (strong comparison, for the same Accept-Encoding; a `W/` tag never matches), else 412 precondition_failed. Decided before If-None-Match. A malformed value is ignored.',
      schema: STRING,
      example: '"Tq3aUhbm6BZcxF1nLnE5kQ"',
    },
    {
      name: 'If-Unmodified-Since',
      in: 'header',
      required: false,
      description: sendsLastModified
        ? 'An HTTP date: 412 precondition_failed if Last-Modified is later. Ignored with If-Match, when in the future, or malformed.'
        : 'Accepted, but this read sends no Last-Modified, so it never fails: use If-Match. A malformed value is ignored.',
      schema: STRING,
      example: 'Tue, 24 Nov 2026 17:11:24 GMT',
    },
  ];
}

const ETAG = {
  description:
    'Strong entity tag of the representation your Accept-Encoding selects: with a `-br`, `-gzip` or `-zstd` suffix when it asks for that coding. Send it back in If-None-Match (or If-Match), with the same Accept-Encoding.',
  schema: STRING,
};
const LAST_MODIFIED = {
  description: 'When the figures last changed (an HTTP date); sent once that second is over. Send it back in If-Modified-Since.',
  schema: STRING,
};
const CACHE_CONTROL = {
  description:
    '`private, no-cache, must-revalidate`: only your own HTTP cache may keep the answer (must-revalidate lets it, for a request with Authorization), and it must revalidate (If-None-Match) before each reuse.',
  schema: STRING,
};
const VARY = {
  description: '`Authorization`, and `Accept-Encoding` on a body that may be compressed: keep one copy per key and per coding.',
  schema: STRING,
};
const CONTENT_ENCODING = {
  description: '`br`, `gzip` or `zstd` when Accept-Encoding asked for one and the body is large enough to be worth it; absent otherwise.',
  schema: STRING,
};

/** The 304 of a read: answered from its validator before the answer is built, or from the hash of the built body. */
function notModifiedResponse(op: OperationInfo, sendsLastModified: boolean, successHeaders: Record<string, unknown> | undefined) {
  const description = op.conditional
    ? 'Not Modified: the answer has not changed since the ETag (or Last-Modified) you sent; no body. Decided from what the database already knows, before the answer is built; not counted against the rate limits.'
    : 'Not Modified: the answer has not changed since the ETag you sent (a hash of the body, compared once it is built); no body; its charge is given back, so it is not counted against the rate limits.';
  return {
    description,
    headers: {
      ETag: ETAG,
      ...(sendsLastModified ? { 'Last-Modified': LAST_MODIFIED } : {}),
      'Cache-Control': CACHE_CONTROL,
      Vary: VARY,
      ...successHeaders,
    },
  };
}

/** The 412 of a read whose If-Match (or If-Unmodified-Since) the current answer does not meet. */
function preconditionFailedResponse(options: OpenApiOptions) {
  return {
    description:
      'precondition_failed: If-Match names no ETag of the current answer, or Last-Modified is later than If-Unmodified-Since. Counted against the rate limits like a full answer.',
    ...(options.successHeaders ? { headers: options.successHeaders } : {}),
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  };
}

/** `/workspaces/:id` → `/workspaces/{id}` and the names of its path parameters. */
function openApiPath(path: string): { path: string; pathParams: string[] } {
  const pathParams = [...path.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]!);
  return { path: path.replace(/:([A-Za-z_]+)/g, '{$1}'), pathParams };
}

function parameters(input: TObject, pathParams: string[], inQuery: boolean): OpenApiParameter[] {
  const required = new Set((input.required as string[] | undefined) ?? []);
  return Object.entries(input.properties as Record<string, TSchema & { description?: string; examples?: unknown[] }>)
    .filter(([name]) => inQuery || pathParams.includes(name))
    .map(([name, schema]) => {
      const { description, examples, ...rest } = plain(schema) as JsonSchema & { description?: string; examples?: unknown[] };
      const inPath = pathParams.includes(name);
      return {
        name,
        in: inPath ? ('path' as const) : ('query' as const),
        required: inPath || required.has(name),
        description,
        schema: rest,
        ...(examples ? { example: examples[0] } : {}),
      };
    });
}

/** The JSON body schema of a POST: the input without its path parameters. */
function bodySchema(input: TObject, pathParams: string[]): JsonSchema {
  const schema = plain(input) as JsonSchema & { properties: Record<string, unknown>; required?: string[] };
  for (const name of pathParams) delete schema.properties[name];
  if (schema.required) schema.required = schema.required.filter((name) => !pathParams.includes(name));
  return schema;
}

export function buildOpenApi(operations: readonly OperationInfo[], options: OpenApiOptions): OpenApiDocument {
  const paths: Record<string, Record<string, OpenApiOperation>> = {};
  for (const op of operations) {
    if (!op.rest) continue;
    const errorResponses = Object.fromEntries(
      Object.entries(options.errors).map(([status, e]) => [
        status,
        {
          description: e.description,
          ...(e.headers ? { headers: e.headers } : {}),
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
        },
      ]),
    );
    const { path, pathParams } = openApiPath(op.rest.path);
    const method = verbOf(op);
    const read = method === 'GET';
    const sendsLastModified = read && op.conditional === true && op.lastModified === true;
    const readHeaders = read
      ? {
          ETag: ETAG,
          ...(sendsLastModified ? { 'Last-Modified': LAST_MODIFIED } : {}),
          'Cache-Control': CACHE_CONTROL,
          Vary: VARY,
          'Content-Encoding': CONTENT_ENCODING,
        }
      : {};
    const successHeaders = { ...readHeaders, ...options.successHeaders };
    (paths[path] ??= {})[method.toLowerCase()] = {
      operationId: op.name,
      summary: op.title,
      description: op.description,
      parameters: [...parameters(op.input, pathParams, read), ...(read ? conditionalParameters(sendsLastModified) : [])],
      ...(method === 'POST'
        ? { requestBody: { required: true, content: { 'application/json': { schema: bodySchema(op.input, pathParams) } } } }
        : {}),
      responses: {
        [method === 'POST' ? '201' : '200']: {
          description: op.title,
          ...(Object.keys(successHeaders).length > 0 ? { headers: successHeaders } : {}),
          content: { [op.mediaType ?? 'application/json']: { schema: plain(op.output) } },
        },
        ...(read ? { '304': notModifiedResponse(op, sendsLastModified, options.successHeaders) } : {}),
        ...errorResponses,
        ...(read ? { '412': preconditionFailedResponse(options) } : {}),
      },
      ...(op.extraLimit
        ? { 'x-rate-limit': { policy: op.extraLimit.policy, requests: op.extraLimit.limit, windowSeconds: op.extraLimit.windowMs / 1000 } }
        : {}),
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: options.title, version: options.version, description: options.description },
    servers: [{ url: options.serverUrl }],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: options.securityScheme },
      schemas: { Error: plain(options.errorSchema) },
    },
  };
}
