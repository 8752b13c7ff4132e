import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildApp, type App } from '../../src/app.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { createKey } from '../../src/domain/api-keys/api-key.repository.ts';
import { FixedClock } from '../../src/platform/clock.ts';
import type { RateLimiter } from '../../src/platform/rate-limit.ts';
import { createTestDb, type TestDb } from './db.ts';

export interface TestApp {
  app: App;
  db: TestDb;
  clock: FixedClock;
  config: Config;
  /** GET a Hub API path with a key; returns status, headers and parsed JSON. */
  hubGet(path: string, key: string | undefined, headers?: Record<string, string>): Promise<{ status: number; headers: Record<string, unknown>; body: any }>;
  close(): Promise<void>;
}

export const TEST_SECRETS_KEY = 'dGVzdC1vbmx5LXNlY3JldHMta2V5LTMyLWJ5dGVzISE';

/** Boots the whole app on a fresh database, with a clock the test controls. */
export async function startTestApp(options: { now?: string; limiter?: RateLimiter; db?: TestDb } = {}): Promise<TestApp> {
  const db = options.db ?? (await createTestDb());
  const clock = new FixedClock(options.now ?? '2026-11-21T12:00:00.000Z');
  // One secrets key for every test app, so several apps on one database (instances) can share it.
  const config = loadConfig({ DATABASE_URL: db.url, LOG_LEVEL: 'silent', BASE_URL: 'http://hubops.test', DATA_DIR: await mkdtemp(path.join(tmpdir(), 'hubops-test-data-')), HUBOPS_SECRETS_KEY: TEST_SECRETS_KEY });
  const app = await buildApp({ config, db, clock, limiter: options.limiter, logger: false, publisher: false });
  return {
    app,
    db,
    clock,
    config,
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
      if (!options.db) await db.drop();
      await rm(config.dataDir, { recursive: true, force: true });
    },
  };
}

export async function readKey(db: TestDb, hubId: string, scope: 'read' | 'embed' = 'read'): Promise<string> {
  return (await createKey(db, { hubId, name: `test ${scope} key`, scope })).key;
}
