// The organic insights sync against real PostgreSQL and the loopback Meta sandbox: published
// deliveries of connected Facebook / Instagram channels are enrolled, read on the decaying schedule
// (1 h, 6 h, 24 h, 3 d, 7 d, 28 d, then never), shared between two loops without a double read,
// failures keep the figures and record the platform's words, throttles wait, and the figures feed
// /analytics/organic beside imported rows (an imported day wins for its workspace and platform).
// Reconnecting the Pages deletes the connection they leave (its user token with it) and the insights
// rows are read on with the channels' own tokens.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { importNdjson } from '../../src/domain/import/import.service.ts';
import { INSIGHTS_SCHEDULE_MS } from '../../src/domain/organic/insights-schedule.ts';
import { createInsightsSyncLoop } from '../../src/domain/organic/insights-sync.ts';
import { mapMetaChannels, type MetaConnectDeps } from '../../src/domain/organic/meta-connect.service.ts';
import { createMetaPagesClient } from '../../src/integrations/meta-pages/client.ts';
import { createMetaPagesConnector } from '../../src/integrations/meta-pages/connector.ts';
import { startMetaPagesSandbox } from '../../src/integrations/meta-pages/sandbox.ts';
import { FixedClock } from '../../src/platform/clock.ts';
import { Sealer, secretsKey } from '../../src/platform/sealing.ts';
import { call, caller, principal, tempMediaStore, type TempMediaStore } from '../support/content-world.ts';
import { createTestDb, type TestDb } from '../support/db.ts';

const PAGE = '1000000001';
const IG = '17841400000000001';
const T0 = '2026-11-20T10:00:00.000Z';
const HOUR = 3_600_000;
const clock = new FixedClock(T0);
let db: TestDb;
let media: TempMediaStore;
let sandbox: Awaited<ReturnType<typeof startMetaPagesSandbox>>;
const sealer = new Sealer([secretsKey(Buffer.alloc(32, 7))]);
let fbPost: string;
let igMedia: string;

const ndjson = (lines: unknown[]) => lines.map((l) => JSON.stringify(l)).join('\n');

async function publishedDelivery(postId: string, channelId: string, workspaceId: string, externalId: string, at: string) {
  await db.kysely
    .insertInto('posts')
    .values({ id: postId, hub_id: 'hub_a', workspace_id: workspaceId, text: postId, status: 'published', published_at: at })
    .execute();
  await db.kysely
    .insertInto('post_deliveries')
    .values({
      hub_id: 'hub_a',
      workspace_id: workspaceId,
      post_id: postId,
      channel_id: channelId,
      position: 0,
      status: 'published',
      external_id: externalId,
      delivered_at: at,
    })
    .execute();
}

before(async () => {
  db = await createTestDb();
  media = await tempMediaStore();
  sandbox = await startMetaPagesSandbox({ now: () => clock.now() });
  await importNdjson(
    db,
    ndjson([
      { type: 'account', id: 'acc_1', name: 'Acme' },
      { type: 'hub', id: 'hub_a', accountId: 'acc_1', name: 'A' },
      { type: 'workspace', id: 'ws_1', hubId: 'hub_a', name: 'One' },
      { type: 'workspace', id: 'ws_2', hubId: 'hub_a', name: 'Two' },
      // An imported Facebook day for ws_2 on the publication day: it stays the figure for that day.
      {
        type: 'organicMetrics',
        workspaceId: 'ws_2',
        date: '2026-11-20',
        platform: 'facebook',
        posts: 7,
        impressions: 700,
        reach: 70,
        likes: 7,
        comments: 0,
        shares: 0,
        saves: 0,
      },
    ]),
  );
  const token = sandbox.organic.pageToken(PAGE);
  await db.kysely
    .insertInto('channel_connections')
    .values({ id: 'cc_1', hub_id: 'hub_a', platform: 'meta', label: 'Meta', token_sealed: sealer.seal('user-token', 'cc_1') })
    .execute();
  const channel = (id: string, workspaceId: string, platform: 'facebook' | 'instagram', externalId: string) => ({
    id,
    hub_id: 'hub_a',
    workspace_id: workspaceId,
    platform,
    name: id,
    handle: null,
    connection_id: 'cc_1',
    external_id: externalId,
    token_sealed: sealer.seal(token, id),
  });
  await db.kysely
    .insertInto('social_channels')
    .values([
      channel('ch_fb', 'ws_1', 'facebook', PAGE),
      channel('ch_ig', 'ws_1', 'instagram', IG),
      {
        ...channel('ch_fb2', 'ws_2', 'facebook', '1000000002'),
        token_sealed: sealer.seal(sandbox.organic.pageToken('1000000002'), 'ch_fb2'),
      },
      // Not connected: its deliveries are the sandbox connector's, never read.
      { id: 'ch_plain', hub_id: 'hub_a', workspace_id: 'ws_1', platform: 'facebook', name: 'plain', handle: null },
    ])
    .execute();
  const client = createMetaPagesClient({ graphUrl: sandbox.url });
  fbPost = (await client.publishPage(token, PAGE, { text: 'fb one', media: [] })).externalId;
  igMedia = (await client.publishInstagram(token, IG, { caption: 'ig one', media: [{ kind: 'image', url: 'https://h.example/1.jpg' }] }))
    .externalId;
  const fb2 = (await client.publishPage(sandbox.organic.pageToken('1000000002'), '1000000002', { text: 'fb two', media: [] })).externalId;
  await publishedDelivery('post_fb', 'ch_fb', 'ws_1', fbPost, T0);
  await publishedDelivery('post_ig', 'ch_ig', 'ws_1', igMedia, T0);
  await publishedDelivery('post_fb2', 'ch_fb2', 'ws_2', fb2, T0);
  await publishedDelivery('post_plain', 'ch_plain', 'ws_1', 'sandbox_abc', T0);
});
after(async () => {
  await sandbox.close();
  await db.close();
  await media.remove();
});

const loop = () =>
  createInsightsSyncLoop({
    deps: { db, clock, sealer, sources: { facebook: connector, instagram: connector } },
    intervalMs: 1_000,
    batchSize: 10,
  });
let connector: ReturnType<typeof createMetaPagesConnector>;

test('enrolled and read on the schedule; two loops never read one publication twice; the figures feed /analytics/organic', async () => {
  connector = createMetaPagesConnector({ graphUrl: sandbox.url, sleep: async () => undefined });
  const a = loop();
  const b = loop();
  // Before the first hour nothing is due.
  assert.deepEqual(await a.runOnce(), []);
  const rows = await db.kysely.selectFrom('organic_post_insights').select(['post_id', 'next_fetch_at']).orderBy('post_id').execute();
  assert.deepEqual(
    rows.map((r) => r.post_id),
    ['post_fb', 'post_fb2', 'post_ig'],
    'connected channels only, sandbox ids never',
  );
  clock.advance(HOUR);
  const [ra, rb] = await Promise.all([a.runOnce(), b.runOnce()]);
  assert.equal(ra.length + rb.length, 3, 'each publication read once across the two loops');
  for (const o of [...ra, ...rb]) {
    assert.equal(o.status, 'read');
    assert.equal((o as { next: Date }).next.toISOString(), new Date(Date.parse(T0) + 6 * HOUR).toISOString());
  }
  const first = await db.kysely.selectFrom('organic_post_insights').selectAll().where('post_id', '=', 'post_ig').executeTakeFirstOrThrow();
  assert.ok(Number(first.impressions) > 0 && first.has_figures && first.fetches === 1);

  const insights = await connector.insights(
    { id: 'ch_ig', platform: 'instagram', externalId: IG, secret: sandbox.organic.pageToken(IG) },
    igMedia,
  );
  const fb = await db.kysely.selectFrom('organic_post_insights').selectAll().where('post_id', '=', 'post_fb').executeTakeFirstOrThrow();
  const ctx = caller(db, clock, media.store, principal('hub_a', null, 'usr_x'));
  const report = await call('organic_analytics', ctx, { from: '2026-11-20', to: '2026-11-20' });
  const one = report.workspaces.find((w: { workspace: { _id: string } }) => w.workspace._id === 'ws_1');
  assert.equal(one.posts, 2);
  assert.equal(one.impressions, Number(fb.impressions) + insights.impressions!);
  assert.equal(one.reach, Number(fb.reach) + insights.reach!);
  // ws_2 has an imported Facebook row for that day: the import is the figure, the synced post not added.
  const two = report.workspaces.find((w: { workspace: { _id: string } }) => w.workspace._id === 'ws_2');
  assert.equal(two.posts, 7);
  assert.equal(two.impressions, 700);

  // Nothing due until the 6 h point; then each point of the schedule once, and then never again.
  clock.advance(HOUR);
  assert.deepEqual(await a.runOnce(), []);
  let reads = 1;
  for (const offset of INSIGHTS_SCHEDULE_MS.slice(1)) {
    clock.set(new Date(Date.parse(T0) + offset));
    const outcomes = await a.runOnce();
    assert.equal(outcomes.length, 3, `read at ${offset / HOUR} h`);
    reads++;
  }
  clock.advance(365 * 24 * HOUR);
  assert.deepEqual(await a.runOnce(), []);
  const done = await db.kysely.selectFrom('organic_post_insights').selectAll().where('post_id', '=', 'post_fb').executeTakeFirstOrThrow();
  assert.equal(done.fetches, reads);
  assert.equal(done.next_fetch_at, null);
  assert.ok(Number(done.impressions) >= Number(fb.impressions), 'figures grew with the post');
});

test('a failed read keeps the figures and records the kind and the platform words; a throttle waits; an expired token needs_reconnect', async () => {
  // Back within the schedule (2 days after publishing), every read due now.
  clock.set(new Date(Date.parse(T0) + 48 * HOUR));
  await db.kysely.updateTable('organic_post_insights').set({ next_fetch_at: clock.now() }).execute();
  const before = await db.kysely.selectFrom('organic_post_insights').selectAll().where('post_id', '=', 'post_fb').executeTakeFirstOrThrow();
  sandbox.organic.scenario.fail(PAGE, { code: 2, message: 'An unexpected error has occurred. Please retry your request later.' });
  sandbox.organic.scenario.throttle(IG, 30 * 60_000);
  sandbox.organic.scenario.expireToken(sandbox.organic.pageToken('1000000002'));
  const outcomes = await loop().runOnce();
  const by = Object.fromEntries(outcomes.map((o) => [o.postId, o]));
  assert.equal(by.post_fb!.status, 'failed');
  assert.equal((by.post_fb as { kind: string }).kind, 'platform_error');
  assert.equal(by.post_ig!.status, 'throttled');
  assert.equal((by.post_fb2 as { kind: string }).kind, 'needs_reconnect');
  const after = await db.kysely.selectFrom('organic_post_insights').selectAll().where('post_id', '=', 'post_fb').executeTakeFirstOrThrow();
  assert.equal(after.impressions, before.impressions);
  assert.equal(after.fetches, before.fetches);
  assert.equal(after.failure_kind, 'platform_error');
  assert.equal(after.failure_message, 'An unexpected error has occurred. Please retry your request later.');
  assert.ok(after.next_fetch_at! > clock.now());
  const ig = await db.kysely.selectFrom('organic_post_insights').selectAll().where('post_id', '=', 'post_ig').executeTakeFirstOrThrow();
  assert.ok(ig.next_fetch_at!.getTime() - clock.now().getTime() >= 30 * 60_000, 'waits as long as Meta asked');
  // A hostile answer: a failure kind, never a crash of the loop.
  sandbox.scenario.reset();
  await db.kysely.updateTable('organic_post_insights').set({ next_fetch_at: clock.now() }).execute();
  sandbox.organic.scenario.malformed(PAGE, 'html');
  const again = await loop().runOnce();
  assert.equal((again.find((o) => o.postId === 'post_fb') as { kind: string }).kind, 'bad_answer');
});

test('reconnecting moves the channels to a new connection; the one left unused is deleted with its user token, the insights read on', async () => {
  sandbox.scenario.reset();
  const pages = [PAGE, '1000000002'].map((id) => ({
    id,
    name: `Page ${id}`,
    accessToken: sandbox.organic.pageToken(id),
    instagram: id === PAGE ? { id: IG, username: 'harbourcafe' } : null,
  }));
  const deps: MetaConnectDeps = { db, clock, sealer, pages: { listPages: async () => pages } };
  const connections = async () =>
    (await db.kysely.selectFrom('channel_connections').select('id').where('hub_id', '=', 'hub_a').orderBy('id').execute()).map((c) => c.id);
  const connectionOf = async (channelId: string) =>
    (await db.kysely.selectFrom('social_channels').select('connection_id').where('id', '=', channelId).executeTakeFirstOrThrow())
      .connection_id;
  const insightsBefore = await db.kysely.selectFrom('organic_post_insights').select(['post_id', 'fetches']).orderBy('post_id').execute();
  assert.equal(insightsBefore.length, 3);

  // One Page reconnected: the old connection still serves the Instagram account and the other Page.
  const first = await mapMetaChannels(deps, 'hub_a', { userToken: 'user-token-2', expiresAt: null }, [
    { platform: 'facebook', externalId: PAGE, workspaceId: 'ws_1' },
  ]);
  assert.deepEqual(await connections(), ['cc_1', first.connectionId].sort());
  assert.equal(await connectionOf('ch_fb'), first.connectionId);
  assert.equal(await connectionOf('ch_ig'), 'cc_1');

  // The rest reconnected: cc_1 is unused and goes, in the same transaction, with its sealed user token.
  const second = await mapMetaChannels(deps, 'hub_a', { userToken: 'user-token-3', expiresAt: null }, [
    { platform: 'instagram', externalId: IG, workspaceId: 'ws_1' },
    { platform: 'facebook', externalId: '1000000002', workspaceId: 'ws_2' },
  ]);
  assert.deepEqual(await connections(), [first.connectionId, second.connectionId].sort());
  assert.equal(await connectionOf('ch_ig'), second.connectionId);
  assert.equal(await connectionOf('ch_fb2'), second.connectionId);
  assert.equal(await connectionOf('ch_plain'), null, 'a channel without a connection is left alone');
  const stored = await db.kysely
    .selectFrom('channel_connections')
    .select(['id', 'token_sealed'])
    .where('id', '=', second.connectionId)
    .executeTakeFirstOrThrow();
  assert.equal(sealer.open(stored.token_sealed, stored.id), 'user-token-3');

  // Nothing else needed cc_1: the insights rows are all there, and read with the channels' Page tokens.
  assert.deepEqual(
    (await db.kysely.selectFrom('organic_post_insights').select('post_id').orderBy('post_id').execute()).map((r) => r.post_id),
    insightsBefore.map((r) => r.post_id),
  );
  await db.kysely.updateTable('organic_post_insights').set({ next_fetch_at: clock.now() }).execute();
  const outcomes = await loop().runOnce();
  assert.deepEqual(outcomes.map((o) => [o.postId, o.status]).sort(), [
    ['post_fb', 'read'],
    ['post_fb2', 'read'],
    ['post_ig', 'read'],
  ]);
});
