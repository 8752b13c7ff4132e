import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Base62 text of `length` characters from a CSPRNG, without modulo bias. */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += ALPHABET[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/** Record ids: a short type prefix and 20 random base62 characters (~119 bits), e.g. `ws_4XkP…`. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBase62(20)}`;
}

/** Ids accepted from imports and in URLs: 1 to 64 letters, digits, `_` and `-`. */
export const ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
