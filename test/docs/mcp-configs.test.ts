// docs/mcp.md "Configurations", tried as a new user would against the demo: `node src/main.ts` on
// an empty database (it seeds the demo and prints a Hub API key), then every JSON block of the
// section, parsed from the page, with the demo's address and key put where the page says to:
// - an entry with a `command` (Claude Desktop through mcp-remote) is started as the client would,
//   as an MCP stdio server, and spoken to with the SDK's stdio client;
// - an entry with a `url` (VS Code, Cursor, the common file) is connected to by the official SDK
//   client with exactly the headers the entry gives;
// - the URLs given in prose (Claude custom connector, ChatGPT) likewise;
// - the Inspector runs the common file with the command the page gives.
// An entry without a header signs in through OAuth as the demo admin (the browser step played over
// HTTP); each lists its tools and calls one with the demo's data.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { TestApp } from '../support/app.ts';
import { killStartedGroups, runCommand } from '../support/child-processes.ts';
import { startDemo, type Demo } from '../support/demo.ts';
import { MemoryOAuthProvider, newClient, transport } from '../support/mcp-client.ts';
import { sandbox, signInThroughBrowser, stdioServer } from '../support/mcp-clients-run.ts';
import { completeAuthorization } from '../support/oauth-flow.ts';
import { ROOT } from '../process/support.ts';

const PAGE = 'docs/mcp.md';
/** The server's address in the docs' examples (the note atop docs/mcp.md). */
const DOCS_BASE = '$BASE';
const DEMO_ADMIN = { email: 'admin@demo.hubops.dev', password: 'hubops-demo' };
const HUB_TOOLS = ['get_opt_in_summary', 'get_spend_by_workspace', 'list_playbook_opt_ins'];
/** Where an SDK client "registered" by the test is sent back to: the code is read from the redirect. */
const REDIRECT = 'http://127.0.0.1:9/callback';

let demo: Demo | undefined;
let base: string;
let key: string;
let section: string;

before(async () => {
  demo = await startDemo('hubops-mcp-configs-', { LOG_LEVEL: 'warn' });
  // The docs' address with the demo's port: BASE_URL is http://localhost:<port>.
  base = `http://localhost:${demo.server.port}`;
  key = demo.key;
  const page = await readFile(path.join(ROOT, PAGE), 'utf8');
  const from = page.indexOf('\n## Configurations\n');
  assert.ok(from >= 0, `${PAGE} has no "## Configurations"`);
  section = page.slice(from + 1, page.indexOf('\n## ', from + 1));
});
after(async () => {
  killStartedGroups();
  await demo?.stop();
});

/** The JSON blocks of the section, each under its `###` heading. */
function jsonBlocks(): { heading: string; text: string }[] {
  const blocks: { heading: string; text: string }[] = [];
  let heading = '';
  const lines = section.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]!.startsWith('### ')) heading = lines[i]!.slice(4);
    if (lines[i] !== '```json') continue;
    const end = lines.indexOf('```', i + 1);
    blocks.push({ heading, text: lines.slice(i + 1, end).join('\n') });
    i = end;
  }
  return blocks;
}

/**
 * What a user puts in, where the page says to: the demo's address, its key for `hubops_…`, the key
 * VS Code asks for (`${input:hubops-key}`) and the one Cursor reads from HUBOPS_HUB_KEY.
 * `${HUB_AUTH}` stays: mcp-remote fills it in from the entry's `env`.
 */
function fillIn(text: string): string {
  const filled = text
    .replaceAll(DOCS_BASE, base)
    .replaceAll('hubops_…', key)
    .replaceAll('${input:hubops-key}', key)
    .replaceAll('${env:HUBOPS_HUB_KEY}', key);
  assert.ok(!filled.includes('…'), `a placeholder the page does not say how to fill: ${filled}`);
  return filled;
}

/** A configuration block: the named server entries, whichever of the two file shapes it uses. */
function serversOf(heading: string): Record<string, Entry> {
  const blocks = jsonBlocks().filter((b) => b.heading === heading && /"(mcpServers|servers)"/.test(b.text));
  assert.equal(blocks.length, 1, `one configuration block under "### ${heading}"`);
  const config = JSON.parse(fillIn(blocks[0]!.text)) as { mcpServers?: Record<string, Entry>; servers?: Record<string, Entry> };
  const servers = config.mcpServers ?? config.servers;
  assert.ok(servers, heading);
  assert.deepEqual(Object.keys(servers).sort(), ['hubops', 'hubops-hub'], heading);
  return servers;
}

interface Entry {
  type?: string;
  url?: string;
  headers?: Record<string, string>;
  command?: string;
  args?: string[];
  env?: Record<string, string>;
}

function structured(result: CallToolResult): any {
  assert.notEqual(result.isError, true, JSON.stringify(result.content));
  return result.structuredContent;
}

/** What each endpoint must answer, once connected: its tools, and one call with the demo's data. */
async function exercise(name: string, client: Client): Promise<void> {
  const tools = (await client.listTools()).tools.map((t) => t.name);
  if (name === 'hubops-hub') {
    assert.deepEqual([...tools].sort(), HUB_TOOLS);
    const summary = structured((await client.callTool({ name: 'get_opt_in_summary', arguments: {} })) as CallToolResult);
    assert.equal(typeof summary.activeOptIns, 'number');
    assert.ok(summary.activeOptIns > 0, 'the demo hub has active opt-ins');
  } else {
    assert.ok(tools.includes('whoami') && tools.includes('get_spend_by_workspace'), tools.join());
    const me = structured((await client.callTool({ name: 'whoami', arguments: {} })) as CallToolResult);
    assert.equal(me.user.email, DEMO_ADMIN.email);
    assert.equal(me.workspace, null, 'the whole hub was granted');
  }
}

/** An entry with a URL, through the SDK client: the entry's headers, or OAuth when it has none. */
async function viaUrl(name: string, entry: Entry): Promise<void> {
  assert.ok(entry.url, name);
  assert.ok(entry.type === undefined || entry.type === 'http', `${name}: type ${entry.type}`);
  const url = new URL(entry.url);
  let client: Client;
  if (entry.headers) {
    client = newClient();
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: entry.headers } }));
  } else {
    client = await signedIn(url);
  }
  try {
    await exercise(name, client);
  } finally {
    await client.close();
  }
}

/** The SDK client on a URL alone: refused, discovers, registers, the user signs in, connected. */
async function signedIn(url: URL): Promise<Client> {
  const provider = new MemoryOAuthProvider(REDIRECT);
  const first = transport(url, { provider });
  await assert.rejects(newClient().connect(first), UnauthorizedError);
  const authorizeUrl = provider.authorizationUrls[0];
  assert.ok(authorizeUrl, 'the client was sent to sign in');
  const result = await completeAuthorization({ baseUrl: base } as TestApp, authorizeUrl, {
    ...DEMO_ADMIN,
    redirectUri: REDIRECT,
    // The demo admin administers both demo hubs: the consent page asks which.
    hub: 'hub_demo_brewline',
    workspace: '',
  });
  const code = result.callback?.searchParams.get('code');
  assert.ok(code, `no code: ${result.response.status}`);
  await first.finishAuth(code);
  const client = newClient();
  await client.connect(transport(url, { provider }));
  return client;
}

/**
 * An entry with a command, started as Claude Desktop starts it: in the checkout, where `npx` finds
 * the installed mcp-remote (offline: a test never downloads a package), with the entry's `env`.
 */
async function viaCommand(name: string, entry: Entry): Promise<void> {
  assert.ok(entry.command && entry.args, name);
  const box = await sandbox();
  const session = stdioServer(entry.command, entry.args, box, {
    cwd: ROOT,
    env: { ...entry.env, npm_config_offline: 'true', npm_config_update_notifier: 'false' },
  });
  try {
    if (!entry.args.some((a) => a === '--header')) {
      // The browser step, unless the client gave up first (then its error says why).
      const signIn = signInThroughBrowser(box, base, DEMO_ADMIN);
      signIn.catch(() => {});
      await Promise.race([signIn, session.connected]);
    }
    await session.connected.catch((error: unknown) => {
      throw new Error(`${name}: ${String(error)}\n${session.log()}`);
    });
    await exercise(name, session.client);
    if (name === 'hubops-hub') assert.deepEqual(await box.opened(), [], 'no browser for the Hub endpoint');
  } finally {
    await session.close();
    await box.remove();
  }
}

test('Claude Desktop: both mcp-remote entries run as written', async () => {
  const servers = serversOf('Claude Desktop (through `mcp-remote`)');
  await Promise.all(Object.entries(servers).map(([name, entry]) => viaCommand(name, entry)));
});

test('Claude custom connector and ChatGPT developer mode: the URL they are given signs in and works', async () => {
  const text = section.slice(section.indexOf('### Claude custom connector'), section.indexOf('### VS Code'));
  const urls = [...new Set(text.match(/https:\/\/YOUR-HOST\/\S+?(?=`)/g))];
  assert.deepEqual(urls, ['https://YOUR-HOST/mcp'], 'both are given the main MCP server');
  // YOUR-HOST is BASE_URL's host; the demo's is http://localhost:<port>.
  await viaUrl('hubops', { url: urls[0]!.replace('https://YOUR-HOST', base) });
});

test('VS Code: both http servers, the key from its input', async () => {
  const servers = serversOf('VS Code');
  await Promise.all(Object.entries(servers).map(([name, entry]) => viaUrl(name, entry)));
});

test('Cursor: both url servers, the key from the environment', async () => {
  const servers = serversOf('Cursor');
  await Promise.all(Object.entries(servers).map(([name, entry]) => viaUrl(name, entry)));
});

test('the common mcpServers file: both servers, and the Inspector CLI on the file with the command given', async () => {
  const servers = serversOf('Other clients');
  await Promise.all(Object.entries(servers).map(([name, entry]) => viaUrl(name, entry)));

  const command = /`(npx @modelcontextprotocol\/inspector --cli --config hubops-mcp\.json [^`]+)`/.exec(section)?.[1];
  assert.ok(command, 'the Inspector command for the file');
  const block = jsonBlocks().find((b) => b.heading === 'Other clients')!;
  const box = await sandbox();
  try {
    const file = path.join(box.home, 'hubops-mcp.json');
    await writeFile(file, fillIn(block.text));
    const [npx, ...args] = command.split(' ').map((a) => (a === 'hubops-mcp.json' ? file : a));
    assert.equal(npx, 'npx');
    // npx in the checkout runs the installed Inspector.
    const run = await runCommand('npx', args, {
      env: { ...box.env, npm_config_offline: 'true', npm_config_update_notifier: 'false' },
      cwd: ROOT,
      timeoutMs: 30_000,
    });
    assert.equal(run.code, 0, run.stdout + run.stderr);
    const listed = JSON.parse(run.stdout.slice(run.stdout.indexOf('{'))) as { tools: { name: string }[] };
    assert.deepEqual(listed.tools.map((t) => t.name).sort(), HUB_TOOLS);
  } finally {
    await box.remove();
  }
});

test('every JSON configuration of the section is tried above', () => {
  const headings = jsonBlocks()
    .filter((b) => /"(mcpServers|servers)"/.test(b.text))
    .map((b) => b.heading);
  assert.deepEqual(headings, ['Claude Desktop (through `mcp-remote`)', 'VS Code', 'Cursor', 'Other clients']);
});
