// Real third-party MCP clients against a listening server: the MCP Inspector's CLI and mcp-remote
// (pinned devDependencies, versions asserted), each in a child process of its own process group
// with a throwaway HOME and config directory and a BROWSER that only records
// (test/support/mcp-clients-run.ts).
// - Hub MCP with a fixed header: both list the tools and call every one of them, and each result is
//   the REST answer to the same input; with a wrong key both report invalid_api_key and never
//   start OAuth (no client registration, no sign-in page).
// - Main MCP through mcp-remote's full OAuth flow: discovery, dynamic registration, the browser it
//   opens (the test signs in and clicks Allow over HTTP, then delivers the redirect to
//   mcp-remote's callback port), tools with real data; then a second run on the stored tokens,
//   without a browser.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { freePort } from '../../src/platform/net.ts';
import { readKey, startApp, type TestApp } from '../support/app.ts';
import { killGroup, killStartedGroups, runNode, spawnGroup, toolPath, versions } from '../support/child-processes.ts';
import { mcpRemote, sandbox, type Sandbox } from '../support/mcp-clients-run.ts';
import { completeAuthorization } from '../support/oauth-flow.ts';
import * as fx from '../support/world.ts';

const PINNED = { '@modelcontextprotocol/inspector': '2.12.0', 'mcp-remote': '0.15.1' };
const TIMEOUT_MS = 30_000;

/**
 * Each Hub MCP tool with an input, the Hub REST request with the same input, and what the answer
 * holds in the seeded hub (so that two empty answers never pass for equal ones).
 */
const HUB_CALLS: Record<string, { args: Record<string, unknown>; rest: string; holds: (answer: any) => boolean }> = {
  list_playbook_opt_ins: {
    args: { status: 'active', limit: 5 },
    rest: '/playbook-opt-ins?status=active&limit=5',
    holds: (a) => a.data.length === 5,
  },
  get_opt_in_summary: { args: {}, rest: '/opt-in-summary', holds: (a) => a.activeOptIns > 0 },
  get_spend_by_workspace: {
    args: { period: 'last_7_days' },
    rest: '/spend-by-workspace?period=last_7_days',
    holds: (a) => a.totals.spendCents > 0,
  },
};
const HUB_TOOLS = Object.keys(HUB_CALLS).sort();

let live: TestApp;
let hubMcp: string;
let key: string;
const requests: string[] = [];

before(async () => {
  live = await startApp({ listen: true, seed: fx.seedWebHub });
  live.app.fastify.server.on('request', (request) => requests.push(`${request.method} ${request.url}`));
  key = await readKey(live.db, fx.HUB);
  hubMcp = `${live.baseUrl}/v1/hub/mcp`;
});
after(async () => {
  killStartedGroups();
  await live.close();
});

async function rest(pathAndQuery: string): Promise<unknown> {
  const response = await live.hubGet(pathAndQuery, key);
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return response.body;
}

/** The REST answer to a Hub MCP tool's input, checked to hold the seeded data. */
async function restFor(name: string): Promise<unknown> {
  const answer = await rest(HUB_CALLS[name]!.rest);
  assert.ok(HUB_CALLS[name]!.holds(answer), `${name}: ${JSON.stringify(answer).slice(0, 300)}`);
  return answer;
}

/** A tool result's structured content, after checking it is a success whose text is that content. */
function structured(name: string, result: CallToolResult): unknown {
  assert.notEqual(result.isError, true, `${name}: ${JSON.stringify(result.content)}`);
  const text = result.content[0];
  assert.equal(text?.type, 'text');
  assert.deepEqual(JSON.parse((text as { text: string }).text), result.structuredContent, `${name}: the text is the structured content`);
  return result.structuredContent;
}

test('the clients are the pinned versions', () => {
  for (const [pkg, version] of Object.entries(PINNED)) assert.deepEqual(versions(pkg), { installed: version, pinned: version }, pkg);
});

interface Run {
  code: number | null;
  output: string;
  /** Every URL the client asked the "browser" to open. */
  opened: string[];
  /** The requests our server saw during the run. */
  requests: string[];
}

/** The Inspector's CLI, once, in a fresh sandbox. */
async function inspector(args: string[]): Promise<Run & { stdout: string }> {
  const box = await sandbox();
  const seen = requests.length;
  try {
    const run = await runNode([toolPath('inspector'), '--cli', ...args], { env: box.env, cwd: box.home, timeoutMs: TIMEOUT_MS });
    return {
      code: run.code,
      stdout: run.stdout,
      output: run.stdout + run.stderr,
      opened: await box.opened(),
      requests: requests.slice(seen),
    };
  } finally {
    await box.remove();
  }
}
const hubInspector = (bearer: string, ...args: string[]) =>
  inspector([hubMcp, '--transport', 'http', '--header', `Authorization: Bearer ${bearer}`, '--format', 'json', ...args]);

/**
 * mcp-remote spoken to in raw JSON-RPC over stdin, for the failures the SDK client would not get
 * past: each line is written after the previous request was answered (or 5 s); stopped once
 * `done(output)` holds, or killed after TIMEOUT_MS.
 */
async function rawMcpRemote(url: string, headers: string[], done: (output: string) => boolean): Promise<Run> {
  const box = await sandbox();
  const seen = requests.length;
  const stdin = [
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'stdio-test', version: '1' } },
    },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'tools/list' },
  ];
  const child = spawnGroup(
    process.execPath,
    [toolPath('mcpRemote'), url, ...headers.flatMap((h) => ['--header', h]), '--auth-timeout', '5'],
    { env: box.env, cwd: box.home, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let output = '';
  let answers = 0;
  let onAnswer = () => {};
  const stopIfDone = () => {
    if (child.exitCode === null && done(output)) killGroup(child.pid, 'SIGTERM');
  };
  child.stdout!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    answers = output.split('\n').filter((line) => line.startsWith('{"')).length;
    onAnswer();
    stopIfDone();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    stopIfDone();
  });
  const exited = new Promise<number | null>((resolve) => {
    const timer = setTimeout(() => killGroup(child.pid), TIMEOUT_MS);
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
      child.stdin!.write(`${JSON.stringify(message)}\n`);
    }
  })();
  const code = await exited;
  child.stdin!.destroy();
  const opened = await box.opened();
  await box.remove();
  return { code, output, opened, requests: requests.slice(seen) };
}

function assertNoOAuth(run: Pick<Run, 'output' | 'opened' | 'requests'>): void {
  assert.doesNotMatch(run.output, /Protected resource .* does not match/);
  assert.doesNotMatch(run.output, /Interactive OAuth|Authorization (required|failed)|Registration/i);
  assert.deepEqual(run.opened, [], 'no browser was asked to open anything');
  assert.ok(
    !run.requests.some((r) => r.startsWith('POST /oauth/register') || r.startsWith('GET /oauth/authorize')),
    run.requests.join('\n'),
  );
}

describe('the Hub MCP endpoint through real third-party clients', () => {
  const wrongKey = () => fx.mistyped(key);

  test('MCP Inspector CLI: a wrong key is reported as invalid_api_key, not as an OAuth problem', async () => {
    const run = await hubInspector(wrongKey(), '--method', 'tools/list');
    assert.notEqual(run.code, 0, run.output);
    assert.match(run.output, /invalid_api_key/, run.output);
    assert.match(run.output, /The API key is not valid/, run.output);
    assertNoOAuth(run);
  });

  test('mcp-remote: a wrong key is reported as invalid_api_key, not as an OAuth problem', async () => {
    const answered = (output: string) => output.split('\n').some((line) => line.startsWith('{"') && line.includes('"id":2'));
    const run = await rawMcpRemote(hubMcp, [`Authorization:Bearer ${wrongKey()}`], answered);
    assert.match(run.output, /invalid_api_key/, run.output);
    assertNoOAuth(run);
  });

  test('MCP Inspector CLI with the key: lists the tools and calls every one, each answering as REST does', async () => {
    const [listed, ...calls] = await Promise.all([
      hubInspector(key, '--method', 'tools/list'),
      ...HUB_TOOLS.map((name) =>
        hubInspector(key, '--method', 'tools/call', '--tool-name', name, '--tool-args-json', JSON.stringify(HUB_CALLS[name]!.args)),
      ),
    ]);
    assert.equal(listed!.code, 0, listed!.output);
    // --format json: one object, `{ "result": … }`.
    const tools = (JSON.parse(listed!.stdout) as { result: { tools: { name: string; annotations?: { readOnlyHint?: boolean } }[] } }).result
      .tools;
    assert.deepEqual(tools.map((t) => t.name).sort(), HUB_TOOLS, 'every tool has a call below');
    assert.ok(tools.every((t) => t.annotations?.readOnlyHint === true));
    for (const [i, name] of HUB_TOOLS.entries()) {
      const run = calls[i]!;
      assert.equal(run.code, 0, `${name}: ${run.output}`);
      assert.deepEqual(structured(name, (JSON.parse(run.stdout) as { result: CallToolResult }).result), await restFor(name), name);
    }
    for (const run of [listed!, ...calls]) assertNoOAuth(run);
  });

  test('mcp-remote with --header: lists the tools and calls every one, each answering as REST does', async () => {
    const box = await sandbox();
    const seen = requests.length;
    const remote = mcpRemote([hubMcp, '--header', `Authorization:Bearer ${key}`], box);
    try {
      await remote.connected;
      const { tools } = await remote.client.listTools();
      assert.deepEqual(tools.map((t) => t.name).sort(), HUB_TOOLS, 'every tool has a call below');
      for (const name of HUB_TOOLS) {
        const result = (await remote.client.callTool({ name, arguments: HUB_CALLS[name]!.args })) as CallToolResult;
        assert.deepEqual(structured(name, result), await restFor(name), name);
      }
      assertNoOAuth({ output: remote.log(), opened: await box.opened(), requests: requests.slice(seen) });
    } finally {
      await remote.close();
      await box.remove();
    }
  });
});

describe('the main MCP server through mcp-remote, signing in by OAuth', () => {
  let box: Sandbox;
  let port: number;
  const url = () => `${live.baseUrl}/mcp`;

  before(async () => {
    box = await sandbox();
    // The same callback port on both runs: mcp-remote drops a registration whose redirect URI
    // names another port.
    port = await freePort();
  });
  after(async () => {
    await box.remove();
  });

  test('first run: discovery, registration, the browser (the test signs in and allows), then tools with real data', async () => {
    const seen = requests.length;
    const remote = mcpRemote([url(), String(port), '--auth-timeout', '25'], box);
    try {
      const authorizeUrl = new URL(await box.waitForOpened(/\/oauth\/authorize\?/));
      assert.equal(authorizeUrl.origin + authorizeUrl.pathname, `${live.baseUrl}/oauth/authorize`);
      assert.equal(authorizeUrl.searchParams.get('resource'), url());
      assert.equal(authorizeUrl.searchParams.get('code_challenge_method'), 'S256');
      const redirectUri = authorizeUrl.searchParams.get('redirect_uri')!;
      assert.equal(new URL(redirectUri).port, String(port), redirectUri);

      // The user signs in, leaves the whole hub selected and clicks Allow; the browser then
      // follows the redirect to mcp-remote's callback port.
      const signedIn = await completeAuthorization(live, authorizeUrl, { ...fx.ADMIN, redirectUri, workspace: '' });
      const callback = signedIn.callback;
      assert.ok(callback, `no redirect: ${signedIn.response.status} ${signedIn.pages.at(-1)?.slice(0, 300)}`);
      assert.ok(callback.searchParams.get('code'), `no code in ${callback.search}`);
      const landed = await fetch(callback);
      assert.equal(landed.status, 200, await landed.text());
      await remote.connected;

      const during = requests.slice(seen);
      for (const expected of [
        'GET /.well-known/oauth-protected-resource/mcp',
        'GET /.well-known/oauth-authorization-server',
        'POST /oauth/register',
        'POST /oauth/token',
      ]) {
        assert.ok(
          during.some((r) => r.startsWith(expected)),
          `${expected} not requested:\n${during.join('\n')}`,
        );
      }

      const { tools } = await remote.client.listTools();
      assert.ok(
        ['whoami', 'list_workspaces', 'get_opt_in_summary', 'get_spend_by_workspace'].every((name) => tools.some((t) => t.name === name)),
        tools.map((t) => t.name).join(),
      );
      const me = structured('whoami', (await remote.client.callTool({ name: 'whoami', arguments: {} })) as CallToolResult) as {
        user: { email: string };
        hub: { _id: string };
        workspace: unknown;
        clientId: string;
      };
      assert.equal(me.user.email, fx.ADMIN.email);
      assert.equal(me.hub._id, fx.HUB);
      assert.equal(me.workspace, null);
      const workspaces = structured(
        'list_workspaces',
        (await remote.client.callTool({ name: 'list_workspaces', arguments: {} })) as CallToolResult,
      ) as { data: { _id: string }[] };
      assert.deepEqual(
        workspaces.data.map((w) => w._id),
        ['ws_a', 'ws_b', 'ws_c'],
      );
      const summary = structured(
        'get_opt_in_summary',
        (await remote.client.callTool({ name: 'get_opt_in_summary', arguments: {} })) as CallToolResult,
      );
      assert.deepEqual(summary, await restFor('get_opt_in_summary'));

      // mcp-remote keeps what it registered and the tokens in its config directory, nowhere else.
      const files = await readdir(path.join(box.env.MCP_REMOTE_CONFIG_DIR!), { recursive: true });
      const clientInfo = files.find((f) => f.endsWith('_client_info.json'));
      assert.ok(clientInfo && files.some((f) => f.endsWith('_tokens.json')), files.join('\n'));
      const registered = JSON.parse(await readFile(path.join(box.env.MCP_REMOTE_CONFIG_DIR!, clientInfo), 'utf8')) as { client_id: string };
      assert.equal(me.clientId, registered.client_id);
    } finally {
      await remote.close();
    }
  });

  test('second run: the stored tokens, no browser, no sign-in, no registration', async () => {
    const seen = requests.length;
    const openedBefore = (await box.opened()).length;
    const remote = mcpRemote([url(), String(port), '--auth-timeout', '5'], box);
    try {
      await remote.connected;
      const me = structured('whoami', (await remote.client.callTool({ name: 'whoami', arguments: {} })) as CallToolResult) as {
        user: { email: string };
      };
      assert.equal(me.user.email, fx.ADMIN.email);
      const spend = structured(
        'get_spend_by_workspace',
        (await remote.client.callTool({ name: 'get_spend_by_workspace', arguments: { period: 'last_7_days' } })) as CallToolResult,
      );
      assert.deepEqual(spend, await restFor('get_spend_by_workspace'));
      assert.equal((await box.opened()).length, openedBefore, 'no browser was opened');
      const during = requests.slice(seen);
      assert.ok(!during.some((r) => /^(GET \/oauth\/authorize|POST \/oauth\/register|POST \/oauth\/token)/.test(r)), during.join('\n'));
    } finally {
      await remote.close();
    }
  });
});
