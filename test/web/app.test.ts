// The web admin over plain HTTP (no browser): CSRF, cookies, one key per form, embed refusals.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createKey, revokeKey } from '../../src/domain/api-keys/api-key.service.ts';
import { signEmbedToken } from '../../src/surfaces/web/embed-token.ts';
import { Browser } from '../support/oauth-flow.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { ADMIN, HUB, seedWebHub } from '../support/world.ts';
import { form, hidden, signedIn } from '../support/web-forms.ts';

let web: TestApp;
before(async () => {
  web = await startApp({ listen: true, now: 'system', usageFlushMs: 200, seed: seedWebHub });
});
after(async () => web?.close());

test('sign-in refuses a form without its CSRF token; the session cookie is HttpOnly, SameSite=Lax, stored hashed', async () => {
  const b = new Browser();
  await b.fetch(`${web.baseUrl}/app/sign-in`);
  const forged = await b.fetch(`${web.baseUrl}/app/sign-in`, form({ csrf: 'x', email: ADMIN.email, password: ADMIN.password }));
  assert.equal(forged.status, 400);
  const page = await (await b.fetch(`${web.baseUrl}/app/sign-in`)).text();
  const ok = await b.fetch(
    `${web.baseUrl}/app/sign-in`,
    form({ csrf: hidden(page, 'csrf'), next: 'https://evil.example/', email: ADMIN.email, password: ADMIN.password }),
  );
  assert.equal(ok.status, 303);
  assert.equal(ok.headers.get('location'), '/app');
  const line = ok.headers.getSetCookie().find((c) => c.startsWith('hubops_app='))!;
  assert.match(line, /HttpOnly/);
  assert.match(line, /SameSite=Lax/);
  assert.doesNotMatch(line, /Secure/);
  const sessionId = b.cookies.get('hubops_app')!;
  const stored = await web.db.pool.query('SELECT encode(id_hash, $1) AS h FROM web_sessions', ['hex']);
  assert.ok(stored.rows.every((r) => !String(r.h).includes(Buffer.from(sessionId).toString('hex'))));
  // Key forms need the session's CSRF token.
  const api = await (await b.fetch(`${web.baseUrl}/app/hubs/${HUB}/settings/api`)).text();
  const refused = await b.fetch(
    `${web.baseUrl}/app/hubs/${HUB}/settings/api/keys`,
    form({ csrf: 'nope', form_token: hidden(api, 'form_token'), name: 'x', scope: 'read' }),
  );
  assert.equal(refused.status, 400);
});

test('with an https BASE_URL the session cookie is Secure', async () => {
  const secure = await startApp({ listen: true, now: 'system', usageFlushMs: 200, seed: seedWebHub, baseUrl: 'https://hubops.example' });
  try {
    const r = await secure.app.fastify.inject({ method: 'GET', url: '/app/sign-in' });
    assert.match(String(r.headers['set-cookie']), /; Secure/);
    assert.match(String(r.headers['set-cookie']), /Path=\/app; HttpOnly; SameSite=Lax/);
  } finally {
    await secure.close();
  }
});

test('a double submit of Create key makes exactly one key, and both land on the page that shows it once', async () => {
  const b = await signedIn(web);
  const api = await (await b.fetch(`${web.baseUrl}/app/hubs/${HUB}/settings/api`)).text();
  const fields = { csrf: hidden(api, 'csrf'), form_token: hidden(api, 'form_token'), name: 'Zapier sync', scope: 'embed' };
  const [one, two] = await Promise.all([
    b.fetch(`${web.baseUrl}/app/hubs/${HUB}/settings/api/keys`, form(fields)),
    b.fetch(`${web.baseUrl}/app/hubs/${HUB}/settings/api/keys`, form(fields)),
  ]);
  assert.equal(one.status, 303);
  assert.equal(two.status, 303);
  assert.equal(one.headers.get('location'), two.headers.get('location'));
  const keys = await web.db.kysely.selectFrom('api_keys').select(['name', 'scope']).where('name', '=', 'Zapier sync').execute();
  assert.deepEqual(keys, [{ name: 'Zapier sync', scope: 'embed' }]);
  const shown = await (await b.fetch(new URL(one.headers.get('location')!, web.baseUrl).toString())).text();
  const key = /<code id="new-key">([^<]+)<\/code>/.exec(shown)?.[1];
  assert.match(key ?? '', /^hubops_/);
  const again = await (await b.fetch(new URL(one.headers.get('location')!, web.baseUrl).toString())).text();
  assert.doesNotMatch(again, /id="new-key"/);
  assert.ok(!again.includes(key!));
  // An embed key is refused by the Hub API.
  const hub = await web.app.fastify.inject({ url: '/v1/hub/opt-in-summary', headers: { authorization: `Bearer ${key}` } });
  assert.equal(hub.statusCode, 401);
});

test('embeds: frameable by any site; expired, revoked-key, read-key, wrong-hub and wrong-view tokens get a 401 page', async () => {
  const embed = await createKey(web.db, { hubId: HUB, name: 'embed', scope: 'embed' });
  const read = await createKey(web.db, { hubId: HUB, name: 'read' });
  const other = await createKey(web.db, { hubId: 'hub_other', name: 'other embed', scope: 'embed' });
  const exp = Math.floor(Date.now() / 1000) + 300;
  const get = (view: string, token: string) => web.app.fastify.inject({ url: `/embed/${view}?token=${encodeURIComponent(token)}` });
  const ok = await get('opt-in-summary', signEmbedToken({ hub: HUB, view: 'opt-in-summary', exp, kid: embed.id }, embed.key));
  assert.equal(ok.statusCode, 200);
  assert.match(String(ok.headers['content-security-policy']), /frame-ancestors \*/);
  assert.equal(ok.headers['x-frame-options'], undefined);
  const refusals: [string, string, RegExp][] = [
    ['expired', signEmbedToken({ hub: HUB, view: 'spend', exp: exp - 600, kid: embed.id }, embed.key), /expired/],
    [
      'read key (cannot sign: it has no key pair)',
      signEmbedToken({ hub: HUB, view: 'spend', exp, kid: read.id }, embed.key),
      /signature does not match/,
    ],
    ['wrong hub', signEmbedToken({ hub: HUB, view: 'spend', exp, kid: other.id }, other.key), /names a hub its key does not belong to/],
    [
      'wrong view',
      signEmbedToken({ hub: HUB, view: 'opt-in-summary', exp, kid: embed.id }, embed.key),
      /is for the opt-in-summary view, not spend/,
    ],
    ['no token', '', /malformed/],
  ];
  for (const [label, token, reason] of refusals) {
    const r = await get('spend', token);
    assert.equal(r.statusCode, 401, label);
    // The reason paragraph only: the page around it mentions "hub" and "view" whatever the reason.
    assert.match(/data-embed-error>([^<]*)</.exec(r.body)?.[1] ?? '', reason, label);
  }
  await revokeKey(web.db, embed.id);
  const revoked = await get('spend', signEmbedToken({ hub: HUB, view: 'spend', exp, kid: embed.id }, embed.key));
  assert.equal(revoked.statusCode, 401);
  assert.match(revoked.body, /revoked/);
});

test('signed-out requests go to sign-in; app pages refuse framing', async () => {
  const r = await web.app.fastify.inject({ url: `/app/hubs/${HUB}/spend` });
  assert.equal(r.statusCode, 303);
  assert.equal(r.headers.location, `/app/sign-in?next=${encodeURIComponent(`/app/hubs/${HUB}/spend`)}`);
  const page = await web.app.fastify.inject({ url: '/app/sign-in' });
  assert.equal(page.headers['x-frame-options'], 'DENY');
  assert.match(String(page.headers['content-security-policy']), /frame-ancestors 'none'/);
});

test('a cookie with a broken %-escape is ignored, never a 500', async () => {
  for (const url of ['/app/sign-in', `/app/hubs/${HUB}/settings/api`]) {
    const r = await web.app.fastify.inject({ url, headers: { cookie: 'hubops_app=%E0; other=%' } });
    assert.ok(r.statusCode < 500, `${url}: ${r.statusCode}`);
  }
});

test('a form field with a NUL (or another forbidden character) is a 400 page naming it, never a 500; nothing is written', async () => {
  const b = await signedIn(web);
  const api = await (await b.fetch(`${web.baseUrl}/app/hubs/${HUB}/settings/api`)).text();
  const keysBefore = await web.db.kysely
    .selectFrom('api_keys')
    .select((e) => e.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  for (const name of ['bad\u0000name', 'bell \u0007 character']) {
    const refused = await b.fetch(
      `${web.baseUrl}/app/hubs/${HUB}/settings/api/keys`,
      form({ csrf: hidden(api, 'csrf'), form_token: hidden(api, 'form_token'), name, scope: 'read' }),
    );
    assert.equal(refused.status, 400, name);
    assert.match(refused.headers.get('content-type') ?? '', /text\/html/);
    assert.match(await refused.text(), /name: must not contain control characters/);
  }
  const signIn = await new Browser().fetch(`${web.baseUrl}/app/sign-in`, form({ csrf: 'x', email: 'a\u0000@b.test', password: 'p' }));
  assert.equal(signIn.status, 400);
  const keysAfter = await web.db.kysely
    .selectFrom('api_keys')
    .select((e) => e.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  assert.deepEqual(keysAfter, keysBefore);
});
