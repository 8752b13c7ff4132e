// Every shell example in README.md and docs/*.md, run verbatim against a freshly started demo
// server, as a new user would run them: `node src/main.ts` on an empty database, the demo key
// copied from the banner, each page's blocks in order in one shell session (what a block exports,
// the next one sees). The placeholders a user fills in are filled the same way (PLACEHOLDERS); a
// browser step (sign in, Allow) is played over HTTP with the demo admin. A block fails when it
// exits non-zero or prints something of another shape than the response shown after it
// (test/support/docs-examples.ts says how responses are compared).
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { examplesOf, parseShape, responseMismatch, shapeDifferences, textMatches, type Example } from '../support/docs-examples.ts';
import { completeAuthorization } from '../support/oauth-flow.ts';
import type { TestApp } from '../support/app.ts';
import { startDemo, type Demo } from '../support/demo.ts';
import { ROOT } from '../process/support.ts';

/** Where the docs send every request: the default base URL, rewritten to the test server's port. */
const DOCS_ORIGIN = 'localhost:3000';
const DEMO_ADMIN = { email: 'admin@demo.hubops.dev', password: 'hubops-demo' };
const CALLBACK = 'http://localhost:8976/callback';

const missingTool = ['curl', 'jq', 'openssl'].find((tool) => {
  try {
    execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    return false;
  } catch {
    return true;
  }
});
if (missingTool) console.log(`# SKIP docs examples: ${missingTool} is not installed (the examples use curl, jq and openssl)`);

test('the shape comparison refuses what differs', () => {
  const shape = parseShape('{"data": [{"id": "a", "n": 1}, …], "nextCursor": null, …}');
  assert.deepEqual(
    shapeDifferences(shape, {
      data: [
        { id: 'x', n: 2 },
        { id: 'y', n: 3 },
      ],
      nextCursor: null,
      extra: true,
    }),
    [],
  );
  assert.deepEqual(shapeDifferences(shape, { data: [], nextCursor: null }), ['$.data: shows 1 elements, got 0']);
  assert.deepEqual(shapeDifferences(shape, { data: [{ id: 'x', n: '2' }], nextCursor: 'c' }), [
    '$.data[0].n: shown number, got string "2"',
    '$.nextCursor: shown null, got string "c"',
  ]);
  assert.deepEqual(shapeDifferences(shape, { data: [{ id: 'x', n: 1 }, { id: 'y' }], nextCursor: null }), [
    '$.data[1].n: shown, missing from the output',
  ]);
  const closed = parseShape('{"a": [1]}');
  assert.deepEqual(shapeDifferences(closed, { a: [1, 2], b: 0 }), [
    '$.a: shows 1 elements (no `…`), got 2',
    '$.b: in the output, not shown',
  ]);
  assert.throws(() => parseShape('{"a": […]}'), /needs an element/);
  assert.throws(() => parseShape('{"a": 7f1c…}'), /expected/);
  assert.ok(textMatches('id,name\n…\nlast,…', 'id,name\n1,a\n2,b\nlast,row'));
  assert.ok(!textMatches('id,name\n…', 'id,nom\n1,a'));
});

interface Placeholder {
  text: string;
  what: string;
  fill: (page: PageRun) => Promise<string>;
}

interface PageRun {
  page: string;
  /** What each block printed so far, in order. */
  outputs: string[];
}

let demo: Demo | undefined;
let shellEnv: NodeJS.ProcessEnv;
let key: string;

/**
 * What a user types in place of a documented placeholder: the key the first start printed, and
 * the address the browser lands on after opening the authorization URL the page printed, signing
 * in as the demo admin and clicking Allow (the workspace left on "All workspaces in the hub").
 */
const PLACEHOLDERS: Placeholder[] = [
  { text: 'hubops_…', what: 'the demo key printed at the first start', fill: async () => key },
  {
    text: `'${CALLBACK}?code=…'`,
    what: 'the address the browser lands on after sign-in and Allow',
    fill: async (run) => {
      const printed = [...run.outputs]
        .reverse()
        .join('\n')
        .match(/http:\/\/localhost:\d+\/oauth\/authorize\?\S+/)?.[0];
      assert.ok(printed, `${run.page}: no authorization URL printed before the browser step`);
      const base = new URL(printed).origin;
      const result = await completeAuthorization({ baseUrl: base } as TestApp, printed, {
        ...DEMO_ADMIN,
        redirectUri: CALLBACK,
        // The demo admin administers both hubs: the consent page asks which; its first, Brewline.
        hub: 'hub_demo_brewline',
        workspace: '',
      });
      assert.ok(
        result.callback,
        `${run.page}: the browser did not land on ${CALLBACK}: ${result.response.status} ${result.pages.at(-1)?.slice(0, 500)}`,
      );
      return `'${result.callback.toString()}'`;
    },
  },
];

before(async () => {
  if (missingTool) return;
  demo = await startDemo('hubops-docs-');
  key = demo.key;
  // The shell a user types in: their PATH (not the test runner's node_modules/.bin), the same
  // database settings as the server, nothing of the test runner's.
  const PATH = (demo.env.PATH ?? '')
    .split(':')
    .filter((p) => !p.includes('node_modules'))
    .join(':');
  // BASE: what the note atop each page asks a user to export first, the server's address.
  shellEnv = { ...demo.env, PATH, LOG_LEVEL: 'warn', BASE: `http://localhost:${demo.server.port}` };
  for (const name of Object.keys(shellEnv))
    if (name === 'PORT' || name.startsWith('HUBOPS_TEST_') || name.startsWith('npm_')) delete shellEnv[name];
});

after(async () => {
  await demo?.stop();
});

async function pages(): Promise<string[]> {
  const docs = (await readdir(path.join(ROOT, 'docs')))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...docs];
}

/** Runs one block in the page's shell session; resolves with its exit code and output. */
function runBlock(code: string, session: string, cwd: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const state = path.join(session, 'env.sh');
  const script = `set -eo pipefail\n[ -f "$DOCS_STATE" ] && source "$DOCS_STATE"\ncd ${JSON.stringify(cwd)}\n${code}\nexport -p > "$DOCS_STATE"\n`;
  return new Promise((resolve, reject) => {
    // TMPDIR: what the examples make with mktemp goes where the test removes it.
    const child = spawn('bash', ['-c', script], {
      env: { ...shellEnv, DOCS_STATE: state, TMPDIR: session },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

test('every shell example in the docs runs as written against a fresh demo server', {
  skip: missingTool ? `${missingTool} is not installed` : false,
}, async () => {
  const failures: string[] = [];
  let executed = 0;
  const skipped: string[] = [];
  for (const page of await pages()) {
    const examples: Example[] = examplesOf(page, await readFile(path.join(ROOT, page), 'utf8'));
    const session = await mkdtemp(path.join(tmpdir(), 'hubops-docs-shell-'));
    const run: PageRun = { page, outputs: [] };
    try {
      for (const example of examples) {
        const where = `${page}:${example.line}`;
        if (example.skip) {
          skipped.push(`${where} — ${example.skip}`);
          // The start the test made itself: what it printed is what the page shows after it.
          if (/\bnpm start$/m.test(example.code) && example.response?.lang === 'text') {
            const lines = demo!.server.output().split('\n');
            const from = lines.findIndex((l) => l.startsWith('hubops is running'));
            const to = lines.findIndex((l) => l.includes('shown once'));
            const banner = lines.slice(from, to + 2).join('\n');
            if (
              from === -1 ||
              to === -1 ||
              !textMatches(example.response.text.replaceAll(DOCS_ORIGIN, `localhost:${demo!.server.port}`), banner)
            ) {
              failures.push(`${where}: the first start's banner is not the one shown at line ${example.response.line}:\n${banner}`);
            }
          }
          continue;
        }
        let code = example.code.replaceAll(DOCS_ORIGIN, `localhost:${demo!.server.port}`);
        for (const placeholder of PLACEHOLDERS) {
          if (code.includes(placeholder.text)) code = code.replaceAll(placeholder.text, await placeholder.fill(run));
        }
        if (code.includes('…')) {
          failures.push(`${where}: a placeholder no user could run as written (\`…\`): ${code.split('\n').find((l) => l.includes('…'))}`);
          continue;
        }
        executed += 1;
        // In the checkout, where a user runs npm.
        const result = await runBlock(code, session, ROOT);
        run.outputs.push(result.stdout);
        if (result.status !== 0) {
          failures.push(
            `${where}: exited ${result.status}\n${code}\nstdout: ${result.stdout.slice(0, 1500)}\nstderr: ${result.stderr.slice(0, 1500)}`,
          );
          continue;
        }
        if (example.response) {
          const shown = {
            ...example.response,
            text: example.response.text.replaceAll(DOCS_ORIGIN, `localhost:${demo!.server.port}`).replaceAll('$BASE', shellEnv.BASE!),
          };
          const mismatch = responseMismatch(shown, result.stdout);
          if (mismatch) failures.push(`${where} (response at line ${example.response.line}): ${mismatch}`);
        }
      }
    } finally {
      await rm(session, { recursive: true, force: true });
    }
  }
  for (const skip of skipped) console.log(`docs example skipped: ${skip}`);
  console.log(`docs examples executed: ${executed}, skipped: ${skipped.length}`);
  assert.deepEqual(failures, []);
  assert.ok(executed > 0, 'no example ran');
});
