// Process entry: config → database → app → listen → graceful stop.
import { buildApp, type App } from './app.ts';
import { ConfigError, loadConfig, redactUrl, type Config } from './config.ts';
import { EmbeddedDatabaseError } from './db/embedded.ts';
import { openDatabase } from './db/open.ts';
import { syncNow } from './domain/ad-sync/ad-account.service.ts';
import { createKey } from './domain/api-keys/api-key.service.ts';
import { connectDemoAccounts, connectDemoLocations, startDemoSandboxes, type DemoSandboxes } from './domain/demo/ad-demo.ts';
import { DEMO_HUB_ID, isDatabaseEmpty, seedDemo } from './domain/demo/demo.service.ts';
import { getHub } from './domain/tenancy/tenancy.service.ts';
import { systemClock } from './platform/clock.ts';
import { DomainError } from './platform/errors.ts';
import { chooseLogFormat, createLogger } from './platform/logger.ts';
import { MemoryRateLimiter, type RateLimiter } from './platform/rate-limit.ts';
import { DUPLICATE_SIGNAL_MS, STOP_GRACE_MS, STOP_STEPS_MS } from './policy.ts';
import { startTracing } from './platform/tracing.ts';
import { VERSION } from './platform/version.ts';
import { HUB_API_PREFIX } from './surfaces/hub-api/plugin.ts';
import { authorizationServerMetadataUrl } from './surfaces/shared/oauth.ts';

let config: Config;
try {
  config = loadConfig();
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(`hubops: configuration error: ${error.message}`);
    process.exit(1);
  }
  throw error;
}

const log = createLogger({ level: config.logLevel, format: chooseLogFormat(config.logFormat, process.stdout.isTTY === true) });

/** PORT is taken: said in the words of the setting that fixes it. */
class PortInUse extends Error {
  constructor(port: number) {
    super(`port ${port} is in use by another program; set PORT to use another, e.g. PORT=${port === 3001 ? 3002 : 3001} npm start`);
  }
}

/** A start that cannot go on: one line on stderr (the stack only with LOG_LEVEL=debug), exit 1. */
function startFailed(what: string, error: unknown): never {
  if (config.logLevel === 'debug' || config.logLevel === 'trace') console.error(error);
  const reason =
    error instanceof EmbeddedDatabaseError || error instanceof PortInUse
      ? error.message
      : `${what}: ${String((error as Error)?.message ?? error).split('\n')[0]}`;
  console.error(`hubops: ${reason}`);
  process.exit(1);
}

// Before the database opens: its pool's statements are traced only if tracing is on when it is made.
const tracing = config.otelTracesUrl
  ? await startTracing({
      url: config.otelTracesUrl,
      serviceName: config.otelServiceName,
      sampleRatio: config.otelSampleRatio,
      version: VERSION,
    }).catch((error: unknown) => startFailed('cannot start tracing', error))
  : undefined;
if (config.otelTracesUrl) log.info({ endpoint: redactUrl(config.otelTracesUrl), serviceName: config.otelServiceName }, 'tracing on');

// A stop asked for while starting (the embedded database, the demo's first sync) is kept and done
// gracefully once the server is up, so no half-started state is left; a second signal ends the
// start at once.
const STOP_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;
let stopAskedWhileStarting: string | undefined;
const whileStarting = (signal: NodeJS.Signals) => {
  if (stopAskedWhileStarting !== undefined) process.exit(1);
  stopAskedWhileStarting = signal;
  log.info({ signal }, 'stop requested while starting: stopping as soon as the start is done');
};
for (const signal of STOP_SIGNALS) process.on(signal, whileStarting);

// Exclusive: the server outlives the postmaster only if it started it itself.
const database = await openDatabase(config, {
  log: (line) => log.debug({ component: 'embedded-postgres' }, line),
  applicationName: 'hubops-server',
  exclusive: true,
}).catch((error: unknown) => startFailed('cannot open the database', error));
log.info(
  { database: database.embedded ? `embedded (${config.dataDir}/postgres)` : redactUrl(config.databaseUrl!), applied: database.applied },
  'database ready',
);

let limiter: RateLimiter = new MemoryRateLimiter();
let app: App | undefined;
// The demo without an ad platform of its own (no META_*, GOOGLE_* or OPENAI_ADS_URL setting for it):
// that platform's sandbox on loopback, with its client, OAuth pages and app credentials pointed at
// it, so Connect works and the demo's ad accounts sync from it.
let sandboxes: DemoSandboxes | undefined;
// First embedded start (or HUBOPS_DEMO=1 on an empty database): demo data and a key, printed once.
let demo: { email: string; password: string; hubName: string; key: string } | undefined;
try {
  if (config.demo && (await isDatabaseEmpty(database.db))) {
    // Brewline's Meta spend then comes from the Meta sandbox's synced accounts alone.
    const seeded = await seedDemo(database.db, systemClock, { brewlineMetaSynced: config.metaSandbox });
    const hubId = seeded.hubIds[0]!;
    const key = await createKey(database.db, { hubId, name: 'Demo key (printed at first start)' });
    const hub = await getHub(database.db, hubId);
    demo = { email: seeded.adminEmail, password: seeded.adminPassword, hubName: `${hub?.name ?? hubId} (${hubId})`, key: key.key };
  }

  sandboxes = await startDemoSandboxes(config);
  if (sandboxes) config = sandboxes.configure(config);

  if (config.redisUrl) {
    const { RedisRateLimiter } = await import('./platform/redis-rate-limit.ts');
    const redis = new RedisRateLimiter(config.redisUrl, { log });
    // Not reachable yet: said once, and the limits are counted per instance until it is.
    await redis.ready();
    limiter = redis;
  }

  app = await buildApp({ config, db: database.db, limiter, logger: log });
  await app.fastify.listen({ port: config.port, host: config.host }).catch((error: unknown) => {
    // The usual first-start stumble: another server (often an earlier hubops) holds the port.
    if ((error as NodeJS.ErrnoException)?.code !== 'EADDRINUSE') throw error;
    throw new PortInUse(config.port);
  });
  const metricsListener = await app.listenMetrics();
  if (metricsListener) log.info({ host: config.metricsHost, port: metricsListener.port }, 'metrics listener ready at /metrics');
  const adSync = app.adSync;
  for (const connection of sandboxes?.connections() ?? []) {
    // A demo that cannot reach a sandbox still serves everything else: said, not fatal.
    await connectDemoAccounts(adSync, connection, demo !== undefined)
      .then(async (ids) => {
        // The first start syncs them before the banner: Brewline's Meta spend comes from them alone
        // (seed.ts), so its figures start synced and fresh rather than never_synced.
        if (demo) for (const id of ids) await syncNow(adSync, DEMO_HUB_ID, id);
      })
      .catch((error: unknown) =>
        log.warn({ err: error, platform: connection.platform }, 'the demo ad accounts could not be connected to their sandbox'),
      );
  }
  const businessToken = sandboxes?.businessProfileToken();
  if (businessToken && app.googleBusiness)
    await connectDemoLocations(app.googleBusiness.deps, businessToken).catch((error: unknown) =>
      log.warn({ err: error }, 'the demo Business Profile locations could not be connected to their sandbox'),
    );
} catch (error) {
  // The database (and our postmaster) started: stop them before saying why we cannot go on.
  await app?.close().catch(() => {});
  await sandboxes?.close().catch(() => {});
  await limiter.close().catch(() => {});
  await database.close().catch(() => {});
  startFailed('cannot start', error);
}
const server = app;

const hub = `${config.baseUrl}${HUB_API_PREFIX}`;
// Each URL once, under a label of its own.
const urls: [string, string][] = [
  ['Web admin', `${config.baseUrl}/app`],
  ['Docs', `${config.baseUrl}/docs`],
  ['Hub API', hub],
  ['Hub API OpenAPI', `${hub}/openapi.json`],
  ['Hub MCP', `${hub}/mcp  (header: Authorization: Bearer <HUB_API_KEY>)`],
  ['Main API', config.baseUrl],
  ['Main API OpenAPI', `${config.baseUrl}/openapi.json`],
  ['MCP (OAuth)', `${config.baseUrl}/mcp`],
  ['OAuth metadata', authorizationServerMetadataUrl(config)],
  // What HOST bound, beside the BASE_URL every link uses (OAuth and MCP answer only at BASE_URL's name).
  [
    'Listening on',
    server.fastify
      .addresses()
      .map((a) => (typeof a === 'string' ? a : a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`))
      .join(', '),
  ],
  ...(sandboxes?.banner ?? []),
];
const width = Math.max(...urls.map(([label]) => label.length));
const lines = [
  '',
  `hubops is running at ${config.baseUrl} (version ${VERSION})`,
  ...urls.map(([label, url]) => `  ${label.padEnd(width)}  ${url}`),
];
const keysCreate = (hubId: string) => `npm run --silent hubops -- keys create --hub ${hubId} --name "My tool"`;
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
  // Later starts: the demo key was shown once, so name the demo hub a new key can be made for.
  const demoHub = await getHub(database.db, DEMO_HUB_ID).catch((error: unknown) => {
    if (error instanceof DomainError) return undefined;
    log.warn({ err: error }, 'could not look up the demo hub for the banner');
    return undefined;
  });
  if (demoHub) lines.push('', `Create a Hub API key for the demo hub ${demoHub.name} with:`, `  ${keysCreate(demoHub.id)}`);
  else
    lines.push(
      '',
      'Create a Hub API key for one of your hubs (ids from: hubs create, or demo seed for the demo data) with:',
      `  ${keysCreate('<HUB_ID>')}`,
    );
}
process.stdout.write(`${lines.join('\n')}\n\n`);

// `npm start` forwards the signals it gets, and a kill of the process group (Ctrl-C, systemd's
// KillMode=control-group) also reaches us directly: one more signal soon after the first is that
// duplicate (within DUPLICATE_SIGNAL_MS). Any signal beyond it forces the exit.
let stopping: { at: number; duplicateSeen: boolean } | undefined;

function onStopRequest(reason: string, exitCode: number): void {
  if (!stopping) {
    stopping = { at: Date.now(), duplicateSeen: false };
    void stop(reason, exitCode);
    return;
  }
  if (!stopping.duplicateSeen && Date.now() - stopping.at < DUPLICATE_SIGNAL_MS) {
    stopping.duplicateSeen = true;
    log.warn({ signal: reason }, 'already stopping: signal ignored (send another to force the exit)');
    return;
  }
  log.error({ signal: reason }, `forced exit: in-flight requests are cut; key usage not written: ${server.usage.unwritten()} are lost`);
  process.exit(1);
}

async function stop(reason: string, exitCode: number): Promise<void> {
  log.info({ reason }, 'stopping: finishing in-flight requests');
  // A client that never finishes its request must not hold the stop hostage: after the grace
  // period its connection is cut, and the usage flush and database stop still run.
  const deadline = setTimeout(() => {
    log.warn('grace period over: closing the remaining connections');
    server.fastify.server.closeAllConnections();
  }, STOP_GRACE_MS);
  deadline.unref();
  // Nor may a step that hangs (a database that stopped answering): past this, exit regardless —
  // after an uncaught error no signal may come to force it. The postmaster stops on exit.
  const lastResort = setTimeout(() => {
    log.error(`stop did not finish in time: exiting; key usage not written: ${server.usage.unwritten()} are lost`);
    process.exit(1);
  }, STOP_GRACE_MS + STOP_STEPS_MS);
  lastResort.unref();
  let code = exitCode;
  // Each step runs even when one before it failed: the database is stopped in every case.
  for (const [step, close] of [
    ['app', () => server.close()],
    ['ad platform sandboxes', async () => sandboxes?.close()],
    ['rate limiter', () => limiter.close()],
    ['database', () => database.close()],
    // Last: the spans of everything above are sent before the exit.
    ['tracing', async () => tracing?.shutdown()],
  ] as const) {
    try {
      await close();
    } catch (error) {
      log.error({ err: error, step }, 'unclean stop');
      code = 1;
    }
  }
  log.info({ exitCode: code }, 'stopped');
  process.exit(code);
}
for (const signal of STOP_SIGNALS) process.off(signal, whileStarting);
process.on('SIGTERM', () => onStopRequest('SIGTERM', 0));
process.on('SIGINT', () => onStopRequest('SIGINT', 0));
// The terminal went away: the postmaster, in its own session, would not notice; stop as well.
process.on('SIGHUP', () => onStopRequest('SIGHUP', 0));
if (stopAskedWhileStarting !== undefined) onStopRequest(stopAskedWhileStarting, 0);
// An error nothing caught (also an unhandled rejection) ends the process, but through the same
// stop: requests finish, usage is written, the database goes down; the exit code says it failed.
process.on('uncaughtException', (error) => {
  log.fatal({ err: error }, 'uncaught error: stopping');
  if (!stopping) onStopRequest('uncaughtException', 1);
});
