import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { ApiError, invalidRequest } from '../../platform/errors.ts';
import type { MainContext } from '../../surfaces/main-api/context.ts';
import { claimKey, findResponse, saveResponse } from './idempotency.repository.ts';

// Idempotency-Key for the main API's POSTs (contract §5; draft-ietf-httpapi-idempotency-key-header):
// the same key from the same user and OAuth client with the same request returns the first
// response and does nothing again; with a different request it is refused. Keys live 24 hours.
// Only successes are recorded: a failed request rolls its key back with everything else, so a
// retry runs again.

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
export const REPLAYED_HEADER = 'Idempotent-Replayed';
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

/**
 * Runs `work` in a transaction, once per Idempotency-Key. `operation` and `request` identify what
 * was asked: a key reused for anything else is refused with 422 idempotency_key_reused. Without
 * a key it simply runs in a transaction.
 */
export async function withIdempotency<T>(
  ctx: MainContext,
  operation: string,
  request: unknown,
  work: (trx: Kysely<Database>) => Promise<T>,
): Promise<T> {
  const key = ctx.idempotencyKey;
  if (key === undefined) return ctx.db.kysely.transaction().execute(work);
  if (!KEY_PATTERN.test(key)) {
    throw invalidRequest([{ field: IDEMPOTENCY_HEADER, message: 'must be 1 to 255 visible ASCII characters (a UUID is a good choice)' }]);
  }
  const ref = { userId: ctx.principal.user.id, clientId: ctx.principal.clientId, key };
  // The token's hub and workspace are part of the request: the same key used under another
  // workspace's token is a different request (422), never a replay of that workspace's record.
  const fingerprint = requestFingerprint(operation, { hubId: ctx.principal.hub.id, workspaceId: ctx.principal.workspace?.id ?? null, request });
  const now = ctx.clock.now();
  return ctx.db.kysely.transaction().execute(async (trx) => {
    if (await claimKey(trx, ref, fingerprint, now, new Date(now.getTime() + IDEMPOTENCY_TTL_MS))) {
      const result = await work(trx);
      await saveResponse(trx, ref, result);
      return result;
    }
    const stored = await findResponse(trx, ref);
    if (!stored || !stored.requestHash.equals(fingerprint)) {
      throw new ApiError(422, 'idempotency_key_reused',
        'This Idempotency-Key was already used for a different request in the last 24 hours; send a new key for a new request.');
    }
    ctx.setResponseHeader?.(REPLAYED_HEADER, 'true');
    return stored.body as T;
  });
}
