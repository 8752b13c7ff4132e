// `hubops backup` and `restore` with DATABASE_URL: from one database into another, empty one (the
// round trip of the embedded database and a running server is test/process/backup-restore.test.ts).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, test } from 'node:test';
import pg from 'pg';
import { runCli } from '../../src/cli/cli.ts';
import { createTestDb, type TestDb } from '../support/db.ts';

let source: TestDb | undefined;
let work: string | undefined;
const created: string[] = [];
const serverUrl = () => process.env.HUBOPS_TEST_SERVER_URL!;

after(async () => {
  await source?.drop();
  const admin = new pg.Client({ connectionString: serverUrl() });
  await admin.connect();
  for (const name of created) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
  if (work) await rm(work, { recursive: true, force: true });
});

async function cli(args: string[], env: NodeJS.ProcessEnv) {
  let stdout = '';
  let stderr = '';
  const io = { stdout: (t: string) => (stdout += t), stderr: (t: string) => (stderr += t), env, stdin: Readable.from([]) };
  return { code: await runCli(args, io), stdout, stderr };
}

async function counts(url: string): Promise<Record<string, number>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const tables = await client.query<{ name: string }>(
      `SELECT relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE nspname = 'public' AND relkind = 'r'`,
    );
    const result: Record<string, number> = {};
    for (const { name } of tables.rows) {
      const n = Number((await client.query(`SELECT count(*) AS n FROM "${name}"`)).rows[0].n);
      if (n > 0) result[name] = n;
    }
    return result;
  } finally {
    await client.end();
  }
}

test('a DATABASE_URL database backed up and restored into an empty one has every row; a database with data is refused without --force', {
  timeout: 120_000,
}, async () => {
  source = await createTestDb();
  work = await mkdtemp(path.join(tmpdir(), 'hubops-backup-ext-'));
  const key = randomBytes(32).toString('base64url');
  const env = { DATABASE_URL: source.url, DATA_DIR: work, HUBOPS_SECRETS_KEY: key, LOG_LEVEL: 'silent' };
  assert.equal((await cli(['demo', 'seed'], env)).code, 0);
  // An uploaded file under DATA_DIR/media (the disk media store's layout), and an upload in progress.
  await mkdir(path.join(work, 'media', 'hub_demo_brewline'), { recursive: true });
  await writeFile(path.join(work, 'media', 'hub_demo_brewline', 'logo.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2]));
  await mkdir(path.join(work, 'media', '.staging', 'x'), { recursive: true });
  await writeFile(path.join(work, 'media', '.staging', 'x', 'part.part'), 'half');
  const file = path.join(work, 'db.backup');
  const backup = await cli(['backup', file, '--json'], env);
  assert.equal(backup.code, 0, backup.stderr);
  const backedUp = JSON.parse(backup.stdout) as { rows: Record<string, number>; secretsKey: boolean };
  assert.equal(backedUp.secretsKey, false, 'HUBOPS_SECRETS_KEY is not copied into the backup');
  assert.equal((JSON.parse(backup.stdout) as { media: number }).media, 1, 'the media file, not the staging');
  assert.deepEqual(await counts(source.url), backedUp.rows);
  assert.equal((await cli(['backup', file], env)).code, 1, 'an existing file is kept without --force');

  const name = `hubops_restore_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl() });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  created.push(name);
  const url = new URL(serverUrl());
  url.pathname = `/${name}`;
  const target = { ...env, DATABASE_URL: url.toString(), DATA_DIR: path.join(work, 'restored') };
  const restored = await cli(['restore', file, '--json'], target);
  assert.equal(restored.code, 0, restored.stderr);
  assert.deepEqual(await counts(url.toString()), backedUp.rows);
  assert.deepEqual(
    await readFile(path.join(work, 'restored', 'media', 'hub_demo_brewline', 'logo.png')),
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2]),
  );
  assert.equal(existsSync(path.join(work, 'restored', 'media', '.staging')), false);

  const again = await cli(['restore', file], target);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /already holds hubops data: restore into an empty database, or give --force/);
  const forced = await cli(['restore', file, '--force'], target);
  assert.equal(forced.code, 0, forced.stderr);
  assert.deepEqual(await counts(url.toString()), backedUp.rows, 'a forced restore replaces the rows, it does not add to them');
});
