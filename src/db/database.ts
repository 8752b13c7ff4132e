import { createHash } from 'node:crypto';
import type { Socket } from 'node:net';
import { Kysely, PostgresDialect, type CompiledQuery } from 'kysely';
import pg from 'pg';
import { CONNECT_TIMEOUT_MS, READ_TIMEOUT_MS, STATEMENT_TIMEOUT_MS } from '../policy.ts';
import { endSpan, startQuerySpan, tracing } from '../platform/tracing.ts';
import type { Database } from './schema.ts';

// DATE columns stay 'YYYY-MM-DD' text: spend is counted in UTC days and a JS Date would shift them.
pg.types.setTypeParser(pg.types.builtins.DATE, (value) => value);

export interface Db {
  kysely: Kysely<Database>;
  pool: pg.Pool;
  url: string;
  close(): Promise<void>;
  /** A check the next prepared query carries in its round trip (see RideAlongCheck). */
  check?: RideAlongCheck;
}

export function connect(
  url: string,
  options: { max?: number; applicationName?: string; readTimeoutMs?: number; connectTimeoutMs?: number } = {},
): Db {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'hubops',
    connectionTimeoutMillis: options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
    // A statement that runs away must not hold a connection for ever (enforced by the server)…
    statement_timeout: STATEMENT_TIMEOUT_MS,
    keepAlive: true,
    // Statements given to one connection together are written together, not one answer apart:
    // what lets a request's key check ride along with its data query (RideAlongCheck).
    pipeline: true,
  });
  // An idle client losing its server (database restart) must not crash the process; the pool
  // discards it and the next query reconnects.
  pool.on('error', () => {});
  const readTimeoutMs = options.readTimeoutMs ?? READ_TIMEOUT_MS;
  // Tracing on when the pool is made: every statement a span (tracing off: no wrapper at all).
  const traced = tracing() !== undefined;
  if (traced) queryInCallersContext(pool);
  pool.on('connect', (client) => {
    // A connection lost while checked out fails its queries with the error; the client's own
    // 'error' event must not also reach the process (the pool listens only while it is idle).
    client.on('error', () => {});
    dropWhenEnded(client);
    // …and a server that stops answering must not hang requests for ever (enforced here).
    if (readTimeoutMs > 0) dropWhenSilent(client, readTimeoutMs);
    if (traced) traceClient(client);
  });

  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    kysely,
    pool,
    url,
    close: async () => {
      await kysely.destroy();
      // Kysely ends the pool only if it ever ran a query; a pool used directly must be ended here,
      // or its idle clients keep the process alive until pg's idle timeout.
      if (!pool.ended) await pool.end();
    },
  };
}

/**
 * Each statement of this connection as a span (startQuerySpan: a child of the active span, the
 * SQL text without its values). The promise and callback forms of query() both end it; a
 * submittable (a cursor) is passed through untraced.
 */
function traceClient(client: pg.PoolClient): void {
  const query = client.query;
  const server = { host: (client as unknown as { host?: string }).host, port: (client as unknown as { port?: number }).port };
  (client as unknown as { query: (...args: unknown[]) => unknown }).query = function tracedQuery(this: unknown, ...args: unknown[]) {
    const config = args[0] as string | { text?: string; submit?: unknown } | undefined;
    const text = typeof config === 'string' ? config : typeof config?.submit === 'function' ? undefined : config?.text;
    const span = text === undefined ? undefined : startQuerySpan(text, server);
    if (!span) return (query as (...a: unknown[]) => unknown).apply(this, args);
    const last = args.length - 1;
    if (typeof args[last] === 'function') {
      const callback = args[last] as (error: unknown, result: unknown) => void;
      args[last] = (error: unknown, result: unknown) => {
        endSpan(span, error ?? undefined);
        callback(error, result);
      };
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    }
    const result = (query as (...a: unknown[]) => unknown).apply(this, args) as Promise<unknown>;
    result.then(
      () => endSpan(span),
      (error: unknown) => endSpan(span, error),
    );
    return result;
  };
}

/**
 * pool.query as a checkout, query and release in the caller's async context: pg-pool runs the
 * query from a callback that may be called in another request's context (the one that released a
 * connection), which would hang its span under the wrong parent. A connection that failed a
 * statement is not reused, as pg-pool's own query does.
 */
function queryInCallersContext(pool: pg.Pool): void {
  const original = pool.query;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = function query(this: pg.Pool, ...args: unknown[]) {
    if (typeof args[args.length - 1] === 'function') return (original as (...a: unknown[]) => unknown).apply(this, args);
    return (async () => {
      const client = await pool.connect();
      try {
        const result = await (client as unknown as { query: (...a: unknown[]) => Promise<pg.QueryResult> }).query(...args);
        client.release();
        return result;
      } catch (error) {
        client.release(error as Error);
        throw error;
      }
    })();
  };
}

/**
 * Drops the connection when a statement has waited `ms` for its answer with nothing arriving;
 * its queries then fail as "database unavailable". An idle connection (a transaction waiting on
 * other work, say) is left alone. One inactivity timer per connection, re-armed by traffic. pg's
 * own query_timeout is not used: it arms a timer per query, and with it each query's rows
 * survived young-generation collections (a loop of 500-row pages: 17 MB surviving each scavenge
 * instead of 0.5 MB, five times the time in the collector, pages 25 % slower).
 */
function dropWhenSilent(client: pg.PoolClient, ms: number): void {
  const internals = client as unknown as { connection: { stream: Socket }; _activeQuery: unknown; _sentQueryQueue?: unknown[] };
  const socket = internals.connection.stream;
  socket.setTimeout(ms);
  socket.on('timeout', () => {
    const awaitingAnswer = internals._activeQuery != null || (internals._sentQueryQueue?.length ?? 0) > 0;
    if (awaitingAnswer) socket.destroy(new Error(`Query read timeout: the database sent nothing for ${ms} ms`));
  });
}

/**
 * A FATAL error from the server (the session was terminated: pg_terminate_backend, a shutdown)
 * arrives before the socket closes. The query fails with it and the connection would go back to
 * the pool still marked usable, so the next request, arriving before the close, would get a dead
 * connection and fail as "database unavailable" too. Marked unusable at once (synchronously,
 * before the query's rejection is handled), the pool drops it when it is released.
 */
function dropWhenEnded(client: pg.PoolClient): void {
  const internals = client as unknown as { connection: NodeJS.EventEmitter; _queryable: boolean };
  internals.connection.on('errorMessage', (message: { severity?: string }) => {
    if (message.severity === 'FATAL' || message.severity === 'PANIC') internals._queryable = false;
  });
}

/** Whether the database answers a query now (the readiness check). */
export async function databaseAnswers(db: Db): Promise<boolean> {
  try {
    await db.pool.query('SELECT 1');
    return true;
  } catch {
    return false;
  }
}

/** True for errors that mean "the database cannot be reached" rather than "the query was wrong". */
export function isDatabaseUnavailable(error: unknown): boolean {
  const e = error as { code?: string; message?: string } | undefined;
  if (!e) return false;
  if (
    e.code &&
    [
      'ECONNREFUSED',
      'ECONNRESET',
      'ETIMEDOUT',
      'EPIPE',
      'ENOTFOUND',
      '57P01',
      '57P02',
      '57P03',
      '08000',
      '08003',
      '08006',
      '08001',
      '08004',
    ].includes(e.code)
  ) {
    return true;
  }
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Query read timeout/i.test(
    e.message ?? '',
  );
}

/** A parameterised statement run as a named prepared statement (parsed and planned once per connection). */
export interface Statement {
  name: string;
  text: string;
  values: unknown[];
}

// Statement names by SQL text: a handful of query shapes, hashed once each.
const statementNames = new Map<string, string>();

/**
 * A compiled query as a named prepared statement: PostgreSQL plans it once per connection
 * instead of on every call. For the hot per-request queries, where planning costs as much as
 * running them. The name is derived from the SQL text, so each query shape gets its own.
 */
export function prepared(query: CompiledQuery): Statement {
  return { name: statementName(query.sql), text: query.sql, values: query.parameters as unknown[] };
}

function statementName(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `q_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
    statementNames.set(text, name);
  }
  return name;
}

/**
 * A prepared statement of fixed text, for the hottest reads: made once, where `prepared` takes a
 * query Kysely compiles on every call (compiling even a one-line `sql` template costs a 304 more
 * than reading its result). `text` is what Kysely compiles the template to — the template's text
 * with $1, $2… where its values go, in the order of `values` — so the statement and its name are
 * the same as `prepared` gives that query.
 */
export function fixedStatement(text: string): (...values: unknown[]) => Statement {
  const name = statementName(text);
  return (...values) => ({ name, text, values });
}

/** Runs a prepared statement; on a Db with a pending RideAlongCheck, the check goes in the same round trip. */
export async function queryPrepared<Row>(db: Db, query: CompiledQuery<Row> | Statement): Promise<Row[]> {
  const statement = 'sql' in query ? prepared(query) : query;
  if (db.check) return db.check.before<Row>(db.pool, statement);
  return (await db.pool.query(statement)).rows as Row[];
}

/**
 * A check that must hold, read fresh, before a request's result may be used (a key not revoked),
 * without a round trip of its own: it is written on the same connection right in front of the
 * request's first prepared query, and both answers come back together. `judge` reads the check's
 * rows and throws to refuse; the query's result is then never returned. Queries after the first,
 * and requests that make none, settle the check on its own with `settle`.
 */
export class RideAlongCheck {
  readonly #statement: Statement;
  readonly #judge: (rows: unknown[]) => void | Promise<void>;
  /** Settles once the check has run: resolved if it holds, rejected with the refusal. */
  #outcome: Promise<void> | undefined;

  constructor(statement: Statement, judge: (rows: unknown[]) => void | Promise<void>) {
    this.#statement = statement;
    this.#judge = judge;
  }

  async before<Row>(pool: pg.Pool, query: Statement): Promise<Row[]> {
    if (this.#outcome) {
      await this.#outcome;
      return (await pool.query(query)).rows as Row[];
    }
    const both = this.#together(pool, query);
    this.#outcome = this.#decided(both.then(([checked]) => checked));
    const [, result] = await both;
    await this.#outcome;
    if (result.status === 'rejected') throw result.reason;
    return result.value.rows as Row[];
  }

  /** Resolves when the check holds (running it alone if no query carried it); throws the refusal. */
  async settle(pool: pg.Pool): Promise<void> {
    this.#outcome ??= this.#decided(pool.query(this.#statement));
    await this.#outcome;
  }

  async #together(pool: pg.Pool, query: Statement): Promise<[PromiseSettledResult<pg.QueryResult>, PromiseSettledResult<pg.QueryResult>]> {
    const client = await pool.connect();
    // One write for both statements (pg corks each statement's own messages, not the pair).
    const stream = (client as unknown as { connection?: { stream?: { cork?(): void; uncork?(): void } } }).connection?.stream;
    stream?.cork?.();
    const pair = Promise.allSettled([client.query(this.#statement), client.query(query)]);
    stream?.uncork?.();
    const [checked, result] = await pair;
    // As pool.query does: a connection that failed a statement is not reused.
    client.release(checked.status === 'rejected' ? checked.reason : result.status === 'rejected' ? result.reason : undefined);
    return [checked, result];
  }

  #decided(checked: Promise<pg.QueryResult | PromiseSettledResult<pg.QueryResult>>): Promise<void> {
    const outcome = checked.then(async (value) => {
      if ('status' in value) {
        if (value.status === 'rejected') throw value.reason;
        value = value.value;
      }
      await this.#judge(value.rows);
    });
    outcome.catch(() => {}); // every caller awaits it: never an unhandled rejection
    return outcome;
  }
}
