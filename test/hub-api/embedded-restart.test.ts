// `npm start` without DATABASE_URL (contract §1, issue 2): the embedded PostgreSQL lives under
// $DATA_DIR/postgres, starts and stops with the process, and a second start reuses its data — the
// demo key printed by the first start still works, and no second demo is seeded.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { freePort } from '../../src/platform/net.ts';
import { httpRequest } from '../support/http.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const NODE = path.join(ROOT, 'node_modules/.bin/node');

let dataDir: string | undefined;
const children: ReturnType<typeof spawn>[] = [];

after(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Runs `src/main.ts` on the embedded database in `dir` until /healthz answers; returns its output so far and a stop. */
async function start(dir: string): Promise<{ base: string; output: () => string; stop: () => Promise<number | null> }> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  delete env.HUBOPS_DEMO;
  const child = spawn(NODE, [path.join(ROOT, 'src/main.ts')], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode} before answering:\n${output}`);
    const ok = await httpRequest(`${base}/healthz`, { timeoutMs: 1_000 }).then((r) => r.status === 200, () => false);
    // The banner (with the demo key) is written right after listen: wait for it too.
    if (ok && output.includes('hubops is running')) break;
    if (Date.now() > deadline) throw new Error(`server did not start within 90 s:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    base,
    output: () => output,
    stop: async () => {
      child.kill('SIGTERM');
      const [code] = await exited;
      return code;
    },
  };
}

test('embedded PostgreSQL: started and stopped with the process, and a second start reuses the data', { timeout: 240_000 }, async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'hubops-embedded-'));
  // mkdtemp makes it 0700; as root, PostgreSQL runs as `postgres` and must reach its directory
  // (as it reaches ./data, created with the usual 0755).
  await chmod(dataDir, 0o755);
  const pidFile = path.join(dataDir, 'postgres', 'postmaster.pid');

  const first = await start(dataDir);
  const key = first.output().match(/shown once, copy it now\):\n\s+(\S+)/)?.[1];
  assert.ok(key, `the first start prints a demo key:\n${first.output()}`);
  const summary = await httpRequest(`${first.base}/v1/hub/opt-in-summary`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(summary.status, 200);
  assert.ok(existsSync(pidFile), 'the embedded postmaster runs under $DATA_DIR/postgres');
  const postmaster = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  assert.ok(isAlive(postmaster));

  assert.equal(await first.stop(), 0, first.output());
  assert.equal(isAlive(postmaster), false, 'SIGTERM stops the embedded PostgreSQL too');
  assert.equal(existsSync(pidFile), false, 'and it shut down cleanly (no stale postmaster.pid)');

  const second = await start(dataDir);
  assert.doesNotMatch(second.output(), /Demo data seeded/, 'the second start seeds nothing');
  const again = await httpRequest(`${second.base}/v1/hub/opt-in-summary`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(again.status, 200, 'the key created by the first start still works: same data');
  assert.deepEqual(JSON.parse(again.text).activeOptIns, JSON.parse(summary.text).activeOptIns);
  assert.equal(await second.stop(), 0, second.output());
  assert.equal(existsSync(pidFile), false);
});
