// A server must own the embedded postmaster it uses: one started by another process (a CLI
// command, another server) stops with that process, and the server would be left without a
// database — its requests 503 and its usage flush failing. It waits for a CLI to finish and
// starts its own; a second server on the same DATA_DIR is refused in one line.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { httpRequest } from '../support/http.ts';
import {
  dataDir as newDataDir,
  demoKey,
  hubopsEnv,
  isAlive,
  killGroup,
  killStarted,
  NODE,
  postmasterPid,
  ROOT,
  startServer,
  waitForConnection,
} from './support.ts';

const MAIN = path.join(ROOT, 'src/main.ts');
let dataDir: string | undefined;

let cli: ReturnType<typeof spawn> | undefined;

after(async () => {
  killStarted();
  if (cli?.exitCode === null) killGroup(cli, 'SIGKILL');
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

test('a server started while a CLI command holds the embedded database gets its own postmaster, and keeps it after the CLI ends', {
  timeout: 120_000,
}, async () => {
  dataDir = await newDataDir('hubops-shared-', { initialised: true });
  const env = hubopsEnv({ dataDir });
  // `import -` holds the database until its stdin ends.
  cli = spawn(NODE, [path.join(ROOT, 'src/cli/main.ts'), 'import', '-'], {
    cwd: ROOT,
    env,
    detached: true,
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  const cliExited = once(cli, 'exit') as Promise<[number | null]>;
  await waitForConnection(dataDir, 'hubops-cli');
  const cliPostmaster = postmasterPid(dataDir)!;
  assert.ok(isAlive(cliPostmaster));

  const serverStarting = startServer(NODE, [MAIN], env);
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  cli.stdin!.end();
  const [cliCode] = await cliExited;
  assert.equal(cliCode, 0);
  const server = await serverStarting;

  assert.notEqual(postmasterPid(dataDir), cliPostmaster, 'the server runs a postmaster of its own');
  assert.equal(isAlive(cliPostmaster), false);
  const { key } = demoKey(server.output());
  const response = await httpRequest(`${server.base}/v1/hub/playbook-opt-ins?limit=1`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(response.status, 200, response.text);
  assert.equal((await httpRequest(`${server.base}/readyz`)).status, 200, 'the database is still there');

  // A second server on the same DATA_DIR would depend on the first one's postmaster: refused.
  const second = spawn(NODE, [MAIN], { cwd: ROOT, env: { ...env, PORT: '0' }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  second.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(second, 'exit')) as [number | null];
  assert.equal(code, 1, stderr);
  assert.equal(
    stderr,
    `hubops: the embedded PostgreSQL in ${path.join(dataDir, 'postgres')} is in use by another hubops process; stop that one first, or give every instance the same DATABASE_URL\n`,
  );
  assert.equal((await httpRequest(`${server.base}/readyz`)).status, 200, 'the first server is unaffected');

  killGroup(server.child, 'SIGTERM');
  const [serverCode] = await server.exited;
  assert.equal(serverCode, 0, server.output());
  assert.equal(postmasterPid(dataDir), undefined);
});
