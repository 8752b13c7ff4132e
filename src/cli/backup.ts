// `hubops backup FILE` and `hubops restore FILE` (docs/operations.md, Backups): one file holding
// the database's rows, the server secrets key file (without it the sealed server secrets and ad
// tokens cannot be opened) and the uploaded media under DATA_DIR.
//
// The file is gzip'd JSON lines: a manifest (format, version, the migrations the rows fit), the
// rows per table, the sequences, the key, the media, and last a trailer with the SHA-256 of every
// line before it and the counts. A restore checks all of it before its one transaction commits.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { finished } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import type { Config } from '../config.ts';
import { appliedMigrations, dumpDatabase, hasData, loadDatabase, type DumpItem } from '../db/backup.ts';
import { connect, type Db } from '../db/database.ts';
import { startEmbedded } from '../db/embedded.ts';
import { migrate, migrationNames } from '../db/migrate.ts';
import { DomainError } from '../platform/errors.ts';
import { VERSION } from '../platform/version.ts';
import { SECRETS_KEY_FILE } from '../surfaces/oauth/server-secrets.ts';
import { plural, type Command, type Output } from './command.ts';

const FORMAT = 'hubops-backup';
const FORMAT_VERSION = 1;
const MEDIA_DIR = 'media';
/** Uploads being written (src/domain/media/media-store.ts): not media yet. */
const STAGING = '.staging';

interface Manifest {
  format: typeof FORMAT;
  formatVersion: number;
  hubopsVersion: string;
  createdAt: string;
  /** The migrations the rows were dumped at: a restore builds exactly this schema first. */
  migrations: string[];
}

type Line =
  | { manifest: Manifest }
  | { table: string; rows: unknown[] }
  | { sequence: string; value: string | null }
  /** The secrets key file's text; absent when the key came from HUBOPS_SECRETS_KEY (not ours to copy). */
  | { secretsKey: string }
  | { media: string; data: string }
  | { end: { sha256: string; rows: Record<string, number>; media: number; secretsKey: boolean } };

const refuse = (message: string) => new DomainError('rejected', message);

/** Media files under `root` (keys as relative paths with /), staging left out. */
async function mediaKeys(root: string): Promise<string[]> {
  if (!existsSync(root)) return [];
  const entries = await readdir(root, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)).split(path.sep).join('/'))
    .filter((key) => !key.startsWith(`${STAGING}/`))
    .sort();
}

/** Writes the backup to FILE.partial, renamed to FILE when complete (mode 0600: it holds the key). */
async function writeBackup(file: string, config: Config, pool: Db['pool']): Promise<Output> {
  const partial = `${file}.partial`;
  const gzip = createGzip();
  // Made afresh (never an old file's mode or owner, never through a link): it holds the key.
  await rm(partial, { force: true });
  const out = createWriteStream(partial, { mode: 0o600, flags: 'wx' });
  gzip.pipe(out);
  const hash = createHash('sha256');
  const write = async (line: Line) => {
    const text = `${JSON.stringify(line)}\n`;
    hash.update(text);
    if (!gzip.write(text)) await new Promise((resolve) => gzip.once('drain', resolve));
  };
  const rows: Record<string, number> = {};
  try {
    let migrations: string[] = [];
    await dumpDatabase(pool, async (item) => {
      if (item.kind === 'migrations') {
        migrations = item.names;
        const createdAt = new Date().toISOString();
        await write({ manifest: { format: FORMAT, formatVersion: FORMAT_VERSION, hubopsVersion: VERSION, createdAt, migrations } });
      } else if (item.kind === 'rows') {
        rows[item.table] = (rows[item.table] ?? 0) + item.rows.length;
        await write({ table: item.table, rows: item.rows });
      } else await write({ sequence: item.name, value: item.value });
    });
    const keyFile = path.resolve(config.dataDir, SECRETS_KEY_FILE);
    const withKey = config.secretsKeys.length === 0 && existsSync(keyFile);
    if (withKey) await write({ secretsKey: (await readFile(keyFile, 'utf8')).trim() });
    // Media after the rows: a file is in place before the row naming it commits, so every media
    // row of the snapshot finds its file (a file newer than the snapshot comes along unused).
    const mediaRoot = path.join(config.dataDir, MEDIA_DIR);
    const keys = await mediaKeys(mediaRoot);
    let media = 0;
    for (const key of keys) {
      const data = await readFile(path.join(mediaRoot, key)).catch(() => undefined); // deleted meanwhile
      if (!data) continue;
      await write({ media: key, data: data.toString('base64') });
      media += 1;
    }
    const end = { sha256: hash.digest('hex'), rows, media, secretsKey: withKey };
    gzip.end(`${JSON.stringify({ end } satisfies Line)}\n`);
    await finished(out);
    await rename(partial, file);
    const total = Object.values(rows).reduce((a, b) => a + b, 0);
    const size = (await stat(file)).size;
    return {
      json: { file, hubopsVersion: VERSION, migrations: migrations.length, rows, media, secretsKey: withKey, bytes: size },
      human: [
        `Backed up ${plural(total, 'row')} in ${plural(Object.keys(rows).length, 'table')}, ${plural(media, 'media file')} to ${file} (${size} bytes).`,
        withKey
          ? `The secrets key file is in the backup: keep ${file} as secret as ${config.dataDir}.`
          : config.secretsKeys.length
            ? 'The secrets key is HUBOPS_SECRETS_KEY, not in the backup: keep it with the backup, a restore needs the same value.'
            : `No secrets key file in ${config.dataDir} yet (the server makes it on its first start): none in the backup.`,
      ].join('\n'),
    };
  } catch (error) {
    gzip.destroy();
    out.destroy();
    await rm(partial, { force: true });
    throw error;
  }
}

/** The file's lines as text: gunzip errors (a cut file) and read errors end the iteration with that error. */
async function* textLines(file: string): AsyncGenerator<string> {
  const gunzip = createGunzip();
  createReadStream(file)
    .on('error', (error) => gunzip.destroy(error))
    .pipe(gunzip);
  const decoder = new StringDecoder('utf8');
  let pending = '';
  try {
    for await (const chunk of gunzip) {
      pending += decoder.write(chunk as Buffer);
      let newline = pending.indexOf('\n');
      while (newline !== -1) {
        yield pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        newline = pending.indexOf('\n');
      }
    }
  } catch (error) {
    if (error instanceof DomainError) throw error;
    throw refuse(`${file} is not a hubops backup, or is damaged: ${(error as Error).message}`);
  }
  pending += decoder.end();
  if (pending) yield pending;
}

/** The backup's lines in order, each parsed; the trailer's checksum is checked against what came before. */
async function* readLines(file: string): AsyncGenerator<Line> {
  const hash = createHash('sha256');
  let ended = false;
  for await (const text of textLines(file)) {
    if (ended) throw refuse(`${file} has data after its end`);
    let line: Line;
    try {
      line = JSON.parse(text) as Line;
    } catch {
      throw refuse(`${file} is not a hubops backup, or is damaged (a line is not JSON)`);
    }
    if ('end' in line) {
      if (line.end.sha256 !== hash.digest('hex')) throw refuse(`${file} is damaged: its checksum does not match`);
      ended = true;
    } else hash.update(`${text}\n`);
    yield line;
  }
  if (!ended) throw refuse(`${file} is incomplete: it has no end (was the backup interrupted?)`);
}

/**
 * Reads the whole file once before anything is changed: its manifest, and that it is complete and
 * its checksum matches (a damaged backup is refused before a DATA_DIR is made).
 */
async function verify(file: string): Promise<Manifest> {
  if (!existsSync(file)) throw refuse(`no such file: ${file}`);
  let manifest: Manifest | undefined;
  for await (const line of readLines(file)) {
    if (manifest === undefined) {
      if (!('manifest' in line) || line.manifest.format !== FORMAT) throw refuse(`${file} is not a hubops backup`);
      if (line.manifest.formatVersion !== FORMAT_VERSION)
        throw refuse(`${file} is a backup of format ${line.manifest.formatVersion}; this hubops reads format ${FORMAT_VERSION}`);
      manifest = line.manifest;
    }
  }
  if (!manifest) throw refuse(`${file} is not a hubops backup`);
  return manifest;
}

/** A DATA_DIR that holds nothing but what a failed restore could leave is empty. */
async function isEmptyDir(dir: string): Promise<boolean> {
  return !existsSync(dir) || (await readdir(dir)).length === 0;
}

async function restoreBackup(file: string, config: Config, force: boolean): Promise<Output> {
  const manifest = await verify(file);
  const known = new Set(await migrationNames());
  const unknown = manifest.migrations.filter((m) => !known.has(m));
  if (unknown.length)
    throw refuse(
      `${file} was made by hubops ${manifest.hubopsVersion}, whose schema this hubops (${VERSION}) does not know (${unknown.join(', ')}): restore it with that version or newer`,
    );
  const dataDir = path.resolve(config.dataDir);
  const embedded = !config.databaseUrl;
  // The database files and the key that must not be overwritten without --force.
  if (embedded && !force && !(await isEmptyDir(dataDir)))
    throw refuse(`DATA_DIR ${dataDir} is not empty: restore into a new directory, or give --force to replace what it holds`);
  if (embedded && existsSync(path.join(dataDir, 'postgres', 'postmaster.pid')))
    throw refuse(`the embedded PostgreSQL in ${dataDir} is running: stop the hubops server first`);
  const keyFile = path.join(dataDir, SECRETS_KEY_FILE);
  if (!embedded && !force && existsSync(keyFile))
    throw refuse(`${keyFile} exists: give --force to replace it with the backup's key, or point DATA_DIR at a new directory`);
  if (embedded && force) {
    for (const name of ['postgres', 'postgres.password', 'postgres.owner', SECRETS_KEY_FILE, MEDIA_DIR])
      await rm(path.join(dataDir, name), { recursive: true, force: true });
  }
  const createdDir = !existsSync(dataDir);
  await mkdir(dataDir, { recursive: true });
  // As root the embedded PostgreSQL runs as `postgres`, which must enter DATA_DIR.
  if (createdDir) await chmod(dataDir, 0o755);

  const database = embedded ? await startEmbedded(dataDir) : undefined;
  const db = connect(config.databaseUrl ?? database!.url, { max: 2, applicationName: 'hubops-restore' });
  try {
    if (!embedded && !force && (await hasData(db.pool)))
      throw refuse('the database at DATABASE_URL already holds hubops data: restore into an empty database, or give --force to replace it');
    // A database at a newer schema than the backup cannot take its rows: its tables are past them.
    const newer = (await appliedMigrations(db.pool)).filter((name) => !manifest.migrations.includes(name));
    if (newer.length)
      throw refuse(
        `the database at DATABASE_URL is at a newer schema than the backup (${newer.join(', ')}): restore into an empty database`,
      );
    await migrate(db.pool, { only: new Set(manifest.migrations) });
    let secretsKey: string | undefined;
    let mediaCount = 0;
    const items = async function* (): AsyncGenerator<DumpItem> {
      for await (const line of readLines(file)) {
        if ('table' in line) yield { kind: 'rows', table: line.table, rows: line.rows };
        else if ('sequence' in line) yield { kind: 'sequence', name: line.sequence, value: line.value };
        else if ('secretsKey' in line) secretsKey = line.secretsKey;
        else if ('media' in line) {
          // Checked against the media store's key shape: a backup cannot write outside media/.
          if (!/^[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)*\/[A-Za-z0-9_-]+\.[a-z0-9]+$/.test(line.media))
            throw refuse(`${file} names a media file outside the media store: ${JSON.stringify(line.media)}`);
          // Written as it comes (the whole file was verified first): the media need not fit in memory.
          const target = path.join(dataDir, MEDIA_DIR, ...line.media.split('/'));
          await mkdir(path.dirname(target), { recursive: true });
          await writeFile(target, Buffer.from(line.data, 'base64'), { mode: 0o600 });
          mediaCount += 1;
        } else if ('end' in line) {
          // Read through to the end (the checksum) before the rows commit.
        }
      }
    };
    const rows = await loadDatabase(db.pool, items());
    if (secretsKey !== undefined) await writeFile(keyFile, `${secretsKey}\n`, { mode: 0o600 });
    // Then the migrations this hubops has beyond the backup's, as a start would apply them.
    const applied = await migrate(db.pool);
    const total = Object.values(rows).reduce((a, b) => a + b, 0);
    return {
      json: {
        file,
        hubopsVersion: manifest.hubopsVersion,
        createdAt: manifest.createdAt,
        rows,
        media: mediaCount,
        secretsKey: secretsKey !== undefined,
        applied,
      },
      human: [
        `Restored ${plural(total, 'row')} in ${plural(Object.keys(rows).length, 'table')}, ${plural(mediaCount, 'media file')} from ${file} (hubops ${manifest.hubopsVersion}, ${manifest.createdAt}) into ${embedded ? dataDir : 'DATABASE_URL'}.`,
        ...(applied.length ? [`Applied ${plural(applied.length, 'migration')} newer than the backup: ${applied.join(', ')}.`] : []),
        secretsKey !== undefined
          ? `The secrets key file is ${keyFile}.`
          : 'The backup holds no secrets key file: start hubops with the HUBOPS_SECRETS_KEY it ran with.',
      ].join('\n'),
    };
  } catch (error) {
    // Nothing half-restored is left behind in a directory this restore made.
    await db.close();
    await database?.stop();
    if (embedded && createdDir) await rm(dataDir, { recursive: true, force: true });
    else if (embedded)
      for (const name of ['postgres', 'postgres.password', 'postgres.owner', SECRETS_KEY_FILE, MEDIA_DIR])
        await rm(path.join(dataDir, name), { recursive: true, force: true });
    throw error;
  } finally {
    await db.close().catch(() => {});
    await database?.stop();
  }
}

export const backupCommands: Command[] = [
  {
    name: 'backup',
    args: 'FILE',
    summary:
      'write the database, the secrets key file and uploaded media to one file, consistent while the server runs (docs/operations.md, Backups)',
    json: '`{"file","hubopsVersion","migrations","rows":{table:count},"media","secretsKey":bool,"bytes"}`',
    options: { force: { type: 'boolean' } },
    optionHelp: { force: 'replace FILE if it exists' },
    positionals: ['FILE'],
    prepare: async (values, [file]) => {
      const target = path.resolve(file!);
      if (existsSync(target) && values.force !== true) throw refuse(`${target} exists: give --force to replace it`);
      return {
        standalone: async (config) => {
          const db = await openForBackup(config);
          try {
            return await writeBackup(target, config, db.pool);
          } finally {
            await db.close();
          }
        },
      };
    },
  },
  {
    name: 'restore',
    args: 'FILE',
    summary:
      'restore a backup into a new DATA_DIR (or an empty DATABASE_URL database), then apply the migrations newer than it; --force replaces what is there',
    json: '`{"file","hubopsVersion","createdAt","rows":{table:count},"media","secretsKey":bool,"applied":[names]}`',
    options: { force: { type: 'boolean' } },
    optionHelp: {
      force:
        "replace what DATA_DIR holds (the embedded database, the secrets key file, media), or every table of the DATABASE_URL database's public schema (hubops expects a database of its own)",
    },
    positionals: ['FILE'],
    prepare: async (values, [file]) => {
      const source = path.resolve(file!);
      return { standalone: (config) => restoreBackup(source, config, values.force === true) };
    },
  },
];

/** The database to back up, without migrating it: a backup must not change what it copies. */
async function openForBackup(config: Config): Promise<{ pool: Db['pool']; close(): Promise<void> }> {
  if (config.databaseUrl) {
    const db = connect(config.databaseUrl, { max: 1, applicationName: 'hubops-backup' });
    return { pool: db.pool, close: () => db.close() };
  }
  if (!existsSync(path.join(config.dataDir, 'postgres', 'PG_VERSION')))
    throw refuse(`no embedded database in DATA_DIR ${path.resolve(config.dataDir)}`);
  const database = await startEmbedded(config.dataDir);
  const db = connect(database.url, { max: 1, applicationName: 'hubops-backup' });
  return {
    pool: db.pool,
    close: async () => {
      await db.close();
      await database.stop();
    },
  };
}
