import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createPrivateKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { runCli } from '../../src/cli/cli.ts';
import { UsageRecorder } from '../../src/domain/api-keys/usage-recorder.ts';
import { KEY_ROLL_GRACE_DEFAULT_MS } from '../../src/policy.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import { snapshot } from '../support/snapshot.ts';

// The `hubops` CLI against a real database: exact JSON shapes with --json, exit
// status 0 / 1 (refused, one line on stderr) / 2 (bad usage). Commands run in this process through
// runCli (the CLI's entry, with its stdout, stderr, stdin and environment given), which spares a
// Node start per command; 'as a process' runs the real `node src/cli/main.ts` for what only a
// process shows: its exit status, what reaches its stdout and stderr, its stdin.

const CLI = path.resolve(import.meta.dirname, '../../src/cli/main.ts');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

let db: TestDb;
let dir: string;

function cliEnv(options: { url?: string; env?: Record<string, string> }): Record<string, string | undefined> {
  return { PATH: process.env.PATH, DATABASE_URL: options.url ?? db.url, LOG_LEVEL: 'info', ...options.env };
}

/** One CLI invocation, in this process. */
async function hubops(args: string[], options: { url?: string; stdin?: string; env?: Record<string, string> } = {}): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    env: cliEnv(options),
    stdin: Readable.from(options.stdin ? [Buffer.from(options.stdin)] : []),
  });
  return { code, stdout, stderr };
}

/** One CLI invocation as a process of its own: `node src/cli/main.ts …`. */
function spawnHubops(args: string[], options: { url?: string; stdin?: string; env?: Record<string, string> } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: cliEnv(options) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.stdin ?? '');
  });
}

/** Runs with --json and expects success with exactly one JSON document on stdout. */
async function json(args: string[], options?: { stdin?: string }): Promise<any> {
  const run = await hubops([...args, '--json'], options);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stderr, '');
  assert.ok(run.stdout.endsWith('}\n') || run.stdout.endsWith(']\n'), run.stdout);
  return JSON.parse(run.stdout);
}

/** Expects a refusal (1) or bad usage (2): nothing on stdout, the reason on stderr. */
async function fails(code: 1 | 2, args: string[], reason: RegExp, options?: { url?: string; env?: Record<string, string> }): Promise<Run> {
  return failed(await hubops([...args, '--json'], options), code, reason);
}

function failed(run: Run, code: 1 | 2, reason: RegExp): Run {
  assert.equal(run.code, code, `exit ${run.code}: ${run.stderr}`);
  assert.equal(run.stdout, '');
  const lines = run.stderr.trimEnd().split('\n');
  assert.match(lines[0]!, reason);
  assert.ok(lines[0]!.startsWith('hubops: '));
  assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace');
  // Refusals are one line; usage errors add one line of usage.
  assert.equal(lines.length, code);
  if (code === 2) assert.match(lines[1]!, /^usage: hubops|^run 'hubops --help'/);
  return run;
}

before(async () => {
  db = await createTestDb();
  dir = await mkdtemp(path.join(tmpdir(), 'hubops-cli-'));
});
after(async () => {
  await db.drop();
  await rm(dir, { recursive: true, force: true });
});

describe('migrate', () => {
  test('applies pending migrations once, then reports none', async () => {
    // A database of our own, empty: the shared test database is migrated already.
    const server = process.env.HUBOPS_TEST_SERVER_URL!;
    const name = `hubops_t_${process.env.HUBOPS_TEST_TEMPLATE!.split('_').pop()}_${randomBytes(5).toString('hex')}`;
    const admin = new pg.Client({ connectionString: server });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    try {
      const url = new URL(server);
      url.pathname = `/${name}`;
      const first = await hubops(['migrate', '--json'], { url: url.toString() });
      assert.equal(first.code, 0, first.stderr);
      const migrations = (await readdir(new URL('../../src/db/migrations/', import.meta.url)))
        .filter((f) => f.endsWith('.sql'))
        .sort()
        .map((f) => f.replace(/\.sql$/, ''));
      assert.ok(migrations.includes('001_foundation'));
      assert.equal(first.stdout, `${JSON.stringify({ applied: migrations })}\n`);
      const second = await hubops(['migrate', '--json'], { url: url.toString() });
      assert.equal(second.stdout, '{"applied":[]}\n');
      const human = await hubops(['migrate'], { url: url.toString() });
      assert.equal(human.code, 0);
      assert.match(human.stdout, /up to date/);
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  });
});

describe('accounts, hubs, users', () => {
  let accountId: string;
  let hubId: string;
  let otherHubId: string;

  test('accounts create', async () => {
    const out = await json(['accounts', 'create', '--name', 'Acme Franchising', '--plan', 'partner', '--api-access']);
    assert.deepEqual(Object.keys(out), ['id']);
    assert.match(out.id, /^acc_[A-Za-z0-9]{20}$/);
    accountId = out.id;
    const row = await db.kysely
      .selectFrom('accounts')
      .select(['name', 'plan', 'api_access'])
      .where('id', '=', accountId)
      .executeTakeFirstOrThrow();
    assert.deepEqual(row, { name: 'Acme Franchising', plan: 'partner', api_access: true });

    const plain = await json(['accounts', 'create', '--name', 'Plain Co']);
    const defaults = await db.kysely
      .selectFrom('accounts')
      .select(['plan', 'api_access'])
      .where('id', '=', plain.id)
      .executeTakeFirstOrThrow();
    assert.deepEqual(defaults, { plan: 'standard', api_access: false });
  });

  test('accounts create: bad usage exits 2 and creates nothing', async () => {
    const before = await snapshot(db);
    await fails(2, ['accounts', 'create', '--name', 'X', '--plan', 'gold'], /--plan must be one of standard, partner, got "gold"/);
    await fails(2, ['accounts', 'create', '--plan', 'standard'], /missing required option --name/);
    await fails(2, ['accounts', 'create', '--name', 'X', '--colour', 'red'], /unknown option '--colour'/);
    await fails(2, ['accounts', 'create', '--name'], /--name/);
    await fails(1, ['accounts', 'create', '--name', '  '], /^hubops: account name must not be blank$/);
    assert.deepEqual(await snapshot(db), before);
  });

  test('hubs create', async () => {
    const out = await json(['hubs', 'create', '--account', accountId, '--name', 'Acme US']);
    assert.deepEqual(Object.keys(out), ['id']);
    assert.match(out.id, /^hub_/);
    hubId = out.id;
    otherHubId = (await json(['hubs', 'create', '--account', accountId, '--name', 'Acme CA'])).id;
    const row = await db.kysely
      .selectFrom('hubs')
      .select(['account_id', 'name', 'suspended'])
      .where('id', '=', hubId)
      .executeTakeFirstOrThrow();
    assert.deepEqual(row, { account_id: accountId, name: 'Acme US', suspended: false });
  });

  test('hubs create: unknown account exits 1, missing flag exits 2', async () => {
    await fails(1, ['hubs', 'create', '--account', 'acc_nope', '--name', 'X'], /^hubops: account acc_nope does not exist$/);
    await fails(2, ['hubs', 'create', '--name', 'X'], /missing required option --account/);
  });

  test('hubs suspend and resume', async () => {
    assert.deepEqual(await json(['hubs', 'suspend', hubId]), { id: hubId, suspended: true });
    assert.equal(
      (await db.kysely.selectFrom('hubs').select('suspended').where('id', '=', hubId).executeTakeFirstOrThrow()).suspended,
      true,
    );
    assert.deepEqual(await json(['hubs', 'resume', hubId]), { id: hubId, suspended: false });
    assert.equal(
      (await db.kysely.selectFrom('hubs').select('suspended').where('id', '=', hubId).executeTakeFirstOrThrow()).suspended,
      false,
    );
    await fails(1, ['hubs', 'suspend', 'hub_nope'], /^hubops: hub hub_nope does not exist$/);
    await fails(2, ['hubs', 'suspend'], /missing HUB/);
    await fails(2, ['hubs', 'resume', hubId, 'extra'], /unexpected argument "extra"/);
  });

  test('users create', async () => {
    await db.kysely
      .insertInto('workspaces')
      .values([
        { id: 'ws_cli_1', hub_id: hubId, name: 'Denver' },
        { id: 'ws_cli_2', hub_id: otherHubId, name: 'Toronto' },
      ])
      .execute();
    const out = await json([
      'users',
      'create',
      '--email',
      'Ada@Example.com',
      '--password',
      'correct horse',
      '--firstname',
      'Ada',
      '--lastname',
      'Lovelace',
      '--hub',
      hubId,
      '--role',
      'member',
      '--workspace',
      'ws_cli_1',
      '--staff',
    ]);
    assert.deepEqual(Object.keys(out), ['id']);
    const user = await db.kysely
      .selectFrom('users as u')
      .innerJoin('memberships as m', 'm.user_id', 'u.id')
      .select(['u.account_id', 'u.email', 'u.is_staff', 'm.hub_id', 'm.role', 'm.workspace_id'])
      .where('u.id', '=', out.id)
      .executeTakeFirstOrThrow();
    assert.deepEqual(user, {
      account_id: accountId,
      email: 'ada@example.com',
      is_staff: true,
      hub_id: hubId,
      role: 'member',
      workspace_id: 'ws_cli_1',
    });

    // The password can come from stdin, out of shell history.
    const admin = await json(
      [
        'users',
        'create',
        '--email',
        'grace@example.com',
        '--password',
        '-',
        '--firstname',
        'Grace',
        '--lastname',
        'Hopper',
        '--hub',
        hubId,
        '--role',
        'hub_admin',
      ],
      { stdin: 'from stdin 123\n' },
    );
    const { verifyPassword } = await import('../../src/platform/password.ts');
    const hash = (await db.kysely.selectFrom('users').select('password_hash').where('id', '=', admin.id).executeTakeFirstOrThrow())
      .password_hash;
    assert.equal(await verifyPassword('from stdin 123', hash), true);
  });

  test('users create: refusals exit 1, bad usage exits 2, nothing is written', async () => {
    const base = ['users', 'create', '--password', 'long enough', '--firstname', 'B', '--lastname', 'B', '--role', 'member'];
    const before = await snapshot(db);
    await fails(
      1,
      [...base, '--email', 'ADA@example.com', '--hub', otherHubId],
      new RegExp(
        `^hubops: a user with email ada@example.com already exists; to give them a role in hub ${otherHubId}: hubops users add-to-hub --email ada@example.com --hub ${otherHubId} --role member$`,
      ),
    );
    await fails(1, [...base, '--email', 'b@example.com', '--hub', 'hub_nope'], /^hubops: hub hub_nope does not exist$/);
    await fails(
      1,
      [...base, '--email', 'b@example.com', '--hub', hubId, '--workspace', 'ws_cli_2'],
      /^hubops: workspace ws_cli_2 belongs to another hub/,
    );
    await fails(
      1,
      [...base, '--email', 'b@example.com', '--hub', hubId, '--workspace', 'ws_nope'],
      /^hubops: workspace ws_nope does not exist$/,
    );
    await fails(1, [...base, '--email', 'nope', '--hub', hubId], /^hubops: email must be an email address/);
    await fails(
      1,
      [
        'users',
        'create',
        '--password',
        'short',
        '--firstname',
        'B',
        '--lastname',
        'B',
        '--role',
        'member',
        '--email',
        'b@example.com',
        '--hub',
        hubId,
      ],
      /^hubops: password must be at least 8 characters$/,
    );
    await fails(
      2,
      [
        'users',
        'create',
        '--password',
        'long enough',
        '--firstname',
        'B',
        '--lastname',
        'B',
        '--role',
        'owner',
        '--email',
        'b@example.com',
        '--hub',
        hubId,
      ],
      /--role must be one of hub_admin, member/,
    );
    await fails(2, [...base, '--hub', hubId], /missing required option --email/);
    assert.deepEqual(await snapshot(db), before);
  });

  test('users add-to-hub: an existing user gets a role in a second hub of their account', async () => {
    const out = await json([
      'users',
      'add-to-hub',
      '--email',
      ' ADA@example.com',
      '--hub',
      otherHubId,
      '--role',
      'member',
      '--workspace',
      'ws_cli_2',
    ]);
    const ada = await db.kysely.selectFrom('users').select('id').where('email', '=', 'ada@example.com').executeTakeFirstOrThrow();
    assert.deepEqual(out, { userId: ada.id, email: 'ada@example.com', hubId: otherHubId, role: 'member', workspaceId: 'ws_cli_2' });
    const memberships = await db.kysely
      .selectFrom('memberships')
      .select(['hub_id', 'role', 'workspace_id'])
      .where('user_id', '=', ada.id)
      .orderBy('workspace_id')
      .execute();
    assert.deepEqual(memberships, [
      { hub_id: hubId, role: 'member', workspace_id: 'ws_cli_1' },
      { hub_id: otherHubId, role: 'member', workspace_id: 'ws_cli_2' },
    ]);
    const human = await hubops(['users', 'add-to-hub', '--email', 'grace@example.com', '--hub', otherHubId, '--role', 'hub_admin']);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, new RegExp(`^Added grace@example.com \\(usr_\\w+\\) to hub ${otherHubId} as hub_admin\\.\n$`));
  });

  test('users add-to-hub: unknown user or hub, already a member, another account: exit 1 and nothing written', async () => {
    const foreignAccount = (await json(['accounts', 'create', '--name', 'Other Co'])).id;
    const foreignHub = (await json(['hubs', 'create', '--account', foreignAccount, '--name', 'Other'])).id;
    const before = await snapshot(db);
    const add = (email: string, hub: string, ...rest: string[]) => [
      'users',
      'add-to-hub',
      '--email',
      email,
      '--hub',
      hub,
      '--role',
      'member',
      ...rest,
    ];
    await fails(
      1,
      add('nobody@example.com', hubId),
      /^hubops: no user has the email nobody@example\.com \(create one with: hubops users create\)$/,
    );
    await fails(1, add('ada@example.com', 'hub_nope'), /^hubops: hub hub_nope does not exist$/);
    await fails(
      1,
      add('ada@example.com', hubId),
      new RegExp(`^hubops: ada@example.com is already a member of hub ${hubId} \\(role member\\)$`),
    );
    await fails(1, add('ada@example.com', foreignHub), /can only join hubs of their own account$/);
    await fails(1, add('grace@example.com', hubId, '--workspace', 'ws_cli_2'), /^hubops: workspace ws_cli_2 belongs to another hub/);
    await fails(
      2,
      ['users', 'add-to-hub', '--email', 'ada@example.com', '--hub', hubId, '--role', 'owner'],
      /--role must be one of hub_admin, member/,
    );
    await fails(2, ['users', 'add-to-hub', '--email', 'ada@example.com', '--role', 'member'], /missing required option --hub/);
    assert.deepEqual(await snapshot(db), before);
  });

  describe('keys', () => {
    let created: { id: string; key: string; name: string; scope: string; hubId: string; expiresAt: string | null };

    test('keys create prints the key once, in the documented shape', async () => {
      created = await json(['keys', 'create', '--hub', hubId, '--name', 'Dashboard']);
      assert.deepEqual(Object.keys(created), ['id', 'key', 'name', 'scope', 'hubId', 'expiresAt']);
      assert.equal(created.expiresAt, null, 'without --expires-in-days a key never expires');
      assert.match(created.id, /^key_/);
      assert.match(created.key, /^hubops_[0-9A-Za-z]{49}$/);
      assert.deepEqual({ name: created.name, scope: created.scope, hubId: created.hubId }, { name: 'Dashboard', scope: 'read', hubId });
      const embed = await json(['keys', 'create', '--hub', hubId, '--name', 'Embed', '--scope', 'embed']);
      assert.equal(embed.scope, 'embed');
      // An embed key is an Ed25519 key pair: the private key (PKCS#8) is printed once.
      assert.equal(
        createPrivateKey({ key: Buffer.from(embed.key.slice('hubops_esk_'.length), 'base64url'), format: 'der', type: 'pkcs8' })
          .asymmetricKeyType,
        'ed25519',
      );
      // Or the customer keeps the whole pair and hands over only the public key.
      const pem = generateKeyPairSync('ed25519').publicKey.export({ format: 'pem', type: 'spki' }).toString();
      const own = await json(['keys', 'create', '--hub', hubId, '--name', 'Own pair', '--scope', 'embed', `--public-key=${pem}`]);
      assert.deepEqual([own.scope, 'key' in own, own.start.startsWith('ed25519:')], ['embed', false, true]);
      await fails(
        1,
        ['keys', 'create', '--hub', hubId, '--name', 'X', '--scope', 'embed', '--public-key', 'not a key'],
        /Ed25519 public key/,
      );
    });

    test('keys create --expires-in-days: the key expires that many days after its creation', async () => {
      const before = Date.now();
      const key = await json(['keys', 'create', '--hub', otherHubId, '--name', 'Quarterly', '--expires-in-days', '90']);
      const expiresAt = Date.parse(key.expiresAt);
      assert.ok(expiresAt >= before + 90 * 86_400_000 && expiresAt <= Date.now() + 90 * 86_400_000, key.expiresAt);
      const listed = (await json(['keys', 'list', '--hub', otherHubId])).find((k: { id: string }) => k.id === key.id);
      assert.deepEqual([listed.expiresAt, listed.state], [key.expiresAt, 'active']);
      const human = await hubops(['keys', 'create', '--hub', otherHubId, '--name', 'Yearly', '--expires-in-days=365']);
      assert.match(human.stdout, /for hub \S+\. It expires at \d{4}-\d{2}-\d{2}T[\d:.]+Z\.$/m);
      await db.pool.query(`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, [key.id]);
      const expired = await hubops(['keys', 'list', '--hub', otherHubId]);
      assert.match(expired.stdout, new RegExp(`^${key.id}\\s.*\\sexpired \\d{4}-\\d{2}-\\d{2}T`, 'm'));
      await db.pool.query('DELETE FROM api_keys WHERE hub_id = $1', [otherHubId]);
    });

    test('keys create --expires-in-days refuses anything but 30, 90 or 365 (exit 2) and writes nothing', async () => {
      const before = await snapshot(db);
      for (const bad of ['7', '0', '-30', '30.0', '1e2', 'never', '', '90d']) {
        await fails(
          2,
          ['keys', 'create', '--hub', hubId, '--name', 'X', `--expires-in-days=${bad}`],
          /^hubops: --expires-in-days must be one of 30, 90, 365, got /,
        );
      }
      await fails(2, ['keys', 'create', '--hub', hubId, '--name', 'X', '--expires-in-days'], /--expires-in-days/);
      assert.deepEqual(await snapshot(db), before);
    });

    test('keys create: unknown hub exits 1, bad scope exits 2', async () => {
      await fails(1, ['keys', 'create', '--hub', 'hub_nope', '--name', 'X'], /^hubops: hub hub_nope does not exist$/);
      await fails(2, ['keys', 'create', '--hub', hubId, '--name', 'X', '--scope', 'admin'], /--scope must be one of read, embed/);
      await fails(2, ['keys', 'create', '--hub', hubId], /missing required option --name/);
    });

    test('keys list shows start and usage, never the secret', async () => {
      const run = await hubops(['keys', 'list', '--hub', hubId, '--json']);
      assert.equal(run.code, 0, run.stderr);
      assert.ok(!run.stdout.includes(created.key));
      assert.ok(!run.stdout.includes(created.key.slice(12)), 'no part of the secret beyond the start');
      const keys = JSON.parse(run.stdout);
      assert.equal(keys.length, 3);
      const [first] = keys;
      assert.deepEqual(
        keys.map((k: { scope: string; legacyEmbed: boolean }) => [k.scope, k.legacyEmbed]),
        [
          ['read', false],
          ['embed', false],
          ['embed', false],
        ],
      );
      assert.ok(
        keys.slice(1).every((k: { start: string }) => k.start.startsWith('ed25519:')),
        'key pairs are listed by their public key',
      );
      assert.deepEqual(Object.keys(first), [
        'id',
        'name',
        'scope',
        'start',
        'requestCount',
        'notModifiedCount',
        'lastUsedAt',
        'createdAt',
        'revokedAt',
        'legacyEmbed',
        'expiresAt',
        'replacedBy',
        'state',
      ]);
      assert.deepEqual([first.expiresAt, first.replacedBy, first.state], [null, null, 'active']);
      assert.equal(first.id, created.id);
      assert.equal(first.name, 'Dashboard');
      assert.equal(first.scope, 'read');
      assert.ok(created.key.startsWith(first.start) && first.start.length < 16, first.start);
      assert.deepEqual([first.requestCount, first.notModifiedCount], [0, 0]);
      assert.equal(first.lastUsedAt, null);
      assert.match(first.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      assert.equal(first.revokedAt, null);
      assert.deepEqual(await json(['keys', 'list', '--hub', otherHubId]), []);
    });

    test('keys list counts the requests answered 304 Not Modified apart (notModifiedCount, the UNCHANGED (304) column)', async () => {
      // What the Hub API's guard records: every admitted request, and those answered 304 again as conditional hits.
      const usage = new UsageRecorder(db);
      const at = new Date('2026-11-22T10:00:00.000Z');
      for (let i = 0; i < 12; i++) usage.record(created.id, at);
      for (let i = 0; i < 9; i++) usage.recordNotModified(created.id, at);
      await usage.flush();
      const listed = (await json(['keys', 'list', '--hub', hubId])).find((k: { id: string }) => k.id === created.id);
      assert.deepEqual([listed.requestCount, listed.notModifiedCount, listed.lastUsedAt], [12, 9, at.toISOString()]);
      const human = await hubops(['keys', 'list', '--hub', hubId]);
      assert.match(human.stdout, /^ID\s+NAME\s+SCOPE\s+START\s+REQUESTS\s+UNCHANGED \(304\)\s+LAST USED\s/);
      assert.match(human.stdout, new RegExp(`^${created.id}\\s+Dashboard\\s+read\\s+\\S+…\\s+12\\s+9\\s+${at.toISOString()}\\s`, 'm'));
    });

    test('keys list: unknown hub exits 1', async () => {
      await fails(1, ['keys', 'list', '--hub', 'hub_nope'], /^hubops: hub hub_nope does not exist$/);
      await fails(2, ['keys', 'list'], /missing required option --hub/);
    });

    test('keys roll prints a new key once; the old one names it and works for the grace period; refusals write nothing', async () => {
      const old = await json(['keys', 'create', '--hub', hubId, '--name', 'to roll', '--expires-in-days', '30']);
      const rolledAt = Date.now();
      const rolled = await json(['keys', 'roll', old.id]);
      assert.deepEqual(Object.keys(rolled), ['id', 'key', 'name', 'scope', 'hubId', 'expiresAt', 'replaces']);
      assert.equal(rolled.name, 'to roll');
      assert.match(rolled.key, /^hubops_/);
      assert.notEqual(rolled.key, old.key);
      // The default grace, the web admin's too (one policy value); the new key keeps the old one's 30-day lifetime, counted from the roll.
      assert.equal(KEY_ROLL_GRACE_DEFAULT_MS, 24 * 3_600_000);
      assert.ok(Math.abs(Date.parse(rolled.replaces.expiresAt) - rolledAt - KEY_ROLL_GRACE_DEFAULT_MS) < 60_000, rolled.replaces.expiresAt);
      assert.ok(Math.abs(Date.parse(rolled.expiresAt) - rolledAt - 30 * 86_400_000) < 60_000, rolled.expiresAt);
      const listed = await json(['keys', 'list', '--hub', hubId]);
      assert.equal(listed.find((k: { id: string }) => k.id === old.id).state, 'rolled');
      const count = async () => (await json(['keys', 'list', '--hub', hubId])).length;
      const before = await count();
      await fails(
        1,
        ['keys', 'roll', old.id],
        new RegExp(`^hubops: key ${old.id} was already rolled: roll its replacement, ${rolled.id}, instead$`),
      );
      await fails(2, ['keys', 'roll', rolled.id, '--grace-hours', '2'], /--grace-hours must be one of 0, 1, 24, got "2"/);
      await fails(1, ['keys', 'roll', 'key_nope'], /^hubops: key key_nope does not exist$/);
      const embed = await json(['keys', 'create', '--hub', hubId, '--name', 'embed', '--scope', 'embed']);
      await fails(1, ['keys', 'roll', embed.id, '--grace-hours', '0'], /is an embed key, which is not rolled/);
      assert.equal(await count(), before + 1, 'only the embed key was added');
    });

    test('keys revoke sets revokedAt, which list then shows; revoking again keeps it', async () => {
      const revoked = await json(['keys', 'revoke', created.id]);
      assert.deepEqual(Object.keys(revoked), ['id', 'revokedAt']);
      assert.equal(revoked.id, created.id);
      assert.ok(Date.now() - Date.parse(revoked.revokedAt) < 60_000);
      const listed = (await json(['keys', 'list', '--hub', hubId])).find((k: { id: string }) => k.id === created.id);
      assert.equal(listed.revokedAt, revoked.revokedAt);
      assert.equal(listed.state, 'revoked');
      assert.deepEqual(await json(['keys', 'revoke', created.id]), revoked);
      await fails(1, ['keys', 'revoke', 'key_nope'], /^hubops: key key_nope does not exist$/);
    });

    test('human output: the key is shown with a warning, the list is a table', async () => {
      const run = await hubops(['keys', 'create', '--hub', hubId, '--name', 'Sheets']);
      assert.equal(run.code, 0);
      assert.match(run.stdout, /shown only now/);
      assert.match(run.stdout, /^ {2}hubops_[0-9A-Za-z]{49}$/m);
      const list = await hubops(['keys', 'list', '--hub', hubId]);
      assert.match(list.stdout, /^ID\s+NAME\s+SCOPE\s+START\s+REQUESTS/);
      assert.match(list.stdout, /Sheets/);
    });
  });
});

describe('import', () => {
  test('a valid file imports and reports counts per type', async () => {
    const file = path.join(dir, 'ok.ndjson');
    await writeFile(
      file,
      [
        '{"type":"account","id":"acc_imp","name":"Imported","plan":"standard","apiAccess":false}',
        '{"type":"hub","id":"hub_imp","accountId":"acc_imp","name":"Imported hub"}',
        '{"type":"workspace","id":"ws_imp","hubId":"hub_imp","name":"Imported shop"}',
        '{"type":"adAccount","id":"aa_imp","hubId":"hub_imp","platform":"meta","name":"Meta"}',
        '{"type":"spend","adAccountId":"aa_imp","workspaceId":"ws_imp","date":"2026-11-20","spendCents":100}',
        '{"type":"spend","adAccountId":"aa_imp","workspaceId":"ws_imp","date":"2026-11-20","spendCents":23}',
        '',
      ].join('\n'),
    );
    assert.deepEqual(await json(['import', file]), {
      imported: {
        account: 1,
        hub: 1,
        workspaceField: 0,
        workspace: 1,
        playbook: 0,
        optIn: 0,
        adAccount: 1,
        spend: 2,
        user: 0,
        channel: 0,
        media: 0,
        post: 0,
        organicMetrics: 0,
        paidMetrics: 0,
        reviewDay: 0,
        hubCpm: 0,
      },
    });
    const spend = await db.kysely.selectFrom('spend').select('spend_cents').where('ad_account_id', '=', 'aa_imp').execute();
    assert.deepEqual(spend, [{ spend_cents: '123' }]);
  });

  test('the same file again changes nothing; with --add its spend is added to what is stored', async () => {
    const file = path.join(dir, 'spend.ndjson');
    await writeFile(
      file,
      [
        '{"type":"spend","adAccountId":"aa_imp","workspaceId":"ws_imp","date":"2026-11-20","spendCents":100}',
        '{"type":"spend","adAccountId":"aa_imp","workspaceId":"ws_imp","date":"2026-11-20","spendCents":23}',
        '{"type":"spend","adAccountId":"aa_imp","workspaceId":null,"date":"2026-11-21","spendCents":7}',
      ].join('\n'),
    );
    const spend = () =>
      db.kysely
        .selectFrom('spend')
        .select(['workspace_id', 'date', 'spend_cents'])
        .where('ad_account_id', '=', 'aa_imp')
        .orderBy('date')
        .execute();
    const first = await hubops(['import', file]);
    assert.equal(first.stdout, 'Imported 3 spend.\nSpend per ad account, workspace and date: 1 new, 0 replaced, 1 unchanged.\n');
    const once = await snapshot(db);
    assert.deepEqual(await spend(), [
      { workspace_id: 'ws_imp', date: '2026-11-20', spend_cents: '123' },
      { workspace_id: null, date: '2026-11-21', spend_cents: '7' },
    ]);
    const again = await hubops(['import', file]);
    assert.deepEqual(again, {
      code: 0,
      stdout: 'Imported 3 spend.\nSpend per ad account, workspace and date: 0 new, 0 replaced, 2 unchanged.\n',
      stderr: '',
    });
    assert.deepEqual(await snapshot(db), once, 'a re-run writes nothing');
    const added = await hubops(['import', file, '--add']);
    assert.equal(added.stdout, 'Imported 3 spend.\nSpend per ad account, workspace and date: 0 new, 2 added to, 0 unchanged.\n');
    assert.deepEqual(await spend(), [
      { workspace_id: 'ws_imp', date: '2026-11-20', spend_cents: '246' },
      { workspace_id: null, date: '2026-11-21', spend_cents: '14' },
    ]);
  });

  test('a bad file exits 1 naming the line, and writes nothing', async () => {
    const file = path.join(dir, 'bad.ndjson');
    await writeFile(
      file,
      [
        '{"type":"account","id":"acc_bad","name":"Bad"}',
        '{"type":"hub","id":"hub_bad","accountId":"acc_bad","name":"Bad hub"}',
        '{"type":"workspace","id":"ws_bad","hubId":"hub_bad","name":"Bad shop","fields":{"region":"West"}}',
      ].join('\n'),
    );
    const before = await snapshot(db);
    await fails(1, ['import', file], /^hubops: line 3: workspace\.fields\.region: hub hub_bad has no field "region"/);
    assert.deepEqual(await snapshot(db), before);
  });

  test('several issues: one line each on stderr', async () => {
    const file = path.join(dir, 'bad2.ndjson');
    await writeFile(file, '{"type":"account","plan":"gold","name":"X"}\nnot json\n');
    const run = await hubops(['import', file, '--json']);
    assert.equal(run.code, 1);
    assert.equal(run.stdout, '');
    assert.deepEqual(
      run.stderr
        .trimEnd()
        .split('\n')
        .map((l) => l.replace(/\(.*\)$/, '(…)')),
      ['hubops: line 1: account.plan: must be one of standard, partner; got "gold"', 'hubops: line 2: not valid JSON (…)'],
    );
  });

  test('NUL, a lone surrogate, another control and bytes that are not UTF-8: refused by line and field, as over HTTP; nothing written', async () => {
    const file = path.join(dir, 'text.ndjson');
    await writeFile(
      file,
      Buffer.concat([
        Buffer.from('{"type":"account","id":"acc_txt","name":"Fine"}\r\n'),
        Buffer.from('{"type":"hub","id":"hub_txt","accountId":"acc_txt","name":"NUL\\u0000hub"}\n'),
        Buffer.from('{"type":"workspace","id":"ws_txt","hubId":"hub_txt","name":"lone \\ud800 surrogate"}\n'),
        Buffer.from('{"type":"workspace","id":"ws_txt2","hubId":"hub_txt","name":"ok","fields":{"x\\u0007":"bell"}}\n'),
        Buffer.from('{"type":"workspace","id":"ws_txt3","hubId":"hub_txt","name":"Latin-1 '),
        Buffer.from([0xe9]),
        Buffer.from('"}\n'),
        Buffer.from('{"type":"workspace","id":"ws_txt4","hubId":"hub_txt","name":"Café ok"}\n'),
      ]),
    );
    const before = await snapshot(db);
    const run = await hubops(['import', file, '--json']);
    assert.equal(run.code, 1, run.stderr);
    assert.deepEqual(run.stderr.trimEnd().split('\n'), [
      'hubops: line 2: hub.name: must not contain control characters (such as NUL), lone surrogates or Unicode noncharacters',
      'hubops: line 3: workspace.name: must not contain control characters (such as NUL), lone surrogates or Unicode noncharacters',
      'hubops: line 4: workspace.fields.x\\u{0007}: must not contain control characters (such as NUL), lone surrogates or Unicode noncharacters',
      'hubops: line 5: not valid UTF-8 text',
    ]);
    assert.deepEqual(await snapshot(db), before);
  });

  test('stdin with -, and a missing file', async () => {
    const out = await json(['import', '-'], { stdin: '{"type":"account","name":"From stdin"}\n' });
    assert.equal(out.imported.account, 1);
    await fails(1, ['import', path.join(dir, 'missing.ndjson')], /^hubops: cannot read .*missing\.ndjson: no such file$/);
    await fails(2, ['import'], /missing FILE/);
  });
});

describe('demo seed', () => {
  test('twice: the same ids, and the second run writes nothing', async () => {
    const first = await json(['demo', 'seed']);
    const afterFirst = await snapshot(db);
    const second = await json(['demo', 'seed']);
    assert.deepEqual(await snapshot(db), afterFirst);
    assert.equal(first.created, true);
    assert.equal(second.created, false);
    assert.deepEqual({ ...second, created: true }, first);
    assert.equal(first.accountId, 'acc_demo');
    assert.deepEqual(first.hubIds, ['hub_demo_brewline', 'hub_demo_pulse']);
    assert.equal(first.adminEmail, 'admin@demo.hubops.dev');
    assert.equal(first.adminPassword, 'hubops-demo');
    assert.equal(first.workspaceIds.length, 40);
    const hubs = await db.kysely.selectFrom('hubs').select('id').where('account_id', '=', 'acc_demo').orderBy('id').execute();
    assert.deepEqual(
      hubs.map((h) => h.id),
      [...first.hubIds].sort(),
    );
  });
});

describe('clients create', () => {
  test('confidential and public clients; the secret is printed once and stored only as a hash', async () => {
    const confidential = await json([
      'clients',
      'create',
      '--name',
      'Partner CRM',
      '--redirect-uri',
      'https://crm.example/callback',
      '--redirect-uri',
      'http://localhost:8080/cb',
    ]);
    assert.deepEqual(Object.keys(confidential).sort(), ['client_id', 'client_secret']);
    assert.ok(confidential.client_secret.length >= 43);
    const stored = await db.kysely
      .selectFrom('oauth_clients')
      .select(['metadata', 'provisioned'])
      .where('client_id', '=', confidential.client_id)
      .executeTakeFirstOrThrow();
    assert.equal(stored.provisioned, true);
    assert.deepEqual(stored.metadata.redirect_uris, ['https://crm.example/callback', 'http://localhost:8080/cb']);
    assert.match(String(stored.metadata.client_secret), /^sha256:[0-9a-f]{64}$/);
    assert.ok(!JSON.stringify(stored.metadata).includes(confidential.client_secret));
    const pub = await json(['clients', 'create', '--name', 'Desktop', '--redirect-uri', 'http://127.0.0.1:5555/cb', '--public']);
    assert.deepEqual(Object.keys(pub), ['client_id']);
    await fails(2, ['clients', 'create', '--name', 'X'], /missing required option --redirect-uri/);
    await fails(1, ['clients', 'create', '--name', 'X', '--redirect-uri', 'http://evil.example/cb'], /must use https/);
    await fails(1, ['clients', 'create', '--name', 'X', '--redirect-uri', 'https://x.example/cb#frag'], /fragment/);
  });
});

describe('usage, help and configuration', () => {
  test('unknown commands and subcommands exit 2', async () => {
    await fails(2, ['frobnicate'], /unknown command "frobnicate"/);
    await fails(2, ['keys', 'rotate'], /unknown command "keys rotate"/);
    await fails(2, ['keys'], /missing subcommand: hubops keys create\|list\|roll\|revoke/);
    const none = await hubops([]);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /missing command/);
  });

  test('--help prints usage on stdout and exits 0', async () => {
    const run = await hubops(['--help']);
    assert.equal(run.code, 0);
    assert.equal(run.stderr, '');
    for (const command of [
      'migrate',
      'demo seed',
      'import FILE',
      'accounts create',
      'hubs create',
      'hubs suspend HUB',
      'hubs resume HUB',
      'users create',
      'users add-to-hub',
      'keys create',
      'keys list',
      'keys revoke KEY_ID',
      'clients create',
    ]) {
      assert.ok(run.stdout.includes(`  ${command}`), command);
    }
    const one = await hubops(['keys', 'create', '--help']);
    assert.equal(one.code, 0);
    assert.match(
      one.stdout,
      /^usage: hubops keys create --hub H --name N \[--scope read\|embed\] \[--expires-in-days 30\|90\|365\] \[--public-key PEM\|BASE64URL\] \[--json\]/,
    );
  });

  test('--version and -V print the version in package.json and exit 0', async () => {
    const { version } = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) assert.deepEqual(await hubops([flag]), { code: 0, stdout: `hubops ${version}\n`, stderr: '' });
    assert.deepEqual(await hubops(['--version', '--json']), { code: 0, stdout: `${JSON.stringify({ version })}\n`, stderr: '' });
    await fails(2, ['--version', 'migrate'], /unknown option --version/);
  });

  test('invalid configuration exits 2 with one line naming the variable', async () => {
    const url = await hubops(['keys', 'list', '--hub', 'x', '--json'], { url: 'mysql://localhost/x' });
    assert.deepEqual(url, {
      code: 2,
      stdout: '',
      stderr: 'hubops: configuration error: DATABASE_URL must use postgres: or postgresql:, got mysql:\n',
    });
    const level = await hubops(['migrate', '--json'], { env: { LOG_LEVEL: 'loud' } });
    assert.equal(level.code, 2);
    assert.match(level.stderr, /^hubops: configuration error: LOG_LEVEL must be one of .*, got "loud"\n$/);
  });

  test('an unreachable database exits 1 with one line, no stack trace', async () => {
    await fails(1, ['migrate'], /^hubops: cannot reach the database: .*ECONNREFUSED/, {
      url: 'postgres://hubops:secret@127.0.0.1:1/hubops',
    });
  });

  test('human output without --json', async () => {
    const run = await hubops(['accounts', 'create', '--name', 'Friendly']);
    assert.equal(run.code, 0);
    assert.match(run.stdout, /^Created account acc_\S+ "Friendly" \(plan standard, API access off\)\.\n$/);
  });
});

describe('as a process', () => {
  // The same contract through `node src/cli/main.ts`: the process exits with the command's status
  // once its output is flushed, stdout carries only the result, stdin is the process's. (Help,
  // a missing command and an unreachable database are the same code paths, run in-process above.)
  test('exit 0: exactly one JSON document on stdout, nothing on stderr; stdin read', async () => {
    const [created, imported] = await Promise.all([
      spawnHubops(['accounts', 'create', '--name', 'Spawned Co', '--json']),
      spawnHubops(['import', '-', '--json'], { stdin: '{"type":"account","name":"Spawned from stdin"}\n' }),
    ]);
    for (const run of [created, imported]) {
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stderr, '');
      assert.ok(run.stdout.endsWith('}\n') && run.stdout.indexOf('\n') === run.stdout.length - 1, run.stdout);
    }
    const { id } = JSON.parse(created.stdout);
    assert.deepEqual(Object.keys(JSON.parse(created.stdout)), ['id']);
    assert.equal((await db.kysely.selectFrom('accounts').select('name').where('id', '=', id).executeTakeFirstOrThrow()).name, 'Spawned Co');
    assert.equal(JSON.parse(imported.stdout).imported.account, 1);
    assert.equal((await db.kysely.selectFrom('accounts').select('id').where('name', '=', 'Spawned from stdin').execute()).length, 1);
  });

  test('exit 1 and 2: nothing on stdout, the reason in one line on stderr (usage adds a line)', async () => {
    const [refused, usage, config] = await Promise.all([
      spawnHubops(['hubs', 'create', '--account', 'acc_nope', '--name', 'X', '--json']),
      spawnHubops(['accounts', 'create', '--plan', 'standard', '--json']),
      spawnHubops(['keys', 'list', '--hub', 'x', '--json'], { url: 'mysql://localhost/x' }),
    ]);
    failed(refused, 1, /^hubops: account acc_nope does not exist$/);
    failed(usage, 2, /missing required option --name/);
    assert.deepEqual(config, {
      code: 2,
      stdout: '',
      stderr: 'hubops: configuration error: DATABASE_URL must use postgres: or postgresql:, got mysql:\n',
    });
  });

  test('the package bin: hubops --version prints the version and exits 0', async () => {
    const { version } = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    const run = await new Promise<Run>((resolve, reject) => {
      const child = spawn(process.execPath, [path.resolve(import.meta.dirname, '../../bin/hubops.js'), '--version'], { env: cliEnv({}) });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk) => (stdout += chunk));
      child.stderr.on('data', (chunk) => (stderr += chunk));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    assert.deepEqual(run, { code: 0, stdout: `hubops ${version}\n`, stderr: '' });
  });
});
