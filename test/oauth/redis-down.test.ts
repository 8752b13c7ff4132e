import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { after, before, test } from 'node:test';
import * as oauth from 'oauth4webapi';
import { freePort } from '../../src/platform/net.ts';
import { RedisRateLimiter } from '../../src/platform/redis-rate-limit.ts';
import { FAILED_AUTH_LIMIT, REGISTRATION_LIMIT, SIGN_IN_LIMITS, CLIENT_AUTH_FAILURE_LIMIT } from '../../src/policy.ts';
import { CLIENT_METADATA_HOST_FETCH_LIMIT } from '../../src/surfaces/oauth/client-metadata-document.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { captureLog } from '../support/log.ts';
import { authorize, Browser, REDIRECT, registerClient, type RegisteredClient } from '../support/oauth-flow.ts';
import { HUB_ADMIN, seedHubAdmin } from '../support/world.ts';

// Without Redis the limits that protect accounts still hold: the limiter counts per instance
// until Redis is back (sign-in on both forms, registrations, client secrets, client metadata
// fetches, Hub API key guessing). The outage and its end are logged once each, never per request.
// The test runs a Redis of its own: killed (connections refused), restarted, then frozen with
// SIGSTOP (connections open, never answered).

const { logger, lines } = captureLog('info');
let port: number;
let redis: ChildProcess;
let limiter: RedisRateLimiter;
let live: TestApp;

function startRedis(): ChildProcess {
  return spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
}

async function until(condition: () => Promise<boolean> | boolean, what: string, timeoutMs = 10_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !(await condition()); ) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const outageLines = () => lines.filter((l) => /Redis unavailable/.test(l.msg));
const backLines = () => lines.filter((l) => /Redis is back/.test(l.msg));

before(async () => {
  port = await freePort();
  redis = startRedis();
  limiter = new RedisRateLimiter(`redis://127.0.0.1:${port}`, { prefix: 'hubops:test:', log: logger });
  assert.ok(await limiter.ready(10_000), 'Redis started');
  live = await startApp({ listen: true, limiter, logger, seed: (db) => seedHubAdmin(db) });
});
after(async () => {
  await live?.close();
  await limiter?.close();
  if (redis && redis.exitCode === null) {
    redis.kill('SIGCONT');
    redis.kill('SIGKILL');
  }
});

/** Signs in on the web admin form; returns the response to the form post. */
async function webSignIn(browser: Browser, password: string, email = HUB_ADMIN.email): Promise<Response> {
  const page = await browser.fetch(`${live.baseUrl}/app/sign-in`);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())![1]!;
  return browser.fetch(`${live.baseUrl}/app/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf, email, password, next: '/app' }),
  });
}

/** A revocation request authenticated with `secret` (oidc-provider checks the client first). */
function revokeWith(client: RegisteredClient, secret: string): Promise<Response> {
  return fetch(live.as.revocation_endpoint!, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: client.client.client_id, client_secret: secret, token: 'not-a-token' }),
  });
}

/** An authorization request naming a client metadata document on a loopback host (refused after the limits). */
async function documentAuthorization(host: string, n: number): Promise<Response> {
  const url = new URL(live.as.authorization_endpoint!);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: `https://${host}/client-${n}.json`,
    redirect_uri: REDIRECT,
    scope: 'service:full',
    state: 's',
    code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
    code_challenge_method: 'S256',
  }).toString();
  const response = await fetch(url, { redirect: 'manual' });
  await response.body?.cancel();
  return response;
}

/** Statuses of `n` requests made one after another. */
async function statuses(n: number, request: (i: number) => Promise<Response | { status: number }>): Promise<number[]> {
  const seen: number[] = [];
  for (let i = 0; i < n; i++) seen.push((await request(i)).status);
  return seen;
}

test('Redis killed: 200 wrong passwords, then the right one is refused; every account-protecting limit holds per instance', async () => {
  // Up: sign-in works, and a client to authenticate later is registered.
  assert.equal((await webSignIn(new Browser(), HUB_ADMIN.password)).status, 303);
  const client = await registerClient(live, { confidential: true, redirectUri: REDIRECT });

  redis.kill('SIGKILL');
  await once(redis, 'exit');

  const wrong = await statuses(200, () => webSignIn(new Browser(), `wrong password`));
  assert.ok(
    wrong.every((s) => s === 401 || s === 429),
    `only refusals: ${[...new Set(wrong)]}`,
  );
  assert.ok(wrong.filter((s) => s === 401).length <= SIGN_IN_LIMITS.perEmail, `at most ${SIGN_IN_LIMITS.perEmail} passwords checked`);
  assert.equal(wrong.at(-1), 429);
  assert.equal((await webSignIn(new Browser(), HUB_ADMIN.password)).status, 429, 'the right password is refused on the web admin');
  const oauthClient = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
  const viaOauth = await authorize(live, oauthClient, { ...HUB_ADMIN, redirectUri: REDIRECT });
  assert.equal(viaOauth.callback, undefined, 'and on the OAuth sign-in page');
  assert.equal(viaOauth.response.status, 429);

  // Registrations per address (one was made just above, while down).
  const registrations = await statuses(REGISTRATION_LIMIT.limit, () =>
    fetch(live.as.registration_endpoint!, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }),
    }),
  );
  assert.deepEqual(registrations.slice(0, REGISTRATION_LIMIT.limit - 1), Array(REGISTRATION_LIMIT.limit - 1).fill(201));
  assert.equal(registrations.at(-1), 429, 'the registration over the limit is refused');

  // Client secret failures: then the right secret is refused too.
  const secrets = await statuses(CLIENT_AUTH_FAILURE_LIMIT.limit, () => revokeWith(client, 'wrong-secret'));
  assert.deepEqual(secrets, Array(CLIENT_AUTH_FAILURE_LIMIT.limit).fill(401));
  assert.equal((await revokeWith(client, client.secret!)).status, 429, 'the right client secret is refused');

  // Client metadata document fetches per host from one address.
  const fetches = await statuses(CLIENT_METADATA_HOST_FETCH_LIMIT.limit + 1, (i) => documentAuthorization('127.0.0.3', i));
  assert.deepEqual(fetches.slice(0, -1), Array(CLIENT_METADATA_HOST_FETCH_LIMIT.limit).fill(400));
  assert.equal(fetches.at(-1), 429, 'the document fetch over the limit is refused');

  // Hub API keys cannot be guessed at speed either.
  const guesses = await statuses(FAILED_AUTH_LIMIT.limit + 1, () => live.hubGet('/playbook-opt-ins', 'hubops_not_a_key'));
  assert.deepEqual(guesses.slice(0, -1), Array(FAILED_AUTH_LIMIT.limit).fill(401));
  assert.equal(guesses.at(-1), 429);

  // Hundreds of requests, one line about the outage.
  assert.equal(outageLines().length, 1, JSON.stringify(outageLines()));
  assert.equal(outageLines()[0]!.level, 40);
  assert.equal(lines.filter((l) => /rate limiter unavailable/.test(l.msg)).length, 0, 'nothing per request');

  // Back: said once, and the shared (fresh) windows count again.
  redis = startRedis();
  await until(async () => {
    await webSignIn(new Browser(), 'wrong password', 'probe@example.com');
    return backLines().length > 0;
  }, 'the limiter to use Redis again');
  assert.equal((await webSignIn(new Browser(), HUB_ADMIN.password)).status, 303, 'a fresh Redis has no failures counted');
  assert.equal(backLines().length, 1);
  assert.equal(outageLines().length, 1);
});

test('Redis frozen (SIGSTOP): requests are not held; limits hold per instance, and the outage ends when it thaws', async () => {
  live.clock.advance(SIGN_IN_LIMITS.windowMs);
  const outagesBefore = outageLines().length;
  redis.kill('SIGSTOP');
  try {
    const wrong = await statuses(SIGN_IN_LIMITS.perEmail + 20, () => webSignIn(new Browser(), 'wrong password', 'frozen@example.com'));
    assert.deepEqual(wrong.slice(0, SIGN_IN_LIMITS.perEmail), Array(SIGN_IN_LIMITS.perEmail).fill(401));
    assert.deepEqual(wrong.slice(SIGN_IN_LIMITS.perEmail), Array(20).fill(429));
    assert.equal(outageLines().length, outagesBefore + 1);
  } finally {
    redis.kill('SIGCONT');
  }
  await until(async () => {
    await webSignIn(new Browser(), 'wrong password', 'probe@example.com');
    return backLines().length > 1;
  }, 'the limiter to use Redis again');
  assert.equal(backLines().length, 2);
  assert.equal(outageLines().length, outagesBefore + 1);
});
