// The API key lifecycle on the Hub API: expiry at the instant itself (REST and the Hub MCP
// endpoint, both through the guard), rolling with a grace period, and requests per key and UTC day.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createKey, keyDailyUsage, revokeKey, rollKeyInTransaction } from '../../src/domain/api-keys/api-key.service.ts';
import { DomainError } from '../../src/platform/errors.ts';
import { KEY_USAGE_DAYS } from '../../src/policy.ts';
import { startApp, type TestApp } from '../support/app.ts';
import * as fx from '../support/world.ts';

const DAY = 86_400_000;
const HOUR = 3_600_000;
const START = '2026-11-21T12:00:00.000Z';

let t: TestApp;
before(async () => {
  t = await startApp({ listen: true, now: START, limiter: 'unlimited' });
  await fx.account(t.db, 'acc_1');
  await fx.hub(t.db, 'h1', 'acc_1');
  await fx.hub(t.db, 'h2', 'acc_1');
});
after(async () => t?.close());

const roll = (input: { hubId: string; keyId: string; graceMs: number }) =>
  t.db.kysely.transaction().execute((trx) => rollKeyInTransaction(trx, { ...input, now: t.clock.now() }));

/** A raw Hub MCP initialize (inject): the status and JSON body the guard answers. */
async function mcpInitialize(key: string): Promise<{ status: number; body: any }> {
  const response = await t.app.fastify.inject({
    method: 'POST',
    url: '/v1/hub/mcp',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    payload: {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    },
  });
  return {
    status: response.statusCode,
    body: response.headers['content-type']?.toString().startsWith('application/json') ? response.json() : response.body,
  };
}

/** The MCP SDK client, as an agent host connects: resolves to the tool names, or rejects with the HTTP error. */
async function mcpTools(key: string): Promise<string[]> {
  const client = new Client({ name: 'lifecycle-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${t.baseUrl}/v1/hub/mcp`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }),
  );
  try {
    return (await client.listTools()).tools.map((tool) => tool.name);
  } finally {
    await client.close();
  }
}

describe('expiry', () => {
  test('a key works until one millisecond before its expiry and is refused with invalid_api_key saying when it expired from that instant, on REST and MCP', async () => {
    t.clock.set(START);
    const created = await createKey(t.db, { hubId: 'h1', name: 'thirty days', expiresInDays: 30, now: t.clock.now() });
    const expiresAt = new Date(Date.parse(START) + 30 * DAY);
    assert.equal(created.expiresAt, expiresAt.toISOString());

    t.clock.set(new Date(expiresAt.getTime() - 1));
    assert.equal((await t.hubGet('/playbook-opt-ins', created.key)).status, 200);
    assert.equal((await mcpInitialize(created.key)).status, 200);
    assert.ok((await mcpTools(created.key)).length > 0);

    const message = `This API key expired at ${expiresAt.toISOString()}. Create a new key in the web admin (Manage Hub → API).`;
    for (const at of [expiresAt, new Date(expiresAt.getTime() + DAY)]) {
      t.clock.set(at);
      // The key was admitted before: its verdict rides along with the request's query, and still refuses.
      const rest = await t.hubGet('/playbook-opt-ins', created.key);
      assert.equal(rest.status, 401, at.toISOString());
      assert.deepEqual(rest.body, { error: 'invalid_api_key', message });
      assert.match(String(rest.headers['www-authenticate']), /^Bearer realm=/);
      // The Hub MCP endpoint answers a refused key with 403 (a 401 would send MCP clients into OAuth), same body.
      const mcp = await mcpInitialize(created.key);
      assert.equal(mcp.status, 403);
      assert.deepEqual(mcp.body, { error: 'invalid_api_key', message });
      await assert.rejects(
        mcpTools(created.key),
        (error) => error instanceof StreamableHTTPError && error.code === 403 && error.message.includes(message),
      );
    }
  });

  test('a key never seen by this instance is refused at its expiry too (the verdict read first)', async () => {
    t.clock.set(START);
    const created = await createKey(t.db, { hubId: 'h1', name: 'ninety days', expiresInDays: 90, now: t.clock.now() });
    t.clock.advance(90 * DAY);
    const r = await t.hubGet('/opt-in-summary', created.key);
    assert.equal(r.status, 401);
    assert.match(r.body.message, /^This API key expired at 2027-02-19T12:00:00\.000Z\./);
  });

  test('only 30, 90 or 365 days, or none: anything else is refused and nothing is written', async () => {
    for (const days of [0, 1, 7, 31, 366, -30, 30.5, Number.NaN]) {
      await assert.rejects(
        createKey(t.db, { hubId: 'h1', name: `bad ${days}`, expiresInDays: days }),
        (error) => error instanceof DomainError && error.kind === 'invalid' && /30, 90, 365/.test(error.message),
      );
    }
    assert.equal((await t.db.kysely.selectFrom('api_keys').select('id').where('name', 'like', 'bad %').execute()).length, 0);
    assert.equal((await createKey(t.db, { hubId: 'h1', name: 'forever' })).expiresAt, null);
  });
});

describe('rolling', () => {
  test('both secrets work during the grace period; the old one stops at its end with its own message; the new one keeps the name, scope and lifetime', async () => {
    t.clock.set(START);
    const old = await createKey(t.db, { hubId: 'h1', name: 'Zapier sync', expiresInDays: 30, now: t.clock.now() });
    t.clock.advance(10 * DAY);
    const rolled = await roll({ hubId: 'h1', keyId: old.id, graceMs: HOUR });
    assert.notEqual(rolled.key, old.key);
    assert.deepEqual([rolled.name, rolled.scope, rolled.hubId], ['Zapier sync', 'read', 'h1']);
    const rolledAt = Date.parse(START) + 10 * DAY;
    assert.equal(rolled.expiresAt, new Date(rolledAt + 30 * DAY).toISOString(), 'the same 30-day lifetime, from the roll');
    assert.deepEqual(rolled.replaces, { id: old.id, expiresAt: new Date(rolledAt + HOUR).toISOString() });
    const row = await t.db.kysely
      .selectFrom('api_keys')
      .select(['replaced_by', 'key_hash'])
      .where('id', '=', old.id)
      .executeTakeFirstOrThrow();
    assert.equal(row.replaced_by, rolled.id);

    t.clock.set(new Date(rolledAt + HOUR - 1));
    assert.equal((await t.hubGet('/playbook-opt-ins', old.key)).status, 200, 'old secret, in the grace period');
    assert.equal((await t.hubGet('/playbook-opt-ins', rolled.key)).status, 200, 'new secret');
    assert.equal((await mcpInitialize(old.key)).status, 200);

    t.clock.set(new Date(rolledAt + HOUR));
    const refused = await t.hubGet('/playbook-opt-ins', old.key);
    assert.equal(refused.status, 401);
    assert.deepEqual(refused.body, {
      error: 'invalid_api_key',
      message: `This API key was rolled and its grace period ended at ${new Date(rolledAt + HOUR).toISOString()}: use the key that replaced it (${rolled.id}).`,
    });
    assert.deepEqual(await mcpInitialize(old.key), { status: 403, body: refused.body });
    assert.equal((await t.hubGet('/playbook-opt-ins', rolled.key)).status, 200);
  });

  test("a grace period of zero ends the old secret at once; the grace never outlives the old key's own expiry", async () => {
    t.clock.set(START);
    const now = await createKey(t.db, { hubId: 'h1', name: 'roll now', now: t.clock.now() });
    const rolled = await roll({ hubId: 'h1', keyId: now.id, graceMs: 0 });
    assert.equal(rolled.replaces.expiresAt, START);
    assert.equal((await t.hubGet('/playbook-opt-ins', now.key)).status, 401);
    assert.equal((await t.hubGet('/playbook-opt-ins', rolled.key)).status, 200);

    const soon = await createKey(t.db, { hubId: 'h1', name: 'expires soon', expiresInDays: 30, now: t.clock.now() });
    t.clock.advance(30 * DAY - 60_000);
    const late = await roll({ hubId: 'h1', keyId: soon.id, graceMs: 24 * HOUR });
    assert.equal(late.replaces.expiresAt, soon.expiresAt, 'a minute left: the old secret keeps its own expiry');
  });

  test("rolling a revoked, expired or already rolled key, another hub's key, or with a grace period not offered is refused and changes nothing", async () => {
    t.clock.set(START);
    const revoked = await createKey(t.db, { hubId: 'h1', name: 'revoked', now: t.clock.now() });
    await revokeKey(t.db, revoked.id);
    const expired = await createKey(t.db, { hubId: 'h1', name: 'expired', expiresInDays: 30, now: t.clock.now() });
    const twice = await createKey(t.db, { hubId: 'h1', name: 'twice', now: t.clock.now() });
    const successor = await roll({ hubId: 'h1', keyId: twice.id, graceMs: HOUR });
    t.clock.advance(30 * DAY);
    const count = async () => (await t.db.kysely.selectFrom('api_keys').select('id').execute()).length;
    const before = await count();
    const refusals: [string, { hubId: string; keyId: string; graceMs: number }, string, RegExp][] = [
      [
        'revoked',
        { hubId: 'h1', keyId: revoked.id, graceMs: HOUR },
        'conflict',
        /is revoked, so it cannot be rolled: create a new key instead$/,
      ],
      [
        'expired',
        { hubId: 'h1', keyId: expired.id, graceMs: HOUR },
        'conflict',
        /expired at 2026-12-21T12:00:00\.000Z, so it cannot be rolled/,
      ],
      ['rolled (its grace over)', { hubId: 'h1', keyId: twice.id, graceMs: HOUR }, 'conflict', /expired at/],
      ['another hub', { hubId: 'h2', keyId: successor.id, graceMs: HOUR }, 'not_found', /does not exist/],
      ['2 h grace', { hubId: 'h1', keyId: successor.id, graceMs: 2 * HOUR }, 'invalid', /grace period must be one of 0 h, 1 h, 24 h/],
      ['25 h grace', { hubId: 'h1', keyId: successor.id, graceMs: 25 * HOUR }, 'invalid', /grace period/],
    ];
    for (const [label, input, kind, message] of refusals) {
      await assert.rejects(
        roll(input),
        (error) => error instanceof DomainError && error.kind === kind && message.test(error.message),
        label,
      );
    }
    // Rolled, still in its grace period: refused, pointing at the successor.
    const graced = await createKey(t.db, { hubId: 'h1', name: 'graced', now: t.clock.now() });
    const next = await roll({ hubId: 'h1', keyId: graced.id, graceMs: DAY });
    await assert.rejects(
      roll({ hubId: 'h1', keyId: graced.id, graceMs: DAY }),
      (error) =>
        error instanceof DomainError &&
        error.kind === 'conflict' &&
        error.message.endsWith(`was already rolled: roll its replacement, ${next.id}, instead`),
    );
    assert.equal(await count(), before + 2, 'only the two keys made on purpose');
  });
});

describe('revoking a rolled key', () => {
  const status = async (key: string) => (await t.hubGet('/playbook-opt-ins', key)).status;
  const revokedAt = async (id: string) =>
    (await t.db.kysely.selectFrom('api_keys').select('revoked_at').where('id', '=', id).executeTakeFirstOrThrow()).revoked_at;

  test('revoking the replacement ends the old secrets it replaced that still work (a chain of rolls too), on REST and MCP', async () => {
    const first = await createKey(t.db, { hubId: 'h1', name: 'chain', now: t.clock.now() });
    const second = await roll({ hubId: 'h1', keyId: first.id, graceMs: DAY });
    const third = await roll({ hubId: 'h1', keyId: second.id, graceMs: HOUR });
    for (const key of [first, second, third]) assert.equal(await status(key.key), 200, 'all three secrets work before');
    const revoked = await revokeKey(t.db, third.id, { hubId: 'h1', now: t.clock.now() });
    assert.deepEqual(revoked.predecessors.sort(), [first.id, second.id].sort());
    for (const key of [first, second, third]) {
      assert.equal(await status(key.key), 401, `${key.id} is refused from the next request`);
      assert.equal((await mcpInitialize(key.key)).status, 403, `${key.id} on the Hub MCP endpoint`);
    }
    assert.equal((await revokedAt(first.id))?.getTime(), (await revokedAt(third.id))?.getTime(), 'revoked together');
    // Again: idempotent, the first revocation time kept.
    assert.equal((await revokeKey(t.db, third.id)).revokedAt, revoked.revokedAt);
  });

  test("an old secret whose grace already ended keeps its history; revoking a rolled key ends only its old secret, not its replacement's", async () => {
    const ended = await createKey(t.db, { hubId: 'h1', name: 'ended', now: t.clock.now() });
    const afterEnded = await roll({ hubId: 'h1', keyId: ended.id, graceMs: 0 });
    assert.deepEqual((await revokeKey(t.db, afterEnded.id, { now: t.clock.now() })).predecessors, []);
    assert.equal(await revokedAt(ended.id), null, 'still shown as expired (rolled, ended), not revoked');

    const old = await createKey(t.db, { hubId: 'h1', name: 'leaked old secret', now: t.clock.now() });
    const replacement = await roll({ hubId: 'h1', keyId: old.id, graceMs: DAY });
    assert.deepEqual((await revokeKey(t.db, old.id, { now: t.clock.now() })).predecessors, []);
    assert.equal(await status(old.key), 401);
    assert.equal(await status(replacement.key), 200, 'the replacement keeps working');
    assert.equal(await revokedAt(replacement.id), null);
  });

  test("another hub's key is not found and nothing is revoked", async () => {
    const key = await createKey(t.db, { hubId: 'h1', name: 'not yours', now: t.clock.now() });
    const next = await roll({ hubId: 'h1', keyId: key.id, graceMs: DAY });
    await assert.rejects(revokeKey(t.db, next.id, { hubId: 'h2' }), (error) => error instanceof DomainError && error.kind === 'not_found');
    assert.equal(await revokedAt(key.id), null);
    assert.equal(await revokedAt(next.id), null);
  });
});

describe('requests per day', () => {
  test("one flush writes each key's requests into its UTC days, across midnight; the chart series has 30 days ending today", async () => {
    t.clock.set('2026-11-21T23:59:58.000Z');
    const key = await createKey(t.db, { hubId: 'h1', name: 'daily', now: t.clock.now() });
    const other = await createKey(t.db, { hubId: 'h2', name: 'daily elsewhere', now: t.clock.now() });
    await t.app.usage.flush(); // whatever earlier tests left
    for (let i = 0; i < 2; i++) assert.equal((await t.hubGet('/playbook-opt-ins', key.key)).status, 200);
    t.clock.set('2026-11-21T23:59:59.999Z');
    assert.equal((await t.hubGet('/opt-in-summary', key.key)).status, 200);
    t.clock.set('2026-11-22T00:00:00.000Z');
    for (let i = 0; i < 4; i++) assert.equal((await t.hubGet('/playbook-opt-ins', key.key)).status, 200);
    assert.equal((await t.hubGet('/playbook-opt-ins', other.key)).status, 200);
    const daily = () =>
      t.db.kysely
        .selectFrom('api_key_daily_usage')
        .select(['key_id', 'day', 'request_count'])
        .where('key_id', 'in', [key.id, other.id])
        .orderBy('key_id')
        .orderBy('day')
        .execute();
    assert.deepEqual(await daily(), [], 'nothing written per request');
    await t.app.usage.flush();
    const expected = [
      { key_id: key.id, day: '2026-11-21', request_count: '3' },
      { key_id: key.id, day: '2026-11-22', request_count: '4' },
    ];
    assert.deepEqual(
      (await daily()).filter((r) => r.key_id === key.id),
      expected,
    );
    const total = await t.db.kysely
      .selectFrom('api_key_usage')
      .select(['request_count', 'last_used_at'])
      .where('key_id', '=', key.id)
      .executeTakeFirstOrThrow();
    assert.deepEqual([total.request_count, total.last_used_at.toISOString()], ['7', '2026-11-22T00:00:00.000Z']);

    // A second flush adds to the day's row.
    assert.equal((await t.hubGet('/playbook-opt-ins', key.key)).status, 200);
    await t.app.usage.flush();
    assert.equal((await daily()).find((r) => r.key_id === key.id && r.day === '2026-11-22')?.request_count, '5');

    // The hub's chart: 30 UTC days ending today, this hub's keys only.
    const usage = await keyDailyUsage(t.db, 'h1', t.clock.now());
    assert.equal(usage.days.length, KEY_USAGE_DAYS);
    assert.deepEqual([usage.days[0], usage.days.at(-1)], ['2026-10-24', '2026-11-22']);
    assert.deepEqual(usage.counts.get(key.id)?.slice(-3), [0, 3, 5]);
    assert.equal(
      usage.counts.get(key.id)?.reduce((a, b) => a + b),
      8,
    );
    assert.equal(usage.counts.has(other.id), false, "another hub's key is not in this hub's chart");
    assert.deepEqual((await keyDailyUsage(t.db, 'h2', t.clock.now())).counts.get(other.id)?.at(-1), 1);
  });

  test("a flush deletes the flushed key's days older than the 30 kept", async () => {
    t.clock.set('2026-11-22T08:00:00.000Z');
    const key = await createKey(t.db, { hubId: 'h1', name: 'pruned', now: t.clock.now() });
    const idle = await createKey(t.db, { hubId: 'h1', name: 'idle', now: t.clock.now() });
    await t.db.kysely
      .insertInto('api_key_daily_usage')
      .values([
        { key_id: key.id, day: '2026-10-01', request_count: 9 },
        { key_id: key.id, day: '2026-10-23', request_count: 9 },
        { key_id: key.id, day: '2026-10-24', request_count: 9 },
        { key_id: idle.id, day: '2026-10-01', request_count: 9 },
      ])
      .execute();
    assert.equal((await t.hubGet('/playbook-opt-ins', key.key)).status, 200);
    await t.app.usage.flush();
    const days = await t.db.kysely
      .selectFrom('api_key_daily_usage')
      .select(['key_id', 'day'])
      .where('key_id', 'in', [key.id, idle.id])
      .orderBy('key_id')
      .orderBy('day')
      .execute();
    assert.deepEqual(
      days.filter((d) => d.key_id === key.id).map((d) => d.day),
      ['2026-10-24', '2026-11-22'],
    );
    assert.deepEqual(
      days.filter((d) => d.key_id === idle.id).map((d) => d.day),
      ['2026-10-01'],
      'a key not flushed is left as it is (its rows stopped growing)',
    );
  });
});
