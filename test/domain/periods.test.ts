import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { periodRanges } from '../../src/domain/periods.ts';

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
    fc.assert(
      fc.property(
        fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }),
        fc.constantFrom('today', 'yesterday', 'last_7_days', 'last_30_days' as const),
        (now, period) => {
          const { current, prior } = periodRanges(period, now);
          const days = (r: { startDate: string; endDate: string }) => (Date.parse(r.endDate) - Date.parse(r.startDate)) / 86_400_000 + 1;
          assert.equal(days(current), { today: 1, yesterday: 1, last_7_days: 7, last_30_days: 30 }[period]);
          assert.equal(days(prior), days(current));
          assert.equal(Date.parse(current.startDate) - Date.parse(prior.endDate), 86_400_000);
        },
      ),
    );
  });
});
