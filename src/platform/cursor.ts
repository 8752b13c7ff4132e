import { createHmac, timingSafeEqual } from 'node:crypto';

// The one cursor format of every list (domain/keyset.ts pages with it): base64url of
// ["v2", kind, ...position], then "." and a truncated HMAC-SHA256 of that text under the app's
// cursor key. Only cursors we issued pass: an edited one, or one of another list's kind, is
// refused before its position is even parsed. The key is the app's own (buildApp derives it from
// the server secrets in the database), so every instance of a deployment accepts every instance's
// cursors, across restarts, and an app with other secrets refuses them.

const TAG_BYTES = 16;

/** The key an app signs and checks its cursors with. */
export class CursorKey {
  readonly #key: Buffer;

  constructor(secret: Buffer) {
    this.#key = Buffer.from(secret);
  }

  #tagOf(payload: string): Buffer {
    return createHmac('sha256', this.#key).update(payload).digest().subarray(0, TAG_BYTES);
  }

  /** The cursor of a list of `kind` at the position written as `parts`. */
  sign(kind: string, parts: readonly string[]): string {
    const payload = Buffer.from(JSON.stringify(['v2', kind, ...parts])).toString('base64url');
    return `${payload}.${this.#tagOf(payload).toString('base64url')}`;
  }

  /**
   * The position's parts in a cursor of `kind` signed with this key (each a string of 1 to 256
   * characters); undefined for anything else: an edited cursor, another list's, another key's.
   */
  read(text: string, kind: string): string[] | undefined {
    const match = /^([A-Za-z0-9_-]{1,1000})\.([A-Za-z0-9_-]{22})$/.exec(text);
    if (!match) return undefined;
    const [, payload, tag] = match as unknown as [string, string, string];
    // Compared as text: base64url's spare low bits would let two spellings decode to one tag.
    if (!timingSafeEqual(Buffer.from(tag), Buffer.from(this.#tagOf(payload).toString('base64url')))) return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      return undefined;
    }
    if (!Array.isArray(parsed) || parsed[0] !== 'v2' || parsed[1] !== kind) return undefined;
    const parts = parsed.slice(2);
    return parts.every((part) => typeof part === 'string' && part.length >= 1 && part.length <= 256) ? parts : undefined;
  }
}
