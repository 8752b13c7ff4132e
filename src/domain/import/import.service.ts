// The NDJSON import, all-or-nothing: read every line, check every reference, then write in one transaction.

import type { Kysely } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import { DomainError } from '../../platform/errors.ts';
import { checkExisting } from './existing.ts';
import { writeRecords, type SpendMode } from './import.repository.ts';
import { readNdjson, readObjects, type LineReader } from './line-reader.ts';

export { byteLines } from './line-reader.ts';
import { IMPORT_TYPES, type ImportCounts, type ImportIssue, type ImportRecord, type ImportResult } from './records.ts';
import { checkReferences } from './references.ts';

export type { SpendMode } from './import.repository.ts';
export { IMPORT_TYPES, type ImportCounts, type ImportIssue, type ImportResult, type ImportType } from './records.ts';

const MAX_REPORTED_ISSUES = 20;

function formatIssue(issue: ImportIssue): string {
  return `line ${issue.line}: ${issue.field ? `${issue.field}: ` : ''}${issue.message}`;
}

/** A rejected import: one line per issue (first 20, by line number); nothing was written. */
export class ImportError extends DomainError<ImportIssue> {
  declare readonly issues: ImportIssue[];
  constructor(issues: ImportIssue[]) {
    const lines = issues.slice(0, MAX_REPORTED_ISSUES).map(formatIssue);
    if (issues.length > MAX_REPORTED_ISSUES) lines.push(`… and ${issues.length - MAX_REPORTED_ISSUES} more issues`);
    super('invalid', lines.join('\n'), { issues });
  }
}

function counts(records: ImportRecord[]): ImportCounts {
  const imported = Object.fromEntries(IMPORT_TYPES.map((t) => [t, 0])) as ImportCounts;
  for (const record of records) imported[record.type] += 1;
  return imported;
}

/** Checks the references of the lines read and writes them, or throws ImportError with every issue. */
async function checkAndWrite(trx: Kysely<Database>, lines: LineReader, spendMode: SpendMode): Promise<ImportResult> {
  const references = await checkReferences(trx, lines);
  // Lines whose key is stored: unchanged (not written) when they match the stored row, else refused.
  const existing = await checkExisting(trx, references.existing);
  const issues = [...lines.issues, ...references.issues, ...existing.issues].sort((a, b) => a.line - b.line);
  if (issues.length > 0) throw new ImportError(issues);
  const records = lines.items as ImportRecord[];
  const written = await writeRecords(
    trx,
    records.filter((record) => !existing.unchanged.has(record)),
    spendMode,
  );
  const unchanged = counts([...existing.unchanged]);
  for (const type of IMPORT_TYPES) unchanged[type] += written.unchanged[type];
  return { imported: counts(records), unchanged, spend: written.spend };
}

/**
 * Imports objects shaped like NDJSON lines (object i is "line" i + 1) inside a transaction the
 * caller holds, so the import commits or rolls back with the caller's other work.
 */
export async function importObjects(trx: Kysely<Database>, objects: Iterable<unknown>): Promise<ImportResult> {
  return checkAndWrite(trx, readObjects(objects), 'replace');
}

/** Ends a dry run's transaction (rolled back), carrying what the import would have done. */
class RolledBack extends Error {
  readonly result: ImportResult;
  constructor(result: ImportResult) {
    super('dry run: rolled back');
    this.result = result;
  }
}

/**
 * Imports NDJSON text (a whole string, or its lines from a stream) all-or-nothing in one
 * transaction. Blank lines are skipped but counted, so line numbers match an editor's.
 * Throws ImportError listing the first issues by line; then nothing was written. Spend replaces
 * the stored spend of its keys unless `spend: 'add'` (see docs/import-format.md, "Re-running an
 * import"). With `dryRun`, the same checks and writes run and are rolled back: nothing is
 * written, and the result says what a real run would do.
 */
export async function importNdjson(
  db: Db,
  input: string | Iterable<string> | AsyncIterable<string | Uint8Array>,
  options: { spend?: SpendMode; dryRun?: boolean } = {},
): Promise<ImportResult> {
  const lines = await readNdjson(input);
  try {
    return await db.kysely.transaction().execute(async (trx) => {
      const result = await checkAndWrite(trx, lines, options.spend ?? 'replace');
      // A dry run does all the work, then rolls it back: what it reports is what a real run would do.
      if (options.dryRun) throw new RolledBack(result);
      return result;
    });
  } catch (error) {
    if (error instanceof RolledBack) return error.result;
    const e = error as { code?: string; constraint?: string };
    // Another writer created the same ids (or removed a referenced row) while this import ran.
    if (e.code === '23505' || e.code === '23503') {
      throw new DomainError(
        'conflict',
        `the import conflicts with data written while it ran (${e.constraint ?? 'constraint'}); nothing was imported, run it again`,
      );
    }
    throw error;
  }
}
