import type { Config } from '../config.ts';
import { connect, type Db } from './database.ts';
import { startEmbedded } from './embedded.ts';
import { migrate } from './migrate.ts';

export interface OpenedDatabase {
  db: Db;
  embedded: boolean;
  /** Migrations this open applied. */
  applied: string[];
  /** Closes the pool and stops the embedded server if this process started it. */
  close(): Promise<void>;
}

/** The database the configuration names (or the embedded default), migrated. */
export async function openDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir'>,
  options: { log?: (line: string) => void; poolSize?: number; applicationName?: string; exclusive?: boolean } = {},
): Promise<OpenedDatabase> {
  const embedded = config.databaseUrl ? undefined : await startEmbedded(config.dataDir, { log: options.log, exclusive: options.exclusive });
  const db = connect(config.databaseUrl ?? embedded!.url, { max: options.poolSize, applicationName: options.applicationName });
  try {
    const applied = await migrate(db.pool);
    return {
      db,
      embedded: embedded !== undefined,
      applied,
      close: async () => {
        await db.close();
        await embedded?.stop();
      },
    };
  } catch (error) {
    await db.close();
    await embedded?.stop();
    throw error;
  }
}
