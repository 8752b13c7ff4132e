// The embedded postmaster runs in its own session, so a terminal's Ctrl-C no longer reaches it:
// a CLI interrupted while it holds the embedded database must stop that database itself.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { dataDir as newDataDir, hubopsEnv, isAlive, NODE, postmasterPid, ROOT, waitForConnection, waitUntil } from './support.ts';

let dataDir: string | undefined;
after(async () => {
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

test('Ctrl-C on a CLI command that started the embedded database leaves no postmaster', { timeout: 120_000 }, async () => {
  dataDir = await newDataDir('hubops-cli-signal-', { initialised: true });
  // `import -` waits on stdin, which stays open: the command is mid-way when Ctrl-C comes, once
  // it is connected to the database it started (a pid file alone is too early: the CLI installs
  // its signal handlers a moment after spawning the postmaster).
  const cli = spawn(NODE, [path.join(ROOT, 'src/cli/main.ts'), 'import', '-'], {
    cwd: ROOT,
    env: hubopsEnv({ dataDir }),
    detached: true,
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  let stderr = '';
  cli.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(cli, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  try {
    await waitForConnection(dataDir, 'hubops-cli');
    const postmaster = postmasterPid(dataDir)!;
    assert.ok(isAlive(postmaster));
    process.kill(-cli.pid!, 'SIGINT');
    const [code, signal] = await exited;
    assert.ok(signal === 'SIGINT' || code === 130, `the CLI ends by the signal (code ${code}, signal ${signal}):\n${stderr}`);
    await waitUntil(() => !isAlive(postmaster), 'the postmaster to stop', 15_000);
    await waitUntil(() => postmasterPid(dataDir!) === undefined, 'a clean shutdown (no postmaster.pid)', 15_000);
  } finally {
    if (cli.exitCode === null && cli.signalCode === null) process.kill(-cli.pid!, 'SIGKILL');
  }
});
