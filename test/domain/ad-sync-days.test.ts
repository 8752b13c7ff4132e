// UTC days of account-local hours (DST included) and the one rounding rule for money.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { microsToCents } from '../../src/domain/ad-sync/money.ts';
import { localDate, localHourToUtc, UtcDayMapper } from '../../src/domain/ad-sync/utc-days.ts';

const LA = 'America/Los_Angeles';
const ZONES = [
  LA,
  'Europe/Berlin',
  'Australia/Lord_Howe',
  'Asia/Kolkata',
  'America/St_Johns',
  'Pacific/Chatham',
  'UTC',
  'America/Sao_Paulo',
  'Asia/Tokyo',
];

/** The local date and hour of an instant, read by Intl independently of the code under test. */
function wallHour(at: number, zone: string): { date: string; hour: number } {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
    })
      .formatToParts(new Date(at))
      .map((p) => [p.type, p.value]),
  );
  return { date: `${parts.year}-${parts.month}-${parts.day}`, hour: Number(parts.hour) };
}

test('every real instant on the hour maps back from its local date and hour (a repeated hour to its first occurrence)', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: Date.UTC(2020, 0, 1) / 3_600_000, max: Date.UTC(2030, 0, 1) / 3_600_000 }),
      fc.constantFrom(...ZONES),
      (hours, zone) => {
        const at = hours * 3_600_000;
        const { date, hour } = wallHour(at, zone);
        // Zones whose offset is not whole hours start their local hours between UTC hours: compare the local hour's start.
        const back = localHourToUtc(date, hour, zone).getTime();
        const local = wallHour(back, zone);
        assert.deepEqual(local, { date, hour }, `${zone} ${new Date(at).toISOString()}`);
        assert.ok(
          back <= at && at - back < 2 * 3_600_000,
          `${zone} ${new Date(at).toISOString()} came back as ${new Date(back).toISOString()}`,
        );
        // A repeated hour comes back as its first occurrence: an hour earlier is another local hour.
        assert.notDeepEqual(wallHour(back - 3_600_000, zone), { date, hour });
      },
    ),
    { numRuns: 3_000 },
  );
});

test('Los Angeles: the 23-hour and the 25-hour day put each hour on the right UTC day', () => {
  const utc = (date: string, hour: number) => localHourToUtc(date, hour, LA).toISOString();
  // 8 March 2026 (spring forward, 23 hours): 00–01 PST (UTC−8), 03–23 PDT (UTC−7).
  assert.equal(utc('2026-03-08', 1), '2026-03-08T09:00:00.000Z');
  assert.equal(utc('2026-03-08', 3), '2026-03-08T10:00:00.000Z');
  assert.equal(utc('2026-03-08', 16), '2026-03-08T23:00:00.000Z');
  assert.equal(utc('2026-03-08', 17), '2026-03-09T00:00:00.000Z');
  assert.equal(utc('2026-03-07', 15), '2026-03-07T23:00:00.000Z');
  assert.equal(utc('2026-03-07', 16), '2026-03-08T00:00:00.000Z');
  // 1 November 2026 (fall back, 25 hours): 01:00 happens twice; the bucket is placed at the first (PDT).
  assert.equal(utc('2026-11-01', 0), '2026-11-01T07:00:00.000Z');
  assert.equal(utc('2026-11-01', 1), '2026-11-01T08:00:00.000Z');
  assert.equal(utc('2026-11-01', 2), '2026-11-01T10:00:00.000Z');
  assert.equal(utc('2026-11-01', 15), '2026-11-01T23:00:00.000Z');
  assert.equal(utc('2026-11-01', 16), '2026-11-02T00:00:00.000Z');
  assert.equal(utc('2026-10-31', 16), '2026-10-31T23:00:00.000Z');
  assert.equal(utc('2026-10-31', 17), '2026-11-01T00:00:00.000Z');
  const days = new UtcDayMapper(LA);
  assert.equal(days.utcDay('2026-11-01', 16), '2026-11-02');
  assert.equal(days.utcDay('2026-11-01', null), '2026-11-01', 'a row without hours counts on its local date');
  assert.equal(localDate(new Date('2026-11-21T07:59:00Z'), LA), '2026-11-20');
  assert.equal(localDate(new Date('2026-11-21T08:00:00Z'), LA), '2026-11-21');
});

test('micros become cents once, half away from zero', () => {
  assert.equal(microsToCents(5_000n), 1n);
  assert.equal(microsToCents(4_999n), 0n);
  assert.equal(microsToCents(15_000n), 2n);
  assert.equal(microsToCents(12_340_000n), 1_234n);
  assert.equal(microsToCents(-5_000n), -1n);
  assert.equal(microsToCents(-4_999n), 0n);
  fc.assert(
    fc.property(fc.bigInt({ min: 0n, max: 10n ** 15n }), (m) => {
      const c = microsToCents(m);
      assert.ok(c * 10_000n - 5_000n <= m && m < c * 10_000n + 5_000n);
    }),
  );
});
