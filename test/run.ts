// `npm test`: runs every test file against a real PostgreSQL. With DATABASE_URL, that server;
// without it, an embedded one in a temporary directory. A migrated template database is made
// once; each test file clones it (test/support/db.ts), so files start clean and run in parallel.
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbedded, startScratchEmbedded, type EmbeddedDatabase } from '../src/db/embedded.ts';
import { connect } from '../src/db/database.ts';
import { migrate } from '../src/db/migrate.ts';

async function testFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.test.ts'))
    .map((e) => path.join(e.parentPath, e.name))
    .sort();
}

let embedded: EmbeddedDatabase | undefined;
let serverUrl = process.env.DATABASE_URL;
if (!serverUrl) {
  embedded = await startScratchEmbedded('hubops-test-');
  serverUrl = embedded.url;
  console.log('# embedded PostgreSQL for tests');
} else {
  console.log('# PostgreSQL from DATABASE_URL');
}

// A DATA_DIR whose embedded cluster is initialised (initdb run, started and stopped once), made
// alongside the template database: process tests that need a fresh DATA_DIR but not initdb itself
// copy it (test/process/support.ts) instead of running initdb, which costs seconds of CPU each.
const dataDirTemplate = await mkdtemp(path.join(tmpdir(), 'hubops-datadir-tpl-'));
await chmod(dataDirTemplate, 0o755);
const initialised = startEmbedded(dataDirTemplate).then((database) => database.stop());

const template = `hubops_tpl_${process.pid}`;
const admin = new pg.Client({ connectionString: serverUrl });
await admin.connect();
await admin.query(`DROP DATABASE IF EXISTS ${template}`);
await admin.query(`CREATE DATABASE ${template}`);
const templateUrl = new URL(serverUrl);
templateUrl.pathname = `/${template}`;
const templateDb = connect(templateUrl.toString());
await migrate(templateDb.pool);
await templateDb.close();
// A closed connection's backend lingers for a moment; CREATE DATABASE … TEMPLATE needs it gone.
while ((await admin.query('SELECT 1 FROM pg_stat_activity WHERE datname = $1', [template])).rowCount) {
  await new Promise((resolve) => setTimeout(resolve, 20));
}
await initialised;

// The longest files start first, so that the run does not end waiting on one started last.
const SLOW_FIRST = [
  'test/process/shared-data-dir',
  'test/process/stop',
  'test/process/signals',
  'test/fuzz/',
  'test/web/browser',
  'test/process/embedded-restart',
  'test/process/shutdown',
  'test/process/',
  'test/hub-api/database-down',
  'test/mcp/third-party-clients',
  'test/cli/',
  'test/domain/publisher',
  'test/docs/examples',
  'test/docs/mcp-configs',
  'test/mcp/apps-view',
  'test/web/layout',
  'test/web/connected-apps',
];
const rank = (file: string) => {
  const index = SLOW_FIRST.findIndex((prefix) => file.startsWith(prefix));
  return index === -1 ? SLOW_FIRST.length : index;
};
const files =
  process.argv.length > 2 ? process.argv.slice(2) : (await testFiles('test')).sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
// Many files spend much of their time waiting on child processes and timeouts, not on the CPU.
const concurrency = process.env.TEST_CONCURRENCY ?? '3';
const code = await new Promise<number>((resolve) => {
  const child = spawn(process.execPath, ['--test', `--test-concurrency=${concurrency}`, ...files], {
    stdio: 'inherit',
    env: {
      ...process.env,
      HUBOPS_TEST_SERVER_URL: serverUrl,
      HUBOPS_TEST_TEMPLATE: template,
      HUBOPS_TEST_DATA_DIR_TEMPLATE: dataDirTemplate,
    },
  });
  child.on('exit', (exitCode) => resolve(exitCode ?? 1));
});

// Test files drop their own databases; sweep any left by a crashed file, then the template.
const leftovers = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE $1`, [
  `hubops_t_${process.pid}_%`,
]);
for (const { datname } of leftovers.rows) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
await admin.end();
await embedded?.stop();
await rm(dataDirTemplate, { recursive: true, force: true });
process.exit(code);
