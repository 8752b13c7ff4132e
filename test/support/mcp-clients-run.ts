import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { killGroup, toolPath, trackGroup } from './child-processes.ts';

// Running third-party MCP clients as a user's machine would, but sandboxed: a throwaway HOME and
// config directories (mcp-remote's token store, the Inspector's catalog and secrets), and a
// BROWSER that only records the URL it is asked to open — the test then plays the user for it.

export interface Sandbox {
  home: string;
  /** The environment a client runs with: PATH, and everything else inside `home`. */
  env: Record<string, string>;
  /** Every URL the client asked the browser to open so far. */
  opened(): Promise<string[]>;
  /** Waits until the browser was asked to open a URL matching `pattern`. */
  waitForOpened(pattern: RegExp, timeoutMs?: number): Promise<string>;
  remove(): Promise<void>;
}

export async function sandbox(): Promise<Sandbox> {
  const home = await mkdtemp(path.join(tmpdir(), 'mcp-client-home-'));
  const log = path.join(home, 'opened');
  const browser = path.join(home, 'browser.sh');
  // Exit 0: "a browser took it", so the client tries no other opener.
  await writeFile(browser, `#!/bin/sh\necho "$1" >> '${log}'\nexit 0\n`);
  await chmod(browser, 0o755);
  const opened = async () => (await readFile(log, 'utf8').catch(() => '')).split('\n').filter(Boolean);
  return {
    home,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: home,
      XDG_CONFIG_HOME: path.join(home, '.config'),
      MCP_REMOTE_CONFIG_DIR: path.join(home, 'mcp-remote'),
      MCP_CATALOG_PATH: path.join(home, 'catalog.json'),
      BROWSER: browser,
    },
    opened,
    async waitForOpened(pattern, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const url = (await opened()).find((line) => pattern.test(line));
        if (url) return url;
        if (Date.now() > deadline) throw new Error(`the browser was not asked to open ${pattern} within ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    remove: () => rm(home, { recursive: true, force: true }),
  };
}

export interface StdioSession {
  client: Client;
  /** Resolves once the MCP session is up (after a sign-in, if the tool asks for one). */
  connected: Promise<void>;
  /** What the tool wrote to stderr so far (its log). */
  log(): string;
  /** Closes the session and kills the tool's process group. */
  close(): Promise<void>;
}

/**
 * Starts mcp-remote (`args` after the script) as an MCP stdio server and connects the SDK's
 * stdio client to it, as a desktop assistant does. It runs under `setsid`, leading a process
 * group of its own, so that whatever it started (a browser opener) dies with it.
 */
export function mcpRemote(args: string[], box: Sandbox): StdioSession {
  const transport = new StdioClientTransport({ command: 'setsid', args: [process.execPath, toolPath('mcpRemote'), ...args], env: box.env, cwd: box.home, stderr: 'pipe' });
  let log = '';
  transport.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString()));
  const client = new Client({ name: 'hubops-stdio-test', version: '1.0.0' });
  let untrack = () => {};
  const connected = client.connect(transport, { timeout: 30_000 });
  // The pid exists once start() spawned it, which connect() does first.
  const pid = transport.pid;
  if (pid) untrack = trackGroup(pid);
  return {
    client,
    connected,
    log: () => log,
    async close() {
      await client.close().catch(() => {});
      killGroup(pid ?? undefined);
      untrack();
    },
  };
}
