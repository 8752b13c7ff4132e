// Lines whose natural key is already stored: unchanged when they would write exactly the stored
// row (then nothing is written), refused otherwise, naming the fields that differ.

import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { postRowsOf, ROWS } from './import.repository.ts';
import { ID_KINDS, type ImportIssue, type ImportRecord, type Kind, type RecordOf } from './records.ts';

type Trx = Kysely<Database>;
type Row = Record<string, unknown>;

/** A line whose natural key (id; hub and key; email) is stored. */
export type ExistingRecord = RecordOf<Kind | 'workspaceField'>;

export interface ExistingCheck {
  issues: ImportIssue[];
  /** The lines that would write exactly what is stored: not written. */
  unchanged: Set<ImportRecord>;
}

/** Each id'd type's table and its tenant column: a stored row of another tenant is only said to exist. */
const TABLES = {
  account: { table: 'accounts', tenant: undefined },
  hub: { table: 'hubs', tenant: 'account_id' },
  workspace: { table: 'workspaces', tenant: 'hub_id' },
  playbook: { table: 'playbooks', tenant: 'hub_id' },
  optIn: { table: 'opt_ins', tenant: 'hub_id' },
  adAccount: { table: 'ad_accounts', tenant: 'hub_id' },
  channel: { table: 'social_channels', tenant: 'hub_id' },
  media: { table: 'media_assets', tenant: 'hub_id' },
  post: { table: 'posts', tenant: 'hub_id' },
} as const satisfies Record<Exclude<Kind, 'user'>, { table: keyof Database; tenant: string | undefined }>;
type TableKind = keyof typeof TABLES;

/** A line's field for a column, where the two names differ by more than case. */
const FIELD_OF_COLUMN: Record<string, string> = { is_staff: 'staff', kind: 'contentType', storage_key: 'file', password_hash: 'password' };
const fieldOf = (column: string) => FIELD_OF_COLUMN[column] ?? column.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** JSON with object keys sorted, so that jsonb's key order does not count as a difference. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Row)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * Whether the value a line would write differs from the stored one. A line writes timestamps as
 * ISO text, json as text, bigints as numbers; the stored row reads back as Date, parsed json,
 * bigint text. Absent (undefined) means the database default: not compared.
 */
export function differs(written: unknown, stored: unknown): boolean {
  if (written === undefined) return false;
  if (written === null || stored === null || stored === undefined) return written !== stored && !(written === null && stored === undefined);
  if (stored instanceof Date) return Date.parse(String(written)) !== stored.getTime();
  if (Buffer.isBuffer(stored)) return !Buffer.isBuffer(written) || !written.equals(stored);
  if (typeof stored === 'object') {
    try {
      return canonical(typeof written === 'string' ? JSON.parse(written) : written) !== canonical(stored);
    } catch {
      return true;
    }
  }
  return String(written) !== String(stored);
}

/** The fields of the line whose column values differ from the stored row's. */
function differingFields(written: Row, stored: Row, fieldNames: (column: string) => string = fieldOf): string[] {
  return [
    ...new Set(
      Object.keys(written)
        .filter((c) => differs(written[c], stored[c]))
        .map(fieldNames),
    ),
  ];
}

const any = (values: Iterable<string>) => sql<string>`ANY(${[...values]}::text[])`;

function byKey<T>(rows: T[], key: (row: T) => string): Map<string, T> {
  return new Map(rows.map((row) => [key(row), row]));
}

function groupBy<T>(rows: T[], key: (row: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const k = key(row);
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k)!.push(row);
  }
  return groups;
}

const differently = (fields: string[]) => `with a different ${fields.join(', ')}`;

/** A post line's row as compared: its updatedAt is hubops's (any edit or publish moves it), not the line's. */
function postRowOf(record: RecordOf<'post'>): Row {
  const { updated_at: _updatedAt, ...post } = postRowsOf(record).post as Row;
  return post;
}

/** The fields in which a post's delivery and media rows differ from the stored ones. */
function postChildDifferences(record: RecordOf<'post'>, deliveries: Row[], media: Row[]): string[] {
  const rows = postRowsOf(record);
  const fields: string[] = [];
  const deliveryField = (column: string) =>
    ({
      channel_id: 'channelIds',
      position: 'channelIds',
      external_id: 'externalIds',
      error: 'error',
      status: 'status',
      delivered_at: record.status === 'failed' ? 'scheduledAt' : 'publishedAt',
    })[column] ?? fieldOf(column);
  if (deliveries.length !== rows.deliveries.length) fields.push('channelIds');
  else
    rows.deliveries.forEach((d, i) => {
      fields.push(...differingFields(d, deliveries[i]!, deliveryField));
    });
  if (media.length !== rows.media.length) fields.push('mediaIds');
  else
    rows.media.forEach((m, i) => {
      fields.push(...differingFields(m, media[i]!, () => 'mediaIds'));
    });
  return fields;
}

/** Lines with an id that is stored: one SELECT per type (two more for posts' deliveries and media). */
async function checkById(trx: Trx, records: ExistingRecord[], result: ExistingCheck): Promise<void> {
  const kinds = Object.keys(TABLES) as TableKind[];
  await Promise.all(
    kinds.map(async (kind) => {
      const lines = records.filter((r): r is RecordOf<TableKind> => r.type === kind);
      if (lines.length === 0) return;
      const ids = new Set(lines.map((r) => r.id));
      const { table, tenant } = TABLES[kind];
      const [stored, deliveries, media] = await Promise.all([
        trx.selectFrom(table).selectAll().where('id', '=', any(ids)).forShare().execute() as Promise<Row[]>,
        kind === 'post'
          ? trx.selectFrom('post_deliveries').selectAll().where('post_id', '=', any(ids)).orderBy('post_id').orderBy('position').execute()
          : [],
        kind === 'post'
          ? trx.selectFrom('post_media').selectAll().where('post_id', '=', any(ids)).orderBy('post_id').orderBy('position').execute()
          : [],
      ]);
      const storedById = byKey(stored, (row) => String(row.id));
      const deliveriesOf = groupBy(deliveries as Row[], (row) => String(row.post_id));
      const mediaOf = groupBy(media as Row[], (row) => String(row.post_id));
      for (const record of lines) {
        const row = storedById.get(record.id);
        // Gone since the reference check read it: the insert then creates it.
        if (!row) continue;
        const label = `${ID_KINDS[kind].label} ${record.id}`;
        const written: Row = record.type === 'post' ? postRowOf(record) : (ROWS[record.type] as (r: ImportRecord) => Row)(record);
        if (tenant && differs(written[tenant], row[tenant])) {
          // Another tenant's row: its existence is all a line may learn of it.
          result.issues.push({ line: record.line, field: `${record.type}.id`, message: `${label} already exists` });
          continue;
        }
        const fields = differingFields(written, row);
        if (record.type === 'post')
          fields.push(...postChildDifferences(record, deliveriesOf.get(record.id) ?? [], mediaOf.get(record.id) ?? []));
        if (fields.length === 0) result.unchanged.add(record);
        else
          result.issues.push({
            line: record.line,
            field: `${record.type}.id`,
            message: `${label} already exists ${differently([...new Set(fields)])}; change it in hubops or give a new id`,
          });
      }
    }),
  );
}

/** Workspace field lines whose (hub, key) is stored: one SELECT. */
async function checkFields(trx: Trx, records: ExistingRecord[], result: ExistingCheck): Promise<void> {
  const lines = records.filter((r): r is RecordOf<'workspaceField'> => r.type === 'workspaceField');
  if (lines.length === 0) return;
  const stored = await trx
    .selectFrom('workspace_fields')
    .selectAll()
    .where('hub_id', '=', any(new Set(lines.map((f) => f.hubId))))
    .forShare()
    .execute();
  const storedByKey = byKey(stored as Row[], (row) => `${row.hub_id}\u0000${row.key}`);
  for (const record of lines) {
    const row = storedByKey.get(`${record.hubId}\u0000${record.key}`);
    if (!row) continue;
    const fields = differingFields(ROWS.workspaceField(record), row);
    if (fields.length === 0) result.unchanged.add(record);
    else
      result.issues.push({
        line: record.line,
        field: 'workspaceField.key',
        message: `field "${record.key}" of hub ${record.hubId} already exists ${differently(fields)}; change it in hubops or give a new key`,
      });
  }
}

/**
 * User lines whose email (or given id) is stored: unchanged when the stored user has the line's
 * names and staff flag and a membership in the line's hub with its role and workspace. The
 * password is only used to create a user: never compared (an import must not become a way to
 * test a user's password, nor run scrypt per line) and never changed. Two SELECTs.
 */
async function checkUsers(trx: Trx, records: ExistingRecord[], result: ExistingCheck): Promise<void> {
  const lines = records.filter((r): r is RecordOf<'user'> => r.type === 'user');
  if (lines.length === 0) return;
  const stored = await trx
    .selectFrom('users')
    .select(['id', 'account_id', 'email', 'firstname', 'lastname', 'is_staff'])
    .where((eb) =>
      eb.or([
        eb('email', '=', any(new Set(lines.map((u) => u.email)))),
        eb('id', '=', any(new Set(lines.filter((u) => u.idGiven).map((u) => u.id)))),
      ]),
    )
    .forShare()
    .execute();
  const memberships =
    stored.length === 0
      ? []
      : await trx
          .selectFrom('memberships')
          .selectAll()
          .where('user_id', '=', any(new Set(stored.map((u) => u.id))))
          .forShare()
          .execute();
  const byEmail = byKey(stored, (u) => u.email);
  const byId = byKey(stored, (u) => u.id);
  const membershipOf = byKey(memberships, (m) => `${m.user_id}\u0000${m.hub_id}`);
  for (const record of lines) {
    const user = byEmail.get(record.email);
    const sameId = record.idGiven ? byId.get(record.id) : undefined;
    if (!user) {
      if (!sameId) continue;
      result.issues.push({
        line: record.line,
        field: 'user.id',
        message:
          sameId.account_id === record.accountId
            ? `user ${record.id} already exists with a different email; change it in hubops or give a new id`
            : `user ${record.id} already exists`,
      });
      continue;
    }
    if (user.account_id !== record.accountId) {
      result.issues.push({ line: record.line, field: 'user.email', message: `a user with email ${record.email} already exists` });
      continue;
    }
    const fields = differingFields({ firstname: record.firstname, lastname: record.lastname, is_staff: record.staff }, user);
    if (record.idGiven && record.id !== user.id) fields.unshift('id');
    const membership = membershipOf.get(`${user.id}\u0000${record.hubId}`);
    if (!membership) fields.push('hubId');
    else fields.push(...differingFields({ role: record.role, workspace_id: record.workspaceId }, membership));
    if (fields.length > 0) {
      result.issues.push({
        line: record.line,
        field: 'user.email',
        message: `a user with email ${record.email} already exists ${differently(fields)}; change it in hubops or give a new email`,
      });
    } else {
      result.unchanged.add(record);
    }
  }
}

/** Compares the lines whose natural key is stored with the stored rows: unchanged, or an issue each. */
export async function checkExisting(trx: Trx, records: ExistingRecord[]): Promise<ExistingCheck> {
  const result: ExistingCheck = { issues: [], unchanged: new Set() };
  if (records.length === 0) return result;
  await Promise.all([checkById(trx, records, result), checkFields(trx, records, result), checkUsers(trx, records, result)]);
  return result;
}
