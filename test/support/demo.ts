import { rm } from 'node:fs/promises';
import { dataDir, demoKey, hubopsEnv, killGroup, killStarted, NODE, startServer, type Running } from '../process/support.ts';
import { createTestDb, type TestDb } from './db.ts';

/** The demo as a new user starts it: `node src/main.ts` on an empty database. */
export interface Demo {
  server: Running;
  /** The Hub API key the first start printed. */
  key: string;
  /** The environment the server runs with (its database settings included). */
  env: NodeJS.ProcessEnv;
  /** Stops the server and removes its database. */
  stop(): Promise<void>;
}

/**
 * Starts the demo on a database of its own, migrated but empty, so the server seeds the demo as at
 * a first start: a PostgreSQL database with DATABASE_URL, else an embedded one in a data directory
 * named after `prefix`. `env` is added to the server's environment.
 */
export async function startDemo(prefix: string, env: NodeJS.ProcessEnv = {}): Promise<Demo> {
  let testDb: TestDb | undefined;
  let dir: string | undefined;
  const removeDatabase = async () => {
    await testDb?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  };
  try {
    let database: { url: string } | { dataDir: string };
    if (process.env.DATABASE_URL) {
      testDb = await createTestDb();
      database = { url: testDb.url };
    } else {
      dir = await dataDir(prefix, { initialised: true });
      database = { dataDir: dir };
    }
    const serverEnv = hubopsEnv(database, env);
    const server = await startServer(NODE, ['src/main.ts'], serverEnv);
    return {
      server,
      key: demoKey(server.output()).key,
      env: serverEnv,
      stop: async () => {
        killGroup(server.child, 'SIGTERM');
        await server.exited;
        killStarted();
        await removeDatabase();
      },
    };
  } catch (error) {
    killStarted();
    await removeDatabase();
    throw error;
  }
}
