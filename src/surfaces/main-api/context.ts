import type { Db } from '../../db/database.ts';
import type { Caller } from '../../domain/caller.ts';
import type { MediaStore } from '../../domain/media/media-store.ts';
import type { Clock } from '../../platform/clock.ts';

/** What every main API operation runs with: what the services need, and who is calling. */
export interface MainContext {
  db: Db;
  clock: Clock;
  /** Where uploaded media bytes are kept ($DATA_DIR/media). */
  media: MediaStore;
  /** Resolved from the access token on every request. */
  caller: Caller;
  /** The request's `Idempotency-Key` header (REST POSTs); undefined when none was sent. */
  idempotencyKey?: string | undefined;
}
