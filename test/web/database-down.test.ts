// With PostgreSQL unreachable the web admin answers its 503 page with Retry-After, never "No such
// key" or a 500, whichever query of the request is the one that fails; then it recovers.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { createKey } from '../../src/domain/api-keys/api-key.service.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { Browser } from '../support/oauth-flow.ts';
import { ADMIN, HUB, seedWebHub } from '../support/world.ts';
import { form, hidden, signedIn } from '../support/web-forms.ts';

let live: TestApp;
before(async () => {
  live = await startApp({ listen: true, throughProxy: true });
  await seedWebHub(live.db);
});
after(async () => live?.close());

async function signedInWithCsrf(): Promise<{ browser: Browser; csrf: string }> {
  const browser = await signedIn(live);
  const api = await (await browser.fetch(`${live.baseUrl}/app/hubs/${HUB}/settings/api`)).text();
  return { browser, csrf: hidden(api, 'csrf') };
}

async function assertUnavailablePage(response: Response, what: string): Promise<void> {
  const text = await response.text();
  assert.equal(response.status, 503, `${what}: ${text.slice(0, 300)}`);
  assert.match(response.headers.get('retry-after') ?? '', /^\d+$/, what);
  assert.match(response.headers.get('content-type') ?? '', /text\/html/, what);
  assert.match(text, /cannot reach its database/, what);
  assert.doesNotMatch(text, /No such key|ECONNREFUSED|Connection terminated|api_keys/, what);
}

test('the connection dies while a key is revoked: the 503 page, not "No such key"; the key still works until revoked again', async () => {
  const key = await createKey(live.db, { hubId: HUB, name: 'Looker dashboard' });
  const { browser, csrf } = await signedInWithCsrf();
  const revoke = `${live.baseUrl}/app/hubs/${HUB}/settings/api/keys/${key.id}/revoke`;
  // The session is read, then the database goes away in the middle of the revocation itself.
  await sql`CREATE FUNCTION test_connection_dies() RETURNS trigger LANGUAGE plpgsql AS $$
              BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); RETURN NEW; END $$`.execute(live.db.kysely);
  await sql`CREATE TRIGGER test_connection_dies BEFORE UPDATE ON api_keys FOR EACH ROW EXECUTE FUNCTION test_connection_dies()`.execute(
    live.db.kysely,
  );
  try {
    await assertUnavailablePage(await browser.fetch(revoke, form({ csrf })), 'revoke');
  } finally {
    await sql`DROP TRIGGER test_connection_dies ON api_keys`.execute(live.db.kysely);
    await sql`DROP FUNCTION test_connection_dies()`.execute(live.db.kysely);
  }
  const row = await live.db.kysely.selectFrom('api_keys').select('revoked_at').where('id', '=', key.id).executeTakeFirstOrThrow();
  assert.equal(row.revoked_at, null);
  const again = await browser.fetch(revoke, form({ csrf }));
  assert.equal(again.status, 303);
});

test('database unreachable: the admin pages, sign-in and the key forms (create, roll, revoke) answer the 503 page; then recovery', async () => {
  const key = await createKey(live.db, { hubId: HUB, name: 'Zapier sync' });
  const { browser, csrf } = await signedInWithCsrf();
  const hubUrl = `${live.baseUrl}/app/hubs/${HUB}`;
  const formToken = hidden(await (await browser.fetch(`${hubUrl}/settings/api`)).text(), 'form_token');
  await live.proxy!.cut();
  try {
    await assertUnavailablePage(await browser.fetch(`${hubUrl}/settings/api`), 'API tab');
    await assertUnavailablePage(await browser.fetch(`${hubUrl}/settings/api/keys/${key.id}/revoke`), 'revoke confirmation');
    await assertUnavailablePage(await browser.fetch(`${hubUrl}/settings/api/keys/${key.id}/revoke`, form({ csrf })), 'revoke');
    await assertUnavailablePage(
      await browser.fetch(`${hubUrl}/settings/api/keys`, form({ csrf, form_token: formToken, name: 'Made offline', scope: 'read' })),
      'Create key',
    );
    await assertUnavailablePage(await browser.fetch(`${hubUrl}/settings/api/keys/${key.id}/roll`), 'roll confirmation');
    await assertUnavailablePage(
      await browser.fetch(`${hubUrl}/settings/api/keys/${key.id}/roll`, form({ csrf, form_token: formToken, grace_hours: '1' })),
      'roll',
    );
    await assertUnavailablePage(await browser.fetch(`${hubUrl}/opt-ins`), 'opt-ins report');
    const visitor = new Browser();
    const signInPage = await (await visitor.fetch(`${live.baseUrl}/app/sign-in`)).text();
    assert.match(signInPage, /name="csrf"/, 'the sign-in form itself needs no database');
    const signIn = await visitor.fetch(
      `${live.baseUrl}/app/sign-in`,
      form({ csrf: hidden(signInPage, 'csrf'), next: '/app', email: ADMIN.email, password: ADMIN.password }),
    );
    await assertUnavailablePage(signIn, 'sign-in');
    assert.equal(visitor.cookies.get('hubops_app'), undefined, 'no session without the database');
  } finally {
    await live.proxy!.restore();
  }
  let page: Response | undefined;
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 100))) {
    page = await browser.fetch(`${hubUrl}/settings/api`);
    if (page.status === 200) break;
  }
  assert.equal(page?.status, 200, 'the API tab works again');
  const made = await live.db.kysely.selectFrom('api_keys').select('id').where('name', '=', 'Made offline').execute();
  assert.deepEqual(made, [], 'Create key during the outage made no key');
});
