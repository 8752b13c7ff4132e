import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { requestFingerprint } from '../../src/domain/idempotency/idempotency.ts';
import { ListCursor } from '../../src/domain/keyset.ts';
import { OPT_IN_CURSOR } from '../../src/domain/opt-ins/opt-in.ts';
import { CursorKey } from '../../src/platform/cursor.ts';
import { startApp } from '../support/app.ts';
import { seedEdgeWorld, type EdgeWorld } from '../support/edge-world.ts';
import { textOf } from '../support/mcp-client.ts';

// Issue 10, items 4, 5, 6, 8 and 9 through the whole stack (real HTTP, real PostgreSQL, the real
// MCP SDK client): one input rule on every surface, one date range, bounded JSON depth, strict
// parsing and signed cursors. Each refusal is a 400 with our body naming the field, and changes
// nothing.

let world: EdgeWorld;
before(async () => {
  world = await seedEdgeWorld(await startApp({ listen: true, limiter: 'unlimited' }));
});
after(async () => {
  await world?.close();
});

const WRITTEN = ['posts', 'post_media', 'post_deliveries', 'idempotency_keys'];

/** Asserts a 400 invalid_request in our shape whose issues name `field`. */
function assertRefused(response: { status: number; body: any }, field: string, what: string): void {
  assert.equal(response.status, 400, `${what}: ${JSON.stringify(response.body)}`);
  assert.equal(response.body.error, 'invalid_request', what);
  assert.equal(typeof response.body.message, 'string', what);
  assert.ok(
    response.body.issues.some((i: { field: string }) => i.field === field),
    `${what}: issues should name ${field}: ${JSON.stringify(response.body.issues)}`,
  );
}

const json = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: typeof body === 'string' ? body : JSON.stringify(body),
});

describe('forbidden characters (NUL, controls, lone surrogates, noncharacters) on every surface', () => {
  const BAD = ['%00', '%01', '%7F', '%EF%BF%BE', 'a%00b'];

  test('in every query parameter and path id of the main API and the Hub API: 400 naming it', async () => {
    const probes: [string, string, (path: string) => Promise<{ status: number; body: any }>][] = [];
    for (const param of ['workspaceId', 'status', 'cursor', 'from', 'to', 'limit']) probes.push([`/posts?${param}=`, param, world.main]);
    for (const param of ['workspaceId', 'cursor'])
      probes.push([`/media?${param}=`, param, world.main], [`/channels?${param}=`, param, world.main]);
    for (const path of ['/analytics/organic', '/analytics/paid', '/analytics/google-reviews']) {
      for (const param of ['workspaceId', 'from', 'to']) probes.push([`${path}?${param}=`, param, world.main]);
    }
    probes.push(['/workspaces?cursor=', 'cursor', world.main], ['/playbooks?cursor=', 'cursor', world.main]);
    for (const param of ['playbookId', 'since', 'status', 'cursor']) probes.push([`/playbook-opt-ins?${param}=`, param, world.hub]);
    for (const [prefix, field, get] of probes) {
      for (const bad of BAD) assertRefused(await get(`${prefix}${bad}`), field, `${prefix}${bad}`);
    }
    for (const path of ['/posts/', '/media/', '/workspaces/']) {
      for (const bad of BAD) assertRefused(await world.main(`${path}${bad}`), 'id', `${path}${bad}`);
    }
    // A lone surrogate can only arrive as text inside JSON (UTF-8 cannot carry one).
    assertRefused(await world.main('/posts', json('{"text":"\\ud800","status":"draft","workspaceId":"w1"}')), 'text', 'lone surrogate');
  });

  test('in POST /posts bodies, values and keys alike: 400, and nothing is written', async () => {
    const before = await world.counts(WRITTEN);
    assertRefused(await world.main('/posts', json({ text: 'hi\u0000', status: 'draft', workspaceId: 'w1' })), 'text', 'NUL in text');
    assertRefused(
      await world.main('/posts', json({ text: 'hi', status: 'draft', workspaceId: 'w1', channelIds: ['ch_fb\u0000'] })),
      'channelIds.0',
      'NUL in an array item',
    );
    assertRefused(
      await world.main('/posts', json({ text: 'hi', status: 'draft', workspaceId: 'w1', 'x\u0000': 1 }, { 'idempotency-key': 'nul-key' })),
      'x\u0000',
      'NUL in a key',
    );
    assert.deepEqual(await world.counts(WRITTEN), before);
  });

  test('in MCP tool arguments, on both MCP servers: a clean invalid_request tool error naming the field', async () => {
    const main = await world.mcpMain();
    const hub = await world.mcpHub();
    try {
      const cases: [typeof main, string, Record<string, unknown>, string][] = [
        [main, 'get_post', { id: 'p\u0000' }, 'id'],
        [main, 'list_posts', { workspaceId: '\u0000' }, 'workspaceId'],
        [main, 'create_post', { text: 'hi', status: 'draft', workspaceId: 'w1', channelIds: ['\ud800'] }, 'channelIds.0'],
        [main, 'organic_analytics', { workspaceId: '\uffff' }, 'workspaceId'],
        [hub, 'list_playbook_opt_ins', { playbookId: '\u0000' }, 'playbookId'],
      ];
      for (const [client, name, args, field] of cases) {
        const tools = (await client.listTools()).tools.map((t) => t.name);
        if (!tools.includes(name)) assert.fail(`no tool ${name} in ${tools.join(', ')}`);
        const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
        assert.equal(result.isError, true, name);
        const text = textOf(result);
        assert.match(text, /^invalid_request: /, `${name}: ${text}`);
        assert.ok(text.includes(`${field}: must not contain control characters`), `${name}: ${text}`);
      }
    } finally {
      await main.close();
      await hub.close();
    }
  });
});

describe('dates: one range, 1970-01-01 to 9999-12-31', () => {
  test('dates and timestamps outside it are refused naming the field; a derived from never leaves it', async () => {
    for (const [path, field] of [
      ['/analytics/organic?to=0001-01-01', 'to'],
      ['/analytics/paid?from=0000-12-01', 'from'],
      ['/analytics/organic?from=1969-12-31', 'from'],
      ['/posts?from=0000-01-01T00:00:00Z', 'from'],
      ['/posts?to=1969-12-31T23:59:59Z', 'to'],
      ['/analytics/google-reviews?to=10000-01-01', 'to'],
    ] as const)
      assertRefused(await world.main(path), field, path);
    assertRefused(await world.hub('/playbook-opt-ins?since=0000-01-01T00:00:00Z'), 'since', 'since in year 0');
    const early = await world.main('/analytics/organic?to=1970-01-05');
    assert.equal(early.status, 200, JSON.stringify(early.body));
    assert.deepEqual(
      [early.body.startDate, early.body.endDate],
      ['1970-01-01', '1970-01-05'],
      'the default from is clamped to the first day',
    );
  });

  test('a cursor dated in year 0 is refused even when signed by us', () => {
    const key = new CursorKey(randomBytes(32));
    assert.equal(ListCursor.read(OPT_IN_CURSOR, key, key.sign('opt-ins', ['0000-01-01T00:00:00.000000Z', 'o1'])), undefined);
    assert.deepEqual(ListCursor.read(OPT_IN_CURSOR, key, key.sign('opt-ins', ['1970-01-01T00:00:00.000000Z', 'o1']))?.after, {
      at: '1970-01-01T00:00:00.000000Z',
      id: 'o1',
    });
  });
});

describe('bounded JSON depth', () => {
  const nested = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

  test('POST /posts with an Idempotency-Key and an extra property nested 5,000 levels: 400 before anything recursive runs', async () => {
    const before = await world.counts(WRITTEN);
    for (const depth of [33, 5_000, 100_000]) {
      const body = `{"text":"deep","status":"draft","workspaceId":"w1","extra":${nested(depth)}}`;
      assertRefused(await world.main('/posts', json(body, { 'idempotency-key': `deep-${depth}` })), '(body)', `depth ${depth}`);
    }
    assert.deepEqual(await world.counts(WRITTEN), before);
    // At the limit it is read (and refused only for the unknown property's sake, if at all).
    const atLimit = await world.main(
      '/posts',
      json(`{"text":"deep","status":"draft","workspaceId":"w1","extra":${nested(31)}}`, { 'idempotency-key': 'deep-ok' }),
    );
    assert.notEqual(atLimit.body.issues?.[0]?.field, '(body)', JSON.stringify(atLimit.body));
    assert.ok(atLimit.status < 500);
  });

  test('the request fingerprint is depth-safe on its own', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 200_000; i++) deep = { a: deep, b: [i] };
    assert.equal(requestFingerprint('create_post', deep).length, 32);
    assert.deepEqual(
      requestFingerprint('x', { a: 1, b: [{ d: 2, c: 3 }] }),
      requestFingerprint('x', { b: [{ c: 3, d: 2 }], a: 1 }),
      'key order does not matter',
    );
    assert.notDeepEqual(requestFingerprint('x', { a: [1, 2] }), requestFingerprint('x', { a: [2, 1] }), 'array order does');
  });
});

describe('strict parsing', () => {
  test('limit takes plain decimal integers 1–500 only', async () => {
    for (const bad of [
      '0x10',
      '1e2',
      '0b11',
      '0o7',
      '1.0',
      '%2B5',
      '05',
      '5.',
      '%205',
      '5%20',
      '0',
      '501',
      '-1',
      '',
      'abc',
      '99999999999999999999',
    ]) {
      assertRefused(await world.main(`/posts?limit=${bad}`), 'limit', `/posts?limit=${bad}`);
      assertRefused(await world.hub(`/playbook-opt-ins?limit=${bad}`), 'limit', `hub limit=${bad}`);
    }
    assertRefused(await world.main('/posts?limit=1&limit=2'), 'limit', 'repeated');
    for (const good of ['1', '5', '500']) {
      assert.equal((await world.main(`/posts?limit=${good}`)).status, 200, good);
      assert.equal((await world.hub(`/playbook-opt-ins?limit=${good}`)).status, 200, good);
    }
  });

  test('JSON bodies are never coerced: "text": 16 and "publishNow": "true" are refused', async () => {
    const before = await world.counts(WRITTEN);
    assertRefused(await world.main('/posts', json({ text: 16, status: 'draft', workspaceId: 'w1' })), 'text', 'number for text');
    assertRefused(
      await world.main('/posts', json({ text: 'x', status: 'scheduled', publishNow: 'true', workspaceId: 'w1', channelIds: ['ch_fb'] })),
      'publishNow',
      'string for boolean',
    );
    assertRefused(
      await world.main('/posts', json({ text: 'x', status: 'draft', workspaceId: 'w1', channelIds: 'ch_fb' })),
      'channelIds',
      'scalar for array',
    );
    assert.deepEqual(await world.counts(WRITTEN), before);
  });

  test('MCP arguments are never coerced either', async () => {
    const main = await world.mcpMain();
    try {
      const result = (await main.callTool({ name: 'list_posts', arguments: { limit: '5' } })) as CallToolResult;
      assert.equal(result.isError, true);
      assert.match(textOf(result), /^invalid_request: .*limit: must be an integer/);
    } finally {
      await main.close();
    }
  });
});

describe('signed cursors', () => {
  /**
   * Well-formed forgeries of `cursor`: its position edited by one character (re-encoded, the
   * signature kept), and its signature edited by one character.
   */
  function forgeries(cursor: string): string[] {
    const [payload, tag] = cursor.split('.') as [string, string | undefined];
    const position = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as string[];
    const out: string[] = [];
    for (const index of [2, position.length - 1]) {
      const part = position[index]!;
      const edited = position.with(index, part.slice(0, -1) + (part.endsWith('1') ? '2' : '1'));
      out.push([Buffer.from(JSON.stringify(edited)).toString('base64url'), ...(tag === undefined ? [] : [tag])].join('.'));
    }
    if (tag !== undefined)
      for (const i of [0, 10, tag.length - 1]) out.push(`${payload}.${tag.slice(0, i)}${tag[i] === 'A' ? 'B' : 'A'}${tag.slice(i + 1)}`);
    return out;
  }

  test('a real cursor edited by one character is a 400 on every list', async () => {
    const lists: [string, (path: string) => Promise<{ status: number; body: any }>][] = [
      ['/playbook-opt-ins?limit=1', world.hub],
      ['/media?limit=1', world.main],
      ['/posts?limit=1', world.main],
      ['/workspaces?limit=1', world.main],
      ['/playbooks?limit=1', world.main],
      ['/channels?limit=1', world.main],
    ];
    for (const [path, get] of lists) {
      const first = await get(path);
      assert.equal(first.status, 200, `${path}: ${JSON.stringify(first.body)}`);
      const cursor = first.body.nextCursor as string;
      assert.equal(typeof cursor, 'string', `${path} should issue a cursor`);
      assert.equal((await get(`${path}&cursor=${cursor}`)).status, 200, `${path}: its own cursor works`);
      for (const forged of forgeries(cursor)) assertRefused(await get(`${path}&cursor=${forged}`), 'cursor', `${path} forged ${forged}`);
    }
  });

  test('a cursor of one list is refused by another', async () => {
    const cursor = (await world.main('/posts?limit=1')).body.nextCursor as string;
    assertRefused(await world.main(`/media?limit=1&cursor=${cursor}`), 'cursor', 'posts cursor on media');
  });
});
