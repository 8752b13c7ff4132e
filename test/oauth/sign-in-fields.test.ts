// The OAuth sign-in form's field checks: an empty email or password, or an email without '@', is
// named on the form (400) and not counted as a failed attempt; wrong passwords still are (401),
// and the limit still follows them (429).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { SIGN_IN_LIMITS } from '../../src/policy.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { Browser, openSignIn, REDIRECT, registerClient } from '../support/oauth-flow.ts';
import { seedHubAdmin } from '../support/world.ts';

const USER = { email: 'fields@acme.test', password: 'the right password 1' };

let live: TestApp;
before(async () => {
  live = await startApp({
    listen: true,
    seed: (db) => seedHubAdmin(db, USER, { accountId: 'acc_f', hubId: 'hf', firstname: 'Fi', lastname: 'Elds' }),
  });
});
after(async () => live?.close());

test('empty or malformed fields are a 400 that does not count; then 5 wrong passwords are 401 ×5 and 429', async () => {
  const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
  const browser = new Browser();
  const interaction = await openSignIn(live, client, browser, REDIRECT);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await (await browser.fetch(interaction)).text())![1]!;
  const post = (fields: Record<string, string>) =>
    browser.fetch(`${interaction}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf, ...fields }),
    });

  const empty = await post({ email: USER.email, password: '' });
  assert.equal(empty.status, 400);
  assert.match(await empty.text(), /Enter your password\./);
  // Never counted, however often: no stored email can match these.
  for (let i = 0; i < SIGN_IN_LIMITS.perEmail; i++) {
    assert.equal((await post({ email: USER.email, password: '' })).status, 400);
    assert.equal((await post({ email: '', password: 'anything' })).status, 400);
    assert.equal((await post({ email: 'fields.acme.test', password: 'anything' })).status, 400);
  }
  const statuses: number[] = [];
  for (let i = 0; i <= SIGN_IN_LIMITS.perEmail; i++) statuses.push((await post({ email: USER.email, password: 'wrong password!' })).status);
  assert.deepEqual(statuses, [...Array(SIGN_IN_LIMITS.perEmail).fill(401), 429]);
});
