// Issue 27 finding 7: a server whose REDIS_URL answers nothing still starts (it used to wait for
// Redis forever), says so once, and keeps the sign-in limits per instance: the right password is
// refused after the failed attempts, as with Redis.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, test } from 'node:test';
import { freePort } from '../../src/platform/net.ts';
import { SIGN_IN_LIMITS } from '../../src/policy.ts';
import { createTestDb } from '../support/db.ts';
import { Browser } from '../support/oauth-flow.ts';
import { hubopsEnv, killGroup, NODE, ROOT, startServer, type Running } from './support.ts';

const cleanups: (() => Promise<unknown>)[] = [];
let server: Running | undefined;
after(async () => {
  if (server && server.child.exitCode === null) killGroup(server.child, 'SIGKILL');
  for (const cleanup of cleanups) await cleanup();
});

async function webSignIn(base: string, email: string, password: string): Promise<number> {
  const browser = new Browser();
  const page = await browser.fetch(`${base}/app/sign-in`);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())![1]!;
  const response = await browser.fetch(`${base}/app/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf, email, password, next: '/app' }),
  });
  await response.body?.cancel();
  return response.status;
}

test('REDIS_URL unreachable: the server starts, logs the outage once, and sign-in limits hold', { timeout: 120_000 }, async () => {
  const db = await createTestDb();
  cleanups.push(() => db.drop());
  const nothingListens = await freePort();
  server = await startServer(NODE, [path.join(ROOT, 'src/main.ts')], hubopsEnv(db, { REDIS_URL: `redis://127.0.0.1:${nothingListens}` }));
  const email = /Hub admin sign-in: (\S+) \/ (\S+)/.exec(server.output())!;
  const statuses: number[] = [];
  for (let i = 0; i <= SIGN_IN_LIMITS.perEmail; i++) statuses.push(await webSignIn(server.base, email[1]!, 'not the password'));
  assert.deepEqual(statuses, [...Array(SIGN_IN_LIMITS.perEmail).fill(401), 429]);
  assert.equal(await webSignIn(server.base, email[1]!, email[2]!), 429, 'the right password is refused too');
  const outage = server.output().match(/Redis unavailable/g) ?? [];
  assert.equal(outage.length, 1, server.output());
  assert.doesNotMatch(server.output(), /rate limiter unavailable/);
});
