import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import * as oauth from 'oauth4webapi';
import { createLogger } from '../../src/platform/logger.ts';
import { FAILED_AUTH_LIMIT, REGISTRATION_LIMIT } from '../../src/policy.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { api, authorize, exchangeCode, REDIRECT, registerClient } from '../support/oauth-flow.ts';
import { documentedRoutes, startReverseProxy, type ProxyFlavour, type ReverseProxy } from '../support/reverse-proxy.ts';
import { HUB_ADMIN, seedHubAdmin } from '../support/world.ts';

// hubops under a path of a shared origin, behind the nginx and Caddy configurations that
// docs/operations.md "Behind a reverse proxy" shows, forwarding exactly their locations as each
// proxy does by default (support/reverse-proxy.ts). Issue 27: every URL handed out is BASE_URL's
// (finding 1), everything is served under the path (3), and with TRUST_PROXY each client behind
// the proxy has its own address for the per-address limits and the logs (2).

const ROOT = path.resolve(import.meta.dirname, '../..');
const PREFIX = '/hubops';

async function documentedConfig(flavour: ProxyFlavour): Promise<string> {
  const page = await readFile(path.join(ROOT, 'docs/operations.md'), 'utf8');
  const section = page.slice(
    page.indexOf('## Behind a reverse proxy'),
    page.indexOf('\n## ', page.indexOf('## Behind a reverse proxy') + 3),
  );
  const block = [...section.matchAll(/```(nginx|caddy)\n([\s\S]*?)```/g)].find(
    ([, lang, body]) => lang === flavour && body!.includes(`${PREFIX}/`),
  );
  assert.ok(block, `docs/operations.md shows ${flavour} under ${PREFIX}/`);
  return block[2]!;
}

/** A request from one loopback address (a client of its own behind the proxy). */
function from(
  localAddress: string,
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      { method: options.method ?? 'GET', headers: options.headers, localAddress, agent: false },
      (response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(options.body);
  });
}

for (const flavour of ['nginx', 'caddy'] as const) {
  describe(`behind ${flavour} under ${PREFIX} (docs/operations.md), TRUST_PROXY=127.0.0.1`, () => {
    let proxy: ReverseProxy;
    let live: TestApp;
    let baseUrl: string;
    let logged = '';

    before(async () => {
      proxy = await startReverseProxy(flavour, documentedRoutes(await documentedConfig(flavour), flavour));
      baseUrl = `${proxy.origin}${PREFIX}`;
      const sink = new Writable({
        write(chunk: Buffer, _encoding, done) {
          logged += chunk.toString();
          done();
        },
      });
      live = await startApp({
        listen: true,
        baseUrl,
        env: { TRUST_PROXY: '127.0.0.1' },
        logger: createLogger({ level: 'info', format: 'json' }, sink),
        seed: (db) => seedHubAdmin(db),
      });
      const { port } = live.app.fastify.server.address() as { port: number };
      proxy.upstream = new URL(`http://127.0.0.1:${port}`);
    });
    after(async () => {
      await live?.close();
      await proxy?.close();
    });

    test('every URL handed out is BASE_URL’s and works through the proxy: an OAuth flow, MCP discovery, front door, OpenAPI, docs, health', async () => {
      const issuer = new URL(proxy.origin);
      const discovery = await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', [oauth.allowInsecureRequests]: true });
      const as = await oauth.processDiscoveryResponse(issuer, discovery);
      for (const [field, value] of Object.entries(as))
        if (typeof value === 'string' && value.startsWith('http') && field !== 'issuer')
          assert.ok(value.startsWith(`${baseUrl}/`), `${field}: ${value} is not under ${baseUrl}`);

      // A whole authorization code flow through the proxy, then the API with its token.
      const via = Object.create(live, { as: { value: as } }) as TestApp;
      const client = await registerClient(via, { confidential: false, redirectUri: REDIRECT });
      const result = await authorize(via, client, { ...HUB_ADMIN, redirectUri: REDIRECT });
      assert.ok(result.callback?.searchParams.get('code'), `a code (the flow stopped at ${result.response.status})`);
      const tokens = await exchangeCode(via, client, result, REDIRECT);
      assert.equal((await api(via, '/whoami', tokens.access_token)).status, 200);

      // MCP: the 401's metadata, and the authorization server it names, through the proxy.
      const challenge = await fetch(`${baseUrl}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: '{}',
      });
      assert.equal(challenge.status, 401);
      const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge.headers.get('www-authenticate') ?? '')?.[1] ?? '';
      assert.ok(metadataUrl.startsWith(`${proxy.origin}/.well-known/oauth-protected-resource${PREFIX}/`), metadataUrl);
      const metadata = await fetch(metadataUrl);
      assert.equal(metadata.status, 200);
      const resource = (await metadata.json()) as { resource: string; authorization_servers: string[] };
      assert.equal(resource.resource, `${baseUrl}/mcp`);
      assert.deepEqual(resource.authorization_servers, [as.issuer]);

      // Every link of the front door, both OpenAPI documents' servers, the docs pages, health.
      const door = (await (await fetch(`${baseUrl}/`, { headers: { accept: 'application/json' } })).json()) as {
        webAdmin: string;
        docs: string;
        apis: { url: string; openapi: string; mcp: string }[];
      };
      const links = [door.webAdmin, door.docs, ...door.apis.flatMap((a) => [a.url, a.openapi, a.mcp])];
      for (const link of links) {
        assert.ok(link.startsWith(baseUrl), link);
        const status = (await fetch(link, { redirect: 'manual' })).status;
        assert.ok(status !== 404 && status < 500, `${link}: ${status}`);
      }
      for (const api of door.apis) {
        const document = (await (await fetch(api.openapi)).json()) as { servers: { url: string }[] };
        assert.equal(document.servers[0]!.url, api.url);
      }
      const docs = (await (await fetch(door.docs, { headers: { accept: 'application/json' } })).json()) as { pages: { url: string }[] };
      assert.ok(docs.pages.length > 0);
      for (const page of docs.pages) assert.equal((await fetch(page.url)).status, 200, page.url);
      for (const probe of ['/healthz', '/readyz']) assert.equal((await fetch(`${baseUrl}${probe}`)).status, 200, probe);
    });

    test('per-address limits count each client behind the proxy; what a client writes in X-Forwarded-For changes nothing', async () => {
      const hub = `${baseUrl}/v1/hub/opt-in-summary`;
      const guess = { authorization: 'Bearer hubops_guess' };
      for (let i = 0; i < FAILED_AUTH_LIMIT.limit; i++) assert.equal((await from('127.0.0.2', hub, { headers: guess })).status, 401);
      assert.equal((await from('127.0.0.2', hub, { headers: guess })).status, 429, 'the guessing client is limited');
      assert.equal(
        (await from('127.0.0.2', hub, { headers: { ...guess, 'x-forwarded-for': '198.51.100.9' } })).status,
        429,
        'a made-up address is no way out',
      );
      assert.equal((await from('127.0.0.3', hub, { headers: guess })).status, 401, 'another client behind the same proxy is not');
      assert.equal(
        (await from('127.0.0.3', hub, { headers: { ...guess, 'x-forwarded-for': '127.0.0.2' } })).status,
        401,
        'nor can it be framed',
      );

      const register = (address: string) =>
        from(address, `${baseUrl}/oauth/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ client_name: 'Limit check', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }),
        });
      const statuses: number[] = [];
      for (let i = 0; i <= REGISTRATION_LIMIT.limit; i++) statuses.push((await register('127.0.0.4')).status);
      assert.deepEqual(statuses.slice(-2), [201, 429], 'registrations are limited per client');
      assert.equal((await register('127.0.0.5')).status, 201, 'not per proxy');

      // The log lines name the client, not the proxy.
      const lines = logged
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { url?: string; remoteAddress?: string; statusCode?: number });
      const limited = lines.filter((l) => l.url === `${PREFIX}/v1/hub/opt-in-summary` && l.statusCode === 429);
      assert.ok(limited.length >= 2);
      assert.ok(
        limited.every((l) => l.remoteAddress === '127.0.0.2'),
        JSON.stringify(limited.map((l) => l.remoteAddress)),
      );
    });
  });
}
