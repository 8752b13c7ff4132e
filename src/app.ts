import { createHmac, randomUUID } from 'node:crypto';
import path from 'node:path';
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply } from 'fastify';
import type { Config } from './config.ts';
import { databaseAnswers, isDatabaseUnavailable, type Db } from './db/database.ts';
import type { AdSyncDeps } from './domain/ad-sync/ad-account.service.ts';
import { createSpendSyncLoop } from './domain/ad-sync/sync-loop.ts';
import { UsageRecorder } from './domain/api-keys/usage-recorder.ts';
import { openDiskMediaStore, type MediaStore } from './domain/media/media-store.ts';
import { GrantUseRecorder } from './domain/oauth/grant-usage.ts';
import { MediaUrlSigner, mediaUrlKey } from './domain/media/media-url.ts';
import { ChannelConnectors, SandboxConnector, type Connector } from './domain/posts/connector.ts';
import { createPublisher } from './domain/posts/publisher.ts';
import { networkConnectors } from './domain/posts/network-connectors.ts';
import { publisherBacklog } from './domain/posts/post.service.ts';
import { syncBacklog } from './domain/ad-sync/ad-account.service.ts';
import { Metrics } from './platform/metrics.ts';
import { countRequests, decorateHubKeyId, listenForMetrics, serveMetrics, type MetricsListener } from './surfaces/shared/metrics.ts';
import { traceRequests } from './surfaces/shared/tracing.ts';
import { systemClock, type Clock } from './platform/clock.ts';
import { decorateClientAddress } from './platform/client-address.ts';
import { CursorKey } from './platform/cursor.ts';
import { chooseLogFormat, createLogger, RequestLogController, requestLoggers } from './platform/logger.ts';
import { MemoryRateLimiter, type RateLimiter } from './platform/rate-limit.ts';
import { Sealer, type SecretsKey } from './platform/sealing.ts';
import { createMetaPagesClient } from './integrations/meta-pages/client.ts';
import { VERSION } from './platform/version.ts';
import { createGoogleAdsClient, type GoogleOAuth } from './integrations/google-ads/client.ts';
import { createGoogleBusinessClient, type GoogleBusinessClient } from './integrations/google-business/client.ts';
import { createMetaPagesConnector } from './integrations/meta-pages/connector.ts';
import { createInsightsSyncLoop } from './domain/organic/insights-sync.ts';
import type { GoogleBusinessSetup } from './domain/channels/google-business.service.ts';
import { createReviewSyncLoop } from './domain/reviews/review-sync.ts';
import { createMetaClient, type MetaOAuth } from './integrations/meta/client.ts';
import { createOpenAIAdsClient } from './integrations/openai-ads/client.ts';
import type { SocialPlatform } from './db/schema.ts';
import { DATABASE_RETRY_AFTER_S, JSON_BODY_MAX_BYTES, MEDIA_URL_TTL_MS, METRICS_QUERY_TIMEOUT_MS, USAGE_FLUSH_MS } from './policy.ts';
import { mediaPublicRoutes } from './surfaces/media-public.ts';
import { HubApiGuard } from './surfaces/hub-api/guard.ts';
import { HUB_API_PREFIX, hubApiPlugin } from './surfaces/hub-api/plugin.ts';
import { BearerAuth } from './surfaces/main-api/auth.ts';
import { mainOperations } from './surfaces/main-api/operations.ts';
import { mainApiPlugin } from './surfaces/main-api/plugin.ts';
import { mcpMainPlugin } from './surfaces/mcp-main/plugin.ts';
import { deleteExpiredArtifacts } from './surfaces/oauth/adapter.ts';
import { oauthPlugin } from './surfaces/oauth/plugin.ts';
import type { ClientMetadataTrust } from './surfaces/oauth/client-metadata-document.ts';
import { createAuthorizationServer } from './surfaces/oauth/provider.ts';
import { createReportCaches } from './surfaces/shared/report-caches.ts';
import { RevocationFeed } from './db/revocation-feed.ts';
import { loadServerSecrets, resolveSecretsKeys } from './surfaces/oauth/server-secrets.ts';
import { webErrorPages, webPlugin } from './surfaces/web/plugin.ts';
import { docsPlugin } from './surfaces/docs/plugin.ts';
import { checkInbound, RouteMethods } from './surfaces/rest.ts';
import { compressResponses } from './surfaces/shared/compression.ts';
import {
  closeAfterUnreadBody,
  CONNECTION_LIMITS,
  endedEarly,
  limitSlowClients,
  serverOptions,
  type ConnectionLimits,
} from './surfaces/shared/connections.ts';
import { InputValidator } from './surfaces/shared/inputs.ts';
import { fromFrameworkError, refusalOf } from './surfaces/shared/errors.ts';
import { oauthRoutes } from './surfaces/shared/oauth.ts';

const ARTIFACT_CLEANUP_MS = 10 * 60_000;
const PUBLISH_INTERVAL_MS = 1_000;
/** How often the spend sync loop looks for due accounts (each is due hourly, with jitter). */
const SPEND_SYNC_POLL_MS = 15_000;
/** Ad accounts one instance syncs at once. */
const SPEND_SYNC_BATCH = 4;

/** The ad platforms' wire clients, by platform, from the configuration. */
export type AdPlatformClients = AdSyncDeps['clients'];

/** The ad platforms' clients, and the OAuth steps of those the web admin connects by OAuth. */
export interface PlatformClients {
  clients: AdPlatformClients;
  metaOAuth?: MetaOAuth;
  googleOAuth?: GoogleOAuth;
}

/**
 * The ad platforms' clients from the configuration: Meta at META_GRAPH_URL, ChatGPT Ads at
 * OPENAI_ADS_URL, and Google Ads at GOOGLE_ADS_URL only with an OAuth client (GOOGLE_OAUTH_CLIENT_ID
 * and _SECRET), which it needs to turn its refresh tokens into access tokens.
 */
export function platformClients(config: Config, clock: Clock = systemClock): PlatformClients {
  const now = () => clock.now();
  const meta = createMetaClient({ graphUrl: config.metaGraphUrl });
  // Which hours are over (ChatGPT Ads) and when an access token lapses (Google) are read on the app's clock.
  const chatgpt_ads = createOpenAIAdsClient({ baseUrl: config.openaiAdsUrl, now });
  const google_ads =
    config.googleClientId && config.googleClientSecret
      ? createGoogleAdsClient({
          adsUrl: config.googleAdsUrl,
          oauthUrl: config.googleOAuthUrl,
          clientId: config.googleClientId,
          clientSecret: config.googleClientSecret,
          now,
          ...(config.googleDeveloperToken ? { developerToken: config.googleDeveloperToken } : {}),
        })
      : undefined;
  return {
    clients: { meta, chatgpt_ads, ...(google_ads ? { google_ads } : {}) },
    metaOAuth: meta,
    ...(google_ads ? { googleOAuth: google_ads } : {}),
  };
}

/**
 * The ad-sync dependencies as a server builds them (the CLI too): tokens sealed under the server's
 * secrets key, the platform clients from the configuration.
 */
export async function adSyncDepsFor(
  config: Config,
  db: Db,
  options: { clock?: Clock; keys?: SecretsKey[]; clients?: AdPlatformClients; log?: AdSyncDeps['log'] } = {},
): Promise<AdSyncDeps> {
  const keys = options.keys ?? (await resolveSecretsKeys(config)).keys;
  return {
    db,
    clock: options.clock ?? systemClock,
    clients: options.clients ?? platformClients(config, options.clock).clients,
    sealer: new Sealer(keys),
    ...(options.log ? { log: options.log } : {}),
  };
}

export interface AppDeps {
  config: Config;
  db: Db;
  clock?: Clock;
  limiter?: RateLimiter;
  /** How often batched key usage is written; USAGE_FLUSH_MS unless a test needs it sooner. */
  usageFlushMs?: number;
  /** Where uploaded media go; default: a disk store under $DATA_DIR/media. */
  media?: MediaStore;
  /** Run the background post publisher (default true; tests that drive it themselves turn it off). */
  publisher?: boolean;
  /**
   * The networks' connectors for channels connected to them, by platform ('facebook' and
   * 'instagram': Meta's Pages connector; 'google_business': the Business Profile connector);
   * default: networkConnectors (src/domain/posts/network-connectors.ts). Channels without a connection use the sandbox connector.
   */
  channelConnectors?: Partial<Record<SocialPlatform, Connector>>;
  /** Run the background spend sync loop (default: the configuration's HUBOPS_SPEND_SYNC). */
  spendSync?: boolean;
  /** The Business Profile client (tests: one on a sandbox); default: from the configuration, when Google OAuth is set up. */
  googleBusinessClient?: GoogleBusinessClient;
  /** Run the background review sync loop (default: HUBOPS_SPEND_SYNC, which turns every platform sync on or off). */
  reviewSync?: boolean;
  /** Run the background organic insights sync loop (default: HUBOPS_ORGANIC_INSIGHTS_SYNC). */
  insightsSync?: boolean;
  /** The ad platforms' clients (tests: a fake); default: from the configuration (META_GRAPH_URL). */
  adPlatformClients?: AdPlatformClients;
  /** A pino logger to share (main.ts), or false for none (tests); default: one from the config. */
  logger?: FastifyBaseLogger | false;
  /** Tests only: shorter connection limits than src/policy.ts's (CONNECTION_LIMITS), to see them enforced. */
  connectionLimits?: Partial<ConnectionLimits>;
  /** Tests only: trust a local HTTPS server for client metadata documents (no configuration sets it). */
  cimdTrust?: ClientMetadataTrust;
}

export interface App {
  fastify: FastifyInstance;
  /** The Prometheus metrics, when METRICS_TOKEN or METRICS_PORT turns them on. */
  metrics: Metrics | undefined;
  /** Opens the METRICS_PORT listener (a test: on `port`, 0 for any free one); undefined without METRICS_PORT. */
  listenMetrics(port?: number): Promise<MetricsListener | undefined>;
  usage: UsageRecorder;
  /** The spend sync's dependencies, built once: what the web admin, the CLI and tests call the ad-sync service with. */
  adSync: AdSyncDeps;
  /** Business Profile's services, when Google OAuth is set up: connecting locations, the review sync. */
  googleBusiness?: GoogleBusinessSetup;
  /** Stops accepting, finishes in-flight requests, flushes usage. */
  close(): Promise<void>;
}

/** The Business Profile client the configuration asks for (the demo's sandbox, or Google), or none without Google OAuth. */
function googleBusinessSetup(
  config: Config,
  clock: Clock,
  injected: GoogleBusinessClient | undefined,
): { client: GoogleBusinessClient; accountsUrl: string; clientId: string } | undefined {
  const oauth =
    config.googleBusinessOAuth ??
    (config.googleClientId && config.googleClientSecret
      ? { url: config.googleOAuthUrl, clientId: config.googleClientId, clientSecret: config.googleClientSecret }
      : undefined);
  if (!oauth) return undefined;
  const accountsUrl = config.googleBusinessOAuth ? config.googleBusinessOAuth.url : config.googleAccountsUrl;
  const client =
    injected ??
    createGoogleBusinessClient({
      ...(config.googleBusinessUrl ? { businessUrl: config.googleBusinessUrl } : {}),
      oauthUrl: oauth.url,
      clientId: oauth.clientId,
      clientSecret: oauth.clientSecret,
      now: () => clock.now(),
    });
  return { client, accountsUrl, clientId: oauth.clientId };
}

export async function buildApp(deps: AppDeps): Promise<App> {
  const clock = deps.clock ?? systemClock;
  const limiter = deps.limiter ?? new MemoryRateLimiter();
  // The web admin's and the embeds' refusals and misses are pages; every other path keeps JSON.
  const webErrors = webErrorPages(deps.config);
  const connectionLimits = { ...CONNECTION_LIMITS, ...deps.connectionLimits };
  const fastify = Fastify({
    // Slow and idle clients are not held: request head, body and keep-alive timeouts (limitSlowClients below).
    ...serverOptions(connectionLimits),
    ...(deps.logger === false
      ? { logger: false }
      : {
          loggerInstance:
            deps.logger ??
            createLogger({ level: deps.config.logLevel, format: chooseLogFormat(deps.config.logFormat, process.stdout.isTTY === true) }),
        }),
    // One line per request, written on response (method, path, status, time, request id).
    logController: new RequestLogController(),
    // Each request's logger (its request id bound) made on its first written line (RequestLogger).
    ...(deps.logger === false ? {} : { childLoggerFactory: requestLoggers }),
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    // Query strings like ?a=1&a=2 become arrays and then fail validation, as they should.
    routerOptions: { ignoreTrailingSlash: true },
    bodyLimit: JSON_BODY_MAX_BYTES,
    // A malformed URL or an overlong path segment: our error body, not Fastify's.
    frameworkErrors: (error, request, reply) => {
      const refusal = fromFrameworkError(error, request.routeOptions?.bodyLimit ?? JSON_BODY_MAX_BYTES);
      if (refusal)
        return (
          webErrors.refused(request, reply as FastifyReply, refusal.status, refusal.message) ??
          (reply as FastifyReply).code(refusal.status).send(refusal.body())
        );
      request.log.error({ err: error }, 'request failed');
      return (reply as FastifyReply)
        .code(500)
        .send({ error: 'internal_error', message: 'Something went wrong on our side.', requestId: request.id });
    },
  });
  // Metrics and traces hook in before any route is added (each route gets its own counter).
  decorateHubKeyId(fastify);
  fastify.decorateRequest('traceIds', null);
  const metrics =
    deps.config.metricsToken !== undefined || deps.config.metricsPort !== undefined ? await Metrics.create(VERSION) : undefined;
  if (metrics) countRequests(fastify, metrics);
  traceRequests(fastify);
  // Bodies are JSON (or what a route parses itself): a text/plain body is refused with 415, not
  // read as a string the operation would silently ignore.
  fastify.removeContentTypeParser('text/plain');
  // The client's address for per-address limits and logs (TRUST_PROXY).
  const clientAddress = decorateClientAddress(fastify, deps.config);
  const routeMethods = new RouteMethods();
  fastify.addHook('onRoute', (route) => routeMethods.add(route.url, route.method));
  // OAuth endpoints hand the raw request to oidc-provider, which answers in OAuth's own shape.
  const oauthBase = oauthRoutes(deps.config).token.replace(/token$/, '');
  // Hooks that every request runs are plain callbacks, not async functions: an async hook costs a
  // promise and a turn of the microtask queue per request, more than the little work each does.
  fastify.addHook('preValidation', (request, _reply, done) => {
    const url = request.routeOptions.url ?? '';
    try {
      if (!url.startsWith(oauthBase) && !url.startsWith('/.well-known/oauth-authorization-server')) checkInbound(request);
    } catch (error) {
      done(error as Error);
      return;
    }
    done();
  });

  const usage = new UsageRecorder(deps.db, {
    flushEveryMs: deps.usageFlushMs ?? USAGE_FLUSH_MS,
    onError: (error) => fastify.log.warn({ err: error }, 'key usage flush failed; will retry'),
  });
  const guard = new HubApiGuard({
    db: deps.db,
    limiter,
    usage,
    clock,
    onLimiterError: (error) => fastify.log.warn({ err: error }, 'rate limiter unavailable; request allowed'),
  });

  fastify.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  // JSON and CSV answers go compressed when the client accepts it (br, gzip, zstd): one hook, every route.
  compressResponses(fastify);
  closeAfterUnreadBody(fastify);
  limitSlowClients(fastify, connectionLimits);

  // Every refusal (a surface's ApiError, the domain's DomainError) answers as refusalOf maps it.
  fastify.setErrorHandler((error: FastifyError | Error, request, reply) => {
    // A hang-up (or a body past its deadline) mid-request fails whatever was reading the body,
    // often with ECONNRESET, which would pass for the database: no answer can reach the client.
    const ended = endedEarly(request);
    if (ended) {
      request.log.info({ method: request.method, url: request.routeOptions.url }, ended);
      reply.hijack();
      return undefined;
    }
    const refused = refusalOf(error);
    if (refused) return reply.code(refused.status).headers(refused.headers).send(refused.body());
    if (isDatabaseUnavailable(error)) {
      request.log.warn({ err: error }, 'database unavailable');
      return reply
        .code(503)
        .header('retry-after', String(DATABASE_RETRY_AFTER_S))
        .send({ error: 'service_unavailable', message: 'The service is temporarily unavailable; retry shortly.' });
    }
    const refusal = fromFrameworkError(error as FastifyError, request.routeOptions.bodyLimit ?? JSON_BODY_MAX_BYTES);
    if (refusal) return reply.code(refusal.status).send(refusal.body());
    request.log.error({ err: error }, 'request failed');
    return reply.code(500).send({ error: 'internal_error', message: 'Something went wrong on our side.', requestId: request.id });
  });

  fastify.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]!;
    const allow = routeMethods.allowed(path);
    const page = webErrors.notFound(request, reply, allow);
    if (page) return page;
    if (allow.length > 0) {
      return reply
        .code(405)
        .header('allow', allow.join(', '))
        .send({ error: 'method_not_allowed', message: `${request.method} is not allowed on ${path}; use ${allow.join(', ')}.` });
    }
    return reply.code(404).send({ error: 'not_found', message: `No endpoint ${request.method} ${path}.` });
  });

  // Probes at the origin's root, and under BASE_URL's path for a proxy that forwards only that path.
  for (const root of new Set(['', new URL(deps.config.baseUrl).pathname.replace(/\/$/, '')])) {
    fastify.get(`${root}/healthz`, async () => ({ status: 'ok' }));
    fastify.get(`${root}/readyz`, async (_request, reply) => {
      if (await databaseAnswers(deps.db)) return { status: 'ready' };
      return reply.code(503).send({ status: 'unavailable', error: 'service_unavailable', message: 'The database is not reachable.' });
    });
  }

  const secretsKeys = await resolveSecretsKeys(deps.config);
  if (secretsKeys.fromFile && deps.config.databaseUrl) {
    fastify.log.warn(
      { keyFile: secretsKeys.fromFile },
      'HUBOPS_SECRETS_KEY is not set: server secrets are encrypted under this key file; every instance sharing the database needs the same key',
    );
  }
  const secrets = await loadServerSecrets(deps.db, { keys: secretsKeys.keys });
  // Cursors are signed with a key every instance derives alike from the shared server secrets;
  // this app's operations validate their input (cursors included) with it.
  const inputs = new InputValidator(new CursorKey(createHmac('sha256', secrets.cookieKeys[0]!).update('cursor v2').digest()));
  const revocationLog = fastify.log.child({ component: 'revocation-listener' });
  const revocations = new RevocationFeed(deps.db, {
    onState: ({ listening, error, retryInMs }) =>
      listening
        ? revocationLog.info('revocation listener connected again; token verdicts are cached again')
        : revocationLog.warn(
            { err: error, retryInMs },
            'revocation listener lost its connection; token verdicts are not cached until it is back',
          ),
  });
  await revocations
    .start()
    .catch((error) => fastify.log.warn({ err: error }, 'revocation listener not started; token verdicts are not cached until it is'));
  const provider = createAuthorizationServer(deps.config, deps.db, secrets, {
    revocations,
    limiter,
    clock,
    log: fastify.log,
    cimdTrust: deps.cimdTrust,
    clientAddress,
  });
  await fastify.register(oauthPlugin, { config: deps.config, db: deps.db, provider, limiter, clock, csrfKey: secrets.cookieKeys[0]! });
  // Expired tokens, codes and sessions are deleted in the background (any instance may do it).
  const cleanup = setInterval(() => {
    deleteExpiredArtifacts(deps.db).catch((error) => fastify.log.warn({ err: error }, 'expired OAuth artifact cleanup failed'));
  }, ARTIFACT_CLEANUP_MS);
  cleanup.unref();
  const media = deps.media ?? (await openDiskMediaStore(path.join(deps.config.dataDir, 'media')));
  // A test's clients stand in for the configured ones; a stand-in with OAuth steps serves its Connect too.
  const injected = deps.adPlatformClients;
  const withOAuth = <T>(client: unknown): T | undefined =>
    client && typeof (client as { authorizeUrl?: unknown }).authorizeUrl === 'function' ? (client as T) : undefined;
  const platforms: PlatformClients = injected
    ? { clients: injected, metaOAuth: withOAuth<MetaOAuth>(injected.meta), googleOAuth: withOAuth<GoogleOAuth>(injected.google_ads) }
    : platformClients(deps.config, clock);
  const adSyncLog = fastify.log.child({ component: 'spend-sync' });
  // Ad platform tokens are sealed under the same key as the server secrets.
  const adSync = await adSyncDepsFor(deps.config, deps.db, { clock, keys: secretsKeys.keys, clients: platforms.clients, log: adSyncLog });
  // Every instance syncs ad accounts; claims on the account rows (FOR UPDATE SKIP LOCKED) keep one sync per account.
  const spendSync = createSpendSyncLoop({
    deps: adSync,
    intervalMs: SPEND_SYNC_POLL_MS,
    batchSize: SPEND_SYNC_BATCH,
    onError: (error) => adSyncLog.warn({ err: error }, 'spend sync round failed; will retry'),
  });
  // Media the networks fetch by URL (Instagram, Meta): signed, expiring, under BASE_URL, no session.
  const mediaUrls = new MediaUrlSigner(mediaUrlKey(secrets.cookieKeys[0]!), deps.config.baseUrl, MEDIA_URL_TTL_MS);
  await mediaPublicRoutes(fastify, {
    prefix: new URL(deps.config.baseUrl).pathname.replace(/\/$/, ''),
    db: deps.db,
    media,
    signer: mediaUrls,
    clock,
  });
  // Business Profile: connecting locations, and their reviews syncing on every instance (claims on
  // the review_syncs rows keep one read per location at a time).
  const business = googleBusinessSetup(deps.config, clock, deps.googleBusinessClient);
  const reviewLog = fastify.log.child({ component: 'review-sync' });
  const googleBusiness: GoogleBusinessSetup | undefined = business && {
    deps: { db: deps.db, clock, sealer: adSync.sealer, client: business.client },
    accountsUrl: business.accountsUrl,
    clientId: business.clientId,
    reviewSync: createReviewSyncLoop({
      deps: { db: deps.db, clock, client: business.client, sealer: adSync.sealer, log: reviewLog },
      intervalMs: SPEND_SYNC_POLL_MS,
      batchSize: SPEND_SYNC_BATCH,
      onError: (error) => reviewLog.warn({ err: error }, 'review sync round failed; will retry'),
    }),
  };
  // Facebook Pages and Instagram: publishing, and the published posts' insights read back on a
  // decaying schedule (claims on the insight rows keep one read per post at a time).
  const metaPagesClient = createMetaPagesClient({ graphUrl: deps.config.metaGraphUrl });
  const metaPages = createMetaPagesConnector({ client: metaPagesClient });
  const insightsLog = fastify.log.child({ component: 'insights-sync' });
  const insightsSync = createInsightsSyncLoop({
    deps: { db: deps.db, clock, sealer: adSync.sealer, sources: { facebook: metaPages, instagram: metaPages }, log: insightsLog },
    intervalMs: SPEND_SYNC_POLL_MS,
    batchSize: SPEND_SYNC_BATCH,
    onError: (error) => insightsLog.warn({ err: error }, 'insights sync round failed; will retry'),
  });
  // Scheduled posts publish from every instance; claims (FOR UPDATE SKIP LOCKED) keep it exactly
  // once. Connected channels go through their network's connector, with tokens sealed as ad-sync's.
  const publisher = createPublisher({
    db: deps.db,
    clock,
    connectors: new ChannelConnectors(
      new SandboxConnector(deps.db, clock),
      deps.channelConnectors ?? networkConnectors(metaPages, business?.client),
    ),
    sealer: adSync.sealer,
    mediaUrls,
    intervalMs: PUBLISH_INTERVAL_MS,
    batchSize: 50,
    onError: (error) => fastify.log.warn({ err: error }, 'publisher round failed; will retry'),
    onEvent: (event) => {
      const { kind, ...fields } = event;
      if (kind === 'taken_over')
        fastify.log.warn(
          { posts: event.posts },
          `publisher took over ${event.posts.length} posts whose publisher stopped; their deliveries in flight are looked up`,
        );
      else if (kind === 'unconfirmed')
        fastify.log.warn(fields, 'delivery unconfirmed: no answer that says whether it was published; it is looked up');
      else fastify.log.info(fields, `unconfirmed delivery looked up: ${event.outcome}`);
    },
  });
  // Connected apps' "last used": at most one write per grant a minute per instance.
  const grantUse = new GrantUseRecorder(deps.db, {
    onError: (error) => fastify.log.warn({ err: error }, 'OAuth grant last-use write failed'),
  });
  const auth = new BearerAuth({
    provider,
    db: deps.db,
    limiter,
    clock,
    revocations,
    grantUse,
    onLimiterError: (error) => fastify.log.warn({ err: error }, 'rate limiter unavailable; request allowed'),
  });
  await fastify.register(mainApiPlugin, {
    prefix: new URL(deps.config.baseUrl).pathname.replace(/\/$/, ''),
    config: deps.config,
    db: deps.db,
    clock,
    media,
    auth,
    operations: mainOperations,
    inputs,
    version: VERSION,
  });

  // The hub reports' caches, one set for every surface that serves them.
  const caches = createReportCaches();
  // The main MCP server at {base_url}/mcp and its protected-resource metadata under /.well-known
  // (at the origin's root, so it is registered without the base path prefix).
  await fastify.register(mcpMainPlugin, { config: deps.config, db: deps.db, clock, media, auth, caches, inputs, version: VERSION });

  // The Hub API at {base_url}/v1/hub: under BASE_URL's path, like the main API.
  await fastify.register(hubApiPlugin, {
    prefix: `${new URL(deps.config.baseUrl).pathname.replace(/\/$/, '')}${HUB_API_PREFIX}`,
    config: deps.config,
    guard,
    context: { db: deps.db, clock, caches },
    inputs,
    version: VERSION,
  });

  // The web admin ({base_url}/app) and the signed embeds ({base_url}/embed).
  await fastify.register(webPlugin, {
    config: deps.config,
    db: deps.db,
    clock,
    limiter,
    caches,
    revocations,
    adSync,
    ...(platforms.metaOAuth ? { metaOAuth: platforms.metaOAuth } : {}),
    // Connect Facebook Pages / Instagram (issue 23): the Pages client on the same Graph URL.
    metaPages: metaPagesClient,
    ...(platforms.googleOAuth ? { googleOAuth: platforms.googleOAuth } : {}),
    ...(googleBusiness ? { googleBusiness } : {}),
  });

  // The docs ({base_url}/docs): the guide rendered, and a reference page per OpenAPI document.
  await fastify.register(docsPlugin, {
    config: deps.config,
    apis: [
      {
        name: 'hub',
        title: 'Hub API',
        openapi: `${HUB_API_PREFIX}/openapi.json`,
        tryIt: true,
        note: 'Try a request: Authorize with a Hub API key (hubops_…), then Try it out. Requests go to this server only; the key is kept in this page, never stored.',
      },
      {
        name: 'main',
        title: 'Main API',
        openapi: '/openapi.json',
        tryIt: false,
        note: 'The main API takes an OAuth access token, which a client gets through the flow in the main API guide; this page describes its operations.',
      },
    ],
  });

  if (metrics) {
    serveMetrics(fastify, deps.config, metrics);
    watchBackground(metrics, deps.db, clock);
  }
  let metricsListener: MetricsListener | undefined;

  await fastify.ready();
  if (deps.publisher !== false) publisher.start();
  if (deps.spendSync ?? deps.config.spendSync) spendSync.start();
  if (deps.reviewSync ?? deps.config.spendSync) googleBusiness?.reviewSync.start();
  if (deps.insightsSync ?? deps.config.organicInsightsSync) insightsSync.start();
  return {
    fastify,
    usage,
    adSync,
    metrics,
    listenMetrics: async (port) => {
      if (!metrics) return undefined;
      metricsListener = await listenForMetrics(deps.config, metrics, port ?? deps.config.metricsPort);
      return metricsListener;
    },
    ...(googleBusiness ? { googleBusiness } : {}),
    close: async () => {
      clearInterval(cleanup);
      await metricsListener?.close();
      let usageWritten: Promise<void> | undefined;
      try {
        await fastify.close();
        // Every request is counted now: the last usage write starts at once rather than behind the
        // steps below, each of which may wait out its timeouts on a database that stopped answering.
        usageWritten = usage.close();
        usageWritten.catch(() => {}); // awaited in finally
        await publisher.stop();
        await spendSync.stop();
        await googleBusiness?.reviewSync.stop();
        await insightsSync.stop();
        await grantUse.close();
        await revocations.close();
        if (!deps.limiter) await limiter.close();
        // After fastify.close: no upload is in flight, so this process's staging can go.
        if (!deps.media) await media.close();
      } finally {
        // Whatever failed before: it may reject, reporting counts it could not write.
        await (usageWritten ?? usage.close());
      }
    },
  };
}

/** A read that gives up after METRICS_QUERY_TIMEOUT_MS: a scrape answers in time, without the figures it could not read. */
function timely<T>(read: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('metrics read timed out')), METRICS_QUERY_TIMEOUT_MS);
  });
  return Promise.race([read, late]).finally(() => clearTimeout(timer));
}

/**
 * The gauges read at each scrape: the database pool (this instance's), and the background jobs'
 * backlogs (the whole database's: every instance reports the same figures, so aggregate them
 * with max, not sum). Two cheap queries per scrape, none per request.
 */
function watchBackground(metrics: Metrics, db: Db, clock: Clock): void {
  metrics.addSource(
    'db_pool',
    [
      { name: 'hubops_db_pool_connections', help: "This instance's database connections, in use or idle.", labelNames: ['state'] },
      { name: 'hubops_db_pool_waiting', help: 'Queries waiting for a connection of this instance’s pool.' },
      { name: 'hubops_db_pool_max_connections', help: "The size of this instance's pool." },
    ],
    {
      collect(set) {
        const { totalCount, idleCount, waitingCount } = db.pool;
        set('hubops_db_pool_connections', totalCount - idleCount, { state: 'in_use' });
        set('hubops_db_pool_connections', idleCount, { state: 'idle' });
        set('hubops_db_pool_waiting', waitingCount);
        set('hubops_db_pool_max_connections', (db.pool as unknown as { options: { max: number } }).options.max);
      },
    },
  );
  metrics.addSource(
    'publisher',
    [
      { name: 'hubops_publisher_due_posts', help: 'Scheduled posts due and not yet claimed by a publisher.' },
      { name: 'hubops_publisher_publishing_posts', help: 'Posts being published (claimed).' },
      { name: 'hubops_publisher_lag_seconds', help: 'How long the longest-waiting due post has waited (0: none waits).' },
    ],
    {
      async collect(set) {
        const now = clock.now();
        const backlog = await timely(publisherBacklog(db, clock));
        set('hubops_publisher_due_posts', backlog.due);
        set('hubops_publisher_publishing_posts', backlog.publishing);
        set('hubops_publisher_lag_seconds', backlog.oldestDue ? Math.max(0, (now.getTime() - backlog.oldestDue.getTime()) / 1000) : 0);
      },
    },
  );
  metrics.addSource(
    'ad_sync',
    [
      { name: 'hubops_ad_sync_accounts', help: 'Connected ad accounts, by platform.', labelNames: ['platform'] },
      {
        name: 'hubops_ad_sync_due_accounts',
        help: 'Ad accounts due for a sync and waiting for one, by platform.',
        labelNames: ['platform'],
      },
      {
        name: 'hubops_ad_sync_lag_seconds',
        help: 'How long the longest-waiting due ad account has waited for its sync, by platform (0: none waits).',
        labelNames: ['platform'],
      },
      { name: 'hubops_ad_sync_failing_accounts', help: 'Ad accounts whose last sync failed, by platform.', labelNames: ['platform'] },
      {
        name: 'hubops_ad_sync_complete_through_age_days',
        help: 'Days from today (UTC) back to the oldest last complete day among the connected accounts, by platform (1: every account is complete through yesterday).',
        labelNames: ['platform'],
      },
    ],
    {
      async collect(set) {
        for (const row of await timely(syncBacklog(db, clock))) {
          const platform = { platform: row.platform };
          set('hubops_ad_sync_accounts', row.accounts, platform);
          set('hubops_ad_sync_due_accounts', row.due, platform);
          set('hubops_ad_sync_lag_seconds', row.lag_seconds, platform);
          set('hubops_ad_sync_failing_accounts', row.failing, platform);
          if (row.complete_through_age_days !== null)
            set('hubops_ad_sync_complete_through_age_days', row.complete_through_age_days, platform);
        }
      },
    },
  );
}
