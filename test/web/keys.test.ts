// Manage Hub → API over plain HTTP: revoking an unknown key, the one-time reveal bound to its
// session, the Create key form's refusals (long name, expired form) and CSRF on revoke.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createKey } from '../../src/domain/api-keys/api-key.repository.ts';
import { FORM_TOKEN_TTL_MS } from '../../src/policy.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { HUB, seedWebHub } from '../support/world.ts';
import { form, hidden, signedIn } from '../support/web-forms.ts';

let web: TestApp;
before(async () => {
  web = await startApp({ listen: true, seed: seedWebHub });
});
after(async () => web?.close());

const apiTab = () => `${web.baseUrl}/app/hubs/${HUB}/settings/api`;
const keyCount = async (name: string) => (await web.db.kysely.selectFrom('api_keys').select('id').where('name', '=', name).execute()).length;

test('revoking an unknown key: "No such key" with the link back to the API tab, on the confirmation page and on the POST', async () => {
  const b = await signedIn(web);
  const csrf = hidden(await (await b.fetch(apiTab())).text(), 'csrf');
  const revoke = `${apiTab()}/keys/key_nope/revoke`;
  for (const [what, response] of [['GET', await b.fetch(revoke)], ['POST', await b.fetch(revoke, form({ csrf }))]] as const) {
    const text = await response.text();
    assert.equal(response.status, 404, what);
    assert.match(text, /<h1>No such key<\/h1>/, what);
    assert.match(text, /This hub has no such key\./, what);
    assert.match(text, new RegExp(`<a href="/app/hubs/${HUB}/settings/api">Back to the API tab</a>`), what);
    assert.doesNotMatch(text, /does not exist/, what);
  }
});

test('revoke and sign-out refuse a form without the session\'s CSRF token: the key stays, the session stays', async () => {
  const b = await signedIn(web);
  const key = await createKey(web.db, { hubId: HUB, name: 'CSRF target' });
  const refused = await b.fetch(`${apiTab()}/keys/${key.id}/revoke`, form({ csrf: 'forged' }));
  assert.equal(refused.status, 400);
  assert.match(await refused.text(), /That form expired\. Reload the page and try again\./);
  const row = await web.db.kysely.selectFrom('api_keys').select('revoked_at').where('id', '=', key.id).executeTakeFirstOrThrow();
  assert.equal(row.revoked_at, null);
  const signOut = await b.fetch(`${web.baseUrl}/app/sign-out`, form({ csrf: 'forged' }));
  assert.equal(signOut.status, 400);
  assert.match(await signOut.text(), /That form expired/);
  assert.equal((await b.fetch(apiTab())).status, 200, 'still signed in');
});

test('a new key is revealed only to the session that created it, even given its created= link', async () => {
  const a = await signedIn(web);
  const other = await signedIn(web);
  const api = await (await a.fetch(apiTab())).text();
  const created = await a.fetch(`${apiTab()}/keys`, form({ csrf: hidden(api, 'csrf'), form_token: hidden(api, 'form_token'), name: 'Reveal once', scope: 'read' }));
  assert.equal(created.status, 303);
  const location = new URL(created.headers.get('location')!, web.baseUrl).toString();
  assert.match(location, /created=/);
  const stolen = await other.fetch(location);
  assert.equal(stolen.status, 200);
  assert.doesNotMatch(await stolen.text(), /id="new-key"|hubops_[0-9A-Za-z]{20}/);
  const shown = await (await a.fetch(location)).text();
  assert.match(/<code id="new-key">([^<]+)<\/code>/.exec(shown)?.[1] ?? '', /^hubops_/, 'the other session did not use up the reveal');
});

test('Create key refuses a name over 100 characters and creates nothing', async () => {
  const b = await signedIn(web);
  const api = await (await b.fetch(apiTab())).text();
  const name = 'n'.repeat(101);
  const r = await b.fetch(`${apiTab()}/keys`, form({ csrf: hidden(api, 'csrf'), form_token: hidden(api, 'form_token'), name, scope: 'read' }));
  assert.equal(r.status, 400);
  assert.match(await r.text(), /The name must be at most 100 characters\./);
  assert.equal(await keyCount(name), 0);
});

test('an expired Create key form creates nothing and comes back with a fresh form that works', async () => {
  const b = await signedIn(web);
  const api = await (await b.fetch(apiTab())).text();
  web.clock.advance(FORM_TOKEN_TTL_MS + 1000);
  const expired = await b.fetch(`${apiTab()}/keys`, form({ csrf: hidden(api, 'csrf'), form_token: hidden(api, 'form_token'), name: '  Late form  ', scope: 'embed' }));
  assert.equal(expired.status, 400);
  const page = await expired.text();
  assert.match(page, /That form had expired, so no key was created\./);
  assert.equal(await keyCount('Late form'), 0);
  const fresh = hidden(page, 'form_token');
  assert.ok(fresh && fresh !== hidden(api, 'form_token'));
  assert.match(page, /value="Late form"/, 'the name is kept (trimmed)');
  const again = await b.fetch(`${apiTab()}/keys`, form({ csrf: hidden(page, 'csrf'), form_token: fresh, name: 'Late form', scope: 'embed' }));
  assert.equal(again.status, 303);
  assert.equal(await keyCount('Late form'), 1);
});
