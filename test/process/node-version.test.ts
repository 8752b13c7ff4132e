// Issue 24 item 7. On a Node older than 22.18 (the system Node after `npm ci --omit=dev` dropped
// the bundled one), `npm start`, `npm run hubops` and bin/hubops.js stop with one line naming the
// Node needed and this one, instead of ERR_UNKNOWN_FILE_EXTENSION on the first .ts file.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { ROOT } from './support.ts';

const OLD_NODE = '/usr/bin/node';
const oldVersion = existsSync(OLD_NODE) ? execFileSync(OLD_NODE, ['--version'], { encoding: 'utf8' }).trim() : '';
const [major = 0, minor = 0] = oldVersion.slice(1).split('.').map(Number);
const skip = oldVersion === '' || major > 22 || (major === 22 && minor >= 18) ? `no Node older than 22.18 at ${OLD_NODE}` : false;

const scripts = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts as Record<string, string>;

/** An npm script's command as it would run on the old Node (npm runs `node` from the PATH). */
function onOldNode(script: string): string[] {
  const words = scripts[script]!.split(' ');
  assert.equal(words[0], 'node');
  return words.slice(1);
}

async function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(OLD_NODE, args, { cwd: ROOT, env: { PATH: process.env.PATH, PORT: '0' } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, stdout, stderr };
}

for (const [what, args] of [
  ['npm start', () => onOldNode('start')],
  ['npm run hubops', () => [...onOldNode('hubops'), 'keys', 'list', '--hub', 'hub_x']],
  ['bin/hubops.js', () => [path.join(ROOT, 'bin/hubops.js'), '--version']],
] as const) {
  test(`${what} on Node ${oldVersion || '< 22.18'}: one line naming the Node needed`, { skip }, async () => {
    const result = await run(args());
    assert.equal(result.code, 1, result.stderr);
    assert.equal(result.stdout, '');
    assert.equal(
      result.stderr,
      `hubops needs Node.js 22.18 or newer (this is ${oldVersion}): run npm install without --omit=dev (it brings Node 22 for npm scripts), or install Node 22 LTS from https://nodejs.org\n`,
    );
    assert.doesNotMatch(result.stderr, /ERR_UNKNOWN_FILE_EXTENSION/);
  });
}
