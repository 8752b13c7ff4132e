// `npx node scripts/sql-snapshots.ts` (npm run sql:snapshots): writes the hot SQL snapshots,
// sql/*.sql, from the statements the real code sends PostgreSQL (see scripts/sql-capture.ts).
// `--check` writes nothing and exits 1 if a file differs (what test/db/sql-snapshots.test.ts checks).
//
// It needs a PostgreSQL: with DATABASE_URL, a scratch database made on that server and dropped
// afterwards; without it, an embedded PostgreSQL in a temporary directory.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { connect } from '../src/db/database.ts';
import { startScratchEmbedded, type EmbeddedDatabase } from '../src/db/embedded.ts';
import { migrate } from '../src/db/migrate.ts';
import { captureHotSql, readSnapshots, SNAPSHOT_DIR } from './sql-capture.ts';

const check = process.argv.includes('--check');

let embedded: EmbeddedDatabase | undefined;
let serverUrl = process.env.DATABASE_URL;
if (!serverUrl) {
  embedded = await startScratchEmbedded('hubops-sql-snapshots-');
  serverUrl = embedded.url;
}

const name = `hubops_sql_snapshots_${process.pid}`;
const admin = new pg.Client({ connectionString: serverUrl });
let code = 0;
try {
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name}`);
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const scratch = connect(url.toString(), { max: 1 });
  try {
    await migrate(scratch.pool);
  } finally {
    await scratch.close();
  }
  const snapshots = await captureHotSql(url.toString());
  const committed = await readSnapshots(snapshots.map((s) => s.file));
  await mkdir(SNAPSHOT_DIR, { recursive: true });
  for (const snapshot of snapshots) {
    const where = path.relative(process.cwd(), SNAPSHOT_DIR + snapshot.file);
    const same = committed.get(snapshot.file) === snapshot.text;
    if (check) {
      if (!same) code = 1;
      console.log(`${same ? 'ok     ' : 'CHANGED'} ${where}`);
    } else {
      if (!same) await writeFile(SNAPSHOT_DIR + snapshot.file, snapshot.text);
      console.log(`${same ? 'unchanged' : 'written  '} ${where}`);
    }
  }
  if (check && code) console.log('Run `npx node scripts/sql-snapshots.ts` and review the diff of sql/.');
} finally {
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
  await admin.end().catch(() => {});
  await embedded?.stop();
}
process.exit(code);
