import type pg from 'pg';

// A logical copy of hubops's tables that needs no pg_dump (the embedded PostgreSQL ships none):
// every row of every table in the schema `public` as JSON, read in one REPEATABLE READ snapshot
// so it is consistent while the server writes, and loaded back with the triggers and foreign keys
// off (session_replication_role = replica), so the order of tables does not matter and counters
// that triggers keep are restored as they were, not counted twice.

/** One unit of a dump, in the order dumpDatabase emits them. */
export type DumpItem =
  | { kind: 'migrations'; names: string[] }
  | { kind: 'rows'; table: string; rows: unknown[] }
  | { kind: 'sequence'; name: string; value: string | null };

const BATCH = 500;
const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

async function tables(client: pg.PoolClient): Promise<string[]> {
  // Partitions are copied as themselves ('r'), never through their parent ('p'), so no row twice.
  const result = await client.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY c.relname`,
  );
  return result.rows.map((r) => r.name);
}

/**
 * Reads the whole database in one snapshot: the migrations it is at, then each table's rows (in
 * batches) and each sequence's value, handed to `emit` as they are read.
 */
export async function dumpDatabase(pool: pg.Pool, emit: (item: DumpItem) => Promise<void>): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const migrations = await client.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY name');
    await emit({ kind: 'migrations', names: migrations.rows.map((r) => r.name) });
    for (const table of await tables(client)) {
      await client.query(`DECLARE dump NO SCROLL CURSOR FOR SELECT to_jsonb(t) AS row FROM public.${quote(table)} t`);
      for (;;) {
        const batch = await client.query<{ row: unknown }>(`FETCH ${BATCH} FROM dump`);
        if (batch.rows.length === 0) break;
        await emit({ kind: 'rows', table, rows: batch.rows.map((r) => r.row) });
      }
      await client.query('CLOSE dump');
    }
    const sequences = await client.query<{ name: string; value: string | null }>(
      `SELECT sequencename AS name, last_value::text AS value FROM pg_sequences WHERE schemaname = 'public' ORDER BY sequencename`,
    );
    for (const s of sequences.rows) await emit({ kind: 'sequence', name: s.name, value: s.value });
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/** Whether the database holds any hubops data (a migrated schema counts, even with no rows). */
export async function hasData(pool: pg.Pool): Promise<boolean> {
  const result = await pool.query<{ found: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')) AS found`,
  );
  return result.rows[0]!.found;
}

/** The migrations applied to the database (none when it has never been migrated). */
export async function appliedMigrations(pool: pg.Pool): Promise<string[]> {
  const result = await pool.query<{ name: string | null }>(`SELECT to_regclass('public.schema_migrations')::text AS name`);
  if (result.rows[0]!.name === null) return [];
  return (await pool.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY name')).rows.map((r) => r.name);
}

/**
 * Replaces every table's rows with a dump's, in one transaction: nothing is kept if `items`
 * throws (a checksum that does not match, say) or a row does not fit. The schema must be the
 * dump's (the same migrations applied). Returns the rows loaded per table.
 */
export async function loadDatabase(pool: pg.Pool, items: AsyncIterable<DumpItem>): Promise<Record<string, number>> {
  const client = await pool.connect();
  const counts: Record<string, number> = {};
  try {
    await client.query('BEGIN');
    await client.query('SET LOCAL session_replication_role = replica');
    await client.query('SET LOCAL statement_timeout = 0');
    const known = await tables(client);
    if (known.length) await client.query(`TRUNCATE ${known.map((t) => `public.${quote(t)}`).join(', ')} RESTART IDENTITY`);
    // Generated columns are computed again; identity columns keep the dumped values.
    const columns = new Map<string, string>();
    const columnsOf = async (table: string) => {
      if (!known.includes(table)) throw new Error(`the backup has rows for a table this schema does not have: ${table}`);
      let list = columns.get(table);
      if (list === undefined) {
        const result = await client.query<{ name: string }>(
          `SELECT attname AS name FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = ''
            ORDER BY attnum`,
          [`public.${quote(table)}`],
        );
        list = result.rows.map((r) => quote(r.name)).join(', ');
        columns.set(table, list);
      }
      return list;
    };
    for await (const item of items) {
      if (item.kind === 'rows') {
        const list = await columnsOf(item.table);
        await client.query(
          `INSERT INTO public.${quote(item.table)} (${list}) OVERRIDING SYSTEM VALUE
            SELECT ${list} FROM jsonb_populate_recordset(NULL::public.${quote(item.table)}, $1::jsonb)`,
          [JSON.stringify(item.rows)],
        );
        counts[item.table] = (counts[item.table] ?? 0) + item.rows.length;
      } else if (item.kind === 'sequence' && item.value !== null) {
        await client.query('SELECT setval($1::regclass, $2::bigint, true)', [`public.${quote(item.name)}`, item.value]);
      }
    }
    await client.query('COMMIT');
    return counts;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
