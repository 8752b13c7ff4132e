// `hubops ad-accounts …` against a real database and a fake Meta (test/support/fake-meta.ts):
// connect with a token from stdin (sealed, never stored in clear), list, sync --wait and its exit
// status, map a campaign or ad set, disconnect; bad usage exits 2 and bad input exits 1, both
// writing nothing.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { sql } from 'kysely';
import { after, before, describe, test } from 'node:test';
import { runCli } from '../../src/cli/cli.ts';
import type { AdSyncFactory } from '../../src/cli/command.ts';
import { PlatformError } from '../../src/integrations/ad-platform.ts';
import { startMetaSandbox } from '../../src/integrations/meta/sandbox.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { Sealer, secretsKey } from '../../src/platform/sealing.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import { EXPIRED_WORDS, FakeMeta, hourlyRows, utcDayFrom } from '../support/fake-meta.ts';
import { snapshot } from '../support/snapshot.ts';
import { account, hub, workspace } from '../support/world.ts';

const HUB = 'hub_cli_ads';
let db: TestDb;
const meta = new FakeMeta();
const sealer = new Sealer([secretsKey(randomBytes(32))]);
const adSync: AdSyncFactory = async (_config, database) => ({
  db: database,
  clock: systemClock,
  clients: { meta },
  sealer,
  leaseMs: 60_000,
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** One CLI invocation in this process; with `env`, the server's own ad-sync dependencies under it (no fake). */
async function hubops(args: string[], stdin = '', env?: Record<string, string>): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    env: { PATH: process.env.PATH, DATABASE_URL: db.url, LOG_LEVEL: 'silent', ...env },
    stdin: Readable.from(stdin ? [Buffer.from(stdin)] : []),
    ...(env ? {} : { adSync }),
  });
  return { code, stdout, stderr };
}

async function json(args: string[], stdin?: string): Promise<any> {
  const run = await hubops([...args, '--json'], stdin);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stderr, '');
  return JSON.parse(run.stdout);
}

async function fails(code: 1 | 2, args: string[], reason: RegExp, stdin?: string): Promise<Run> {
  const run = await hubops([...args, '--json'], stdin);
  assert.equal(run.code, code, `exit ${run.code}: ${run.stderr}`);
  assert.equal(run.stdout, '');
  assert.match(run.stderr, reason);
  assert.ok(run.stderr.startsWith('hubops: '));
  assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace');
  return run;
}

const now = new Date();
const days = Array.from({ length: 5 }, (_, i) => utcDayFrom(now, -5 + i));
let token = '';

before(async () => {
  db = await createTestDb();
  await account(db, 'acc_cli_ads');
  await hub(db, HUB, 'acc_cli_ads');
  await hub(db, 'hub_cli_other', 'acc_cli_ads');
  await hub(db, 'hub_cli_eu', 'acc_cli_ads');
  await workspace(db, HUB, 'ws_north');
  await workspace(db, HUB, 'ws_south');
  meta.addAccount({
    externalId: 'act_1001',
    name: 'Acme US',
    rows: [
      ...hourlyRows({
        days,
        campaignId: 'c_1',
        campaignName: 'Spring [ws:ws_north]',
        adSetId: 's_1',
        adSetName: 'Broad',
        micros: 1_000_000n,
      }),
      ...hourlyRows({ days, campaignId: 'c_2', campaignName: 'Brand', adSetId: 's_2', adSetName: 'Lookalike', micros: 250_000n }),
    ],
  });
  meta.addAccount({ externalId: 'act_2002', name: 'Acme EU', currency: 'EUR', timeZone: 'Europe/Berlin' });
  token = meta.issueToken(['act_1001', 'act_2002']);
});
after(async () => {
  await db?.drop();
});

describe('ad-accounts', () => {
  let accountId = '';

  test('connect: bad usage exits 2, bad input exits 1, and nothing is written', async () => {
    const before = await snapshot(db);
    await fails(2, ['ad-accounts', 'connect', '--hub', HUB, '--platform', 'meta', '--token', token], /missing required option --account/);
    await fails(
      2,
      ['ad-accounts', 'connect', '--hub', HUB, '--platform', 'tiktok', '--account', 'act_1001', '--token', token],
      /--platform must be one of meta, google_ads, chatgpt_ads/,
    );
    await fails(
      2,
      ['ad-accounts', 'connect', '--hub', HUB, '--platform', 'meta', '--account', 'act_1001', '--token', '-'],
      /--token is empty/,
      '',
    );
    await fails(
      1,
      ['ad-accounts', 'connect', '--hub', HUB, '--platform', 'meta', '--account', '1001', '--token', token],
      /"1001" is not a Meta ad account id \(act_ followed by the account number/,
    );
    // A token Meta does not know: Meta's words, never the token.
    const bad = await fails(
      1,
      ['ad-accounts', 'connect', '--hub', HUB, '--platform', 'meta', '--account', 'act_1001', '--token', 'EAAnot-a-real-token'],
      /Meta did not accept the token \(Invalid OAuth access token/,
    );
    assert.doesNotMatch(bad.stderr, /EAAnot-a-real-token/);
    // Another currency than the hub's: refused at connect.
    await fails(
      1,
      ['ad-accounts', 'connect', '--hub', HUB, '--platform', 'meta', '--account', 'act_2002', '--token', token],
      /act_2002 reports spend in EUR, but this hub reports in USD/,
    );
    await fails(
      1,
      ['ad-accounts', 'connect', '--hub', 'hub_nope', '--platform', 'meta', '--account', 'act_1001', '--token', token],
      /hub hub_nope does not exist/,
    );
    assert.deepEqual(await snapshot(db), before);
  });

  test('connect reads the token from stdin and keeps it only sealed', async () => {
    const connected = await json(
      ['ad-accounts', 'connect', '--hub', HUB, '--platform', 'meta', '--account', 'act_1001', '--token', '-'],
      `${token}\n`,
    );
    assert.equal(connected.length, 1);
    const [a] = connected;
    assert.deepEqual(
      {
        externalId: a.externalId,
        name: a.name,
        currency: a.currency,
        timeZone: a.timeZone,
        connectionKind: a.connectionKind,
        status: a.status,
        completeThrough: a.completeThrough,
      },
      {
        externalId: 'act_1001',
        name: 'Acme US',
        currency: 'USD',
        timeZone: 'UTC',
        connectionKind: 'system_user',
        status: 'never_synced',
        completeThrough: null,
      },
    );
    accountId = a.id;
    // Nowhere in the database in clear: every text and bytea column of every row searched.
    const dump = await sql<{ t: string }>`SELECT string_agg(row_to_json(c)::text, ' ') AS t FROM ad_connections c`.execute(db.kysely);
    assert.ok(dump.rows[0]!.t.length > 0);
    assert.ok(
      !dump.rows[0]!.t.includes(token) && !dump.rows[0]!.t.includes(Buffer.from(token).toString('hex')),
      'the token is stored sealed',
    );
    const conn = await db.kysely.selectFrom('ad_connections').select(['label', 'kind']).where('hub_id', '=', HUB).executeTakeFirstOrThrow();
    assert.deepEqual(conn, { label: 'Meta system user (CLI)', kind: 'system_user' });
  });

  test('list, as JSON and as a table', async () => {
    const list = await json(['ad-accounts', 'list', '--hub', HUB]);
    assert.deepEqual(Object.keys(list[0]), [
      'id',
      'platform',
      'externalId',
      'name',
      'currency',
      'timeZone',
      'connectionKind',
      'status',
      'statusText',
      'lastCompleteSyncAt',
      'completeThrough',
      'failureKind',
      'failureMessage',
      'retryAt',
      'tokenExpiresAt',
      'tokenExpiresSoon',
      'defaultWorkspaceId',
    ]);
    assert.equal(list[0].id, accountId);
    const human = await hubops(['ad-accounts', 'list', '--hub', HUB]);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /^ID\s+EXTERNAL ID\s+NAME\s+STATUS\s+COMPLETE THROUGH/);
    assert.match(human.stdout, new RegExp(`${accountId}\\s+act_1001\\s+Acme US\\s+never_synced`));
    const empty = await hubops(['ad-accounts', 'list', '--hub', 'hub_cli_other']);
    assert.match(empty.stdout, /Hub hub_cli_other has no ad accounts\. Connect one with: hubops ad-accounts connect/);
  });

  test('sync without --wait asks a server; with --wait it syncs here and reports each account', async () => {
    const requested = await json(['ad-accounts', 'sync', '--hub', HUB]);
    assert.deepEqual(requested, { requested: [accountId] });
    const row = await db.kysely.selectFrom('ad_accounts').select('sync_requested_at').where('id', '=', accountId).executeTakeFirstOrThrow();
    assert.ok(row.sync_requested_at);

    const synced = await json(['ad-accounts', 'sync', '--hub', HUB, '--account', 'act_1001', '--wait']);
    assert.equal(synced.accounts.length, 1);
    assert.equal(synced.accounts[0].status, 'done');
    assert.equal(synced.accounts[0].id, accountId);
    // Complete through yesterday at most: today is never complete.
    assert.ok(synced.accounts[0].completeThrough <= utcDayFrom(new Date(), -1), synced.accounts[0].completeThrough);
    // 24 h × $1.00 a day to ws_north (its [ws:] token); the Brand campaign's $0.25 an hour matches nothing.
    const spend = await db.kysely
      .selectFrom('spend')
      .select(['workspace_id', (eb) => eb.fn.sum<string>('spend_cents').as('cents')])
      .where('ad_account_id', '=', accountId)
      .groupBy('workspace_id')
      .orderBy('workspace_id')
      .execute();
    assert.deepEqual(
      spend.map((r) => [r.workspace_id, Number(r.cents)]),
      [
        ['ws_north', 5 * 2400],
        [null, 5 * 600],
      ],
    );
    const list = await json(['ad-accounts', 'list', '--hub', HUB]);
    assert.equal(list[0].status, 'connected');
    assert.ok(list[0].lastCompleteSyncAt);
  });

  test('set-default-workspace: spend no other rule claims moves there at once, and back with --none', async () => {
    const spendByWorkspace = async () =>
      (
        await db.kysely
          .selectFrom('spend')
          .select(['workspace_id', (eb) => eb.fn.sum<string>('spend_cents').as('cents')])
          .where('ad_account_id', '=', accountId)
          .groupBy('workspace_id')
          .orderBy('workspace_id')
          .execute()
      ).map((r) => [r.workspace_id, Number(r.cents)]);
    const before = await snapshot(db);
    await fails(
      2,
      ['ad-accounts', 'set-default-workspace', '--hub', HUB, '--account', accountId],
      /give exactly one of --workspace and --none/,
    );
    await fails(
      2,
      ['ad-accounts', 'set-default-workspace', '--hub', HUB, '--account', accountId, '--workspace', 'ws_south', '--none'],
      /give exactly one/,
    );
    await fails(
      1,
      ['ad-accounts', 'set-default-workspace', '--hub', HUB, '--account', accountId, '--workspace', 'ws_nope'],
      /no such workspace in this hub/,
    );
    await fails(
      1,
      ['ad-accounts', 'set-default-workspace', '--hub', HUB, '--account', 'act_9999', '--workspace', 'ws_south'],
      /has no ad account act_9999/,
    );
    assert.deepEqual(await snapshot(db), before);
    const set = await json(['ad-accounts', 'set-default-workspace', '--hub', HUB, '--account', 'act_1001', '--workspace', 'ws_south']);
    assert.deepEqual(set, { id: accountId, externalId: 'act_1001', defaultWorkspaceId: 'ws_south' });
    // The [ws:ws_north] token still wins over the default; the Brand campaign's spend moves to ws_south.
    assert.deepEqual(await spendByWorkspace(), [
      ['ws_north', 5 * 2400],
      ['ws_south', 5 * 600],
    ]);
    assert.equal((await json(['ad-accounts', 'list', '--hub', HUB]))[0].defaultWorkspaceId, 'ws_south');
    const human = await hubops(['ad-accounts', 'set-default-workspace', '--hub', HUB, '--account', accountId, '--none']);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /^act_1001 "Acme US" has no default workspace now/);
    assert.deepEqual(await spendByWorkspace(), [
      ['ws_north', 5 * 2400],
      [null, 5 * 600],
    ]);
  });

  test("set-currency: the hub's reporting currency, refused while a connected account reports in another", async () => {
    const before = await snapshot(db);
    await fails(2, ['ad-accounts', 'set-currency', '--hub', HUB], /missing required option --currency/);
    await fails(
      1,
      ['ad-accounts', 'set-currency', '--hub', HUB, '--currency', 'EURO'],
      /currency: must be an ISO 4217 code of three letters/,
    );
    await fails(1, ['ad-accounts', 'set-currency', '--hub', 'hub_nope', '--currency', 'EUR'], /hub hub_nope does not exist/);
    await fails(
      1,
      ['ad-accounts', 'set-currency', '--hub', HUB, '--currency', 'EUR'],
      /ad account act_1001 reports in another currency than EUR: disconnect it first/,
    );
    assert.deepEqual(await snapshot(db), before);
    assert.deepEqual(await json(['ad-accounts', 'set-currency', '--hub', 'hub_cli_eu', '--currency', 'eur']), {
      hubId: 'hub_cli_eu',
      reportingCurrency: 'EUR',
    });
    const row = await db.kysely.selectFrom('hubs').select('reporting_currency').where('id', '=', 'hub_cli_eu').executeTakeFirstOrThrow();
    assert.equal(row.reporting_currency, 'EUR');
    // Now the EUR account connects to that hub (and the USD one would be refused).
    const connected = await json(
      ['ad-accounts', 'connect', '--hub', 'hub_cli_eu', '--platform', 'meta', '--account', 'act_2002', '--token', '-'],
      token,
    );
    assert.equal(connected[0].currency, 'EUR');
  });

  test('map: the Brand campaign to ws_south moves its past spend at once', async () => {
    await fails(
      2,
      ['ad-accounts', 'map', '--hub', HUB, '--account', accountId, '--workspace', 'ws_south'],
      /give exactly one of --campaign and --ad-set/,
    );
    await fails(
      2,
      ['ad-accounts', 'map', '--hub', HUB, '--account', accountId, '--campaign', 'c_2', '--ad-set', 's_2', '--workspace', 'ws_south'],
      /give exactly one/,
    );
    await fails(
      1,
      ['ad-accounts', 'map', '--hub', HUB, '--account', accountId, '--campaign', 'c_2', '--workspace', 'ws_nope'],
      /no such workspace in this hub/,
    );
    await fails(
      1,
      ['ad-accounts', 'map', '--hub', HUB, '--account', 'act_9999', '--campaign', 'c_2', '--workspace', 'ws_south'],
      /has no ad account act_9999/,
    );
    const mapped = await json([
      'ad-accounts',
      'map',
      '--hub',
      HUB,
      '--account',
      'act_1001',
      '--campaign',
      'c_2',
      '--workspace',
      'ws_south',
    ]);
    assert.deepEqual(mapped, { adAccountId: accountId, level: 'campaign', externalId: 'c_2', workspaceId: 'ws_south' });
    const spend = await db.kysely
      .selectFrom('spend')
      .select(['workspace_id', (eb) => eb.fn.sum<string>('spend_cents').as('cents')])
      .where('ad_account_id', '=', accountId)
      .groupBy('workspace_id')
      .orderBy('workspace_id')
      .execute();
    assert.deepEqual(
      spend.map((r) => [r.workspace_id, Number(r.cents)]),
      [
        ['ws_north', 5 * 2400],
        ['ws_south', 5 * 600],
      ],
    );
  });

  test("sync --wait exits 1 when the sync fails, with the platform's words; list says what to do", async () => {
    meta.fail(
      'act_1001',
      new PlatformError('needs_reconnect', 'Meta refused the access token (190)', {
        platformMessage: EXPIRED_WORDS,
        platformCode: '190/463',
      }),
    );
    try {
      const run = await fails(1, ['ad-accounts', 'sync', '--hub', HUB, '--wait'], /1 ad account of 1 did not sync completely/);
      assert.match(run.stderr, /act_1001 "Acme US": failed \(needs_reconnect\)/);
      const [a] = await json(['ad-accounts', 'list', '--hub', HUB]);
      assert.equal(a.status, 'needs_reconnect');
      assert.equal(a.failureMessage, EXPIRED_WORDS);
    } finally {
      meta.fail('act_1001', undefined);
    }
  });

  test('disconnect: the account stops syncing, its figures stay', async () => {
    const before = await db.kysely
      .selectFrom('spend')
      .select((eb) => eb.fn.sum<string>('spend_cents').as('cents'))
      .where('ad_account_id', '=', accountId)
      .executeTakeFirstOrThrow();
    const out = await json(['ad-accounts', 'disconnect', '--hub', HUB, '--account', accountId]);
    assert.deepEqual(out, { id: accountId, externalId: 'act_1001', disconnected: true });
    const [a] = await json(['ad-accounts', 'list', '--hub', HUB]);
    assert.equal(a.status, 'disconnected');
    await fails(1, ['ad-accounts', 'sync', '--hub', HUB, '--account', accountId, '--wait'], /is disconnected: connect it again/);
    await fails(1, ['ad-accounts', 'sync', '--hub', HUB], /has no connected ad account to sync/);
    const after = await db.kysely
      .selectFrom('spend')
      .select((eb) => eb.fn.sum<string>('spend_cents').as('cents'))
      .where('ad_account_id', '=', accountId)
      .executeTakeFirstOrThrow();
    assert.equal(after.cents, before.cents);
    // The credential is erased with its last account.
    assert.equal((await db.kysely.selectFrom('ad_connections').select('id').where('hub_id', '=', HUB).execute()).length, 0);
  });

  test('human output says what happened', async () => {
    const token2 = meta.issueToken(['act_1001']);
    const run = await hubops(
      [
        'ad-accounts',
        'connect',
        '--hub',
        HUB,
        '--platform',
        'meta',
        '--account',
        'act_1001',
        '--token',
        '-',
        '--name',
        'Agency system user',
      ],
      token2,
    );
    assert.equal(run.code, 0, run.stderr);
    assert.match(
      run.stdout,
      /^Connected 1 ad account to hub hub_cli_ads:\n {2}aa_\S+ {2}act_1001 {2}"Acme US" {2}USD, UTC\nThe token is stored sealed and is not shown again\. The first sync backfills 90 days/,
    );
    assert.ok(!run.stdout.includes(token2));
  });

  test("with the server's dependencies: the Meta client at META_GRAPH_URL (here the sandbox), the token sealed under HUBOPS_SECRETS_KEY", async () => {
    const sandbox = await startMetaSandbox({
      seed: { accounts: [{ id: 'act_3003', name: 'Sandbox US', timezone_name: 'America/Los_Angeles' }], historyDays: 95 },
    });
    try {
      const env = { META_GRAPH_URL: sandbox.url, HUBOPS_SECRETS_KEY: randomBytes(32).toString('base64url') };
      const sandboxToken = sandbox.issueToken({ accounts: ['act_3003'], systemUser: true });
      // Meta throttling the account at connect time: a refusal that says when to try again (exit 1, no stack), nothing written.
      sandbox.scenario.throttle('act_3003', 3 * 3_600_000);
      const before = await snapshot(db);
      const busy = await hubops(
        ['ad-accounts', 'connect', '--hub', 'hub_cli_other', '--platform', 'meta', '--account', 'act_3003', '--token', '-', '--json'],
        sandboxToken,
        env,
      );
      assert.equal(busy.code, 1, busy.stderr);
      assert.match(
        busy.stderr,
        /^hubops: Meta is busy and asked hubops to wait before asking for ad account act_3003 again: try again in about 3 hours/,
      );
      assert.doesNotMatch(busy.stderr, /\n\s+at /);
      assert.deepEqual(await snapshot(db), before);
      sandbox.scenario.reset();
      const connect = await hubops(
        ['ad-accounts', 'connect', '--hub', 'hub_cli_other', '--platform', 'meta', '--account', 'act_3003', '--token', '-', '--json'],
        sandboxToken,
        env,
      );
      assert.equal(connect.code, 0, connect.stderr);
      const [a] = JSON.parse(connect.stdout);
      assert.equal(a.timeZone, 'America/Los_Angeles');
      const sync = await hubops(['ad-accounts', 'sync', '--hub', 'hub_cli_other', '--wait', '--json'], '', env);
      assert.equal(sync.code, 0, sync.stderr);
      assert.equal(JSON.parse(sync.stdout).accounts[0].status, 'done');
      assert.ok(
        sandbox.requests.some((r) => r.path.endsWith('/act_3003/insights')),
        'the spend came from the sandbox',
      );
      // Another secrets key cannot open the token: the sync fails and says so, without the token.
      const wrongKey = await hubops(['ad-accounts', 'sync', '--hub', 'hub_cli_other', '--wait', '--json'], '', {
        ...env,
        HUBOPS_SECRETS_KEY: randomBytes(32).toString('base64url'),
      });
      assert.equal(wrongKey.code, 1);
      assert.match(wrongKey.stderr, /failed \(needs_reconnect\): the stored token cannot be opened with this server's secrets key/);
      assert.ok(!wrongKey.stderr.includes(sandboxToken));
    } finally {
      await sandbox.close();
    }
  });
});
