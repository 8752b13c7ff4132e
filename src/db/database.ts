import { createHash } from 'node:crypto';
import { Kysely, PostgresDialect, type CompiledQuery } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.ts';

// DATE columns stay 'YYYY-MM-DD' text: spend is counted in UTC days and a JS Date would shift them.
pg.types.setTypeParser(pg.types.builtins.DATE, (value) => value);

export interface Db {
  kysely: Kysely<Database>;
  pool: pg.Pool;
  url: string;
  close(): Promise<void>;
}

export function connect(url: string, options: { max?: number; applicationName?: string; queryTimeoutMs?: number } = {}): Db {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'hubops',
    connectionTimeoutMillis: 5_000,
    // A statement that runs away must not hold a connection for ever (enforced by the server)…
    statement_timeout: 15_000,
    // …and a server that stops answering must not hang requests for ever (enforced here).
    query_timeout: options.queryTimeoutMs ?? 20_000,
    keepAlive: true,
  });
  // An idle client losing its server (database restart) must not crash the process; the pool
  // discards it and the next query reconnects.
  pool.on('error', () => {});
  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    kysely,
    pool,
    url,
    close: async () => {
      await kysely.destroy();
    },
  };
}

/** True for errors that mean "the database cannot be reached" rather than "the query was wrong". */
export function isDatabaseUnavailable(error: unknown): boolean {
  const e = error as { code?: string; message?: string } | undefined;
  if (!e) return false;
  if (e.code && ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', '57P01', '57P02', '57P03', '08000', '08003', '08006', '08001', '08004'].includes(e.code)) {
    return true;
  }
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Query read timeout/i.test(e.message ?? '');
}

/**
 * Runs a compiled query as a named prepared statement: PostgreSQL plans it once per connection
 * instead of on every call. For the hot per-request queries, where planning costs as much as
 * running them. The name is derived from the SQL text, so each query shape gets its own.
 */
export async function queryPrepared<Row>(db: Db, query: CompiledQuery<Row>): Promise<Row[]> {
  const name = `q_${createHash('sha1').update(query.sql).digest('hex').slice(0, 20)}`;
  const result = await db.pool.query({ name, text: query.sql, values: query.parameters as unknown[] });
  return result.rows as Row[];
}
