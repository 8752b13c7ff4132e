import pg from 'pg';
import type { Db } from './database.ts';

export const REVOCATION_CHANNEL = 'hubops_oauth_revocation';

/**
 * Tells every instance that OAuth tokens were revoked or destroyed, so caches of token verdicts
 * are emptied: at once on the instance that revoked (a direct call), and on the others as soon as
 * PostgreSQL delivers the NOTIFY sent in the revoking statement's transaction. While the listener
 * is not connected, `reliable` is false and caches must not be used.
 */
export class RevocationFeed {
  readonly #db: Db;
  readonly #listeners = new Set<() => void>();
  #client: pg.Client | undefined;
  #reliable = false;
  #closed = false;
  #retry: NodeJS.Timeout | undefined;

  constructor(db: Db) {
    this.#db = db;
  }

  get reliable(): boolean {
    return this.#reliable;
  }

  onRevocation(listener: () => void): void {
    this.#listeners.add(listener);
  }

  /** Called by the storage adapter after it revoked or destroyed something (same instance). */
  revoked(): void {
    for (const listener of this.#listeners) listener();
  }

  async start(): Promise<void> {
    if (this.#closed) return;
    const client = new pg.Client({ connectionString: this.#db.url, application_name: 'hubops-revocations' });
    const lost = () => {
      if (this.#client !== client) return;
      this.#client = undefined;
      this.#reliable = false;
      this.revoked();
      client.end().catch(() => {});
      if (!this.#closed && !this.#retry) {
        this.#retry = setTimeout(() => {
          this.#retry = undefined;
          void this.start().catch(() => {});
        }, 1_000);
        this.#retry.unref();
      }
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', () => this.revoked());
    this.#client = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${REVOCATION_CHANNEL}`);
      this.revoked(); // anything cached before we listened may be stale
      this.#reliable = true;
    } catch (error) {
      lost();
      throw error;
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#reliable = false;
    clearTimeout(this.#retry);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }
}
