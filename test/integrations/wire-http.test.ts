// The deadline every wire client's exchange runs under (src/integrations/wire-http.ts): it fires
// after its time, follows the caller's signal, and once the exchange is over it neither fires nor
// holds on to the caller's signal (AbortSignal.timeout's timer could not be cleared: every request
// fired it long after it was over).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { deadline } from '../../src/integrations/wire-http.ts';

test('a deadline aborts its signal when the time is up, as a timeout', async () => {
  const due = deadline(20);
  assert.equal(due.signal.aborted, false);
  await delay(60);
  assert.equal(due.signal.aborted, true);
  assert.equal(due.timedOut(), true);
  assert.equal((due.signal.reason as DOMException).name, 'TimeoutError');
});

test('a deadline follows the caller’s signal with the caller’s reason, already aborted or later; that is no timeout', async () => {
  const caller = new AbortController();
  const due = deadline(1_000, caller.signal);
  const reason = new Error('given up');
  caller.abort(reason);
  assert.equal(due.signal.reason, reason);
  assert.equal(due.timedOut(), false);
  const late = deadline(1_000, caller.signal);
  assert.equal(late.signal.reason, reason, 'a signal aborted before the exchange');
  due.done();
  late.done();
});

test('once done, a deadline neither fires nor follows the caller any more', async () => {
  const caller = new AbortController();
  const due = deadline(20, caller.signal);
  due.done();
  await delay(60);
  caller.abort(new Error('later'));
  assert.equal(due.signal.aborted, false);
  assert.equal(due.timedOut(), false);
});
