// One sync run of one leased ad account. The window is account-local: from complete_through −
// lookback (the first run: today − backfill) to today. It is worked in chunks of UTC days, oldest
// first; each chunk is read whole from the platform (account-local days one either side, so every
// hour of its UTC days is in), summed per (UTC day, campaign, ad set) in micros, rounded to cents
// once, and committed in ONE transaction: platform rows replaced, spend re-derived,
// complete_through advanced. A run killed mid-way loses at most the chunk in flight; the next run
// reads it again and, rows being replaced, counts nothing twice.
import type { Db } from '../../db/database.ts';
import {
  PlatformError,
  PlatformThrottled,
  type AdPlatformClient,
  type PlatformAdAccount,
  type PlatformCredential,
  type PlatformFailureKind,
  type PlatformSpendRow,
} from '../../integrations/ad-platform.ts';
import type { Clock } from '../../platform/clock.ts';
import type { PlatformFailureKind as SyncFailureKind } from '../../db/schema.ts';
import { FORBIDDEN_CHARACTERS, hasForbiddenCharacter, withoutHiddenFormatCharacters } from '../../platform/text.ts';
import { SealingError, type Sealer } from '../../platform/sealing.ts';
import {
  SPEND_BACKFILL_DAYS,
  SPEND_LOOKBACK_DAYS,
  SPEND_STALE_AFTER_MS,
  SPEND_SYNC_INTERVAL_MS,
  SPEND_SYNC_JITTER_MS,
  SPEND_THROTTLE_WAIT_MAX_MS,
} from '../../policy.ts';
import {
  advanceCompleteThrough,
  deriveSpend,
  endRun,
  findAccountRow,
  holdLease,
  loadSealedToken,
  replacePlatformRows,
  updateDescription,
  type AccountRow,
  type UtcDayRow,
} from './ad-account.repository.ts';
import { microsToCents } from './money.ts';
import { addDays, localDate, maxDate, minDate, UtcDayMapper } from './utc-days.ts';

/** UTC days per chunk (one transaction each). */
export const CHUNK_DAYS = 30;
/** Retry delays after consecutive transient failures (the last repeats). */
export const RETRY_BACKOFF_MS = [60_000, 5 * 60_000, 15 * 60_000, 60 * 60_000] as const;
/** Short throttles waited out within one chunk before the run is rescheduled instead. */
const MAX_THROTTLE_WAITS = 5;
const PERMANENT: PlatformFailureKind[] = ['needs_reconnect', 'missing_permission', 'invalid_request'];

export interface EngineDeps {
  db: Db;
  clock: Clock;
  clients: Partial<Record<AdPlatformClient['platform'], AdPlatformClient>>;
  sealer: Sealer;
  log?: { warn(o: object, m: string): void; info(o: object, m: string): void };
  /** Waits out a short throttle; injected so tests need not sleep. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** How long a claim holds; SPEND_SYNC_LEASE_MS unless a test needs less. */
  leaseMs: number;
  /** Random in [0, 1) for the jitter; injected for tests. */
  random?: () => number;
}

export type SyncOutcome =
  | { status: 'done'; completeThrough: string | null; syncedAt: Date }
  | { status: 'rescheduled'; until: Date; message: string }
  | { status: 'retrying'; failureKind: PlatformFailureKind; message: string; retryAt: Date }
  | { status: 'failed'; failureKind: PlatformFailureKind; message: string }
  /** Another instance held the account and did not finish in time; or it was disconnected. */
  | { status: 'skipped'; message: string };

const sleepFor = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });

class LeaseLost extends Error {}

const SYNC_FAILURE_KINDS: readonly string[] = [
  'needs_reconnect',
  'missing_permission',
  'invalid_request',
  'platform_error',
  'bad_answer',
  'unreachable',
] satisfies SyncFailureKind[];
const isSyncFailureKind = (kind: string): kind is SyncFailureKind => SYNC_FAILURE_KINDS.includes(kind);

/** What went wrong, in the platform's words where it gave some; never a token. */
function failureOf(error: unknown): { kind: SyncFailureKind; message: string; code: string | null } {
  // The publishing kinds (rejected, limit_reached, not_approved) never come from a spend read; were
  // one to, it is a request the platform will not take as made.
  if (error instanceof PlatformError)
    return {
      kind: isSyncFailureKind(error.kind) ? error.kind : 'invalid_request',
      message: (error.platformMessage ?? error.message).slice(0, 1_000),
      code: error.platformCode ?? null,
    };
  // The token was sealed under a secrets key this server does not have: connecting again mends it.
  if (error instanceof SealingError)
    return {
      kind: 'needs_reconnect',
      message: "the stored token cannot be opened with this server's secrets key; connect the account again",
      code: null,
    };
  return { kind: 'platform_error', message: 'the sync stopped on an unexpected error; it will be retried', code: null };
}

/**
 * A name from a platform as hubops shows and stores it: without what no input of ours accepts
 * (NUL and other controls, lone surrogates) and without invisible formatting characters (bidi
 * overrides: a name must not show as another; platform/text.ts), at most 200 characters. Cleaned,
 * not refused: the platform named it, and the admin must still see which campaign it is.
 */
export function shownName(name: string): string {
  return withoutHiddenFormatCharacters(name.replace(FORBIDDEN_GLOBAL, '')).trim().slice(0, 200);
}
const FORBIDDEN_GLOBAL = new RegExp(FORBIDDEN_CHARACTERS.source, 'g');

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** A row the engine can count, or a bad_answer: a client must not hand over what it did not check. `checkedDate` passed before. */
function checkRow(row: PlatformSpendRow, checkedDate: string): void {
  const ok =
    (row.date === checkedDate || (DATE.test(row.date) && !Number.isNaN(Date.parse(`${row.date}T00:00:00Z`)))) &&
    (row.hour === null || (Number.isInteger(row.hour) && row.hour >= 0 && row.hour <= 23)) &&
    typeof row.spendMicros === 'bigint' &&
    row.spendMicros >= 0n &&
    typeof row.campaignId === 'string' &&
    row.campaignId !== '' &&
    !hasForbiddenCharacter(row.campaignId) &&
    typeof row.adSetId === 'string' &&
    row.adSetId !== '' &&
    !hasForbiddenCharacter(row.adSetId) &&
    typeof row.campaignName === 'string' &&
    typeof row.adSetName === 'string';
  if (!ok) throw new PlatformError('bad_answer', 'the platform returned a spend row that is not well formed');
}

/** Runs one sync of an account this owner has leased, and records its outcome. */
export async function runSync(deps: EngineDeps, accountId: string, owner: string, signal?: AbortSignal): Promise<SyncOutcome> {
  const { db, clock } = deps;
  const startedAt = clock.now();
  const account = await findAccountRow(db.kysely, null, accountId);
  if (!account || account.connection_id === null) return { status: 'skipped', message: 'the account is not connected' };
  try {
    const completeThrough = await readAndStore(deps, account, owner, startedAt, signal);
    const nextSyncAt = new Date(
      clock.now().getTime() + SPEND_SYNC_INTERVAL_MS + Math.floor((deps.random ?? Math.random)() * SPEND_SYNC_JITTER_MS),
    );
    await endRun(db, accountId, owner, { kind: 'done', syncedAt: startedAt, nextSyncAt });
    deps.log?.info({ adAccountId: accountId, completeThrough }, 'ad account synced');
    return { status: 'done', completeThrough, syncedAt: startedAt };
  } catch (error) {
    if (error instanceof LeaseLost) return { status: 'skipped', message: 'another instance took the account over' };
    if (signal?.aborted) {
      // Stopping (shutdown): not a failure. Committed chunks stay; another run takes it from there.
      await endRun(db, accountId, owner, { kind: 'released', now: clock.now() });
      return { status: 'skipped', message: 'the sync was stopped; it resumes on the next run' };
    }
    const now = clock.now();
    if (error instanceof PlatformThrottled) {
      const until = new Date(now.getTime() + error.retryAfterMs);
      await endRun(db, accountId, owner, { kind: 'throttled', until });
      deps.log?.info({ adAccountId: accountId, until }, 'ad account sync rescheduled: the platform asked us to slow down');
      return { status: 'rescheduled', until, message: error.platformMessage ?? error.message };
    }
    const failure = failureOf(error);
    if (!(error instanceof PlatformError)) deps.log?.warn({ adAccountId: accountId, err: error }, 'ad account sync failed unexpectedly');
    else deps.log?.warn({ adAccountId: accountId, failureKind: failure.kind, code: failure.code }, 'ad account sync failed');
    if (PERMANENT.includes(failure.kind)) {
      await endRun(db, accountId, owner, { kind: 'failed', failure, state: 'failed', nextSyncAt: null, now });
      return { status: 'failed', failureKind: failure.kind, message: failure.message };
    }
    // Transient: retry with backoff; the hub shows failed only once it has lasted past the stale threshold.
    const retryAt = new Date(now.getTime() + RETRY_BACKOFF_MS[Math.min(account.failure_count, RETRY_BACKOFF_MS.length - 1)]!);
    const since = account.failing_since ?? now;
    const persistent = now.getTime() - since.getTime() > SPEND_STALE_AFTER_MS;
    await endRun(db, accountId, owner, { kind: 'failed', failure, state: persistent ? 'failed' : 'idle', nextSyncAt: retryAt, now });
    return persistent
      ? { status: 'failed', failureKind: failure.kind, message: failure.message }
      : { status: 'retrying', failureKind: failure.kind, message: failure.message, retryAt };
  }
}

/** Reads the window chunk by chunk and stores each; returns complete_through after the run. */
async function readAndStore(
  deps: EngineDeps,
  account: AccountRow,
  owner: string,
  startedAt: Date,
  signal?: AbortSignal,
): Promise<string | null> {
  const { db, clock } = deps;
  const client = deps.clients[account.platform];
  if (!client) throw new PlatformError('invalid_request', `this server has no ${account.platform} client configured`);
  const sealed = await loadSealedToken(db.kysely, account.id);
  if (!sealed) throw new PlatformError('needs_reconnect', 'the account has no stored credential; connect it again');
  const credential = { secret: deps.sealer.open(sealed.tokenSealed, sealed.connectionId) };

  const described = await client.describeAccount(credential, { externalId: account.external_id, accessVia: account.access_via });
  if (described.currency !== account.currency) {
    throw new PlatformError(
      'invalid_request',
      `the account's currency changed from ${account.currency} to ${described.currency}; nothing was synced: disconnect it and connect it again`,
    );
  }
  if (described.name !== account.name || described.timeZone !== account.time_zone || described.accessVia !== account.access_via) {
    await updateDescription(db.kysely, account.id, {
      name: shownName(described.name) || account.name,
      timeZone: described.timeZone,
      accessVia: described.accessVia,
    });
  }
  const zone = described.timeZone;
  const platformAccount: PlatformAdAccount = { ...described, externalId: account.external_id };
  const mapper = new UtcDayMapper(zone);

  const localToday = localDate(startedAt, zone);
  const lookback = SPEND_LOOKBACK_DAYS[account.platform];
  const since =
    account.complete_through === null ? addDays(localToday, -SPEND_BACKFILL_DAYS) : addDays(account.complete_through, -lookback);
  // UTC days from the one the window's first local hour falls on (the day before `since` east of
  // UTC, so a restatement of that local day's first hours is read too) to the last UTC day an hour
  // of local today can fall on.
  const firstUtcDay = mapper.utcDay(since, 0);
  const lastUtcDay = maxDate(startedAt.toISOString().slice(0, 10), localToday);
  let completeThrough = account.complete_through;
  for (let a = firstUtcDay; a <= lastUtcDay; a = addDays(a, CHUNK_DAYS)) {
    const b = minDate(addDays(a, CHUNK_DAYS - 1), lastUtcDay);
    // Every hour of UTC days [a, b] lies in account-local days [a − 1, b + 1]; none after local today exists yet.
    const range = { since: addDays(a, -1), until: minDate(addDays(b, 1), localToday) };
    const rows = await readChunk(
      deps,
      client,
      credential,
      platformAccount,
      range,
      { since: a, until: b },
      mapper,
      account.id,
      owner,
      signal,
    );
    signal?.throwIfAborted();
    const leaseUntil = new Date(clock.now().getTime() + deps.leaseMs);
    // A local day is stored whole once every UTC day its hours touch is in a committed chunk: up
    // to b − 1 (whatever the zone's offset), and never local today.
    const through = minDate(addDays(b, -1), addDays(localToday, -1));
    await db.kysely.transaction().execute(async (trx) => {
      // Locks the account row: a claimant that lost its lease (a stalled instance) writes nothing.
      if (!(await holdLease(trx, account.id, owner, leaseUntil))) throw new LeaseLost();
      await replacePlatformRows(trx, account.hub_id, account.id, { since: a, until: b }, rows);
      await deriveSpend(trx, account.id, { since: a, until: b });
      if (through >= since) await advanceCompleteThrough(trx, account.id, through);
    });
    if (through >= since && (completeThrough === null || through > completeThrough)) completeThrough = through;
  }
  return completeThrough;
}

/**
 * One chunk from the platform, summed per (UTC day, campaign, ad set) over UTC days `keep`. A
 * short throttle is waited out (lease extended) and the chunk read again from its start; a long one,
 * or too many, ends the run as rescheduled.
 */
async function readChunk(
  deps: EngineDeps,
  client: AdPlatformClient,
  credential: PlatformCredential,
  account: PlatformAdAccount,
  range: { since: string; until: string },
  keep: { since: string; until: string },
  mapper: UtcDayMapper,
  accountId: string,
  owner: string,
  signal?: AbortSignal,
): Promise<UtcDayRow[]> {
  for (let waits = 0; ; waits++) {
    try {
      const sums = new Map<string, UtcDayRow>();
      let last: UtcDayRow | undefined;
      let checkedDate = '';
      let heldAt = deps.clock.now().getTime();
      for await (const batch of client.readSpend(credential, account, range, signal)) {
        // Stopping: whatever the client does with the signal, the chunk in flight is dropped here.
        signal?.throwIfAborted();
        // A long read (a report run polled for minutes, then many pages) keeps its claim alive, so no
        // other instance takes the account over mid-read; a lease already lost ends the read here.
        const now = deps.clock.now().getTime();
        if (now - heldAt > deps.leaseMs / 3) {
          if (!(await holdLease(deps.db.kysely, accountId, owner, new Date(now + deps.leaseMs)))) throw new LeaseLost();
          heldAt = now;
        }
        for (const row of batch) {
          checkRow(row, checkedDate);
          checkedDate = row.date;
          const day = mapper.utcDay(row.date, row.hour);
          if (day < keep.since || day > keep.until) continue;
          // Rows come grouped by day and ad set: most add to the group of the row before them.
          let sum =
            last !== undefined && last.date === day && last.adSetId === row.adSetId && last.campaignId === row.campaignId
              ? last
              : undefined;
          if (sum === undefined) {
            const key = `${day}\0${row.campaignId}\0${row.adSetId}`;
            sum = sums.get(key);
            if (sum === undefined) {
              sum = {
                date: day,
                campaignId: row.campaignId,
                campaignName: row.campaignName,
                adSetId: row.adSetId,
                adSetName: row.adSetName,
                spendMicros: 0n,
                spendCents: 0n,
              };
              sums.set(key, sum);
            }
            last = sum;
          }
          sum.spendMicros += row.spendMicros;
          // The latest names win: a campaign renamed mid-day shows its new name.
          sum.campaignName = row.campaignName;
          sum.adSetName = row.adSetName;
        }
      }
      const rows = [...sums.values()];
      for (const r of rows) {
        r.spendCents = microsToCents(r.spendMicros);
        r.campaignName = shownName(r.campaignName);
        r.adSetName = shownName(r.adSetName);
      }
      return rows;
    } catch (error) {
      if (!(error instanceof PlatformThrottled) || error.retryAfterMs > SPEND_THROTTLE_WAIT_MAX_MS || waits >= MAX_THROTTLE_WAITS)
        throw error;
      if (!(await holdLease(deps.db.kysely, accountId, owner, new Date(deps.clock.now().getTime() + deps.leaseMs + error.retryAfterMs))))
        throw new LeaseLost();
      deps.log?.info({ adAccountId: accountId, waitMs: error.retryAfterMs }, 'ad platform throttled the sync; waiting');
      await (deps.sleep ?? sleepFor)(error.retryAfterMs, signal);
    }
  }
}
