import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  CLIENT_METADATA_CACHE_S,
  CLIENT_METADATA_FETCH_LIMIT,
  CLIENT_METADATA_HOST_FETCH_LIMIT,
  CLIENT_METADATA_MAX_BYTES,
  CLIENT_METADATA_TIMEOUT_MS,
} from '../../src/surfaces/oauth/client-metadata-document.ts';
import { MemoryRateLimiter } from '../../src/platform/rate-limit.ts';
import { startApp, UnlimitedRateLimiter, type TestApp } from '../support/app.ts';
import { captureLog } from '../support/log.ts';
import { api, Browser, documentClient, exchangeCode, authorize, oauth, openSignIn, REDIRECT, refresh } from '../support/oauth-flow.ts';
import { HUB_ADMIN, seedHubAdmin } from '../support/world.ts';

// Client ID Metadata Documents end to end: a local HTTPS server (self-signed certificate, made
// here with openssl) serves client metadata documents; oauth4webapi signs in with the document's
// URL as client_id. The app trusts that server only through the test-only `cimdTrust` option.

interface Route {
  status?: number;
  headers?: Record<string, string>;
  body: unknown;
  delayMs?: number;
  /** Stream the body in chunks without Content-Length. */
  chunked?: boolean;
}

/** An HTTPS server of documents by path; counts what the app fetched. */
class DocumentServer {
  readonly routes = new Map<string, Route>();
  readonly fetches = new Map<string, number>();
  /** The Accept header of every request, in order. */
  readonly accepts: (string | undefined)[] = [];
  readonly #server: Server;
  origin = '';

  constructor(key: string, cert: string) {
    this.#server = createServer({ key, cert }, (request, response) => {
      const at = request.url ?? '';
      this.fetches.set(at, (this.fetches.get(at) ?? 0) + 1);
      this.accepts.push(request.headers.accept);
      const route = this.routes.get(at);
      const send = () => {
        if (!route) return response.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        const text = typeof route.body === 'string' ? route.body : JSON.stringify(route.body);
        response.writeHead(route.status ?? 200, { 'content-type': 'application/json', ...route.headers });
        if (!route.chunked) return response.end(text);
        for (let i = 0; i < text.length; i += 1024) response.write(text.slice(i, i + 1024));
        response.end();
      };
      if (route?.delayMs) setTimeout(send, route.delayMs).unref();
      else send();
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.origin = `https://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** Serves `route` at `at` and returns the document's URL. */
  serve(at: string, route: Route): string {
    this.routes.set(at, route);
    return `${this.origin}${at}`;
  }

  count(at: string): number {
    return this.fetches.get(at) ?? 0;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}

/** A valid document for `url`. */
const documentFor = (url: string, extra: Record<string, unknown> = {}) => ({
  client_id: url,
  client_name: 'Docs Client',
  redirect_uris: [REDIRECT],
  token_endpoint_auth_method: 'none',
  ...extra,
});

let live: TestApp;
const liveLimiter = new UnlimitedRateLimiter();
const liveLog = captureLog('info');
const untrustingLimiter = new MemoryRateLimiter();
let untrusting: TestApp;
let docs: DocumentServer;
let certDir: string;
/** A port where nothing listens (taken and given back). */
let closedPort = 0;

before(async () => {
  certDir = await mkdtemp(path.join(tmpdir(), 'hubops-cimd-'));
  const [keyFile, certFile] = [path.join(certDir, 'key.pem'), path.join(certDir, 'cert.pem')];
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ],
    { stdio: 'ignore' },
  );
  const [key, cert] = await Promise.all([readFile(keyFile, 'utf8'), readFile(certFile, 'utf8')]);
  docs = new DocumentServer(key, cert);
  await docs.start();
  const probe = createTcpServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  closedPort = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  live = await startApp({
    listen: true,
    limiter: liveLimiter,
    logger: liveLog.logger,
    seed: (db) => seedHubAdmin(db),
    cimdTrust: { ca: cert, allowLoopback: true },
  });
  untrusting = await startApp({ listen: true, limiter: untrustingLimiter });
});
after(async () => {
  await live?.close();
  await untrusting?.close();
  await docs?.close();
  await rm(certDir, { recursive: true, force: true });
});

const clientRows = async (app: TestApp) =>
  Number(
    (
      await app.db.kysely
        .selectFrom('oauth_clients')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

/** Opens an authorization request for `clientId` as a browser would; the server's first answer. */
async function authorizationRequest(app: TestApp, clientId: string, redirectUri = REDIRECT): Promise<Response> {
  const url = new URL(app.as.authorization_endpoint!);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    scope: 'service:full',
    state: 's',
    code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
    code_challenge_method: 'S256',
  }).toString();
  return fetch(url, { redirect: 'manual' });
}

/** The error page's text, asserting it is one (never a redirect to the client). */
async function refusal(response: Response, status = 400): Promise<string> {
  const html = await response.text();
  assert.equal(response.status, status, html.slice(0, 400));
  assert.equal(response.headers.get('location'), null);
  assert.match(response.headers.get('content-type') ?? '', /text\/html/);
  return html
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&');
}

/** The sign-in page an authorization request for `clientId` leads to. */
async function signInPageFor(app: TestApp, clientId: string): Promise<string> {
  const browser = new Browser();
  const page = await browser.fetch(await openSignIn(app, documentClient(clientId), browser, REDIRECT));
  assert.equal(page.status, 200);
  return page.text();
}

test('the authorization server advertises metadata documents and keeps dynamic registration', () => {
  assert.equal(live.as.client_id_metadata_document_supported, true);
  assert.equal(live.as.registration_endpoint, `${live.config.siteUrl}/oauth/register`);
});

test('a client known only by its document URL: code + PKCE, tokens, the API, refresh; nothing stored', async () => {
  const url = docs.serve('/apps/docs-client.json', { body: {}, headers: { 'cache-control': 'max-age=600' } });
  docs.routes.get('/apps/docs-client.json')!.body = documentFor(url, { client_uri: 'https://docs-client.example' });
  const client = documentClient(url);
  const result = await authorize(live, client, { ...HUB_ADMIN, redirectUri: REDIRECT });
  assert.ok(result.callback?.searchParams.get('code'), `a code (got ${result.response.status})`);

  const [signIn, consent] = result.pages;
  const host = new URL(url).host;
  assert.match(signIn!, new RegExp(`to continue to <strong>Docs Client</strong> <small>from</small> <strong>${host}</strong>`));
  assert.match(
    consent!,
    new RegExp(`<strong>Docs Client</strong> <small>from</small> <strong>${host}</strong>`),
    'consent names the client and the host serving it',
  );

  const tokens = await exchangeCode(live, client, result, REDIRECT);
  assert.ok(tokens.refresh_token);
  const whoami = await api(live, '/whoami', tokens.access_token);
  assert.equal(whoami.status, 200);
  assert.equal(whoami.body.clientId, url);

  const refreshed = await refresh(live, client, tokens.refresh_token!);
  assert.notEqual(refreshed.access_token, tokens.access_token);
  assert.equal((await api(live, '/whoami', refreshed.access_token)).status, 200);

  assert.equal(docs.count('/apps/docs-client.json'), 1, 'fetched once: the sign-in, consent, token and refresh used the cache');
  assert.deepEqual(docs.accepts, ['application/json'], 'the fetch asks for JSON');
  assert.equal(await clientRows(live), 0, 'the document is the registration: no client row');
});

test('redirect URIs come from the document: another one is refused on a page, never redirected to', async () => {
  const url = docs.serve('/apps/redirects.json', { body: {} });
  docs.routes.get('/apps/redirects.json')!.body = documentFor(url);
  const page = await refusal(await authorizationRequest(live, url, 'http://127.0.0.1:9/elsewhere'));
  assert.match(page, /redirect_uri did not match/);
});

describe('refusals: invalid_client with the reason, on a page; nothing stored', () => {
  const unreachable = /the client metadata document could not be fetched/;
  const origin = () => docs.origin;
  const valid = (at: string, extra: Record<string, unknown> = {}, route: Omit<Route, 'body'> = {}) => {
    const url = docs.serve(at, { ...route, body: {} });
    docs.routes.get(at)!.body = documentFor(url, extra);
    return url;
  };
  const big = 'x'.repeat(CLIENT_METADATA_MAX_BYTES);

  // Network and HTTP failures all read the same to the caller (anyone can name any host and
  // port); the precise reason is `logged`, and must not be on the page.
  const cases: { name: string; clientId: () => string; reason: RegExp; at?: string; logged?: RegExp }[] = [
    {
      name: 'over http',
      clientId: () => `http://127.0.0.1:${new URL(origin()).port}/apps/a.json`,
      reason: /the client_id must be an https URL/,
    },
    { name: 'with a fragment', clientId: () => `${origin()}/apps/a.json#x`, reason: /must not have a fragment/ },
    {
      name: 'with credentials',
      clientId: () => `https://user:pw@${new URL(origin()).host}/apps/a.json`,
      reason: /must not contain a user name or password/,
    },
    { name: 'with a dot segment', clientId: () => `${origin()}/apps/../a.json`, reason: /must not contain \. or \.\. path segments/ },
    {
      name: 'with an encoded dot segment',
      clientId: () => `${origin()}/apps/%2E%2e/a.json`,
      reason: /must not contain \. or \.\. path segments/,
    },
    { name: 'without a path', clientId: () => `${origin()}/`, reason: /must have a path/ },
    {
      name: 'on a private address',
      clientId: () => 'https://10.1.2.3/apps/a.json',
      reason: /10\.1\.2\.3 is a private address; only addresses on the public internet can be fetched/,
    },
    {
      name: 'too large (Content-Length)',
      at: '/r/large.json',
      clientId: () => valid('/r/large.json', { padding: big }),
      reason: /larger than 5120 bytes/,
    },
    {
      name: 'too large (streamed)',
      at: '/r/large-chunked.json',
      clientId: () => valid('/r/large-chunked.json', { padding: big }, { chunked: true }),
      reason: /larger than 5120 bytes/,
    },
    {
      name: 'too slow',
      at: '/r/slow.json',
      clientId: () => valid('/r/slow.json', {}, { delayMs: CLIENT_METADATA_TIMEOUT_MS + 1500 }),
      reason: unreachable,
      logged: new RegExp(`did not finish within ${CLIENT_METADATA_TIMEOUT_MS / 1000} s`),
    },
    {
      name: 'nothing listening',
      clientId: () => `https://127.0.0.1:${closedPort}/r/refused.json`,
      reason: unreachable,
      logged: /could not be reached \(ECONNREFUSED\)/,
    },
    {
      name: 'a 203 (a success, but not 200)',
      at: '/r/203.json',
      clientId: () => valid('/r/203.json', {}, { status: 203 }),
      reason: unreachable,
      logged: /answered HTTP 203; a client metadata document is served with 200/,
    },
    {
      name: 'not JSON (content type)',
      at: '/r/html.json',
      clientId: () => valid('/r/html.json', {}, { headers: { 'content-type': 'text/html' } }),
      reason: /served as text\/html, not application\/json/,
    },
    {
      name: 'not JSON (body)',
      at: '/r/broken.json',
      clientId: () => docs.serve('/r/broken.json', { body: '{"client_id": ' }),
      reason: /the document is not valid JSON/,
    },
    { name: 'not an object', at: '/r/array.json', clientId: () => docs.serve('/r/array.json', { body: [] }), reason: /not a JSON object/ },
    {
      name: 'a mismatching client_id',
      at: '/r/mismatch.json',
      clientId: () => docs.serve('/r/mismatch.json', { body: documentFor(`${origin()}/r/other.json`) }),
      reason: /client_id does not match/,
    },
    {
      name: 'client_secret_post',
      at: '/r/post.json',
      clientId: () => valid('/r/post.json', { token_endpoint_auth_method: 'client_secret_post' }),
      reason: /must not use shared-secret token endpoint authentication/,
    },
    {
      name: 'client_secret_basic',
      at: '/r/basic.json',
      clientId: () => valid('/r/basic.json', { token_endpoint_auth_method: 'client_secret_basic' }),
      reason: /must not use shared-secret token endpoint authentication/,
    },
    {
      name: 'a client_secret',
      at: '/r/secret.json',
      clientId: () => valid('/r/secret.json', { client_secret: 'hunter2hunter2hunter2hunter2hunter2' }),
      reason: /must not contain client_secret/,
    },
    {
      name: 'no client_name',
      at: '/r/nameless.json',
      clientId: () => valid('/r/nameless.json', { client_name: undefined }),
      reason: /client_name is required/,
    },
    {
      name: 'an http redirect URI off loopback',
      at: '/r/http-redirect.json',
      clientId: () => valid('/r/http-redirect.json', { redirect_uris: ['http://app.example/cb'] }),
      reason: /redirect URI http:\/\/app\.example\/cb must use https/,
    },
    {
      name: 'a 404',
      at: '/r/missing.json',
      clientId: () => `${origin()}/r/missing.json`,
      reason: unreachable,
      logged: /the server answered HTTP 404/,
    },
    {
      name: 'a redirect',
      at: '/r/moved.json',
      clientId: () => docs.serve('/r/moved.json', { status: 302, headers: { location: '/apps/docs-client.json' }, body: '' }),
      reason: unreachable,
      logged: /answered 302 \(a redirect\), and redirects are not followed/,
    },
  ];

  for (const c of cases) {
    test(c.name, async () => {
      const clientId = c.clientId();
      const logged = liveLog.lines.length;
      const page = await refusal(await authorizationRequest(live, clientId));
      assert.match(page, /Error code: invalid_client/);
      assert.match(page, c.reason);
      assert.equal(docs.count(new URL(clientId).pathname), c.at ? 1 : 0, c.at ? 'fetched once' : 'refused before any request');
      if (c.at) assert.equal(docs.accepts.at(-1), 'application/json', 'the fetch asks for JSON');
      if (c.logged) {
        assert.doesNotMatch(page, c.logged);
        const line = liveLog.lines.slice(logged).find((l) => l.msg === 'client metadata document could not be fetched');
        assert.equal(line?.clientId, clientId);
        assert.match(line?.reason ?? '', c.logged);
      }
      assert.equal(await clientRows(live), 0);
    });
  }
});

describe('caching: HTTP caching within bounds', () => {
  // The cache (oidc-provider's) reads Date.now: these tests move it forward, and only it.
  const realNow = Date.now;
  let offsetMs = 0;
  const advance = (seconds: number) => {
    offsetMs += seconds * 1000;
  };
  before(() => {
    Date.now = () => realNow() + offsetMs;
  });
  after(() => {
    Date.now = realNow;
  });

  test('max-age is honoured: no refetch within it, the changed document after it', async () => {
    const url = docs.serve('/c/max-age.json', { body: {}, headers: { 'cache-control': 'public, max-age=300' } });
    docs.routes.get('/c/max-age.json')!.body = documentFor(url);
    assert.match(await signInPageFor(live, url), /Docs Client/);
    assert.match(await signInPageFor(live, url), /Docs Client/);
    assert.equal(docs.count('/c/max-age.json'), 1, 'a second authorization uses the cache');
    advance(CLIENT_METADATA_CACHE_S.min + 100);
    assert.match(await signInPageFor(live, url), /Docs Client/);
    assert.equal(docs.count('/c/max-age.json'), 1, 'past the minimum, within max-age: still cached');
    docs.routes.get('/c/max-age.json')!.body = documentFor(url, { client_name: 'Renamed Client' });
    advance(300 - CLIENT_METADATA_CACHE_S.min - 100 + 1);
    assert.match(await signInPageFor(live, url), /Renamed Client/);
    assert.equal(docs.count('/c/max-age.json'), 2);
  });

  test('no caching headers (or no-store): cached for the minimum', async () => {
    const url = docs.serve('/c/no-store.json', { body: {}, headers: { 'cache-control': 'no-store' } });
    docs.routes.get('/c/no-store.json')!.body = documentFor(url);
    await signInPageFor(live, url);
    advance(CLIENT_METADATA_CACHE_S.min - 5);
    await signInPageFor(live, url);
    assert.equal(docs.count('/c/no-store.json'), 1);
    advance(6);
    await signInPageFor(live, url);
    assert.equal(docs.count('/c/no-store.json'), 2);
  });

  test('a longer max-age is cut to the maximum', async () => {
    const url = docs.serve('/c/forever.json', { body: {}, headers: { 'cache-control': 'max-age=31536000' } });
    docs.routes.get('/c/forever.json')!.body = documentFor(url);
    await signInPageFor(live, url);
    advance(CLIENT_METADATA_CACHE_S.max - 5);
    await signInPageFor(live, url);
    assert.equal(docs.count('/c/forever.json'), 1);
    advance(6);
    await signInPageFor(live, url);
    assert.equal(docs.count('/c/forever.json'), 2);
  });

  test('a document out of the cache by the sign-in page is fetched again, counted; refused, it is an error page', async () => {
    const url = docs.serve('/c/gone.json', { body: {}, headers: { 'cache-control': 'max-age=60' } });
    docs.routes.get('/c/gone.json')!.body = documentFor(url);
    const browser = new Browser();
    const signIn = await openSignIn(live, documentClient(url), browser, REDIRECT);
    assert.equal((await browser.fetch(signIn)).status, 200);
    assert.equal(docs.count('/c/gone.json'), 1);
    const counted = () =>
      liveLimiter.count('oauth-client-metadata:127.0.0.1', CLIENT_METADATA_FETCH_LIMIT.windowMs, live.clock.now().getTime());
    const before = await counted();
    docs.routes.delete('/c/gone.json');
    advance(61);
    const page = await refusal(await browser.fetch(signIn));
    assert.match(page, /Error code: invalid_client/);
    assert.match(page, /the client metadata document could not be fetched/);
    assert.equal(docs.count('/c/gone.json'), 2, 'the page fetched it again');
    assert.equal(await counted(), before + 1, "that fetch took a unit of the address's window");
  });

  test('a document that turned bad is refused at the token endpoint too, once the cache expired', async () => {
    const url = docs.serve('/c/turns-bad.json', { body: {}, headers: { 'cache-control': 'max-age=120' } });
    docs.routes.get('/c/turns-bad.json')!.body = documentFor(url);
    const client = documentClient(url);
    const result = await authorize(live, client, { ...HUB_ADMIN, redirectUri: REDIRECT });
    const tokens = await exchangeCode(live, client, result, REDIRECT);
    docs.routes.get('/c/turns-bad.json')!.body = documentFor(`${docs.origin}/c/someone-else.json`);
    advance(121);
    const response = await oauth.refreshTokenGrantRequest(live.as, client.client, client.clientAuth, tokens.refresh_token!, {
      [oauth.allowInsecureRequests]: true,
    });
    assert.equal(response.status, 400);
    const body = (await response.json()) as { error: string; error_description: string };
    assert.equal(body.error, 'invalid_client');
    assert.match(body.error_description, /client_id does not match/);
  });
});

describe('the trust option is what lets tests use a loopback server', () => {
  test('without it, the same document is refused as a loopback address, before any request', async () => {
    const url = docs.serve('/t/untrusted.json', { body: {} });
    docs.routes.get('/t/untrusted.json')!.body = documentFor(url);
    const page = await refusal(await authorizationRequest(untrusting, url));
    assert.match(page, /127\.0\.0\.1 is a loopback address; only addresses on the public internet can be fetched/);
    assert.equal(docs.count('/t/untrusted.json'), 0);
    assert.equal(await clientRows(untrusting), 0);
  });

  test(`document fetches are limited per client address (${CLIENT_METADATA_FETCH_LIMIT.limit} per ${CLIENT_METADATA_FETCH_LIMIT.windowMs / 60_000} minutes) and per host from it (${CLIENT_METADATA_HOST_FETCH_LIMIT.limit})`, async () => {
    // Each request is refused as a loopback address before any connection, after the limits.
    const untilRefused = async (limit: number, clientId: (i: number) => string) => {
      for (let i = 0; i <= limit; i++) {
        const response = await authorizationRequest(untrusting, clientId(i));
        if (i < limit) {
          assert.equal(response.status, 400, `request ${i + 1} of ${limit} is within the limit`);
          await response.body?.cancel();
        } else {
          return response;
        }
      }
      throw new Error('unreachable');
    };
    const hostLimited = await untilRefused(CLIENT_METADATA_HOST_FETCH_LIMIT.limit, (i) => `https://127.0.0.3/t/limit-${i}.json`);
    assert.match(
      await refusal(hostLimited, 429),
      /too many client metadata document fetches from this address for this host; retry in \d+ s/,
    );
    assert.ok(Number(hostLimited.headers.get('retry-after')) > 0);
    const otherHost = await authorizationRequest(untrusting, 'https://127.0.0.2/t/other-host.json');
    assert.match(await refusal(otherHost), /127\.0\.0\.2 is a loopback address/, 'another host has its own window');
    // Made-up hosts: the address's window bounds them (the requests above are in it).
    const used = await untrustingLimiter.count(
      'oauth-client-metadata:127.0.0.1',
      CLIENT_METADATA_FETCH_LIMIT.windowMs,
      untrusting.clock.now().getTime(),
    );
    assert.ok(used >= CLIENT_METADATA_HOST_FETCH_LIMIT.limit + 1);
    const left = CLIENT_METADATA_FETCH_LIMIT.limit - used;
    const addressLimited = await untilRefused(left, (i) => `https://127.1.${Math.floor(i / 200)}.${(i % 200) + 1}/t/made-up.json`);
    assert.match(await refusal(addressLimited, 429), /too many client metadata document fetches from this address; retry in \d+ s/);
    assert.ok(Number(addressLimited.headers.get('retry-after')) > 0);
  });
});

test('docs/main-api.md states the bounds this file tests', async () => {
  const text = (await readFile(new URL('../../docs/main-api.md', import.meta.url), 'utf8')).replace(/\s+/g, ' ');
  const sentence = `at most ${CLIENT_METADATA_MAX_BYTES / 1024} KiB, within ${CLIENT_METADATA_TIMEOUT_MS / 1000} s`;
  assert.ok(text.includes(sentence), sentence);
  const cache = `for at least ${CLIENT_METADATA_CACHE_S.min / 60} minute and at most ${CLIENT_METADATA_CACHE_S.max / 3600} hours`;
  assert.ok(text.includes(cache), cache);
  const limit = `${CLIENT_METADATA_FETCH_LIMIT.limit} document fetches per client address per ${CLIENT_METADATA_FETCH_LIMIT.windowMs / 60_000} minutes, and ${CLIENT_METADATA_HOST_FETCH_LIMIT.limit} from one address for any one host`;
  assert.ok(text.includes(limit), limit);
  assert.equal(CLIENT_METADATA_HOST_FETCH_LIMIT.windowMs, CLIENT_METADATA_FETCH_LIMIT.windowMs, 'the sentence names one window');
  assert.ok(text.includes('up to 100 documents per instance'), 'the cache size');
});
