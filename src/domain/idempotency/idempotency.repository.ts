import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';

export interface IdempotencyRef {
  userId: string;
  clientId: string;
  key: string;
}

export interface StoredResponse {
  requestHash: Buffer;
  body: unknown;
}

// Expired keys are removed a few at a time by the requests that create new ones, so the table
// stays small without a job; SKIP LOCKED keeps concurrent sweepers off each other's rows.
const SWEEP_BATCH = 100;

/**
 * Claims the key for this transaction: inserts it, or takes over an expired record of it. When
 * another transaction holds the key uncommitted, this waits for it to finish. False when a live
 * record exists (the caller replays it).
 */
export async function claimKey(
  trx: Kysely<Database>,
  ref: IdempotencyRef,
  requestHash: Buffer,
  now: Date,
  expiresAt: Date,
): Promise<boolean> {
  await sql`
    DELETE FROM idempotency_keys WHERE ctid = ANY(ARRAY(
      SELECT ctid FROM idempotency_keys WHERE expires_at <= ${now} LIMIT ${SWEEP_BATCH} FOR UPDATE SKIP LOCKED))`.execute(trx);
  const claimed = await trx
    .insertInto('idempotency_keys')
    .values({
      user_id: ref.userId,
      client_id: ref.clientId,
      key: ref.key,
      request_hash: requestHash,
      created_at: now,
      expires_at: expiresAt,
    })
    .onConflict((oc) =>
      oc
        .columns(['user_id', 'client_id', 'key'])
        .doUpdateSet({ request_hash: requestHash, response_body: null, created_at: now, expires_at: expiresAt })
        .where('idempotency_keys.expires_at', '<=', now),
    )
    .returning('key')
    .executeTakeFirst();
  return claimed !== undefined;
}

export async function findResponse(trx: Kysely<Database>, ref: IdempotencyRef): Promise<StoredResponse | undefined> {
  const row = await trx
    .selectFrom('idempotency_keys')
    .select(['request_hash', 'response_body'])
    .where('user_id', '=', ref.userId)
    .where('client_id', '=', ref.clientId)
    .where('key', '=', ref.key)
    .executeTakeFirst();
  return row && row.response_body !== null ? { requestHash: row.request_hash, body: row.response_body } : undefined;
}

export async function saveResponse(trx: Kysely<Database>, ref: IdempotencyRef, body: unknown): Promise<void> {
  await trx
    .updateTable('idempotency_keys')
    .set({ response_body: JSON.stringify(body) })
    .where('user_id', '=', ref.userId)
    .where('client_id', '=', ref.clientId)
    .where('key', '=', ref.key)
    .execute();
}
