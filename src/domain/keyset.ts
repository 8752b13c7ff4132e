import { sql, type RawBuilder } from 'kysely';
import { decodeCursor, encodeCursor, isValidCursor } from '../platform/cursor.ts';
import { parseTimestamp } from '../platform/time.ts';

// Keyset pages of the main API's lists, like the Hub API's: ordered by (timestamp, id) ascending,
// ids compared byte by byte, `limit + 1` rows fetched to know whether another page follows, and
// an opaque cursor holding the last row's position at the database's full precision.

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 500;

export interface Position {
  /** ISO timestamp with microseconds. */
  at: string;
  id: string;
}

export interface Page<T> {
  data: T[];
  nextCursor: string | null;
}

const TIMESTAMP_IN_CURSOR = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const validPart = (part: string, index: number) => index !== 0 || (TIMESTAMP_IN_CURSOR.test(part) && parseTimestamp(part) !== undefined);

export function decodePosition(kind: string, cursor: string): Position {
  const [at, id] = decodeCursor(cursor, kind, 2, validPart) as [string, string];
  return { at, id };
}

export const isValidPosition = (kind: string) => (cursor: string): boolean => isValidCursor(cursor, kind, 2, validPart);

/** A timestamp column as cursor text, microseconds kept. */
export const cursorText = (column: RawBuilder<unknown>) => sql<string>`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** `(column, id) > (at, id)` for the rows after a cursor. */
export const after = (column: RawBuilder<unknown>, idColumn: RawBuilder<unknown>, position: Position) =>
  sql`(${column}, ${idColumn}) > (${position.at}::timestamptz, ${position.id})`;

/** The page of `rows` (fetched with limit + 1) and the cursor to the next one. */
export function toPage<T>(kind: string, rows: { row: T; position: Position }[], limit: number): Page<T> {
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    data: page.map((r) => r.row),
    nextCursor: rows.length > limit && last ? encodeCursor(kind, [last.position.at, last.position.id]) : null,
  };
}
