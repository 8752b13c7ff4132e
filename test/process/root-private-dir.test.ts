// Issue 10 item 18. As root, the embedded PostgreSQL runs as the `postgres` user; from a place
// that user cannot enter (a clone under /root, DATA_DIR inside a 0700 directory) the start used
// to crash with an unhandled `spawn … initdb EACCES` stack trace and leave the database password
// in a world-readable /tmp/pg-password-* file. Now: one line saying what and how to fix, exit 1,
// and the password is never written outside DATA_DIR.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { watch } from 'node:fs';
import { chmod, mkdtemp, readdir, rm, stat, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { startEmbedded } from '../../src/db/embedded.ts';
import { hubopsEnv, NODE, ROOT } from './support.ts';

const asRoot = process.getuid?.() === 0;
const cleanups: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const cleanup of cleanups) await cleanup();
});

async function privateDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'hubops-private-')); // 0700
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

const passwordFilesInTmp = async () => (await readdir(tmpdir())).filter((name) => name.startsWith('pg-password-'));

async function run(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(NODE, args, { cwd: ROOT, env: { ...env, PORT: '0' }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stderr };
}

function assertOneClearLine(result: { code: number | null; stderr: string }, blocked: string): void {
  assert.equal(result.code, 1, result.stderr);
  assert.equal(result.stderr.trim().split('\n').length, 1, `one line, no stack trace:\n${result.stderr}`);
  assert.equal(
    result.stderr,
    `hubops: the embedded PostgreSQL cannot start: running as root, it runs as the "postgres" user, which cannot enter ${blocked}. Run hubops as a normal user, or set DATABASE_URL to an external PostgreSQL.\n`,
  );
}

test('as root with DATA_DIR inside a 0700 directory: one clear line and exit 1, from the server and the CLI', {
  skip: !asRoot && 'needs root',
}, async () => {
  const before = await passwordFilesInTmp();
  const dir = await privateDir();
  const env = hubopsEnv({ dataDir: path.join(dir, 'data') });
  assertOneClearLine(await run([path.join(ROOT, 'src/main.ts')], env), dir);
  assertOneClearLine(await run([path.join(ROOT, 'src/cli/main.ts'), 'keys', 'list', '--hub', 'hub_x'], env), dir);
  assert.deepEqual(await passwordFilesInTmp(), before, 'no password file left in /tmp');
});

test('as root from a clone the postgres user cannot enter: one clear line naming it, no password in /tmp', {
  skip: !asRoot && 'needs root',
}, async () => {
  const before = await passwordFilesInTmp();
  // A clone under a private directory, as under /root: the same tree seen through a path the
  // postgres user cannot traverse (Node keeps the symlinked path with --preserve-symlinks).
  const home = await privateDir();
  const clone = path.join(home, 'hubops');
  await symlink(ROOT, clone);
  const dataDir = await mkdtemp(path.join(tmpdir(), 'hubops-data-'));
  await chmod(dataDir, 0o755);
  cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
  const result = await run(['--preserve-symlinks', '--preserve-symlinks-main', path.join(clone, 'src/main.ts')], hubopsEnv({ dataDir }));
  assertOneClearLine(result, home);
  assert.deepEqual(await passwordFilesInTmp(), before, 'no password file left in /tmp');
});

test('initdb never sees a password file in /tmp; the one in DATA_DIR is 0600', { timeout: 120_000 }, async () => {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'hubops-pw-'));
  await chmod(dataDir, 0o755);
  cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
  const seen: string[] = [];
  const watcher = watch(tmpdir(), (_event, name) => {
    if (name?.startsWith('pg-password-')) seen.push(name);
  });
  try {
    const database = await startEmbedded(dataDir, { persistent: false });
    await database.stop();
  } finally {
    watcher.close();
  }
  assert.deepEqual(seen, [], 'no password file was created in /tmp, even briefly');
  assert.equal((await stat(path.join(dataDir, 'postgres.password'))).mode & 0o777, 0o600);
});
