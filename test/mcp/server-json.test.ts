// server.json, the MCP registry's description of hubops, is valid against the registry's published
// schema (vendored in schemas/, see schemas/README.md) and agrees with the running app: each remote
// URL, filled in as a client fills it from BASE_URL, is an MCP endpoint of the app, the main one
// discovered through OAuth, the Hub one opened by exactly the header server.json declares.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule, { type FormatsPlugin } from 'ajv-formats';
import { createKey } from '../../src/domain/api-keys/api-key.service.ts';
import { hubOperations } from '../../src/surfaces/hub-api/operations.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { httpRequest } from '../support/http.ts';
import * as fx from '../support/world.ts';

// ajv-formats is CommonJS: its function is the default export's `default` under Node's ESM loader.
const addFormats = ((addFormatsModule as unknown as { default?: FormatsPlugin }).default ?? addFormatsModule) as FormatsPlugin;

const ROOT = new URL('../../', import.meta.url);
const SCHEMA_FILE = 'schemas/server.schema.2025-12-11.json';

interface Input {
  description?: string;
  isRequired?: boolean;
  isSecret?: boolean;
  placeholder?: string;
  value?: string;
  variables?: Record<string, Input>;
}
interface Header extends Input {
  name: string;
}
interface Remote {
  type: string;
  url: string;
  headers?: Header[];
  variables?: Record<string, Input>;
}
interface ServerJson {
  $schema: string;
  name: string;
  version: string;
  description: string;
  remotes: Remote[];
}

const readJson = async (file: string): Promise<any> => JSON.parse(await readFile(new URL(file, ROOT), 'utf8'));

let serverJson: ServerJson;
let schema: { $id: string; $schema: string };
let validate: ValidateFunction;

before(async () => {
  serverJson = await readJson('server.json');
  schema = await readJson(SCHEMA_FILE);
  // The schema is draft-07 (ajv's default draft). ajv's default strictSchema makes a keyword it
  // does not know an error rather than silently ignored; `example` is the one OpenAPI annotation
  // the schema carries.
  assert.equal(schema.$schema, 'http://json-schema.org/draft-07/schema#');
  const ajv = new Ajv({ allErrors: true });
  ajv.addKeyword({ keyword: 'example', schemaType: ['string', 'number', 'boolean', 'array', 'object'] });
  addFormats(ajv);
  validate = ajv.compile(schema);
});

/** `{name}` substituted from `values`; every name in the template must be a declared variable. */
function fill(template: string, declared: Record<string, Input> | undefined, values: Record<string, string>): string {
  return template.replace(/\{([^}]*)\}/g, (_, name: string) => {
    assert.ok(declared?.[name], `{${name}} in ${JSON.stringify(template)} is not a declared variable`);
    assert.ok(name in values, `the test has no value for {${name}}`);
    return values[name]!;
  });
}

const remoteWithPath = (path: string): Remote => {
  const remote = serverJson.remotes.find((r) => new URL(r.url.replace(/\{[^}]*\}/g, 'x')).pathname.endsWith(path));
  assert.ok(remote, `server.json has a remote ending in ${path}`);
  return remote;
};

describe('server.json against the published schema', () => {
  test('is valid against the vendored schema, which is the one its $schema names', () => {
    assert.equal(serverJson.$schema, schema.$id);
    assert.equal(validate(serverJson), true, JSON.stringify(validate.errors, null, 2));
  });

  test('the validation is live: what the registry refuses, it refuses', () => {
    const refused = (change: (copy: any) => void): boolean => {
      const copy = structuredClone(serverJson);
      change(copy);
      return !validate(copy);
    };
    assert.ok(
      refused((s) => (s.description = 'x'.repeat(101))),
      'a description over 100 characters',
    );
    assert.ok(
      refused((s) => (s.name = 'hubops')),
      'a name without its namespace',
    );
    assert.ok(
      refused((s) => (s.remotes[0].url = '{hubops_host}/mcp')),
      'a URL that does not start with http(s)://',
    );
    assert.ok(
      refused((s) => (s.remotes[1].headers[0].isSecret = 'yes')),
      'isSecret that is not a boolean',
    );
    assert.ok(
      refused((s) => delete s.version),
      'no version',
    );
  });

  test('the vendored schema is the file schemas/README.md names, byte for byte', async () => {
    const bytes = await readFile(new URL(SCHEMA_FILE, ROOT));
    const readme = await readFile(new URL('schemas/README.md', ROOT), 'utf8');
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    assert.ok(readme.includes(sha256), `schemas/README.md gives the sha256 of ${SCHEMA_FILE} (${sha256})`);
    assert.ok(readme.includes(schema.$id), 'and its published URL');
  });

  test('its version is the package version, and its remotes are exactly the two MCP endpoints', async () => {
    const pkg = await readJson('package.json');
    assert.equal(serverJson.version, pkg.version);
    assert.deepEqual(
      serverJson.remotes.map((r) => [r.type, r.url]),
      [
        ['streamable-http', 'https://{hubops_host}/mcp'],
        ['streamable-http', 'https://{hubops_host}/v1/hub/mcp'],
      ],
    );
    // The main server needs nothing but its URL: OAuth is discovered from it.
    assert.equal(remoteWithPath('/mcp').headers, undefined);
    const [authorization, ...others] = remoteWithPath('/v1/hub/mcp').headers ?? [];
    assert.deepEqual(others, []);
    assert.equal(authorization?.name, 'Authorization');
    assert.equal(authorization?.isRequired, true);
    assert.equal(authorization?.isSecret, true, 'the header carries a key: clients must keep it as a secret');
    for (const variable of Object.values(authorization?.variables ?? {})) assert.equal(variable.isSecret, true);
  });
});

// BASE_URL at the origin and under a path: `hubops_host` is BASE_URL without its scheme.
for (const basePath of ['', '/api']) {
  describe(`the remotes lead to the app's MCP endpoints (BASE_URL ${basePath ? `under ${basePath}` : 'at the origin'})`, () => {
    let live: TestApp;
    let key: string;
    /** A remote's URL as a client fills it in for this app (over plain HTTP: the test server has no TLS). */
    const urlOf = (remote: Remote): URL =>
      new URL(fill(remote.url, remote.variables, { hubops_host: live.baseUrl.replace(/^http:\/\//, '') }).replace(/^https:/, 'http:'));

    before(async () => {
      live = await startApp({ listen: true, basePath });
      await fx.account(live.db);
      await fx.hub(live.db, 'hub_a');
      key = (await createKey(live.db, { hubId: 'hub_a', name: 'registry client' })).key;
    });
    after(async () => {
      await live?.close();
    });

    test('main: the URL is the OAuth-protected MCP resource a client discovers', async () => {
      const url = urlOf(remoteWithPath('/mcp'));
      assert.equal(url.href, `${live.baseUrl}/mcp`);
      const unauthorised = await httpRequest(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'registry', version: '1' } },
        }),
      });
      assert.equal(unauthorised.status, 401);
      const metadataUrl = /resource_metadata="([^"]+)"/.exec(String(unauthorised.headers['www-authenticate']))?.[1];
      assert.ok(metadataUrl, `a resource_metadata pointer in ${String(unauthorised.headers['www-authenticate'])}`);
      const metadata = await httpRequest(metadataUrl);
      assert.equal(metadata.status, 200);
      assert.equal(metadata.json.resource, url.href, 'the resource a token is issued for is the URL server.json gives');
    });

    // Known bug, not server.json's: every URL hubops gives out says {base_url}/v1/hub, but
    // src/app.ts registers the Hub API at the origin's /v1/hub without BASE_URL's path. Runs as a
    test('hub: the declared header, filled with a key, opens the Hub MCP endpoint; nothing else does', async () => {
      const remote = remoteWithPath('/v1/hub/mcp');
      const url = urlOf(remote);
      const headers = Object.fromEntries(
        (remote.headers ?? []).map((h) => [h.name, fill(h.value ?? '', h.variables, { hub_api_key: key })]),
      );

      const client = new Client({ name: 'registry-client', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
      try {
        assert.equal(client.getServerVersion()?.version, serverJson.version, 'the server reports the version server.json gives');
        const tools = (await client.listTools()).tools.map((tool) => tool.name).sort();
        assert.deepEqual(tools, hubOperations.map((op) => op.name).sort());
      } finally {
        await client.close();
      }

      // The same key under another header name, or no header: refused.
      const initialize = (sent: Record<string, string>) =>
        httpRequest(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...sent },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'registry', version: '1' } },
          }),
        });
      const refusedHeaders: Record<string, string>[] = [{}, { 'X-Api-Key': key }, { 'X-Authorization': `Bearer ${key}` }];
      for (const sent of refusedHeaders) {
        const refused = await initialize(sent);
        assert.equal(refused.status, 403, JSON.stringify(sent));
        assert.equal(refused.json.error, 'invalid_api_key');
      }
      assert.equal((await initialize(headers)).status, 200, 'the declared header, sent raw, is accepted');
    });
  });
}
