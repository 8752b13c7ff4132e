import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { test } from 'node:test';
import { signEmbedToken, verifyEmbedToken, type EmbedKeyRecord } from '../../src/surfaces/web/embed-token.ts';

const KEY = 'hubops_exampleexampleexampleexampleexampleexample123456';
const now = new Date('2026-11-21T12:00:00Z');
const nowS = now.getTime() / 1000;
const record = (over: Partial<EmbedKeyRecord> = {}): EmbedKeyRecord => ({
  id: 'key_1', hubId: 'hub_1', scope: 'embed', revoked: false, hubSuspended: false, keyHash: createHash('sha256').update(KEY).digest(), ...over,
});
const find = (r: EmbedKeyRecord | undefined) => async (kid: string) => (r && r.id === kid ? r : undefined);
const payload = { hub: 'hub_1', view: 'spend' as const, exp: nowS + 600, kid: 'key_1' };

test('a token signed as the README documents verifies', async () => {
  // The README recipe, written out independently of signEmbedToken.
  const part = Buffer.from(JSON.stringify(payload)).toString('base64url');
  const sig = createHmac('sha256', createHash('sha256').update(KEY).digest()).update(part).digest('base64url');
  const verdict = await verifyEmbedToken(`${part}.${sig}`, 'spend', now, find(record()));
  assert.deepEqual(verdict, { ok: true, payload });
  assert.equal(signEmbedToken(payload, KEY), `${part}.${sig}`);
});

test('refusals: tampered, wrong key, read key, revoked, wrong hub, wrong view, expired, too long-lived, malformed', async () => {
  const good = signEmbedToken(payload, KEY);
  const [part, sig] = good.split('.') as [string, string];
  const tamperedPayload = Buffer.from(JSON.stringify({ ...payload, hub: 'hub_2' })).toString('base64url');
  const cases: [string, string, EmbedKeyRecord | undefined, string][] = [
    ['tampered payload', `${tamperedPayload}.${sig}`, record(), /signature/.source],
    ['tampered signature', `${part}.${sig.slice(0, -2)}AA`, record(), /signature/.source],
    ['unknown key', good, undefined, /signature/.source],
    ['signed with another key', signEmbedToken(payload, `${KEY}x`), record(), /signature/.source],
    ['read key', good, record({ scope: 'read' }), /read key/.source],
    ['revoked key', good, record({ revoked: true }), /revoked/.source],
    ['wrong hub', good, record({ hubId: 'hub_2' }), /hub/.source],
    ['suspended hub', good, record({ hubSuspended: true }), /suspended/.source],
    ['expired', signEmbedToken({ ...payload, exp: nowS - 1 }, KEY), record(), /expired/.source],
    ['too long-lived', signEmbedToken({ ...payload, exp: nowS + 7200 }, KEY), record(), /1-hour/.source],
    ['malformed', 'not-a-token', record(), /malformed/.source],
    ['bad view in payload', signEmbedToken({ ...payload, view: 'other' as never }, KEY), record(), /malformed/.source],
  ];
  for (const [label, token, key, reason] of cases) {
    const verdict = await verifyEmbedToken(token, 'spend', now, find(key));
    assert.equal(verdict.ok, false, label);
    assert.match((verdict as { reason: string }).reason, new RegExp(reason), label);
  }
  const other = await verifyEmbedToken(good, 'opt-in-summary', now, find(record()));
  assert.equal(other.ok, false);
});
