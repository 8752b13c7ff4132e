import assert from 'node:assert/strict';
import { createHash, createHmac, createPrivateKey, sign } from 'node:crypto';
import { test } from 'node:test';
import { newKeyMaterial } from '../../src/domain/api-keys/api-key.ts';
import type { EmbedKeyRecord } from '../../src/domain/api-keys/api-key.service.ts';
import { signEmbedToken, verifyEmbedToken } from '../../src/surfaces/web/embed-token.ts';

const pair = newKeyMaterial('embed');
const KEY = pair.secret;
const now = new Date('2026-11-21T12:00:00Z');
const nowS = now.getTime() / 1000;
const record = (over: Partial<EmbedKeyRecord> = {}): EmbedKeyRecord => ({
  id: 'key_1',
  hubId: 'hub_1',
  scope: 'embed',
  revoked: false,
  hubSuspended: false,
  expiresAt: null,
  publicKey: pair.publicKey,
  keyHash: null,
  ...over,
});
const find = (r: EmbedKeyRecord | undefined) => async (kid: string) => (r && r.id === kid ? r : undefined);
const payload = { hub: 'hub_1', view: 'spend' as const, exp: nowS + 600, kid: 'key_1' };
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

test('a compact JWS (EdDSA) signed with the private key shown at creation verifies', async () => {
  // The README recipe, written out independently of signEmbedToken.
  const input = `${b64({ alg: 'EdDSA', kid: 'key_1' })}.${b64({ hub: 'hub_1', view: 'spend', exp: payload.exp })}`;
  const key = createPrivateKey({ key: Buffer.from(KEY.slice('hubops_esk_'.length), 'base64url'), format: 'der', type: 'pkcs8' });
  const token = `${input}.${sign(null, Buffer.from(input), key).toString('base64url')}`;
  assert.deepEqual(await verifyEmbedToken(token, 'spend', now, find(record())), { ok: true, payload });
  assert.deepEqual(await verifyEmbedToken(signEmbedToken(payload, KEY), 'spend', now, find(record())), { ok: true, payload });
});

test('an embed key made before key pairs still verifies its legacy HMAC tokens until revoked', async () => {
  const legacyKey = 'hubops_exampleexampleexampleexampleexampleexample123456';
  const hash = createHash('sha256').update(legacyKey).digest();
  const part = b64(payload);
  const token = `${part}.${createHmac('sha256', hash).update(part).digest('base64url')}`;
  assert.deepEqual(await verifyEmbedToken(token, 'spend', now, find(record({ publicKey: null, keyHash: hash }))), { ok: true, payload });
  assert.match(
    ((await verifyEmbedToken(token, 'spend', now, find(record({ publicKey: null, keyHash: hash, revoked: true })))) as { reason: string })
      .reason,
    /revoked/,
  );
  // A key pair never accepts the legacy form, even with an HMAC over whatever its row holds.
  const overPublic = `${part}.${createHmac('sha256', pair.publicKey!).update(part).digest('base64url')}`;
  assert.equal((await verifyEmbedToken(overPublic, 'spend', now, find(record()))).ok, false);
});

test('refusals: tampered, wrong key, read key, revoked, wrong hub, wrong view, expired, too long-lived, malformed', async () => {
  const good = signEmbedToken(payload, KEY);
  const [header, , sig] = good.split('.') as [string, string, string];
  const other = newKeyMaterial('embed').secret;
  const cases: [string, string, EmbedKeyRecord | undefined, string][] = [
    [
      'tampered payload',
      `${header}.${b64({ hub: 'hub_2', view: 'spend', exp: payload.exp })}.${sig}`,
      record({ hubId: 'hub_2' }),
      /signature/.source,
    ],
    ['tampered kid', `${b64({ alg: 'EdDSA', kid: 'key_2' })}.${good.split('.')[1]}.${sig}`, record({ id: 'key_2' }), /signature/.source],
    ['tampered signature', `${good.slice(0, -4)}AAAA`, record(), /signature/.source],
    ['unknown key', good, undefined, /signature/.source],
    ['signed with another key', signEmbedToken(payload, other), record(), /signature/.source],
    ['read key (no public key)', good, record({ scope: 'read', publicKey: null, keyHash: Buffer.alloc(32) }), /signature/.source],
    ['revoked key', good, record({ revoked: true }), /revoked/.source],
    ['wrong hub', good, record({ hubId: 'hub_2' }), /hub/.source],
    ['suspended hub', good, record({ hubSuspended: true }), /suspended/.source],
    ['expired', signEmbedToken({ ...payload, exp: nowS - 1 }, KEY), record(), /expired/.source],
    ['too long-lived', signEmbedToken({ ...payload, exp: nowS + 7200 }, KEY), record(), /1-hour/.source],
    ['malformed', 'not-a-token', record(), /malformed/.source],
    ['alg none', `${b64({ alg: 'none', kid: 'key_1' })}.${good.split('.')[1]}.`, record(), /malformed/.source],
    ['alg HS256', `${b64({ alg: 'HS256', kid: 'key_1' })}.${good.split('.')[1]}.${sig}`, record(), /malformed/.source],
    ['bad view in payload', signEmbedToken({ ...payload, view: 'other' as never }, KEY), record(), /malformed/.source],
  ];
  for (const [label, token, key, reason] of cases) {
    const verdict = await verifyEmbedToken(token, 'spend', now, find(key));
    assert.equal(verdict.ok, false, label);
    assert.match((verdict as { reason: string }).reason, new RegExp(reason), label);
  }
  assert.equal((await verifyEmbedToken(good, 'opt-in-summary', now, find(record()))).ok, false);
});

test('an embed key stops verifying at its expiry instant, saying when', async () => {
  const token = signEmbedToken(payload, KEY);
  assert.deepEqual(await verifyEmbedToken(token, 'spend', now, find(record({ expiresAt: new Date(now.getTime() + 1) }))), {
    ok: true,
    payload,
  });
  assert.deepEqual(await verifyEmbedToken(token, 'spend', now, find(record({ expiresAt: now }))), {
    ok: false,
    reason: `The embed key that signed this token expired at ${now.toISOString()}.`,
  });
});
