import { sql, type RawBuilder } from 'kysely';
import type { CursorKey } from '../platform/cursor.ts';
import { parseTimestamp } from '../platform/time.ts';

// Paging of every list, on every surface: keyset pages ordered by (timestamp, id) ascending — or
// by id alone — with ids compared byte by byte, `limit + 1` rows fetched to know whether another
// page follows, and an opaque signed cursor (platform/cursor.ts) holding the list's kind and the
// last row's position, timestamps at the database's full precision. A surface reads the cursor
// once, at its edge (ListCursor): a list gets the position, already verified, and signs the next.

export interface Position {
  /** ISO timestamp with microseconds. */
  at: string;
  id: string;
}

export interface Page<T> {
  data: T[];
  nextCursor: string | null;
}

/** How a list's cursors carry its positions: the list's kind (another list's cursor is refused) and the position as parts. */
export interface CursorKind<P> {
  readonly kind: string;
  partsOf(position: P): string[];
  /** The position in a verified cursor's parts; undefined when they are not one of this list's. */
  positionOf(parts: readonly string[]): P | undefined;
}

/**
 * The cursors of the list of `kind`, ordered by (timestamp, id). Every list issues timestamps
 * with exactly six fractional digits (cursorText), and accepts only those unless `anyFraction`:
 * then 0 to 6 digits pass.
 */
export function positionCursor(kind: string, options: { anyFraction?: boolean } = {}): CursorKind<Position> {
  const shape = options.anyFraction
    ? /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/
    : /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
  return {
    kind,
    partsOf: (position) => [position.at, position.id],
    positionOf(parts) {
      const [at, id] = parts;
      if (parts.length !== 2 || !shape.test(at!) || parseTimestamp(at!) === undefined) return undefined;
      return { at: at!, id: id! };
    },
  };
}

/** The cursors of the list of `kind`, ordered by id alone. */
export function idCursor(kind: string): CursorKind<string> {
  return { kind, partsOf: (id) => [id], positionOf: (parts) => (parts.length === 1 ? parts[0] : undefined) };
}

/**
 * A list's cursor as a surface's edge read it, once: the position the page starts after (none
 * for the first page), verified with the app's key, and how the next page's cursor is signed.
 */
export class ListCursor<P> {
  readonly after: P | undefined;
  readonly #kind: CursorKind<P>;
  readonly #key: CursorKey;

  private constructor(kind: CursorKind<P>, key: CursorKey, after: P | undefined) {
    this.#kind = kind;
    this.#key = key;
    this.after = after;
  }

  /** The first page's: nothing to start after. */
  static first<P>(kind: CursorKind<P>, key: CursorKey): ListCursor<P> {
    return new ListCursor(kind, key, undefined);
  }

  /** The cursor `text`, or undefined when it is not one this list issued under `key`. */
  static read<P>(kind: CursorKind<P>, key: CursorKey, text: string): ListCursor<P> | undefined {
    const parts = key.read(text, kind.kind);
    const position = parts && kind.positionOf(parts);
    return position === undefined ? undefined : new ListCursor(kind, key, position);
  }

  /** The cursor of the page after `position`. */
  next(position: P): string {
    return this.#key.sign(this.#kind.kind, this.#kind.partsOf(position));
  }
}

/** A timestamp column as cursor text, microseconds kept. */
export const cursorText = (column: RawBuilder<unknown>) =>
  sql<string>`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** `(column, id) > (at, id)` for the rows after a cursor. */
export const after = (column: RawBuilder<unknown>, idColumn: RawBuilder<unknown>, position: Position) =>
  sql`(${column}, ${idColumn}) > (${position.at}::timestamptz, ${position.id})`;

/** `{data, nextCursor}` from `limit + 1` fetched rows: the extra row only says that more follow. */
function pageOf<T, P>(cursor: ListCursor<P>, rows: T[], limit: number, positionOf: (row: T) => P): Page<T> {
  const data = rows.slice(0, limit);
  const last = data[data.length - 1];
  return { data, nextCursor: rows.length > limit && last ? cursor.next(positionOf(last)) : null };
}

/** The page of `rows` (fetched with limit + 1) and the cursor to the next one. */
export function toPage<T>(cursor: ListCursor<Position>, rows: { row: T; position: Position }[], limit: number): Page<T> {
  const page = pageOf(cursor, rows, limit, (r) => r.position);
  return { data: page.data.map((r) => r.row), nextCursor: page.nextCursor };
}

/** The page of `rows` of a list ordered by id alone (fetched with limit + 1). */
export const toIdPage = <T>(cursor: ListCursor<string>, rows: T[], limit: number, idOf: (row: T) => string): Page<T> =>
  pageOf(cursor, rows, limit, idOf);
