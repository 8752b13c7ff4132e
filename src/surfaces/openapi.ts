import type { TObject, TSchema } from 'typebox';
import type { Operation } from './operation.ts';

// OpenAPI 3.1 from the operation declarations: the same schemas that validate requests.

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
function plain(schema: unknown): unknown {
  return JSON.parse(JSON.stringify(schema));
}

/** `/workspaces/:id` → `/workspaces/{id}` and the names of its path parameters. */
function openApiPath(path: string): { path: string; pathParams: string[] } {
  const pathParams = [...path.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]!);
  return { path: path.replace(/:([A-Za-z_]+)/g, '{$1}'), pathParams };
}

function parameters(input: TObject, pathParams: string[], inQuery: boolean): unknown[] {
  const required = new Set((input.required as string[] | undefined) ?? []);
  return Object.entries(input.properties as Record<string, TSchema & { description?: string; examples?: unknown[] }>)
    .filter(([name]) => inQuery || pathParams.includes(name))
    .map(([name, schema]) => {
      const { description, examples, ...rest } = plain(schema) as { description?: string; examples?: unknown[] };
      const inPath = pathParams.includes(name);
      return { name, in: inPath ? 'path' : 'query', required: inPath || required.has(name), description, schema: rest, ...(examples ? { example: examples[0] } : {}) };
    });
}

/** The JSON body schema of a POST: the input without its path parameters. */
function bodySchema(input: TObject, pathParams: string[]): unknown {
  const schema = plain(input) as { properties: Record<string, unknown>; required?: string[] };
  for (const name of pathParams) delete schema.properties[name];
  if (schema.required) schema.required = schema.required.filter((name) => !pathParams.includes(name));
  return schema;
}

export function buildOpenApi(operations: Operation<never>[], options: OpenApiOptions): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of operations) {
    const errorResponses = Object.fromEntries(
      Object.entries(options.errors).map(([status, e]) => [
        status,
        { description: e.description, ...(e.headers ? { headers: e.headers } : {}), content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
      ]),
    );
    const { path, pathParams } = openApiPath(op.path);
    (paths[path] ??= {})[op.method.toLowerCase()] = {
      operationId: op.name,
      summary: op.title,
      description: op.description,
      parameters: parameters(op.input, pathParams, op.method === 'GET'),
      ...(op.method === 'POST' ? { requestBody: { required: true, content: { 'application/json': { schema: bodySchema(op.input, pathParams) } } } } : {}),
      responses: {
        [op.method === 'POST' ? '201' : '200']: {
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
