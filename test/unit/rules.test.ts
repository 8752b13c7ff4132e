import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { connect } from '../../src/db/database.ts';
import { generateKey, isWellFormedKey, KEY_PREFIX, visibleStart } from '../../src/domain/api-keys/api-key.ts';
import { HubCatalogCache, type HubCatalog } from '../../src/domain/opt-ins/hub-catalog.ts';
import { decodeOptInCursor, encodeOptInCursor, parseSince } from '../../src/domain/opt-ins/opt-in.ts';
import { periodRanges } from '../../src/domain/periods.ts';
import { spendFreshness } from '../../src/domain/spend/spend.ts';
import { MemoryRateLimiter } from '../../src/platform/rate-limit.ts';
import { UsageRecorder } from '../../src/domain/api-keys/usage-recorder.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { ApiError } from '../../src/surfaces/shared/errors.ts';
import { HubApiGuard } from '../../src/surfaces/hub-api/guard.ts';
import { configureCursorKey, decodeCursor, encodeCursor } from '../../src/platform/cursor.ts';
import { fromQueryText } from '../../src/surfaces/operation.ts';
import { nestsDeeperThan, RouteMethods } from '../../src/surfaces/rest.ts';
import { Type } from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';

describe('periods (UTC days, injected instants)', () => {
  const at = (iso: string) => new Date(iso);
  test('just before and just after 00:00 UTC', () => {
    assert.deepEqual(periodRanges('today', at('2026-11-21T23:59:59.999Z')), {
      current: { startDate: '2026-11-21', endDate: '2026-11-21' },
      prior: { startDate: '2026-11-20', endDate: '2026-11-20' },
    });
    assert.deepEqual(periodRanges('today', at('2026-11-22T00:00:00.000Z')), {
      current: { startDate: '2026-11-22', endDate: '2026-11-22' },
      prior: { startDate: '2026-11-21', endDate: '2026-11-21' },
    });
    assert.deepEqual(periodRanges('yesterday', at('2026-11-22T00:00:00.000Z')).current, { startDate: '2026-11-21', endDate: '2026-11-21' });
    assert.deepEqual(periodRanges('last_7_days', at('2026-11-21T23:59:59.999Z')), {
      current: { startDate: '2026-11-15', endDate: '2026-11-21' },
      prior: { startDate: '2026-11-08', endDate: '2026-11-14' },
    });
  });
  test('across month, year and leap-day boundaries', () => {
    assert.deepEqual(periodRanges('last_30_days', at('2026-01-01T00:00:00.000Z')), {
      current: { startDate: '2025-12-03', endDate: '2026-01-01' },
      prior: { startDate: '2025-11-03', endDate: '2025-12-02' },
    });
    assert.deepEqual(periodRanges('yesterday', at('2028-03-01T00:30:00Z')).current, { startDate: '2028-02-29', endDate: '2028-02-29' });
  });
  test('prior is always the same length and ends the day before current starts', () => {
    fc.assert(fc.property(fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }), fc.constantFrom('today', 'yesterday', 'last_7_days', 'last_30_days' as const), (now, period) => {
      const { current, prior } = periodRanges(period, now);
      const days = (r: { startDate: string; endDate: string }) => (Date.parse(r.endDate) - Date.parse(r.startDate)) / 86_400_000 + 1;
      assert.equal(days(current), { today: 1, yesterday: 1, last_7_days: 7, last_30_days: 30 }[period]);
      assert.equal(days(prior), days(current));
      assert.equal(Date.parse(current.startDate) - Date.parse(prior.endDate), 86_400_000);
    }));
  });
});

describe('spend freshness (first match wins)', () => {
  const now = new Date('2026-11-21T12:00:00Z');
  const synced = (hoursAgo: number) => new Date(now.getTime() - hoursAgo * 3_600_000);
  const cases: [string, Parameters<typeof spendFreshness>[0], string, Date | null][] = [
    ['no accounts', [], 'no_accounts', null],
    ['syncing beats failed', [{ syncState: 'failed', lastSyncedAt: synced(1) }, { syncState: 'syncing', lastSyncedAt: null }], 'syncing', synced(1)],
    ['failed beats never synced', [{ syncState: 'failed', lastSyncedAt: synced(1) }, { syncState: 'idle', lastSyncedAt: null }], 'failed', synced(1)],
    ['never synced', [{ syncState: 'idle', lastSyncedAt: null }], 'never_synced', null],
    ['stale after 6 hours', [{ syncState: 'idle', lastSyncedAt: synced(1) }, { syncState: 'idle', lastSyncedAt: synced(6.01) }], 'stale', synced(6.01)],
    ['fresh at exactly 6 hours', [{ syncState: 'idle', lastSyncedAt: synced(6) }], 'fresh', synced(6)],
  ];
  for (const [label, accounts, freshness, asOf] of cases) {
    test(label, () => assert.deepEqual(spendFreshness(accounts, now), { freshness, asOf }));
  }
});

describe('Hub API keys', () => {
  test('have 256 bits of randomness, a prefix and a checksum that catches any one-character typo', () => {
    const key = generateKey();
    assert.match(key, /^hubops_[0-9A-Za-z]{49}$/);
    assert.ok(isWellFormedKey(key));
    assert.equal(visibleStart(key), key.slice(0, KEY_PREFIX.length + 4));
    fc.assert(fc.property(fc.integer({ min: KEY_PREFIX.length, max: key.length - 1 }), fc.constantFrom(...'0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'), (i, c) => {
      fc.pre(key[i] !== c);
      assert.equal(isWellFormedKey(key.slice(0, i) + c + key.slice(i + 1)), false);
    }), { numRuns: 500 });
    assert.equal(isWellFormedKey(`${key}x`), false);
    assert.equal(isWellFormedKey(key.slice(0, -1)), false);
  });

  test('a key with a wrong checksum is refused without a database read', async () => {
    // A pool pointing nowhere: any query would fail, so a clean 401 proves none was made.
    const unreachable = connect('postgres://nobody@127.0.0.1:1/none');
    const limiter = new MemoryRateLimiter();
    const guard = new HubApiGuard({ db: unreachable, limiter, usage: new UsageRecorder(unreachable), clock: systemClock });
    const reply = { headers: () => reply } as unknown as FastifyReply;
    const attempt = (authorization: string) =>
      guard.authenticate({ ip: '192.0.2.1', headers: { authorization } } as FastifyRequest, reply, { rideAlong: true });
    const key = generateKey();
    const mistyped = key.slice(0, 10) + (key[10] === 'a' ? 'b' : 'a') + key.slice(11);
    for (const header of [`Bearer ${mistyped}`, 'Bearer nonsense']) {
      await assert.rejects(attempt(header), (error) => error instanceof ApiError && error.status === 401);
    }
    await assert.rejects(attempt(`Bearer ${key}`), (error) => !(error instanceof ApiError), 'a well-formed key does reach the database');
    await limiter.close();
    await unreachable.close();
  });
});

describe('cursors and since', () => {
  test('cursors round-trip and anything else is refused', () => {
    fc.assert(fc.property(fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }), fc.string({ minLength: 1, maxLength: 64 }), (at, id) => {
      const cursor = { at: at.toISOString().replace('Z', '123Z'), id };
      assert.deepEqual(decodeOptInCursor(encodeOptInCursor(cursor)), cursor);
    }));
    for (const bad of ['', 'abc', 'WyJ2MiJd', Buffer.from('["v1","2026-01-01","x"]').toString('base64url'), Buffer.from('{"a":1}').toString('base64url')]) {
      assert.throws(() => decodeOptInCursor(bad), /cursor/, bad);
    }
  });
  test('signed cursors: any one-character edit is refused, and another key refuses them all', () => {
    const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.';
    fc.assert(fc.property(fc.string({ minLength: 1, maxLength: 64 }), fc.nat(), fc.constantFrom(...ALPHABET), (id, at, c) => {
      const cursor = encodeCursor('posts', [id]);
      assert.deepEqual(decodeCursor(cursor, 'posts', 1), [id]);
      const i = at % cursor.length;
      if (cursor[i] === c) return;
      assert.throws(() => decodeCursor(cursor.slice(0, i) + c + cursor.slice(i + 1), 'posts', 1), /cursor/);
    }));
    const cursor = encodeCursor('posts', ['p1']);
    configureCursorKey(Buffer.from('another server'));
    assert.throws(() => decodeCursor(cursor, 'posts', 1), /cursor/);
  });
  test('since takes Z, offsets with and without colon, and dates; refuses the rest', () => {
    assert.equal((parseSince('2026-11-02')).toISOString(), '2026-11-02T00:00:00.000Z');
    assert.equal((parseSince('2026-11-02T10:00:00+02:00')).toISOString(), '2026-11-02T08:00:00.000Z');
    assert.equal((parseSince('2026-11-02T10:00:00+0200')).toISOString(), '2026-11-02T08:00:00.000Z');
    assert.equal((parseSince('2026-11-02T10:00Z')).toISOString(), '2026-11-02T10:00:00.000Z');
    for (const bad of ['2026-11-02T10:00:00', '2026-13-01', '2026-02-29', 'now', '2026-11-02T25:00:00Z', '1700000000']) {
      assert.throws(() => parseSince(bad), /since/, bad);
    }
  });
});

describe('rolling-window rate limiter', () => {
  test('allows a request exactly when fewer than `limit` allowed requests fall in the last window', async () => {
    await fc.assert(fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 5_000 }), { maxLength: 80 }), fc.integer({ min: 1, max: 6 }), async (gaps, limit) => {
      const limiter = new MemoryRateLimiter();
      const windowMs = 1_000;
      const allowed: number[] = [];
      let now = 0;
      for (const gap of gaps) {
        now += gap % 700;
        const expected = allowed.filter((t) => t > now - windowMs).length < limit;
        const decision = await limiter.hit('k', limit, windowMs, now);
        assert.equal(decision.allowed, expected);
        if (expected) allowed.push(now);
        assert.equal(decision.remaining, Math.max(0, limit - allowed.filter((t) => t > now - windowMs).length));
      }
      await limiter.close();
    }));
  });
});

describe('hub catalog cache', () => {
  test('finds a catalog only at its version, and drops the least recently used hubs past its bound', () => {
    // Model: the hubs in order of last use; the bound counts workspaces + playbooks.
    const op = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), hub: fc.nat(5), version: fc.nat(2), size: fc.nat(6) }),
      fc.record({ kind: fc.constant('get' as const), hub: fc.nat(5), version: fc.nat(2) }),
    );
    fc.assert(fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
      const max = 10;
      const cache = new HubCatalogCache(max);
      let model: { hub: string; catalog: HubCatalog }[] = [];
      const size = (c: HubCatalog) => c.workspaces.size + c.playbooks.size;
      for (const o of ops) {
        const hub = `hub${o.hub}`;
        if (o.kind === 'set') {
          const catalog: HubCatalog = { version: String(o.version), workspaces: new Map(Array.from({ length: o.size }, (_, i) => [`w${i}`, '{}'])), playbooks: new Map([['p', '{}']]) };
          cache.set(hub, catalog);
          model = [...model.filter((m) => m.hub !== hub), { hub, catalog }];
          while (model.length > 1 && model.reduce((n, m) => n + size(m.catalog), 0) > max) model.shift();
        } else {
          const found = model.find((m) => m.hub === hub && m.catalog.version === String(o.version));
          assert.equal(cache.get(hub, String(o.version)), found?.catalog);
          if (found) model = [...model.filter((m) => m !== found), found];
        }
      }
    }));
  });
});

describe('configuration', () => {
  test('defaults, and one clear error naming the variable', () => {
    const config = loadConfig({});
    assert.equal(config.port, 3000);
    assert.equal(config.baseUrl, 'http://localhost:3000');
    assert.equal(config.siteUrl, 'http://localhost:3000');
    assert.equal(config.demo, true);
    assert.equal(loadConfig({ DATABASE_URL: 'postgres://x@h/db' }).demo, false);
    for (const [env, name] of [[{ PORT: 'abc' }, 'PORT'], [{ BASE_URL: 'nope' }, 'BASE_URL'], [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'], [{ HUBOPS_DEMO: 'yes' }, 'HUBOPS_DEMO'], [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'], [{ REDIS_URL: 'http://x' }, 'REDIS_URL']] as const) {
      assert.throws(() => loadConfig(env), (error: Error) => error instanceof ConfigError && error.message.startsWith(name));
    }
    assert.throws(() => loadConfig({ DATABASE_URL: 'bad://user:s3cret@host' }), (error: Error) => !error.message.includes('s3cret'));
  });
});

describe('strict query text and bounded input', () => {
  const schema = Type.Object({ limit: Type.Integer(), flag: Type.Boolean(), name: Type.String() });
  test('integers only as plain decimal digits, booleans only true/false, strings untouched', () => {
    fc.assert(fc.property(fc.oneof(fc.string(), fc.integer().map(String), fc.constantFrom('0x10', '1e2', '0b11', '0o7', '1.0', '+5', '05', '5.', ' 5', '5 ', '-0', '')), (text) => {
      const out = fromQueryText(schema, { limit: text, flag: text, name: text });
      const plain = /^(0|-?[1-9][0-9]*)$/.test(text) && Number.isSafeInteger(Number(text));
      assert.equal(out.limit, plain ? Number(text) : text, text);
      assert.equal(out.flag, text === 'true' ? true : text === 'false' ? false : text);
      assert.equal(out.name, text);
    }));
  });
  test('depth is measured without recursion', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    assert.equal(nestsDeeperThan(deep, 32), true);
    assert.equal(nestsDeeperThan({ a: [{ b: [] }] }, 4), false);
    assert.equal(nestsDeeperThan({ a: [{ b: [] }] }, 3), true);
  });
  test('405 needs a path some route answers; wildcards say nothing', () => {
    const routes = new RouteMethods();
    routes.add('/posts', 'GET');
    routes.add('/posts', 'POST');
    routes.add('/posts/:id', ['GET', 'HEAD']);
    routes.add('/v1/hub/*', 'OPTIONS');
    assert.deepEqual(routes.allowed('/posts'), ['GET', 'HEAD', 'POST']);
    assert.deepEqual(routes.allowed('/posts/'), ['GET', 'HEAD', 'POST']);
    assert.deepEqual(routes.allowed('/posts/p%FF1'), ['GET', 'HEAD']);
    assert.deepEqual(routes.allowed('/posts/p1/x'), []);
    assert.deepEqual(routes.allowed('/v1/hub/anything'), []);
  });
});
