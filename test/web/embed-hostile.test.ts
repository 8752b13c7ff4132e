// Hostile embed tokens: every malformed token is the ordinary 401 embed page,
// never a 500, and nothing is logged at warn or above (anyone could otherwise flood the log).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createKey } from '../../src/domain/api-keys/api-key.service.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { account, hub } from '../support/world.ts';
import { captureLog } from '../support/log.ts';

const { logger, lines } = captureLog('trace');
let t: TestApp;
let kid: string;

before(async () => {
  t = await startApp({
    now: 'system',
    logger,
    seed: async (db) => {
      await account(db);
      await hub(db, 'hub_1');
    },
  });
  kid = (await createKey(t.db, { hubId: 'hub_1', name: 'embed', scope: 'embed' })).id;
});
after(async () => t?.close());

const b64 = (text: string) => Buffer.from(text).toString('base64url');
const exp = () => Math.floor(Date.now() / 1000) + 300;
const json = (fields: Record<string, unknown>) => JSON.stringify({ hub: 'hub_1', view: 'spend', exp: exp(), kid, ...fields });

test('malformed embed tokens of every kind get the 401 embed page and log nothing at warn or above', async () => {
  const sig = b64('x'.repeat(64));
  const header = b64(JSON.stringify({ alg: 'EdDSA', kid }));
  const cases: [string, string][] = [
    ['NUL in kid (JSON escape)', `${b64(json({ kid: `${kid}\u0000` }))}.${sig}`],
    ['raw NUL byte in the payload', `${b64(json({}).replace(kid, `${kid}\0`))}.${sig}`],
    ['NUL in hub', `${b64(json({ hub: 'hub_1\u0000' }))}.${sig}`],
    ['lone surrogate in kid', `${b64(json({}).replace(`"${kid}"`, '"\\ud800"'))}.${sig}`],
    ['control character in kid', `${b64(json({ kid: 'key_\u0007' }))}.${sig}`],
    ['noncharacter in kid', `${b64(json({ kid: 'key_\uffff' }))}.${sig}`],
    ['huge kid', `${b64(json({ kid: 'k'.repeat(1500) }))}.${sig}`],
    ['huge token', 'a'.repeat(100_000)],
    ['NUL in the token itself', `${b64(json({}))}\0.${sig}`],
    ['bad base64url', `${b64(json({}))}!.${sig}`],
    ['one segment', b64(json({}))],
    ['four segments', `${header}.${b64(json({}))}.${sig}.${sig}`],
    ['empty segments', '..'],
    ['non-JSON payload', `${b64('{"hub":')}.${sig}`],
    ['JSON null', `${b64('null')}.${sig}`],
    ['JSON array', `${b64('[1,2]')}.${sig}`],
    ['exp as string', `${b64(json({ exp: '9999999999' }))}.${sig}`],
    ['kid as object', `${b64(json({ kid: { $ne: null } }))}.${sig}`],
    ['wrong alg header', `${b64(JSON.stringify({ alg: 'none', kid }))}.${b64(json({}))}.`],
    ['non-JSON header', `${b64('not json')}.${b64(json({}))}.${sig}`],
    ['NUL in header kid', `${b64(JSON.stringify({ alg: 'EdDSA', kid: `${kid}\u0000` }))}.${b64(json({}))}.${sig}`],
  ];
  for (const [label, token] of cases) {
    for (const view of ['spend', 'opt-in-summary']) {
      lines.length = 0;
      const r = await t.app.fastify.inject({ url: `/embed/${view}?token=${encodeURIComponent(token)}` });
      assert.equal(r.statusCode, 401, `${label} (${view})`);
      assert.match(r.body, /data-embed-error/, label);
      const loud = lines.filter((l) => l.level >= 40);
      assert.deepEqual(loud, [], `${label}: nothing at warn or above`);
      assert.ok(
        lines.every((l) => l.err === undefined),
        `${label}: no error object (stack) in any line`,
      );
    }
  }
  // A repeated query parameter (an array) is no token either.
  const twice = await t.app.fastify.inject({ url: '/embed/spend?token=a&token=b' });
  assert.equal(twice.statusCode, 401);
});

test('the input rule at the door (NUL in any query parameter or path) is a 401 embed page or a 400 app page, never a 500', async () => {
  for (const [url, status] of [
    ['/embed/spend?token=x&other=%00', 401],
    ['/embed/opt-in-summary?token=%00', 401],
    ['/app/sign-in?next=%00', 400],
    ['/app/hubs/hub%00/spend', 400],
  ] as const) {
    lines.length = 0;
    const r = await t.app.fastify.inject({ url });
    assert.equal(r.statusCode, status, url);
    assert.match(String(r.headers['content-type']), /text\/html/, url);
    assert.deepEqual(
      lines.filter((l) => l.level >= 40),
      [],
      `${url}: nothing at warn or above`,
    );
  }
});
