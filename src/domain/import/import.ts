import { sql, type Insertable, type Kysely } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { AdPlatform, Database, FieldValue, MediaContentType, SocialPlatform } from '../../db/schema.ts';
import { DomainError } from '../../platform/errors.ts';
import { ID_PATTERN, newId } from '../../platform/ids.ts';
import { hashPassword } from '../../platform/password.ts';
import { parseDate, parseTimestamp } from '../../platform/time.ts';
import { SOCIAL_PLATFORMS } from '../channels/channel.ts';
import { CONTENT_TYPES, kindOf, MAX_DIMENSION, MAX_DURATION_MS, maxBytes } from '../media/media-info.ts';
import { BUDGET_TYPES, type BudgetType } from '../opt-ins/budget-types.ts';
import { OPT_IN_STATUSES, SOLUTIONS, type OptInStatus, type Solution } from '../opt-ins/opt-in.ts';
import { QUESTION_TYPES, type Question } from '../playbooks/playbook.ts';
import { AD_ACCOUNT_SYNC_STATES, AD_PLATFORMS, type AdAccountSyncState } from '../spend/spend.ts';
import { MAX_CHANNELS, MAX_IMAGES, MAX_TEXT_LENGTH, postProblems } from '../posts/post.ts';
import { postRows } from '../posts/post.repository.ts';
import { mediaRow } from '../media/media.repository.ts';
import { saveReviewDays } from '../reviews/review.repository.ts';
import type { RatingCounts } from '../reviews/review.ts';
import {
  PLANS,
  ROLES,
  emailProblem,
  nameProblem,
  normaliseEmail,
  passwordProblem,
  type Plan,
  type Role,
} from '../tenancy/tenancy.repository.ts';

// The NDJSON import (contract §3). Three steps, so that nothing is written unless everything is
// valid:
//   1. shape: each line on its own (JSON, type, fields, enums, formats), no database needed;
//   2. references, in file order, inside the write transaction: ids must be new, references must
//      point to something defined above or already stored, tenancy must line up;
//   3. bulk writes in dependency order, chunked multi-row INSERTs, same transaction.
// Lines that fail step 1 still register their id, so one bad line yields one issue rather than
// a cascade of "does not exist" on every line that refers to it.

export const IMPORT_TYPES = [
  'account', 'hub', 'workspaceField', 'workspace', 'playbook', 'optIn', 'adAccount', 'spend', 'user',
  'channel', 'media', 'post', 'organicMetrics', 'paidMetrics', 'reviewDay', 'hubCpm',
] as const;
export type ImportType = (typeof IMPORT_TYPES)[number];

/** Post statuses an import may set; `publishing` only exists while the publisher works. */
export const IMPORT_POST_STATUSES = ['draft', 'scheduled', 'published', 'failed'] as const;
const MAX_ERROR_TEXT = 1_000;
/** The largest value of an `integer` column. */
const INT32_MAX = 2 ** 31 - 1;

export interface ImportIssue {
  line: number;
  /** `type.field` (e.g. `optIn.status`); absent when the line as a whole is bad. */
  field?: string;
  message: string;
}

export type ImportCounts = Record<ImportType, number>;
export interface ImportResult {
  imported: ImportCounts;
}

const MAX_REPORTED_ISSUES = 20;
// PostgreSQL allows 65,535 bind parameters per statement; stay well below.
const MAX_PARAMS_PER_STATEMENT = 30_000;
const MAX_TEXT = 2_000;

function formatIssue(issue: ImportIssue): string {
  return `line ${issue.line}: ${issue.field ? `${issue.field}: ` : ''}${issue.message}`;
}

/** A rejected import: one line per issue (first 20, by line number); nothing was written. */
export class ImportError extends DomainError<ImportIssue> {
  declare readonly issues: ImportIssue[];
  constructor(issues: ImportIssue[]) {
    const lines = issues.slice(0, MAX_REPORTED_ISSUES).map(formatIssue);
    if (issues.length > MAX_REPORTED_ISSUES) lines.push(`… and ${issues.length - MAX_REPORTED_ISSUES} more issues`);
    super('invalid', lines.join('\n'), { issues });
  }
}

// ---------------------------------------------------------------------------------------------
// Records after step 1. Ids are final (generated when the line had none).

interface AccountRecord { type: 'account'; line: number; id: string; name: string; plan: Plan; apiAccess: boolean }
interface HubRecord { type: 'hub'; line: number; id: string; accountId: string; name: string; suspended: boolean }
interface FieldRecord { type: 'workspaceField'; line: number; hubId: string; key: string; label: string; archived: boolean }
interface WorkspaceRecord { type: 'workspace'; line: number; id: string; hubId: string; name: string; timezone: string; fields: Record<string, FieldValue> }
interface PlaybookRecord { type: 'playbook'; line: number; id: string; hubId: string; name: string; solutions: Solution[]; variants: Record<string, string[]>; questions: Question[] }
interface OptInRecord {
  type: 'optIn'; line: number; id: string; playbookId: string; workspaceId: string; status: OptInStatus;
  optedInAt: string; updatedAt: string; budgetCents: number | null; budgetType: BudgetType | null;
  variant: Record<string, string>; responses: { question: string; answer: string }[];
  /** The playbook's hub, resolved in step 2. */
  hubId?: string;
}
interface AdAccountRecord { type: 'adAccount'; line: number; id: string; hubId: string; platform: string; name: string; syncState: AdAccountSyncState; lastSyncedAt: string | null }
interface SpendRecord { type: 'spend'; line: number; adAccountId: string; workspaceId: string | null; date: string; spendCents: number; hubId?: string }
interface UserRecord {
  type: 'user'; line: number; id: string; email: string; password: string; firstname: string; lastname: string;
  hubId: string; role: Role; workspaceId: string | null; staff: boolean;
  /** The hub's account, resolved in step 2. */
  accountId?: string;
}
/** Lines that belong to a workspace get its hub in step 2. */
interface InWorkspace { line: number; workspaceId: string; hubId?: string }
interface ChannelRecord extends InWorkspace { type: 'channel'; id: string; platform: SocialPlatform; name: string; handle: string | null; connected: boolean }
interface MediaRecord extends InWorkspace {
  type: 'media'; id: string; contentType: MediaContentType; filename: string; byteSize: number; width: number; height: number;
  durationMs: number | null; sha256: Buffer; createdAt: string | null;
}
interface PostRecord extends InWorkspace {
  type: 'post'; id: string; text: string; status: (typeof IMPORT_POST_STATUSES)[number]; channelIds: string[]; mediaIds: string[];
  scheduledAt: string | null; publishedAt: string | null; error: string | null; externalIds: Record<string, string>; createdAt: string | null;
}
interface OrganicRecord extends InWorkspace {
  type: 'organicMetrics'; date: string; platform: SocialPlatform;
  posts: number; impressions: number; reach: number; likes: number; comments: number; shares: number; saves: number;
}
interface PaidRecord extends InWorkspace {
  type: 'paidMetrics'; date: string; platform: AdPlatform; campaignId: string; campaignName: string;
  spendCents: number; impressions: number; clicks: number; results: number;
}
interface ReviewDayRecord extends InWorkspace { type: 'reviewDay'; date: string; newReviews: RatingCounts; responded: number }
interface HubCpmRecord { type: 'hubCpm'; line: number; hubId: string; platform: SocialPlatform; cpmCents: number }
type ImportRecord =
  | AccountRecord | HubRecord | FieldRecord | WorkspaceRecord | PlaybookRecord | OptInRecord | AdAccountRecord | SpendRecord | UserRecord
  | ChannelRecord | MediaRecord | PostRecord | OrganicRecord | PaidRecord | ReviewDayRecord | HubCpmRecord;

/** What is left of a line that failed step 1: enough to register its id or field key. */
interface Broken { type: 'broken'; line: number; kind?: Kind; id?: string; hubId?: string; key?: string }

type Kind = 'account' | 'hub' | 'workspace' | 'playbook' | 'optIn' | 'adAccount' | 'user' | 'channel' | 'media' | 'post';
const KIND_OF_TYPE: Partial<Record<ImportType, Kind>> = {
  account: 'account', hub: 'hub', workspace: 'workspace', playbook: 'playbook', optIn: 'optIn', adAccount: 'adAccount', user: 'user',
  channel: 'channel', media: 'media', post: 'post',
};
const KIND_LABEL: Record<Kind, string> = {
  account: 'account', hub: 'hub', workspace: 'workspace', playbook: 'playbook', optIn: 'opt-in', adAccount: 'ad account', user: 'user',
  channel: 'channel', media: 'media asset', post: 'post',
};
const ID_PREFIX: Record<Kind, string> = {
  account: 'acc', hub: 'hub', workspace: 'ws', playbook: 'pb', optIn: 'oi', adAccount: 'aa', user: 'usr', channel: 'chn', media: 'med', post: 'post',
};

// ---------------------------------------------------------------------------------------------
// Step 1: the shape of one line.

function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 37)}…` : text;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Reads the fields of one line, recording an issue per bad field; unread fields are unknown. */
class LineReader {
  readonly line: number;
  readonly type: ImportType;
  readonly #value: Record<string, unknown>;
  readonly #issues: ImportIssue[];
  readonly #read = new Set<string>(['type']);
  ok = true;

  constructor(line: number, type: ImportType, value: Record<string, unknown>, issues: ImportIssue[]) {
    this.line = line;
    this.type = type;
    this.#value = value;
    this.#issues = issues;
  }

  fail(field: string, message: string): void {
    this.#issues.push({ line: this.line, field: `${this.type}.${field}`, message });
    this.ok = false;
  }

  /** The raw value, undefined when absent. */
  raw(field: string): unknown {
    this.#read.add(field);
    return Object.hasOwn(this.#value, field) ? this.#value[field] : undefined;
  }

  #required(field: string): unknown {
    const value = this.raw(field);
    if (value === undefined) this.fail(field, 'is required');
    return value;
  }

  id(kind: Kind): string {
    const value = this.raw('id');
    if (value === undefined) return newId(ID_PREFIX[kind]);
    return this.#idText('id', value);
  }

  #idText(field: string, value: unknown): string {
    if (typeof value === 'string' && ID_PATTERN.test(value)) return value;
    this.fail(field, `must be an id matching ${ID_PATTERN.source}, got ${shown(value)}`);
    return '';
  }

  ref(field: string): string {
    const value = this.#required(field);
    return value === undefined ? '' : this.#idText(field, value);
  }

  /** A reference that may be null; `optional` makes a missing field mean null too. */
  refOrNull(field: string, optional: boolean): string | null {
    const value = optional ? this.raw(field) : this.#required(field);
    if (value === undefined || value === null) return null;
    return this.#idText(field, value);
  }

  name(field: string, max = 200): string {
    const value = this.#required(field);
    if (value === undefined) return '';
    if (typeof value !== 'string') {
      this.fail(field, `must be a string, got ${shown(value)}`);
      return '';
    }
    const problem = nameProblem(value, max);
    if (problem) this.fail(field, problem);
    return value;
  }

  /** A string field; a `secret` one is never quoted back in an issue. */
  text(field: string, options: { secret?: boolean } = {}): string {
    const value = this.#required(field);
    if (value === undefined) return '';
    if (typeof value !== 'string') {
      this.fail(field, options.secret ? `must be a string, got ${value === null ? 'null' : typeof value}` : `must be a string, got ${shown(value)}`);
      return '';
    }
    return value;
  }

  /** One of `values`; `fallback` (when given) applies to a missing field. */
  oneOf<T extends string>(field: string, values: readonly T[], fallback?: T): T {
    const value = fallback === undefined ? this.#required(field) : this.raw(field);
    if (value === undefined) return fallback ?? values[0]!;
    if (typeof value === 'string' && (values as readonly string[]).includes(value)) return value as T;
    this.fail(field, `must be one of ${values.join(', ')}; got ${shown(value)}`);
    return values[0]!;
  }

  /** Like oneOf, but null (or a missing field) is allowed and means null. */
  oneOfOrNull<T extends string>(field: string, values: readonly T[]): T | null {
    const value = this.raw(field);
    if (value === undefined || value === null) return null;
    return this.oneOf(field, values);
  }

  bool(field: string, fallback: boolean): boolean {
    const value = this.raw(field);
    if (value === undefined) return fallback;
    if (typeof value === 'boolean') return value;
    this.fail(field, `must be true or false, got ${shown(value)}`);
    return fallback;
  }

  /** An ISO 8601 timestamp, normalised to UTC with milliseconds (`…T10:00:00.000Z`). */
  timestamp(field: string): string {
    const value = this.#required(field);
    if (value === undefined) return '';
    const parsed = typeof value === 'string' ? parseTimestamp(value) : undefined;
    if (parsed) return parsed.toISOString();
    this.fail(field, `must be an ISO 8601 timestamp with Z or an offset, like 2026-11-01T10:00:00Z; got ${shown(value)}`);
    return '';
  }

  timestampOrNull(field: string): string | null {
    const value = this.raw(field);
    if (value === undefined || value === null) return null;
    return this.timestamp(field);
  }

  date(field: string): string {
    const value = this.#required(field);
    if (value === undefined) return '';
    if (typeof value === 'string' && parseDate(value)) return value;
    this.fail(field, `must be a real date YYYY-MM-DD; got ${shown(value)}`);
    return '';
  }

  /** Whole cents from 0 to `max` (the column's range: a value beyond it is refused here, not by PostgreSQL). */
  cents(field: string, max = Number.MAX_SAFE_INTEGER): number {
    const value = this.#required(field);
    if (value === undefined) return 0;
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= max) return value;
    this.fail(field, max === Number.MAX_SAFE_INTEGER ? `must be a whole number of cents, 0 or more; got ${shown(value)}` : `must be a whole number of cents from 0 to ${max}; got ${shown(value)}`);
    return 0;
  }

  /** A whole number from 0 to `max` (a metric count; `max` is the column's range where it is narrower). */
  count(field: string, max = Number.MAX_SAFE_INTEGER): number {
    const value = this.#required(field);
    if (value === undefined) return 0;
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= max) return value;
    this.fail(field, max === Number.MAX_SAFE_INTEGER ? `must be a whole number, 0 or more; got ${shown(value)}` : `must be a whole number from 0 to ${max}; got ${shown(value)}`);
    return 0;
  }

  /** A whole number from 1 to `max`. */
  positive(field: string, max = INT32_MAX): number {
    const value = this.#required(field);
    if (value === undefined) return 1;
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 1 && value <= max) return value;
    this.fail(field, `must be a whole number from 1 to ${max}; got ${shown(value)}`);
    return 1;
  }

  /** An array of distinct ids, at most `max` (missing: empty). */
  idList(field: string, max: number): string[] {
    const value = this.raw(field);
    if (value === undefined) return [];
    if (!Array.isArray(value) || value.length > max || !value.every((v) => typeof v === 'string' && ID_PATTERN.test(v)) || new Set(value).size !== value.length) {
      this.fail(field, `must be an array of up to ${max} distinct ids; got ${shown(value)}`);
      return [];
    }
    return value as string[];
  }

  /** A string of at most `max` characters (missing: `fallback`). */
  textUpTo(field: string, max: number, fallback?: string): string {
    const value = fallback === undefined ? this.#required(field) : this.raw(field);
    if (value === undefined) return fallback ?? '';
    if (typeof value === 'string' && value.length <= max) return value;
    this.fail(field, `must be a string of at most ${max.toLocaleString('en-US')} characters; got ${shown(value)}`);
    return '';
  }

  centsOrNull(field: string): number | null {
    const value = this.raw(field);
    if (value === undefined || value === null) return null;
    return this.cents(field);
  }

  /** An object of string values, e.g. an opt-in's variant. */
  stringMap(field: string): Record<string, string> {
    const value = this.raw(field);
    if (value === undefined) return {};
    if (!isObject(value)) {
      this.fail(field, `must be an object of strings, got ${shown(value)}`);
      return {};
    }
    for (const [key, entry] of Object.entries(value)) {
      if (typeof entry !== 'string') this.fail(`${field}.${key}`, `must be a string, got ${shown(entry)}`);
    }
    return value as Record<string, string>;
  }

  /** Keys of the line that no accessor read. */
  unknownFields(): void {
    for (const key of Object.keys(this.#value)) {
      if (!this.#read.has(key)) this.fail(key, `is not a field of ${this.type} lines`);
    }
  }
}

function readAccount(r: LineReader): AccountRecord {
  return { type: 'account', line: r.line, id: r.id('account'), name: r.name('name'), plan: r.oneOf('plan', PLANS, 'standard'), apiAccess: r.bool('apiAccess', false) };
}

function readHub(r: LineReader): HubRecord {
  return { type: 'hub', line: r.line, id: r.id('hub'), accountId: r.ref('accountId'), name: r.name('name'), suspended: r.bool('suspended', false) };
}

function readField(r: LineReader): FieldRecord {
  const key = r.text('key');
  if (typeof r.raw('key') === 'string' && !ID_PATTERN.test(key)) r.fail('key', `must match ${ID_PATTERN.source}, got ${shown(key)}`);
  return { type: 'workspaceField', line: r.line, hubId: r.ref('hubId'), key, label: r.name('label'), archived: r.bool('archived', false) };
}

function isTimeZone(name: string): boolean {
  // Intl also accepts offsets such as "+01:00"; a location's zone must be an IANA name.
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(name)) return false;
  try {
    new Intl.DateTimeFormat('en', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

function readWorkspace(r: LineReader): WorkspaceRecord {
  const id = r.id('workspace');
  const hubId = r.ref('hubId');
  const name = r.name('name');
  const zone = r.raw('timezone');
  let timezone = 'UTC';
  if (zone !== undefined) {
    if (typeof zone === 'string' && isTimeZone(zone)) timezone = zone;
    else r.fail('timezone', `must be an IANA time zone like America/Denver, got ${shown(zone)}`);
  }
  const raw = r.raw('fields');
  const fields: Record<string, FieldValue> = {};
  if (raw !== undefined && !isObject(raw)) {
    r.fail('fields', `must be an object of field values, got ${shown(raw)}`);
  } else if (raw) {
    for (const [key, value] of Object.entries(raw)) {
      const ok =
        (typeof value === 'string' && value.length <= MAX_TEXT) ||
        typeof value === 'boolean' ||
        (typeof value === 'number' && Number.isFinite(value));
      // defineProperty: a key named __proto__ must become a field, not the object's prototype.
      if (ok) Object.defineProperty(fields, key, { value, enumerable: true, writable: true, configurable: true });
      else r.fail(`fields.${key}`, `must be a string (up to ${MAX_TEXT} characters), a number or a boolean; got ${shown(value)}`);
    }
  }
  return { type: 'workspace', line: r.line, id, hubId, name, timezone, fields };
}

function stringList(r: LineReader, field: string, value: unknown): string[] {
  if (!Array.isArray(value) || value.length === 0 || !value.every((v) => typeof v === 'string' && v.trim() !== '' && v.length <= 200)) {
    r.fail(field, `must be a non-empty array of non-blank strings, got ${shown(value)}`);
    return [];
  }
  return value as string[];
}

function readPlaybook(r: LineReader): PlaybookRecord {
  const id = r.id('playbook');
  const hubId = r.ref('hubId');
  const name = r.name('name');

  const rawSolutions = r.raw('solutions');
  let solutions: Solution[] = [];
  const validSolutions =
    Array.isArray(rawSolutions) &&
    rawSolutions.length > 0 &&
    rawSolutions.every((s) => (SOLUTIONS as readonly unknown[]).includes(s)) &&
    new Set(rawSolutions).size === rawSolutions.length;
  if (validSolutions) solutions = rawSolutions as Solution[];
  else r.fail('solutions', `must be a non-empty array of distinct values from ${SOLUTIONS.join(', ')}; got ${shown(rawSolutions)}`);

  const rawVariants = r.raw('variants');
  const variants: Record<string, string[]> = {};
  if (rawVariants !== undefined && !isObject(rawVariants)) {
    r.fail('variants', `must be an object of option lists, like {"audience":["Families","Students"]}; got ${shown(rawVariants)}`);
  } else if (rawVariants) {
    for (const [dimension, options] of Object.entries(rawVariants)) {
      Object.defineProperty(variants, dimension, { value: stringList(r, `variants.${dimension}`, options), enumerable: true, writable: true, configurable: true });
    }
  }

  const rawQuestions = r.raw('questions');
  const questions: Question[] = [];
  if (rawQuestions !== undefined && !Array.isArray(rawQuestions)) {
    r.fail('questions', `must be an array of questions; got ${shown(rawQuestions)}`);
  } else if (rawQuestions) {
    rawQuestions.forEach((q: unknown, i) => {
      const at = `questions[${i}]`;
      if (!isObject(q)) return r.fail(at, `must be an object like {"question":"Store hours?","type":"short_answer"}; got ${shown(q)}`);
      const known = new Set(['question', 'type', 'required', 'options']);
      for (const key of Object.keys(q)) if (!known.has(key)) r.fail(`${at}.${key}`, 'is not a field of a question');
      if (typeof q.question !== 'string' || q.question.trim() === '' || q.question.length > 500) {
        r.fail(`${at}.question`, `must be a non-blank string of up to 500 characters; got ${shown(q.question)}`);
      }
      const type = q.type ?? 'short_answer';
      if (!(QUESTION_TYPES as readonly unknown[]).includes(type)) r.fail(`${at}.type`, `must be one of ${QUESTION_TYPES.join(', ')}; got ${shown(type)}`);
      if (q.required !== undefined && typeof q.required !== 'boolean') r.fail(`${at}.required`, `must be true or false, got ${shown(q.required)}`);
      const question: Question = { question: String(q.question), type: type as Question['type'], required: q.required === true };
      if (type === 'short_answer') {
        if (q.options !== undefined) r.fail(`${at}.options`, 'is only for single_select and multi_select questions');
      } else {
        question.options = stringList(r, `${at}.options`, q.options);
      }
      questions.push(question);
    });
  }
  return { type: 'playbook', line: r.line, id, hubId, name, solutions, variants, questions };
}

function readOptIn(r: LineReader): OptInRecord {
  const id = r.id('optIn');
  const playbookId = r.ref('playbookId');
  const workspaceId = r.ref('workspaceId');
  const status = r.oneOf('status', OPT_IN_STATUSES);
  const optedInAt = r.timestamp('optedInAt');
  // updatedAt defaults to optedInAt: a row never changed since it was created.
  const updatedAt = r.raw('updatedAt') === undefined ? optedInAt : r.timestamp('updatedAt');
  if (optedInAt && updatedAt && updatedAt < optedInAt) r.fail('updatedAt', `must not be before optedInAt (${optedInAt})`);
  const budgetCents = r.centsOrNull('budgetCents');
  const budgetType = r.oneOfOrNull('budgetType', BUDGET_TYPES);
  const variant = r.stringMap('variant');

  const rawResponses = r.raw('responses');
  const responses: { question: string; answer: string }[] = [];
  if (rawResponses !== undefined && !Array.isArray(rawResponses)) {
    r.fail('responses', `must be an array of {"question","answer"} objects; got ${shown(rawResponses)}`);
  } else if (rawResponses) {
    rawResponses.forEach((item: unknown, i) => {
      const valid =
        isObject(item) &&
        typeof item.question === 'string' &&
        typeof item.answer === 'string' &&
        Object.keys(item).length === 2;
      if (valid) responses.push({ question: item.question as string, answer: item.answer as string });
      else r.fail(`responses[${i}]`, `must be {"question": string, "answer": string}; got ${shown(item)}`);
    });
  }
  return { type: 'optIn', line: r.line, id, playbookId, workspaceId, status, optedInAt, updatedAt, budgetCents, budgetType, variant, responses };
}

function readAdAccount(r: LineReader): AdAccountRecord {
  return {
    type: 'adAccount',
    line: r.line,
    id: r.id('adAccount'),
    hubId: r.ref('hubId'),
    platform: r.oneOf('platform', AD_PLATFORMS),
    name: r.name('name'),
    syncState: r.oneOf('syncState', AD_ACCOUNT_SYNC_STATES, 'idle'),
    lastSyncedAt: r.timestampOrNull('lastSyncedAt'),
  };
}

function readSpend(r: LineReader): SpendRecord {
  return {
    type: 'spend',
    line: r.line,
    adAccountId: r.ref('adAccountId'),
    // Required even when null: unattributed spend must be said, not implied by a typo.
    workspaceId: r.refOrNull('workspaceId', false),
    date: r.date('date'),
    spendCents: r.cents('spendCents'),
  };
}

function readUser(r: LineReader): UserRecord {
  const id = r.id('user');
  const email = normaliseEmail(r.text('email'));
  const emailIssue = typeof r.raw('email') === 'string' ? emailProblem(email) : undefined;
  if (emailIssue) r.fail('email', emailIssue);
  const password = r.text('password', { secret: true });
  const passwordIssue = typeof r.raw('password') === 'string' ? passwordProblem(password) : undefined;
  if (passwordIssue) r.fail('password', passwordIssue);
  return {
    type: 'user',
    line: r.line,
    id,
    email,
    password,
    firstname: r.name('firstname', 100),
    lastname: r.name('lastname', 100),
    hubId: r.ref('hubId'),
    role: r.oneOf('role', ROLES),
    workspaceId: r.refOrNull('workspaceId', true),
    staff: r.bool('staff', false),
  };
}

function readChannel(r: LineReader): ChannelRecord {
  const handle = r.raw('handle');
  const record: ChannelRecord = {
    type: 'channel', line: r.line, id: r.id('channel'), workspaceId: r.ref('workspaceId'), platform: r.oneOf('platform', SOCIAL_PLATFORMS),
    name: r.name('name'), handle: null, connected: r.bool('connected', true),
  };
  if (handle !== undefined && handle !== null) record.handle = r.name('handle');
  return record;
}

function readMedia(r: LineReader): MediaRecord {
  const id = r.id('media');
  const workspaceId = r.ref('workspaceId');
  const contentType = r.oneOf('contentType', CONTENT_TYPES);
  const kind = kindOf(contentType);
  const filename = r.name('filename', 255);
  const byteSize = r.positive('byteSize', maxBytes(kind));
  const width = r.positive('width', MAX_DIMENSION);
  const height = r.positive('height', MAX_DIMENSION);
  let durationMs: number | null = null;
  if (r.raw('durationMs') !== undefined && r.raw('durationMs') !== null) {
    if (kind === 'image') r.fail('durationMs', 'is only for videos');
    else durationMs = r.count('durationMs', MAX_DURATION_MS);
  }
  const hex = r.raw('sha256');
  let sha256 = Buffer.alloc(32);
  if (typeof hex === 'string' && /^[0-9a-fA-F]{64}$/.test(hex)) sha256 = Buffer.from(hex, 'hex');
  else r.fail('sha256', `must be the SHA-256 of the file as 64 hex digits; got ${shown(hex)}`);
  const createdAt = r.timestampOrNull('createdAt');
  return { type: 'media', line: r.line, id, workspaceId, contentType, filename, byteSize, width, height, durationMs, sha256, createdAt };
}

function readPost(r: LineReader): PostRecord {
  const id = r.id('post');
  const workspaceId = r.ref('workspaceId');
  const text = r.textUpTo('text', MAX_TEXT_LENGTH, '');
  const status = r.oneOf('status', IMPORT_POST_STATUSES);
  const channelIds = r.idList('channelIds', MAX_CHANNELS);
  const mediaIds = r.idList('mediaIds', MAX_IMAGES);
  const scheduledAt = r.timestampOrNull('scheduledAt');
  const publishedAt = r.timestampOrNull('publishedAt');
  const error = r.raw('error') === undefined || r.raw('error') === null ? null : r.textUpTo('error', MAX_ERROR_TEXT);
  const externalIds = r.stringMap('externalIds');
  const createdAt = r.timestampOrNull('createdAt');
  if (status !== 'draft' && channelIds.length === 0 && r.raw('channelIds') !== undefined) r.fail('channelIds', `must name at least one channel of a ${status} post`);
  if (status !== 'draft' && r.raw('channelIds') === undefined) r.fail('channelIds', `is required for a ${status} post`);
  if ((status === 'scheduled' || status === 'failed') && scheduledAt === null) r.fail('scheduledAt', `is required for a ${status} post`);
  if (status === 'published' && publishedAt === null) r.fail('publishedAt', 'is required for a published post');
  if (status !== 'published' && publishedAt !== null) r.fail('publishedAt', 'is only for published posts');
  if (status === 'failed' && (error === null || error.trim() === '')) r.fail('error', 'is required for a failed post: say why it failed');
  if (status !== 'failed' && error !== null) r.fail('error', 'is only for failed posts');
  if (Object.keys(externalIds).length > 0 && status !== 'published') r.fail('externalIds', 'is only for published posts');
  for (const channelId of Object.keys(externalIds)) {
    if (!channelIds.includes(channelId)) r.fail(`externalIds.${channelId}`, 'is not one of the post’s channelIds');
  }
  return { type: 'post', line: r.line, id, workspaceId, text, status, channelIds, mediaIds, scheduledAt, publishedAt, error, externalIds, createdAt };
}

function readOrganic(r: LineReader): OrganicRecord {
  return {
    type: 'organicMetrics', line: r.line, workspaceId: r.ref('workspaceId'), date: r.date('date'), platform: r.oneOf('platform', SOCIAL_PLATFORMS),
    posts: r.count('posts', INT32_MAX), impressions: r.count('impressions'), reach: r.count('reach'), likes: r.count('likes'),
    comments: r.count('comments'), shares: r.count('shares'), saves: r.count('saves'),
  };
}

function readPaid(r: LineReader): PaidRecord {
  return {
    type: 'paidMetrics', line: r.line, workspaceId: r.ref('workspaceId'), date: r.date('date'), platform: r.oneOf('platform', AD_PLATFORMS),
    campaignId: r.name('campaignId'), campaignName: r.name('campaignName'),
    spendCents: r.cents('spendCents'), impressions: r.count('impressions'), clicks: r.count('clicks'), results: r.count('results'),
  };
}

function readReviewDay(r: LineReader): ReviewDayRecord {
  const raw = r.raw('newReviews');
  const newReviews: RatingCounts = [0, 0, 0, 0, 0];
  if (!isObject(raw)) {
    r.fail('newReviews', `must be an object of counts by star rating, like {"4":2,"5":7}; got ${shown(raw)}`);
  } else {
    for (const [rating, count] of Object.entries(raw)) {
      if (!['1', '2', '3', '4', '5'].includes(rating)) r.fail(`newReviews.${rating}`, 'is not a star rating (1 to 5)');
      else if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 0 || count > INT32_MAX) r.fail(`newReviews.${rating}`, `must be a whole number, 0 or more; got ${shown(count)}`);
      else newReviews[Number(rating) - 1] = count;
    }
  }
  const responded = r.count('responded', INT32_MAX);
  const received = newReviews.reduce((a, b) => a + b, 0);
  if (responded > received) r.fail('responded', `must not exceed the ${received} new reviews of the day`);
  return { type: 'reviewDay', line: r.line, workspaceId: r.ref('workspaceId'), date: r.date('date'), newReviews, responded };
}

function readHubCpm(r: LineReader): HubCpmRecord {
  return { type: 'hubCpm', line: r.line, hubId: r.ref('hubId'), platform: r.oneOf('platform', SOCIAL_PLATFORMS), cpmCents: r.cents('cpmCents', INT32_MAX) };
}

const READERS: Record<ImportType, (r: LineReader) => ImportRecord> = {
  account: readAccount,
  hub: readHub,
  workspaceField: readField,
  workspace: readWorkspace,
  playbook: readPlaybook,
  optIn: readOptIn,
  adAccount: readAdAccount,
  spend: readSpend,
  user: readUser,
  channel: readChannel,
  media: readMedia,
  post: readPost,
  organicMetrics: readOrganic,
  paidMetrics: readPaid,
  reviewDay: readReviewDay,
  hubCpm: readHubCpm,
};

/** Step 1 over a sequence of lines: validated records (or what is left of bad ones) and issues. */
class Checker {
  readonly items: (ImportRecord | Broken)[] = [];
  readonly issues: ImportIssue[] = [];
  /** First line that defines each id, per kind: tells a forward reference from a missing one. */
  readonly firstDefined = new Map<Kind, Map<string, number>>();

  addText(text: string, line: number): void {
    if (text.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      // Only where it broke: V8's message quotes the text around it, which may be a password.
      const position = /at position (\d+)/.exec((error as Error).message)?.[1];
      this.issues.push({ line, message: `not valid JSON (${position === undefined ? 'syntax error' : `at column ${Number(position) + 1}`})` });
      this.items.push({ type: 'broken', line });
      return;
    }
    this.addValue(value, line);
  }

  addValue(value: unknown, line: number): void {
    if (!isObject(value)) {
      this.issues.push({ line, message: `must be a JSON object with a "type", got ${shown(value)}` });
      this.items.push({ type: 'broken', line });
      return;
    }
    const type = value.type;
    if (typeof type !== 'string' || !(IMPORT_TYPES as readonly string[]).includes(type)) {
      this.issues.push({ line, field: 'type', message: `must be one of ${IMPORT_TYPES.join(', ')}; got ${shown(type)}` });
      this.items.push({ type: 'broken', line });
      return;
    }
    const reader = new LineReader(line, type as ImportType, value, this.issues);
    const record = READERS[type as ImportType](reader);
    reader.unknownFields();
    const kind = KIND_OF_TYPE[record.type];
    if (kind && 'id' in record && record.id) {
      const lines = this.firstDefined.get(kind) ?? new Map<string, number>();
      this.firstDefined.set(kind, lines);
      if (!lines.has(record.id)) lines.set(record.id, line);
    }
    if (reader.ok) {
      this.items.push(record);
    } else {
      const broken: Broken = { type: 'broken', line, kind };
      if ('id' in record && record.id) broken.id = record.id;
      if (record.type === 'workspaceField' && record.hubId && record.key) Object.assign(broken, { hubId: record.hubId, key: record.key });
      this.items.push(broken);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Step 2: references, in file order, against earlier lines and stored rows.

interface Known {
  /** 0 for a stored row. */
  line: number;
  /** The line that defined it failed: accept references, check nothing further through it. */
  broken?: boolean;
  hubId?: string;
  accountId?: string;
  /** Channels and media: where they belong and what posts need to know of them. */
  workspaceId?: string;
  platform?: SocialPlatform;
  connected?: boolean;
  mediaKind?: 'image' | 'video';
}

async function storedRows(trx: Kysely<Database>, checker: Checker) {
  const ids = new Map<Kind, Set<string>>(Object.keys(KIND_LABEL).map((k) => [k as Kind, new Set<string>()]));
  const fieldHubs = new Set<string>();
  const emails: string[] = [];
  const want = (kind: Kind, id: string | null | undefined) => {
    if (id) ids.get(kind)!.add(id);
  };
  for (const item of checker.items) {
    switch (item.type) {
      case 'broken':
        if (item.kind) want(item.kind, item.id);
        break;
      case 'account':
        want('account', item.id);
        break;
      case 'hub':
        want('hub', item.id);
        want('account', item.accountId);
        break;
      case 'workspaceField':
        want('hub', item.hubId);
        fieldHubs.add(item.hubId);
        break;
      case 'workspace':
        want('workspace', item.id);
        want('hub', item.hubId);
        fieldHubs.add(item.hubId);
        break;
      case 'playbook':
        want('playbook', item.id);
        want('hub', item.hubId);
        break;
      case 'optIn':
        want('optIn', item.id);
        want('playbook', item.playbookId);
        want('workspace', item.workspaceId);
        break;
      case 'adAccount':
        want('adAccount', item.id);
        want('hub', item.hubId);
        break;
      case 'spend':
        want('adAccount', item.adAccountId);
        want('workspace', item.workspaceId);
        break;
      case 'user':
        want('user', item.id);
        want('hub', item.hubId);
        want('workspace', item.workspaceId);
        emails.push(item.email);
        break;
      case 'channel':
      case 'media':
        want(item.type, item.id);
        want('workspace', item.workspaceId);
        break;
      case 'post':
        want('post', item.id);
        want('workspace', item.workspaceId);
        for (const id of item.channelIds) want('channel', id);
        for (const id of item.mediaIds) want('media', id);
        break;
      case 'organicMetrics':
      case 'paidMetrics':
      case 'reviewDay':
        want('workspace', item.workspaceId);
        break;
      case 'hubCpm':
        want('hub', item.hubId);
        break;
    }
  }
  const list = (kind: Kind) => [...ids.get(kind)!];
  const any = (values: string[]) => sql<string>`ANY(${values}::text[])`;
  const [accounts, hubs, workspaces, playbooks, optIns, adAccounts, users, fields, takenEmails, channels, media, posts] = await Promise.all([
    trx.selectFrom('accounts').select('id').where('id', '=', any(list('account'))).execute(),
    trx.selectFrom('hubs').select(['id', 'account_id']).where('id', '=', any(list('hub'))).execute(),
    trx.selectFrom('workspaces').select(['id', 'hub_id']).where('id', '=', any(list('workspace'))).execute(),
    trx.selectFrom('playbooks').select(['id', 'hub_id']).where('id', '=', any(list('playbook'))).execute(),
    trx.selectFrom('opt_ins').select('id').where('id', '=', any(list('optIn'))).execute(),
    trx.selectFrom('ad_accounts').select(['id', 'hub_id']).where('id', '=', any(list('adAccount'))).execute(),
    trx.selectFrom('users').select('id').where('id', '=', any(list('user'))).execute(),
    trx.selectFrom('workspace_fields').select(['hub_id', 'key']).where('hub_id', '=', any([...fieldHubs])).execute(),
    trx.selectFrom('users').select('email').where('email', '=', any(emails)).execute(),
    trx.selectFrom('social_channels').select(['id', 'hub_id', 'workspace_id', 'platform', 'connected']).where('id', '=', any(list('channel'))).execute(),
    trx.selectFrom('media_assets').select(['id', 'hub_id', 'workspace_id', 'kind']).where('id', '=', any(list('media'))).execute(),
    trx.selectFrom('posts').select('id').where('id', '=', any(list('post'))).execute(),
  ]);
  const known = new Map<Kind, Map<string, Known>>([
    ['account', new Map(accounts.map((r) => [r.id, { line: 0 }]))],
    ['hub', new Map(hubs.map((r) => [r.id, { line: 0, accountId: r.account_id }]))],
    ['workspace', new Map(workspaces.map((r) => [r.id, { line: 0, hubId: r.hub_id }]))],
    ['playbook', new Map(playbooks.map((r) => [r.id, { line: 0, hubId: r.hub_id }]))],
    ['optIn', new Map(optIns.map((r) => [r.id, { line: 0 }]))],
    ['adAccount', new Map(adAccounts.map((r) => [r.id, { line: 0, hubId: r.hub_id }]))],
    ['user', new Map(users.map((r) => [r.id, { line: 0 }]))],
    ['channel', new Map(channels.map((r) => [r.id, { line: 0, hubId: r.hub_id, workspaceId: r.workspace_id, platform: r.platform, connected: r.connected }]))],
    ['media', new Map(media.map((r) => [r.id, { line: 0, hubId: r.hub_id, workspaceId: r.workspace_id, mediaKind: r.kind }]))],
    ['post', new Map(posts.map((r) => [r.id, { line: 0 }]))],
  ]);
  const fieldKeys = new Map<string, Map<string, Known>>();
  for (const row of fields) {
    if (!fieldKeys.has(row.hub_id)) fieldKeys.set(row.hub_id, new Map());
    fieldKeys.get(row.hub_id)!.set(row.key, { line: 0 });
  }
  const emailLines = new Map<string, number>(takenEmails.map((r) => [r.email, 0]));
  return { known, fieldKeys, emailLines };
}

async function checkReferences(trx: Kysely<Database>, checker: Checker): Promise<ImportIssue[]> {
  const { known, fieldKeys, emailLines } = await storedRows(trx, checker);
  const issues: ImportIssue[] = [];
  let failed = false;
  const fail = (record: ImportRecord, field: string, message: string) => {
    issues.push({ line: record.line, field: `${record.type}.${field}`, message });
    failed = true;
  };

  const ref = (record: ImportRecord, field: string, kind: Kind, id: string): Known | undefined => {
    const found = known.get(kind)!.get(id);
    if (!found) {
      const later = checker.firstDefined.get(kind)?.get(id);
      fail(record, field, later && later > record.line
        ? `${KIND_LABEL[kind]} ${id} is defined later, on line ${later}; a line may only refer to what comes before it`
        : `${KIND_LABEL[kind]} ${id} does not exist`);
      return undefined;
    }
    return found.broken ? undefined : found;
  };

  const define = (record: ImportRecord & { id: string }, kind: Kind, info: Omit<Known, 'line'>) => {
    const prior = known.get(kind)!.get(record.id);
    if (prior) {
      fail(record, 'id', prior.line === 0
        ? `${KIND_LABEL[kind]} ${record.id} already exists`
        : `${KIND_LABEL[kind]} id ${record.id} is already used on line ${prior.line}`);
      return;
    }
    known.get(kind)!.set(record.id, { line: record.line, broken: failed, ...info });
  };

  /** The first line of each set of figures (metrics are keyed by workspace, day, platform, …). */
  const metricLines = new Map<string, number>();

  /** Both in a known hub and not the same one. */
  const crossHub = (a: Known | undefined, b: Known | undefined) => a?.hubId !== undefined && b?.hubId !== undefined && a.hubId !== b.hubId;

  for (const item of checker.items) {
    failed = false;
    switch (item.type) {
      case 'broken': {
        if (item.kind && item.id && !known.get(item.kind)!.has(item.id)) known.get(item.kind)!.set(item.id, { line: item.line, broken: true });
        if (item.hubId && item.key) {
          if (!fieldKeys.has(item.hubId)) fieldKeys.set(item.hubId, new Map());
          fieldKeys.get(item.hubId)!.set(item.key, { line: item.line, broken: true });
        }
        break;
      }
      case 'account':
        define(item, 'account', {});
        break;
      case 'hub':
        ref(item, 'accountId', 'account', item.accountId);
        define(item, 'hub', { accountId: item.accountId });
        break;
      case 'workspaceField': {
        ref(item, 'hubId', 'hub', item.hubId);
        if (!fieldKeys.has(item.hubId)) fieldKeys.set(item.hubId, new Map());
        const keys = fieldKeys.get(item.hubId)!;
        const prior = keys.get(item.key);
        if (prior) {
          fail(item, 'key', prior.line === 0
            ? `hub ${item.hubId} already has a field "${item.key}"`
            : `field "${item.key}" of hub ${item.hubId} is already defined on line ${prior.line}`);
        } else {
          keys.set(item.key, { line: item.line });
        }
        break;
      }
      case 'workspace': {
        const hub = ref(item, 'hubId', 'hub', item.hubId);
        if (hub) {
          const keys = fieldKeys.get(item.hubId);
          for (const key of Object.keys(item.fields)) {
            if (!keys?.has(key)) fail(item, `fields.${key}`, `hub ${item.hubId} has no field "${key}"; define it with a workspaceField line before this one`);
          }
        }
        define(item, 'workspace', { hubId: item.hubId });
        break;
      }
      case 'playbook':
        ref(item, 'hubId', 'hub', item.hubId);
        define(item, 'playbook', { hubId: item.hubId });
        break;
      case 'optIn': {
        const playbook = ref(item, 'playbookId', 'playbook', item.playbookId);
        const workspace = ref(item, 'workspaceId', 'workspace', item.workspaceId);
        if (crossHub(playbook, workspace)) {
          fail(item, 'workspaceId', `workspace ${item.workspaceId} is in hub ${workspace!.hubId}, but playbook ${item.playbookId} is in hub ${playbook!.hubId}`);
        }
        item.hubId = playbook?.hubId;
        define(item, 'optIn', {});
        break;
      }
      case 'adAccount':
        ref(item, 'hubId', 'hub', item.hubId);
        define(item, 'adAccount', { hubId: item.hubId });
        break;
      case 'spend': {
        const account = ref(item, 'adAccountId', 'adAccount', item.adAccountId);
        const workspace = item.workspaceId === null ? undefined : ref(item, 'workspaceId', 'workspace', item.workspaceId);
        if (crossHub(account, workspace)) {
          fail(item, 'workspaceId', `workspace ${item.workspaceId} is in hub ${workspace!.hubId}, but ad account ${item.adAccountId} is in hub ${account!.hubId}`);
        }
        item.hubId = account?.hubId;
        break;
      }
      case 'user': {
        const hub = ref(item, 'hubId', 'hub', item.hubId);
        const workspace = item.workspaceId === null ? undefined : ref(item, 'workspaceId', 'workspace', item.workspaceId);
        if (hub && workspace?.hubId !== undefined && workspace.hubId !== item.hubId) {
          fail(item, 'workspaceId', `workspace ${item.workspaceId} is in hub ${workspace.hubId}, not in hub ${item.hubId}`);
        }
        const prior = emailLines.get(item.email);
        if (prior !== undefined) {
          fail(item, 'email', prior === 0 ? `a user with email ${item.email} already exists` : `email ${item.email} is already used on line ${prior}`);
        } else {
          emailLines.set(item.email, item.line);
        }
        item.accountId = hub?.accountId;
        define(item, 'user', {});
        break;
      }
      case 'channel': {
        item.hubId = ref(item, 'workspaceId', 'workspace', item.workspaceId)?.hubId;
        define(item, 'channel', { hubId: item.hubId, workspaceId: item.workspaceId, platform: item.platform, connected: item.connected });
        break;
      }
      case 'media': {
        item.hubId = ref(item, 'workspaceId', 'workspace', item.workspaceId)?.hubId;
        define(item, 'media', { hubId: item.hubId, workspaceId: item.workspaceId, mediaKind: kindOf(item.contentType) });
        break;
      }
      case 'post': {
        item.hubId = ref(item, 'workspaceId', 'workspace', item.workspaceId)?.hubId;
        // Targets and media must be the post's workspace's; then the post rules apply as in the API
        // (as a draft: an imported scheduled post may be due already and is then published at once).
        const resolve = (field: 'channelIds' | 'mediaIds', kind: 'channel' | 'media', ids: string[]) => {
          const found = new Map<string, Known>();
          ids.forEach((id, i) => {
            const target = ref(item, `${field}.${i}`, kind, id);
            if (target?.workspaceId !== undefined && target.workspaceId !== item.workspaceId) {
              fail(item, `${field}.${i}`, `${KIND_LABEL[kind]} ${id} is in workspace ${target.workspaceId}, not in the post's workspace ${item.workspaceId}`);
            } else if (target) {
              found.set(id, target);
            }
          });
          return found;
        };
        const channels = resolve('channelIds', 'channel', item.channelIds);
        const media = resolve('mediaIds', 'media', item.mediaIds);
        if (channels.size === item.channelIds.length && media.size === item.mediaIds.length) {
          const problems = postProblems(
            { ...item, status: 'draft', scheduledAt: null, publishNow: false },
            new Map([...channels].map(([id, c]) => [id, { platform: c.platform!, connected: c.connected! }])),
            new Map([...media].map(([id, m]) => [id, { kind: m.mediaKind! }])),
            new Date(),
          );
          for (const problem of problems) fail(item, problem.field, problem.message);
        }
        define(item, 'post', {});
        break;
      }
      case 'organicMetrics':
      case 'paidMetrics':
      case 'reviewDay': {
        item.hubId = ref(item, 'workspaceId', 'workspace', item.workspaceId)?.hubId;
        const key = [item.type, item.workspaceId, item.date, 'platform' in item ? item.platform : '', 'campaignId' in item ? item.campaignId : ''].join('\u0000');
        const prior = metricLines.get(key);
        if (prior !== undefined) fail(item, 'date', `the same figures are already given on line ${prior}`);
        else metricLines.set(key, item.line);
        break;
      }
      case 'hubCpm': {
        ref(item, 'hubId', 'hub', item.hubId);
        const key = `hubCpm\u0000${item.hubId}\u0000${item.platform}`;
        const prior = metricLines.get(key);
        if (prior !== undefined) fail(item, 'platform', `the CPM of ${item.platform} for hub ${item.hubId} is already given on line ${prior}`);
        else metricLines.set(key, item.line);
        break;
      }
    }
  }
  return issues;
}

// ---------------------------------------------------------------------------------------------
// Step 3: writes.

async function insertAll<T extends keyof Database & string>(trx: Kysely<Database>, table: T, rows: Insertable<Database[T]>[]): Promise<void> {
  if (rows.length === 0) return;
  const perStatement = Math.max(1, Math.floor(MAX_PARAMS_PER_STATEMENT / Object.keys(rows[0]!).length));
  for (let i = 0; i < rows.length; i += perStatement) {
    await trx.insertInto(table).values(rows.slice(i, i + perStatement) as never).execute();
  }
}

function only<T extends ImportRecord['type']>(items: (ImportRecord | Broken)[], type: T): Extract<ImportRecord, { type: T }>[] {
  return items.filter((item): item is Extract<ImportRecord, { type: T }> => item.type === type);
}

async function write(trx: Kysely<Database>, records: ImportRecord[]): Promise<void> {
  await insertAll(trx, 'accounts', only(records, 'account').map((a) => ({ id: a.id, name: a.name, plan: a.plan, api_access: a.apiAccess })));
  await insertAll(trx, 'hubs', only(records, 'hub').map((h) => ({ id: h.id, account_id: h.accountId, name: h.name, suspended: h.suspended })));
  await insertAll(trx, 'workspace_fields', only(records, 'workspaceField').map((f) => ({ hub_id: f.hubId, key: f.key, label: f.label, archived: f.archived })));
  await insertAll(trx, 'workspaces', only(records, 'workspace').map((w) => ({ id: w.id, hub_id: w.hubId, name: w.name, timezone: w.timezone, fields: JSON.stringify(w.fields) })));
  await insertAll(trx, 'playbooks', only(records, 'playbook').map((p) => ({
    id: p.id, hub_id: p.hubId, name: p.name, solutions: p.solutions, variants: JSON.stringify(p.variants), questions: JSON.stringify(p.questions),
  })));
  await insertAll(trx, 'ad_accounts', only(records, 'adAccount').map((a) => ({
    id: a.id, hub_id: a.hubId, platform: a.platform, name: a.name, sync_state: a.syncState, last_synced_at: a.lastSyncedAt,
  })));

  const users = only(records, 'user');
  // scrypt runs on libuv's thread pool, so hashing in parallel uses every pool thread.
  const hashes = await Promise.all(users.map((u) => hashPassword(u.password)));
  await insertAll(trx, 'users', users.map((u, i) => ({
    id: u.id, account_id: u.accountId!, email: u.email, password_hash: hashes[i]!, firstname: u.firstname, lastname: u.lastname, is_staff: u.staff,
  })));
  await insertAll(trx, 'memberships', users.map((u) => ({ user_id: u.id, hub_id: u.hubId, role: u.role, workspace_id: u.workspaceId })));

  await insertAll(trx, 'opt_ins', only(records, 'optIn').map((o) => ({
    id: o.id, hub_id: o.hubId!, playbook_id: o.playbookId, workspace_id: o.workspaceId, status: o.status,
    opted_in_at: o.optedInAt, updated_at: o.updatedAt, budget_cents: o.budgetCents, budget_type: o.budgetType,
    variant: JSON.stringify(o.variant), responses: JSON.stringify(o.responses),
  })));

  // Lines for the same (account, workspace, date) add up. Sum them here first: one INSERT may not
  // touch the same row twice, even through ON CONFLICT. Sums are BigInt: many safe integers can
  // add up to an unsafe one.
  const spend = new Map<string, { hub_id: string; ad_account_id: string; workspace_id: string | null; date: string; cents: bigint }>();
  for (const s of only(records, 'spend')) {
    const key = `${s.adAccountId}\u0000${s.date}\u0000${s.workspaceId ?? ''}`;
    const line = spend.get(key);
    if (line) line.cents += BigInt(s.spendCents);
    else spend.set(key, { hub_id: s.hubId!, ad_account_id: s.adAccountId, workspace_id: s.workspaceId, date: s.date, cents: BigInt(s.spendCents) });
  }
  const spendRows = [...spend.values()].map(({ cents, ...row }) => ({ ...row, spend_cents: cents.toString() }));
  const perStatement = Math.floor(MAX_PARAMS_PER_STATEMENT / 5);
  for (let i = 0; i < spendRows.length; i += perStatement) {
    await trx
      .insertInto('spend')
      .values(spendRows.slice(i, i + perStatement))
      .onConflict((oc) => oc.expression(sql`ad_account_id, date, (coalesce(workspace_id, ''))`).doUpdateSet({ spend_cents: sql`spend.spend_cents + excluded.spend_cents` }))
      .execute();
  }
  await writeContent(trx, records);
}

/** Rows of `table` keyed by `key`: a line replaces the stored figures for its key. */
async function upsertAll<T extends 'organic_metrics' | 'paid_metrics' | 'hub_cpm'>(trx: Kysely<Database>, table: T, key: string[], rows: Insertable<Database[T]>[]): Promise<void> {
  if (rows.length === 0) return;
  const columns = Object.keys(rows[0]!);
  const perStatement = Math.max(1, Math.floor(MAX_PARAMS_PER_STATEMENT / columns.length));
  const replace = Object.fromEntries(columns.filter((c) => !key.includes(c)).map((c) => [c, sql.ref(`excluded.${c}`)]));
  for (let i = 0; i < rows.length; i += perStatement) {
    await trx.insertInto(table).values(rows.slice(i, i + perStatement) as never).onConflict((oc) => oc.columns(key as never).doUpdateSet(replace as never)).execute();
  }
}

async function writeContent(trx: Kysely<Database>, records: ImportRecord[]): Promise<void> {
  await insertAll(trx, 'social_channels', only(records, 'channel').map((c) => ({
    id: c.id, hub_id: c.hubId!, workspace_id: c.workspaceId, platform: c.platform, name: c.name, handle: c.handle, connected: c.connected,
  })));
  await insertAll(trx, 'media_assets', only(records, 'media').map((m) => mediaRow({
    ...m, hubId: m.hubId!, kind: kindOf(m.contentType), storageKey: null, createdBy: null, createdAt: m.createdAt ?? undefined,
  })));

  const posts = only(records, 'post').map((p) => {
    const rows = postRows({ ...p, hubId: p.hubId!, createdBy: null, createdAt: p.createdAt ?? undefined });
    // Imported outcomes: every channel of a published post has it; every channel of a failed one failed.
    const deliveries = rows.deliveries.map((d) =>
      p.status === 'published' ? { ...d, status: 'published' as const, external_id: p.externalIds[d.channel_id] ?? 'imported', delivered_at: p.publishedAt }
      : p.status === 'failed' ? { ...d, status: 'failed' as const, error: p.error, delivered_at: p.scheduledAt }
      : { ...d, status: 'pending' as const });
    return { ...rows, deliveries };
  });
  await insertAll(trx, 'posts', posts.map((p) => p.post));
  await insertAll(trx, 'post_deliveries', posts.flatMap((p) => p.deliveries));
  await insertAll(trx, 'post_media', posts.flatMap((p) => p.media));

  await upsertAll(trx, 'organic_metrics', ['hub_id', 'workspace_id', 'date', 'platform'], only(records, 'organicMetrics').map((m) => ({
    hub_id: m.hubId!, workspace_id: m.workspaceId, date: m.date, platform: m.platform,
    posts: m.posts, impressions: m.impressions, reach: m.reach, likes: m.likes, comments: m.comments, shares: m.shares, saves: m.saves,
  })));
  await upsertAll(trx, 'paid_metrics', ['hub_id', 'workspace_id', 'date', 'platform', 'campaign_id'], only(records, 'paidMetrics').map((m) => ({
    hub_id: m.hubId!, workspace_id: m.workspaceId, date: m.date, platform: m.platform, campaign_id: m.campaignId, campaign_name: m.campaignName,
    spend_cents: m.spendCents, impressions: m.impressions, clicks: m.clicks, results: m.results,
  })));
  await upsertAll(trx, 'hub_cpm', ['hub_id', 'platform'], only(records, 'hubCpm').map((c) => ({ hub_id: c.hubId, platform: c.platform, cpm_cents: c.cpmCents })));
  await saveReviewDays(trx, only(records, 'reviewDay').map((d) => ({ hubId: d.hubId!, workspaceId: d.workspaceId, date: d.date, newReviews: d.newReviews, responded: d.responded })));
}

// ---------------------------------------------------------------------------------------------

function counts(records: ImportRecord[]): ImportCounts {
  const imported = Object.fromEntries(IMPORT_TYPES.map((t) => [t, 0])) as ImportCounts;
  for (const record of records) imported[record.type] += 1;
  return imported;
}

async function apply(trx: Kysely<Database>, checker: Checker): Promise<ImportResult> {
  const issues = [...checker.issues, ...(await checkReferences(trx, checker))].sort((a, b) => a.line - b.line);
  if (issues.length > 0) throw new ImportError(issues);
  const records = checker.items as ImportRecord[];
  await write(trx, records);
  return { imported: counts(records) };
}

/**
 * Imports objects shaped like NDJSON lines (object i is "line" i + 1) inside a transaction the
 * caller holds, so the import commits or rolls back with the caller's other work.
 */
export async function importObjects(trx: Kysely<Database>, objects: Iterable<unknown>): Promise<ImportResult> {
  const checker = new Checker();
  let line = 0;
  for (const value of objects) checker.addValue(value, ++line);
  return apply(trx, checker);
}

/**
 * Imports NDJSON text (a whole string, or its lines from a stream) all-or-nothing in one
 * transaction. Blank lines are skipped but counted, so line numbers match an editor's.
 * Throws ImportError listing the first issues by line; then nothing was written.
 */
export async function importNdjson(db: Db, input: string | Iterable<string> | AsyncIterable<string>): Promise<ImportResult> {
  const checker = new Checker();
  let line = 0;
  for await (const text of typeof input === 'string' ? input.split('\n') : input) {
    line += 1;
    checker.addText(line === 1 ? text.replace(/^\uFEFF/, '') : text, line);
  }
  try {
    return await db.kysely.transaction().execute((trx) => apply(trx, checker));
  } catch (error) {
    const e = error as { code?: string; constraint?: string };
    // Another writer created the same ids (or removed a referenced row) while this import ran.
    if (e.code === '23505' || e.code === '23503') {
      throw new DomainError('conflict', `the import conflicts with data written while it ran (${e.constraint ?? 'constraint'}); nothing was imported, run it again`);
    }
    throw error;
  }
}
