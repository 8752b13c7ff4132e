import { invalidRequest } from './errors.ts';

// Opaque keyset cursors: base64url of ["v1", kind, ...position]. They carry no secret and no
// tenant, so a forged one can only move a caller within rows it may already see; still, anything
// we did not issue (wrong shape, wrong kind) is refused with 400 on `cursor`.

export function encodeCursor(kind: string, position: string[]): string {
  return Buffer.from(JSON.stringify(['v1', kind, ...position])).toString('base64url');
}

const refuse = () => invalidRequest([{ field: 'cursor', message: 'is not a cursor issued by this API; pass nextCursor from the previous page unchanged' }]);

/** The position in a cursor of `kind` with `length` parts, each checked by `valid`. */
export function decodeCursor(text: string, kind: string, length: number, valid: (part: string, index: number) => boolean = () => true): string[] {
  if (!/^[A-Za-z0-9_-]{1,1000}$/.test(text)) throw refuse();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw refuse();
  }
  if (!Array.isArray(parsed) || parsed.length !== length + 2 || parsed[0] !== 'v1' || parsed[1] !== kind) throw refuse();
  const position = parsed.slice(2);
  if (!position.every((part, i) => typeof part === 'string' && part.length >= 1 && part.length <= 256 && valid(part, i))) throw refuse();
  return position as string[];
}

export function isValidCursor(text: string, kind: string, length: number, valid?: (part: string, index: number) => boolean): boolean {
  try {
    decodeCursor(text, kind, length, valid);
    return true;
  } catch {
    return false;
  }
}

/** `{data, nextCursor}` from `limit + 1` fetched rows: the extra row only says that more follow. */
export function pageOf<T>(rows: T[], limit: number, kind: string, positionOf: (row: T) => string[]): { data: T[]; nextCursor: string | null } {
  const data = rows.slice(0, limit);
  const last = data[data.length - 1];
  return { data, nextCursor: rows.length > limit && last ? encodeCursor(kind, positionOf(last)) : null };
}
