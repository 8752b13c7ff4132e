// Two apps in one process share no state set at import: each signs and checks cursors with the
// key of its own server secrets, through its own input validation.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createKey } from '../../src/domain/api-keys/api-key.service.ts';
import { startApp, type TestApp } from '../support/app.ts';
import * as fx from '../support/world.ts';

interface Deployment {
  t: TestApp;
  key: string;
}

/** An app on a database of its own (so secrets of its own), with the same hub, rows and ids as the other. */
async function deployment(): Promise<Deployment> {
  const t = await startApp();
  await fx.account(t.db, 'acc_1');
  await fx.hub(t.db, 'h1', 'acc_1');
  await fx.workspace(t.db, 'h1', 'w1');
  await fx.playbook(t.db, 'h1', 'p1');
  await fx.optIns(
    t.db,
    ['o1', 'o2'].map((id, i) => ({ id, hubId: 'h1', workspaceId: 'w1', playbookId: 'p1', optedInAt: `2026-11-0${i + 1}T00:00:00Z` })),
  );
  return { t, key: (await createKey(t.db, { hubId: 'h1', name: 'reader' })).key };
}

let a: Deployment;
let b: Deployment;
before(async () => {
  a = await deployment();
  b = await deployment();
});
after(async () => {
  await a?.t.close();
  await b?.t.close();
});

/** The first page's cursor, as `from` issues it. */
async function firstCursor(from: Deployment): Promise<string> {
  const page = await from.t.hubGet('/playbook-opt-ins?limit=1', from.key);
  assert.equal(page.status, 200, JSON.stringify(page.body));
  assert.equal(page.body.data[0].id, 'o1');
  return page.body.nextCursor;
}

test("two apps with different secrets: each accepts its own cursors and refuses the other's", async () => {
  const fromA = await firstCursor(a);
  const fromB = await firstCursor(b);
  assert.notEqual(fromA, fromB, 'the same position, signed with two keys');
  for (const [own, other, label] of [
    [a, fromB, 'a'],
    [b, fromA, 'b'],
  ] as const) {
    const mine = await own.t.hubGet(`/playbook-opt-ins?limit=1&cursor=${own === a ? fromA : fromB}`, own.key);
    assert.equal(mine.status, 200, `${label}: ${JSON.stringify(mine.body)}`);
    assert.deepEqual(
      mine.body.data.map((row: { id: string }) => row.id),
      ['o2'],
      label,
    );
    const theirs = await own.t.hubGet(`/playbook-opt-ins?limit=1&cursor=${other}`, own.key);
    assert.equal(theirs.status, 400, `${label}: ${JSON.stringify(theirs.body)}`);
    assert.deepEqual(
      theirs.body.issues,
      [{ field: 'cursor', message: 'is not a cursor issued by this API; pass nextCursor from the previous page unchanged' }],
      label,
    );
  }
});
