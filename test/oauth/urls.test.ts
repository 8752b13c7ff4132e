import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { startApp, type TestApp } from '../support/app.ts';
import { HUB_ADMIN, seedHubAdmin } from '../support/world.ts';
import { api, authorize, exchangeCode, REDIRECT, registerClient } from '../support/oauth-flow.ts';

// Every URL built from BASE_URL points where the server really answers, with BASE_URL at the
// origin's root and under a path: the OpenAPI OAuth flow, discovery, the
// MCP server's protected-resource metadata and its WWW-Authenticate pointer.

const apps: TestApp[] = [];
after(async () => {
  for (const live of apps) await live.close();
});

for (const [basePath, pathIssuer] of [
  ['', false],
  ['/api', false],
  ['/api', true],
] as const) {
  describe(`BASE_URL ${basePath ? `with the path ${basePath}` : 'at the origin'}${pathIssuer ? ', SITE_URL the same (an issuer with a path)' : ''}`, () => {
    test('the OpenAPI flow, discovery and the MCP metadata all lead to working endpoints', async () => {
      const live = await startApp({ listen: true, basePath, pathIssuer });
      apps.push(live);
      assert.equal(live.baseUrl.endsWith(basePath), true);
      await seedHubAdmin(live.db);

      const openapi = await api(live, '/openapi.json', undefined);
      assert.equal(openapi.status, 200);
      const flow = openapi.body.components.securitySchemes.bearer.flows.authorizationCode;
      assert.equal(flow.authorizationUrl, `${live.baseUrl}/oauth/authorize`);
      assert.equal(flow.tokenUrl, `${live.baseUrl}/oauth/token`);
      assert.equal(flow.refreshUrl, `${live.baseUrl}/oauth/token`);
      assert.equal(flow.authorizationUrl, live.as.authorization_endpoint, 'the same URL discovery gives');
      assert.equal(flow.tokenUrl, live.as.token_endpoint);

      // The URLs work: a whole flow through them, then the API under BASE_URL.
      const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
      const result = await authorize(live, client, { ...HUB_ADMIN, redirectUri: REDIRECT });
      assert.ok(result.callback?.searchParams.get('code'), `a code (got ${result.response.status})`);
      const tokens = await exchangeCode(live, client, result, REDIRECT);
      assert.equal((await api(live, '/whoami', tokens.access_token)).status, 200);

      // MCP: the 401 points at metadata that exists and names this resource.
      const unauthorised = await fetch(`${live.baseUrl}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: '{}',
      });
      assert.equal(unauthorised.status, 401);
      const metadataUrl = /resource_metadata="([^"]+)"/.exec(unauthorised.headers.get('www-authenticate') ?? '')?.[1];
      assert.ok(metadataUrl, 'resource_metadata in the challenge');
      const metadata = await fetch(metadataUrl);
      assert.equal(metadata.status, 200, metadataUrl);
      const body = (await metadata.json()) as { resource: string; authorization_servers: string[] };
      assert.equal(body.resource, `${live.baseUrl}/mcp`);
      // RFC 8414 §3.1: the well-known segment between the issuer's host and its path.
      const issuer = new URL(body.authorization_servers[0]!);
      assert.equal(issuer.href.replace(/\/$/, ''), pathIssuer ? live.baseUrl : new URL(live.baseUrl).origin);
      const discovery = await fetch(`${issuer.origin}/.well-known/oauth-authorization-server${issuer.pathname.replace(/\/$/, '')}`);
      assert.equal(discovery.status, 200);
      assert.equal(((await discovery.json()) as { issuer: string }).issuer, body.authorization_servers[0]);
      // Health probes answer under BASE_URL's path too (a proxy may forward only that path).
      for (const probe of ['/healthz', '/readyz']) assert.equal((await fetch(`${live.baseUrl}${probe}`)).status, 200, probe);
    });
  });
}

// Issue 27 finding 1: the request's Host (and X-Forwarded-Host/-Proto) never decides a URL.
describe('absolute URLs come from BASE_URL alone', () => {
  const spoofed = { host: 'evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'http' };
  const urlsIn = (body: Record<string, unknown>) =>
    Object.entries(body).filter((entry): entry is [string, string] => typeof entry[1] === 'string' && /^https?:/.test(entry[1]));

  test('discovery and registration ignore Host and X-Forwarded-Host/-Proto', async () => {
    const live = await startApp({ baseUrl: 'https://hubs.example.com/hubops' });
    apps.push(live);
    const discovery = await live.app.fastify.inject({ url: '/.well-known/oauth-authorization-server', headers: spoofed });
    assert.equal(discovery.statusCode, 200);
    const urls = urlsIn(discovery.json());
    assert.ok(urls.length >= 6, `the endpoints are there (${urls.map(([k]) => k)})`);
    for (const [field, url] of urls) {
      const expected = field === 'issuer' ? 'https://hubs.example.com' : 'https://hubs.example.com/hubops/';
      assert.ok(url.startsWith(expected), `${field}: ${url}`);
    }

    const registered = await live.app.fastify.inject({
      method: 'POST',
      url: '/hubops/oauth/register',
      headers: { ...spoofed, 'content-type': 'application/json' },
      payload: { client_name: 'Spoof check', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' },
    });
    assert.equal(registered.statusCode, 201, registered.body);
    const client = registered.json();
    assert.equal(client.registration_client_uri, `https://hubs.example.com/hubops/oauth/register/${client.client_id}`);
  });
});

// Issue 27 finding 4: a loopback server reached by another loopback name says which URL to use.
describe('reached by another loopback name than BASE_URL’s', () => {
  test('OAuth and the MCP server refuse with 421 naming BASE_URL; the Hub API and pages still answer', async () => {
    const live = await startApp({ listen: true }); // BASE_URL http://127.0.0.1:<port>
    apps.push(live);
    const alias = live.baseUrl.replace('127.0.0.1', 'localhost');
    const says = new RegExp(
      `This server's address is ${live.baseUrl.replaceAll('.', '\\.')} \\(its BASE_URL\\), not ${alias.replaceAll('.', '\\.')}`,
    );

    const discovery = await fetch(`${alias}/.well-known/oauth-authorization-server`);
    assert.equal(discovery.status, 421);
    const refusal = (await discovery.json()) as { error: string; error_description: string };
    assert.equal(refusal.error, 'misdirected_request');
    assert.match(refusal.error_description, says);
    assert.equal((await fetch(`${alias}/oauth/token`, { method: 'POST' })).status, 421);

    const mcp = await fetch(`${alias}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{}',
    });
    assert.equal(mcp.status, 421);
    assert.match(((await mcp.json()) as { message: string }).message, says);
    assert.equal((await fetch(`${alias}/.well-known/oauth-protected-resource/mcp`)).status, 421);

    // A page of another origin is refused as before, and told where the MCP server is.
    const foreign = await fetch(`${live.baseUrl}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'http://localhost:6274' },
      body: '{}',
    });
    assert.equal(foreign.status, 403);
    assert.match(((await foreign.json()) as { message: string }).message, new RegExp(`at ${live.baseUrl.replaceAll('.', '\\.')}/mcp\\.$`));

    // Nothing else is bound to a name: the Hub API, the front door and health answer by any name.
    assert.equal((await fetch(`${alias}/v1/hub/opt-in-summary`)).status, 401);
    assert.equal((await fetch(`${alias}/healthz`)).status, 200);
    assert.equal((await fetch(`${live.baseUrl}/.well-known/oauth-authorization-server`)).status, 200, 'by its own name: served');
  });
});
