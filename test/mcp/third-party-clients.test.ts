// Real third-party MCP clients against a listening server: the MCP Inspector's CLI and mcp-remote
// (pinned devDependencies), each in a child process with a throwaway HOME and config directory and
// a BROWSER that only records. With a wrong key the Hub MCP endpoint must be reported as what it
// is — invalid_api_key — never lead them into OAuth (no client registration, no sign-in page); with
// the right key both list the tools. And the main MCP server's OAuth discovery still leads
// mcp-remote to our sign-in page for the /mcp resource.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { readKey, startApp, type TestApp } from '../support/app.ts';
import * as fx from '../support/world.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const INSPECTOR = path.join(ROOT, 'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');
const MCP_REMOTE = path.join(ROOT, 'node_modules/mcp-remote/dist/proxy.js');
const TIMEOUT_MS = 30_000;

let live: TestApp;
let hubMcp: string;
let key: string;
const requests: string[] = [];

before(async () => {
  live = await startApp({ listen: true });
  live.app.fastify.server.on('request', (request) => requests.push(`${request.method} ${request.url}`));
  await fx.account(live.db, 'acc_1');
  await fx.hub(live.db, 'h1', 'acc_1');
  key = await readKey(live.db, 'h1');
  hubMcp = `${live.baseUrl}/v1/hub/mcp`;
});
after(async () => {
  await live.close();
});

interface Run {
  code: number | null;
  output: string;
  /** Every URL the client asked the "browser" to open. */
  opened: string;
  /** The requests our server saw during the run. */
  requests: string[];
}

/**
 * Runs a client to completion (or kills it after the timeout) in a sandbox home: nothing is
 * written to the real home, and "opening a browser" only records the URL. `stdin` lines are
 * written one by one, each after the client answered the previous one (or 5 s). The client is
 * stopped once `done(output)` holds, or killed after TIMEOUT_MS.
 */
async function runClient(args: string[], stdin: object[] = [], done: (output: string) => boolean = () => false): Promise<Run> {
  const home = await mkdtemp(path.join(tmpdir(), 'mcp-client-home-'));
  const browser = path.join(home, 'browser.sh');
  await writeFile(browser, `#!/bin/sh\necho "$@" >> '${home}/opened'\nexit 1\n`);
  await chmod(browser, 0o755);
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    MCP_REMOTE_CONFIG_DIR: path.join(home, 'mcp-remote'),
    MCP_CATALOG_PATH: path.join(home, 'catalog.json'),
    BROWSER: browser,
  };
  const seen = requests.length;
  const child = spawn(process.execPath, args, { env, cwd: home, stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  let answers = 0;
  let onAnswer = () => {};
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    answers = output.split('\n').filter((line) => line.startsWith('{"')).length;
    onAnswer();
    stopIfDone();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    stopIfDone();
  });
  function stopIfDone() {
    if (child.exitCode === null && done(output)) child.kill('SIGTERM');
  }
  const exited = new Promise<number | null>((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), TIMEOUT_MS);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
  void (async () => {
    for (const [i, message] of stdin.entries()) {
      const awaited = stdin.slice(0, i).filter((m) => 'id' in m).length;
      await Promise.race([
        new Promise<void>((resolve) => {
          onAnswer = () => answers >= awaited && resolve();
          onAnswer();
        }),
        new Promise((resolve) => setTimeout(resolve, 5_000)),
      ]);
      if (child.exitCode !== null) return;
      child.stdin.write(`${JSON.stringify(message)}\n`);
    }
  })();
  const code = await exited;
  child.stdin.destroy();
  const opened = await readFile(path.join(home, 'opened'), 'utf8').catch(() => '');
  await rm(home, { recursive: true, force: true });
  return { code, output, opened, requests: requests.slice(seen) };
}

const inspector = (bearer: string) =>
  runClient([INSPECTOR, '--cli', hubMcp, '--transport', 'http', '--header', `Authorization: Bearer ${bearer}`, '--method', 'tools/list']);

// mcp-remote is a stdio bridge: speak MCP to it over stdin.
const viaMcpRemote = (url: string, headers: string[], done: (output: string) => boolean) =>
  runClient(
    [MCP_REMOTE, url, ...headers.flatMap((h) => ['--header', h]), '--auth-timeout', '5'],
    [
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'stdio-test', version: '1' } } },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    ],
    done,
  );
const answeredToolsList = (output: string) => output.split('\n').some((line) => line.startsWith('{"') && line.includes('"id":2'));

function assertNoOAuth(run: Run): void {
  assert.doesNotMatch(run.output, /Protected resource .* does not match/);
  assert.doesNotMatch(run.output, /Interactive OAuth|Authorization (required|failed)|Registration/i);
  assert.equal(run.opened, '', 'no browser was asked to open anything');
  assert.ok(!run.requests.some((r) => r.startsWith('POST /oauth/register') || r.startsWith('GET /oauth/authorize')), run.requests.join('\n'));
}

describe('the Hub MCP endpoint through real third-party clients', () => {
  const wrongKey = () => fx.mistyped(key);

  test('MCP Inspector CLI: a wrong key is reported as invalid_api_key, not as an OAuth problem', async () => {
    const run = await inspector(wrongKey());
    assert.notEqual(run.code, 0, run.output);
    assert.match(run.output, /invalid_api_key/, run.output);
    assert.match(run.output, /The API key is not valid/, run.output);
    assertNoOAuth(run);
  });

  test('mcp-remote: a wrong key is reported as invalid_api_key, not as an OAuth problem', async () => {
    const run = await viaMcpRemote(hubMcp, [`Authorization:Bearer ${wrongKey()}`], answeredToolsList);
    assert.match(run.output, /invalid_api_key/, run.output);
    assertNoOAuth(run);
  });

  test('with the right key both list the three tools', async () => {
    const viaInspector = await inspector(key);
    assert.equal(viaInspector.code, 0, viaInspector.output);
    const listed = JSON.parse(viaInspector.output.slice(viaInspector.output.indexOf('{'))) as { tools: { name: string }[] };
    assert.deepEqual(listed.tools.map((t) => t.name).sort(), ['get_opt_in_summary', 'get_spend_by_workspace', 'list_playbook_opt_ins']);

    const viaRemote = await viaMcpRemote(hubMcp, [`Authorization:Bearer ${key}`], answeredToolsList);
    const answer = viaRemote.output.split('\n').find((line) => line.startsWith('{"') && line.includes('"id":2'));
    assert.ok(answer, viaRemote.output);
    assert.deepEqual((JSON.parse(answer).result.tools as { name: string }[]).map((t) => t.name).sort(), ['get_opt_in_summary', 'get_spend_by_workspace', 'list_playbook_opt_ins']);
    assertNoOAuth(viaRemote);
  });
});

describe('the main MCP server through mcp-remote', () => {
  test('without a token it discovers our authorization server and asks the browser to sign in for /mcp', async () => {
    const run = await viaMcpRemote(`${live.baseUrl}/mcp`, [], (output) => /Waiting for authorization/.test(output));
    const authorize = run.opened.split('\n').find((line) => line.includes('/oauth/authorize'));
    assert.ok(authorize, run.output);
    const url = new URL(authorize);
    assert.equal(url.origin + url.pathname, `${live.baseUrl}/oauth/authorize`);
    assert.equal(url.searchParams.get('resource'), `${live.baseUrl}/mcp`);
    assert.equal(url.searchParams.get('code_challenge_method'), 'S256');
    assert.ok(run.requests.includes('GET /.well-known/oauth-protected-resource/mcp'), run.requests.join('\n'));
  });
});
