import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { idCursor, ListCursor } from '../../src/domain/keyset.ts';
import { OPT_IN_CURSOR, parseSince } from '../../src/domain/opt-ins/opt-in.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { CursorKey } from '../../src/platform/cursor.ts';
import type { JsonText } from '../../src/platform/json-text.ts';
import { hubOperations } from '../../src/surfaces/hub-api/operations.ts';
import { resultValue, type PreparedCall } from '../../src/surfaces/operation.ts';
import { InputValidator } from '../../src/surfaces/shared/inputs.ts';
import { createReportCaches } from '../../src/surfaces/shared/report-caches.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import * as fx from '../support/world.ts';

const key = new CursorKey(randomBytes(32));

describe('cursors and since', () => {
  test('cursors round-trip and anything else is refused', () => {
    fc.assert(
      fc.property(
        fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }),
        fc.string({ minLength: 1, maxLength: 64 }),
        (at, id) => {
          const position = { at: at.toISOString().replace('Z', '123Z'), id };
          assert.deepEqual(ListCursor.read(OPT_IN_CURSOR, key, ListCursor.first(OPT_IN_CURSOR, key).next(position))?.after, position);
        },
      ),
    );
    for (const bad of [
      '',
      'abc',
      'WyJ2MiJd',
      Buffer.from('["v1","2026-01-01","x"]').toString('base64url'),
      Buffer.from('{"a":1}').toString('base64url'),
      key.sign('opt-ins', ['2026-01-01T00:00:00Z']),
      key.sign('opt-ins', ['2026-01-01', 'x']),
      key.sign('posts', ['2026-01-01T00:00:00Z', 'x']),
    ]) {
      assert.equal(ListCursor.read(OPT_IN_CURSOR, key, bad), undefined, bad);
    }
  });
  test('signed cursors: any one-character edit is refused, and another key refuses them all', () => {
    const posts = idCursor('posts');
    const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.';
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 64 }), fc.nat(), fc.constantFrom(...ALPHABET), (id, at, c) => {
        const cursor = key.sign('posts', [id]);
        assert.equal(ListCursor.read(posts, key, cursor)?.after, id);
        const i = at % cursor.length;
        if (cursor[i] === c) return;
        assert.equal(ListCursor.read(posts, key, cursor.slice(0, i) + c + cursor.slice(i + 1)), undefined);
      }),
    );
    const cursor = key.sign('posts', ['p1']);
    assert.equal(ListCursor.read(posts, new CursorKey(Buffer.from('another server')), cursor), undefined);
  });
  test('since takes Z, offsets with and without colon, and dates; refuses the rest', () => {
    assert.equal(parseSince('2026-11-02').toISOString(), '2026-11-02T00:00:00.000Z');
    assert.equal(parseSince('2026-11-02T10:00:00+02:00').toISOString(), '2026-11-02T08:00:00.000Z');
    assert.equal(parseSince('2026-11-02T10:00:00+0200').toISOString(), '2026-11-02T08:00:00.000Z');
    assert.equal(parseSince('2026-11-02T10:00Z').toISOString(), '2026-11-02T10:00:00.000Z');
    for (const bad of ['2026-11-02T10:00:00', '2026-13-01', '2026-02-29', 'now', '2026-11-02T25:00:00Z', '1700000000']) {
      assert.throws(() => parseSince(bad), /since/, bad);
    }
  });
});

describe('a page reads its cursor once, at the edge', () => {
  let db: TestDb;
  before(async () => {
    db = await createTestDb();
    await fx.account(db, 'acc_1');
    await fx.hub(db, 'h1', 'acc_1');
    await fx.workspace(db, 'h1', 'w1');
    await fx.playbook(db, 'h1', 'p1');
    await fx.optIns(
      db,
      ['o1', 'o2', 'o3'].map((id, i) => ({
        id,
        hubId: 'h1',
        workspaceId: 'w1',
        playbookId: 'p1',
        optedInAt: `2026-11-0${i + 1}T00:00:00Z`,
      })),
    );
  });
  after(async () => db?.drop());

  /** A key that counts its verifications. */
  class CountingKey extends CursorKey {
    reads = 0;
    override read(text: string, kind: string): string[] | undefined {
      this.reads++;
      return super.read(text, kind);
    }
  }

  test('the opt-in page: one signature check for validation, validator and handler (a conditional miss)', async () => {
    const counting = new CountingKey(randomBytes(32));
    const inputs = new InputValidator(counting);
    const op = hubOperations.find((o) => o.name === 'list_playbook_opt_ins')!;
    const ctx = { db, clock: systemClock, hubId: 'h1', caches: createReportCaches() };
    const page = async (call: PreparedCall<typeof ctx>) =>
      (resultValue(await call(ctx)) as JsonText).value() as { data: { id: string }[]; nextCursor: string };
    const first = await page(op.prepare({ limit: 1 }, inputs));
    assert.equal(counting.reads, 0, 'the first page has no cursor to check');
    assert.equal(first.data.length, 1);

    const call = op.prepare({ limit: 1, cursor: first.nextCursor }, inputs);
    assert.equal(counting.reads, 1);
    await call.validator!(ctx);
    const second = await page(call);
    assert.equal(counting.reads, 1, 'the validator and the handler use the position validation read');
    assert.equal(second.data[0]?.id, 'o2');

    assert.throws(() => op.prepare({ cursor: `${first.nextCursor}x` }, inputs), /cursor/);
    assert.equal(counting.reads, 2);
  });
});
