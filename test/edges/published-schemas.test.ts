// Every schema hubops publishes compiles in a strict JSON Schema 2020-12 validator: ajv's 2020
// build with its defaults (strict mode: an unknown keyword or format is an error, not ignored) and
// the standard formats of ajv-formats, which strict clients register. That is each tool's
// inputSchema and outputSchema on both MCP servers, as the MCP SDK client gets them, and each
// schema of both OpenAPI documents, where OpenAPI's own format registry adds `binary` (a file
// part of a multipart body). A server-only check (a real day, a cursor we issued) is published
// as a pattern or a standard format instead (src/surfaces/shared/formats.ts).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule, { type FormatsPlugin } from 'ajv-formats';
import { startApp } from '../support/app.ts';
import { seedEdgeWorld, type EdgeWorld } from '../support/edge-world.ts';

// ajv-formats is CommonJS: its function is the default export's `default` under Node's ESM loader.
const addFormats = ((addFormatsModule as unknown as { default?: FormatsPlugin }).default ?? addFormatsModule) as FormatsPlugin;

let world: EdgeWorld;
before(async () => {
  world = await seedEdgeWorld(await startApp({ listen: true, limiter: 'unlimited' }));
});
after(() => world?.close());

/** A default strict 2020-12 validator with the standard formats (and `extra` ones). */
function strictAjv(extra: string[] = []): Ajv2020 {
  const ajv = new Ajv2020();
  addFormats(ajv);
  for (const name of extra) ajv.addFormat(name, true);
  return ajv;
}

/** Why `schema` does not compile in `ajv`, or undefined when it does. */
function refusal(ajv: Ajv2020, schema: unknown): string | undefined {
  try {
    ajv.compile(schema as object);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

for (const server of ['main', 'hub'] as const) {
  test(`${server} MCP server: every tool's input and output schema compiles in a strict 2020-12 validator`, async () => {
    const client = server === 'main' ? await world.mcpMain() : await world.mcpHub();
    try {
      const { tools } = await client.listTools();
      assert.ok(tools.length > 0);
      const ajv = strictAjv();
      const failures = tools.flatMap((tool) =>
        (['inputSchema', 'outputSchema'] as const).flatMap((which) => {
          const why = refusal(ajv, tool[which]);
          return why === undefined ? [] : [`${tool.name} ${which}: ${why}`];
        }),
      );
      assert.deepEqual(failures, []);
    } finally {
      await client.close();
    }
  });
}

/** Every schema of an OpenAPI document, named by where it is, with `#/components/schemas/…` references put in place. */
function openApiSchemas(document: any): [string, unknown][] {
  const components: Record<string, unknown> = document.components?.schemas ?? {};
  const resolve = (schema: unknown): unknown => {
    if (Array.isArray(schema)) return schema.map(resolve);
    if (typeof schema !== 'object' || schema === null) return schema;
    const ref = (schema as { $ref?: unknown }).$ref;
    if (typeof ref === 'string' && ref.startsWith('#/components/schemas/'))
      return resolve(components[ref.slice('#/components/schemas/'.length)]);
    return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, resolve(value)]));
  };
  const found: [string, unknown][] = Object.entries(components).map(([name, schema]) => [`components ${name}`, resolve(schema)]);
  for (const [path, methods] of Object.entries<any>(document.paths)) {
    for (const [method, op] of Object.entries<any>(methods)) {
      const at = `${method.toUpperCase()} ${path}`;
      for (const p of op.parameters ?? []) found.push([`${at} parameter ${p.name}`, resolve(p.schema)]);
      for (const [type, body] of Object.entries<any>(op.requestBody?.content ?? {}))
        found.push([`${at} body ${type}`, resolve(body.schema)]);
      for (const [status, response] of Object.entries<any>(op.responses ?? {})) {
        for (const [type, body] of Object.entries<any>(response.content ?? {}))
          found.push([`${at} ${status} ${type}`, resolve(body.schema)]);
        for (const [name, header] of Object.entries<any>(response.headers ?? {}))
          if (header.schema) found.push([`${at} ${status} header ${name}`, resolve(header.schema)]);
      }
    }
  }
  return found;
}

for (const [api, path] of [
  ['main API', '/openapi.json'],
  ['Hub API', '/v1/hub/openapi.json'],
] as const) {
  test(`${api} OpenAPI document: every schema compiles in a strict 2020-12 validator (OpenAPI's formats added)`, async () => {
    const response = await fetch(`${world.live.baseUrl}${path}`);
    assert.equal(response.status, 200);
    const schemas = openApiSchemas(await response.json());
    assert.ok(schemas.length > 10, `${schemas.length} schemas`);
    const ajv = strictAjv(['binary']);
    const failures = schemas.flatMap(([where, schema]) => {
      const why = refusal(ajv, schema);
      return why === undefined ? [] : [`${where}: ${why}`];
    });
    assert.deepEqual(failures, []);
  });
}
