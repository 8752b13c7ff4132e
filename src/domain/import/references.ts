// Checks each record's references, in file order, against the lines above it and the stored rows.

import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { kindOf } from '../media/media-info.ts';
import { postProblems } from '../posts/post.ts';
import type { ExistingRecord } from './existing.ts';
import { findStoredRows, type StoredRow, type StoredRows, type Wanted } from './import.repository.ts';
import type { LineReader } from './line-reader.ts';
import { ID_KINDS, isKind, unhandled, type Broken, type ImportIssue, type ImportRecord, type Kind, type RecordOf } from './records.ts';

// The rules: ids are used once in a file; an id (a field's hub and key, a user's email) that is
// stored already is collected in `existing`, to be compared with the stored row (existing.ts); a
// reference must name a row stored or defined on an earlier line; rows that must share a hub do;
// figures are given once per key. References through a line that failed are accepted and not
// checked further.

interface Known extends StoredRow {
  /** 0 for a stored row. */
  line: number;
  /** The line that defined it failed. */
  broken?: boolean;
}

/** The fields that refer to a row by id, and the kind of row each names. */
const REFERENCE_FIELDS = new Map<string, Kind>([
  ['accountId', 'account'],
  ['hubId', 'hub'],
  ['workspaceId', 'workspace'],
  ['playbookId', 'playbook'],
  ['adAccountId', 'adAccount'],
]);

/** The stored rows the items refer to, or whose ids or emails they might reuse. */
function wantedRows(items: (ImportRecord | Broken)[]): Wanted {
  const wanted: Wanted = { ids: new Map(), fieldHubs: new Set(), emails: [] };
  const want = (kind: Kind, id: unknown) => {
    if (typeof id !== 'string' || id === '') return;
    if (!wanted.ids.has(kind)) wanted.ids.set(kind, new Set());
    wanted.ids.get(kind)!.add(id);
  };
  for (const item of items) {
    if (item.type === 'broken') {
      if (item.kind) want(item.kind, item.id);
      continue;
    }
    if (isKind(item.type) && 'id' in item) want(item.type, item.id);
    for (const [field, value] of Object.entries(item)) {
      const kind = REFERENCE_FIELDS.get(field);
      if (kind) want(kind, value);
    }
    if (item.type === 'post') {
      for (const id of item.channelIds) want('channel', id);
      for (const id of item.mediaIds) want('media', id);
    }
    if (item.type === 'workspaceField' || item.type === 'workspace') wanted.fieldHubs.add(item.hubId);
    if (item.type === 'user') wanted.emails.push(item.email);
  }
  return wanted;
}

// A connected ad account's spend is derived from the platform's rows: the next sync (or a new
// mapping, even after a disconnect) would overwrite imported figures, so its lines are refused.
const syncedAccount = (id: string) =>
  `ad account ${id} is synced from its ad platform (connected in hubops), so its spend comes from the sync; an import may only write spend of ad accounts it created`;

/** Both in a known hub and not the same one. */
const crossHub = (a: Known | undefined, b: Known | undefined) => a?.hubId !== undefined && b?.hubId !== undefined && a.hubId !== b.hubId;

/** The checks of one file; records learn their hub (and a user its account) on the way. */
class ReferenceCheck {
  readonly issues: ImportIssue[] = [];
  readonly #known: Map<Kind, Map<string, Known>>;
  readonly #fieldKeys: Map<string, Map<string, Known>>;
  readonly #emailLines: Map<string, number>;
  readonly #firstDefined: Map<Kind, Map<string, number>>;
  /** The first line of each set of figures (metrics are keyed by workspace, day, platform, …). */
  readonly #figureLines = new Map<string, number>();
  /** Whether the current record has failed a check. */
  #failed = false;
  /** Records that failed a check: not compared with the stored rows. */
  readonly #failedRecords = new Set<ImportRecord>();
  /** Lines whose natural key is stored: unchanged if they match the stored row, else refused. */
  readonly #existing = new Set<ExistingRecord>();

  constructor(stored: StoredRows, firstDefined: Map<Kind, Map<string, number>>) {
    const storedRow = (row: StoredRow): Known => ({ line: 0, ...row });
    this.#known = new Map(
      (Object.keys(ID_KINDS) as Kind[]).map((kind) => [
        kind,
        new Map([...(stored.byId.get(kind) ?? [])].map(([id, row]) => [id, storedRow(row)])),
      ]),
    );
    this.#fieldKeys = new Map([...stored.fieldKeys].map(([hubId, keys]) => [hubId, new Map([...keys].map((key) => [key, { line: 0 }]))]));
    this.#emailLines = new Map([...stored.emails].map((email) => [email, 0]));
    this.#firstDefined = firstDefined;
  }

  #fail(record: ImportRecord, field: string, message: string): void {
    this.issues.push({ line: record.line, field: `${record.type}.${field}`, message });
    this.#failed = true;
    this.#failedRecords.add(record);
  }

  /** The lines to compare with the rows stored under their key, those that passed every check. */
  get existing(): ExistingRecord[] {
    return [...this.#existing].filter((record) => !this.#failedRecords.has(record));
  }

  /** The row `id` refers to; undefined when it is missing (an issue) or its line failed. */
  #ref(record: ImportRecord, field: string, kind: Kind, id: string): Known | undefined {
    const found = this.#known.get(kind)!.get(id);
    if (!found) {
      const later = this.#firstDefined.get(kind)?.get(id);
      this.#fail(
        record,
        field,
        later && later > record.line
          ? `${ID_KINDS[kind].label} ${id} is defined later, on line ${later}; a line may only refer to what comes before it`
          : `${ID_KINDS[kind].label} ${id} does not exist`,
      );
      return undefined;
    }
    return found.broken ? undefined : found;
  }

  /** The workspace of a line that belongs to one; the line takes its hub. */
  #inWorkspace(record: RecordOf<'channel' | 'media' | 'post' | 'organicMetrics' | 'paidMetrics' | 'reviewDay'>): void {
    record.hubId = this.#ref(record, 'workspaceId', 'workspace', record.workspaceId)?.hubId;
  }

  #define(record: ImportRecord & { id: string }, kind: Kind, info: StoredRow = {}): void {
    const prior = this.#known.get(kind)!.get(record.id);
    if (prior?.line === 0) {
      // Stored: compared with the stored row once every line is checked. A later line with the id is a duplicate.
      this.#existing.add(record as ExistingRecord);
      prior.line = record.line;
      return;
    }
    if (prior) {
      this.#fail(record, 'id', `${ID_KINDS[kind].label} id ${record.id} is already used on line ${prior.line}`);
      return;
    }
    this.#known.get(kind)!.set(record.id, { line: record.line, broken: this.#failed, ...info });
  }

  /** Figures are given once per key; `already` says where they were. */
  #figuresOnce(record: ImportRecord, field: string, key: unknown[], already: (line: number) => string): void {
    const text = key.join('\u0000');
    const prior = this.#figureLines.get(text);
    if (prior !== undefined) this.#fail(record, field, already(prior));
    else this.#figureLines.set(text, record.line);
  }

  #fieldKeysOf(hubId: string): Map<string, Known> {
    if (!this.#fieldKeys.has(hubId)) this.#fieldKeys.set(hubId, new Map());
    return this.#fieldKeys.get(hubId)!;
  }

  check(item: ImportRecord | Broken): void {
    this.#failed = false;
    switch (item.type) {
      case 'broken':
        if (item.kind && item.id && !this.#known.get(item.kind)!.has(item.id))
          this.#known.get(item.kind)!.set(item.id, { line: item.line, broken: true });
        if (item.hubId && item.key) this.#fieldKeysOf(item.hubId).set(item.key, { line: item.line, broken: true });
        break;
      case 'account':
        this.#define(item, 'account');
        break;
      case 'hub':
        this.#ref(item, 'accountId', 'account', item.accountId);
        this.#define(item, 'hub', { accountId: item.accountId });
        break;
      case 'workspaceField': {
        this.#ref(item, 'hubId', 'hub', item.hubId);
        const keys = this.#fieldKeysOf(item.hubId);
        const prior = keys.get(item.key);
        if (prior?.line === 0) {
          this.#existing.add(item);
          prior.line = item.line;
        } else if (prior) {
          this.#fail(item, 'key', `field "${item.key}" of hub ${item.hubId} is already defined on line ${prior.line}`);
        } else {
          keys.set(item.key, { line: item.line });
        }
        break;
      }
      case 'workspace':
        if (this.#ref(item, 'hubId', 'hub', item.hubId)) {
          const keys = this.#fieldKeys.get(item.hubId);
          for (const key of Object.keys(item.fields)) {
            if (!keys?.has(key))
              this.#fail(
                item,
                `fields.${key}`,
                `hub ${item.hubId} has no field "${key}"; define it with a workspaceField line before this one`,
              );
          }
        }
        this.#define(item, 'workspace', { hubId: item.hubId });
        break;
      case 'playbook':
        this.#ref(item, 'hubId', 'hub', item.hubId);
        this.#define(item, item.type, { hubId: item.hubId });
        break;
      case 'adAccount':
        this.#ref(item, 'hubId', 'hub', item.hubId);
        if (this.#known.get('adAccount')!.get(item.id)?.synced) this.#fail(item, 'id', syncedAccount(item.id));
        this.#define(item, item.type, { hubId: item.hubId });
        break;
      case 'optIn': {
        const playbook = this.#ref(item, 'playbookId', 'playbook', item.playbookId);
        const workspace = this.#ref(item, 'workspaceId', 'workspace', item.workspaceId);
        if (crossHub(playbook, workspace)) {
          this.#fail(
            item,
            'workspaceId',
            `workspace ${item.workspaceId} is in hub ${workspace!.hubId}, but playbook ${item.playbookId} is in hub ${playbook!.hubId}`,
          );
        }
        item.hubId = playbook?.hubId;
        this.#define(item, 'optIn');
        break;
      }
      case 'spend': {
        const account = this.#ref(item, 'adAccountId', 'adAccount', item.adAccountId);
        if (account?.synced) this.#fail(item, 'adAccountId', syncedAccount(item.adAccountId));
        const workspace = item.workspaceId === null ? undefined : this.#ref(item, 'workspaceId', 'workspace', item.workspaceId);
        if (crossHub(account, workspace)) {
          this.#fail(
            item,
            'workspaceId',
            `workspace ${item.workspaceId} is in hub ${workspace!.hubId}, but ad account ${item.adAccountId} is in hub ${account!.hubId}`,
          );
        }
        item.hubId = account?.hubId;
        break;
      }
      case 'user':
        this.#checkUser(item);
        break;
      case 'channel':
        this.#inWorkspace(item);
        this.#define(item, 'channel', {
          hubId: item.hubId,
          workspaceId: item.workspaceId,
          platform: item.platform,
          connected: item.connected,
        });
        break;
      case 'media':
        this.#inWorkspace(item);
        this.#define(item, 'media', {
          hubId: item.hubId,
          workspaceId: item.workspaceId,
          mediaKind: kindOf(item.contentType),
          contentType: item.contentType,
        });
        break;
      case 'post':
        this.#inWorkspace(item);
        this.#checkPost(item);
        this.#define(item, 'post');
        break;
      case 'organicMetrics':
      case 'paidMetrics':
      case 'reviewDay': {
        this.#inWorkspace(item);
        const key = [
          item.type,
          item.workspaceId,
          item.date,
          'platform' in item ? item.platform : '',
          'campaignId' in item ? item.campaignId : '',
        ];
        this.#figuresOnce(item, 'date', key, (prior) => `the same figures are already given on line ${prior}`);
        break;
      }
      case 'hubCpm':
        this.#ref(item, 'hubId', 'hub', item.hubId);
        this.#figuresOnce(
          item,
          'platform',
          ['hubCpm', item.hubId, item.platform],
          (prior) => `the CPM of ${item.platform} for hub ${item.hubId} is already given on line ${prior}`,
        );
        break;
      default:
        unhandled(item);
    }
  }

  #checkUser(item: RecordOf<'user'>): void {
    const hub = this.#ref(item, 'hubId', 'hub', item.hubId);
    const workspace = item.workspaceId === null ? undefined : this.#ref(item, 'workspaceId', 'workspace', item.workspaceId);
    if (hub && workspace?.hubId !== undefined && workspace.hubId !== item.hubId) {
      this.#fail(item, 'workspaceId', `workspace ${item.workspaceId} is in hub ${workspace.hubId}, not in hub ${item.hubId}`);
    }
    const prior = this.#emailLines.get(item.email);
    if (prior === 0) this.#existing.add(item);
    if (prior !== undefined && prior !== 0) this.#fail(item, 'email', `email ${item.email} is already used on line ${prior}`);
    else this.#emailLines.set(item.email, item.line);
    item.accountId = hub?.accountId;
    this.#define(item, 'user');
  }

  /**
   * Channels and media must be the post's workspace's; then the post rules apply as in the API
   * (as a draft: an imported scheduled post may be due already and is then published at once). The
   * networks' own rules apply to the posts hubops will send (drafts and scheduled ones), not to
   * the record of a post published or failed elsewhere.
   */
  #checkPost(item: RecordOf<'post'>): void {
    const resolve = (field: 'channelIds' | 'mediaIds', kind: 'channel' | 'media', ids: string[]) => {
      const found = new Map<string, Known>();
      ids.forEach((id, i) => {
        const target = this.#ref(item, `${field}.${i}`, kind, id);
        if (target?.workspaceId !== undefined && target.workspaceId !== item.workspaceId) {
          this.#fail(
            item,
            `${field}.${i}`,
            `${ID_KINDS[kind].label} ${id} is in workspace ${target.workspaceId}, not in the post's workspace ${item.workspaceId}`,
          );
        } else if (target) {
          found.set(id, target);
        }
      });
      return found;
    };
    const channels = resolve('channelIds', 'channel', item.channelIds);
    const media = resolve('mediaIds', 'media', item.mediaIds);
    if (channels.size !== item.channelIds.length || media.size !== item.mediaIds.length) return;
    const problems = postProblems(
      { ...item, status: 'draft', scheduledAt: null, publishNow: false },
      new Map([...channels].map(([id, c]) => [id, { platform: c.platform!, connected: c.connected! }])),
      new Map([...media].map(([id, m]) => [id, { kind: m.mediaKind!, contentType: m.contentType }])),
      new Date(),
      { networkRules: item.status === 'draft' || item.status === 'scheduled' },
    );
    for (const problem of problems) this.#fail(item, problem.field, problem.message);
  }
}

/**
 * The reference issues of the lines read, and the lines whose natural key is stored (to compare
 * with the stored rows); records get the hub (and account) they resolve to.
 */
export async function checkReferences(
  trx: Kysely<Database>,
  lines: LineReader,
): Promise<{ issues: ImportIssue[]; existing: ExistingRecord[] }> {
  const check = new ReferenceCheck(await findStoredRows(trx, wantedRows(lines.items)), lines.firstDefined);
  for (const item of lines.items) check.check(item);
  return { issues: check.issues, existing: check.existing };
}
