// Idempotency keys' one door: running a create once per key (the rules are in idempotency.ts,
// the SQL in idempotency.repository.ts).
import type { Kysely } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import type { Clock } from '../../platform/clock.ts';
import { DomainError, invalid } from '../../platform/errors.ts';
import { IDEMPOTENCY_KEY_TTL_MS } from '../../policy.ts';
import type { Caller } from '../caller.ts';
import { IDEMPOTENCY_KEY, isWellFormedIdempotencyKey, requestFingerprint, type Replayable } from './idempotency.ts';
import { claimKey, findResponse, saveResponse } from './idempotency.repository.ts';

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
  if (!isWellFormedIdempotencyKey(key)) {
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
    if (!stored?.requestHash.equals(fingerprint)) {
      throw new DomainError(
        'rejected',
        'This Idempotency-Key was already used for a different request in the last 24 hours; send a new key for a new request.',
        { code: 'idempotency_key_reused' },
      );
    }
    return { value: stored.body as T, replayed: true };
  });
}
