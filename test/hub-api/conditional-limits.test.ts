// The limits a conditional request meets beyond the per-key window, which a 304 does not count
// against: a key's conditional ceiling (each is still a validator read), and refused input, which
// is charged like any request (only a 304 is free).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { HUB_CONDITIONAL_LIMIT, HUB_KEY_LIMIT } from '../../src/policy.ts';
import { createKey } from '../../src/domain/api-keys/api-key.service.ts';
import { startApp, type TestApp } from '../support/app.ts';
import * as fx from '../support/world.ts';

let t: TestApp;

before(async () => {
  t = await startApp();
  await fx.account(t.db, 'acc_1');
  await fx.hub(t.db, 'h1', 'acc_1');
  await fx.workspace(t.db, 'h1', 'w1');
  await fx.playbook(t.db, 'h1', 'p1');
  await fx.optIns(t.db, [{ id: 'oi_1', hubId: 'h1', playbookId: 'p1', workspaceId: 'w1', optedInAt: '2026-11-20T10:00:00Z' }]);
});
after(() => t.close());

const remaining = (headers: Record<string, unknown>) => Number(String(headers.ratelimit).match(/"per-key";r=(\d+)/)![1]);

test(`a key's conditional requests stop at ${HUB_CONDITIONAL_LIMIT.limit} a minute (429), without touching its per-key window`, async () => {
  const { key } = await createKey(t.db, { hubId: 'h1', name: 'poller' });
  const first = await t.hubGet('/playbook-opt-ins', key);
  const etag = String(first.headers.etag);
  for (let i = 1; i <= HUB_CONDITIONAL_LIMIT.limit; i++) {
    const again = await t.hubGet('/playbook-opt-ins', key, { 'if-none-match': etag });
    if (again.status !== 304) assert.fail(`conditional #${i}: ${again.status}`);
  }
  const over = await t.hubGet('/playbook-opt-ins', key, { 'if-none-match': etag });
  assert.equal(over.status, 429);
  assert.equal(over.body.error, 'rate_limited');
  assert.match(String(over.headers['retry-after']), /^\d+$/);
  const plain = await t.hubGet('/playbook-opt-ins', key);
  assert.equal(plain.status, 200, 'an unconditional request is not counted in the ceiling');
  assert.equal(remaining(plain.headers), HUB_KEY_LIMIT.limit - 2, 'only the two full answers are in the per-key window');
});

test('a conditional request with refused input is charged like any other request', async () => {
  const { key } = await createKey(t.db, { hubId: 'h1', name: 'typo' });
  const refused = await t.hubGet('/playbook-opt-ins?limit=0', key, { 'if-none-match': '"whatever"' });
  assert.equal(refused.status, 400);
  assert.equal(remaining(refused.headers), HUB_KEY_LIMIT.limit - 1);
  const plain = await t.hubGet('/playbook-opt-ins', key);
  assert.equal(remaining(plain.headers), HUB_KEY_LIMIT.limit - 2);
});
