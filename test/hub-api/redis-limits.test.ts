// Rate limits shared through Redis: two app instances over the same database and the same Redis
// enforce one per-key window between them (120 per key in any rolling 60 s, plus 20
// per operation). With Redis unreachable requests are still served, and each instance counts the
// windows on its own.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { createKey } from '../../src/domain/api-keys/api-key.service.ts';
import { RedisRateLimiter } from '../../src/platform/redis-rate-limit.ts';
import { captureLog } from '../support/log.ts';
import { startApp, type TestApp, TEST_SECRETS_KEY } from '../support/app.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import * as fx from '../support/world.ts';

const REDIS_URL = process.env.REDIS_URL;
const PREFIX = `hubops:test:${randomUUID()}:`;

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function seed(db: TestDb, hubId: string): Promise<void> {
  await fx.account(db, `acc_${hubId}`);
  await fx.hub(db, hubId, `acc_${hubId}`);
  await fx.workspace(db, hubId, `ws_${hubId}`);
  await fx.playbook(db, hubId, `pb_${hubId}`);
  await fx.optIns(db, [
    { id: `oi_${hubId}`, hubId, playbookId: `pb_${hubId}`, workspaceId: `ws_${hubId}`, optedInAt: '2026-11-20T10:00:00Z' },
  ]);
}

/** Two instances (each with its own Redis connection) over one database. */
async function twoInstances(): Promise<[TestApp, TestApp]> {
  const db = await createTestDb();
  const { logger } = captureLog();
  const limiters = [
    new RedisRateLimiter(REDIS_URL!, { prefix: PREFIX, log: logger }),
    new RedisRateLimiter(REDIS_URL!, { prefix: PREFIX, log: logger }),
  ];
  await Promise.all(limiters.map((l) => l.ready()));
  const a = await startApp({ now: '2026-11-21T12:00:00.000Z', secretsKey: TEST_SECRETS_KEY, db, limiter: limiters[0] });
  const b = await startApp({ now: '2026-11-21T12:00:00.000Z', secretsKey: TEST_SECRETS_KEY, db, limiter: limiters[1] });
  cleanups.push(async () => {
    await a.close();
    await b.close();
    for (const limiter of limiters) await limiter.close();
    await db.drop();
    const redis = new Redis(REDIS_URL!);
    const keys = await redis.keys(`${PREFIX}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });
  return [a, b];
}

describe('rate limits shared through Redis', { skip: !REDIS_URL && 'needs REDIS_URL' }, () => {
  test('two instances share one per-key window: 60 + 60 pass, the 121st on either is 429', async () => {
    const [a, b] = await twoInstances();
    await seed(a.db, 'hub_r');
    const { key } = await createKey(a.db, { hubId: 'hub_r', name: 'shared window' });

    for (let i = 1; i <= 60; i++) {
      const response = await a.hubGet('/playbook-opt-ins?limit=1', key);
      assert.equal(response.status, 200, `A #${i}: ${JSON.stringify(response.body)}`);
      assert.equal(response.headers.ratelimit, `"per-key";r=${120 - i};t=60`, `A #${i}`);
    }
    for (let i = 1; i <= 60; i++) {
      const response = await b.hubGet('/playbook-opt-ins?limit=1', key);
      assert.equal(response.status, 200, `B #${i}: ${JSON.stringify(response.body)}`);
      // B continues where A left off: the window is shared, not per instance.
      assert.equal(response.headers.ratelimit, `"per-key";r=${60 - i};t=60`, `B #${i}`);
    }

    for (const [name, app] of [
      ['A', a],
      ['B', b],
    ] as const) {
      const refused = await app.hubGet('/playbook-opt-ins?limit=1', key);
      assert.equal(refused.status, 429, `${name}: ${JSON.stringify(refused.body)}`);
      assert.equal(refused.body.error, 'rate_limited');
      assert.match(String(refused.headers['retry-after']), /^\d+$/);
      const retryAfter = Number(refused.headers['retry-after']);
      assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
      assert.equal(refused.headers['ratelimit-policy'], '"per-key";q=120;w=60');
      assert.match(String(refused.headers.ratelimit), /^"per-key";r=0;t=\d+$/);
    }

    // Another key of the same hub has its own window.
    const other = await createKey(a.db, { hubId: 'hub_r', name: 'fresh window' });
    const fresh = await b.hubGet('/playbook-opt-ins?limit=1', other.key);
    assert.equal(fresh.status, 200);
    assert.equal(fresh.headers.ratelimit, '"per-key";r=119;t=60');
  });

  test('the 20/min limit of /opt-in-summary is shared too, REST and MCP alike', async () => {
    const [a, b] = await twoInstances();
    await seed(a.db, 'hub_s');
    const { key } = await createKey(a.db, { hubId: 'hub_s', name: 'summary' });
    for (let i = 1; i <= 10; i++) {
      assert.equal((await a.hubGet('/opt-in-summary', key)).status, 200, `A #${i}`);
    }
    for (let i = 1; i <= 9; i++) {
      assert.equal((await b.hubGet('/opt-in-summary', key)).status, 200, `B #${i}`);
    }
    // The 20th, as an MCP tool call on instance A.
    const call = (app: TestApp) =>
      app.app.fastify.inject({
        method: 'POST',
        url: '/v1/hub/mcp',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        payload: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_opt_in_summary', arguments: {} } },
      });
    const twentieth = await call(a);
    assert.equal(twentieth.statusCode, 200, twentieth.body);
    assert.notEqual(twentieth.json().result.isError, true, twentieth.body);
    const overMcp = await call(b);
    assert.equal(overMcp.json().result.isError, true, overMcp.body);
    assert.match(overMcp.json().result.content[0].text, /rate_limited/);
    const overRest = await a.hubGet('/opt-in-summary', key);
    assert.equal(overRest.status, 429);
    assert.match(String(overRest.headers.ratelimit), /"opt-in-summary";r=0;t=\d+/);
    // Only that operation is exhausted.
    assert.equal((await b.hubGet('/playbook-opt-ins', key)).status, 200);
  });
});

describe('304s through Redis', { skip: !REDIS_URL && 'needs REDIS_URL' }, () => {
  test('a 304 reads the shared windows without counting: r stays where the other instance left it, and with the window full it is still a 304', async () => {
    const [a, b] = await twoInstances();
    await seed(a.db, 'hub_c');
    const { key } = await createKey(a.db, { hubId: 'hub_c', name: 'conditional' });
    const first = await a.hubGet('/opt-in-summary', key);
    assert.equal(first.status, 200);
    const etag = String(first.headers.etag);
    for (let i = 1; i <= 3; i++) {
      const again = await b.hubGet('/opt-in-summary', key, { 'if-none-match': etag });
      assert.equal(again.status, 304, `#${i}`);
      assert.equal(again.headers.ratelimit, '"per-key";r=119;t=60, "opt-in-summary";r=19;t=60', `#${i}: peeked on B, counted by A`);
    }
    for (let i = 2; i <= 120; i++) assert.equal((await (i % 2 ? a : b).hubGet('/playbook-opt-ins?limit=1', key)).status, 200, `#${i}`);
    const full = await a.hubGet('/opt-in-summary', key, { 'if-none-match': etag });
    assert.equal(full.status, 304);
    assert.match(String(full.headers.ratelimit), /^"per-key";r=0;t=\d+, "opt-in-summary";r=19;t=\d+$/);
    assert.equal((await b.hubGet('/opt-in-summary', key)).status, 429);
  });
});

describe('refused requests through Redis', { skip: !REDIS_URL && 'needs REDIS_URL' }, () => {
  test('a 429 consumes nothing from any window; after the window the full quota is back', async () => {
    const [a, b] = await twoInstances();
    await seed(a.db, 'hub_n');
    const { key } = await createKey(a.db, { hubId: 'hub_n', name: 'refused' });
    for (let i = 1; i <= 20; i++) {
      const r = await (i % 2 ? a : b).hubGet('/opt-in-summary', key);
      assert.equal(r.status, 200, `#${i}`);
      assert.equal(r.headers.ratelimit, `"per-key";r=${120 - i};t=60, "opt-in-summary";r=${20 - i};t=60`);
    }
    for (let i = 1; i <= 6; i++) {
      const refused = await (i % 2 ? a : b).hubGet('/opt-in-summary', key);
      assert.equal(refused.status, 429, `refused #${i}`);
      assert.equal(refused.headers.ratelimit, '"per-key";r=100;t=60, "opt-in-summary";r=0;t=60', `refused #${i}`);
    }
    // Nor does a tool call refused by the operation's limit (its POST's count is given back).
    const overMcp = await a.app.fastify.inject({
      method: 'POST',
      url: '/v1/hub/mcp',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      payload: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_opt_in_summary', arguments: {} } },
    });
    assert.match(overMcp.json().result.content[0].text, /rate_limited/);
    assert.equal((await b.hubGet('/playbook-opt-ins?limit=1', key)).headers.ratelimit, '"per-key";r=99;t=60');
    for (const app of [a, b]) app.clock.advance(60_001);
    const back = await a.hubGet('/opt-in-summary', key);
    assert.equal(back.status, 200);
    assert.equal(back.headers.ratelimit, '"per-key";r=119;t=60, "opt-in-summary";r=19;t=60');
  });
});

describe('Redis unreachable', () => {
  test('requests are still served, without waiting on Redis, and the limits are counted per instance', async () => {
    const { logger, lines } = captureLog();
    const limiter = new RedisRateLimiter('redis://127.0.0.1:1', { prefix: PREFIX, log: logger });
    const t = await startApp({ now: '2026-11-21T12:00:00.000Z', limiter, logger });
    cleanups.push(async () => {
      await t.close();
      await limiter.close();
    });
    await seed(t.db, 'hub_u');
    const { key } = await createKey(t.db, { hubId: 'hub_u', name: 'no redis' });

    const started = Date.now();
    for (let i = 1; i <= 25; i++) {
      const list = await t.hubGet('/playbook-opt-ins', key);
      assert.equal(list.status, 200, `#${i}: ${JSON.stringify(list.body)}`);
      assert.equal(list.body.data[0].id, 'oi_hub_u');
      if (i <= 20) assert.equal(list.headers.ratelimit, `"per-key";r=${121 - 2 * i};t=60`, `#${i}: counted`);
      // The 20/min limit of the summary holds on this instance.
      assert.equal((await t.hubGet('/opt-in-summary', key)).status, i <= 20 ? 200 : 429, `summary #${i}`);
    }
    assert.ok(Date.now() - started < 10_000, `50 requests took ${Date.now() - started} ms`);
    assert.equal(lines.filter((l) => /Redis unavailable/.test(l.msg)).length, 1, 'the outage is logged once');
    assert.equal(lines.filter((l) => /rate limiter unavailable/.test(l.msg)).length, 0, 'and not per request');

    // Authentication still works without the limiter: a wrong key is refused, not waved through.
    const refused = await t.hubGet('/playbook-opt-ins', fx.mistyped(key));
    assert.equal(refused.status, 401);
    assert.equal(refused.body.error, 'invalid_api_key');
  });
});
