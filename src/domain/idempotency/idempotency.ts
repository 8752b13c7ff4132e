import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import type { Clock } from '../../platform/clock.ts';
import { DomainError, invalid } from '../../platform/errors.ts';
import { IDEMPOTENCY_KEY_TTL_MS } from '../../policy.ts';
import type { Caller } from '../caller.ts';
import { claimKey, findResponse, saveResponse } from './idempotency.repository.ts';

// Idempotency keys (draft-ietf-httpapi-idempotency-key-header): the same key from the same user
// and client with the same request returns the first result and does nothing again; with a
// different request it is refused. Keys live IDEMPOTENCY_KEY_TTL_MS. Only successes are recorded: a failed
// request rolls its key back with everything else, so a retry runs again.

/** The name clients give the key by (the REST header), and the field a malformed one is refused on. */
export const IDEMPOTENCY_KEY = 'Idempotency-Key';
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

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
      : Object.entries(value).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
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

/**
 * Runs `work` in a transaction, once per idempotency key. `operation` and `request` identify what
 * was asked: a key reused for anything else is refused (rejected, idempotency_key_reused).
 * Without a key it simply runs in a transaction.
 */
export async function withIdempotency<T>(
  deps: { db: Db; clock: Clock },
  caller: Caller,
  key: string | undefined,
  operation: string,
  request: unknown,
  work: (trx: Kysely<Database>) => Promise<T>,
): Promise<Replayable<T>> {
  const fresh = async (trx: Kysely<Database>) => ({ value: await work(trx), replayed: false });
  if (key === undefined) return deps.db.kysely.transaction().execute(fresh);
  if (!KEY_PATTERN.test(key)) {
    throw invalid([{ field: IDEMPOTENCY_KEY, message: 'must be 1 to 255 visible ASCII characters (a UUID is a good choice)' }]);
  }
  const ref = { userId: caller.user.id, clientId: caller.clientId, key };
  // The caller's hub and workspace are part of the request: the same key used under another
  // workspace's token is a different request (refused), never a replay of that workspace's record.
  const fingerprint = requestFingerprint(operation, { hubId: caller.hub.id, workspaceId: caller.workspace?.id ?? null, request });
  const now = deps.clock.now();
  return deps.db.kysely.transaction().execute(async (trx) => {
    if (await claimKey(trx, ref, fingerprint, now, new Date(now.getTime() + IDEMPOTENCY_KEY_TTL_MS))) {
      const result = await fresh(trx);
      await saveResponse(trx, ref, result.value);
      return result;
    }
    const stored = await findResponse(trx, ref);
    if (!stored || !stored.requestHash.equals(fingerprint)) {
      throw new DomainError('rejected',
        'This Idempotency-Key was already used for a different request in the last 24 hours; send a new key for a new request.',
        { code: 'idempotency_key_reused' });
    }
    return { value: stored.body as T, replayed: true };
  });
}
