import { createHash } from 'node:crypto';

// Idempotency keys (draft-ietf-httpapi-idempotency-key-header): the same key from the same user
// and client with the same request returns the first result and does nothing again; with a
// different request it is refused. Keys live IDEMPOTENCY_KEY_TTL_MS. Only successes are recorded: a failed
// request rolls its key back with everything else, so a retry runs again.

/** The name clients give the key by (the REST header), and the field a malformed one is refused on. */
export const IDEMPOTENCY_KEY = 'Idempotency-Key';
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** Whether a client's key is 1 to 255 visible ASCII characters. */
export const isWellFormedIdempotencyKey = (key: string): boolean => KEY_PATTERN.test(key);

/**
 * JSON with object keys sorted, so equal requests fingerprint equally whatever their key order.
 * Iterative (an explicit stack of pieces still to write), so no nesting can overflow the stack.
 */
function canonicalJson(root: unknown): string {
  const out: string[] = [];
  // Either a value still to write or literal text (punctuation) to emit as is.
  const todo: ({ value: unknown } | string)[] = [{ value: root }];
  while (todo.length > 0) {
    const next = todo.pop()!;
    if (typeof next === 'string') {
      out.push(next);
      continue;
    }
    const { value } = next;
    if (value === null || typeof value !== 'object') {
      out.push(JSON.stringify(value) ?? '');
      continue;
    }
    const entries: [string | undefined, unknown][] = Array.isArray(value)
      ? value.map((v) => [undefined, v])
      : Object.entries(value)
          .filter(([, v]) => v !== undefined)
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
    // Pushed in reverse: the stack pops them in order.
    todo.push(close);
    entries.reverse().forEach(([key, child], i) => {
      todo.push({ value: child });
      if (key !== undefined) todo.push(`${JSON.stringify(key)}:`);
      if (i < entries.length - 1) todo.push(',');
    });
    out.push(open);
  }
  return out.join('');
}

export function requestFingerprint(operation: string, request: unknown): Buffer {
  return createHash('sha256').update(canonicalJson({ operation, request })).digest();
}

/** A result, and whether it is the stored result of an earlier request with the same key. */
export interface Replayable<T> {
  value: T;
  replayed: boolean;
}
