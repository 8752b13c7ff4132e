// Process entry: config → database → app → listen → graceful stop.
import pino from 'pino';
import { buildApp } from './app.ts';
import { ConfigError, loadConfig, redactUrl } from './config.ts';
import { openDatabase } from './db/open.ts';
import { createKey } from './domain/api-keys/api-key.repository.ts';
import { isDatabaseEmpty, seedDemo } from './domain/demo/seed.ts';
import { getHub } from './domain/tenancy/tenancy.repository.ts';
import { loggerOptions } from './platform/logger.ts';
import { MemoryRateLimiter, type RateLimiter } from './platform/rate-limit.ts';
import { HUB_API_PREFIX } from './surfaces/hub-api/plugin.ts';

let config;
try {
  config = loadConfig();
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(`hubops: configuration error: ${error.message}`);
    process.exit(1);
  }
  throw error;
}

const log = pino(loggerOptions(config.logLevel));
const database = await openDatabase(config, { log: (line) => log.debug({ component: 'embedded-postgres' }, line), applicationName: 'hubops-server' });
log.info({ database: database.embedded ? `embedded (${config.dataDir}/postgres)` : redactUrl(config.databaseUrl!), applied: database.applied }, 'database ready');

// First embedded start (or HUBOPS_DEMO=1 on an empty database): demo data and a key, printed once.
let demo: { email: string; password: string; hubName: string; key: string } | undefined;
if (config.demo && (await isDatabaseEmpty(database.db))) {
  const seeded = await seedDemo(database.db);
  const hubId = seeded.hubIds[0]!;
  const key = await createKey(database.db, { hubId, name: 'Demo key (printed at first start)' });
  const hub = await getHub(database.db, hubId);
  demo = { email: seeded.adminEmail, password: seeded.adminPassword, hubName: `${hub?.name ?? hubId} (${hubId})`, key: key.key };
}

let limiter: RateLimiter = new MemoryRateLimiter();
if (config.redisUrl) {
  const { RedisRateLimiter } = await import('./platform/redis-rate-limit.ts');
  const redis = new RedisRateLimiter(config.redisUrl);
  await redis.ready().catch((error) => log.warn({ err: error }, 'Redis not reachable yet; rate limits fail open until it is'));
  limiter = redis;
}

const app = await buildApp({ config, db: database.db, limiter, logger: log });
await app.fastify.listen({ port: config.port, host: config.host });

const hub = `${config.baseUrl}${HUB_API_PREFIX}`;
const lines = [
  '',
  `hubops is running at ${config.baseUrl}`,
  `  Main API       ${config.baseUrl}  (OpenAPI ${config.baseUrl}/openapi.json)`,
  `  OAuth          ${config.siteUrl}/.well-known/oauth-authorization-server`,
  `  MCP (OAuth)    ${config.baseUrl}/mcp`,
  `  Web admin      ${config.baseUrl}/app`,
  `  Hub API        ${hub}`,
  `  OpenAPI        ${hub}/openapi.json`,
  `  Hub MCP        ${hub}/mcp  (fixed header: Authorization: Bearer <HUB_API_KEY>)`,
];
if (demo) {
  lines.push(
    '',
    `Demo data seeded. Hub admin sign-in: ${demo.email} / ${demo.password}`,
    `Demo Hub API key for hub ${demo.hubName} (shown once, copy it now):`,
    `  ${demo.key}`,
    '',
    `Try: curl -H "Authorization: Bearer ${demo.key}" ${hub}/opt-in-summary`,
  );
} else {
  lines.push('', 'Create a Hub API key with: npm run --silent hubops -- keys create --hub <HUB_ID> --name "My tool"');
}
process.stdout.write(`${lines.join('\n')}\n\n`);

const STOP_GRACE_MS = 20_000;
let stopping = false;
async function stop(signal: string): Promise<void> {
  if (stopping) {
    log.warn({ signal }, 'second signal: exiting now');
    process.exit(1);
  }
  stopping = true;
  log.info({ signal }, 'stopping: finishing in-flight requests');
  // A client that never finishes its request must not hold the stop hostage: after the grace
  // period its connection is cut, and the usage flush and database stop still run.
  const deadline = setTimeout(() => {
    log.warn('grace period over: closing the remaining connections');
    app.fastify.server.closeAllConnections();
  }, STOP_GRACE_MS);
  deadline.unref();
  try {
    await app.close();
    await limiter.close();
    await database.close();
    log.info('stopped');
    process.exit(0);
  } catch (error) {
    log.error({ err: error }, 'unclean stop');
    process.exit(1);
  }
}
process.on('SIGTERM', () => void stop('SIGTERM'));
process.on('SIGINT', () => void stop('SIGINT'));
