import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// Third-party tools run by the tests (the MCP Inspector CLI, mcp-remote, the conformance suite):
// where they are, which version is installed, and how to run one so that nothing it started
// outlives the test — each in its own process group, killed as a group on timeout or failure.

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export const TOOLS = {
  inspector: { pkg: '@modelcontextprotocol/inspector', bin: 'clients/launcher/build/index.js' },
  mcpRemote: { pkg: 'mcp-remote', bin: 'dist/proxy.js' },
  conformance: { pkg: '@modelcontextprotocol/conformance', bin: 'dist/index.js' },
} as const;

/** The script of an installed tool. */
export function toolPath(tool: keyof typeof TOOLS): string {
  return path.join(ROOT, 'node_modules', TOOLS[tool].pkg, TOOLS[tool].bin);
}

/** The installed version of a package (its own package.json), and the one package.json pins. */
export function versions(pkg: string): { installed: string; pinned: string | undefined } {
  const own = JSON.parse(readFileSync(path.join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string };
  const project = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    devDependencies?: Record<string, string>;
    dependencies?: Record<string, string>;
  };
  return { installed: own.version, pinned: project.devDependencies?.[pkg] ?? project.dependencies?.[pkg] };
}

/** Leaders of the process groups started here that may still run. */
const groups = new Set<number>();

/** Kills a whole process group (a tool may have started helpers of its own). */
export function killGroup(pid: number | undefined, signal: NodeJS.Signals = 'SIGKILL'): void {
  if (!pid) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

/** For `after`, and on failure: ends every process group started here that is still running. */
export function killStartedGroups(): void {
  for (const pid of groups) killGroup(pid);
  groups.clear();
}

/**
 * Tracks a group whose leader a library spawned (the SDK's stdio transport, with the tool run
 * under `setsid` so that it leads a group); returns the function that ends the tracking.
 */
export function trackGroup(pid: number): () => void {
  groups.add(pid);
  return () => groups.delete(pid);
}

/** Spawns `command` as the leader of a new process group, tracked for `killStartedGroups`. */
export function spawnGroup(command: string, args: string[], options: SpawnOptions = {}): ChildProcess {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options, detached: true });
  if (child.pid) {
    const untrack = trackGroup(child.pid);
    child.on('exit', () => {
      killGroup(child.pid); // helpers it left behind
      untrack();
    });
  }
  return child;
}

export interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a node script to the end in its own process group; the group is killed after `timeoutMs`. */
export const runNode = (args: string[], options: RunOptions): Promise<Finished> => runCommand(process.execPath, args, options);

interface RunOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  timeoutMs: number;
}

/** Runs a command to the end in its own process group; the group is killed after `timeoutMs`. */
export function runCommand(command: string, args: string[], options: RunOptions): Promise<Finished> {
  const child = spawnGroup(command, args, { env: options.env, cwd: options.cwd });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => killGroup(child.pid), options.timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
