// The web admin's sign-in form: its CSRF check without a real pre-session, and the failure limit.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { SIGN_IN_LIMITS } from '../../src/policy.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { Browser } from '../support/oauth-flow.ts';
import { ADMIN, MEMBER, seedWebHub } from '../support/world.ts';
import { form, hidden } from '../support/web-forms.ts';

let web: TestApp;
before(async () => {
  web = await startApp({ listen: true, seed: seedWebHub });
});
after(async () => web?.close());

test('an empty pre-session cookie and an empty csrf field do not sign in: 400, no session', async () => {
  const r = await web.app.fastify.inject({
    method: 'POST',
    url: '/app/sign-in',
    headers: { cookie: 'hubops_signin=', 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ csrf: '', next: '/app', email: ADMIN.email, password: ADMIN.password }).toString(),
  });
  assert.equal(r.statusCode, 400);
  assert.match(r.body, /Your sign-in form expired/);
  assert.doesNotMatch(String(r.headers['set-cookie'] ?? ''), /hubops_app=[^;]/);
  const sessions = await web.db.pool.query('SELECT count(*)::int AS n FROM web_sessions');
  assert.equal(sessions.rows[0].n, 0);
});

test(`${SIGN_IN_LIMITS.perEmail} wrong passwords, then 429, even for the right one`, async () => {
  const b = new Browser();
  const csrf = hidden(await (await b.fetch(`${web.baseUrl}/app/sign-in`)).text(), 'csrf');
  const post = (password: string) => b.fetch(`${web.baseUrl}/app/sign-in`, form({ csrf, next: '/app', email: MEMBER.email, password }));
  const statuses: number[] = [];
  for (let i = 0; i <= SIGN_IN_LIMITS.perEmail; i++) statuses.push((await post('wrong password!')).status);
  assert.deepEqual(statuses, [...Array(SIGN_IN_LIMITS.perEmail).fill(401), 429]);
  const right = await post(MEMBER.password);
  assert.equal(right.status, 429);
  assert.match(await right.text(), /Too many failed sign-in attempts/);
  assert.equal(b.cookies.get('hubops_app'), undefined);
});

test(`behind a trusted proxy (TRUST_PROXY) the ${SIGN_IN_LIMITS.perAddress} failures per address are each client's, not the proxy's`, async () => {
  const proxied = await startApp({ listen: true, seed: seedWebHub, env: { TRUST_PROXY: '127.0.0.1' } });
  try {
    // This test's requests come from 127.0.0.1, the trusted proxy, on behalf of the address it appends.
    const client = async (address: string) => {
      const b = new Browser();
      const headers = { 'x-forwarded-for': address };
      const csrf = hidden(await (await b.fetch(`${proxied.baseUrl}/app/sign-in`, { headers })).text(), 'csrf');
      return (email: string, password: string) =>
        b.fetch(`${proxied.baseUrl}/app/sign-in`, {
          ...form({ csrf, next: '/app', email, password }),
          headers: { ...form({}).headers, ...headers },
        });
    };
    const guesser = await client('203.0.113.1');
    for (let i = 0; i < SIGN_IN_LIMITS.perAddress; i++)
      assert.equal((await guesser(`nobody${i}@example.com`, 'wrong password!')).status, 401);
    assert.equal((await guesser(ADMIN.email, ADMIN.password)).status, 429, 'the guessing address is throttled');
    const neighbour = await client('203.0.113.2');
    assert.equal((await neighbour(ADMIN.email, ADMIN.password)).status, 303, 'another client of the same proxy signs in');
  } finally {
    await proxied.close();
  }
});
