import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { MemoryRateLimiter } from '../../src/platform/rate-limit.ts';
import {
  conditionsOf,
  entityTag,
  entityTagOfBody,
  evaluateConditions,
  representationTag,
  tagForCoding,
  type ContentCoding,
  type Validator,
} from '../../src/platform/validators.ts';

const NOW = new Date('2026-11-24T12:00:00.500Z');
const conditions = (headers: Record<string, string>) => conditionsOf(headers, NOW);

describe('entity tags', () => {
  test('are strong, quoted, and differ whenever a part differs (including its position)', () => {
    fc.assert(
      fc.property(fc.array(fc.string(), { maxLength: 5 }), fc.array(fc.string(), { maxLength: 5 }), (a, b) => {
        const [ta, tb] = [entityTag(...a), entityTag(...b)];
        assert.match(ta, /^"[A-Za-z0-9_-]{22}"$/);
        assert.equal(ta === tb, JSON.stringify(a) === JSON.stringify(b));
      }),
    );
    // A part boundary is not text: ('ab', '') and ('a', 'b') are different states.
    assert.notEqual(entityTag('ab', ''), entityTag('a', 'b'));
    assert.notEqual(entityTag(null), entityTag('null'));
    assert.notEqual(entityTag(undefined), entityTag(''));
    assert.equal(entityTagOfBody(['{"a":', Buffer.from('1}')]), entityTagOfBody(['{"a":1}']));
  });
});

describe('conditional request headers', () => {
  const current: Validator = { etag: entityTag('state', 1), lastModified: new Date('2026-11-24T09:30:15.250Z') };
  const older = entityTag('state', 0);
  const gzipTag = tagForCoding(current.etag, 'gzip');
  /** The verdict for these headers on `current`, its representation selected by `coding`. */
  const verdict = (headers: Record<string, string>, coding?: ContentCoding, validator = current) =>
    evaluateConditions(conditions(headers)!, validator, representationTag(validator, coding));

  test("If-None-Match: the selected representation's tag (strong or weak, alone or in a list) is 304; anything else, another coding's tag too, is the full answer", () => {
    const noneMatch = (header: string, coding?: ContentCoding) => verdict({ 'if-none-match': header }, coding);
    assert.equal(noneMatch(current.etag), 'not-modified');
    assert.equal(noneMatch(`W/${current.etag}`), 'not-modified');
    assert.equal(noneMatch(gzipTag, 'gzip'), 'not-modified');
    assert.equal(noneMatch(`${older}, ${tagForCoding(current.etag, 'br')}`, 'br'), 'not-modified');
    assert.equal(noneMatch('*'), 'not-modified');
    // A strong tag names exact bytes: the identity body's tag is not the gzip body's, nor the reverse (RFC 9110 §8.8.3.3).
    assert.equal(noneMatch(current.etag, 'gzip'), 'full');
    assert.equal(noneMatch(gzipTag), 'full');
    assert.equal(noneMatch(gzipTag, 'br'), 'full');
    assert.equal(noneMatch(older), 'full');
    assert.equal(noneMatch(`W/${older}`), 'full');
    assert.equal(noneMatch(tagForCoding(older, 'zstd'), 'zstd'), 'full');
    assert.equal(noneMatch('"something-else"'), 'full');
    assert.equal(noneMatch(`${current.etag.slice(0, -1)}-deflate"`), 'full');
  });

  test('If-Match: strong comparison with the selected representation, else 412; `*` always holds; it is decided before If-None-Match', () => {
    const match = (header: string, coding?: ContentCoding) => verdict({ 'if-match': header }, coding);
    assert.equal(match(current.etag), 'full');
    assert.equal(match(`${older}, ${gzipTag}`, 'gzip'), 'full');
    assert.equal(match('*'), 'full');
    assert.equal(match(older), 'precondition-failed');
    assert.equal(match(`W/${current.etag}`), 'precondition-failed', 'a weak tag never matches strongly (RFC 9110 §8.8.3.2)');
    assert.equal(match(current.etag, 'gzip'), 'precondition-failed', "the identity body's tag is not the gzip body's");
    assert.equal(verdict({ 'if-match': older, 'if-none-match': current.etag }), 'precondition-failed');
    assert.equal(verdict({ 'if-match': current.etag, 'if-none-match': current.etag }), 'not-modified');
  });

  test('If-Unmodified-Since: 412 once Last-Modified is later, to the second; ignored with If-Match or without a Last-Modified', () => {
    const unmodified = (header: string, validator = current) => verdict({ 'if-unmodified-since': header }, undefined, validator);
    assert.equal(unmodified('Tue, 24 Nov 2026 09:30:15 GMT'), 'full');
    assert.equal(unmodified('Tue, 24 Nov 2026 09:30:14 GMT'), 'precondition-failed');
    assert.equal(unmodified('Tue, 24 Nov 2026 09:30:14 GMT', { etag: current.etag }), 'full');
    assert.equal(verdict({ 'if-match': current.etag, 'if-unmodified-since': 'Tue, 24 Nov 2026 09:30:14 GMT' }), 'full');
  });

  test("a server tag that happens to end like a coding's suffix is not taken for another tag's coding", () => {
    const endsInBr: Validator = { etag: '"aaaaaaaaaaaaaaaaaaa-br"' };
    const noneMatch = (header: string, coding?: ContentCoding) => verdict({ 'if-none-match': header }, coding, endsInBr);
    assert.equal(noneMatch('"aaaaaaaaaaaaaaaaaaa-br"'), 'not-modified');
    assert.equal(noneMatch('"aaaaaaaaaaaaaaaaaaa-br-gzip"', 'gzip'), 'not-modified');
    assert.equal(noneMatch('"aaaaaaaaaaaaaaaaaaa"'), 'full', 'another representation');
  });

  test('malformed headers are ignored as if absent, never thrown', () => {
    const malformed = ['abc', '"unterminated', 'W/', '"a" "b"', '"a",, junk', `"${'x'.repeat(10_000)}`, '"a\u0001"', ''];
    for (const header of malformed) {
      assert.equal(conditions({ 'if-none-match': header }), undefined, JSON.stringify(header.slice(0, 30)));
      assert.equal(conditions({ 'if-match': header }), undefined, JSON.stringify(header.slice(0, 30)));
    }
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), fc.string({ maxLength: 60 }), fc.string({ maxLength: 200 }), (inm, ims, im) => {
        const parsed = conditionsOf({ 'if-none-match': inm, 'if-modified-since': ims, 'if-match': im, 'if-unmodified-since': ims }, NOW);
        if (parsed) evaluateConditions(parsed, current, current.etag);
      }),
    );
  });

  test('If-Modified-Since: an IMF-fixdate, not in the future, a real day; only without If-None-Match', () => {
    const since = (header: string) => conditions({ 'if-modified-since': header });
    assert.deepEqual(since('Tue, 24 Nov 2026 09:30:15 GMT'), { modifiedSince: new Date('2026-11-24T09:30:15Z') });
    for (const header of [
      'yesterday',
      'Tue, 24 Nov 2026 09:30:15 UTC',
      '2026-11-24T09:30:15Z',
      'Wed, 25 Nov 2026 09:30:15 GMT',
      'Tue, 31 Feb 2026 09:30:15 GMT',
      'Tue, 24 Nov 2026 24:00:00 GMT',
    ]) {
      assert.equal(since(header), undefined, header);
    }
    assert.equal(
      verdict({ 'if-none-match': older, 'if-modified-since': 'Tue, 24 Nov 2026 11:00:00 GMT' }),
      'full',
      'If-None-Match decides when both are sent',
    );
    assert.equal(
      conditions({ 'if-none-match': 'junk', 'if-modified-since': 'Tue, 24 Nov 2026 11:00:00 GMT' }),
      undefined,
      'a malformed If-None-Match is ignored, and If-Modified-Since with it (RFC 9110 §13.1.3)',
    );
  });

  test('If-Modified-Since matches a Last-Modified no later than it, to the second', () => {
    const since = (header: string, validator = current) => verdict({ 'if-modified-since': header }, undefined, validator);
    assert.equal(since('Tue, 24 Nov 2026 09:30:15 GMT'), 'not-modified', 'the same second, though Last-Modified has 250 ms more');
    assert.equal(since('Tue, 24 Nov 2026 10:00:00 GMT'), 'not-modified');
    assert.equal(since('Tue, 24 Nov 2026 09:30:14 GMT'), 'full');
    assert.equal(since('Tue, 24 Nov 2026 10:00:00 GMT', { etag: current.etag }), 'full', 'no Last-Modified: no match');
  });
});

describe('peeking at rate windows', () => {
  test('says what a hit would, and counts nothing', async () => {
    const limiter = new MemoryRateLimiter();
    const windows = [
      { key: 'k', limit: 3, windowMs: 60_000 },
      { key: 'op:k', limit: 1, windowMs: 60_000 },
    ];
    await limiter.hitAll(windows, 1_000);
    const peeked = await limiter.peekAll(windows, 2_000);
    assert.deepEqual(
      peeked.map((d) => [d.allowed, d.remaining, d.resetSeconds]),
      [
        [true, 2, 59],
        [false, 0, 59],
      ],
    );
    assert.equal(await limiter.count('k', 60_000, 2_000), 1, 'a peek is not a hit');
    await limiter.close();
  });
});
