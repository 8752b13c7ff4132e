import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { MemoryRateLimiter } from '../../src/platform/rate-limit.ts';
import { conditionsOf, entityTag, entityTagOfBody, matchingTag, tagForCoding, type Validator } from '../../src/platform/validators.ts';

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

  test('If-None-Match: the current tag (strong, weak, or a coding of it, alone or in a list) matches; anything else does not', () => {
    const match = (header: string) => matchingTag(conditions({ 'if-none-match': header })!, current);
    assert.equal(match(current.etag), current.etag);
    assert.equal(match(`W/${current.etag}`), current.etag);
    assert.equal(match(tagForCoding(current.etag, 'gzip')), tagForCoding(current.etag, 'gzip'), 'the tag as the client holds it');
    assert.equal(match(`${older}, ${tagForCoding(current.etag, 'br')}`), tagForCoding(current.etag, 'br'));
    assert.equal(match('*'), current.etag);
    assert.equal(match(older), undefined);
    assert.equal(match(`W/${older}`), undefined);
    assert.equal(match(tagForCoding(older, 'zstd')), undefined);
    assert.equal(match('"something-else"'), undefined);
    // A suffix only counts when it is a coding of ours.
    assert.equal(match(`${current.etag.slice(0, -1)}-deflate"`), undefined);
  });

  test("a server tag that happens to end like a coding's suffix is not taken for another tag's coding", () => {
    const endsInBr: Validator = { etag: '"aaaaaaaaaaaaaaaaaaa-br"' };
    const match = (header: string) => matchingTag(conditions({ 'if-none-match': header })!, endsInBr);
    assert.equal(match('"aaaaaaaaaaaaaaaaaaa-br"'), '"aaaaaaaaaaaaaaaaaaa-br"');
    assert.equal(match('"aaaaaaaaaaaaaaaaaaa-br-gzip"'), '"aaaaaaaaaaaaaaaaaaa-br-gzip"');
    assert.equal(match('"aaaaaaaaaaaaaaaaaaa"'), undefined, 'another representation');
  });

  test('malformed headers are ignored as if absent, never thrown', () => {
    const malformed = ['abc', '"unterminated', 'W/', '"a" "b"', '"a",, junk', `"${'x'.repeat(10_000)}`, '"a\u0001"', ''];
    for (const header of malformed) assert.equal(conditions({ 'if-none-match': header }), undefined, JSON.stringify(header.slice(0, 30)));
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), fc.string({ maxLength: 60 }), (inm, ims) => {
        const parsed = conditionsOf({ 'if-none-match': inm, 'if-modified-since': ims }, NOW);
        if (parsed) matchingTag(parsed, current);
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
    const both = conditions({ 'if-none-match': older, 'if-modified-since': 'Tue, 24 Nov 2026 11:00:00 GMT' })!;
    assert.equal(matchingTag(both, current), undefined, 'If-None-Match decides when both are sent');
    assert.equal(
      conditions({ 'if-none-match': 'junk', 'if-modified-since': 'Tue, 24 Nov 2026 11:00:00 GMT' }),
      undefined,
      'a malformed If-None-Match is ignored, and If-Modified-Since with it (RFC 9110 §13.1.3)',
    );
  });

  test('If-Modified-Since matches a Last-Modified no later than it, to the second', () => {
    const match = (header: string) => matchingTag(conditions({ 'if-modified-since': header })!, current);
    assert.equal(match('Tue, 24 Nov 2026 09:30:15 GMT'), current.etag, 'the same second, though Last-Modified has 250 ms more');
    assert.equal(match('Tue, 24 Nov 2026 10:00:00 GMT'), current.etag);
    assert.equal(match('Tue, 24 Nov 2026 09:30:14 GMT'), undefined);
    assert.equal(
      matchingTag(conditions({ 'if-modified-since': 'Tue, 24 Nov 2026 10:00:00 GMT' })!, { etag: current.etag }),
      undefined,
      'no Last-Modified: no match',
    );
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
