// The OAuth sign-in form's field checks: an empty email or password, or an email without '@', is
// named on the form (400) and not counted as a failed attempt; wrong passwords still are (401),
// and the limit still follows them (429).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createUser } from '../../src/domain/tenancy/tenancy.repository.ts';
import { SIGN_IN_LIMITS } from '../../src/policy.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { Browser, oauth, registerClient } from '../support/oauth-flow.ts';
import * as fx from '../support/world.ts';

const REDIRECT = 'http://127.0.0.1:9/callback';
const USER = { email: 'fields@acme.test', password: 'the right password 1' };

let live: TestApp;
before(async () => {
  live = await startApp({ listen: true });
  await fx.account(live.db, 'acc_f');
  await fx.hub(live.db, 'hf', 'acc_f');
  await createUser(live.db, { ...USER, firstname: 'Fi', lastname: 'Elds', hubId: 'hf', role: 'hub_admin' });
});
after(async () => live?.close());

test('empty or malformed fields are a 400 that does not count; then 5 wrong passwords are 401 ×5 and 429', async () => {
  const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
  const browser = new Browser();
  const url = new URL(live.as.authorization_endpoint!);
  url.search = new URLSearchParams({ response_type: 'code', client_id: client.client.client_id, redirect_uri: REDIRECT, scope: 'service:full', code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()), code_challenge_method: 'S256' }).toString();
  const start = await browser.fetch(url.toString());
  const interaction = new URL(start.headers.get('location')!, live.baseUrl).toString();
  const csrf = /name="csrf" value="([^"]+)"/.exec(await (await browser.fetch(interaction)).text())![1]!;
  const post = (fields: Record<string, string>) => browser.fetch(`${interaction}/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ csrf, ...fields }) });

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
