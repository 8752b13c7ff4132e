import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { decodeOptInCursor, encodeOptInCursor, parseSince } from '../../src/domain/opt-ins/opt-in.ts';
import { configureCursorKey, decodeCursor, encodeCursor } from '../../src/platform/cursor.ts';

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
