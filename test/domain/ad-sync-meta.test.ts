// The engine with the real Meta wire client against the Meta sandbox over loopback: the figures
// stored are the sandbox's own hourly spend, summed by UTC day (Los Angeles' 2026 DST rule written
// out here), rounded once per ad set and day; a restatement inside the lookback lands; throttles,
// expired tokens and another currency end as the engine promises.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  connectAdAccounts,
  listAdAccounts,
  listPlatformAccounts,
  setDefaultWorkspace,
  syncNow,
  type AdSyncDeps,
} from '../../src/domain/ad-sync/ad-account.service.ts';
import { createMetaClient } from '../../src/integrations/meta/client.ts';
import { startMetaSandbox, type MetaSandbox } from '../../src/integrations/meta/sandbox.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { account, hub, workspace } from '../support/world.ts';

const NOW = '2026-11-20T18:00:00Z';
let t: TestApp;
let sandbox: MetaSandbox;
let deps: AdSyncDeps;

before(async () => {
  sandbox = await startMetaSandbox({
    now: () => t.clock.now(),
    seed: {
      accounts: [
        { id: 'act_7001', timezone_name: 'America/Los_Angeles' },
        { id: 'act_7002', currency: 'EUR' },
      ],
    },
  });
  const meta = createMetaClient({ graphUrl: sandbox.url, sleep: async () => {} });
  t = await startApp({ now: NOW, adPlatformClients: { meta } });
  deps = t.app.adSync;
  await account(t.db, 'acc_1');
  await hub(t.db, 'h_meta', 'acc_1');
  await workspace(t.db, 'h_meta', 'ws_meta');
});
after(async () => {
  await t?.close();
  await sandbox?.close();
});

function utcDayLA(date: string, hour: number): string {
  const wall = Date.parse(`${date}T00:00:00Z`) + hour * 3_600_000;
  const pdt = wall + 7 * 3_600_000;
  const inPdt = pdt >= Date.parse('2026-03-08T10:00:00Z') && pdt < Date.parse('2026-11-01T09:00:00Z');
  return new Date(inPdt ? pdt : wall + 8 * 3_600_000).toISOString().slice(0, 10);
}

/** The sandbox's spend by UTC day over [since, until], per (day, ad set) rounded half up, then summed. */
function expectedByDay(since: string, until: string): Map<string, number> {
  const micros = new Map<string, bigint>();
  for (const r of sandbox.hourlySpend('act_7001')) {
    const day = utcDayLA(r.date, r.hour);
    if (day < since || day > until) continue;
    const key = `${day}|${r.adSetId}`;
    micros.set(key, (micros.get(key) ?? 0n) + r.spendMicros);
  }
  const out = new Map<string, number>();
  for (const [key, m] of micros) {
    const day = key.split('|')[0]!;
    const cents = Number((m + 5_000n) / 10_000n);
    if (cents > 0) out.set(day, (out.get(day) ?? 0) + cents);
  }
  return out;
}

async function storedByDay(accountId: string): Promise<Map<string, number>> {
  const rows = await t.db.kysely
    .selectFrom('spend')
    .select(['date', 'spend_cents'])
    .where('ad_account_id', '=', accountId)
    .where('workspace_id', '=', 'ws_meta')
    .execute();
  return new Map(rows.map((r) => [r.date, Number(r.spend_cents)]));
}

test("connect, backfill and an incremental run with a restatement, against the Meta sandbox: the sandbox's figures by UTC day", async () => {
  const token = sandbox.issueToken({ systemUser: true });
  const listed = await listPlatformAccounts(deps, 'meta', token);
  assert.deepEqual(listed.map((a) => [a.externalId, a.currency]).sort(), [
    ['act_7001', 'USD'],
    ['act_7002', 'EUR'],
  ]);
  await assert.rejects(
    connectAdAccounts(deps, 'h_meta', {
      platform: 'meta',
      kind: 'system_user',
      accessToken: token,
      tokenExpiresAt: null,
      externalIds: ['act_7002'],
      label: 'x',
    }),
    /reports spend in EUR, but this hub reports in USD/,
  );
  const [view] = await connectAdAccounts(deps, 'h_meta', {
    platform: 'meta',
    kind: 'system_user',
    accessToken: token,
    tokenExpiresAt: null,
    externalIds: ['act_7001'],
    label: 'Agency',
  });
  assert.equal(view!.timeZone, 'America/Los_Angeles');
  await setDefaultWorkspace(deps, 'h_meta', view!.id, 'ws_meta');

  const first = await syncNow(deps, 'h_meta', view!.id);
  assert.equal(first.status, 'done', JSON.stringify(first));
  assert.deepEqual(await storedByDay(view!.id), expectedByDay('2026-08-22', '2026-11-20'));

  sandbox.scenario.restate('act_7001', '2026-11-10', 3);
  t.clock.advance(3_600_000);
  assert.equal((await syncNow(deps, 'h_meta', view!.id)).status, 'done');
  const after = await storedByDay(view!.id);
  assert.deepEqual(after, expectedByDay('2026-08-22', '2026-11-20'));
  assert.ok(sandbox.requests.some((r) => r.path.includes('act_7001/insights')));
});

test('against the sandbox: a long throttle reschedules, an expired token needs a reconnect', async () => {
  const [view] = await listAdAccounts(deps, 'h_meta');
  sandbox.scenario.throttle('act_7001', 30 * 60_000);
  const throttledRun = await syncNow(deps, 'h_meta', view!.id);
  assert.equal(throttledRun.status, 'rescheduled', JSON.stringify(throttledRun));
  assert.equal((await listAdAccounts(deps, 'h_meta'))[0]!.status, 'rescheduled');
  sandbox.scenario.reset();
  const token = sandbox.issueToken({ accounts: ['act_7001'] });
  await connectAdAccounts(deps, 'h_meta', {
    platform: 'meta',
    kind: 'oauth',
    accessToken: token,
    tokenExpiresAt: null,
    externalIds: ['act_7001'],
    label: 'Ada',
  });
  sandbox.scenario.expireToken(token);
  const expired = await syncNow(deps, 'h_meta', view!.id);
  assert.equal(expired.status, 'failed', JSON.stringify(expired));
  const [now] = await listAdAccounts(deps, 'h_meta');
  assert.equal(now!.status, 'needs_reconnect');
  assert.match(now!.statusText, /^Needs reconnect: .+\. Connect the account again\.$/);
});
