import type { Socket } from 'node:net';
import pg from 'pg';
import { CONNECT_TIMEOUT_MS, REVOCATION_HEARTBEAT_MS, REVOCATION_RECONNECT_MS } from '../policy.ts';
import type { Db } from './database.ts';

export const REVOCATION_CHANNEL = 'hubops_oauth_revocation';

/** How long close() lets a connection say goodbye before cutting it (a database that no longer answers never acknowledges). */
const CLOSE_WAIT_MS = 1_000;

export interface RevocationFeedOptions {
  connectTimeoutMs?: number;
  heartbeatMs?: number;
  reconnectMs?: { first: number; max: number };
  /** Told when the listener loses its connection (with why) and when it listens again. */
  onState?: (state: { listening: boolean; error?: unknown; retryInMs?: number }) => void;
}

/**
 * Tells every instance that OAuth tokens were revoked or destroyed, so caches of token verdicts
 * are emptied: at once on the instance that revoked (a direct call), and on the others as soon as
 * PostgreSQL delivers the NOTIFY sent in the revoking statement's transaction. While the listener
 * is not connected, `reliable` is false and caches must not be used.
 *
 * A database that stops answering without closing the connection (a blackhole: a partition, a
 * firewall that drops) is noticed by a heartbeat query, and a connect attempt gives up after
 * CONNECT_TIMEOUT_MS: either way the connection is dropped and opened again with backoff. close()
 * never waits on the database for more than a second.
 */
export class RevocationFeed {
  readonly #db: Db;
  readonly #listeners = new Set<() => void>();
  readonly #connectTimeoutMs: number;
  readonly #heartbeatMs: number;
  readonly #reconnectMs: { first: number; max: number };
  readonly #onState: NonNullable<RevocationFeedOptions['onState']>;
  #client: pg.Client | undefined;
  #reliable = false;
  #closed = false;
  #retry: NodeJS.Timeout | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #failures = 0;

  constructor(db: Db, options: RevocationFeedOptions = {}) {
    this.#db = db;
    this.#connectTimeoutMs = options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
    this.#heartbeatMs = options.heartbeatMs ?? REVOCATION_HEARTBEAT_MS;
    this.#reconnectMs = options.reconnectMs ?? REVOCATION_RECONNECT_MS;
    this.#onState = options.onState ?? (() => {});
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

  /** Connects and listens; on failure it rejects, and keeps trying in the background with backoff. */
  async start(): Promise<void> {
    if (this.#closed) return;
    const client = new pg.Client({
      connectionString: this.#db.url,
      application_name: 'hubops-revocations',
      connectionTimeoutMillis: this.#connectTimeoutMs,
      keepAlive: true,
    });
    const lost = (error?: unknown) => {
      if (this.#client !== client) return;
      this.#client = undefined;
      this.#reliable = false;
      clearInterval(this.#heartbeat);
      this.revoked();
      cut(client);
      if (this.#closed) return;
      const retryInMs = Math.min(this.#reconnectMs.max, this.#reconnectMs.first * 2 ** this.#failures);
      this.#failures += 1;
      this.#onState({ listening: false, error, retryInMs });
      this.#retry = setTimeout(() => {
        this.#retry = undefined;
        this.start().catch(() => {});
      }, retryInMs);
      this.#retry.unref();
    };
    client.on('error', lost);
    client.on('end', () => lost(new Error('the listener connection ended')));
    client.on('notification', () => this.revoked());
    this.#client = client;
    try {
      await client.connect();
      await answerWithin(client.query(`LISTEN ${REVOCATION_CHANNEL}`), this.#connectTimeoutMs);
    } catch (error) {
      lost(error);
      throw error;
    }
    if (this.#client !== client) return; // closed meanwhile
    this.revoked(); // anything cached before we listened may be stale
    this.#reliable = true;
    if (this.#failures > 0) this.#onState({ listening: true });
    this.#failures = 0;
    // A connection the database stopped answering on looks idle for ever: ask it something.
    this.#heartbeat = setInterval(() => {
      answerWithin(client.query('SELECT 1'), this.#connectTimeoutMs).catch((error) => lost(error));
    }, this.#heartbeatMs);
    this.#heartbeat.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#reliable = false;
    clearTimeout(this.#retry);
    clearInterval(this.#heartbeat);
    const client = this.#client;
    this.#client = undefined;
    if (!client) return;
    // A polite end, but not for longer than CLOSE_WAIT_MS: a blackholed server never acknowledges it.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      client.end().catch(() => {}),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, CLOSE_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
    cut(client);
  }
}

/** The query's answer, or a rejection when none came within `ms`. */
async function answerWithin<T>(query: Promise<T>, ms: number): Promise<T> {
  query.catch(() => {}); // it may still fail after the race was lost: not an unhandled rejection
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      query,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the database did not answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Drops a client's socket without waiting for the server (pg has no such call; its stream is the socket). */
function cut(client: pg.Client): void {
  client.end().catch(() => {});
  (client as unknown as { connection?: { stream?: Socket } }).connection?.stream?.destroy();
}
