import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { invalid } from './errors.ts';

// The one cursor format of every list (domain/keyset.ts pages with it): base64url of
// ["v2", kind, ...position], then "." and a truncated HMAC-SHA256 of that text under a
// server-kept key. Only cursors we issued pass: an edited one, or one of another list's kind, is
// refused as invalid on `cursor` before its position is even parsed. The key is derived from the
// server secrets in the database (configureCursorKey, at start), so every instance accepts every
// instance's cursors, across restarts; until configured, a random per-process key.

const TAG_BYTES = 16;
let key: Buffer = randomBytes(32);

/** Sets the key cursors are signed with (buildApp: derived from the shared server secrets). */
export function configureCursorKey(secret: Buffer): void {
  key = Buffer.from(secret);
}

const tagOf = (payload: string): Buffer => createHmac('sha256', key).update(payload).digest().subarray(0, TAG_BYTES);

export function encodeCursor(kind: string, position: string[]): string {
  const payload = Buffer.from(JSON.stringify(['v2', kind, ...position])).toString('base64url');
  return `${payload}.${tagOf(payload).toString('base64url')}`;
}

const refuse = () => invalid([{ field: 'cursor', message: 'is not a cursor issued by this API; pass nextCursor from the previous page unchanged' }]);

/** The position in a cursor of `kind` with `length` parts, each checked by `valid`. */
export function decodeCursor(text: string, kind: string, length: number, valid: (part: string, index: number) => boolean = () => true): string[] {
  const match = /^([A-Za-z0-9_-]{1,1000})\.([A-Za-z0-9_-]{22})$/.exec(text);
  if (!match) throw refuse();
  const [, payload, tag] = match as unknown as [string, string, string];
  // Compared as text: base64url's spare low bits would let two spellings decode to one tag.
  if (!timingSafeEqual(Buffer.from(tag), Buffer.from(tagOf(payload).toString('base64url')))) throw refuse();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw refuse();
  }
  if (!Array.isArray(parsed) || parsed.length !== length + 2 || parsed[0] !== 'v2' || parsed[1] !== kind) throw refuse();
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
