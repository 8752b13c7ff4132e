import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import Fastify from 'fastify';
import pino from 'pino';
import { redactUrl } from '../../src/config.ts';
import { loggerOptions, redactQuery } from '../../src/platform/logger.ts';

test('credentials in query strings and headers never reach a log line', async () => {
  assert.equal(redactQuery('/embed/spend?token=abc.def&x=1'), '/embed/spend?token=[redacted]&x=1');
  assert.equal(redactQuery('/cb?code=xyz&state=s&password=p'), '/cb?code=[redacted]&state=s&password=[redacted]');
  assert.equal(redactQuery('/v1/hub/playbook-opt-ins?limit=5'), '/v1/hub/playbook-opt-ins?limit=5');
  assert.equal(redactQuery('/app/hubs/h/settings/api?created=FORM-TOKEN'), '/app/hubs/h/settings/api?created=[redacted]');
  // The connection string logged at start-up (main.ts) keeps the user, never the password.
  assert.equal(redactUrl('postgres://hubops:s3cretPW@db.internal:5432/hubops?sslmode=require'), 'postgres://hubops:***@db.internal:5432/hubops?sslmode=require');
  assert.equal(redactUrl('postgres://db.internal/hubops?user=app&password=s3cretPW'), 'postgres://db.internal/hubops?user=app&password=[redacted]');
  for (const awkward of ['postgres://app:p@ss@db.internal/hubops', 'postgres://app:pa/ss@db.internal/hubops', 'postgres://app:p%40ss@db.internal/hubops']) {
    const shown = redactUrl(awkward);
    assert.ok(!/ss@/.test(shown) && shown.includes('app:***@'), shown);
  }

  const lines: string[] = [];
  const sink = new Writable({ write: (chunk, _encoding, done) => { lines.push(String(chunk)); done(); } });
  const app = Fastify({ loggerInstance: pino(loggerOptions('info'), sink) });
  app.get('/embed/spend', async () => ({ ok: true }));
  await app.inject({ method: 'GET', url: '/embed/spend?token=SECRET-EMBED-TOKEN', headers: { authorization: 'Bearer SECRET-BEARER', cookie: 'hubops_app=SECRET-COOKIE' } });
  await app.close();
  const log = lines.join('');
  assert.match(log, /\/embed\/spend\?token=\[redacted\]/, 'the request line is logged');
  for (const secret of ['SECRET-EMBED-TOKEN', 'SECRET-BEARER', 'SECRET-COOKIE']) assert.ok(!log.includes(secret), secret);
});
