import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { runCli } from '../../src/cli/cli.ts';
import { createSession, sessionUser } from '../../src/domain/web-sessions/web-session.service.ts';
import { checkCredentials } from '../../src/domain/oauth/identity.service.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import { snapshot } from '../support/snapshot.ts';

// Issue 24 item 5: the operator's lists (accounts, hubs, users, workspaces; a table, or one JSON
// array with --json), workspaces create, users reset-password (generated and shown once, or read
// from stdin; never from argv) and import --dry-run (what a real run would do, nothing written).

let db: TestDb;
let dir: string;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function hubops(args: string[], options: { stdin?: string } = {}): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    env: { PATH: process.env.PATH, DATABASE_URL: db.url, LOG_LEVEL: 'info' },
    stdin: Readable.from(options.stdin ? [Buffer.from(options.stdin)] : []),
  });
  return { code, stdout, stderr };
}

async function json(args: string[], options?: { stdin?: string }): Promise<any> {
  const run = await hubops([...args, '--json'], options);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stderr, '');
  assert.equal(run.stdout.split('\n').length, 2, 'one line');
  return JSON.parse(run.stdout);
}

async function fails(code: 1 | 2, args: string[], reason: RegExp, options?: { stdin?: string }): Promise<Run> {
  const run = await hubops([...args, '--json'], options);
  assert.equal(run.code, code, `exit ${run.code}: ${run.stderr}`);
  assert.equal(run.stdout, '');
  assert.match(run.stderr.split('\n')[0]!, reason);
  return run;
}

let accountId: string;
let hubId: string;
let otherHubId: string;

before(async () => {
  db = await createTestDb();
  dir = await mkdtemp(path.join(tmpdir(), 'hubops-cli-dir-'));
  accountId = (await json(['accounts', 'create', '--name', 'Acme Franchising', '--plan', 'partner', '--api-access'])).id;
  hubId = (await json(['hubs', 'create', '--account', accountId, '--name', 'Brewline'])).id;
  otherHubId = (await json(['hubs', 'create', '--account', accountId, '--name', 'Pulse'])).id;
});
after(async () => {
  await db.drop();
  await rm(dir, { recursive: true, force: true });
});

describe('workspaces create and list', () => {
  test('create with a new id or one given, a time zone; list as JSON and as a table', async () => {
    const made = await json(['workspaces', 'create', '--hub', hubId, '--name', 'Denver  Downtown ']);
    assert.match(made.id, /^ws_[A-Za-z0-9]{20}$/);
    assert.deepEqual(made, { id: made.id, hubId, name: 'Denver  Downtown ', timezone: 'UTC' });
    const own = await json([
      'workspaces',
      'create',
      '--hub',
      hubId,
      '--name',
      'Store 12',
      '--id',
      'store-12',
      '--timezone',
      'America/Denver',
    ]);
    assert.deepEqual(own, { id: 'store-12', hubId, name: 'Store 12', timezone: 'America/Denver' });

    const listed = await json(['workspaces', 'list', '--hub', hubId]);
    assert.deepEqual(
      listed.map((w: any) => [w.id, w.hubId, w.name, w.timezone, w.fields]),
      [made, own].sort((a, b) => (a.id < b.id ? -1 : 1)).map((w) => [w.id, hubId, w.name, w.timezone, {}]),
    );
    assert.deepEqual(Object.keys(listed[0]), ['id', 'hubId', 'name', 'timezone', 'fields', 'createdAt']);

    const human = await hubops(['workspaces', 'list', '--hub', hubId]);
    assert.equal(human.code, 0);
    const lines = human.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^ID\s+NAME\s+TIMEZONE\s+FIELDS\s+CREATED$/);
    assert.equal(lines.length, 3);
    assert.match(human.stdout, /store-12\s+Store 12\s+America\/Denver\s+0\s+\d{4}-\d\d-\d\d/);

    const empty = await hubops(['workspaces', 'list', '--hub', otherHubId]);
    assert.equal(empty.stdout, `Hub ${otherHubId} has no workspaces yet: hubops workspaces create --hub ${otherHubId} --name N\n`);
    assert.deepEqual(await json(['workspaces', 'list', '--hub', otherHubId]), []);
  });

  test('refusals: unknown hub, taken id, bad id, bad time zone, missing options; nothing written', async () => {
    const before = await snapshot(db);
    await fails(1, ['workspaces', 'create', '--hub', 'hub_nope', '--name', 'X'], /^hubops: hub hub_nope does not exist$/);
    await fails(
      1,
      ['workspaces', 'create', '--hub', otherHubId, '--name', 'X', '--id', 'store-12'],
      /^hubops: workspace store-12 already exists$/,
    );
    await fails(1, ['workspaces', 'create', '--hub', hubId, '--name', 'X', '--id', 'a b'], /^hubops: workspace id must be 1-64 letters/);
    await fails(
      1,
      ['workspaces', 'create', '--hub', hubId, '--name', 'X', '--timezone', 'Mars/Olympus'],
      /^hubops: timezone must be an IANA time zone/,
    );
    await fails(1, ['workspaces', 'create', '--hub', hubId, '--name', ''], /name/);
    await fails(2, ['workspaces', 'create', '--hub', hubId], /missing required option --name/);
    await fails(2, ['workspaces', 'list'], /missing required option --hub/);
    await fails(1, ['workspaces', 'list', '--hub', 'hub_nope'], /^hubops: hub hub_nope does not exist$/);
    assert.deepEqual(await snapshot(db), before);
  });
});

describe('accounts list, hubs list, users list', () => {
  test('accounts list', async () => {
    const other = (await json(['accounts', 'create', '--name', 'Plain Co'])).id;
    const accounts = await json(['accounts', 'list']);
    const mine = accounts.find((a: any) => a.id === accountId);
    assert.deepEqual(
      { ...mine, createdAt: 'x' },
      { id: accountId, name: 'Acme Franchising', plan: 'partner', apiAccess: true, hubs: 2, createdAt: 'x' },
    );
    assert.equal(accounts.find((a: any) => a.id === other).hubs, 0);
    assert.deepEqual(
      accounts.map((a: any) => a.id),
      accounts.map((a: any) => a.id).sort(),
    );
    const human = await hubops(['accounts', 'list']);
    assert.match(human.stdout.split('\n')[0]!, /^ID\s+NAME\s+PLAN\s+API\s+HUBS\s+CREATED$/);
    assert.match(human.stdout, new RegExp(`${accountId}\\s+Acme Franchising\\s+partner\\s+on\\s+2\\s+`));
  });

  test('hubs list, of all accounts or one', async () => {
    const hubs = await json(['hubs', 'list', '--account', accountId]);
    assert.deepEqual(
      hubs.map((h: any) => [h.id, h.accountId, h.name, h.suspended, h.workspaces]),
      [
        [hubId, accountId, 'Brewline', false, 2],
        [otherHubId, accountId, 'Pulse', false, 0],
      ].sort((a, b) => ((a[0] as string) < (b[0] as string) ? -1 : 1)),
    );
    await json(['hubs', 'suspend', otherHubId]);
    const all = await json(['hubs', 'list']);
    assert.equal(all.find((h: any) => h.id === otherHubId).suspended, true);
    const human = await hubops(['hubs', 'list', '--account', accountId]);
    assert.match(human.stdout.split('\n')[0]!, /^ID\s+ACCOUNT\s+NAME\s+WORKSPACES\s+ACCESS\s+CREATED$/);
    assert.match(human.stdout, new RegExp(`${otherHubId}\\s+${accountId}\\s+Pulse\\s+0\\s+suspended`));
    await json(['hubs', 'resume', otherHubId]);
    await fails(1, ['hubs', 'list', '--account', 'acc_nope'], /^hubops: account acc_nope does not exist$/);
  });

  test('users list, every user or those of one hub, with their roles; no password hash', async () => {
    const admin = (
      await json(
        [
          'users',
          'create',
          '--email',
          'Ada@Acme.test',
          '--password',
          '-',
          '--firstname',
          'Ada',
          '--lastname',
          'Lee',
          '--hub',
          hubId,
          '--role',
          'hub_admin',
        ],
        { stdin: 'ada password 1\n' },
      )
    ).id;
    await json([
      'users',
      'add-to-hub',
      '--email',
      'ada@acme.test',
      '--hub',
      otherHubId,
      '--role',
      'member',
      '--workspace',
      await firstWorkspace(otherHubId),
    ]);
    const member = (
      await json(
        [
          'users',
          'create',
          '--email',
          'sam@acme.test',
          '--password',
          '-',
          '--firstname',
          'Sam',
          '--lastname',
          'So',
          '--hub',
          hubId,
          '--role',
          'member',
          '--workspace',
          'store-12',
        ],
        { stdin: 'sam password 1' },
      )
    ).id;

    const inHub = await json(['users', 'list', '--hub', otherHubId]);
    assert.deepEqual(
      inHub.map((u: any) => u.id),
      [admin],
    );
    const all = await json(['users', 'list']);
    const ada = all.find((u: any) => u.id === admin);
    assert.deepEqual(Object.keys(ada), ['id', 'accountId', 'email', 'firstname', 'lastname', 'staff', 'createdAt', 'memberships']);
    assert.equal(ada.email, 'ada@acme.test');
    assert.deepEqual(
      ada.memberships,
      [
        { hubId, role: 'hub_admin', workspaceId: null },
        { hubId: otherHubId, role: 'member', workspaceId: ada.memberships.find((m: any) => m.hubId === otherHubId).workspaceId },
      ].sort((a, b) => (a.hubId < b.hubId ? -1 : 1)),
    );
    assert.ok(all.some((u: any) => u.id === member));
    const human = await hubops(['users', 'list', '--hub', hubId]);
    assert.match(human.stdout.split('\n')[0]!, /^ID\s+EMAIL\s+NAME\s+ROLES\s+STAFF$/);
    assert.match(human.stdout, /sam@acme\.test\s+Sam So\s+member of \S+ \(store-12\)/);
    assert.doesNotMatch(human.stdout + JSON.stringify(all), /scrypt|password/i);
    await fails(1, ['users', 'list', '--hub', 'hub_nope'], /^hubops: hub hub_nope does not exist$/);
  });
});

async function firstWorkspace(hub: string): Promise<string> {
  const existing = await json(['workspaces', 'list', '--hub', hub]);
  if (existing.length) return existing[0].id;
  return (await json(['workspaces', 'create', '--hub', hub, '--name', 'Studio 1'])).id;
}

describe('users reset-password', () => {
  test('generated: printed once, works, the old one does not, web sessions end', async () => {
    const user = (await json(['users', 'list'])).find((u: any) => u.email === 'ada@acme.test');
    const session = await createSession(db, user.id, new Date());
    assert.ok(await sessionUser(db, session, new Date()));
    const out = await json(['users', 'reset-password', '--email', 'ADA@acme.test']);
    assert.deepEqual(Object.keys(out), ['id', 'email', 'password', 'sessionsEnded']);
    assert.equal(out.id, user.id);
    assert.equal(out.sessionsEnded, 1);
    assert.match(out.password, /^[A-Za-z0-9_-]{16}$/);
    assert.ok(await checkCredentials(db, 'ada@acme.test', out.password));
    assert.equal(await checkCredentials(db, 'ada@acme.test', 'ada password 1'), undefined);
    assert.equal(await sessionUser(db, session, new Date()), undefined);

    const human = await hubops(['users', 'reset-password', '--email', 'ada@acme.test']);
    assert.equal(human.code, 0);
    const shown = /new password: (\S+)/.exec(human.stdout)![1]!;
    assert.match(
      human.stdout,
      /^Password of ada@acme\.test \(usr_\w+\) reset; 0 web admin sessions ended\.\n {2}new password: \S+\nIt is shown only now/,
    );
    assert.ok(await checkCredentials(db, 'ada@acme.test', shown));
  });

  test('from stdin with --password -; never from argv; too short and unknown users refused, nothing written', async () => {
    const out = await json(['users', 'reset-password', '--email', 'sam@acme.test', '--password', '-'], { stdin: 'a brand new one\n' });
    assert.deepEqual(Object.keys(out), ['id', 'email', 'sessionsEnded'], 'a password given is not printed');
    assert.ok(await checkCredentials(db, 'sam@acme.test', 'a brand new one'));
    const before = await snapshot(db);
    await fails(2, ['users', 'reset-password', '--email', 'sam@acme.test', '--password', 'hunter2hunter2'], /--password takes only -/);
    await fails(1, ['users', 'reset-password', '--email', 'sam@acme.test', '--password', '-'], /password/, { stdin: 'short' });
    await fails(1, ['users', 'reset-password', '--email', 'nobody@acme.test'], /^hubops: no user has the email nobody@acme\.test$/);
    await fails(2, ['users', 'reset-password'], /missing required option --email/);
    assert.deepEqual(await snapshot(db), before);
  });
});

describe('import --dry-run', () => {
  test('says what a real run would write, per type, and writes nothing; the real run then does that', async () => {
    const file = path.join(dir, 'dry.ndjson');
    await writeFile(
      file,
      [
        `{"type":"workspace","id":"store-12","hubId":"${hubId}","name":"Store 12","timezone":"America/Denver"}`,
        `{"type":"workspace","id":"store-13","hubId":"${hubId}","name":"Store 13"}`,
        `{"type":"adAccount","id":"aa_dry","hubId":"${hubId}","platform":"meta","name":"Meta"}`,
        '{"type":"spend","adAccountId":"aa_dry","workspaceId":"store-13","date":"2026-11-20","spendCents":100}',
        '{"type":"spend","adAccountId":"aa_dry","workspaceId":"store-12","date":"2026-11-20","spendCents":5}',
      ].join('\n'),
    );
    const before = await snapshot(db);
    const dry = await json(['import', file, '--dry-run']);
    assert.equal(dry.dryRun, true);
    assert.deepEqual(
      [dry.lines.workspace, dry.written.workspace, dry.unchanged.workspace, dry.lines.adAccount, dry.written.adAccount, dry.lines.spend],
      [2, 1, 1, 1, 1, 2],
    );
    assert.deepEqual(dry.spend, { new: 2, changed: 0, unchanged: 0 });
    assert.deepEqual(await snapshot(db), before, 'a dry run writes nothing');

    const human = await hubops(['import', file, '--dry-run']);
    assert.equal(
      human.stdout,
      [
        'Dry run: nothing was written. A real run would:',
        '  TYPE       LINES  WRITE  UNCHANGED',
        '  workspace  2      1      1',
        '  adAccount  1      1      0',
        '  spend (2 lines), per ad account, workspace and date: 2 new, 0 replaced, 0 unchanged',
        '',
      ].join('\n'),
    );
    assert.deepEqual(await snapshot(db), before);

    const real = await json(['import', file]);
    assert.equal(real.imported.workspace, 2);
    const again = await json(['import', file, '--dry-run']);
    assert.deepEqual([again.written.workspace, again.written.adAccount, again.spend], [0, 0, { new: 0, changed: 0, unchanged: 2 }]);
  });

  test('a bad file is refused by line exactly as without --dry-run', async () => {
    const file = path.join(dir, 'dry-bad.ndjson');
    await writeFile(file, `{"type":"workspace","id":"store-12","hubId":"${hubId}","name":"Another name"}\n`);
    const dry = await fails(1, ['import', file, '--dry-run'], /^hubops: line 1: /);
    const real = await fails(1, ['import', file], /^hubops: line 1: /);
    assert.equal(dry.stderr, real.stderr);
  });
});
