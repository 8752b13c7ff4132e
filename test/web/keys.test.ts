// Manage Hub → API over plain HTTP: revoking an unknown key, the one-time reveal bound to its
// session, the Create key form's refusals (long name, expired form, expiry), CSRF on revoke and
// roll, rolling with a grace period, and the keys' states and daily request charts.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createKey, revokeKey } from '../../src/domain/api-keys/api-key.service.ts';
import { FORM_TOKEN_TTL_MS } from '../../src/policy.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { hub, HUB, MEMBER, seedWebHub } from '../support/world.ts';
import { form, hidden, signedIn } from '../support/web-forms.ts';

let web: TestApp;
before(async () => {
  web = await startApp({ listen: true, seed: seedWebHub });
});
after(async () => web?.close());

const apiTab = () => `${web.baseUrl}/app/hubs/${HUB}/settings/api`;
const keyCount = async (name: string) =>
  (await web.db.kysely.selectFrom('api_keys').select('id').where('name', '=', name).execute()).length;

test('revoking an unknown key: "No such key" with the link back to the API tab, on the confirmation page and on the POST', async () => {
  const b = await signedIn(web);
  const csrf = hidden(await (await b.fetch(apiTab())).text(), 'csrf');
  const revoke = `${apiTab()}/keys/key_nope/revoke`;
  for (const [what, response] of [
    ['GET', await b.fetch(revoke)],
    ['POST', await b.fetch(revoke, form({ csrf }))],
  ] as const) {
    const text = await response.text();
    assert.equal(response.status, 404, what);
    assert.match(text, /<h1>No such key<\/h1>/, what);
    assert.match(text, /This hub has no such key\./, what);
    assert.match(text, new RegExp(`<a (class="button" )?href="/app/hubs/${HUB}/settings/api">Back to the API tab</a>`), what);
    assert.doesNotMatch(text, /does not exist/, what);
  }
});

test("revoke and sign-out refuse a form without the session's CSRF token: the key stays, the session stays", async () => {
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
  const created = await a.fetch(
    `${apiTab()}/keys`,
    form({ csrf: hidden(api, 'csrf'), form_token: hidden(api, 'form_token'), name: 'Reveal once', scope: 'read' }),
  );
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
  const r = await b.fetch(
    `${apiTab()}/keys`,
    form({ csrf: hidden(api, 'csrf'), form_token: hidden(api, 'form_token'), name, scope: 'read' }),
  );
  assert.equal(r.status, 400);
  assert.match(await r.text(), /The name must be at most 100 characters\./);
  assert.equal(await keyCount(name), 0);
});

test('an expired Create key form creates nothing and comes back with a fresh form that works', async () => {
  const b = await signedIn(web);
  const api = await (await b.fetch(apiTab())).text();
  web.clock.advance(FORM_TOKEN_TTL_MS + 1000);
  const expired = await b.fetch(
    `${apiTab()}/keys`,
    form({ csrf: hidden(api, 'csrf'), form_token: hidden(api, 'form_token'), name: '  Late form  ', scope: 'embed' }),
  );
  assert.equal(expired.status, 400);
  const page = await expired.text();
  assert.match(page, /That form had expired, so no key was created\./);
  assert.equal(await keyCount('Late form'), 0);
  const fresh = hidden(page, 'form_token');
  assert.ok(fresh && fresh !== hidden(api, 'form_token'));
  assert.match(page, /value="Late form"/, 'the name is kept (trimmed)');
  const again = await b.fetch(
    `${apiTab()}/keys`,
    form({ csrf: hidden(page, 'csrf'), form_token: fresh, name: 'Late form', scope: 'embed' }),
  );
  assert.equal(again.status, 303);
  assert.equal(await keyCount('Late form'), 1);
});

const DAY = 86_400_000;
const HOUR = 3_600_000;
const keyRow = (id: string) => web.db.kysely.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
/** The API tab's table row of a key. */
const rowOf = (page: string, keyId: string) => new RegExp(`<tr data-key-id="${keyId}"[^>]*>[\\s\\S]*?</tr>`).exec(page)?.[0] ?? '';

test('Create key with an expiry: the key expires that many days from now; the API tab shows when', async () => {
  const b = await signedIn(web);
  const api = await (await b.fetch(apiTab())).text();
  assert.match(
    api,
    /<select id="key-expires" name="expires_in_days"><option value="never" selected>Never<\/option><option value="30">In 30 days<\/option><option value="90">In 90 days<\/option><option value="365">In 365 days<\/option><\/select>/,
  );
  const created = await b.fetch(
    `${apiTab()}/keys`,
    form({
      csrf: hidden(api, 'csrf'),
      form_token: hidden(api, 'form_token'),
      name: 'Quarterly report',
      scope: 'read',
      expires_in_days: '90',
    }),
  );
  assert.equal(created.status, 303);
  const row = await web.db.kysely.selectFrom('api_keys').selectAll().where('name', '=', 'Quarterly report').executeTakeFirstOrThrow();
  assert.equal(row.expires_at?.getTime(), web.clock.now().getTime() + 90 * DAY);
  const shown = await (await b.fetch(new URL(created.headers.get('location')!, web.baseUrl).toString())).text();
  assert.match(shown, new RegExp(`Expires ${row.expires_at!.toISOString().slice(0, 10)} \\d\\d:\\d\\d UTC`));
  assert.match(rowOf(shown, row.id), /<small data-expires>expires \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC<\/small>/);
  assert.match(rowOf(shown, row.id), /data-state="active"/);
});

test('Create key refuses an expiry other than never, 30, 90 or 365 days and creates nothing', async () => {
  const b = await signedIn(web);
  for (const bad of ['7', '0', '30.0', 'forever', '']) {
    const api = await (await b.fetch(apiTab())).text();
    const name = `bad expiry ${bad}`;
    const r = await b.fetch(
      `${apiTab()}/keys`,
      form({ csrf: hidden(api, 'csrf'), form_token: hidden(api, 'form_token'), name, scope: 'read', expires_in_days: bad }),
    );
    assert.equal(r.status, 400, bad);
    assert.match(await r.text(), /<p class="field-error" id="expires-error">Choose never, or 30, 90, 365 days\.<\/p>/);
    assert.equal(await keyCount(name), 0);
  }
});

/** Opens a key's Roll page and submits it with this grace period (in hours); returns the POST's response. */
async function rollThroughForm(b: Awaited<ReturnType<typeof signedIn>>, keyId: string, graceHours: string, csrf?: string) {
  const page = await (await b.fetch(`${apiTab()}/keys/${keyId}/roll`)).text();
  return b.fetch(
    `${apiTab()}/keys/${keyId}/roll`,
    form({ csrf: csrf ?? hidden(page, 'csrf'), form_token: hidden(page, 'form_token'), grace_hours: graceHours }),
  );
}

test('Roll: the new secret is shown once, both secrets work during the grace period, then only the new one; the API tab shows the relationship', async () => {
  const b = await signedIn(web);
  const old = await createKey(web.db, { hubId: HUB, name: 'Zapier sync', now: web.clock.now() });
  const confirm = await b.fetch(`${apiTab()}/keys/${old.id}/roll`);
  assert.equal(confirm.status, 200);
  const page = await confirm.text();
  assert.match(page, /<h1>Roll “Zapier sync”\?<\/h1>/);
  assert.match(
    page,
    /A new read key with the same name replaces <code class="token">hubops_\w{4}…<\/code>; like this one, it never expires\./,
  );
  assert.match(
    page,
    /<select id="grace" name="grace_hours"><option value="0">Stop at once<\/option><option value="1">For 1 hour<\/option><option value="24" selected>For 24 hours<\/option><\/select>/,
  );
  const rolledAt = web.clock.now().getTime();
  const posted = await b.fetch(
    `${apiTab()}/keys/${old.id}/roll`,
    form({ csrf: hidden(page, 'csrf'), form_token: hidden(page, 'form_token'), grace_hours: '1' }),
  );
  assert.equal(posted.status, 303);
  const location = new URL(posted.headers.get('location')!, web.baseUrl).toString();
  const oldRow = await keyRow(old.id);
  assert.ok(oldRow.replaced_by);
  assert.equal(oldRow.expires_at?.getTime(), rolledAt + HOUR);
  const successor = await keyRow(oldRow.replaced_by);
  assert.deepEqual([successor.name, successor.scope, successor.hub_id], ['Zapier sync', 'read', HUB]);

  // A double submit of the same form makes no second successor.
  const again = await b.fetch(
    `${apiTab()}/keys/${old.id}/roll`,
    form({ csrf: hidden(page, 'csrf'), form_token: hidden(page, 'form_token'), grace_hours: '1' }),
  );
  assert.equal(again.status, 303);
  assert.equal(await keyCount('Zapier sync'), 2);

  const shown = await (await b.fetch(location)).text();
  const secret = /<code id="new-key">([^<]+)<\/code>/.exec(shown)?.[1] ?? '';
  assert.match(secret, /^hubops_/);
  assert.match(
    shown,
    new RegExp(
      `This key replaces <code class="token">${old.key.slice(0, 11)}…</code>, which keeps working until \\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2} UTC\\.`,
    ),
  );
  assert.match(rowOf(shown, old.id), /data-state="rolled"/);
  assert.match(
    rowOf(shown, old.id),
    /<span class="pill warn">Rolled<\/span><br><small>valid until \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC<\/small><br><small>replaced by <code class="token">hubops_\w{4}…<\/code><\/small>/,
  );
  assert.doesNotMatch(rowOf(shown, old.id), /Roll<\/a>/, 'a rolled key is not rolled again');
  assert.match(rowOf(shown, old.id), /Revoke<\/a>/, 'its grace period can be cut short');
  assert.match(rowOf(shown, successor.id), /data-state="active"/);
  assert.doesNotMatch(await (await b.fetch(location)).text(), /id="new-key"/, 'shown once');

  assert.equal((await web.hubGet('/playbook-opt-ins', old.key)).status, 200);
  assert.equal((await web.hubGet('/playbook-opt-ins', secret)).status, 200);
  web.clock.advance(HOUR);
  const refused = await web.hubGet('/playbook-opt-ins', old.key);
  assert.equal(refused.status, 401);
  assert.match(refused.body.message, /^This API key was rolled and its grace period ended at /);
  assert.equal((await web.hubGet('/playbook-opt-ins', secret)).status, 200);
  const later = await (await b.fetch(apiTab())).text();
  assert.match(rowOf(later, old.id), /data-state="expired"/);
  assert.match(
    rowOf(later, old.id),
    /<span class="pill revoked">Expired<\/span><br><small>rolled, ended \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC<\/small>/,
  );
  assert.doesNotMatch(rowOf(later, old.id), /Revoke<\/a>|Roll<\/a>/);
});

test("Revoke: the replacement's page says the old secret in its grace period ends with it, and it does; a rolled key's page says its replacement keeps working", async () => {
  const b = await signedIn(web);
  const old = await createKey(web.db, { hubId: HUB, name: 'Looker dashboard', now: web.clock.now() });
  const rolled = await rollThroughForm(b, old.id, '24');
  const reveal = await (await b.fetch(new URL(rolled.headers.get('location')!, web.baseUrl).toString())).text();
  const secret = /<code id="new-key">([^<]+)<\/code>/.exec(reveal)![1]!;
  const replacement = (await keyRow(old.id)).replaced_by!;

  // The old secret's page: only it ends; the replacement is named as staying valid.
  const oldPage = await (await b.fetch(`${apiTab()}/keys/${old.id}/revoke`)).text();
  assert.match(
    oldPage,
    /<p data-stays-valid>This is the old secret of a rolled key: only it stops working, now instead of \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC\. The key that replaced it, <code class="token">hubops_\w{4}…<\/code>, keeps working;/,
  );
  assert.doesNotMatch(oldPage, /data-also-ends/);

  // The replacement's page names the old secret that ends with it.
  const page = await (await b.fetch(`${apiTab()}/keys/${replacement}/revoke`)).text();
  assert.match(
    page,
    new RegExp(
      `<p data-also-ends>The old secret it replaced, <code class="token">${old.key.slice(0, 11)}…</code> \\(valid until \\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2} UTC\\), stops working with it\\.</p>`,
    ),
  );
  assert.doesNotMatch(page, /data-stays-valid/);
  assert.equal((await web.hubGet('/playbook-opt-ins', old.key)).status, 200, 'both work before');
  assert.equal((await web.hubGet('/playbook-opt-ins', secret)).status, 200);

  const posted = await b.fetch(`${apiTab()}/keys/${replacement}/revoke`, form({ csrf: hidden(page, 'csrf') }));
  assert.equal(posted.status, 303);
  const after = await (await b.fetch(new URL(posted.headers.get('location')!, web.baseUrl).toString())).text();
  assert.match(
    after,
    new RegExp(
      `The key was revoked, and with it the old secret it replaced \\(${old.key.slice(0, 11)}…\\), which was still in the grace period\\. Requests with any of them are refused from now on\\.`,
    ),
  );
  assert.match(rowOf(after, old.id), /data-state="revoked"/);
  assert.match(rowOf(after, replacement), /data-state="revoked"/);
  assert.equal((await web.hubGet('/playbook-opt-ins', secret)).status, 401);
  assert.equal((await web.hubGet('/playbook-opt-ins', old.key)).status, 401, 'the old secret ends with its replacement');
});

test('Revoke of a rolled key ends its old secret early; the replacement keeps working', async () => {
  const b = await signedIn(web);
  const old = await createKey(web.db, { hubId: HUB, name: 'Sheets export', now: web.clock.now() });
  const rolled = await rollThroughForm(b, old.id, '24');
  const reveal = await (await b.fetch(new URL(rolled.headers.get('location')!, web.baseUrl).toString())).text();
  const secret = /<code id="new-key">([^<]+)<\/code>/.exec(reveal)![1]!;
  const page = await (await b.fetch(`${apiTab()}/keys/${old.id}/revoke`)).text();
  const posted = await b.fetch(`${apiTab()}/keys/${old.id}/revoke`, form({ csrf: hidden(page, 'csrf') }));
  const after = await (await b.fetch(new URL(posted.headers.get('location')!, web.baseUrl).toString())).text();
  assert.match(after, /The key was revoked\. Requests with it are refused from now on\./);
  assert.equal((await web.hubGet('/playbook-opt-ins', old.key)).status, 401);
  assert.equal((await web.hubGet('/playbook-opt-ins', secret)).status, 200);
});

test('Roll with no grace period: the reveal says the old secret stopped working at once, and it is refused', async () => {
  const b = await signedIn(web);
  const old = await createKey(web.db, { hubId: HUB, name: 'Leaked key', now: web.clock.now() });
  const posted = await rollThroughForm(b, old.id, '0');
  assert.equal(posted.status, 303);
  const shown = await (await b.fetch(new URL(posted.headers.get('location')!, web.baseUrl).toString())).text();
  assert.match(shown, /This key replaces <code class="token">hubops_\w{4}…<\/code>, which stopped working at once\./);
  assert.match(rowOf(shown, old.id), /data-state="expired"/);
  assert.equal((await web.hubGet('/playbook-opt-ins', old.key)).status, 401);
});

test("Roll refuses an embed, revoked, expired or already rolled key (409, nothing made), another hub's key (404), a forged CSRF token and a grace period not offered (400), and members (403)", async () => {
  const b = await signedIn(web);
  const revoked = await createKey(web.db, { hubId: HUB, name: 'roll revoked', now: web.clock.now() });
  await revokeKey(web.db, revoked.id);
  const expired = await createKey(web.db, {
    hubId: HUB,
    name: 'roll expired',
    expiresInDays: 30,
    now: new Date(web.clock.now().getTime() - 31 * DAY),
  });
  const rolled = await createKey(web.db, { hubId: HUB, name: 'roll twice', now: web.clock.now() });
  assert.equal((await rollThroughForm(b, rolled.id, '24')).status, 303);
  const embed = await createKey(web.db, { hubId: HUB, name: 'roll embed', scope: 'embed', now: web.clock.now() });
  assert.doesNotMatch(rowOf(await (await b.fetch(apiTab())).text(), embed.id), /Roll<\/a>/, 'an embed key offers no Roll');
  const count = async () => (await web.db.kysely.selectFrom('api_keys').select('id').execute()).length;
  const before = await count();
  const page = await (await b.fetch(apiTab())).text();
  for (const [key, message] of [
    [revoked, /This key is revoked: only a working key can be rolled\. Create a new key instead\./],
    [expired, /This key expired on \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC: only a working key can be rolled\./],
    [rolled, /This key was already rolled: roll the key that replaced it instead\./],
    [embed, /An embed key is not rolled: create a new embed key, sign with its private key, then revoke this one/],
  ] as const) {
    const shown = await b.fetch(`${apiTab()}/keys/${key.id}/roll`);
    assert.equal(shown.status, 409, key.id);
    const text = await shown.text();
    assert.match(text, /<h1>This key cannot be rolled<\/h1>/);
    assert.match(text, message);
    // The POST itself, with a valid form token, is refused the same way.
    const posted = await b.fetch(
      `${apiTab()}/keys/${key.id}/roll`,
      form({ csrf: hidden(page, 'csrf'), form_token: hidden(page, 'form_token'), grace_hours: '1' }),
    );
    assert.equal(posted.status, 409, key.id);
    assert.match(await posted.text(), message);
  }
  await hub(
    web.db,
    'hub_far',
    (await web.db.kysely.selectFrom('hubs').select('account_id').where('id', '=', HUB).executeTakeFirstOrThrow()).account_id,
  );
  const far = await createKey(web.db, { hubId: 'hub_far', name: 'far away' });
  assert.equal((await b.fetch(`${apiTab()}/keys/${far.id}/roll`)).status, 404);
  assert.equal(
    (
      await b.fetch(
        `${apiTab()}/keys/${far.id}/roll`,
        form({ csrf: hidden(page, 'csrf'), form_token: hidden(page, 'form_token'), grace_hours: '1' }),
      )
    ).status,
    404,
  );
  const live = await createKey(web.db, { hubId: HUB, name: 'roll live', now: web.clock.now() });
  const forged = await rollThroughForm(b, live.id, '1', 'forged');
  assert.equal(forged.status, 400);
  assert.match(await forged.text(), /That form expired\. Reload the page and try again\./);
  for (const grace of ['2', '48', '-1', '1.5', '']) {
    const r = await rollThroughForm(b, live.id, grace);
    assert.equal(r.status, 400, grace);
    assert.match(await r.text(), /Choose how long the old key keeps working: not at all, 1 hour or 24 hours\./);
  }
  const member = await signedIn(web, MEMBER);
  for (const r of [
    await member.fetch(`${apiTab()}/keys/${live.id}/roll`),
    await member.fetch(`${apiTab()}/keys/${live.id}/roll`, form({ csrf: 'x', form_token: 'y', grace_hours: '1' })),
  ]) {
    assert.equal(r.status, 403);
    assert.match(await r.text(), /Hub admins only/);
  }
  assert.equal(await count(), before + 2, 'only far away and roll live were made');
  assert.equal((await keyRow(live.id)).replaced_by, null);
});

test("the API tab charts each key's requests per UTC day for 30 days, with a text alternative; expired keys are marked; the table stacks on a phone", async () => {
  const b = await signedIn(web);
  const key = await createKey(web.db, { hubId: HUB, name: 'charted', now: web.clock.now() });
  const lapsed = await createKey(web.db, {
    hubId: HUB,
    name: 'lapsed',
    expiresInDays: 30,
    now: new Date(web.clock.now().getTime() - 30 * DAY),
  });
  for (let i = 0; i < 3; i++) assert.equal((await web.hubGet('/playbook-opt-ins', key.key)).status, 200);
  web.clock.advance(-DAY);
  assert.equal((await web.hubGet('/playbook-opt-ins', key.key)).status, 200);
  web.clock.advance(DAY);
  await web.app.usage.flush();
  const page = await (await b.fetch(apiTab())).text();
  const today = web.clock.now().toISOString().slice(0, 10);
  const yesterday = new Date(web.clock.now().getTime() - DAY).toISOString().slice(0, 10);
  const first = new Date(web.clock.now().getTime() - 29 * DAY).toISOString().slice(0, 10);
  const row = rowOf(page, key.id);
  const label = `Requests per day, ${first} to ${today} (UTC): 4 requests, most on ${today} (3).`;
  assert.ok(row.includes(`<svg class="chart spark" role="img" aria-label="${label}"`), row);
  assert.ok(row.includes(`<title>${label}</title>`));
  assert.equal((row.match(/<rect /g) ?? []).length, 30);
  assert.match(
    row,
    new RegExp(
      `<rect class="bar"[^>]*><title>${yesterday}: 1</title></rect><rect class="bar"[^>]*><title>${today}: 3</title></rect></svg>`,
    ),
  );
  assert.doesNotMatch(row, /<script/);
  assert.match(
    rowOf(page, lapsed.id),
    /data-state="expired"[\s\S]*<span class="pill revoked">Expired<\/span><br><small>on \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC<\/small>/,
  );
  assert.ok(rowOf(page, lapsed.id).includes(`aria-label="Requests per day, ${first} to ${today} (UTC): 0 requests."`));
  // A phone: the table becomes cards whose cells say what they are; ids never wrap mid-token.
  assert.match(page, /<table class="stack keys">/);
  assert.match(row, /<span data-requests>4<\/span> in all/);
  assert.match(rowOf(page, lapsed.id), /<small data-expires>expires \d{4}-/);
  assert.match(row, /<small data-expires>never expires<\/small>/);
  for (const label of ['Name', 'Scope', 'Key starts', 'Created', 'Requests', 'Last used', 'State']) {
    assert.ok(row.includes(`data-label="${label}"`), label);
  }
  assert.match(row, /id <code class="token">key_/);
  assert.match(page, /<a class="button primary" href="#create-key">Create key<\/a>/);
  assert.match(page, /<div class="card" id="create-key"><h2>Create key<\/h2>/);
});

test("the API tab counts a key's requests answered 304 Not Modified apart, explains they are free, and shows them as the lighter top of the day's bar", async () => {
  const b = await signedIn(web);
  const key = await createKey(web.db, { hubId: HUB, name: 'polling sync', now: web.clock.now() });
  const embed = await createKey(web.db, { hubId: HUB, name: 'embed only', scope: 'embed', now: web.clock.now() });
  const first = await web.hubGet('/playbook-opt-ins', key.key);
  assert.equal(first.status, 200);
  const etag = String(first.headers.etag);
  assert.match(etag, /^"[^"]+"$/);
  for (let i = 0; i < 3; i++) {
    const again = await web.hubGet('/playbook-opt-ins', key.key, { 'if-none-match': etag });
    assert.equal(again.status, 304);
  }
  assert.equal((await web.hubGet('/playbook-opt-ins', key.key, { 'if-none-match': '"not-what-you-have"' })).status, 200);
  await web.app.usage.flush();
  const page = await (await b.fetch(apiTab())).text();
  const today = web.clock.now().toISOString().slice(0, 10);
  const row = rowOf(page, key.id);
  assert.match(
    row,
    /<span data-requests>5<\/span> in all<br><small data-not-modified title="[^"]*do not count against the rate limit[^"]*">3 unchanged \(304\), not counted against the limit<\/small>/,
  );
  assert.ok(row.includes(`(UTC): 5 requests (3 unchanged, 304), most on ${today} (5).`), row);
  // Today's bar: 2 counted requests below, 3 unchanged above, lighter; one tooltip for the day.
  const bar = new RegExp(
    `<g><title>${today}: 5, 3 unchanged \\(304\\)</title><rect class="bar" x="145" width="4" y="(\\d+)" height="(\\d+)"/><rect class="bar" fill-opacity="0.4" x="145" width="4" y="2" height="(\\d+)"/></g></svg>`,
  ).exec(row);
  assert.ok(bar, row);
  const [counted, unchanged] = [Number(bar[2]), Number(bar[3])];
  assert.equal(counted + unchanged, 26, "the whole bar is the day's requests, the busiest day's full height");
  assert.ok(unchanged > counted, `3 of 5 unchanged: ${unchanged} px of ${counted + unchanged}`);
  assert.match(
    page,
    /<strong>Unchanged \(304\)<\/strong>: requests from a tool that already had the latest data, answered “304 Not Modified” without sending it again\. They are free: they do not count against the rate limit\./,
  );
  assert.doesNotMatch(rowOf(page, embed.id), /data-not-modified/, 'an embed key makes no Hub API requests');
});
