import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import * as oauth from 'oauth4webapi';
import { buildApp, type App, type AppDeps } from '../../src/app.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { connect, type Db } from '../../src/db/database.ts';
import { createKey } from '../../src/domain/api-keys/api-key.service.ts';
import { FixedClock, systemClock } from '../../src/platform/clock.ts';
import { freePort } from '../../src/platform/net.ts';
import { MemoryRateLimiter, type RateCharge, type RateDecision, type RateLimiter, type RateWindow } from '../../src/platform/rate-limit.ts';
import { createTestDb, type TestDb } from './db.ts';
import { proxyDatabase, type TcpProxy } from './tcp-proxy.ts';

// The one whole-app starter of the tests (buildApp, as src/main.ts runs it, minus the process).
// A test that needs the process itself (`npm start`, signals, the CLI) uses test/process/support.ts.

export const TEST_SECRETS_KEY = 'dGVzdC1vbmx5LXNlY3JldHMta2V5LTMyLWJ5dGVzISE';

export interface StartOptions {
  /** Listen on a free port of 127.0.0.1, for real clients (fetch, oauth4webapi, the MCP SDK, Chromium). Default: inject only. */
  listen?: boolean;
  /** BASE_URL. Default `http://127.0.0.1:<port><basePath>` when listening, `http://hubops.test` otherwise. */
  baseUrl?: string;
  /** With `listen`: served under this path of the origin (BASE_URL = origin + path), e.g. `/api`. */
  basePath?: string;
  /** SITE_URL = BASE_URL: the OAuth issuer under BASE_URL's path too (default: BASE_URL's origin). */
  pathIssuer?: boolean;
  /** The app's FixedClock starts here (default: the moment the app starts); `'system'`: the real clock, time moves. */
  now?: string | Date | 'system';
  /** Default: the app's own in-process limiter. `'unlimited'`: counts but never refuses (many requests, one caller). */
  limiter?: RateLimiter | 'unlimited';
  /** A logger to capture what the app logs; default none. */
  logger?: FastifyBaseLogger;
  /** This database (not dropped on close; several apps may share it). Default: a fresh one, dropped on close. */
  db?: TestDb;
  /** The app reaches its database through a TCP proxy (`proxy`), so a test can take it away. */
  throughProxy?: boolean;
  /** HUBOPS_SECRETS_KEY. Default none: the key file under DATA_DIR, as on a first start. Apps sharing a database need one. */
  secretsKey?: string;
  /** Run the background post publisher (default off; tests that drive it themselves keep it off). */
  publisher?: boolean;
  /** Run the background spend sync loop (default off; tests that sync drive it themselves or turn it on). */
  spendSync?: boolean;
  /** The ad platforms' clients (default: the app's own, from the configuration). */
  adPlatformClients?: AppDeps['adPlatformClients'];
  /** How often key usage is flushed to the database (default the app's). */
  usageFlushMs?: number;
  /** Shorter connection limits than the policy's, to see them enforced (default: src/policy.ts). */
  connectionLimits?: AppDeps['connectionLimits'];
  /** More environment for the app's configuration (e.g. META_GRAPH_URL, META_APP_ID of a Meta sandbox). */
  env?: Record<string, string>;
  /** Seeds the database before the app starts (e.g. `seedWebHub`). */
  seed?: (db: TestDb) => Promise<void>;
  /** Trust for client metadata documents served by a local HTTPS server (test/oauth/cimd.test.ts). */
  cimdTrust?: AppDeps['cimdTrust'];
}

export interface TestApp {
  app: App;
  db: TestDb;
  config: Config;
  /** The app's clock, which moves only when told (throws with `now: 'system'`). */
  readonly clock: FixedClock;
  /** BASE_URL (where a listening app is reached). */
  baseUrl: string;
  /** The OAuth server's metadata from discovery (a listening app at its own BASE_URL only). */
  readonly as: oauth.AuthorizationServer;
  /** With `throughProxy`: the proxy between the app and its database, to cut and restore. */
  proxy?: TcpProxy;
  /** GET a Hub API path with a key (inject); returns status, headers and parsed JSON. */
  hubGet(
    path: string,
    key: string | undefined,
    headers?: Record<string, string>,
  ): Promise<{ status: number; headers: Record<string, unknown>; body: any }>;
  close(): Promise<void>;
}

/** Counts like the in-process limiter but never refuses. */
export class UnlimitedRateLimiter extends MemoryRateLimiter {
  override hit(key: string, _limit: number, windowMs: number, nowMs: number): Promise<RateDecision> {
    return super.hit(key, Number.MAX_SAFE_INTEGER, windowMs, nowMs);
  }
  override hitAll(windows: RateWindow[], nowMs: number): Promise<RateCharge> {
    return super.hitAll(
      windows.map((w) => ({ ...w, limit: Number.MAX_SAFE_INTEGER })),
      nowMs,
    );
  }
}

/** Boots the whole app (on a fresh database unless given one), inject-only or listening on a real port. */
export async function startApp(options: StartOptions = {}): Promise<TestApp> {
  const db = options.db ?? (await createTestDb());
  await options.seed?.(db);
  const port = options.listen ? await freePort() : undefined;
  const baseUrl = options.baseUrl ?? (port ? `http://127.0.0.1:${port}${options.basePath ?? ''}` : 'http://hubops.test');
  const env: Record<string, string> = {
    DATABASE_URL: db.url,
    LOG_LEVEL: 'silent',
    BASE_URL: baseUrl,
    DATA_DIR: await mkdtemp(path.join(tmpdir(), 'hubops-test-data-')),
  };
  if (port) env.PORT = String(port);
  if (options.pathIssuer) env.SITE_URL = baseUrl;
  if (options.secretsKey) env.HUBOPS_SECRETS_KEY = options.secretsKey;
  const config = loadConfig({ ...env, ...options.env });
  const fixed = options.now === 'system' ? undefined : new FixedClock(options.now ?? new Date());
  const limiter = options.limiter === 'unlimited' ? new UnlimitedRateLimiter() : options.limiter;
  const through = options.throughProxy ? await proxyDatabase(db.url) : undefined;
  const appDb: Db = through ? connect(through.url) : db;
  const app = await buildApp({
    config,
    db: appDb,
    clock: fixed ?? systemClock,
    limiter,
    logger: options.logger ?? false,
    publisher: options.publisher ?? false,
    spendSync: options.spendSync ?? false,
    ...(options.adPlatformClients ? { adPlatformClients: options.adPlatformClients } : {}),
    ...(options.usageFlushMs === undefined ? {} : { usageFlushMs: options.usageFlushMs }),
    ...(options.connectionLimits ? { connectionLimits: options.connectionLimits } : {}),
    ...(options.cimdTrust ? { cimdTrust: options.cimdTrust } : {}),
  });
  let as: oauth.AuthorizationServer | undefined;
  if (port) {
    await app.fastify.listen({ port, host: '127.0.0.1' });
    if (!options.baseUrl) {
      const issuer = new URL(config.siteUrl);
      try {
        as = await oauth.processDiscoveryResponse(
          issuer,
          await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', [oauth.allowInsecureRequests]: true }),
        );
      } catch (error) {
        // A listening app left open would keep the test process alive after the failure.
        await app.close();
        throw error;
      }
    }
  }
  return {
    app,
    db,
    config,
    get clock(): FixedClock {
      if (!fixed) throw new Error("the app runs on the system clock (now: 'system')");
      return fixed;
    },
    baseUrl,
    get as(): oauth.AuthorizationServer {
      if (!as) throw new Error('no OAuth discovery: the app does not listen at its own BASE_URL');
      return as;
    },
    proxy: through?.proxy,
    hubGet: async (path, key, headers = {}) => {
      const response = await app.fastify.inject({
        method: 'GET',
        url: `/v1/hub${path}`,
        headers: { ...(key === undefined ? {} : { authorization: `Bearer ${key}` }), ...headers },
      });
      let body: unknown = response.body;
      try {
        body = response.json();
      } catch {
        // not JSON: keep the text
      }
      return { status: response.statusCode, headers: response.headers, body };
    },
    close: async () => {
      await app.close();
      if (through) {
        await appDb.close();
        await through.proxy.close();
      }
      if (options.limiter === 'unlimited') await limiter!.close();
      if (!options.db) await db.drop();
      await rm(config.dataDir, { recursive: true, force: true });
    },
  };
}

export async function readKey(db: TestDb, hubId: string, scope: 'read' | 'embed' = 'read'): Promise<string> {
  return (await createKey(db, { hubId, name: `test ${scope} key`, scope })).key;
}
