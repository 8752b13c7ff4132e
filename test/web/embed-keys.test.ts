// Embed keys are Ed25519 key pairs: nothing in the database is enough to sign
// an embed token; the customer's private key is. (docs/web-admin.md's signing snippet is run by
// test/docs/examples.test.ts.)
import assert from 'node:assert/strict';
import { createHash, createHmac, createPrivateKey, sign } from 'node:crypto';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { createKey, listKeys } from '../../src/domain/api-keys/api-key.service.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { account, hub } from '../support/world.ts';

let t: TestApp;
before(async () => {
  t = await startApp({ now: new Date().toISOString() });
  await account(t.db);
  await hub(t.db, 'hub_1');
});
after(async () => t?.close());

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const get = (token: string, view = 'spend') => t.app.fastify.inject({ url: `/embed/${view}?token=${encodeURIComponent(token)}` });
const reason = (body: string) => /data-embed-error>([^<]*)</.exec(body)?.[1] ?? '';

/** Every value of every column of every row of the tables an embed key touches, as bytes. */
async function everythingInTheDatabase(): Promise<Buffer[]> {
  const values: Buffer[] = [];
  for (const table of ['api_keys', 'api_key_usage', 'hubs', 'accounts', 'web_form_tokens', 'server_secrets']) {
    const rows = await sql<Record<string, unknown>>`SELECT * FROM ${sql.table(table)}`.execute(t.db.kysely);
    for (const row of rows.rows) {
      for (const value of Object.values(row)) {
        if (value === null || value === undefined) continue;
        const bytes = Buffer.isBuffer(value) ? value : Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));
        values.push(bytes, createHash('sha256').update(bytes).digest());
      }
    }
  }
  return values;
}

test('a token forged from everything in the database is refused; the private key signs; tampering is refused', async () => {
  const key = await createKey(t.db, { hubId: 'hub_1', name: 'intranet', scope: 'embed' });
  assert.match(key.key, /^hubops_esk_[A-Za-z0-9_-]{64}$/);
  const row = await t.db.kysely.selectFrom('api_keys').selectAll().where('id', '=', key.id).executeTakeFirstOrThrow();
  assert.equal(row.key_hash, null);
  assert.equal(row.public_key?.length, 32);
  const exp = Math.floor(Date.now() / 1000) + 600;
  const claims = { hub: 'hub_1', view: 'spend', exp };
  const input = `${b64({ alg: 'EdDSA', kid: key.id })}.${b64(claims)}`;
  const legacyPart = b64({ ...claims, kid: key.id });

  const candidates = await everythingInTheDatabase();
  assert.ok(
    candidates.some((c) => c.equals(row.public_key!)),
    'the public key is among what an attacker reads',
  );
  let tried = 0;
  for (const secret of candidates) {
    const forged = [
      `${legacyPart}.${createHmac('sha256', secret).update(legacyPart).digest('base64url')}`,
      `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`,
      `${b64({ alg: 'HS256', kid: key.id })}.${b64(claims)}.${createHmac('sha256', secret).update(input).digest('base64url')}`,
    ];
    if (secret.length === 32) {
      // The value taken as an Ed25519 private key (seed).
      const der = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), secret]);
      forged.push(
        `${input}.${sign(null, Buffer.from(input), createPrivateKey({ key: der, format: 'der', type: 'pkcs8' })).toString('base64url')}`,
      );
    }
    for (const token of forged) {
      const r = await get(token);
      assert.equal(r.statusCode, 401, token);
      tried++;
    }
  }
  assert.ok(tried > 50, `tried ${tried} forgeries`);

  const real = createPrivateKey({ key: Buffer.from(key.key.slice('hubops_esk_'.length), 'base64url'), format: 'der', type: 'pkcs8' });
  const good = `${input}.${sign(null, Buffer.from(input), real).toString('base64url')}`;
  const ok = await get(good);
  assert.equal(ok.statusCode, 200);
  assert.match(ok.body, /spend by workspace/);

  const [header, , sig] = good.split('.') as [string, string, string];
  for (const tampered of [
    `${header}.${b64({ ...claims, exp: exp + 60 })}.${sig}`,
    `${header}.${b64({ ...claims, view: 'opt-in-summary' })}.${sig}`,
    `${b64({ alg: 'EdDSA', kid: key.id, x: 1 })}.${b64(claims)}.${sig}`,
    `${input}.${sig.slice(0, 10)}${sig[10] === 'A' ? 'B' : 'A'}${sig.slice(11)}`,
  ]) {
    const r = await get(tampered, tampered.includes(b64({ ...claims, view: 'opt-in-summary' })) ? 'opt-in-summary' : 'spend');
    assert.equal(r.statusCode, 401, tampered);
    assert.match(reason(r.body), /signature/);
  }
});

test('an embed key made before key pairs keeps working until revoked', async () => {
  const legacyKey = 'hubops_legacylegacylegacylegacylegacylegacyleg123456';
  const hash = createHash('sha256').update(legacyKey).digest();
  await sql`INSERT INTO api_keys (id, hub_id, name, scope, start, key_hash) VALUES ('key_legacy', 'hub_1', 'old', 'embed', 'hubops_lega', ${hash})`.execute(
    t.db.kysely,
  );
  const part = b64({ hub: 'hub_1', view: 'spend', exp: Math.floor(Date.now() / 1000) + 600, kid: 'key_legacy' });
  const token = `${part}.${createHmac('sha256', hash).update(part).digest('base64url')}`;
  assert.equal((await get(token)).statusCode, 200);
  // Listed as legacy, so the hub admin knows to replace it.
  assert.deepEqual(
    (await listKeys(t.db, 'hub_1')).filter((k) => k.legacyEmbed).map((k) => k.id),
    ['key_legacy'],
  );
  await sql`UPDATE api_keys SET revoked_at = now() WHERE id = 'key_legacy'`.execute(t.db.kysely);
  const revoked = await get(token);
  assert.equal(revoked.statusCode, 401);
  assert.match(reason(revoked.body), /revoked/);
});
