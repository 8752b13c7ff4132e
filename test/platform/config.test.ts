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
    for (const [env, name] of [[{ PORT: 'abc' }, 'PORT'], [{ BASE_URL: 'nope' }, 'BASE_URL'], [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'], [{ HUBOPS_DEMO: 'yes' }, 'HUBOPS_DEMO'], [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'], [{ REDIS_URL: 'http://x' }, 'REDIS_URL']] as const) {
      assert.throws(() => loadConfig(env), (error: Error) => error instanceof ConfigError && error.message.startsWith(name));
    }
    assert.throws(() => loadConfig({ DATABASE_URL: 'bad://user:s3cret@host' }), (error: Error) => !error.message.includes('s3cret'));
  });

  test('LOG_FORMAT: pretty or json; unset leaves the choice to the terminal; anything else is refused', () => {
    assert.equal(loadConfig({}).logFormat, undefined);
    assert.equal(loadConfig({ LOG_FORMAT: ' json ' }).logFormat, 'json');
    assert.equal(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat, 'pretty');
    assert.throws(() => loadConfig({ LOG_FORMAT: 'text' }), (error: Error) => error instanceof ConfigError
      && error.message === 'LOG_FORMAT must be one of pretty, json (unset: pretty on a terminal, json otherwise), got "text"');
  });
});
