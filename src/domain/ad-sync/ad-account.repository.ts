// The sync engine's SQL: connections, the account rows (which are also the sync jobs, claimed with
// FOR UPDATE SKIP LOCKED under a lease), the platform rows per UTC day, and attribution, which
// derives a synced account's `spend` rows from its platform rows. Figures are written as diffs
// (upsert where different, delete what is gone), so a re-run that reads the same answer writes
// nothing and the report version stays where it was.
import { sql, type Kysely } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { AdPlatform, Database, PlatformFailureKind } from '../../db/schema.ts';
import { SPEND_STALE_AFTER_MS } from '../../policy.ts';

type Q = Kysely<Database>;

export interface AccountRow {
  id: string;
  hub_id: string;
  platform: AdPlatform;
  name: string;
  sync_state: 'idle' | 'syncing' | 'failed';
  last_synced_at: Date | null;
  connection_id: string | null;
  connection_kind: 'oauth' | 'system_user' | 'api_key' | null;
  external_id: string;
  currency: string;
  time_zone: string;
  /** How the credential reaches the account (Google Ads: a manager's customer id), or null: directly. */
  access_via: string | null;
  default_workspace_id: string | null;
  complete_through: string | null;
  next_sync_at: Date | null;
  lease_until: Date | null;
  lease_owner: string | null;
  sync_requested_at: Date | null;
  last_attempt_at: Date | null;
  failure_kind: PlatformFailureKind | null;
  failure_message: string | null;
  failure_code: string | null;
  failing_since: Date | null;
  failure_count: number;
  throttled_until: Date | null;
  disconnected_at: Date | null;
  token_expires_at: Date | null;
}

const ACCOUNT_COLUMNS = sql`a.id, a.hub_id, a.platform, a.name, a.sync_state, a.last_synced_at, a.connection_id, c.kind AS connection_kind,
  a.external_id, a.currency, a.time_zone, a.access_via, a.default_workspace_id, a.complete_through, a.next_sync_at, a.lease_until, a.lease_owner,
  a.sync_requested_at, a.last_attempt_at, a.failure_kind, a.failure_message, a.failure_code, a.failing_since, a.failure_count,
  a.throttled_until, a.disconnected_at, c.token_expires_at`;

/** The hub's connected (and disconnected) ad accounts, by name; imported accounts are not listed. */
export async function listAccountRows(db: Db, hubId: string): Promise<AccountRow[]> {
  const result = await sql<AccountRow>`
    SELECT ${ACCOUNT_COLUMNS} FROM ad_accounts a LEFT JOIN ad_connections c ON c.id = a.connection_id
     WHERE a.hub_id = ${hubId} AND a.external_id IS NOT NULL
     ORDER BY a.name, a.id`.execute(db.kysely);
  return result.rows;
}

export async function findAccountRow(q: Q, hubId: string | null, accountId: string): Promise<AccountRow | undefined> {
  const result = await sql<AccountRow>`
    SELECT ${ACCOUNT_COLUMNS} FROM ad_accounts a LEFT JOIN ad_connections c ON c.id = a.connection_id
     WHERE a.id = ${accountId} AND a.external_id IS NOT NULL ${hubId === null ? sql`` : sql`AND a.hub_id = ${hubId}`}`.execute(q);
  return result.rows[0];
}

export async function findHub(db: Db, hubId: string): Promise<{ reporting_currency: string } | undefined> {
  return db.kysely.selectFrom('hubs').select('reporting_currency').where('id', '=', hubId).executeTakeFirst();
}

/**
 * Sets the hub's reporting currency unless a connected account reports in another one; returns
 * those accounts' external ids when refused (checked and written in one transaction, the hub row locked).
 */
export async function updateReportingCurrency(
  db: Db,
  hubId: string,
  currency: string,
): Promise<{ updated: boolean; conflicting: string[] }> {
  return db.kysely.transaction().execute(async (trx) => {
    const hubRow = await sql<{ id: string }>`SELECT id FROM hubs WHERE id = ${hubId} FOR UPDATE`.execute(trx);
    if (hubRow.rows.length === 0) return { updated: false, conflicting: [] };
    const others = await sql<{ external_id: string }>`
      SELECT external_id FROM ad_accounts WHERE hub_id = ${hubId} AND connection_id IS NOT NULL AND currency <> ${currency} ORDER BY external_id`.execute(
      trx,
    );
    if (others.rows.length > 0) return { updated: false, conflicting: others.rows.map((r) => r.external_id) };
    await sql`UPDATE hubs SET reporting_currency = ${currency} WHERE id = ${hubId} AND reporting_currency <> ${currency}`.execute(trx);
    return { updated: true, conflicting: [] };
  });
}

export async function workspaceExists(q: Q, hubId: string, workspaceId: string): Promise<boolean> {
  return (
    (await q.selectFrom('workspaces').select('id').where('hub_id', '=', hubId).where('id', '=', workspaceId).executeTakeFirst()) !==
    undefined
  );
}

export interface NewConnection {
  id: string;
  hubId: string;
  platform: AdPlatform;
  kind: 'oauth' | 'system_user' | 'api_key';
  label: string;
  tokenSealed: Buffer;
  tokenExpiresAt: Date | null;
  now: Date;
}

export interface ConnectedAccount {
  id: string;
  externalId: string;
  name: string;
  currency: string;
  timeZone: string;
  accessVia: string | null;
}

/**
 * A connection and its accounts, in one transaction. An account connected before (even
 * disconnected since) keeps its row, its platform rows and its figures, and moves to the new
 * connection; a connection left with no account is deleted with its token. Each account is due at once.
 */
export async function insertConnection(db: Db, connection: NewConnection, accounts: ConnectedAccount[]): Promise<string[]> {
  return db.kysely.transaction().execute(async (trx) => {
    await trx
      .insertInto('ad_connections')
      .values({
        id: connection.id,
        hub_id: connection.hubId,
        platform: connection.platform,
        kind: connection.kind,
        label: connection.label,
        token_sealed: connection.tokenSealed,
        token_expires_at: connection.tokenExpiresAt,
        created_at: connection.now,
      })
      .execute();
    const ids: string[] = [];
    for (const a of accounts) {
      const row = await sql<{ id: string }>`
        INSERT INTO ad_accounts AS t (id, hub_id, platform, name, connection_id, external_id, currency, time_zone, access_via, next_sync_at, created_at)
        VALUES (${a.id}, ${connection.hubId}, ${connection.platform}, ${a.name}, ${connection.id}, ${a.externalId}, ${a.currency}, ${a.timeZone}, ${a.accessVia}, ${connection.now}, ${connection.now})
        ON CONFLICT (hub_id, platform, external_id) WHERE external_id IS NOT NULL DO UPDATE
           SET connection_id = EXCLUDED.connection_id, name = EXCLUDED.name, currency = EXCLUDED.currency, time_zone = EXCLUDED.time_zone,
               access_via = EXCLUDED.access_via,
               next_sync_at = EXCLUDED.next_sync_at, disconnected_at = NULL, sync_state = 'idle', failure_kind = NULL, failure_message = NULL,
               failure_code = NULL, failing_since = NULL, failure_count = 0, throttled_until = NULL,
               -- A run still reading with the old token loses its lease: it can write nothing, nor end over this state.
               lease_owner = NULL, lease_until = NULL
        RETURNING id`.execute(trx);
      ids.push(row.rows[0]!.id);
    }
    await deleteUnusedConnections(trx, connection.hubId);
    return ids;
  });
}

async function deleteUnusedConnections(q: Q, hubId: string): Promise<void> {
  await sql`DELETE FROM ad_connections c WHERE c.hub_id = ${hubId}
             AND NOT EXISTS (SELECT 1 FROM ad_accounts a WHERE a.connection_id = c.id)`.execute(q);
}

/** Asks for a sync of one account or all connected accounts of the hub; false when none matched. */
export async function markSyncRequested(db: Db, hubId: string, accountId: string | undefined, now: Date): Promise<number> {
  const result = await sql`
    UPDATE ad_accounts SET sync_requested_at = coalesce(sync_requested_at, ${now})
     WHERE hub_id = ${hubId} AND connection_id IS NOT NULL ${accountId === undefined ? sql`` : sql`AND id = ${accountId}`}`.execute(
    db.kysely,
  );
  return Number(result.numAffectedRows ?? 0);
}

/** Stops syncing: the credential goes (with its connection when no account uses it), figures stay. */
export async function disconnect(db: Db, hubId: string, accountId: string, now: Date): Promise<boolean> {
  return db.kysely.transaction().execute(async (trx) => {
    const result = await sql`
      UPDATE ad_accounts SET connection_id = NULL, disconnected_at = ${now}, next_sync_at = NULL, sync_requested_at = NULL,
             lease_until = NULL, lease_owner = NULL, sync_state = 'idle', throttled_until = NULL
       WHERE hub_id = ${hubId} AND id = ${accountId} AND external_id IS NOT NULL AND disconnected_at IS NULL`.execute(trx);
    if (Number(result.numAffectedRows ?? 0) === 0) return false;
    await deleteUnusedConnections(trx, hubId);
    return true;
  });
}

export async function updateDefaultWorkspace(db: Db, hubId: string, accountId: string, workspaceId: string | null): Promise<boolean> {
  return db.kysely.transaction().execute(async (trx) => {
    const result = await sql`UPDATE ad_accounts SET default_workspace_id = ${workspaceId}
                              WHERE hub_id = ${hubId} AND id = ${accountId} AND external_id IS NOT NULL`.execute(trx);
    if (Number(result.numAffectedRows ?? 0) === 0) return false;
    await deriveSpend(trx, accountId, null);
    return true;
  });
}

export async function upsertMapping(
  db: Db,
  m: { hubId: string; adAccountId: string; level: 'campaign' | 'ad_set'; externalId: string; workspaceId: string; now: Date },
): Promise<void> {
  await db.kysely.transaction().execute(async (trx) => {
    await sql`
      INSERT INTO ad_attribution_mappings (hub_id, ad_account_id, level, external_id, workspace_id, created_at)
      VALUES (${m.hubId}, ${m.adAccountId}, ${m.level}, ${m.externalId}, ${m.workspaceId}, ${m.now})
      ON CONFLICT (ad_account_id, level, external_id) DO UPDATE SET workspace_id = EXCLUDED.workspace_id`.execute(trx);
    await deriveSpend(trx, m.adAccountId, null);
  });
}

// Attribution, first match wins: an explicit mapping (ad set, then campaign), a [ws:<id>] token
// naming a workspace of the hub (ad set name, then campaign name), the account's default
// workspace; otherwise unattributed, with the reason.
const TOKEN = String.raw`\[ws:([A-Za-z0-9_-]{1,64})\]`;
const ATTRIBUTED = (accountId: string | null, hubId: string | null, range: { since: string; until: string } | null) => sql`
  SELECT r.hub_id, r.ad_account_id, r.date, r.campaign_id, r.campaign_name, r.ad_set_id, r.ad_set_name, r.spend_cents,
         coalesce(ms.workspace_id, mc.workspace_id, wa.id, wc.id, a.default_workspace_id) AS workspace_id,
         CASE WHEN r.ad_set_name ~ ${TOKEN} OR r.campaign_name ~ ${TOKEN} THEN 'unknown_workspace_token' ELSE 'no_match' END AS reason
    FROM ad_spend_rows r
    JOIN ad_accounts a ON a.id = r.ad_account_id
    LEFT JOIN ad_attribution_mappings ms ON ms.ad_account_id = r.ad_account_id AND ms.level = 'ad_set' AND ms.external_id = r.ad_set_id
    LEFT JOIN ad_attribution_mappings mc ON mc.ad_account_id = r.ad_account_id AND mc.level = 'campaign' AND mc.external_id = r.campaign_id
    LEFT JOIN workspaces wa ON wa.hub_id = r.hub_id AND wa.id = substring(r.ad_set_name FROM ${TOKEN})
    LEFT JOIN workspaces wc ON wc.hub_id = r.hub_id AND wc.id = substring(r.campaign_name FROM ${TOKEN})
   WHERE ${accountId === null ? sql`true` : sql`r.ad_account_id = ${accountId}`}
     AND ${hubId === null ? sql`true` : sql`r.hub_id = ${hubId}`}
     AND ${range === null ? sql`true` : sql`r.date BETWEEN ${range.since}::date AND ${range.until}::date`}`;

/**
 * Derives the account's `spend` rows (per UTC day and workspace) from its platform rows over the
 * range (null: every day), writing only the differences: the report version and the running
 * totals move only for what changed.
 */
export async function deriveSpend(q: Q, accountId: string, range: { since: string; until: string } | null): Promise<void> {
  const inRange = range === null ? sql`true` : sql`s.date BETWEEN ${range.since}::date AND ${range.until}::date`;
  await sql`
    WITH target AS (
      SELECT hub_id, ad_account_id, date, workspace_id, sum(spend_cents)::bigint AS cents
        FROM (${ATTRIBUTED(accountId, null, range)}) x
       GROUP BY hub_id, ad_account_id, date, workspace_id
      HAVING sum(spend_cents) > 0
    ), removed AS (
      DELETE FROM spend s
       WHERE s.ad_account_id = ${accountId} AND ${inRange}
         AND NOT EXISTS (SELECT 1 FROM target t WHERE t.date = s.date AND t.workspace_id IS NOT DISTINCT FROM s.workspace_id)
    )
    INSERT INTO spend AS s (hub_id, ad_account_id, workspace_id, date, spend_cents)
    SELECT hub_id, ad_account_id, workspace_id, date, cents FROM target
    ON CONFLICT (ad_account_id, date, (coalesce(workspace_id, ''))) DO UPDATE SET spend_cents = EXCLUDED.spend_cents
     WHERE s.spend_cents <> EXCLUDED.spend_cents`.execute(q);
}

export interface UtcDayRow {
  date: string;
  campaignId: string;
  campaignName: string;
  adSetId: string;
  adSetName: string;
  spendMicros: bigint;
  spendCents: bigint;
}

/** Replaces the account's platform rows of UTC days [since, until] with `rows`, as a diff. */
export async function replacePlatformRows(
  q: Q,
  hubId: string,
  accountId: string,
  range: { since: string; until: string },
  rows: UtcDayRow[],
): Promise<void> {
  const col = <T>(f: (r: UtcDayRow) => T) => rows.map(f);
  await sql`
    WITH incoming AS MATERIALIZED (
      SELECT date, campaign_id COLLATE "C" AS campaign_id, campaign_name, ad_set_id COLLATE "C" AS ad_set_id, ad_set_name, spend_micros, spend_cents
        FROM unnest(${col((r) => r.date)}::date[], ${col((r) => r.campaignId)}::text[], ${col((r) => r.campaignName)}::text[],
                    ${col((r) => r.adSetId)}::text[], ${col((r) => r.adSetName)}::text[],
                    ${col((r) => r.spendMicros.toString())}::bigint[], ${col((r) => r.spendCents.toString())}::bigint[])
          AS i(date, campaign_id, campaign_name, ad_set_id, ad_set_name, spend_micros, spend_cents)
    ), removed AS (
      -- NOT IN over the incoming keys: one hashed lookup per stored row (an anti-join on the
      -- unnest was planned as a nested loop, quadratic in the chunk's rows).
      DELETE FROM ad_spend_rows r
       WHERE r.ad_account_id = ${accountId} AND r.date BETWEEN ${range.since}::date AND ${range.until}::date
         AND (r.date, r.campaign_id, r.ad_set_id) NOT IN (SELECT date, campaign_id, ad_set_id FROM incoming)
    )
    INSERT INTO ad_spend_rows AS t (hub_id, ad_account_id, date, campaign_id, campaign_name, ad_set_id, ad_set_name, spend_micros, spend_cents)
    SELECT ${hubId}, ${accountId}, date, campaign_id, campaign_name, ad_set_id, ad_set_name, spend_micros, spend_cents FROM incoming
    ON CONFLICT (ad_account_id, date, campaign_id, ad_set_id) DO UPDATE
       SET campaign_name = EXCLUDED.campaign_name, ad_set_name = EXCLUDED.ad_set_name, spend_micros = EXCLUDED.spend_micros, spend_cents = EXCLUDED.spend_cents
     WHERE (t.campaign_name, t.ad_set_name, t.spend_micros, t.spend_cents) IS DISTINCT FROM
           (EXCLUDED.campaign_name, EXCLUDED.ad_set_name, EXCLUDED.spend_micros, EXCLUDED.spend_cents)`.execute(q);
}

export interface UnattributedRow {
  ad_account_id: string;
  account_name: string;
  campaign_id: string;
  campaign_name: string;
  ad_set_id: string;
  ad_set_name: string;
  spend_cents: string;
  reason: 'no_match' | 'unknown_workspace_token';
}

/** Spend that matched no workspace, per account, campaign and ad set, largest first. */
export async function unattributed(db: Db, hubId: string, range: { since: string; until: string } | null): Promise<UnattributedRow[]> {
  const result = await sql<UnattributedRow>`
    SELECT x.ad_account_id, a.name AS account_name, x.campaign_id, max(x.campaign_name) AS campaign_name, x.ad_set_id,
           max(x.ad_set_name) AS ad_set_name, sum(x.spend_cents)::bigint AS spend_cents, max(x.reason) AS reason
      FROM (${ATTRIBUTED(null, hubId, range)}) x JOIN ad_accounts a ON a.id = x.ad_account_id
     WHERE x.workspace_id IS NULL
     GROUP BY x.ad_account_id, a.name, x.campaign_id, x.ad_set_id
    HAVING sum(x.spend_cents) > 0
     ORDER BY sum(x.spend_cents) DESC, x.ad_account_id, x.campaign_id, x.ad_set_id
     LIMIT 1000`.execute(db.kysely);
  return result.rows;
}

// The loop's claims.

/**
 * Up to `limit` accounts due (their time came, a sync was asked for, or a dead instance's run
 * awaits takeover) and not leased, now leased to `owner` and shown syncing. Requested syncs
 * first, then the longest overdue.
 */
export async function claimDue(db: Db, owner: string, now: Date, leaseUntil: Date, limit: number, accountId?: string): Promise<string[]> {
  const result = await sql<{ id: string }>`
    UPDATE ad_accounts SET lease_owner = ${owner}, lease_until = ${leaseUntil}, sync_state = 'syncing', last_attempt_at = ${now}, sync_requested_at = NULL
     WHERE id IN (SELECT id FROM ad_accounts
                   WHERE connection_id IS NOT NULL AND (lease_until IS NULL OR lease_until <= ${now})
                     AND ${
                       accountId === undefined
                         ? // Syncing with no live lease: a run whose instance died, taken over at once.
                           sql`(sync_requested_at IS NOT NULL OR sync_state = 'syncing'
                              OR (next_sync_at <= ${now} AND (throttled_until IS NULL OR throttled_until <= ${now})))`
                         : sql`id = ${accountId}`
                     }
                   ORDER BY sync_requested_at NULLS LAST, next_sync_at
                   LIMIT ${limit} FOR UPDATE SKIP LOCKED)
    RETURNING id`.execute(db.kysely);
  return result.rows.map((r) => r.id);
}

export async function loadSealedToken(q: Q, accountId: string): Promise<{ connectionId: string; tokenSealed: Buffer } | undefined> {
  const row = await q
    .selectFrom('ad_accounts as a')
    .innerJoin('ad_connections as c', 'c.id', 'a.connection_id')
    .select(['c.id', 'c.token_sealed'])
    .where('a.id', '=', accountId)
    .executeTakeFirst();
  return row && { connectionId: row.id, tokenSealed: row.token_sealed };
}

/** Locks the account row if `owner` still holds its lease, extending it; false when the lease was lost. */
export async function holdLease(q: Q, accountId: string, owner: string, leaseUntil: Date): Promise<boolean> {
  const result = await sql`UPDATE ad_accounts SET lease_until = ${leaseUntil}
                            WHERE id = ${accountId} AND lease_owner = ${owner} AND connection_id IS NOT NULL`.execute(q);
  return Number(result.numAffectedRows ?? 0) === 1;
}

export async function advanceCompleteThrough(q: Q, accountId: string, day: string): Promise<void> {
  await sql`UPDATE ad_accounts SET complete_through = greatest(complete_through, ${day}::date) WHERE id = ${accountId}`.execute(q);
}

export async function updateDescription(
  q: Q,
  accountId: string,
  d: { name: string; timeZone: string; accessVia: string | null },
): Promise<void> {
  await sql`UPDATE ad_accounts SET name = ${d.name}, time_zone = ${d.timeZone}, access_via = ${d.accessVia}
             WHERE id = ${accountId} AND (name, time_zone, access_via) IS DISTINCT FROM (${d.name}, ${d.timeZone}, ${d.accessVia})`.execute(
    q,
  );
}

export type RunEnd =
  | { kind: 'done'; syncedAt: Date; nextSyncAt: Date }
  | { kind: 'throttled'; until: Date }
  | { kind: 'released'; now: Date }
  | {
      kind: 'failed';
      failure: { kind: PlatformFailureKind; message: string; code: string | null };
      state: 'idle' | 'failed';
      nextSyncAt: Date | null;
      now: Date;
    };

/** Ends a run this owner leased: records its outcome and frees the lease (nothing when the lease was lost). */
export async function endRun(db: Db, accountId: string, owner: string, end: RunEnd): Promise<void> {
  const set =
    end.kind === 'done'
      ? sql`sync_state = 'idle', last_synced_at = ${end.syncedAt}, next_sync_at = ${end.nextSyncAt}, failure_kind = NULL, failure_message = NULL,
          failure_code = NULL, failing_since = NULL, failure_count = 0, throttled_until = NULL`
      : end.kind === 'throttled'
        ? sql`sync_state = 'idle', throttled_until = ${end.until}, next_sync_at = ${end.until}`
        : end.kind === 'released'
          ? // The state the claim replaced (failed: a permanent kind, or a transient one past the stale
            // threshold), and due at once, so a requested sync that a stop interrupted is not lost.
            sql`sync_state = CASE WHEN failure_kind IN ('needs_reconnect', 'missing_permission', 'invalid_request')
                                  OR failing_since < ${new Date(end.now.getTime() - SPEND_STALE_AFTER_MS)} THEN 'failed' ELSE 'idle' END,
              next_sync_at = least(next_sync_at, ${end.now})`
          : sql`sync_state = ${end.state}, failure_kind = ${end.failure.kind}, failure_message = ${end.failure.message}, failure_code = ${end.failure.code},
            failing_since = coalesce(failing_since, ${end.now}), failure_count = failure_count + 1, next_sync_at = ${end.nextSyncAt}`;
  await sql`UPDATE ad_accounts SET ${set}, lease_until = NULL, lease_owner = NULL
             WHERE id = ${accountId} AND lease_owner = ${owner}`.execute(db.kysely);
}

export interface SyncBacklogRow {
  platform: string;
  /** Connected accounts. */
  accounts: number;
  /** Due (their time came or a sync was asked for), not throttled and not being synced. */
  due: number;
  /** Seconds since the longest-waiting due account fell due (0: none waits). */
  lag_seconds: number;
  /** Accounts whose last sync failed. */
  failing: number;
  /** Days between today (UTC) and the oldest account's last complete day; null: none has one yet. */
  complete_through_age_days: number | null;
}

/** The spend sync's backlog per platform, for /metrics: one pass over the connected accounts. */
export async function syncBacklog(db: Db, now: Date): Promise<SyncBacklogRow[]> {
  const due = sql`(lease_until IS NULL OR lease_until <= ${now})
                  AND (sync_requested_at IS NOT NULL OR (next_sync_at <= ${now} AND (throttled_until IS NULL OR throttled_until <= ${now})))`;
  const result = await sql<SyncBacklogRow>`
    SELECT platform, count(*)::int AS accounts,
           count(*) FILTER (WHERE ${due})::int AS due,
           coalesce(extract(epoch FROM ${now}::timestamptz - min(least(next_sync_at, sync_requested_at)) FILTER (WHERE ${due})), 0)::float8 AS lag_seconds,
           count(*) FILTER (WHERE failure_kind IS NOT NULL)::int AS failing,
           ((${now}::timestamptz AT TIME ZONE 'UTC')::date - min(complete_through))::int AS complete_through_age_days
      FROM ad_accounts
     WHERE connection_id IS NOT NULL
     GROUP BY platform`.execute(db.kysely);
  return result.rows;
}
