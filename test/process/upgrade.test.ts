// An upgrade as an operator does it: the previous release's server makes a DATA_DIR (its demo, its
// key), stops, and this code starts on the same directory. "Previous release" is this repository
// just before its newest migration was added (git archive of that commit, run with today's
// node_modules): the newest migration is the one an old database lacks. The new server applies it
// at start, and the old key reads the same figures.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { runCli } from '../../src/cli/cli.ts';
import { httpRequest } from '../support/http.ts';
import { dataDir as newDataDir, demoKey, hubopsEnv, killGroup, killStarted, NODE, ROOT, startServer } from './support.ts';

const run = promisify(execFile);
const dirs: string[] = [];
after(async () => {
  killStarted();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** The commit before the one that added the newest migration, and that migration's name. */
async function previousRelease(): Promise<{ commit: string; migration: string }> {
  const newest = (await readdir(path.join(ROOT, 'src/db/migrations')))
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .at(-1)!;
  const { stdout } = await run('git', ['log', '-1', '--format=%H', '--diff-filter=A', '--', `src/db/migrations/${newest}`], { cwd: ROOT });
  assert.ok(
    stdout.trim(),
    `git knows no commit that added ${newest}: the upgrade test needs the repository's history (not a shallow clone)`,
  );
  return { commit: `${stdout.trim()}^`, migration: newest.replace(/\.sql$/, '') };
}

const summary = async (base: string, key: string) => {
  const response = await httpRequest(`${base}/v1/hub/opt-in-summary`, { headers: { authorization: `Bearer ${key}` } });
  return { status: response.status, body: response.text };
};

test("the previous release's DATA_DIR starts with this code: the newer migration is applied and the data and keys are there", {
  timeout: 240_000,
  skip: process.env.DATABASE_URL ? 'the embedded database is what is upgraded here: runs in the pass without DATABASE_URL' : false,
}, async () => {
  const { commit, migration } = await previousRelease();
  const old = await mkdtemp(path.join(tmpdir(), 'hubops-previous-'));
  dirs.push(old);
  await run('/bin/sh', ['-c', `git archive --format=tar "$1" package.json src README.md docs | tar -x -C "$2"`, 'sh', commit, old], {
    cwd: ROOT,
  });
  await symlink(path.join(ROOT, 'node_modules'), path.join(old, 'node_modules'));

  const dataDir = await newDataDir('hubops-upgrade-', { initialised: true });
  dirs.push(dataDir);
  const env = hubopsEnv({ dataDir });
  const previous = await startServer(NODE, [path.join(old, 'src/main.ts')], env);
  const { key } = demoKey(previous.output());
  const before = await summary(previous.base, key);
  assert.equal(before.status, 200, before.body);
  killGroup(previous.child, 'SIGTERM');
  assert.equal((await previous.exited)[0], 0, previous.output());

  const current = await startServer(NODE, ['src/main.ts'], env, previous.port);
  try {
    assert.match(
      current.output(),
      new RegExp(`"applied":\\[[^\\]]*"${migration}"`),
      `the start applied ${migration}:\n${current.output()}`,
    );
    assert.doesNotMatch(current.output(), /Demo Hub API key/, 'the demo is not seeded again');
    assert.deepEqual(await summary(current.base, key), before);
  } finally {
    killGroup(current.child, 'SIGTERM');
    assert.equal((await current.exited)[0], 0, current.output());
  }
  // Nothing is left to apply.
  let stdout = '';
  const io = { stdout: (t: string) => (stdout += t), stderr: () => {}, env, stdin: Readable.from([]) };
  assert.equal(await runCli(['migrate', '--json'], io), 0);
  assert.deepEqual(JSON.parse(stdout), { applied: [] });
});
