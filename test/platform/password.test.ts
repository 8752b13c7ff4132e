import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hashPassword, verifyPassword } from '../../src/platform/password.ts';

test('hash format: scrypt$N$r$p$salt$hash with a random 16-byte salt', async () => {
  const [a, b] = await Promise.all([hashPassword('correct horse'), hashPassword('correct horse')]);
  const parts = a.split('$');
  assert.equal(parts.length, 6);
  assert.deepEqual(parts.slice(0, 4), ['scrypt', '32768', '8', '1']);
  assert.equal(Buffer.from(parts[4]!, 'base64url').length, 16);
  assert.equal(Buffer.from(parts[5]!, 'base64url').length, 32);
  assert.notEqual(a, b, 'same password, different salt, different hash');
  assert.ok(!a.includes('correct horse'));
});

test('verify: the right password, and nothing else', async () => {
  const stored = await hashPassword('pässwörd 1');
  assert.equal(await verifyPassword('pässwörd 1', stored), true);
  // The same text in decomposed Unicode form is the same password.
  assert.equal(await verifyPassword('pässwörd 1'.normalize('NFD'), stored), true);
  assert.equal(await verifyPassword('pässwörd 2', stored), false);
  assert.equal(await verifyPassword('', stored), false);
});

test('verify: malformed or hostile hashes are false, never an exception or a huge allocation', async () => {
  const good = (await hashPassword('x'.repeat(8))).split('$');
  const variants = [
    '',
    'plain',
    ['bcrypt', ...good.slice(1)].join('$'),
    [...good.slice(0, 5)].join('$'),
    ['scrypt', '1000', ...good.slice(2)].join('$'), // N not a power of two
    ['scrypt', String(2 ** 30), ...good.slice(2)].join('$'), // N far too large
    ['scrypt', good[1], '0', ...good.slice(3)].join('$'),
    [...good.slice(0, 4), '', good[5]].join('$'), // no salt
    [...good.slice(0, 5), 'AAAA'].join('$'), // hash too short
  ];
  for (const stored of variants) assert.equal(await verifyPassword('x'.repeat(8), stored), false, stored);
});
