import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { errors, type Adapter, type AdapterPayload } from 'oidc-provider';
import type { Db } from '../../db/database.ts';
import { revokeGrant } from '../../domain/oauth/grants.repository.ts';
import { hashClientSecret, isHashedClientSecret } from '../../domain/oauth/secrets.ts';
import { FORBIDDEN_CHARACTER_MESSAGE, findForbiddenText, hasForbiddenCharacter } from '../../platform/text.ts';
import { REFRESH_TOKEN_REUSE_LEEWAY_S } from '../../policy.ts';
import { REVOCATION_CHANNEL, type RevocationFeed } from '../../db/revocation-feed.ts';

// oidc-provider storage in PostgreSQL. For tokens, codes, sessions and interactions the id is the
// bearer secret, so rows are keyed by its SHA-256 and the payload is stored without it (`jti` is
// put back from the id presented on lookup). Clients live in their own table with the secret hashed.
// Ids and payloads come from requests: an id PostgreSQL could not store (NUL, lone surrogate) is
// simply not found, and a payload holding such text is refused as a bad request, never a 500.

const sha256 = (value: string): Buffer => createHash('sha256').update(value).digest();

/** Models issued from a grant: stored only while the grant exists. */
const ISSUED_FROM_GRANT = new Set(['AccessToken', 'RefreshToken', 'AuthorizationCode']);

export class PostgresAdapter implements Adapter {
  readonly #model: string;
  readonly #db: Db;
  readonly #revocations: RevocationFeed | undefined;

  constructor(model: string, db: Db, revocations?: RevocationFeed) {
    this.#model = model;
    this.#db = db;
    this.#revocations = revocations;
  }

  /**
   * Deletes this model's artifacts that `where` selects. Access tokens are what the main API's
   * verdict caches hold, so deleting one also tells every instance (NOTIFY in the same statement);
   * other models (interactions on every sign-in, sessions, codes) leave the caches alone.
   */
  async #delete(where: ReturnType<typeof sql>): Promise<void> {
    if (this.#model !== 'AccessToken') {
      await sql`DELETE FROM oauth_artifacts WHERE model = ${this.#model} AND ${where}`.execute(this.#db.kysely);
      return;
    }
    await sql`WITH gone AS (DELETE FROM oauth_artifacts WHERE model = ${this.#model} AND ${where} RETURNING 1)
              SELECT pg_notify(${REVOCATION_CHANNEL}, '') FROM (SELECT count(*) FROM gone) AS n`.execute(this.#db.kysely);
    this.#revocations?.revoked();
  }

  async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
    const field = hasForbiddenCharacter(id) ? 'id' : findForbiddenText(payload);
    if (field) {
      const message = `${field} ${FORBIDDEN_CHARACTER_MESSAGE}`;
      throw this.#model === 'Client' ? new errors.InvalidClientMetadata(message) : new errors.InvalidRequest(message);
    }
    if (this.#model === 'Client') {
      const metadata: Record<string, unknown> = { ...payload };
      if (typeof metadata.client_secret === 'string' && !isHashedClientSecret(metadata.client_secret)) {
        metadata.client_secret = hashClientSecret(metadata.client_secret);
      }
      await sql`INSERT INTO oauth_clients (client_id, metadata) VALUES (${id}, ${JSON.stringify(metadata)})
                ON CONFLICT (client_id) DO UPDATE SET metadata = EXCLUDED.metadata`.execute(this.#db.kysely);
      return;
    }
    const { jti: _secretId, ...stored } = payload;
    const expiresAt = expiresIn ? new Date(Date.now() + expiresIn * 1000) : null;
    const grantId = ISSUED_FROM_GRANT.has(this.#model) && payload.grantId ? payload.grantId : null;
    // A token of a revoked grant is never stored: a refresh that lost the race to a reuse (which
    // revoked the family) must not leave its new tokens behind. The key-share lock on the grant
    // row orders this insert against revokeGrant's delete of it (domain/oauth/grants.repository.ts).
    await sql`
      INSERT INTO oauth_artifacts (model, id_hash, payload, grant_id, uid_hash, expires_at)
      SELECT ${this.#model}, ${sha256(id)}, ${JSON.stringify(stored)}, ${payload.grantId ?? null},
             ${payload.uid ? sha256(payload.uid) : null}, ${expiresAt}
      WHERE ${grantId}::text IS NULL
         OR EXISTS (SELECT 1 FROM oauth_artifacts WHERE model = 'Grant' AND id_hash = ${grantId ? sha256(grantId) : null} FOR KEY SHARE)
      ON CONFLICT (model, id_hash) DO UPDATE
        SET payload = EXCLUDED.payload, grant_id = EXCLUDED.grant_id,
            uid_hash = EXCLUDED.uid_hash, expires_at = EXCLUDED.expires_at`.execute(this.#db.kysely);
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    if (this.#model === 'Client') {
      if (hasForbiddenCharacter(id)) return undefined;
      const row = await this.#db.kysely.selectFrom('oauth_clients').select('metadata').where('client_id', '=', id).executeTakeFirst();
      return row?.metadata as AdapterPayload | undefined;
    }
    const payload = await this.#live('id_hash', sha256(id));
    return payload && { ...payload, jti: id };
  }

  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    // Sessions are found by uid but loaded by their id, which the payload does not keep: the
    // provider only needs the payload (it re-saves under the cookie's id).
    return this.#live('uid_hash', sha256(uid));
  }

  /**
   * The unexpired artifact of this model with that hash, its consumption time put back; except for
   * a refresh token consumed within the reuse leeway, which reads as unused so that its rotation is
   * repeated (see consume).
   */
  async #live(column: 'id_hash' | 'uid_hash', hash: Buffer): Promise<AdapterPayload | undefined> {
    const row = await this.#db.kysely
      .selectFrom('oauth_artifacts')
      .select(['payload', 'consumed_at', this.#withinLeeway()])
      .where('model', '=', this.#model)
      .where(column, '=', hash)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', new Date())]))
      .executeTakeFirst();
    if (!row) return undefined;
    const consumed = row.consumed_at && !row.within_leeway ? { consumed: Math.floor(row.consumed_at.getTime() / 1000) } : {};
    return { ...(row.payload as AdapterPayload), ...consumed };
  }

  /** Whether the row was consumed less than the reuse leeway ago (by the database's clock, which every instance shares); only refresh tokens have one. */
  #withinLeeway() {
    return this.#model === 'RefreshToken'
      ? sql<boolean>`coalesce(consumed_at > now() - make_interval(secs => ${REFRESH_TOKEN_REUSE_LEEWAY_S}), false)`.as('within_leeway')
      : sql<boolean>`false`.as('within_leeway');
  }

  async findByUserCode(): Promise<AdapterPayload | undefined> {
    return undefined; // the device flow is not enabled
  }

  /**
   * Marks a code or refresh token used, atomically: of concurrent uses exactly one sets
   * `consumed_at`. The others find it already set, which is a reuse (OAuth 2.1 §4.3.1): the
   * whole grant is revoked and the request fails with invalid_grant. Except a refresh token
   * consumed less than REFRESH_TOKEN_REUSE_LEEWAY_S ago: oidc-provider has already checked that
   * the same client presents it, so it is a parallel worker of that client, and its rotation goes
   * ahead. The new pair is named after the token rotated (provider.ts), so it is the same pair.
   */
  async consume(id: string): Promise<void> {
    const won = await this.#db.kysely
      .updateTable('oauth_artifacts')
      .set({ consumed_at: sql`now()` })
      .where('model', '=', this.#model)
      .where('id_hash', '=', sha256(id))
      .where('consumed_at', 'is', null)
      .executeTakeFirst();
    if (won.numUpdatedRows > 0n) return;
    const row = await this.#db.kysely
      .selectFrom('oauth_artifacts')
      .select(['grant_id', this.#withinLeeway()])
      .where('model', '=', this.#model)
      .where('id_hash', '=', sha256(id))
      .executeTakeFirst();
    if (row?.within_leeway) return;
    if (row?.grant_id) await revokeGrant(this.#db, row.grant_id, this.#revocations);
    throw new errors.InvalidGrant(`${this.#model === 'RefreshToken' ? 'refresh token' : 'authorization code'} already used`);
  }

  async destroy(id: string): Promise<void> {
    if (this.#model === 'Client') {
      if (hasForbiddenCharacter(id)) return;
      await this.#db.kysely.deleteFrom('oauth_clients').where('client_id', '=', id).execute();
      return;
    }
    // A grant takes what was issued from it along, in an order no concurrent refresh can slip past.
    if (this.#model === 'Grant') return revokeGrant(this.#db, id, this.#revocations);
    await this.#delete(sql`id_hash = ${sha256(id)}`);
  }

  /** oidc-provider revokes a grant by calling this on every token model's adapter, plus Grant's destroy. */
  async revokeByGrantId(grantId: string): Promise<void> {
    if (hasForbiddenCharacter(grantId)) return;
    await this.#delete(sql`grant_id = ${grantId}`);
  }
}

/** Deletes artifacts that expired more than an hour ago (the hour keeps replay detection useful). */
export async function deleteExpiredArtifacts(db: Db): Promise<number> {
  const result = await db.kysely
    .deleteFrom('oauth_artifacts')
    .where('expires_at', '<', sql<Date>`now() - interval '1 hour'`)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
