// A known key's verdict rides along with the request's own query (HubApiGuard.whileAdmitted):
// nothing a Hub API route does may be answered before that verdict. Every REST route is checked,
// each way it can answer (200, 304, 400), and the entry point itself with work that never
// carries the verdict.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { UsageRecorder } from '../../src/domain/api-keys/usage-recorder.ts';
import { createKey, revokeKey } from '../../src/domain/api-keys/api-key.service.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { MemoryRateLimiter } from '../../src/platform/rate-limit.ts';
import { HubApiGuard, type Admission } from '../../src/surfaces/hub-api/guard.ts';
import { hubOperations } from '../../src/surfaces/hub-api/operations.ts';
import { refusalOf } from '../../src/surfaces/shared/errors.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import * as fx from '../support/world.ts';

/** A query value the route's schema refuses (400), from the first parameter it declares; none for a route without parameters. */
function refusedQuery(input: { properties: Record<string, { type?: unknown; maxLength?: number }> }): string | undefined {
  const [name, schema] = Object.entries(input.properties)[0] ?? [];
  if (!name || !schema) return undefined;
  const value = schema.type === 'integer' ? 'x' : schema.maxLength ? 'x'.repeat(schema.maxLength + 1) : 'not-a-valid-value';
  return `?${name}=${value}`;
}

const routes = hubOperations.flatMap((op) => (op.rest ? [{ path: op.rest.path, refused: refusedQuery(op.input) }] : []));

describe('every Hub API route answers only after the key verdict', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp({ limiter: 'unlimited' });
    await fx.account(t.db, 'acc_1');
  });
  after(async () => t?.close());

  test('there are routes to check', () => {
    assert.ok(routes.length >= 3, JSON.stringify(routes));
    assert.ok(routes.some((r) => r.refused !== undefined));
  });

  for (const change of ['revoked', 'suspended'] as const) {
    test(`a key admitted before, then ${change}: no route answers 200, 304 or 400 — each gets the verdict`, async () => {
      const hubId = `h_${change}`;
      await fx.hub(t.db, hubId, 'acc_1');
      await fx.workspace(t.db, hubId, `${hubId}_w`);
      await fx.playbook(t.db, hubId, `${hubId}_p`);
      await fx.optIns(t.db, [
        { id: `${hubId}_o`, hubId, workspaceId: `${hubId}_w`, playbookId: `${hubId}_p`, optedInAt: '2026-11-01T00:00:00Z' },
      ]);
      // One key per request: a refused key is forgotten, and its next request reads the verdict first.
      const cases: { path: string; headers: Record<string, string>; key: string; keyId: string }[] = [];
      for (const route of routes) {
        const plain = await createKey(t.db, { hubId, name: `${route.path} plain` });
        const ok = await t.hubGet(route.path, plain.key);
        assert.equal(ok.status, 200, `${route.path}: ${JSON.stringify(ok.body)}`);
        cases.push({ path: route.path, headers: {}, key: plain.key, keyId: plain.id });
        const conditional = await createKey(t.db, { hubId, name: `${route.path} conditional` });
        const headers = { 'if-none-match': String(ok.headers.etag) };
        assert.equal((await t.hubGet(route.path, conditional.key, headers)).status, 304, route.path);
        cases.push({ path: route.path, headers, key: conditional.key, keyId: conditional.id });
        if (!route.refused) continue;
        const refused = await createKey(t.db, { hubId, name: `${route.path} refused` });
        assert.equal((await t.hubGet(route.path + route.refused, refused.key)).status, 400, route.path + route.refused);
        cases.push({ path: route.path + route.refused, headers: {}, key: refused.key, keyId: refused.id });
      }

      // Each key is now known to the instance: its verdict rides along with the request's query.
      if (change === 'revoked') for (const { keyId } of cases) await revokeKey(t.db, keyId);
      else await t.db.kysely.updateTable('hubs').set({ suspended: true }).where('id', '=', hubId).execute();
      const [status, error] = change === 'revoked' ? [401, 'invalid_api_key'] : [403, 'hub_access_suspended'];
      for (const { path, headers, key } of cases) {
        const answer = await t.hubGet(path, key, headers);
        assert.equal(answer.status, status, `${path} ${JSON.stringify(headers)}: ${JSON.stringify(answer.body)}`);
        assert.equal(answer.body.error, error, path);
      }
    });
  }
});

describe('HubApiGuard.whileAdmitted: the one way to ride along', () => {
  let db: TestDb;
  let limiter: MemoryRateLimiter;
  let usage: UsageRecorder;
  let probe: FastifyInstance;
  /** One key per kind of work: a refused key is forgotten, and the next request reads its verdict first. */
  const keys = new Map<string, { key: string; id: string }>();
  /** What each kind of work did before its answer was given back or refused. */
  const ran: string[] = [];

  before(async () => {
    db = await createTestDb();
    await fx.account(db, 'acc_1');
    await fx.hub(db, 'h1', 'acc_1');
    limiter = new MemoryRateLimiter();
    usage = new UsageRecorder(db);
    const guard = new HubApiGuard({ db, limiter, usage, clock: systemClock });
    probe = Fastify({ logger: false });
    probe.setErrorHandler((error, _request, reply) => {
      const refused = refusalOf(error);
      return refused ? reply.code(refused.status).send(refused.body()) : reply.code(500).send({ error: String(error) });
    });
    // Work that never carries the verdict: no query at all, a query that is not a prepared
    // statement (Kysely), and work that fails before any query.
    const works: Record<string, (admission: Admission) => Promise<unknown>> = {
      none: async () => 'answered without a query',
      kysely: async (admission) => (await sql<{ one: number }>`SELECT 1 AS one`.execute(admission.db.kysely)).rows,
      fails: async () => {
        throw new Error('work failed');
      },
    };
    for (const [name, work] of Object.entries(works)) {
      keys.set(name, await createKey(db, { hubId: 'h1', name }));
      probe.get(`/${name}`, (request, reply) =>
        guard.whileAdmitted(request, reply, {}, async (admission) => {
          ran.push(name);
          return { answer: await work(admission) };
        }),
      );
    }
    await probe.ready();
  });
  after(async () => {
    await probe?.close();
    await usage?.close().catch(() => {});
    await limiter?.close();
    await db?.drop();
  });

  test('a revoked key is refused whatever the work did, and the work did run (provisionally)', async () => {
    const get = (name: string) =>
      probe.inject({ method: 'GET', url: `/${name}`, headers: { authorization: `Bearer ${keys.get(name)!.key}` } });
    assert.equal((await get('none')).statusCode, 200);
    assert.equal((await get('kysely')).statusCode, 200);
    assert.equal((await get('fails')).statusCode, 500);
    for (const { id } of keys.values()) await revokeKey(db, id);
    ran.length = 0;
    for (const name of ['none', 'kysely', 'fails']) {
      const answer = await get(name);
      assert.equal(answer.statusCode, 401, `${name}: ${answer.body}`);
      assert.equal(answer.json().error, 'invalid_api_key', name);
    }
    assert.deepEqual(ran, ['none', 'kysely', 'fails'], 'each ran with the key known: its verdict rode along');
  });
});
