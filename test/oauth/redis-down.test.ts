import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { after, before, test } from 'node:test';
import { freePort } from '../../src/platform/net.ts';
import { RedisRateLimiter } from '../../src/platform/redis-rate-limit.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { HUB_ADMIN, seedHubAdmin } from '../support/world.ts';
import { captureLog } from '../support/log.ts';
import { authorize, Browser, exchangeCode, REDIRECT, registerClient } from '../support/oauth-flow.ts';

// With Redis down, sign-in still works — the web admin form and the OAuth sign-in page — as the
// README says limits fail open, and the limiter's failure is logged. So do
// the limits on registrations and client secrets. The test runs a Redis of its own and kills it.

const { logger, lines } = captureLog('info');
let redis: ChildProcess;
let limiter: RedisRateLimiter;
let live: TestApp;

before(async () => {
  const port = await freePort();
  redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  limiter = new RedisRateLimiter(`redis://127.0.0.1:${port}`, 'hubops:test:');
  for (const deadline = Date.now() + 10_000; ; ) {
    try {
      await Promise.race([limiter.ready(), new Promise((_, reject) => setTimeout(() => reject(new Error('not yet')), 500))]);
      break;
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
  }
  live = await startApp({ listen: true, limiter, logger, seed: (db) => seedHubAdmin(db) });
});
after(async () => {
  await live?.close();
  await limiter?.close();
  if (redis && redis.exitCode === null) redis.kill('SIGKILL');
});

/** Signs in on the web admin form; returns the response to the form post. */
async function webSignIn(browser: Browser, password: string): Promise<Response> {
  const page = await browser.fetch(`${live.baseUrl}/app/sign-in`);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())![1]!;
  return browser.fetch(`${live.baseUrl}/app/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf, email: HUB_ADMIN.email, password, next: '/app' }),
  });
}

test('Redis killed: the web admin and the OAuth sign-in still work (limits fail open, logged)', async () => {
  // Up: both work, and a wrong password is refused.
  assert.equal((await webSignIn(new Browser(), HUB_ADMIN.password)).status, 303);
  assert.equal((await webSignIn(new Browser(), 'wrong password')).status, 401);

  redis.kill('SIGKILL');
  await once(redis, 'exit');
  await new Promise((resolve) => setTimeout(resolve, 200));

  const web = await webSignIn(new Browser(), HUB_ADMIN.password);
  assert.equal(web.status, 303, 'the web admin signs in');
  assert.equal((await webSignIn(new Browser(), 'wrong password')).status, 401, 'and still refuses a wrong password');

  const client = await registerClient(live, { confidential: true, redirectUri: REDIRECT });
  const result = await authorize(live, client, { ...HUB_ADMIN, redirectUri: REDIRECT });
  assert.ok(result.callback?.searchParams.get('code'), `the OAuth sign-in completes (got ${result.response.status})`);
  const tokens = await exchangeCode(live, client, result, REDIRECT);
  assert.ok(tokens.access_token, 'client authentication (its failure limit) fails open too');

  const warnings = lines.filter((l) => /rate limiter unavailable/.test(l.msg));
  assert.ok(
    warnings.some((l) => /sign-in/.test(l.msg)),
    'the sign-in limiter failure is logged',
  );
  assert.ok(
    warnings.some((l) => /request allowed/.test(l.msg)),
    'and so are the registration and client limits',
  );
});
