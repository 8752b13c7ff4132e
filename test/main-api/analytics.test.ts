import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { divideRounded, earnedMediaValueCents, ratio } from '../../src/domain/analytics/metrics.ts';
import { importNdjson } from '../../src/domain/import/import.service.ts';
import { FixedClock } from '../../src/platform/clock.ts';
import { refusalOf } from '../../src/surfaces/shared/errors.ts';
import { call, caller, principal, tempMediaStore, type TempMediaStore } from '../support/content-world.ts';
import { createTestDb, type TestDb } from '../support/db.ts';

// The analytics reports against figures computed by hand, the range rules, tenancy, and a
// property: totals always equal the sum of the rows.

const NOW = '2026-11-21T12:00:00.000Z';
let db: TestDb;
let media: TempMediaStore;
const clock = new FixedClock(NOW);
const as = (hubId: string, workspaceId: string | null) => caller(db, clock, media.store, principal(hubId, workspaceId, 'usr_x'));
const RANGE = { from: '2026-11-10', to: '2026-11-12' };
const ndjson = (lines: unknown[]) => lines.map((l) => JSON.stringify(l)).join('\n');

const organic = (workspaceId: string, date: string, platform: string, m: number[]) => {
  const [posts, impressions, reach, likes, comments, shares, saves] = m;
  return { type: 'organicMetrics', workspaceId, date, platform, posts, impressions, reach, likes, comments, shares, saves };
};
const paid = (workspaceId: string, date: string, platform: string, campaignId: string, campaignName: string, m: number[]) => {
  const [spendCents, impressions, clicks, results] = m;
  return { type: 'paidMetrics', workspaceId, date, platform, campaignId, campaignName, spendCents, impressions, clicks, results };
};
const reviews = (workspaceId: string, date: string, newReviews: Record<string, number>, responded: number) => ({
  type: 'reviewDay',
  workspaceId,
  date,
  newReviews,
  responded,
});

before(async () => {
  db = await createTestDb();
  media = await tempMediaStore();
  await importNdjson(
    db,
    ndjson([
      { type: 'account', id: 'acc_1', name: 'Acme' },
      { type: 'hub', id: 'hub_a', accountId: 'acc_1', name: 'A' },
      { type: 'hub', id: 'hub_b', accountId: 'acc_1', name: 'B' },
      { type: 'workspace', id: 'ws_1', hubId: 'hub_a', name: 'One' },
      { type: 'workspace', id: 'ws_2', hubId: 'hub_a', name: 'Two' },
      { type: 'workspace', id: 'ws_3', hubId: 'hub_a', name: 'Three' },
      { type: 'workspace', id: 'ws_b', hubId: 'hub_b', name: 'Bee' },
      { type: 'hubCpm', hubId: 'hub_a', platform: 'instagram', cpmCents: 800 },
      { type: 'hubCpm', hubId: 'hub_a', platform: 'facebook', cpmCents: 500 },
      { type: 'hubCpm', hubId: 'hub_b', platform: 'facebook', cpmCents: 9_999 },
      organic('ws_1', '2026-11-10', 'instagram', [1, 1000, 600, 30, 5, 3, 2]),
      organic('ws_1', '2026-11-11', 'instagram', [0, 500, 300, 10, 1, 0, 1]),
      organic('ws_1', '2026-11-11', 'facebook', [1, 2001, 1500, 20, 4, 6, 0]),
      organic('ws_1', '2026-11-12', 'linkedin', [1, 999, 800, 8, 2, 1, 0]),
      organic('ws_1', '2026-09-01', 'instagram', [9, 99_999, 9_999, 999, 99, 9, 9]),
      organic('ws_2', '2026-11-10', 'facebook', [2, 333, 0, 0, 0, 0, 0]),
      organic('ws_b', '2026-11-10', 'facebook', [5, 5_000, 5_000, 50, 5, 5, 5]),
      paid('ws_1', '2026-11-10', 'meta', 'camp_a', 'Camp A v1', [1000, 50_000, 500, 20]),
      paid('ws_1', '2026-11-11', 'meta', 'camp_a', 'Camp A v2', [2001, 100_000, 1000, 30]),
      paid('ws_1', '2026-11-11', 'google_ads', 'camp_g', 'Search', [500, 2000, 0, 0]),
      paid('ws_2', '2026-11-12', 'meta', 'camp_a', 'Camp A v3', [333, 10_000, 3, 1]),
      paid('ws_b', '2026-11-12', 'meta', 'camp_b', 'Bee', [7777, 1, 1, 1]),
      // Out of date order on purpose: the running totals must not care.
      reviews('ws_1', '2026-11-12', { 1: 1 }, 1),
      reviews('ws_1', '2025-01-01', { 5: 10, 4: 5, 1: 1 }, 12),
      reviews('ws_1', '2026-11-20', { 5: 4 }, 0),
      reviews('ws_1', '2026-11-10', { 5: 2, 3: 1 }, 1),
      reviews('ws_b', '2026-11-11', { 1: 9 }, 9),
    ]),
  );
});
after(async () => {
  await db.drop();
  await media.remove();
});

const zeroOrganic = {
  posts: 0,
  impressions: 0,
  reach: 0,
  likes: 0,
  comments: 0,
  shares: 0,
  saves: 0,
  engagement: 0,
  engagementRate: null,
  earnedMediaValueCents: 0,
};

describe('organic', () => {
  test('per workspace and totals, against hand-computed figures', async () => {
    const report = await call('organic_analytics', as('hub_a', null), RANGE);
    assert.deepEqual(report, {
      timezone: 'UTC',
      startDate: '2026-11-10',
      endDate: '2026-11-12',
      cpm: [
        { platform: 'facebook', cpmCents: 500 },
        { platform: 'instagram', cpmCents: 800 },
      ],
      workspaces: [
        // EMV: 1,500 × 800 + 2,001 × 500 + 999 × 0 (no LinkedIn CPM) = 2,200,500 / 1000 = 2,200.5 → 2,201.
        {
          workspace: { _id: 'ws_1', name: 'One' },
          posts: 3,
          impressions: 4500,
          reach: 3200,
          likes: 68,
          comments: 12,
          shares: 10,
          saves: 3,
          engagement: 93,
          engagementRate: 0.0291,
          earnedMediaValueCents: 2201,
        },
        {
          workspace: { _id: 'ws_2', name: 'Two' },
          posts: 2,
          impressions: 333,
          reach: 0,
          likes: 0,
          comments: 0,
          shares: 0,
          saves: 0,
          engagement: 0,
          engagementRate: null,
          earnedMediaValueCents: 167,
        },
        { workspace: { _id: 'ws_3', name: 'Three' }, ...zeroOrganic },
      ],
      totals: {
        posts: 5,
        impressions: 4833,
        reach: 3200,
        likes: 68,
        comments: 12,
        shares: 10,
        saves: 3,
        engagement: 93,
        engagementRate: 0.0291,
        earnedMediaValueCents: 2368,
      },
    });
  });

  test('one platform; a member sees only their workspace; another hub sees its own', async () => {
    const instagram = await call('organic_analytics', as('hub_a', null), { ...RANGE, platform: 'instagram' });
    assert.deepEqual([instagram.workspaces[0].impressions, instagram.workspaces[0].earnedMediaValueCents], [1500, 1200]);
    const member = await call('organic_analytics', as('hub_a', 'ws_2'), RANGE);
    assert.deepEqual(
      member.workspaces.map((w: { workspace: { _id: string } }) => w.workspace._id),
      ['ws_2'],
    );
    assert.equal(member.totals.impressions, 333);
    assert.deepEqual(
      (await call('organic_analytics', as('hub_a', 'ws_2'), { ...RANGE, workspaceId: 'ws_1' })).workspaces,
      [],
      'outside the scope: nothing',
    );
    const other = await call('organic_analytics', as('hub_b', null), RANGE);
    assert.deepEqual([other.workspaces.length, other.totals.impressions, other.totals.earnedMediaValueCents], [1, 5000, 49_995]);
  });
});

describe('paid', () => {
  test('per workspace, per campaign and totals, against hand-computed figures', async () => {
    const report = await call('paid_analytics', as('hub_a', null), RANGE);
    assert.deepEqual(report.workspaces, [
      // CTR 1,500 / 152,000 = 0.00987 → 0.0099; CPC 3,501 / 1,500 = 2.33 → 2; per result 3,501 / 50 = 70.02 → 70.
      {
        workspace: { _id: 'ws_1', name: 'One' },
        spendCents: 3501,
        impressions: 152_000,
        clicks: 1500,
        ctr: 0.0099,
        cpcCents: 2,
        results: 50,
        costPerResultCents: 70,
      },
      {
        workspace: { _id: 'ws_2', name: 'Two' },
        spendCents: 333,
        impressions: 10_000,
        clicks: 3,
        ctr: 0.0003,
        cpcCents: 111,
        results: 1,
        costPerResultCents: 333,
      },
      {
        workspace: { _id: 'ws_3', name: 'Three' },
        spendCents: 0,
        impressions: 0,
        clicks: 0,
        ctr: null,
        cpcCents: null,
        results: 0,
        costPerResultCents: null,
      },
    ]);
    assert.deepEqual(report.campaigns, [
      {
        campaignId: 'camp_a',
        campaignName: 'Camp A v3',
        platform: 'meta',
        workspaces: 2,
        spendCents: 3334,
        impressions: 160_000,
        clicks: 1503,
        ctr: 0.0094,
        cpcCents: 2,
        results: 51,
        costPerResultCents: 65,
      },
      {
        campaignId: 'camp_g',
        campaignName: 'Search',
        platform: 'google_ads',
        workspaces: 1,
        spendCents: 500,
        impressions: 2000,
        clicks: 0,
        ctr: 0,
        cpcCents: null,
        results: 0,
        costPerResultCents: null,
      },
    ]);
    // CTR 1,503 / 162,000 = 0.00928 → 0.0093; CPC 3,834 / 1,503 = 2.55 → 3; per result 3,834 / 51 = 75.18 → 75.
    assert.deepEqual(report.totals, {
      spendCents: 3834,
      impressions: 162_000,
      clicks: 1503,
      ctr: 0.0093,
      cpcCents: 3,
      results: 51,
      costPerResultCents: 75,
    });
  });

  test('one platform; one workspace', async () => {
    const google = await call('paid_analytics', as('hub_a', null), { ...RANGE, platform: 'google_ads' });
    assert.deepEqual([google.totals.spendCents, google.campaigns.length], [500, 1]);
    const ws2 = await call('paid_analytics', as('hub_a', null), { ...RANGE, workspaceId: 'ws_2' });
    assert.deepEqual([ws2.workspaces.length, ws2.totals.spendCents, ws2.campaigns[0].workspaces], [1, 333, 1]);
  });
});

describe('Google reviews', () => {
  test('rating, count and distribution up to the end; new reviews and response rate within the range', async () => {
    const report = await call('google_review_summaries', as('hub_a', null), RANGE);
    assert.deepEqual(report.workspaces[0], {
      workspace: { _id: 'ws_1', name: 'One' },
      // All through 11-12: 1★ 2, 3★ 1, 4★ 5, 5★ 12 = 20 reviews, (2 + 3 + 20 + 60) / 20 = 4.25.
      averageRating: 4.25,
      reviewCount: 20,
      ratingDistribution: { 1: 2, 2: 0, 3: 1, 4: 5, 5: 12 },
      // New 11-10 … 11-12: 5★ 2, 3★ 1, 1★ 1 = 4, (10 + 3 + 1) / 4 = 3.5; 2 of them answered.
      newReviews: 4,
      newAverageRating: 3.5,
      newRatingDistribution: { 1: 1, 2: 0, 3: 1, 4: 0, 5: 2 },
      respondedReviews: 2,
      responseRate: 0.5,
    });
    const none = {
      averageRating: null,
      reviewCount: 0,
      ratingDistribution: { 1: 0, 2: 0, 3: 0, 4: 0, 5: 0 },
      newReviews: 0,
      newAverageRating: null,
      newRatingDistribution: { 1: 0, 2: 0, 3: 0, 4: 0, 5: 0 },
      respondedReviews: 0,
      responseRate: null,
    };
    assert.deepEqual(report.workspaces.slice(1), [
      { workspace: { _id: 'ws_2', name: 'Two' }, ...none },
      { workspace: { _id: 'ws_3', name: 'Three' }, ...none },
    ]);
    const { workspace: _, ...only } = report.workspaces[0];
    assert.deepEqual(report.totals, only, 'the other workspaces have none');
  });

  test('a day imported later, before the others, moves the totals and not the range', async () => {
    await importNdjson(db, ndjson([reviews('ws_1', '2026-11-01', { 2: 3 }, 0)]));
    const ws1 = (await call('google_review_summaries', as('hub_a', 'ws_1'), RANGE)).workspaces[0];
    assert.deepEqual([ws1.reviewCount, ws1.averageRating, ws1.ratingDistribution['2'], ws1.newReviews], [23, 3.96, 3, 4]);
    // Re-importing a day replaces it.
    await importNdjson(db, ndjson([reviews('ws_1', '2026-11-01', { 2: 1 }, 1)]));
    const again = (await call('google_review_summaries', as('hub_a', 'ws_1'), { from: '2026-11-01', to: '2026-11-01' })).workspaces[0];
    assert.deepEqual([again.reviewCount, again.newReviews, again.respondedReviews, again.responseRate], [17, 1, 1, 1]);
  });
});

describe('date ranges', () => {
  const refused = async (input: Record<string, unknown>) => {
    try {
      await call('paid_analytics', as('hub_a', null), input);
    } catch (error) {
      const answer = refusalOf(error);
      assert.ok(answer && answer.status === 400);
      return answer.issues!.map((i) => i.field);
    }
    assert.fail('expected 400');
  };
  test('default: the last 30 days, today included; from alone runs to today; to alone covers 30 days', async () => {
    const range = async (input: Record<string, unknown>) => {
      const r = await call('organic_analytics', as('hub_a', null), input);
      return [r.startDate, r.endDate];
    };
    assert.deepEqual(await range({}), ['2026-10-23', '2026-11-21']);
    assert.deepEqual(await range({ from: '2026-11-01' }), ['2026-11-01', '2026-11-21']);
    assert.deepEqual(await range({ to: '2026-11-10' }), ['2026-10-12', '2026-11-10']);
    assert.deepEqual(await range({ from: '2025-11-21', to: '2026-11-21' }), ['2025-11-21', '2026-11-21'], '366 days');
  });
  test('refused: over 366 days, to before from, not a real date', async () => {
    assert.deepEqual(await refused({ from: '2025-11-20', to: '2026-11-21' }), ['from']);
    assert.deepEqual(await refused({ from: '2026-11-12', to: '2026-11-10' }), ['to']);
    assert.deepEqual(await refused({ from: '2026-02-30', to: '11/12/2026' }), ['from', 'to']);
  });
});

test('money rounds half up; ratios to 4 decimals; EMV is exact beyond 2^53', () => {
  assert.deepEqual([divideRounded(5, 2), divideRounded(7, 3), divideRounded(8, 3), divideRounded(0, 7)], [3, 2, 3, 0]);
  assert.deepEqual([ratio(1, 3), ratio(2, 3), ratio(1, 0)], [0.3333, 0.6667, null]);
  assert.equal(earnedMediaValueCents(new Map([['x', 9_000_000_000_000]]), new Map([['x', 1_234]])), 11_106_000_000_000);
  assert.equal(
    earnedMediaValueCents(
      new Map([
        ['x', 1],
        ['y', 1],
      ]),
      new Map([
        ['x', 250],
        ['y', 250],
      ]),
    ),
    1,
    '0.5 rounds up once, not per platform',
  );
});

test('property: totals equal the sum of the rows, for any figures', async () => {
  let run = 0;
  const count = fc.integer({ min: 0, max: 100_000 });
  const day = fc.integer({ min: 1, max: 5 }).map((d) => `2026-11-0${d}`);
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.tuple(
          fc.integer({ min: 0, max: 2 }),
          day,
          fc.constantFrom('instagram', 'facebook', 'x'),
          fc.array(count, { minLength: 7, maxLength: 7 }),
        ),
        { maxLength: 12 },
      ),
      fc.array(
        fc.tuple(
          fc.integer({ min: 0, max: 2 }),
          day,
          fc.constantFrom('meta', 'google_ads'),
          fc.constantFrom('c1', 'c2'),
          fc.array(count, { minLength: 4, maxLength: 4 }),
        ),
        { maxLength: 12 },
      ),
      fc.array(
        fc.tuple(
          fc.integer({ min: 0, max: 2 }),
          fc.integer({ min: 1, max: 9 }).map((d) => `2026-1${d % 2}-0${d}`),
          fc.array(fc.integer({ min: 0, max: 50 }), { minLength: 5, maxLength: 5 }),
        ),
        { maxLength: 10 },
      ),
      fc.array(fc.integer({ min: 0, max: 5_000 }), { minLength: 3, maxLength: 3 }),
      async (organicRows, paidRows, reviewRows, cpms) => {
        run += 1;
        const hubId = `hub_p${run}`;
        const ws = (i: number) => `ws_p${run}_${i}`;
        const unique = <T>(rows: T[], key: (r: T) => string) => [...new Map(rows.map((r) => [key(r), r])).values()];
        await importNdjson(
          db,
          ndjson([
            { type: 'hub', id: hubId, accountId: 'acc_1', name: hubId },
            ...[0, 1, 2].map((i) => ({ type: 'workspace', id: ws(i), hubId, name: ws(i) })),
            ...['instagram', 'facebook', 'x'].map((platform, i) => ({ type: 'hubCpm', hubId, platform, cpmCents: cpms[i] })),
            ...unique(organicRows, ([w, d, p]) => `${w}${d}${p}`).map(([w, d, p, m]) => organic(ws(w), d, p, m)),
            ...unique(paidRows, ([w, d, p, c]) => `${w}${d}${p}${c}`).map(([w, d, p, c, m]) => paid(ws(w), d, p, c, c, m)),
            ...unique(reviewRows, ([w, d]) => `${w}${d}`).map(([w, d, n]) =>
              reviews(ws(w), d, { 1: n[0]!, 2: n[1]!, 3: n[2]!, 4: n[3]!, 5: n[4]! }, Math.floor(n.reduce((a, b) => a + b, 0) / 2)),
            ),
          ]),
        );
        const input = { from: '2026-11-01', to: '2026-11-05' };
        const sum = (rows: Record<string, unknown>[], key: string) => rows.reduce((total, r) => total + (r[key] as number), 0);
        const o = await call('organic_analytics', as(hubId, null), input);
        for (const key of ['posts', 'impressions', 'reach', 'likes', 'comments', 'shares', 'saves', 'engagement', 'earnedMediaValueCents'])
          assert.equal(o.totals[key], sum(o.workspaces, key), key);
        const p = await call('paid_analytics', as(hubId, null), input);
        for (const key of ['spendCents', 'impressions', 'clicks', 'results']) {
          assert.equal(p.totals[key], sum(p.workspaces, key), key);
          assert.equal(p.totals[key], sum(p.campaigns, key), key);
        }
        const r = await call('google_review_summaries', as(hubId, null), input);
        for (const key of ['reviewCount', 'newReviews', 'respondedReviews']) assert.equal(r.totals[key], sum(r.workspaces, key), key);
        for (const stars of ['1', '2', '3', '4', '5']) {
          assert.equal(
            r.totals.ratingDistribution[stars],
            r.workspaces.reduce((t: number, w: any) => t + w.ratingDistribution[stars], 0),
          );
          assert.equal(
            r.totals.newRatingDistribution[stars],
            r.workspaces.reduce((t: number, w: any) => t + w.newRatingDistribution[stars], 0),
          );
        }
      },
    ),
    { numRuns: 25 },
  );
});
