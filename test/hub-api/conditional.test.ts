// Conditional reads on the Hub API, over HTTP on the real app and a real PostgreSQL: every read's
// strong ETag is derived from what the database knows (versions kept by triggers, the page's
// keys), so a conditional request is answered 304 without building the answer — and only when
// the answer it would build is the one the client holds. Then how 304s and the limits interact.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../../src/db/schema.ts';
import { createKey, revokeKey } from '../../src/domain/api-keys/api-key.service.ts';
import { cachedOptInSummary, OptInSummaryCache } from '../../src/domain/opt-ins/opt-in.service.ts';
import { importNdjson } from '../../src/domain/import/import.service.ts';
import { utcDate } from '../../src/domain/periods.ts';
import { readKey, startApp, type TestApp } from '../support/app.ts';
import * as fx from '../support/world.ts';

const HOUR = 3_600_000;
const STRONG_TAG = /^"[A-Za-z0-9_-]{22}"$/;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  text: string;
}

/** A GET of the Hub API with exactly these headers; the body as text (byte equality is the point). */
async function get(t: TestApp, path: string, key: string | undefined, headers: Record<string, string> = {}): Promise<Answer> {
  const r = await t.app.fastify.inject({
    method: 'GET',
    url: `/v1/hub${path}`,
    headers: { ...(key === undefined ? {} : { authorization: `Bearer ${key}` }), ...headers },
  });
  return { status: r.statusCode, headers: r.headers, text: r.body };
}

const LIST = '/playbook-opt-ins?limit=500';
const FIRST_PAGE = '/playbook-opt-ins?limit=2';
const SUMMARY = '/opt-in-summary';
const SPEND = '/spend-by-workspace';
const SPEND_TODAY = '/spend-by-workspace?period=today';
const ENDPOINTS = [LIST, FIRST_PAGE, SUMMARY, SPEND, SPEND_TODAY];

/**
 * Two hubs of different accounts. h1: three workspaces with custom fields, two playbooks, five
 * opt-ins over the last days (two active), an ad account synced an hour ago, spend; h2 alike, smaller.
 */
async function seed(t: TestApp): Promise<void> {
  const db = t.db;
  const now = t.clock.now().getTime();
  const ago = (ms: number) => new Date(now - ms).toISOString();
  await fx.account(db, 'acc_1');
  await fx.account(db, 'acc_2');
  await fx.hub(db, 'h1', 'acc_1');
  await fx.hub(db, 'h2', 'acc_2');
  await fx.field(db, 'h1', 'region');
  await fx.field(db, 'h1', 'store');
  await fx.workspace(db, 'h1', 'w1', { region: 'West', store: 1 });
  await fx.workspace(db, 'h1', 'w2', { region: 'East' });
  await fx.workspace(db, 'h1', 'w3');
  await fx.workspace(db, 'h2', 'v1', { region: 'North' });
  await fx.playbook(db, 'h1', 'p1');
  await fx.playbook(db, 'h1', 'p2');
  await fx.playbook(db, 'h2', 'q1');
  await fx.optIns(db, [
    { id: 'o1', hubId: 'h1', playbookId: 'p1', workspaceId: 'w1', status: 'active', optedInAt: ago(50 * HOUR), updatedAt: ago(49 * HOUR) },
    { id: 'o2', hubId: 'h1', playbookId: 'p1', workspaceId: 'w2', status: 'paused', optedInAt: ago(40 * HOUR), updatedAt: ago(39 * HOUR) },
    { id: 'o3', hubId: 'h1', playbookId: 'p2', workspaceId: 'w1', status: 'active', optedInAt: ago(30 * HOUR), updatedAt: ago(29 * HOUR) },
    {
      id: 'o4',
      hubId: 'h1',
      playbookId: 'p2',
      workspaceId: 'w3',
      status: 'in_review',
      optedInAt: ago(20 * HOUR),
      updatedAt: ago(19 * HOUR),
    },
    {
      id: 'o5',
      hubId: 'h1',
      playbookId: 'p1',
      workspaceId: 'w3',
      status: 'questions_only',
      optedInAt: ago(10 * HOUR),
      updatedAt: ago(9 * HOUR),
      budgetCents: null,
      budgetType: null,
    },
    { id: 'x1', hubId: 'h2', playbookId: 'q1', workspaceId: 'v1', status: 'active', optedInAt: ago(5 * HOUR) },
  ]);
  await fx.adAccount(db, 'h1', 'a1', 'idle', ago(HOUR));
  await fx.adAccount(db, 'h2', 'b1', 'idle', ago(HOUR));
  const today = utcDate(new Date(now));
  await fx.spend(db, [
    { hubId: 'h1', adAccountId: 'a1', workspaceId: 'w1', date: today, cents: 1000 },
    { hubId: 'h1', adAccountId: 'a1', workspaceId: 'w2', date: utcDate(new Date(now - 48 * HOUR)), cents: 500 },
    { hubId: 'h1', adAccountId: 'a1', workspaceId: null, date: today, cents: 25 },
    { hubId: 'h2', adAccountId: 'b1', workspaceId: 'v1', date: today, cents: 9999 },
  ]);
}

// What changes the world between two requests: each written straight to the tables, as the
// writers (import, the sandbox, the web admin) would.
let serial = 0;
const mutations = {
  renameWorkspace: (t: TestApp, id = 'w2') =>
    t.db.kysely
      .updateTable('workspaces')
      .set({ name: `Workspace ${id} #${++serial}` })
      .where('id', '=', id)
      .execute(),
  /** Toggles an opt-in between active and paused: the active count moves with it. */
  toggleStatus: (t: TestApp, id = 'o2') =>
    t.db.pool.query(`UPDATE opt_ins SET status = CASE status WHEN 'active' THEN 'paused' ELSE 'active' END WHERE id = $1`, [id]),
  editBudget: (t: TestApp, id = 'o1') =>
    t.db.pool.query('UPDATE opt_ins SET budget_cents = coalesce(budget_cents, 0) + 1 WHERE id = $1', [id]),
  newOptIn: (t: TestApp, hubId = 'h1') =>
    fx.optIns(t.db, [
      {
        id: `n${++serial}`,
        hubId,
        playbookId: hubId === 'h1' ? 'p2' : 'q1',
        workspaceId: hubId === 'h1' ? 'w2' : 'v1',
        status: 'in_review',
        optedInAt: new Date(t.clock.now().getTime() - HOUR).toISOString(),
        updatedAt: new Date().toISOString(),
      },
    ]),
  newSpend: (t: TestApp, hubId = 'h1') =>
    fx.spend(t.db, [
      {
        hubId,
        adAccountId: hubId === 'h1' ? 'a1' : 'b1',
        workspaceId: hubId === 'h1' ? 'w3' : 'v1',
        date: utcDate(t.clock.now()),
        cents: 7,
      },
    ]),
  toggleArchived: (t: TestApp, key = 'region') =>
    t.db.pool.query('UPDATE workspace_fields SET archived = NOT archived WHERE hub_id = $1 AND key = $2', ['h1', key]),
  /** A completed sync of h1's ad account `agoMs` before the app's now. */
  sync: (t: TestApp, agoMs = 60_000) =>
    t.db.kysely
      .updateTable('ad_accounts')
      .set({ sync_state: 'idle', last_synced_at: new Date(t.clock.now().getTime() - agoMs) })
      .where('id', '=', 'a1')
      .execute(),
  syncing: (t: TestApp) =>
    t.db.pool.query(`UPDATE ad_accounts SET sync_state = CASE sync_state WHEN 'syncing' THEN 'idle' ELSE 'syncing' END WHERE id = 'a1'`),
  /** A new key of h1, used once. */
  newKeyUsed: async (t: TestApp) => {
    const { key } = await createKey(t.db, { hubId: 'h1', name: `k${++serial}`, scope: 'read' });
    assert.equal((await get(t, '/playbook-opt-ins?limit=1', key)).status, 200);
  },
  otherHub: async (t: TestApp) => {
    await mutations.newOptIn(t, 'h2');
    await mutations.newSpend(t, 'h2');
    await mutations.renameWorkspace(t, 'v1');
  },
} as const;

/** The ETag (and body) of each endpoint now. */
async function tags(t: TestApp, key: string, paths = ENDPOINTS): Promise<Map<string, Answer>> {
  const out = new Map<string, Answer>();
  for (const path of paths) {
    const r = await get(t, path, key);
    assert.equal(r.status, 200, `${path}: ${r.text}`);
    out.set(path, r);
  }
  return out;
}

/**
 * After `change`, exactly the endpoints in `changed` have a new tag (and a new body); a
 * conditional request with the old tag gets 200 with the new body for those, 304 for the others.
 */
async function expectChanges(t: TestApp, key: string, change: () => Promise<unknown>, changed: string[]): Promise<void> {
  const before = await tags(t, key);
  await change();
  for (const path of ENDPOINTS) {
    const held = before.get(path)!;
    const conditional = await get(t, path, key, { 'if-none-match': String(held.headers.etag) });
    const full = await get(t, path, key);
    const expected = changed.includes(path);
    assert.equal(full.headers.etag !== held.headers.etag, expected, `${path}: tag ${expected ? 'changed' : 'kept'}`);
    assert.equal(full.text !== held.text, expected, `${path}: body ${expected ? 'changed' : 'kept'}`);
    assert.equal(conditional.status, expected ? 200 : 304, `${path}: conditional`);
    if (expected) assert.equal(conditional.text, full.text);
  }
}

describe('validators of the three reads', () => {
  let t: TestApp;
  let key: string;

  before(async () => {
    t = await startApp({ limiter: 'unlimited' });
    await seed(t);
    key = await readKey(t.db, 'h1');
    t.clock.set(new Date(Date.now() + 2000));
    // The summary's Last-Modified is sent once the database's clock is two seconds past the seeding.
    while ((await get(t, SUMMARY, key)).headers['last-modified'] === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
  });
  after(() => t.close());

  for (const path of [LIST, SUMMARY, SPEND]) {
    test(`${path}: a strong ETag; If-None-Match with it is 304 without a body, with the validators, caching and RateLimit headers`, async () => {
      const full = await get(t, path, key);
      assert.equal(full.status, 200);
      assert.match(String(full.headers.etag), STRONG_TAG);
      assert.equal(full.headers['cache-control'], 'private, no-cache, must-revalidate');
      const again = await get(t, path, key);
      assert.equal(again.headers.etag, full.headers.etag, 'the same state, the same tag');
      assert.equal(again.text, full.text, 'and the same bytes');
      const conditional = await get(t, path, key, { 'if-none-match': String(full.headers.etag) });
      assert.equal(conditional.status, 304);
      assert.equal(conditional.text, '');
      assert.equal(conditional.headers.etag, full.headers.etag);
      assert.equal(conditional.headers['last-modified'], full.headers['last-modified']);
      assert.equal(conditional.headers['cache-control'], 'private, no-cache, must-revalidate');
      assert.match(String(conditional.headers.ratelimit), /^"per-key";r=\d+;t=\d+/);
      assert.match(String(conditional.headers['ratelimit-policy']), /^"per-key";q=120;w=60/);
    });
  }

  test('If-Match on GET: the current tag (strong, for the same Accept-Encoding) or * gets the answer; anything else is 412 with RateLimit headers; If-Unmodified-Since before Last-Modified is 412', async () => {
    for (const path of [LIST, SUMMARY, SPEND]) {
      const full = await get(t, path, key);
      const tag = String(full.headers.etag);
      for (const ifMatch of [tag, '*', `"older", ${tag}`]) {
        const answer = await get(t, path, key, { 'if-match': ifMatch });
        assert.equal(answer.status, 200, `${path} If-Match: ${ifMatch}`);
        assert.equal(answer.text, full.text);
      }
      for (const ifMatch of ['"older"', `W/${tag}`, `${tag.slice(0, -1)}-gzip"`]) {
        const refused = await get(t, path, key, { 'if-match': ifMatch });
        assert.equal(refused.status, 412, `${path} If-Match: ${ifMatch}`);
        assert.equal(JSON.parse(refused.text).error, 'precondition_failed');
        assert.match(String(refused.headers.ratelimit), /^"per-key";r=\d+;t=\d+/, 'a 412 is counted like a full answer');
      }
      const gzip = await get(t, path, key, { 'accept-encoding': 'gzip' });
      assert.equal((await get(t, path, key, { 'accept-encoding': 'gzip', 'if-match': String(gzip.headers.etag) })).status, 200);
      assert.equal(
        (await get(t, path, key, { 'accept-encoding': 'gzip', 'if-match': tag })).status,
        412,
        'the identity tag is not the gzip one',
      );
      // If-Match is decided first: a stale If-Match beside a matching If-None-Match is 412, not 304.
      assert.equal((await get(t, path, key, { 'if-match': '"older"', 'if-none-match': tag })).status, 412);
      assert.equal((await get(t, path, key, { 'if-match': tag, 'if-none-match': tag })).status, 304);
    }
    const summary = await get(t, SUMMARY, key);
    const lastModified = new Date(String(summary.headers['last-modified']));
    const before = new Date(lastModified.getTime() - 1000).toUTCString();
    assert.equal((await get(t, SUMMARY, key, { 'if-unmodified-since': before })).status, 412);
    assert.equal((await get(t, SUMMARY, key, { 'if-unmodified-since': lastModified.toUTCString() })).status, 200);
    assert.equal((await get(t, LIST, key, { 'if-unmodified-since': before })).status, 200, 'no Last-Modified: nothing to compare');
  });

  test('Last-Modified: the summary has one (its asOf, once settled); the list and spend have none', async () => {
    const summary = await get(t, SUMMARY, key);
    const asOf = JSON.parse(summary.text).asOf as string;
    assert.equal(summary.headers['last-modified'], new Date(asOf).toUTCString());
    assert.equal((await get(t, LIST, key)).headers['last-modified'], undefined);
    assert.equal((await get(t, SPEND, key)).headers['last-modified'], undefined);
  });

  test('If-Modified-Since on the summary: at or after Last-Modified is 304, before is 200, and it is ignored beside If-None-Match', async () => {
    const summary = await get(t, SUMMARY, key);
    const lastModified = String(summary.headers['last-modified']);
    // A date in the future is ignored: wait until a second after Last-Modified is past.
    while (Date.now() < Date.parse(lastModified) + 2000) await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal((await get(t, SUMMARY, key, { 'if-modified-since': lastModified })).status, 304);
    const later = new Date(Date.parse(lastModified) + 1000).toUTCString();
    assert.equal((await get(t, SUMMARY, key, { 'if-modified-since': later })).status, 304);
    const earlier = new Date(Date.parse(lastModified) - 1000).toUTCString();
    const full = await get(t, SUMMARY, key, { 'if-modified-since': earlier });
    assert.equal(full.status, 200);
    assert.equal(full.text, summary.text);
    // If-None-Match decides alone: a tag of another state is a full answer, whatever the date says.
    const stale = await get(t, SUMMARY, key, {
      'if-none-match': String((await get(t, SPEND, key)).headers.etag),
      'if-modified-since': lastModified,
    });
    assert.equal(stale.status, 200);
  });

  test('malformed If-None-Match and If-Modified-Since are ignored: a full 200, never 400 or 500', async () => {
    for (const path of [LIST, SUMMARY, SPEND]) {
      const full = await get(t, path, key);
      const etag = String(full.headers.etag);
      const noneMatch = [
        'abc',
        '"unterminated',
        'W/',
        `${etag}, abc`,
        `"${'x'.repeat(10_000)}`,
        'x'.repeat(10_240),
        `"a\u007fb"`,
        `"a\tb"`,
        etag.slice(1, -1),
      ];
      for (const value of noneMatch) {
        const r = await get(t, path, key, { 'if-none-match': value });
        assert.equal(r.status, 200, `${path} If-None-Match: ${value.slice(0, 40)}`);
        assert.equal(r.text, full.text);
      }
      const future = new Date(t.clock.now().getTime() + 86_400_000).toUTCString();
      for (const value of ['yesterday', future, 'Sun, 31 Feb 2026 10:00:00 GMT', '2026-11-21T10:00:00Z', '']) {
        const r = await get(t, path, key, { 'if-modified-since': value });
        assert.equal(r.status, 200, `${path} If-Modified-Since: ${value}`);
      }
    }
  });

  test('weak comparison: W/ on the current tag is 304; *, and a list holding the current tag, are 304; a tag of an older state or another answer is 200', async () => {
    const old = await tags(t, key, [LIST, SUMMARY, SPEND]);
    await mutations.toggleStatus(t);
    await mutations.newSpend(t);
    for (const path of [LIST, SUMMARY, SPEND]) {
      const current = String((await get(t, path, key)).headers.etag);
      const held = String(old.get(path)!.headers.etag);
      assert.notEqual(current, held, path);
      assert.equal((await get(t, path, key, { 'if-none-match': `W/${current}` })).status, 304, `${path} weak current`);
      assert.equal((await get(t, path, key, { 'if-none-match': '*' })).status, 304, `${path} *`);
      assert.equal((await get(t, path, key, { 'if-none-match': `"foreign", ${held}, ${current}` })).status, 304, `${path} list`);
      assert.equal((await get(t, path, key, { 'if-none-match': held })).status, 200, `${path} older`);
      assert.equal((await get(t, path, key, { 'if-none-match': `W/${held}` })).status, 200, `${path} weak older`);
      assert.equal((await get(t, path, key, { 'if-none-match': `"${'A'.repeat(22)}"` })).status, 200, `${path} foreign`);
    }
    // Another endpoint's tag, another hub's tag: never a 304.
    const otherKey = await readKey(t.db, 'h2');
    const othersSummary = String((await get(t, SUMMARY, otherKey)).headers.etag);
    assert.equal((await get(t, SUMMARY, key, { 'if-none-match': othersSummary })).status, 200);
    assert.equal((await get(t, SPEND, key, { 'if-none-match': String((await get(t, SPEND_TODAY, key)).headers.etag) })).status, 200);
  });

  describe('what changes each answer, and what does not', () => {
    // Named cases first, mid-day on a day of their own, so that no case crosses midnight.
    before(() => {
      t.clock.set(`${utcDate(new Date(Date.now() + 86_400_000))}T12:00:00Z`);
    });

    test('a renamed workspace: the list and spend (they embed it), not the summary', () =>
      expectChanges(t, key, () => mutations.renameWorkspace(t, 'w1'), [LIST, FIRST_PAGE, SPEND, SPEND_TODAY]));

    test('an opt-in whose status changes: the list (it moves to the end, off the first page) and the summary', () =>
      expectChanges(t, key, () => mutations.toggleStatus(t, 'o1'), [LIST, FIRST_PAGE, SUMMARY]));

    test('a new opt-in: the list and the summary; the first page keeps its rows and still has a next page', () =>
      expectChanges(t, key, () => mutations.newOptIn(t), [LIST, SUMMARY]));

    test('a budget edit: the list only (no figure of the summary moves)', () =>
      expectChanges(t, key, () => mutations.editBudget(t, 'o5'), [LIST]));

    test('new spend: the spend report only', () => expectChanges(t, key, () => mutations.newSpend(t), [SPEND, SPEND_TODAY]));

    test('an archived field: the list and spend (their rows show the visible fields)', () =>
      expectChanges(t, key, () => mutations.toggleArchived(t), [LIST, FIRST_PAGE, SPEND, SPEND_TODAY]));

    test('an ad account sync: the spend report only', () => expectChanges(t, key, () => mutations.sync(t, 30_000), [SPEND, SPEND_TODAY]));

    test("a key created and used, another hub's changes, time passing within the day: nothing", async () => {
      await expectChanges(t, key, () => mutations.newKeyUsed(t), []);
      await expectChanges(t, key, () => mutations.otherHub(t), []);
      await expectChanges(t, key, async () => t.clock.advance(60 * 60_000), []);
    });

    test('an opt-in on another page changes only that page; one on this page changes it', async () => {
      const page = JSON.parse((await get(t, FIRST_PAGE, key)).text) as { data: { id: string }[] };
      const onPage = new Set(page.data.map((row) => row.id));
      const offPage = ['o1', 'o2', 'o3', 'o4', 'o5'].filter((id) => !onPage.has(id));
      await expectChanges(t, key, () => mutations.editBudget(t, offPage.at(-1)), [LIST]);
      await expectChanges(t, key, () => mutations.editBudget(t, page.data[0]!.id), [LIST, FIRST_PAGE]);
    });

    test('spend turning stale six hours after the last sync: the spend report only', async () => {
      await mutations.sync(t, 6 * HOUR - 60_000);
      await expectChanges(t, key, async () => t.clock.advance(2 * 60_000), [SPEND, SPEND_TODAY]);
      assert.equal(JSON.parse((await get(t, SPEND, key)).text).freshness, 'stale');
    });

    test('midnight UTC: the summary and spend (every range moves), not the list', async () => {
      const next = `${utcDate(new Date(t.clock.now().getTime() + 86_400_000))}T00:00:05Z`;
      await expectChanges(t, key, async () => t.clock.set(next), [SUMMARY, SPEND, SPEND_TODAY]);
    });

    test('property: after any sequence of changes, a tag changed exactly when its body did, and a conditional request says so', async () => {
      const step = fc.oneof(
        fc.record({ kind: fc.constant('rename' as const), pick: fc.constantFrom('w1', 'w2', 'w3') }),
        fc.record({ kind: fc.constant('status' as const), pick: fc.constantFrom('o1', 'o2', 'o3', 'o4', 'o5') }),
        fc.record({ kind: fc.constant('budget' as const), pick: fc.constantFrom('o1', 'o2', 'o3', 'o4', 'o5') }),
        fc.constant({ kind: 'opt-in' as const }),
        fc.constant({ kind: 'spend' as const }),
        fc.record({ kind: fc.constant('archive' as const), pick: fc.constantFrom('region', 'store') }),
        fc.record({ kind: fc.constant('sync' as const), agoMs: fc.integer({ min: 0, max: 8 * HOUR }) }),
        fc.constant({ kind: 'syncing' as const }),
        fc.constant({ kind: 'key' as const }),
        fc.constant({ kind: 'other hub' as const }),
        fc.record({ kind: fc.constant('time' as const), ms: fc.integer({ min: 1, max: 30 * HOUR }) }),
      );
      let held = await tags(t, key);
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 6 }), async (steps) => {
          for (const s of steps) {
            if (s.kind === 'rename') await mutations.renameWorkspace(t, s.pick);
            if (s.kind === 'status') await mutations.toggleStatus(t, s.pick);
            if (s.kind === 'budget') await mutations.editBudget(t, s.pick);
            if (s.kind === 'opt-in') await mutations.newOptIn(t);
            if (s.kind === 'spend') await mutations.newSpend(t);
            if (s.kind === 'archive') await mutations.toggleArchived(t, s.pick);
            if (s.kind === 'sync') await mutations.sync(t, s.agoMs);
            if (s.kind === 'syncing') await mutations.syncing(t);
            if (s.kind === 'key') await mutations.newKeyUsed(t);
            if (s.kind === 'other hub') await mutations.otherHub(t);
            if (s.kind === 'time') t.clock.advance(s.ms);
            const now = new Map<string, Answer>();
            for (const path of ENDPOINTS) {
              const before = held.get(path)!;
              const conditional = await get(t, path, key, { 'if-none-match': String(before.headers.etag) });
              const full = await get(t, path, key);
              const bodyChanged = full.text !== before.text;
              const tagChanged = full.headers.etag !== before.headers.etag;
              const what = `${path} after ${s.kind}`;
              // Every row embeds the hub's catalog, so a page's tag names the catalog's version:
              // a change to it changes every page's tag, even one whose rows do not show it.
              if ((s.kind === 'rename' || s.kind === 'archive') && path.startsWith('/playbook-opt-ins'))
                assert.ok(tagChanged, `${what}: a catalog change`);
              else assert.equal(tagChanged, bodyChanged, `${what}: tag changed ⇔ body changed`);
              assert.ok(tagChanged || !bodyChanged, `${what}: a changed body never keeps its tag`);
              assert.equal(conditional.status, tagChanged ? 200 : 304, `${what}: conditional`);
              if (tagChanged) assert.equal(conditional.text, full.text);
              now.set(path, full);
            }
            held = now;
          }
        }),
        { numRuns: 15 },
      );
    });
  });

  test('the summary cache: repeated calls at an unchanged version are not recounted; a change is', async () => {
    const cache = new OptInSummaryCache();
    const first = await cachedOptInSummary(t.db, 'h1', t.clock, cache);
    const second = await cachedOptInSummary(t.db, 'h1', t.clock, cache);
    assert.equal(second.summary, first.summary, 'the very object counted the first time');
    assert.equal(second.validator.etag, first.validator.etag);
    await mutations.newOptIn(t);
    const third = await cachedOptInSummary(t.db, 'h1', t.clock, cache);
    assert.notEqual(third.summary, first.summary);
    const month = (summary: typeof first.summary) => summary.periods.find((p) => p.period === 'last_30_days')!.optIns;
    assert.equal(month(third.summary), month(first.summary) + 1, 'counted again, with the new opt-in');
    assert.notEqual(third.validator.etag, first.validator.etag);
  });
});

describe("the summary's version and Last-Modified: stamped at commit, settled on the database's clock, moved only by a figure's inputs", () => {
  let t: TestApp;
  let key: string;

  /** The database's time now, the clock opt_ins_changed_at is stamped on. */
  const dbNow = async () => (await t.db.pool.query<{ now: Date }>('SELECT clock_timestamp() AS now')).rows[0]!.now;
  const changedAt = async () =>
    (await t.db.pool.query<{ at: Date }>(`SELECT opt_ins_changed_at AS at FROM hubs WHERE id = 'h1'`)).rows[0]!.at;
  const second = (date: Date) => Math.floor(date.getTime() / 1000);
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  // Times at the database's full precision, as text that sorts as they do: a commit can follow its last statement within a millisecond.
  const MICROS = (time: RawBuilder<unknown>) => sql`to_char(${time} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')`;
  const dbNowMicros = async (db: Kysely<Database> = t.db.kysely) =>
    (await sql<{ now: string }>`SELECT ${MICROS(sql`clock_timestamp()`)} AS now`.execute(db)).rows[0]!.now;
  const changedAtMicros = async () =>
    (await sql<{ at: string }>`SELECT ${MICROS(sql`opt_ins_changed_at`)} AS at FROM hubs WHERE id = 'h1'`.execute(t.db.kysely)).rows[0]!.at;

  /** The summary once its Last-Modified is sent: polled until the database's clock is far enough past the last change. */
  async function settledSummary(): Promise<Answer> {
    for (;;) {
      const r = await get(t, SUMMARY, key);
      if (r.headers['last-modified'] !== undefined) return r;
      await sleep(100);
    }
  }

  /** The app's clock 20 s ahead of the real one, within the same UTC day (so asOf is the last change, not a midnight). */
  async function appClockAhead(): Promise<void> {
    const untilMidnight = () => 86_400_000 - (Date.now() % 86_400_000);
    if (untilMidnight() < 30_000) await sleep(untilMidnight() + 1000);
    t.clock.set(new Date(Date.now() + 20_000));
  }

  before(async () => {
    t = await startApp({ limiter: 'unlimited' });
    await seed(t);
    key = await readKey(t.db, 'h1');
  });
  after(() => t.close());

  test('a change stamped at its commit: a read while it was uncommitted and a later If-Modified-Since of that read see it', async () => {
    await appClockAhead();
    const held = await settledSummary();
    let pollTime = '';
    const writer = await t.db.pool.connect();
    try {
      await writer.query('BEGIN');
      const statementAt = (
        await writer.query<{ at: Date }>(`UPDATE opt_ins SET status = 'active' WHERE id = 'o2' RETURNING statement_timestamp() AS at`)
      ).rows[0]!.at;
      await writer.query(`UPDATE opt_ins SET opted_in_at = opted_in_at - interval '1 day' WHERE id = 'o4'`);
      // A poll while the change is uncommitted: the old state, as of a moment after the statements ran.
      await sleep(1100);
      const polledAt = await dbNow();
      const during = await get(t, SUMMARY, key);
      assert.equal(during.headers.etag, held.headers.etag, 'the uncommitted change is not seen');
      assert.equal(during.text, held.text);
      assert.ok(second(polledAt) > second(statementAt));
      pollTime = polledAt.toUTCString();
      // The commit a second later than the poll, as an import's would be: HTTP dates are whole seconds.
      await sleep(1100);
      const beforeCommit = await dbNowMicros();
      await writer.query('COMMIT');
      assert.ok((await changedAtMicros()) > beforeCommit, 'stamped when the transaction committed, not when its statements ran');
    } finally {
      writer.release();
    }
    const after = await settledSummary();
    assert.notEqual(after.headers.etag, held.headers.etag);
    const lastModified = Date.parse(String(after.headers['last-modified']));
    assert.ok(lastModified > Date.parse(String(held.headers['last-modified'])));
    // What the client held, and its own poll time (as `curl -z` sends): both older than the change.
    for (const since of [String(held.headers['last-modified']), pollTime]) {
      const r = await get(t, SUMMARY, key, { 'if-modified-since': since });
      assert.equal(r.status, 200, `If-Modified-Since: ${since}`);
      assert.equal(r.text, after.text);
      assert.ok(lastModified > Date.parse(since), `Last-Modified ${after.headers['last-modified']} is later than ${since}`);
    }
    assert.equal((await get(t, SUMMARY, key, { 'if-modified-since': String(after.headers['last-modified']) })).status, 304);
  });

  test("Last-Modified is withheld until two whole seconds after the change's second, on the database's clock", async () => {
    await settledSummary();
    await appClockAhead(); // the app's clock well past the change: it decides nothing
    await mutations.toggleStatus(t, 'o2');
    const changed = await changedAt();
    let sent: Answer | undefined;
    while (!sent) {
      const from = await dbNow();
      const r = await get(t, SUMMARY, key);
      const to = await dbNow();
      assert.equal(JSON.parse(r.text).asOf, changed.toISOString());
      if (second(to) < second(changed) + 2)
        assert.equal(r.headers['last-modified'], undefined, `at ${to.toISOString()}, changed ${changed.toISOString()}`);
      if (second(from) >= second(changed) + 2) assert.equal(r.headers['last-modified'], changed.toUTCString());
      if (r.headers['last-modified'] !== undefined) sent = r;
      else await sleep(50);
    }
    assert.equal(sent.headers['last-modified'], changed.toUTCString());
  });

  test('several statements and an import, each one transaction: one new version, stamped at the commit', async () => {
    await settledSummary();
    const held = await get(t, SUMMARY, key);
    const statementsDone = await t.db.kysely.transaction().execute(async (trx) => {
      await trx.updateTable('opt_ins').set({ status: 'paused' }).where('id', '=', 'o2').execute();
      await trx.updateTable('opt_ins').set({ status: 'active' }).where('id', '=', 'o4').execute();
      await trx.updateTable('opt_ins').set({ budget_cents: 5 }).where('id', '=', 'o1').execute();
      return dbNowMicros(trx);
    });
    const stamped = await changedAt();
    const stampedMicros = await changedAtMicros();
    assert.ok(stampedMicros > statementsDone, `stamped at the commit (${stampedMicros}), after the last statement (${statementsDone})`);
    const afterStatements = await get(t, SUMMARY, key);
    assert.notEqual(afterStatements.headers.etag, held.headers.etag);
    assert.equal(JSON.parse(afterStatements.text).asOf, stamped.toISOString());

    const importedFrom = await dbNowMicros();
    await importNdjson(
      t.db,
      [
        {
          type: 'optIn',
          id: 'imported1',
          playbookId: 'p1',
          workspaceId: 'w1',
          status: 'active',
          optedInAt: new Date(Date.now() - HOUR).toISOString(),
        },
        {
          type: 'optIn',
          id: 'imported2',
          playbookId: 'p2',
          workspaceId: 'w2',
          status: 'paused',
          optedInAt: new Date(Date.now() - 2 * HOUR).toISOString(),
        },
      ]
        .map((line) => JSON.stringify(line))
        .join('\n'),
    );
    const importedTo = await dbNowMicros();
    const imported = await changedAt();
    const importedMicros = await changedAtMicros();
    assert.ok(importedMicros > importedFrom && importedMicros < importedTo, 'stamped within the import');
    const afterImport = await get(t, SUMMARY, key);
    assert.notEqual(afterImport.headers.etag, afterStatements.headers.etag);
    assert.equal(JSON.parse(afterImport.text).asOf, imported.toISOString());
    assert.equal(JSON.parse(afterImport.text).activeOptIns, JSON.parse(afterStatements.text).activeOptIns + 1);
  });

  test('only what a figure depends on moves the version and asOf: hub, workspace, UTC day of optedInAt, active or not', async () => {
    await appClockAhead();
    const changes: [string, string, boolean][] = [
      [
        'a status between two non-active statuses',
        `UPDATE opt_ins SET status = CASE status WHEN 'paused' THEN 'in_review' ELSE 'paused' END WHERE id = 'o2'`,
        false,
      ],
      [
        'optedInAt moved within its UTC day',
        `UPDATE opt_ins SET opted_in_at = CASE WHEN (opted_in_at AT TIME ZONE 'UTC')::time < '12:00' THEN date_trunc('day', opted_in_at AT TIME ZONE 'UTC') + interval '23:59:59' ELSE date_trunc('day', opted_in_at AT TIME ZONE 'UTC') + interval '1 second' END AT TIME ZONE 'UTC' WHERE id = 'o2'`,
        false,
      ],
      [
        'a budget, variant and responses edit',
        `UPDATE opt_ins SET budget_cents = coalesce(budget_cents, 0) + 1, variant = '{"size":"large"}', responses = '[]' WHERE id = 'o3'`,
        false,
      ],
      ['optedInAt moved to another day', `UPDATE opt_ins SET opted_in_at = opted_in_at - interval '1 day' WHERE id = 'o2'`, true],
      ['to active', `UPDATE opt_ins SET status = 'active' WHERE id = 'o2'`, true],
      ['from active', `UPDATE opt_ins SET status = 'questions_only' WHERE id = 'o2'`, true],
      [
        'to another workspace',
        `UPDATE opt_ins SET workspace_id = CASE workspace_id WHEN 'w3' THEN 'w2' ELSE 'w3' END WHERE id = 'o2'`,
        true,
      ],
    ];
    await t.db.pool.query(`UPDATE opt_ins SET status = 'paused' WHERE id = 'o2'`);
    for (const [what, change, moves] of changes) {
      const held = await get(t, SUMMARY, key);
      const heldChangedAt = await changedAt();
      await t.db.pool.query(change);
      const now = await get(t, SUMMARY, key);
      assert.equal(now.headers.etag !== held.headers.etag, moves, `${what}: the tag ${moves ? 'changes' : 'stays'}`);
      assert.equal(JSON.parse(now.text).asOf !== JSON.parse(held.text).asOf, moves, `${what}: asOf ${moves ? 'moves' : 'stays'}`);
      assert.equal((await changedAt()).getTime() !== heldChangedAt.getTime(), moves, `${what}: the change time`);
      assert.equal((await get(t, SUMMARY, key, { 'if-none-match': String(held.headers.etag) })).status, moves ? 200 : 304, what);
    }
  });

  test('an opt-in write and an import-like transaction touching the same day counts do not deadlock: both take the hub row first', async () => {
    const importer = await t.db.pool.connect();
    const writer = await t.db.pool.connect();
    try {
      await importer.query('BEGIN');
      // The import's first lock: a new workspace bumps the hub's catalog version.
      await importer.query(`UPDATE workspaces SET name = name || '.' WHERE id = 'w1'`);
      const writerPid = (await writer.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      // Moves o1 a day back: its hub's summary version, then the counts of both days.
      const write = writer.query(`UPDATE opt_ins SET opted_in_at = opted_in_at - interval '1 day' WHERE id = 'o1'`);
      for (;;) {
        const { rows } = await t.db.pool.query<{ waiting: boolean }>(
          `SELECT wait_event_type = 'Lock' AS waiting FROM pg_stat_activity WHERE pid = $1`,
          [writerPid],
        );
        if (rows[0]?.waiting) break;
        await sleep(20);
      }
      // The import's opt-in moves into o1's day: the same day-count row the writer would lock.
      await importer.query(`UPDATE opt_ins SET opted_in_at = (SELECT opted_in_at FROM opt_ins WHERE id = 'o1') WHERE id = 'o3'`);
      await importer.query('COMMIT');
      await write;
    } finally {
      importer.release();
      writer.release();
    }
  });
});

describe('304s and the limits', () => {
  let t: TestApp;

  before(async () => {
    t = await startApp(); // the app's own limiter: 120 a minute per key, 20 on each report
    await seed(t);
  });
  after(() => t.close());

  test('with the per-key window full, a conditional request still gets its 304 (r=0); an unconditional one gets 429', async () => {
    const key = await readKey(t.db, 'h1');
    const { headers } = await get(t, LIST, key);
    const etag = String(headers.etag);
    for (let i = 2; i <= 120; i++) assert.equal((await get(t, '/playbook-opt-ins?limit=1', key)).status, 200, `#${i}`);
    const conditional = await get(t, LIST, key, { 'if-none-match': etag });
    assert.equal(conditional.status, 304);
    assert.match(String(conditional.headers.ratelimit), /^"per-key";r=0;t=\d+$/);
    assert.equal((await get(t, LIST, key)).status, 429);
  });

  test('304s do not consume the window: 200 of them, then 120 full answers', async () => {
    const key = await readKey(t.db, 'h1');
    const { key: other } = await createKey(t.db, { hubId: 'h1', name: 'tag source', scope: 'read' });
    const etag = String((await get(t, LIST, other)).headers.etag);
    for (let i = 1; i <= 200; i++) {
      const r = await get(t, LIST, key, { 'if-none-match': etag });
      assert.equal(r.status, 304, `conditional #${i}`);
      assert.match(String(r.headers.ratelimit), /^"per-key";r=120;t=\d+$/, 'the window as it stands, nothing counted');
    }
    for (let i = 1; i <= 120; i++) assert.equal((await get(t, LIST, key)).status, 200, `unconditional #${i}`);
    assert.equal((await get(t, LIST, key)).status, 429);
  });

  test("a 304's RateLimit headers show the window without counting", async () => {
    const key = await readKey(t.db, 'h1');
    const etag = String((await get(t, LIST, key)).headers.etag);
    for (let i = 0; i < 4; i++) await get(t, LIST, key);
    for (let i = 0; i < 3; i++) {
      assert.match(String((await get(t, LIST, key, { 'if-none-match': etag })).headers.ratelimit), /^"per-key";r=115;t=\d+$/);
    }
    assert.match(String((await get(t, LIST, key)).headers.ratelimit), /^"per-key";r=114;t=\d+$/);
  });

  for (const path of [SUMMARY, SPEND]) {
    test(`${path}: its own 20 a minute likewise — the 21st conditional is 304, the 21st unconditional 429, and 304s cost nothing`, async () => {
      const key = await readKey(t.db, 'h1');
      const policy = path === SUMMARY ? 'opt-in-summary' : 'spend-by-workspace';
      const etag = String((await get(t, path, key)).headers.etag);
      for (let i = 1; i <= 40; i++)
        assert.equal((await get(t, path, key, { 'if-none-match': etag })).status, 304, `early conditional #${i}`);
      for (let i = 2; i <= 20; i++) assert.equal((await get(t, path, key)).status, 200, `#${i}`);
      const conditional = await get(t, path, key, { 'if-none-match': etag });
      assert.equal(conditional.status, 304);
      assert.match(String(conditional.headers.ratelimit), new RegExp(`^"per-key";r=100;t=\\d+, "${policy}";r=0;t=\\d+$`));
      assert.equal((await get(t, path, key)).status, 429);
    });
  }

  test('a conditional request with a revoked or unknown key is 401, never 304, and counts as a failed authentication', async () => {
    const created = await createKey(t.db, { hubId: 'h1', name: 'to revoke', scope: 'read' });
    const etag = String((await get(t, LIST, created.key)).headers.etag);
    assert.equal((await get(t, LIST, created.key, { 'if-none-match': etag })).status, 304);
    await revokeKey(t.db, created.id);
    const remaining: number[] = [];
    for (const key of [created.key, created.key, `${created.key.slice(0, -4)}AAAA`, undefined]) {
      const r = await get(t, LIST, key, { 'if-none-match': etag });
      assert.equal(r.status, 401, `key ${key?.slice(0, 12)}`);
      const match = /"failed-auth";r=(\d+);/.exec(String(r.headers.ratelimit));
      assert.ok(match, String(r.headers.ratelimit));
      remaining.push(Number(match[1]));
    }
    assert.deepEqual(
      remaining,
      remaining.map((_, i) => remaining[0]! - i),
      "each refusal counted in the address's failed-authentication window",
    );
  });
});
