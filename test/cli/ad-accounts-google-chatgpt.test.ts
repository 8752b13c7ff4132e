// `hubops ad-accounts connect` for Google Ads (a refresh token) and ChatGPT Ads (an API key), with
// the server's own dependencies: the real clients at GOOGLE_ADS_URL / GOOGLE_OAUTH_URL and
// OPENAI_ADS_URL, here the sandboxes. Dashed customer ids, an account reached through a manager,
// a key's own account with or without --account, refusals that exit 1 (bad usage: 2) and write
// nothing, `ad-accounts list`, and no credential ever printed.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { sql } from 'kysely';
import { after, before, describe, test } from 'node:test';
import { runCli } from '../../src/cli/cli.ts';
import { startGoogleAdsSandbox, type GoogleAdsSandbox } from '../../src/integrations/google-ads/sandbox.ts';
import { startOpenAIAdsSandbox, type OpenAIAdsSandbox } from '../../src/integrations/openai-ads/sandbox.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import { snapshot } from '../support/snapshot.ts';
import { account, hub } from '../support/world.ts';

const HUB = 'hub_cli_gc';
const OTHER_HUB = 'hub_cli_gc_other';
const DIRECT = { id: '4440001111', name: 'Acme Search', currency: 'USD', timeZone: 'America/Chicago' };
const MANAGER = { id: '4440009999', name: 'Acme Agency MCC', currency: 'USD', timeZone: 'America/New_York', manager: true };
const CLIENT = { id: '4440002222', name: 'Acme Display', currency: 'USD', timeZone: 'Europe/London', direct: false, managerId: MANAGER.id };
const ASK = { id: 'adacct_cli_ask', name: 'Acme Ask', currency_code: 'USD', timezone: 'America/Denver' };
const ASK_EU = { id: 'adacct_cli_ask_eu', name: 'Acme Ask EU', currency_code: 'USD', timezone: 'Europe/Madrid' };

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

let db: TestDb;
let google: GoogleAdsSandbox;
let chatgpt: OpenAIAdsSandbox;
let env: Record<string, string>;
/** Everything the CLI printed, to search for credentials at the end. */
const printed: string[] = [];
/** Every credential given to the CLI. */
const secrets: string[] = [];

/** One CLI invocation in this process, under the server's configuration `env` (no injected fakes). */
async function hubops(args: string[], stdin = '', extraEnv: Record<string, string> = env): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    env: { PATH: process.env.PATH, DATABASE_URL: db.url, LOG_LEVEL: 'silent', ...extraEnv },
    stdin: Readable.from(stdin ? [Buffer.from(stdin)] : []),
  });
  printed.push(stdout, stderr);
  return { code, stdout, stderr };
}

async function json(args: string[], stdin?: string): Promise<any> {
  const run = await hubops([...args, '--json'], stdin);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stderr, '');
  return JSON.parse(run.stdout);
}

async function fails(code: 1 | 2, args: string[], reason: RegExp, stdin?: string, extraEnv?: Record<string, string>): Promise<Run> {
  const run = await hubops([...args, '--json'], stdin, extraEnv);
  assert.equal(run.code, code, `exit ${run.code}: ${run.stderr}`);
  assert.equal(run.stdout, '');
  assert.match(run.stderr, reason);
  assert.ok(run.stderr.startsWith('hubops: '));
  assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace');
  return run;
}

/** The whole database as the snapshot sees it, and the ad connections it leaves out. */
const state = async () => ({
  tables: await snapshot(db),
  connections: (await sql<{ t: string }>`SELECT row_to_json(c)::text AS t FROM ad_connections c ORDER BY id`.execute(db.kysely)).rows,
});

const connect = (platform: string, more: string[]) => ['ad-accounts', 'connect', '--hub', HUB, '--platform', platform, ...more];

before(async () => {
  db = await createTestDb();
  await account(db, 'acc_cli_gc');
  await hub(db, HUB, 'acc_cli_gc');
  await hub(db, OTHER_HUB, 'acc_cli_gc');
  google = await startGoogleAdsSandbox({ customers: [DIRECT, MANAGER, CLIENT], historyDays: 95 });
  chatgpt = await startOpenAIAdsSandbox({ accounts: [ASK, ASK_EU], historyDays: 95 });
  env = {
    HUBOPS_SECRETS_KEY: randomBytes(32).toString('base64url'),
    GOOGLE_ADS_URL: google.url,
    GOOGLE_OAUTH_URL: google.url,
    GOOGLE_ACCOUNTS_URL: google.url,
    GOOGLE_OAUTH_CLIENT_ID: google.clientId,
    GOOGLE_OAUTH_CLIENT_SECRET: google.clientSecret,
    OPENAI_ADS_URL: chatgpt.url,
  };
});
after(async () => {
  await db?.drop();
  await Promise.all([google?.close(), chatgpt?.close()]);
});

describe('ad-accounts connect: Google Ads and ChatGPT Ads', () => {
  test('google_ads: bad usage exits 2, refusals exit 1 in Google’s words, and nothing is written', async () => {
    const token = google.issueRefreshToken();
    const expired = google.issueRefreshToken();
    google.scenario.expireRefreshToken(expired);
    secrets.push(token, expired);
    const before = await state();
    // No account: Google has no "the token's own account" (that is ChatGPT Ads), and no connection kind to pick.
    await fails(2, connect('google_ads', ['--token', '-']), /^hubops: missing required option --account/, token);
    await fails(2, connect('google_ads', ['--account', DIRECT.id, '--kind', 'system_user', '--token', '-']), /--kind/, token);
    await fails(
      1,
      connect('google_ads', ['--account', '444-000-111', '--token', '-']),
      /"444-000-111" is not a Google Ads ad account id \(the 10-digit customer id, e\.g\. 123-456-7890 or 1234567890\)/,
      token,
    );
    await fails(
      1,
      connect('google_ads', ['--account', MANAGER.id, '--token', '-']),
      /Google Ads customer 4440009999 is a manager account: it has no spend of its own; connect the accounts under it/,
      token,
    );
    await fails(
      1,
      connect('google_ads', ['--account', DIRECT.id, '--token', '-']),
      /^hubops: Google Ads did not accept the sign-in \(Token has been expired or revoked\.\): use a valid, unexpired sign-in\n$/,
      expired,
    );
    // A login that reaches neither the account nor a manager above it.
    const narrow = google.issueRefreshToken({ customers: [DIRECT.id] });
    secrets.push(narrow);
    await fails(
      1,
      connect('google_ads', ['--account', '444-000-2222', '--token', '-']),
      /^hubops: Google Ads refused ad account 4440002222 \(.*\)\. The Google user needs access to the account \(directly or through a manager account\)/,
      narrow,
    );
    // A server without a Google OAuth client cannot use a refresh token (it is bound to the client).
    await fails(
      1,
      connect('google_ads', ['--account', DIRECT.id, '--token', '-']),
      /^hubops: Google Ads accounts cannot be connected on this server yet/,
      token,
      { HUBOPS_SECRETS_KEY: env.HUBOPS_SECRETS_KEY!, OPENAI_ADS_URL: chatgpt.url },
    );
    assert.deepEqual(await state(), before);
  });

  test('google_ads: a refresh token from stdin and dashed customer ids, stored without dashes; the manager-reached account is read through its manager', async () => {
    const token = google.issueRefreshToken();
    secrets.push(token);
    const connected = await json(
      connect('google_ads', ['--account', '444-000-1111', '--account', ' 444-000-2222', '--token', '-']),
      `${token}\n`,
    );
    assert.deepEqual(
      connected.map((a: any) => [a.platform, a.externalId, a.name, a.currency, a.timeZone, a.connectionKind, a.status]).sort(),
      [
        ['google_ads', DIRECT.id, DIRECT.name, 'USD', DIRECT.timeZone, 'oauth', 'never_synced'],
        ['google_ads', CLIENT.id, CLIENT.name, 'USD', CLIENT.timeZone, 'oauth', 'never_synced'],
      ],
    );
    const rows = await db.kysely
      .selectFrom('ad_accounts')
      .select(['external_id', 'access_via'])
      .where('hub_id', '=', HUB)
      .where('platform', '=', 'google_ads')
      .orderBy('external_id')
      .execute();
    assert.deepEqual(rows, [
      { external_id: DIRECT.id, access_via: null },
      { external_id: CLIENT.id, access_via: MANAGER.id },
    ]);
    const conn = await db.kysely
      .selectFrom('ad_connections')
      .select(['kind', 'label', 'token_expires_at'])
      .where('hub_id', '=', HUB)
      .where('platform', '=', 'google_ads')
      .execute();
    assert.deepEqual(conn, [{ kind: 'oauth', label: 'Google Ads (CLI)', token_expires_at: null }]);
    const dump = await sql<{ t: string }>`SELECT string_agg(row_to_json(c)::text, ' ') AS t FROM ad_connections c`.execute(db.kysely);
    assert.ok(!dump.rows[0]!.t.includes(token) && !dump.rows[0]!.t.includes(Buffer.from(token).toString('hex')), 'sealed');

    // The stored refresh token works: both sync, the client one through the manager.
    const synced = await json(['ad-accounts', 'sync', '--hub', HUB, '--wait']);
    assert.deepEqual(
      synced.accounts.map((a: any) => [a.externalId, a.status]).sort(),
      [
        [DIRECT.id, 'done'],
        [CLIENT.id, 'done'],
      ].sort(),
    );
    assert.ok(
      google.requests.some((r) => r.loginCustomerId === MANAGER.id && r.path.endsWith(`/customers/${CLIENT.id}/googleAds:searchStream`)),
    );
  });

  test("chatgpt_ads: without --account the key's own account; with the right --account too; a wrong --account, two of them or a revoked key are refused and write nothing", async () => {
    const askKey = chatgpt.issueKey({ accountId: ASK.id });
    const euKey = chatgpt.issueKey({ accountId: ASK_EU.id });
    const revoked = chatgpt.issueKey({ accountId: ASK.id });
    chatgpt.scenario.revokeKey(revoked);
    secrets.push(askKey, euKey, revoked);

    const before = await state();
    await fails(
      1,
      connect('chatgpt_ads', ['--account', ASK.id, '--token', '-']),
      new RegExp(`^hubops: account: the key reads ad account ${ASK_EU.id}, not "${ASK.id}"`),
      euKey,
    );
    await fails(
      2,
      connect('chatgpt_ads', ['--account', ASK.id, '--account', ASK_EU.id, '--token', '-']),
      /a ChatGPT Ads API key reads one ad account: give one --account, or none/,
      euKey,
    );
    await fails(
      1,
      connect('chatgpt_ads', ['--token', '-']),
      new RegExp(`^hubops: ChatGPT Ads did not accept the API key \\(Incorrect API key provided: sk-\\*{8}${revoked.slice(-4)}\\.`),
      revoked,
    );
    await fails(2, connect('chatgpt_ads', ['--token', '-']), /--token is empty/, '\n');
    assert.deepEqual(await state(), before);

    const own = await json(connect('chatgpt_ads', ['--token', '-']), `${askKey}\n`);
    assert.deepEqual(
      own.map((a: any) => [a.platform, a.externalId, a.name, a.timeZone, a.connectionKind]),
      [['chatgpt_ads', ASK.id, ASK.name, ASK.timezone, 'api_key']],
    );
    // The key on the command line works too (stdin keeps it out of shell history; both are accepted).
    const named = await hubops(connect('chatgpt_ads', ['--account', ASK_EU.id, '--token', euKey, '--name', 'EU key']));
    assert.equal(named.code, 0, named.stderr);
    assert.match(
      named.stdout,
      new RegExp(
        `^Connected 1 ad account to hub ${HUB}:\\n {2}aa_\\S+ {2}${ASK_EU.id} {2}"Acme Ask EU" {2}USD, Europe/Madrid\\nThe token is stored sealed and is not shown again\\.`,
      ),
    );
    const conns = await db.kysely
      .selectFrom('ad_connections')
      .select(['kind', 'label'])
      .where('hub_id', '=', HUB)
      .where('platform', '=', 'chatgpt_ads')
      .orderBy('label')
      .execute();
    assert.deepEqual(conns, [
      { kind: 'api_key', label: 'ChatGPT Ads (CLI)' },
      { kind: 'api_key', label: 'EU key' },
    ]);
  });

  test('list shows the Google Ads and ChatGPT Ads accounts, as JSON and as a table', async () => {
    const list = await json(['ad-accounts', 'list', '--hub', HUB]);
    assert.deepEqual(
      list.map((a: any) => [a.platform, a.externalId, a.connectionKind]).sort(),
      [
        ['chatgpt_ads', ASK.id, 'api_key'],
        ['chatgpt_ads', ASK_EU.id, 'api_key'],
        ['google_ads', CLIENT.id, 'oauth'],
        ['google_ads', DIRECT.id, 'oauth'],
      ].sort(),
    );
    assert.equal(list.find((a: any) => a.externalId === DIRECT.id).status, 'connected');
    const human = await hubops(['ad-accounts', 'list', '--hub', HUB]);
    assert.equal(human.code, 0, human.stderr);
    for (const a of list) assert.match(human.stdout, new RegExp(`${a.id}\\s+${a.externalId}\\s+${a.name}\\s+${a.status}`));
    const other = await hubops(['ad-accounts', 'list', '--hub', OTHER_HUB]);
    assert.match(other.stdout, /--platform meta\|google_ads\|chatgpt_ads \[--account …\] --token -/);
  });

  test('no credential was ever printed', () => {
    assert.ok(secrets.length >= 7);
    assert.ok(printed.join('').length > 1000);
    for (const secret of secrets) assert.ok(!printed.some((text) => text.includes(secret)), 'a credential was printed');
  });
});
