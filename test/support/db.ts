import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { connect, type Db } from '../../src/db/database.ts';

export interface TestDb extends Db {
  /** Drops the database (after closing this handle's pool). */
  drop(): Promise<void>;
}

function serverUrl(): string {
  const url = process.env.HUBOPS_TEST_SERVER_URL;
  if (!url) throw new Error('run tests with `npm test` (test/run.ts sets up PostgreSQL)');
  return url;
}

/** A fresh, migrated database cloned from the run's template. */
export async function createTestDb(): Promise<TestDb> {
  const template = process.env.HUBOPS_TEST_TEMPLATE!;
  const name = `hubops_t_${template.split('_').pop()}_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl());
  url.pathname = `/${name}`;
  const db = connect(url.toString());
  return {
    ...db,
    drop: async () => {
      await db.close();
      const dropper = new pg.Client({ connectionString: serverUrl() });
      await dropper.connect();
      await dropper.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await dropper.end();
    },
  };
}
