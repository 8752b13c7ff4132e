// The one place environment variables are read. Invalid values stop the process with one line
// naming the variable.
import { isIP } from 'node:net';
import { FORWARDED_HEADERS, parseTrustedProxies, type ForwardedHeader, type TrustedProxies } from './platform/client-address.ts';
import { LOG_FORMATS, redactQuery, type LogFormat } from './platform/logger.ts';
import { METRICS_TOKEN_MIN_CHARS } from './policy.ts';

export interface Config {
  port: number;
  host: string;
  baseUrl: string;
  siteUrl: string;
  databaseUrl: string | undefined;
  dataDir: string;
  redisUrl: string | undefined;
  demo: boolean;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** LOG_FORMAT; undefined: pretty when stdout is a terminal, JSON otherwise. */
  logFormat: LogFormat | undefined;
  /**
   * HUBOPS_SECRETS_KEY: keys that encrypt the server secrets at rest (32 bytes each), the current
   * one first, then earlier ones still accepted for rotation; empty: a key file under DATA_DIR.
   */
  secretsKeys: Buffer[];
  /** META_APP_ID and META_APP_SECRET: the Meta app for "Connect Meta" by OAuth; unset: token paste only. */
  metaAppId: string | undefined;
  metaAppSecret: string | undefined;
  /** META_GRAPH_URL: the Graph API's base URL (the real host, or a loopback sandbox). */
  metaGraphUrl: string;
  /** META_DIALOG_URL: where the OAuth dialog is served (https://www.facebook.com). */
  metaDialogUrl: string;
  /**
   * The demo's Meta is a loopback sandbox: the demo is on and no Meta setting (app, Graph or dialog
   * URL) is given. Any one of them means a real Meta, which the demo never replaces.
   */
  metaSandbox: boolean;
  /**
   * GOOGLE_OAUTH_CLIENT_ID and GOOGLE_OAUTH_CLIENT_SECRET: the Google Cloud OAuth client behind
   * "Connect Google Ads" and the refresh of its tokens; unset: Google Ads accounts cannot connect.
   */
  googleClientId: string | undefined;
  googleClientSecret: string | undefined;
  /** GOOGLE_ADS_DEVELOPER_TOKEN: sent as `developer-token` only when set (Google retired the requirement on 2026-09-09). */
  googleDeveloperToken: string | undefined;
  /** GOOGLE_ADS_URL: the Google Ads API's base URL (https://googleads.googleapis.com, or a loopback sandbox). */
  googleAdsUrl: string;
  /** GOOGLE_OAUTH_URL: Google's token endpoint host (https://oauth2.googleapis.com). */
  googleOAuthUrl: string;
  /** GOOGLE_ACCOUNTS_URL: where Google's consent screen is served (https://accounts.google.com). */
  googleAccountsUrl: string;
  /** The demo's Google Ads is a loopback sandbox: the demo is on and no Google setting is given. */
  googleAdsSandbox: boolean;
  /**
   * GOOGLE_BUSINESS_URL: one origin for the three Business Profile APIs (a loopback sandbox); unset:
   * Google's own hosts (mybusinessaccountmanagement, mybusinessbusinessinformation, mybusiness.googleapis.com).
   */
  googleBusinessUrl: string | undefined;
  /** The demo's Business Profile is a loopback sandbox: the demo is on and no Google setting is given. */
  googleBusinessSandbox: boolean;
  /**
   * Set by the demo only: its Business Profile sandbox serves its own consent page and token
   * endpoint, apart from the Google Ads sandbox's. In production both use GOOGLE_OAUTH_*.
   */
  googleBusinessOAuth?: { url: string; clientId: string; clientSecret: string };
  /** OPENAI_ADS_URL: the OpenAI Ads API's base URL (ChatGPT Ads; https://api.ads.openai.com, or a loopback sandbox). */
  openaiAdsUrl: string;
  /** The demo's ChatGPT Ads is a loopback sandbox: the demo is on and OPENAI_ADS_URL is not set. */
  openaiAdsSandbox: boolean;
  /** HUBOPS_SPEND_SYNC: whether this instance runs the background spend sync loop. */
  spendSync: boolean;
  /** HUBOPS_ORGANIC_INSIGHTS_SYNC: whether this instance runs the organic insights sync loop (Facebook / Instagram post insights). */
  organicInsightsSync: boolean;
  /** TRUST_PROXY: the reverse proxies whose forwarded client address is believed; undefined: none (the socket's address). */
  trustProxy: TrustedProxies | undefined;
  /** TRUST_PROXY_HEADER: where those proxies put it. */
  trustProxyHeader: ForwardedHeader;
  /** METRICS_TOKEN: the bearer token a scrape of /metrics must send; undefined: none (METRICS_PORT alone). */
  metricsToken: string | undefined;
  /** METRICS_PORT: /metrics on a listener of its own at METRICS_HOST, not on PORT; undefined: on PORT, and only with METRICS_TOKEN. */
  metricsPort: number | undefined;
  /** METRICS_HOST: where the METRICS_PORT listener binds (loopback unless told). */
  metricsHost: string;
  /**
   * Where spans go (OTLP over HTTP, JSON): OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or
   * OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces; undefined: tracing off (also with OTEL_SDK_DISABLED=true
   * or OTEL_TRACES_EXPORTER=none).
   */
  otelTracesUrl: string | undefined;
  /** OTEL_SERVICE_NAME: the spans' service.name. */
  otelServiceName: string;
  /** OTEL_TRACES_SAMPLER_ARG: the share of new traces kept, 0 to 1 (a request with a sampled parent is always kept). */
  otelSampleRatio: number;
}

export class ConfigError extends Error {}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

function url(name: string, value: string, protocols: string[]): string {
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new ConfigError(`${name} must be a URL, got ${JSON.stringify(redactUrl(value))}`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must use ${protocols.join(' or ')}, got ${parsed.protocol}`);
  }
  return value;
}

/**
 * Hides a password in a connection string (user info or `?password=`) before it reaches an error
 * or log line. Text that does not parse as a URL (e.g. a raw `/` or `@` in the password) loses
 * everything between the user name and the last `@`.
 */
export function redactUrl(value: string): string {
  let masked: string;
  try {
    const parsed = new URL(value);
    if (parsed.password) parsed.password = '***';
    masked = parsed.href;
  } catch {
    masked = value.replace(/\/\/([^:/@]*):.*@/, '//$1:***@');
  }
  return redactQuery(masked);
}

/**
 * BASE_URL when none is given: http://localhost:PORT, or the loopback address HOST names when it
 * binds one alone (HOST=127.0.0.1 serves nothing on ::1, which localhost may resolve to first).
 */
function defaultBaseUrl(host: string, port: number): string {
  if (isIP(host) === 4 && host.startsWith('127.')) return `http://${host}:${port}`;
  if (host === '::1') return `http://[::1]:${port}`;
  return `http://localhost:${port}`;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const portText = env.PORT?.trim() || '3000';
  if (!/^\d{1,5}$/.test(portText) || Number(portText) > 65535) {
    throw new ConfigError(`PORT must be an integer from 0 to 65535, got ${JSON.stringify(portText)}`);
  }
  const port = Number(portText);
  const databaseUrl = env.DATABASE_URL?.trim() ? url('DATABASE_URL', env.DATABASE_URL.trim(), ['postgres:', 'postgresql:']) : undefined;
  // The embedded database means the demo, whose admin password is in the README: loopback only
  // unless HOST says otherwise. `localhost` (every loopback address it names, as Fastify binds it)
  // rather than 127.0.0.1 alone, so the default BASE_URL's host is exactly what is bound.
  const host = env.HOST?.trim() || (databaseUrl ? '0.0.0.0' : 'localhost');
  const baseUrl = url('BASE_URL', env.BASE_URL?.trim() || defaultBaseUrl(host, port), ['http:', 'https:']).replace(/\/+$/, '');
  const siteUrl = url('SITE_URL', env.SITE_URL?.trim() || new URL(baseUrl).origin, ['http:', 'https:']).replace(/\/+$/, '');
  const redisUrl = env.REDIS_URL?.trim() ? url('REDIS_URL', env.REDIS_URL.trim(), ['redis:', 'rediss:']) : undefined;
  const demoText = env.HUBOPS_DEMO?.trim() || (databaseUrl ? '0' : '1');
  if (demoText !== '0' && demoText !== '1') {
    throw new ConfigError(`HUBOPS_DEMO must be 0 or 1, got ${JSON.stringify(demoText)}`);
  }
  const logLevel = (env.LOG_LEVEL?.trim() || 'info') as Config['logLevel'];
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(logLevel)}`);
  }
  const logFormat = env.LOG_FORMAT?.trim() || undefined;
  if (logFormat !== undefined && !(LOG_FORMATS as readonly string[]).includes(logFormat)) {
    throw new ConfigError(
      `LOG_FORMAT must be one of ${LOG_FORMATS.join(', ')} (unset: pretty on a terminal, json otherwise), got ${JSON.stringify(logFormat)}`,
    );
  }
  const secretsKeys = (env.HUBOPS_SECRETS_KEY?.trim() || '')
    .split(',')
    .filter((k) => k.trim() !== '')
    .map((k, i) => {
      // Never echo the value: it is a secret.
      if (!/^[A-Za-z0-9_-]{43}$/.test(k.trim())) {
        throw new ConfigError(
          `HUBOPS_SECRETS_KEY must be 32 bytes in base64url (43 characters${i > 0 ? `; key ${i + 1} of the list is not` : ''}), e.g. from: openssl rand -base64 32 | tr '+/' '-_' | tr -d '='`,
        );
      }
      return Buffer.from(k.trim(), 'base64url');
    });
  const metaAppId = env.META_APP_ID?.trim() || undefined;
  const metaAppSecret = env.META_APP_SECRET?.trim() || undefined;
  if (metaAppId !== undefined && !/^[A-Za-z0-9_-]{1,64}$/.test(metaAppId))
    throw new ConfigError(`META_APP_ID must be the Meta app's id (digits), got ${JSON.stringify(metaAppId.slice(0, 40))}`);
  // Never echo the secret.
  if (metaAppSecret !== undefined && !/^[\x21-\x7e]{8,256}$/.test(metaAppSecret))
    throw new ConfigError('META_APP_SECRET must be the Meta app secret (8 to 256 characters, no spaces)');
  if ((metaAppId === undefined) !== (metaAppSecret === undefined))
    throw new ConfigError('META_APP_ID and META_APP_SECRET go together: set both (Connect Meta by OAuth) or neither (token paste only)');
  const metaGraphUrl = url('META_GRAPH_URL', env.META_GRAPH_URL?.trim() || 'https://graph.facebook.com', ['http:', 'https:']).replace(
    /\/+$/,
    '',
  );
  const metaDialogUrl = url('META_DIALOG_URL', env.META_DIALOG_URL?.trim() || 'https://www.facebook.com', ['http:', 'https:']).replace(
    /\/+$/,
    '',
  );
  const googleClientId = env.GOOGLE_OAUTH_CLIENT_ID?.trim() || undefined;
  const googleClientSecret = env.GOOGLE_OAUTH_CLIENT_SECRET?.trim() || undefined;
  // Google's client ids end in .apps.googleusercontent.com; a loose check catches a secret pasted in the id's place.
  if (googleClientId !== undefined && !/^[A-Za-z0-9._-]{1,256}$/.test(googleClientId))
    throw new ConfigError(
      `GOOGLE_OAUTH_CLIENT_ID must be the OAuth client's id (…apps.googleusercontent.com), got ${JSON.stringify(googleClientId.slice(0, 40))}`,
    );
  // Never echo the secret.
  if (googleClientSecret !== undefined && !/^[\x21-\x7e]{8,256}$/.test(googleClientSecret))
    throw new ConfigError('GOOGLE_OAUTH_CLIENT_SECRET must be the OAuth client secret (8 to 256 characters, no spaces)');
  if ((googleClientId === undefined) !== (googleClientSecret === undefined))
    throw new ConfigError(
      'GOOGLE_OAUTH_CLIENT_ID and GOOGLE_OAUTH_CLIENT_SECRET go together: set both (Google Ads can connect) or neither',
    );
  const googleDeveloperToken = env.GOOGLE_ADS_DEVELOPER_TOKEN?.trim() || undefined;
  if (googleDeveloperToken !== undefined && !/^[\x21-\x7e]{8,256}$/.test(googleDeveloperToken))
    throw new ConfigError('GOOGLE_ADS_DEVELOPER_TOKEN must be the developer token (8 to 256 characters, no spaces)');
  const baseOf = (name: string, fallback: string) => url(name, env[name]?.trim() || fallback, ['http:', 'https:']).replace(/\/+$/, '');
  const googleSettings = ['GOOGLE_OAUTH_CLIENT_ID', 'GOOGLE_ADS_URL', 'GOOGLE_OAUTH_URL', 'GOOGLE_ACCOUNTS_URL'];
  const googleBusinessUrl = env.GOOGLE_BUSINESS_URL?.trim() ? baseOf('GOOGLE_BUSINESS_URL', '') : undefined;
  const spendSyncText = env.HUBOPS_SPEND_SYNC?.trim() || '1';
  if (spendSyncText !== '0' && spendSyncText !== '1')
    throw new ConfigError(`HUBOPS_SPEND_SYNC must be 0 or 1, got ${JSON.stringify(spendSyncText.slice(0, 40))}`);
  const insightsSyncText = env.HUBOPS_ORGANIC_INSIGHTS_SYNC?.trim() || '1';
  if (insightsSyncText !== '0' && insightsSyncText !== '1')
    throw new ConfigError(`HUBOPS_ORGANIC_INSIGHTS_SYNC must be 0 or 1, got ${JSON.stringify(insightsSyncText.slice(0, 40))}`);
  const trustProxy = trustedProxies(env);
  const metrics = metricsSettings(env, port);
  const tracing = tracingSettings(env);
  return {
    port,
    host,
    baseUrl,
    siteUrl,
    databaseUrl,
    dataDir: env.DATA_DIR?.trim() || './data',
    redisUrl,
    demo: demoText === '1',
    logLevel,
    logFormat: logFormat as LogFormat | undefined,
    secretsKeys,
    metaAppId,
    metaAppSecret,
    metaGraphUrl,
    metaDialogUrl,
    metaSandbox: demoText === '1' && !metaAppId && !env.META_GRAPH_URL?.trim() && !env.META_DIALOG_URL?.trim(),
    googleClientId,
    googleClientSecret,
    googleDeveloperToken,
    googleAdsUrl: baseOf('GOOGLE_ADS_URL', 'https://googleads.googleapis.com'),
    googleOAuthUrl: baseOf('GOOGLE_OAUTH_URL', 'https://oauth2.googleapis.com'),
    googleAccountsUrl: baseOf('GOOGLE_ACCOUNTS_URL', 'https://accounts.google.com'),
    googleAdsSandbox: demoText === '1' && googleSettings.every((name) => !env[name]?.trim()),
    googleBusinessUrl,
    googleBusinessSandbox: demoText === '1' && [...googleSettings, 'GOOGLE_BUSINESS_URL'].every((name) => !env[name]?.trim()),
    openaiAdsUrl: baseOf('OPENAI_ADS_URL', 'https://api.ads.openai.com'),
    openaiAdsSandbox: demoText === '1' && !env.OPENAI_ADS_URL?.trim(),
    spendSync: spendSyncText === '1',
    organicInsightsSync: insightsSyncText === '1',
    trustProxy: trustProxy.proxies,
    trustProxyHeader: trustProxy.header,
    ...metrics,
    ...tracing,
  };
}

function metricsSettings(env: NodeJS.ProcessEnv, port: number): Pick<Config, 'metricsToken' | 'metricsPort' | 'metricsHost'> {
  const metricsToken = env.METRICS_TOKEN?.trim() || undefined;
  // Never echo the token.
  if (metricsToken !== undefined && !new RegExp(`^[\\x21-\\x7e]{${METRICS_TOKEN_MIN_CHARS},512}$`).test(metricsToken))
    throw new ConfigError(
      `METRICS_TOKEN must be ${METRICS_TOKEN_MIN_CHARS} to 512 characters without spaces, e.g. from: openssl rand -hex 24`,
    );
  const portText = env.METRICS_PORT?.trim() || undefined;
  if (portText !== undefined && (!/^\d{1,5}$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535))
    throw new ConfigError(`METRICS_PORT must be an integer from 1 to 65535, got ${JSON.stringify(portText.slice(0, 40))}`);
  const metricsPort = portText === undefined ? undefined : Number(portText);
  if (metricsPort !== undefined && metricsPort === port)
    throw new ConfigError(`METRICS_PORT must differ from PORT (${port}): /metrics gets a listener of its own`);
  const metricsHost = env.METRICS_HOST?.trim() || '127.0.0.1';
  if (env.METRICS_HOST?.trim() && metricsPort === undefined)
    throw new ConfigError('METRICS_HOST is set but METRICS_PORT is not: it says where the METRICS_PORT listener binds');
  return { metricsToken, metricsPort, metricsHost };
}

function tracingSettings(env: NodeJS.ProcessEnv): Pick<Config, 'otelTracesUrl' | 'otelServiceName' | 'otelSampleRatio'> {
  const disabled = env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true' || env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none';
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporter && exporter !== 'otlp' && exporter !== 'none')
    throw new ConfigError(`OTEL_TRACES_EXPORTER must be otlp or none, got ${JSON.stringify(exporter.slice(0, 40))}`);
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() || env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim();
  if (protocol && protocol !== 'http/json')
    throw new ConfigError(
      `hubops sends traces as OTLP http/json: OTEL_EXPORTER_OTLP_PROTOCOL must be http/json or unset, got ${JSON.stringify(protocol.slice(0, 40))}`,
    );
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const otelTracesUrl = disabled
    ? undefined
    : traces
      ? url('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', traces, ['http:', 'https:'])
      : base
        ? `${url('OTEL_EXPORTER_OTLP_ENDPOINT', base, ['http:', 'https:']).replace(/\/+$/, '')}/v1/traces`
        : undefined;
  const ratioText = env.OTEL_TRACES_SAMPLER_ARG?.trim() || '1';
  const ratio = Number(ratioText);
  if (!/^\d*\.?\d+$/.test(ratioText) || !(ratio >= 0 && ratio <= 1))
    throw new ConfigError(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, got ${JSON.stringify(ratioText.slice(0, 40))}`);
  return { otelTracesUrl, otelServiceName: env.OTEL_SERVICE_NAME?.trim() || 'hubops', otelSampleRatio: ratio };
}

function trustedProxies(env: NodeJS.ProcessEnv): { proxies: TrustedProxies | undefined; header: ForwardedHeader } {
  let proxies: TrustedProxies | undefined;
  try {
    proxies = parseTrustedProxies(env.TRUST_PROXY ?? '');
  } catch (error) {
    throw new ConfigError(
      `TRUST_PROXY must be off, a number of proxy hops, or a comma-separated list of the proxies' addresses or CIDR ranges (e.g. 127.0.0.1 or 10.0.0.0/8,loopback): ${(error as Error).message}`,
    );
  }
  const headerText = env.TRUST_PROXY_HEADER?.trim().toLowerCase() || undefined;
  if (headerText !== undefined && !(FORWARDED_HEADERS as readonly string[]).includes(headerText))
    throw new ConfigError(`TRUST_PROXY_HEADER must be ${FORWARDED_HEADERS.join(' or ')}, got ${JSON.stringify(headerText.slice(0, 40))}`);
  if (headerText !== undefined && !proxies)
    throw new ConfigError('TRUST_PROXY_HEADER is set but TRUST_PROXY is not: no proxy is trusted, so no forwarded address is read');
  return { proxies, header: (headerText as ForwardedHeader | undefined) ?? 'x-forwarded-for' };
}
