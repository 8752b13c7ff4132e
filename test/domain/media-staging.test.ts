// Staging of uploads cut by a crash does not linger: each process stages in a directory of its
// own (removed on close); a directory whose process is gone is removed at the next start and by
// the periodic sweep of any living process, whatever its age; only staging whose owner cannot be
// told keeps the one-hour rule. Real processes are killed with SIGKILL, as a crash would.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, afterEach, beforeEach, test } from 'node:test';
import { openDiskMediaStore } from '../../src/domain/media/media-store.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const NODE = path.join(ROOT, 'node_modules/.bin/node');
const HOUR = 60 * 60 * 1000;
let root: string;
const children: ChildProcess[] = [];

beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'hubops-staging-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});
after(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

const staging = () => path.join(root, '.staging');
const stagingDirs = async () => (await readdir(staging())).sort();

/** A process that has staged 2 MB of an upload and waits, as one mid-upload does. */
async function uploadingProcess(): Promise<{ child: ChildProcess; dir: string }> {
  const before = new Set(await readdir(staging()).catch(() => []));
  const child = spawn(NODE, [path.join(ROOT, 'test/domain/media-staging-process.ts'), root], {
    env: { ...process.env, MB: '2' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  while (!output.includes('staged')) {
    assert.equal(child.exitCode, null, 'the uploading process runs');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const dir = (await readdir(staging())).find((name) => !before.has(name));
  assert.ok(dir, 'the process staged in a directory of its own');
  assert.equal((await readdir(path.join(staging(), dir))).length, 1);
  return { child, dir };
}

async function kill(child: ChildProcess): Promise<void> {
  child.kill('SIGKILL');
  await once(child, 'exit');
}

test('a process stages in a directory of its own, named by host, pid and start time, removed on close', async () => {
  const store = await openDiskMediaStore(root);
  const staged = await store.stage();
  await staged.write(Buffer.from('bytes'));
  const [own] = await stagingDirs();
  assert.match(own!, new RegExp(`^[0-9a-f]{8}-${process.pid}-\\w+$`));
  assert.equal((await readdir(path.join(staging(), own!))).length, 1);
  await store.close();
  assert.deepEqual(await stagingDirs(), []);
  await assert.rejects(store.stage(), /closed/);
  await staged.discard(); // closes its handle; the file went with the directory
});

test('a start removes the staging of a process killed mid-upload at once, and keeps a living one', async () => {
  const dead = await uploadingProcess();
  const living = await uploadingProcess();
  await kill(dead.child);
  const store = await openDiskMediaStore(root);
  try {
    const dirs = await stagingDirs();
    assert.ok(!dirs.includes(dead.dir), 'the dead process’s staging is gone, though only seconds old');
    assert.ok(dirs.includes(living.dir), 'the living process’s staging is kept');
    assert.equal((await readdir(path.join(staging(), living.dir))).length, 1);
  } finally {
    await store.close();
    await kill(living.child);
  }
});

test('a running process sweeps the staging of one that died, without a restart', async () => {
  const store = await openDiskMediaStore(root, { sweepEveryMs: 50 });
  try {
    const dead = await uploadingProcess();
    await kill(dead.child);
    const deadline = Date.now() + 5_000;
    while ((await stagingDirs()).includes(dead.dir)) {
      assert.ok(Date.now() < deadline, 'swept within a few sweeps');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    await store.close();
  }
});

test('staging whose owner cannot be told (another host, an older layout) keeps the one-hour rule', async () => {
  await mkdir(staging(), { recursive: true });
  const old = new Date(Date.now() - 2 * HOUR);
  const files = {
    freshLegacy: path.join(staging(), 'fresh.part'),
    oldLegacy: path.join(staging(), 'old.part'),
    freshForeign: path.join(staging(), '0badc0de-1-1', 'fresh.part'),
    oldForeign: path.join(staging(), '0badc0de-2-2', 'old.part'),
  };
  for (const file of Object.values(files)) {
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, 'x');
  }
  for (const file of [files.oldLegacy, files.oldForeign]) await utimes(file, old, old);
  await utimes(path.dirname(files.oldForeign), old, old);
  const store = await openDiskMediaStore(root);
  try {
    const dirs = await stagingDirs();
    assert.ok(dirs.includes('fresh.part') && dirs.includes('0badc0de-1-1'), 'recent unowned staging is kept');
    assert.ok(!dirs.includes('old.part') && !dirs.includes('0badc0de-2-2'), 'unowned staging older than an hour is removed');
  } finally {
    await store.close();
  }
});
