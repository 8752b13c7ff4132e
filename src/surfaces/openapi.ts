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
  /** Headers every successful response carries. */
  successHeaders?: Record<string, unknown>;
  errorSchema: TSchema;
}

/** Drops TypeBox's internal symbols and keys JSON Schema does not know. */
function plain(schema: TSchema): JsonSchema {
  return JSON.parse(JSON.stringify(schema)) as JsonSchema;
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
      return { name, in: inPath ? 'path' as const : 'query' as const, required: inPath || required.has(name), description, schema: rest, ...(examples ? { example: examples[0] } : {}) };
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
        { description: e.description, ...(e.headers ? { headers: e.headers } : {}), content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
      ]),
    );
    const { path, pathParams } = openApiPath(op.rest.path);
    const method = verbOf(op);
    (paths[path] ??= {})[method.toLowerCase()] = {
      operationId: op.name,
      summary: op.title,
      description: op.description,
      parameters: parameters(op.input, pathParams, method === 'GET'),
      ...(method === 'POST' ? { requestBody: { required: true, content: { 'application/json': { schema: bodySchema(op.input, pathParams) } } } } : {}),
      responses: {
        [method === 'POST' ? '201' : '200']: {
          description: op.title,
          ...(options.successHeaders ? { headers: options.successHeaders } : {}),
          content: { 'application/json': { schema: plain(op.output) } },
        },
        ...errorResponses,
      },
      ...(op.extraLimit ? { 'x-rate-limit': { policy: op.extraLimit.policy, requests: op.extraLimit.limit, windowSeconds: op.extraLimit.windowMs / 1000 } } : {}),
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
