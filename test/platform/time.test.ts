import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { parseDate, parseTimestamp } from '../../src/platform/time.ts';

test('timestamps: Z or an offset, seconds and fractions optional, truncated to milliseconds', () => {
  const cases: [string, string][] = [
    ['2026-11-01T10:00:00Z', '2026-11-01T10:00:00.000Z'],
    ['2026-11-01T10:00Z', '2026-11-01T10:00:00.000Z'],
    ['2026-11-01T10:00:00.5Z', '2026-11-01T10:00:00.500Z'],
    ['2026-11-01T10:00:00.123999999Z', '2026-11-01T10:00:00.123Z'],
    ['2026-11-01T10:00:00+02:00', '2026-11-01T08:00:00.000Z'],
    ['2026-11-01T01:00:00-0530', '2026-11-01T06:30:00.000Z'],
    ['2026-01-01T00:30:00+01:00', '2025-12-31T23:30:00.000Z'],
    ['2028-02-29T12:00:00Z', '2028-02-29T12:00:00.000Z'],
  ];
  for (const [text, iso] of cases) assert.equal(parseTimestamp(text)?.toISOString(), iso, text);
});

test('timestamps: anything else is refused', () => {
  for (const text of [
    '2026-11-01T10:00:00',
    '2026-11-01 10:00:00Z',
    '2026-11-01',
    '2026-02-29T10:00:00Z',
    '2026-13-01T10:00:00Z',
    '2026-11-31T10:00:00Z',
    '2026-11-01T24:00:00Z',
    '2026-11-01T10:60:00Z',
    '2026-11-01T10:00:60Z',
    '2026-11-01T10:00:00+24:00',
    '2026-11-01T10:00:00+01:60',
    '2026-11-01T10:00:00.Z',
    'yesterday',
    '',
    ' 2026-11-01T10:00:00Z',
    '0000-01-01T00:00:00Z',
    '1969-12-31T23:59:59Z',
    '1970-01-01T00:30:00+01:00',
    '9999-12-31T23:30:00-01:00',
    '0001-01-01T00:00:00Z',
  ]) {
    assert.equal(parseTimestamp(text), undefined, text);
  }
});

test('dates: real calendar days only', () => {
  assert.equal(parseDate('2026-11-20')?.toISOString(), '2026-11-20T00:00:00.000Z');
  assert.equal(parseDate('2024-02-29')?.toISOString(), '2024-02-29T00:00:00.000Z');
  assert.equal(parseDate('1970-01-01')?.toISOString(), '1970-01-01T00:00:00.000Z');
  assert.equal(parseDate('9999-12-31')?.toISOString(), '9999-12-31T00:00:00.000Z');
  for (const text of [
    '0099-01-01',
    '0001-01-01',
    '0000-01-01',
    '1969-12-31',
    '2026-02-29',
    '2026-02-30',
    '2026-04-31',
    '2026-00-10',
    '2026-11-00',
    '2026-1-01',
    '20261120',
    '2026-11-20T00:00:00Z',
  ]) {
    assert.equal(parseDate(text), undefined, text);
  }
});

test('property: any instant written with any offset parses back to that instant', () => {
  fc.assert(
    fc.property(
      fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('9999-12-30T00:00:00Z'), noInvalidDate: true }),
      fc.integer({ min: -23 * 60 - 59, max: 23 * 60 + 59 }),
      (instant, offset) => {
        const local = new Date(instant.getTime() + offset * 60_000).toISOString().slice(0, 23);
        const sign = offset < 0 ? '-' : '+';
        const abs = Math.abs(offset);
        const text = `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
        assert.equal(parseTimestamp(text)?.getTime(), instant.getTime(), text);
      },
    ),
  );
});
