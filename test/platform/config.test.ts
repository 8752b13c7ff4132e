import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';

describe('configuration', () => {
  test('defaults, and one clear error naming the variable', () => {
    const config = loadConfig({});
    assert.equal(config.port, 3000);
    assert.equal(config.baseUrl, 'http://localhost:3000');
    assert.equal(config.siteUrl, 'http://localhost:3000');
    assert.equal(config.demo, true);
    assert.equal(loadConfig({ DATABASE_URL: 'postgres://x@h/db' }).demo, false);
    for (const [env, name] of [
      [{ PORT: 'abc' }, 'PORT'],
      [{ BASE_URL: 'nope' }, 'BASE_URL'],
      [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
      [{ HUBOPS_DEMO: 'yes' }, 'HUBOPS_DEMO'],
      [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
      [{ REDIS_URL: 'http://x' }, 'REDIS_URL'],
    ] as const) {
      assert.throws(
        () => loadConfig(env),
        (error: Error) => error instanceof ConfigError && error.message.startsWith(name),
      );
    }
    assert.throws(
      () => loadConfig({ DATABASE_URL: 'bad://user:s3cret@host' }),
      (error: Error) => !error.message.includes('s3cret'),
    );
  });

  test('LOG_FORMAT: pretty or json; unset leaves the choice to the terminal; anything else is refused', () => {
    assert.equal(loadConfig({}).logFormat, undefined);
    assert.equal(loadConfig({ LOG_FORMAT: ' json ' }).logFormat, 'json');
    assert.equal(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat, 'pretty');
    assert.throws(
      () => loadConfig({ LOG_FORMAT: 'text' }),
      (error: Error) =>
        error instanceof ConfigError &&
        error.message === 'LOG_FORMAT must be one of pretty, json (unset: pretty on a terminal, json otherwise), got "text"',
    );
  });

  test('Meta and the spend sync: defaults, both app credentials or neither, the secret never echoed', () => {
    const config = loadConfig({});
    assert.deepEqual(
      [config.metaAppId, config.metaAppSecret, config.metaGraphUrl, config.metaDialogUrl, config.spendSync],
      [undefined, undefined, 'https://graph.facebook.com', 'https://www.facebook.com', true],
    );
    const meta = loadConfig({
      META_APP_ID: '1234567890',
      META_APP_SECRET: 'abcdef0123456789abcdef0123456789',
      META_GRAPH_URL: 'http://127.0.0.1:9999/',
      HUBOPS_SPEND_SYNC: '0',
    });
    assert.deepEqual([meta.metaAppId, meta.metaGraphUrl, meta.spendSync], ['1234567890', 'http://127.0.0.1:9999', false]);
    for (const [env, start] of [
      [{ META_APP_ID: '1234567890' }, 'META_APP_ID and META_APP_SECRET go together'],
      [{ META_GRAPH_URL: 'graph.facebook.com' }, 'META_GRAPH_URL must be a URL'],
      [{ META_DIALOG_URL: 'ftp://x' }, 'META_DIALOG_URL must use http: or https:'],
      [{ HUBOPS_SPEND_SYNC: 'off' }, 'HUBOPS_SPEND_SYNC must be 0 or 1, got "off"'],
    ] as const) {
      assert.throws(
        () => loadConfig(env),
        (error: Error) => error instanceof ConfigError && error.message.startsWith(start),
        start,
      );
    }
    assert.throws(
      () => loadConfig({ META_APP_ID: '1', META_APP_SECRET: 'has a space in it' }),
      (error: Error) =>
        error instanceof ConfigError && error.message.startsWith('META_APP_SECRET must be') && !error.message.includes('space in it'),
    );
  });

  test("the demo's Meta sandbox: only for the demo with no Meta setting at all; any real one is never replaced", () => {
    const app = { META_APP_ID: '1234567890', META_APP_SECRET: 'abcdef0123456789abcdef0123456789' };
    assert.equal(loadConfig({}).metaSandbox, true, 'the embedded demo');
    assert.equal(loadConfig({ HUBOPS_DEMO: '0' }).metaSandbox, false);
    assert.equal(loadConfig({ DATABASE_URL: 'postgres://db/x' }).metaSandbox, false, 'an external database is no demo unless asked');
    for (const env of [app, { META_GRAPH_URL: 'https://graph.facebook.com' }, { META_DIALOG_URL: 'https://www.facebook.com' }]) {
      assert.equal(loadConfig(env).metaSandbox, false, Object.keys(env).join(', '));
    }
  });

  test('Google Ads and ChatGPT Ads: defaults, both OAuth client values or neither, secrets never echoed', () => {
    const config = loadConfig({});
    assert.deepEqual(
      [
        config.googleClientId,
        config.googleDeveloperToken,
        config.googleAdsUrl,
        config.googleOAuthUrl,
        config.googleAccountsUrl,
        config.openaiAdsUrl,
      ],
      [
        undefined,
        undefined,
        'https://googleads.googleapis.com',
        'https://oauth2.googleapis.com',
        'https://accounts.google.com',
        'https://api.ads.openai.com',
      ],
    );
    const google = loadConfig({
      GOOGLE_OAUTH_CLIENT_ID: '123-abc.apps.googleusercontent.com',
      GOOGLE_OAUTH_CLIENT_SECRET: 'GOCSPX-0123456789abcdef',
      GOOGLE_ADS_URL: 'http://127.0.0.1:9999/',
      OPENAI_ADS_URL: 'http://127.0.0.1:9998',
    });
    assert.deepEqual(
      [google.googleClientId, google.googleClientSecret, google.googleAdsUrl, google.openaiAdsUrl],
      ['123-abc.apps.googleusercontent.com', 'GOCSPX-0123456789abcdef', 'http://127.0.0.1:9999', 'http://127.0.0.1:9998'],
    );
    for (const [env, start] of [
      [
        { GOOGLE_OAUTH_CLIENT_ID: '123-abc.apps.googleusercontent.com' },
        'GOOGLE_OAUTH_CLIENT_ID and GOOGLE_OAUTH_CLIENT_SECRET go together',
      ],
      [{ GOOGLE_OAUTH_CLIENT_ID: 'an id with spaces', GOOGLE_OAUTH_CLIENT_SECRET: 'GOCSPX-0123456789' }, 'GOOGLE_OAUTH_CLIENT_ID must be'],
      [{ GOOGLE_ADS_URL: 'googleads.googleapis.com' }, 'GOOGLE_ADS_URL must be a URL'],
      [{ GOOGLE_ACCOUNTS_URL: 'ftp://x' }, 'GOOGLE_ACCOUNTS_URL must use http: or https:'],
      [{ OPENAI_ADS_URL: 'not a url' }, 'OPENAI_ADS_URL must be a URL'],
    ] as const) {
      assert.throws(
        () => loadConfig(env),
        (error: Error) => error instanceof ConfigError && error.message.startsWith(start),
        start,
      );
    }
    for (const [env, name] of [
      [
        { GOOGLE_OAUTH_CLIENT_ID: 'x.apps.googleusercontent.com', GOOGLE_OAUTH_CLIENT_SECRET: 'secret with a space' },
        'GOOGLE_OAUTH_CLIENT_SECRET',
      ],
      [{ GOOGLE_ADS_DEVELOPER_TOKEN: 'dev token with a space' }, 'GOOGLE_ADS_DEVELOPER_TOKEN'],
    ] as const) {
      assert.throws(
        () => loadConfig(env),
        (error: Error) =>
          error instanceof ConfigError && error.message.startsWith(`${name} must be`) && !error.message.includes('with a space'),
        name,
      );
    }
  });

  test("the demo's Google Ads and ChatGPT Ads sandboxes: only for the demo with no setting of that platform", () => {
    assert.deepEqual([loadConfig({}).googleAdsSandbox, loadConfig({}).openaiAdsSandbox], [true, true]);
    assert.deepEqual(
      [loadConfig({ HUBOPS_DEMO: '0' }).googleAdsSandbox, loadConfig({ HUBOPS_DEMO: '0' }).openaiAdsSandbox],
      [false, false],
    );
    for (const env of [
      { GOOGLE_OAUTH_CLIENT_ID: 'x.apps.googleusercontent.com', GOOGLE_OAUTH_CLIENT_SECRET: 'GOCSPX-0123456789' },
      { GOOGLE_ADS_URL: 'https://googleads.googleapis.com' },
      { GOOGLE_OAUTH_URL: 'https://oauth2.googleapis.com' },
      { GOOGLE_ACCOUNTS_URL: 'https://accounts.google.com' },
    ]) {
      const config = loadConfig(env);
      assert.deepEqual(
        [config.googleAdsSandbox, config.openaiAdsSandbox, config.metaSandbox],
        [false, true, true],
        Object.keys(env).join(', '),
      );
    }
    assert.deepEqual(
      [
        loadConfig({ OPENAI_ADS_URL: 'https://api.ads.openai.com' }).openaiAdsSandbox,
        loadConfig({ OPENAI_ADS_URL: 'https://api.ads.openai.com' }).googleAdsSandbox,
      ],
      [false, true],
    );
  });
});

describe('TRUST_PROXY and TRUST_PROXY_HEADER', () => {
  test('off by default; hops or addresses; the header only beside a trusted proxy', () => {
    assert.equal(loadConfig({}).trustProxy, undefined);
    assert.equal(loadConfig({}).trustProxyHeader, 'x-forwarded-for');
    assert.deepEqual(loadConfig({ TRUST_PROXY: '1' }).trustProxy, { hops: 1 });
    assert.deepEqual(loadConfig({ TRUST_PROXY: '127.0.0.1,10.0.0.0/8' }).trustProxy, { addresses: ['127.0.0.1', '10.0.0.0/8'] });
    assert.equal(loadConfig({ TRUST_PROXY: '1', TRUST_PROXY_HEADER: 'Forwarded' }).trustProxyHeader, 'forwarded');
    for (const [env, message] of [
      [{ TRUST_PROXY: 'yes' }, /^TRUST_PROXY must be off, a number of proxy hops, or .*"yes" is not an IP address/],
      [{ TRUST_PROXY: '99' }, /^TRUST_PROXY must be .*from 1 to 10, got 99/],
      [{ TRUST_PROXY: '1', TRUST_PROXY_HEADER: 'x-real-ip' }, /^TRUST_PROXY_HEADER must be x-forwarded-for or forwarded, got "x-real-ip"/],
      [{ TRUST_PROXY_HEADER: 'forwarded' }, /^TRUST_PROXY_HEADER is set but TRUST_PROXY is not/],
    ] as const)
      assert.throws(
        () => loadConfig(env),
        (error: Error) => error instanceof ConfigError && message.test(error.message),
        JSON.stringify(env),
      );
  });
});

describe('the loopback default: bound address and BASE_URL agree', () => {
  test('the embedded demo binds localhost, the name BASE_URL uses; a loopback HOST of one address is BASE_URL’s host', () => {
    assert.equal(loadConfig({}).host, 'localhost');
    assert.equal(loadConfig({}).baseUrl, 'http://localhost:3000');
    assert.equal(loadConfig({ DATABASE_URL: 'postgres://x@h/db' }).host, '0.0.0.0');
    assert.equal(loadConfig({ DATABASE_URL: 'postgres://x@h/db' }).baseUrl, 'http://localhost:3000');
    assert.equal(loadConfig({ HOST: '127.0.0.1', PORT: '4000' }).baseUrl, 'http://127.0.0.1:4000');
    assert.equal(loadConfig({ HOST: '::1' }).baseUrl, 'http://[::1]:3000');
    assert.equal(loadConfig({ HOST: '0.0.0.0' }).baseUrl, 'http://localhost:3000');
    assert.equal(loadConfig({ HOST: '127.0.0.1', BASE_URL: 'https://hubs.example.com' }).baseUrl, 'https://hubs.example.com');
  });

  test('metrics: off by default; METRICS_TOKEN never echoed; METRICS_PORT apart from PORT; METRICS_HOST only with it', () => {
    const none = loadConfig({});
    assert.equal(none.metricsToken, undefined);
    assert.equal(none.metricsPort, undefined);
    assert.equal(loadConfig({ METRICS_PORT: '9464' }).metricsHost, '127.0.0.1', 'loopback unless told');
    assert.equal(loadConfig({ METRICS_TOKEN: 'a-long-enough-token-123' }).metricsToken, 'a-long-enough-token-123');
    for (const [env, name, secret] of [
      [{ METRICS_TOKEN: 'short-SECRET' }, 'METRICS_TOKEN', 'short-SECRET'],
      [{ METRICS_TOKEN: 'has a space SECRETSECRET' }, 'METRICS_TOKEN', 'SECRETSECRET'],
      [{ METRICS_PORT: '3000' }, 'METRICS_PORT', undefined],
      [{ METRICS_PORT: '0' }, 'METRICS_PORT', undefined],
      [{ METRICS_PORT: 'x' }, 'METRICS_PORT', undefined],
      [{ METRICS_HOST: '0.0.0.0' }, 'METRICS_HOST', undefined],
    ] as const) {
      assert.throws(
        () => loadConfig(env),
        (error: Error) =>
          error instanceof ConfigError && error.message.startsWith(name) && (secret === undefined || !error.message.includes(secret)),
        JSON.stringify(env),
      );
    }
  });

  test('tracing: off unless an OTLP endpoint is set; the standard variables', () => {
    assert.equal(loadConfig({}).otelTracesUrl, undefined);
    assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).otelTracesUrl, 'http://collector:4318/v1/traces');
    assert.equal(
      loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/otlp',
      }).otelTracesUrl,
      'https://traces.example/otlp',
    );
    assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }).otelTracesUrl, undefined);
    assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }).otelTracesUrl, undefined);
    const on = loadConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_SERVICE_NAME: 'hubops-eu',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
    });
    assert.equal(on.otelServiceName, 'hubops-eu');
    assert.equal(on.otelSampleRatio, 0.25);
    assert.equal(loadConfig({}).otelServiceName, 'hubops');
    for (const [env, name] of [
      [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://c:4317' }, 'OTEL_EXPORTER_OTLP_ENDPOINT'],
      [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'nope' }, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'],
      [{ OTEL_TRACES_SAMPLER_ARG: '1.5' }, 'OTEL_TRACES_SAMPLER_ARG'],
      [{ OTEL_TRACES_EXPORTER: 'zipkin' }, 'OTEL_TRACES_EXPORTER'],
      [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'hubops sends traces as OTLP http/json'],
    ] as const) {
      assert.throws(
        () => loadConfig(env),
        (error: Error) => error instanceof ConfigError && error.message.startsWith(name),
        JSON.stringify(env),
      );
    }
  });
});
