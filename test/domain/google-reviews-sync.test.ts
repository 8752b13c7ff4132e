// Google reviews that come back by themselves, end to end below the surfaces: Business Profile
// locations connected to workspaces (the refresh token sealed, a consent without one refused),
// the review sync against the sandbox over loopback, and /analytics/google-reviews' summaries
// equal to a direct count of the sandbox's reviews — after the first read, after reviews are
// added, re-rated and answered (an hourly read is one page), and after a full read drops a
// removed review. Throttles, an unapproved project and a revoked login change no stored figure.
// A reconnect that leaves a connection unused deletes it with its refresh token; the reviews stay.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import {
  completeGoogleBusinessOAuth,
  connectBusinessLocations,
  listBusinessLocations,
  type GoogleBusinessDeps,
} from '../../src/domain/channels/google-business.service.ts';
import { createReviewSyncLoop, type ReviewSyncLoop } from '../../src/domain/reviews/review-sync.ts';
import { googleReviewSummaries } from '../../src/domain/reviews/review.service.ts';
import { createGoogleBusinessClient } from '../../src/integrations/google-business/client.ts';
import {
  startGoogleBusinessSandbox,
  type GoogleBusinessSandbox,
  type SandboxReview,
} from '../../src/integrations/google-business/sandbox.ts';
import { FixedClock } from '../../src/platform/clock.ts';
import { DomainError } from '../../src/platform/errors.ts';
import { Sealer, secretsKey } from '../../src/platform/sealing.ts';
import { REVIEW_FULL_READ_MS, REVIEW_SYNC_INTERVAL_MS } from '../../src/policy.ts';
import { principal } from '../support/content-world.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import { account, hub, workspace } from '../support/world.ts';

const clock = new FixedClock('2026-11-27T12:00:00Z');
let db: TestDb;
let sandbox: GoogleBusinessSandbox;
let deps: GoogleBusinessDeps;
let loop: ReviewSyncLoop;
let refreshToken: string;
const DOWNTOWN = 'accounts/101/locations/2001';
const RIVERSIDE = 'accounts/101/locations/2002';
const AIRPORT = 'accounts/102/locations/3001';
const WHOLE_HISTORY = { from: '2025-12-01', to: '2026-11-30' };

before(async () => {
  db = await createTestDb();
  sandbox = await startGoogleBusinessSandbox({
    now: () => clock.now(),
    locations: [
      { name: DOWNTOWN, title: 'Brewline Downtown', reviews: 130 },
      { name: RIVERSIDE, title: 'Brewline Riverside', reviews: 7 },
      { name: AIRPORT, title: 'Brewline Airport', reviews: 0 },
    ],
  });
  const client = createGoogleBusinessClient({
    businessUrl: sandbox.url,
    oauthUrl: sandbox.url,
    clientId: sandbox.clientId,
    clientSecret: sandbox.clientSecret,
    now: () => clock.now(),
    sleep: async (ms) => clock.advance(ms),
  });
  deps = { db, clock, client, sealer: new Sealer([secretsKey(randomBytes(32))]) };
  loop = createReviewSyncLoop({ deps, intervalMs: 1000, batchSize: 10 });
  await account(db, 'acc_1');
  await hub(db, 'h_rev', 'acc_1');
  await hub(db, 'h_other', 'acc_1');
  for (const ws of ['ws_down', 'ws_side']) await workspace(db, 'h_rev', ws);
  await workspace(db, 'h_other', 'ws_elsewhere');
  refreshToken = sandbox.issueRefreshToken();
});
after(async () => {
  await sandbox?.close();
  await db?.close();
});

/** What the summary should say for a workspace, counted straight from the sandbox's reviews. */
function expected(reviews: SandboxReview[], range = WHOLE_HISTORY) {
  const inRange = reviews.filter((r) => r.createTime.slice(0, 10) >= range.from && r.createTime.slice(0, 10) <= range.to);
  const all = reviews.filter((r) => r.createTime.slice(0, 10) <= range.to);
  const avg = (rs: SandboxReview[]) => (rs.length ? Math.round((rs.reduce((s, r) => s + r.starRating, 0) / rs.length) * 100) / 100 : null);
  const dist = (rs: SandboxReview[]) =>
    Object.fromEntries([1, 2, 3, 4, 5].map((n) => [String(n), rs.filter((r) => r.starRating === n).length]));
  return {
    reviewCount: all.length,
    averageRating: avg(all),
    ratingDistribution: dist(all),
    newReviews: inRange.length,
    newRatingDistribution: dist(inRange),
    respondedReviews: inRange.filter((r) => r.replied).length,
  };
}

async function summary(workspaceId: string, range = WHOLE_HISTORY) {
  const report = await googleReviewSummaries({ db, clock }, principal('h_rev', null, 'u_admin'), range);
  const row = report.workspaces.find((w) => w.workspace._id === workspaceId)!;
  return {
    reviewCount: row.reviewCount,
    averageRating: row.averageRating,
    ratingDistribution: row.ratingDistribution,
    newReviews: row.newReviews,
    newRatingDistribution: row.newRatingDistribution,
    respondedReviews: row.respondedReviews,
  };
}

test('a consent without a refresh token connects and replaces nothing', async () => {
  const refused = await completeGoogleBusinessOAuth(
    { exchangeCode: async () => ({ refreshToken: undefined }) as never },
    { code: 'c', redirectUri: 'r' },
  ).catch((e: unknown) => e);
  assert.ok(refused instanceof DomainError && refused.code === 'no_refresh_token');
  assert.equal(
    Number(
      (
        await db.kysely
          .selectFrom('channel_connections')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    ),
    0,
  );
});

test('connecting maps locations to workspaces; a location the sign-in does not manage, or another hub’s workspace, is refused', async () => {
  const locations = await listBusinessLocations(deps, refreshToken);
  assert.deepEqual(
    locations.map((l) => l.name),
    [DOWNTOWN, RIVERSIDE, AIRPORT],
  );
  for (const mappings of [
    [{ location: 'accounts/9/locations/9', workspaceId: 'ws_down' }],
    [{ location: DOWNTOWN, workspaceId: 'ws_elsewhere' }],
    [
      { location: DOWNTOWN, workspaceId: 'ws_down' },
      { location: DOWNTOWN, workspaceId: 'ws_side' },
    ],
  ]) {
    await assert.rejects(connectBusinessLocations(deps, 'h_rev', { refreshToken, mappings }), DomainError);
  }
  assert.equal(
    Number(
      (
        await db.kysely
          .selectFrom('social_channels')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    ),
    0,
  );

  const { connectionId, channelIds } = await connectBusinessLocations(deps, 'h_rev', {
    refreshToken,
    mappings: [
      { location: DOWNTOWN, workspaceId: 'ws_down' },
      { location: RIVERSIDE, workspaceId: 'ws_side' },
      { location: AIRPORT, workspaceId: 'ws_side' },
    ],
  });
  assert.equal(channelIds.length, 3);
  const stored = await db.kysely.selectFrom('channel_connections').selectAll().where('id', '=', connectionId).executeTakeFirstOrThrow();
  assert.ok(!stored.token_sealed.toString('latin1').includes(refreshToken), 'the refresh token is sealed');
  assert.equal(deps.sealer.open(stored.token_sealed, connectionId), refreshToken);
});

test('the first sync reads every review; the summaries equal a direct count of Google’s reviews', async () => {
  const outcomes = await loop.runOnce();
  assert.deepEqual(outcomes.map((o) => o.status).sort(), ['synced', 'synced', 'synced']);
  assert.deepEqual(await summary('ws_down'), expected(sandbox.reviews(DOWNTOWN)));
  // Two locations in one workspace add up.
  assert.deepEqual(await summary('ws_side'), expected([...sandbox.reviews(RIVERSIDE), ...sandbox.reviews(AIRPORT)]));
  const range = { from: '2026-06-01', to: '2026-09-30' };
  assert.deepEqual(await summary('ws_down', range), expected(sandbox.reviews(DOWNTOWN), range));
  // Nothing is due again before the interval.
  assert.deepEqual(await loop.runOnce(), []);
});

test('an hourly sync reads only what changed: new, re-rated and answered reviews move the right days', async () => {
  const old = sandbox.reviews(DOWNTOWN).at(-1)!;
  const replyTo = sandbox.reviews(DOWNTOWN).find((r) => !r.replied)!;
  clock.advance(REVIEW_SYNC_INTERVAL_MS + 10 * 60_000);
  sandbox.scenario.addReview(DOWNTOWN, { starRating: 1 });
  sandbox.scenario.editReview(DOWNTOWN, old.reviewId, { starRating: old.starRating === 5 ? 2 : 5 });
  sandbox.scenario.editReview(DOWNTOWN, replyTo.reviewId, { replied: true });
  const before = sandbox.requests.filter((r) => r.path.endsWith('/reviews')).length;
  const outcomes = await loop.runOnce();
  const down = outcomes.find((o) => o.status === 'synced' && o.reviews > 0);
  assert.ok(down && down.status === 'synced' && !down.full);
  assert.equal(down.reviews, 3, 'only the three changed reviews are read');
  assert.equal(sandbox.requests.filter((r) => r.path.endsWith('/reviews')).length - before, 3, 'one page per location');
  assert.deepEqual(await summary('ws_down'), expected(sandbox.reviews(DOWNTOWN)));
});

test('a throttle reschedules, an unapproved project and a revoked login fail with their kind; no figure changes', async () => {
  const figures = await summary('ws_down');
  clock.advance(REVIEW_SYNC_INTERVAL_MS + 10 * 60_000);
  sandbox.scenario.addReview(DOWNTOWN, { starRating: 3 });
  sandbox.scenario.throttle(6 * 3_600_000);
  const throttled = await loop.runOnce();
  assert.ok(throttled.length > 0 && throttled.every((o) => o.status === 'rescheduled'));
  assert.deepEqual(await summary('ws_down'), figures);

  sandbox.scenario.reset();
  sandbox.scenario.notApproved(true);
  clock.advance(7 * 3_600_000);
  const refused = await loop.runOnce();
  assert.ok(refused.length > 0 && refused.every((o) => o.status === 'failed' && o.failureKind === 'not_approved'));
  const state = await db.kysely.selectFrom('review_syncs').selectAll().where('failure_kind', '=', 'not_approved').execute();
  assert.equal(state.length, 3);
  assert.match(state[0]!.failure_message ?? '', /Quota exceeded/);
  assert.deepEqual(await summary('ws_down'), figures);

  sandbox.scenario.reset();
  sandbox.scenario.expireRefreshToken(refreshToken);
  clock.advance(25 * 3_600_000);
  const expired = await loop.runOnce();
  assert.ok(expired.length > 0 && expired.every((o) => o.status === 'failed' && o.failureKind === 'needs_reconnect'));
  assert.deepEqual(await summary('ws_down'), figures);
});

test('reconnecting mends it; a weekly full read drops a review Google removed', async () => {
  sandbox.scenario.reset();
  refreshToken = sandbox.issueRefreshToken();
  await connectBusinessLocations(deps, 'h_rev', { refreshToken, mappings: [{ location: DOWNTOWN, workspaceId: 'ws_down' }] });
  const synced = await loop.runOnce();
  assert.ok(synced.some((o) => o.status === 'synced'));
  assert.deepEqual(await summary('ws_down'), expected(sandbox.reviews(DOWNTOWN)));
  // A review that is gone from Google: only a full read can see it.
  const doomed = sandbox.reviews(DOWNTOWN).at(-1)!;
  await db.kysely
    .insertInto('google_reviews')
    .values({
      hub_id: 'h_rev',
      workspace_id: 'ws_down',
      channel_id: (await db.kysely.selectFrom('social_channels').select('id').where('external_id', '=', DOWNTOWN).executeTakeFirstOrThrow())
        .id,
      review_id: 'gone-from-google',
      star_rating: 1,
      created_at: new Date(doomed.createTime),
      updated_at: new Date(doomed.createTime),
      replied: false,
    })
    .execute();
  clock.advance(REVIEW_FULL_READ_MS);
  const full = await loop.runOnce();
  assert.ok(full.some((o) => o.status === 'synced' && o.full));
  assert.deepEqual(await summary('ws_down'), expected(sandbox.reviews(DOWNTOWN)));
  assert.equal(
    await db.kysely.selectFrom('google_reviews').select('review_id').where('review_id', '=', 'gone-from-google').executeTakeFirst(),
    undefined,
  );
});

test('a connection no location uses any more is deleted with its refresh token when the last one moves; reviews and syncs stay', async () => {
  const connections = async () =>
    (await db.kysely.selectFrom('channel_connections').select('id').where('hub_id', '=', 'h_rev').orderBy('id').execute()).map((c) => c.id);
  const channels = await db.kysely
    .selectFrom('social_channels')
    .select(['id', 'external_id', 'connection_id'])
    .where('hub_id', '=', 'h_rev')
    .orderBy('external_id')
    .execute();
  const byLocation = Object.fromEntries(channels.map((c) => [c.external_id!, c]));
  // Downtown moved to a second connection when it was reconnected; Riverside and Airport are on the first.
  const first = byLocation[RIVERSIDE]!.connection_id!;
  assert.equal(byLocation[AIRPORT]!.connection_id, first);
  const secondId = byLocation[DOWNTOWN]!.connection_id!;
  assert.notEqual(secondId, first);
  assert.deepEqual(await connections(), [first, secondId].sort(), 'the first connection still serves two locations');
  const reviewsBefore = Number(
    (
      await db.kysely
        .selectFrom('google_reviews')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

  refreshToken = sandbox.issueRefreshToken();
  const third = await connectBusinessLocations(deps, 'h_rev', {
    refreshToken,
    mappings: [
      { location: RIVERSIDE, workspaceId: 'ws_side' },
      { location: AIRPORT, workspaceId: 'ws_side' },
    ],
  });
  assert.deepEqual(await connections(), [secondId, third.connectionId].sort(), 'the first connection is gone, its token with it');
  assert.equal(
    Number(
      (
        await db.kysely
          .selectFrom('google_reviews')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    ),
    reviewsBefore,
  );
  assert.deepEqual(
    (await db.kysely.selectFrom('review_syncs').select('channel_id').orderBy('channel_id').execute()).map((r) => r.channel_id),
    channels.map((c) => c.id).sort(),
    'every location keeps its review sync',
  );
  // Every location syncs on with the connection it is on now.
  clock.advance(REVIEW_SYNC_INTERVAL_MS * 2);
  const outcomes = await loop.runOnce();
  assert.deepEqual(
    outcomes.map((o) => o.status),
    ['synced', 'synced', 'synced'],
  );
  assert.deepEqual(await summary('ws_side'), expected([...sandbox.reviews(RIVERSIDE), ...sandbox.reviews(AIRPORT)]));
});
