import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { TestApp } from './app.ts';
import { killGroup, toolPath, trackGroup } from './child-processes.ts';
import { completeAuthorization } from './oauth-flow.ts';

// Running third-party MCP clients as a user's machine would, but sandboxed: a throwaway HOME and
// config directories (mcp-remote's token store; the Inspector's catalog and secrets, under HOME), and a
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
      // The tests' own node first, for the tools' `#!/usr/bin/env node`.
      PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ''}`,
      HOME: home,
      XDG_CONFIG_HOME: path.join(home, '.config'),
      MCP_REMOTE_CONFIG_DIR: path.join(home, 'mcp-remote'),
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
 * Starts `command` as an MCP stdio server, as a desktop assistant does, and connects the SDK's
 * stdio client to it. It runs under `setsid`, leading a process group of its own, so that
 * whatever it started (npx's child, a browser opener) dies with it.
 */
export function stdioServer(
  command: string,
  args: string[],
  box: Sandbox,
  options: { env?: Record<string, string>; cwd?: string } = {},
): StdioSession {
  const transport = new StdioClientTransport({
    command: 'setsid',
    args: [command, ...args],
    env: { ...box.env, ...options.env },
    cwd: options.cwd ?? box.home,
    stderr: 'pipe',
  });
  let log = '';
  transport.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString()));
  const client = new Client({ name: 'hubops-stdio-test', version: '1.0.0' });
  const connected = client.connect(transport, { timeout: 30_000 });
  connected.catch(() => {}); // reported to whoever awaits it, not as an unhandled rejection meanwhile
  // connect() spawns the process before its first await: the pid is there now.
  const pid = transport.pid ?? undefined;
  const untrack = pid ? trackGroup(pid) : () => {};
  return {
    client,
    connected,
    log: () => log,
    async close() {
      await client.close().catch(() => {});
      killGroup(pid);
      untrack();
    },
  };
}

/** mcp-remote (`args` after its script) as a stdio server. */
export const mcpRemote = (args: string[], box: Sandbox): StdioSession =>
  stdioServer(process.execPath, [toolPath('mcpRemote'), ...args], box);

/**
 * Plays the user for the sign-in a client asked the sandbox's browser to open: signs in to the
 * server at `baseUrl` as `user`, allows the whole hub, and lets the browser follow the redirect to
 * the client's callback (its local port). Returns the authorization URL.
 */
export async function signInThroughBrowser(box: Sandbox, baseUrl: string, user: { email: string; password: string }): Promise<URL> {
  const authorizeUrl = new URL(await box.waitForOpened(/\/oauth\/authorize\?/));
  const redirectUri = authorizeUrl.searchParams.get('redirect_uri');
  if (!redirectUri) throw new Error(`no redirect_uri in ${authorizeUrl}`);
  const signedIn = await completeAuthorization({ baseUrl } as TestApp, authorizeUrl, { ...user, redirectUri, workspace: '' });
  if (!signedIn.callback?.searchParams.get('code'))
    throw new Error(`sign-in gave no code: ${signedIn.response.status} ${signedIn.pages.at(-1)?.slice(0, 300)}`);
  const landed = await fetch(signedIn.callback);
  if (landed.status !== 200) throw new Error(`the client's callback answered ${landed.status}: ${await landed.text()}`);
  return authorizeUrl;
}
