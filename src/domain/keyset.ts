import { sql, type RawBuilder } from 'kysely';
import { decodeCursor, encodeCursor, isValidCursor, pageOf } from '../platform/cursor.ts';
import { parseTimestamp } from '../platform/time.ts';

// Paging of every list, on every surface: keyset pages ordered by (timestamp, id) ascending — or
// by id alone — with ids compared byte by byte, `limit + 1` rows fetched to know whether another
// page follows, and an opaque signed cursor (platform/cursor.ts) holding the list's kind and the
// last row's position, timestamps at the database's full precision.


export interface Position {
  /** ISO timestamp with microseconds. */
  at: string;
  id: string;
}

export interface Page<T> {
  data: T[];
  nextCursor: string | null;
}

/** How a list's cursors carry its (timestamp, id) positions. */
export interface PositionCursors {
  encode(position: Position): string;
  /** The position, or a 400 on `cursor` for anything but a cursor this list issued. */
  decode(cursor: string): Position;
  isValid(cursor: string): boolean;
}

/**
 * The cursors of the list of `kind`. Every list issues timestamps with exactly six fractional
 * digits (cursorText), and accepts only those unless `anyFraction`: then 0 to 6 digits pass.
 */
export function positionCursors(kind: string, options: { anyFraction?: boolean } = {}): PositionCursors {
  const shape = options.anyFraction
    ? /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/
    : /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
  const validPart = (part: string, index: number) => index !== 0 || (shape.test(part) && parseTimestamp(part) !== undefined);
  return {
    encode: (position) => encodeCursor(kind, [position.at, position.id]),
    decode(cursor) {
      const [at, id] = decodeCursor(cursor, kind, 2, validPart) as [string, string];
      return { at, id };
    },
    isValid: (cursor) => isValidCursor(cursor, kind, 2, validPart),
  };
}

export const decodePosition = (kind: string, cursor: string): Position => positionCursors(kind).decode(cursor);

export const isValidPosition = (kind: string): ((cursor: string) => boolean) => positionCursors(kind).isValid;

/** The id in a cursor of a list ordered by id alone. */
export const decodeAfterId = (kind: string, cursor: string): string => decodeCursor(cursor, kind, 1)[0]!;

export const isValidAfterId = (kind: string) => (cursor: string): boolean => isValidCursor(cursor, kind, 1);

/** A timestamp column as cursor text, microseconds kept. */
export const cursorText = (column: RawBuilder<unknown>) => sql<string>`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** `(column, id) > (at, id)` for the rows after a cursor. */
export const after = (column: RawBuilder<unknown>, idColumn: RawBuilder<unknown>, position: Position) =>
  sql`(${column}, ${idColumn}) > (${position.at}::timestamptz, ${position.id})`;

/** The page of `rows` (fetched with limit + 1) and the cursor to the next one. */
export function toPage<T>(kind: string, rows: { row: T; position: Position }[], limit: number): Page<T> {
  const page = pageOf(rows, limit, kind, ({ position }) => [position.at, position.id]);
  return { data: page.data.map((r) => r.row), nextCursor: page.nextCursor };
}

/** The page of `rows` of a list ordered by id alone (fetched with limit + 1). */
export const toIdPage = <T>(kind: string, rows: T[], limit: number, idOf: (row: T) => string): Page<T> => pageOf(rows, limit, kind, (row) => [idOf(row)]);
