// The hooks an MCP Apps view needs, on a tiny endpoint of its own (not the app): a tool that
// declares `mcp.ui` links its `ui://` resource in tools/list, and the endpoint's resources are
// listed and read, on 2026-07-28 (SDK v2 client) and 2025-11-25 (SDK v1 client) alike.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import Fastify, { type FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { acceptAnyJson, mcpHandler, type McpEndpoint, type McpResource } from '../../src/surfaces/mcp.ts';
import { CursorKey } from '../../src/platform/cursor.ts';
import { defineOperation } from '../../src/surfaces/operation.ts';
import { InputValidator } from '../../src/surfaces/shared/inputs.ts';

const VIEW: McpResource = {
  uri: 'ui://test/echo.html',
  name: 'echo-view',
  title: 'Echo view',
  description: 'Shows what echo said.',
  mimeType: 'text/html;profile=mcp-app',
  text: '<!doctype html><p>echo</p>',
  _meta: { ui: { prefersBorder: true } },
};

const echoInput = Type.Object({ text: Type.String({ maxLength: 20 }) });
const echoOutput = Type.Object({ text: Type.String(), who: Type.String() });
const echo = defineOperation<{ who: string }, typeof echoInput, typeof echoOutput>({
  name: 'echo',
  effect: 'read',
  title: 'Echo',
  description: 'Says the text back, with who asked.',
  input: echoInput,
  output: echoOutput,
  mcp: { ui: 'ui://test/echo.html' },
  handler: async (ctx, input) => ({ text: input.text, who: ctx.who }),
});
const plainInput = Type.Object({});
const plainOutput = Type.Object({ who: Type.String() });
const plain = defineOperation<{ who: string }, typeof plainInput, typeof plainOutput>({
  name: 'plain',
  effect: 'read',
  title: 'Plain',
  description: 'A tool without a view.',
  input: plainInput,
  output: plainOutput,
  handler: async (ctx) => ({ who: ctx.who }),
});

const endpoint = (resources?: readonly McpResource[]): McpEndpoint<{ who: string }> => ({
  name: 'resources-test',
  version: '1.0.0',
  instructions: 'For tests.',
  operations: resources ? [echo, plain] : [plain],
  inputs: new InputValidator(new CursorKey(randomBytes(32))),
  ...(resources ? { resources } : {}),
});

let app: FastifyInstance;
let base: string;

before(async () => {
  app = Fastify();
  const withView = mcpHandler(endpoint([VIEW]), app.log);
  const without = mcpHandler(endpoint(), app.log);
  await app.register(async (scope) => {
    acceptAnyJson(scope);
    scope.post('/with', async (request, reply) => withView({ who: 'ada' }, async () => {}, request, reply));
    scope.post('/without', async (request, reply) => without({ who: 'ada' }, async () => {}, request, reply));
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});

after(async () => {
  await app.close();
});

const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** A 2026-07-28 request by hand: the envelope in the body, its method (and URI) in the headers. */
async function post(path: string, method: string, params: Record<string, unknown> = {}): Promise<{ status: number; body: any }> {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(params.uri ? { 'mcp-name': String(params.uri) } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: ENVELOPE } }),
  });
  return { status: response.status, body: await response.json() };
}

async function modern(path: string): Promise<ModernClient> {
  const client = new ModernClient({ name: 'resources-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new ModernTransport(new URL(`${base}${path}`)));
  assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
  return client;
}

async function legacy(path: string): Promise<LegacyClient> {
  const client = new LegacyClient({ name: 'resources-test', version: '1.0.0' });
  await client.connect(new LegacyTransport(new URL(`${base}${path}`)));
  assert.equal(client.getServerVersion()?.name, 'resources-test');
  return client;
}

describe('an endpoint with an MCP Apps view', () => {
  for (const [revision, connect] of [
    ['2026-07-28', modern],
    ['2025-11-25', legacy],
  ] as const) {
    test(`${revision}: the tool links its view both ways hosts read it, the other tool links none`, async () => {
      const client = await connect('/with');
      try {
        assert.deepEqual(client.getServerCapabilities()?.resources, {});
        const { tools } = await client.listTools();
        assert.deepEqual(
          tools.map((tool) => tool.name),
          ['echo', 'plain'],
        );
        assert.deepEqual(tools[0]!._meta, { ui: { resourceUri: 'ui://test/echo.html' }, 'ui/resourceUri': 'ui://test/echo.html' });
        assert.equal(tools[1]!._meta, undefined);
        const result = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
        assert.deepEqual(result.structuredContent, { text: 'hi', who: 'ada' });
      } finally {
        await client.close();
      }
    });

    test(`${revision}: resources/list lists the view without its text, resources/read gives it whole`, async () => {
      const client = await connect('/with');
      try {
        const { resources } = await client.listResources();
        assert.deepEqual(resources, [
          { uri: VIEW.uri, name: VIEW.name, title: VIEW.title, description: VIEW.description, mimeType: VIEW.mimeType, _meta: VIEW._meta },
        ]);
        const { contents } = await client.readResource({ uri: VIEW.uri });
        assert.deepEqual(contents, [{ uri: VIEW.uri, mimeType: VIEW.mimeType, text: VIEW.text, _meta: VIEW._meta }]);
      } finally {
        await client.close();
      }
    });

    test(`${revision}: an unknown URI is the spec's resource-not-found error, -32602 naming it`, async () => {
      const client = await connect('/with');
      try {
        await assert.rejects(client.readResource({ uri: 'ui://test/nope.html' }), (error: Error & { code?: number; data?: unknown }) => {
          assert.equal(error.code, -32602, String(error));
          assert.match(error.message, /Resource not found: ui:\/\/test\/nope\.html/);
          assert.deepEqual(error.data, { uri: 'ui://test/nope.html' });
          return true;
        });
      } finally {
        await client.close();
      }
    });
  }

  test('2026-07-28: the endpoint-wide lists carry a public hint of an hour', async () => {
    for (const [method, params] of [
      ['tools/list', {}],
      ['resources/list', {}],
      ['resources/read', { uri: VIEW.uri }],
      ['server/discover', {}],
    ] as const) {
      const { result } = (await post('/with', method, params)).body;
      assert.equal(result.ttlMs, 3_600_000, method);
      assert.equal(result.cacheScope, 'public', method);
    }
  });
});

describe('an endpoint without resources', () => {
  test('declares no resources capability and answers resources/list with method not found', async () => {
    const client = await modern('/without');
    try {
      assert.equal(client.getServerCapabilities()?.resources, undefined);
      const { tools } = await client.listTools();
      assert.deepEqual(
        tools.map((tool) => [tool.name, tool._meta]),
        [['plain', undefined]],
      );
    } finally {
      await client.close();
    }
    const listed = await post('/without', 'resources/list');
    assert.equal(listed.body.error.code, -32601, JSON.stringify(listed));
  });

  test('a tool that links a view the endpoint does not serve is refused when the handler is made', () => {
    assert.throws(
      () => mcpHandler({ ...endpoint(), operations: [echo] }, app.log),
      /MCP tool echo links ui:\/\/test\/echo\.html, which resources-test does not serve as a ui:\/\/ resource/,
    );
  });
});
