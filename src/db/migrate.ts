import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
// Any constant shared by every hubops process: serialises concurrent migrators.
const MIGRATION_LOCK = 7_262_011;

/** The names of the migrations this code knows, in the order they apply. */
export async function migrationNames(): Promise<string[]> {
  return (await readdir(MIGRATIONS_DIR))
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .map((f) => f.replace(/\.sql$/, ''));
}

/**
 * Applies pending migrations in name order, each in its own transaction; returns their names.
 * `only`: just these (a restore rebuilds the schema a backup was taken at before loading its rows).
 */
export async function migrate(pool: pg.Pool, options: { only?: ReadonlySet<string> } = {}): Promise<string[]> {
  const names = (await migrationNames()).filter((name) => !options.only || options.only.has(name));
  const client = await pool.connect();
  const applied: string[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set((await client.query<{ name: string }>('SELECT name FROM schema_migrations')).rows.map((r) => r.name));
    for (const name of names) {
      if (done.has(name)) continue;
      const sqlText = await readFile(`${MIGRATIONS_DIR}${name}.sql`, 'utf8');
      await client.query('BEGIN');
      try {
        await client.query(sqlText);
        await client.query('INSERT INTO schema_migrations (name) VALUES ($1)', [name]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${name} failed: ${(error as Error).message}`);
      }
      applied.push(name);
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => {});
    client.release();
  }
  return applied;
}
