// The import's record types: what each NDJSON line becomes once its fields are read.

import type { AdPlatform, FieldValue, MediaContentType, SocialPlatform } from '../../db/schema.ts';
import type { BudgetType } from '../opt-ins/budget-types.ts';
import type { OptInStatus, Solution } from '../opt-ins/opt-in.ts';
import type { Question } from '../playbooks/playbook.ts';
import type { RatingCounts } from '../reviews/review.ts';
import type { AdAccountSyncState } from '../spend/spend.ts';
import type { Plan, Role } from '../tenancy/tenancy.ts';

/** Every `type` a line may have, in the order the docs and the result list them. */
export const IMPORT_TYPES = [
  'account',
  'hub',
  'workspaceField',
  'workspace',
  'playbook',
  'optIn',
  'adAccount',
  'spend',
  'user',
  'channel',
  'media',
  'post',
  'organicMetrics',
  'paidMetrics',
  'reviewDay',
  'hubCpm',
] as const;
export type ImportType = (typeof IMPORT_TYPES)[number];

/** Types whose lines define a row others refer to by id: how an issue names it, and its generated ids' prefix. */
export const ID_KINDS = {
  account: { label: 'account', idPrefix: 'acc' },
  hub: { label: 'hub', idPrefix: 'hub' },
  workspace: { label: 'workspace', idPrefix: 'ws' },
  playbook: { label: 'playbook', idPrefix: 'pb' },
  optIn: { label: 'opt-in', idPrefix: 'oi' },
  adAccount: { label: 'ad account', idPrefix: 'aa' },
  user: { label: 'user', idPrefix: 'usr' },
  channel: { label: 'channel', idPrefix: 'chn' },
  media: { label: 'media asset', idPrefix: 'med' },
  post: { label: 'post', idPrefix: 'post' },
} as const satisfies Partial<Record<ImportType, { label: string; idPrefix: string }>>;
export type Kind = keyof typeof ID_KINDS;

export function isKind(type: string): type is Kind {
  return Object.hasOwn(ID_KINDS, type);
}

/** Post statuses an import may set; `publishing` only exists while the publisher works. */
export const IMPORT_POST_STATUSES = ['draft', 'scheduled', 'published', 'failed'] as const;

export interface ImportIssue {
  line: number;
  /** `type.field` (e.g. `optIn.status`); absent when the line as a whole is bad. */
  field?: string;
  message: string;
}

export type ImportCounts = Record<ImportType, number>;
/** What an import's spend did, per (ad account, workspace, date) key of the file. */
export interface SpendEffect {
  /** Keys with no stored spend before. */
  new: number;
  /** Keys whose stored spend was replaced (or, with `add`, added to) and so changed. */
  changed: number;
  /** Keys whose stored spend already was what the file says: not rewritten. */
  unchanged: number;
}
export interface ImportResult {
  /** The file's lines per type. */
  imported: ImportCounts;
  /** Of those, per type, the lines that wrote nothing: their key was stored with the same values (spend: their key's sum). */
  unchanged: ImportCounts;
  spend: SpendEffect;
}

// Ids are final: generated when the line had none. Fields the reference checks resolve from the
// rows a line refers to (a hub, an account) are optional until then.

export interface AccountRecord {
  type: 'account';
  line: number;
  id: string;
  name: string;
  plan: Plan;
  apiAccess: boolean;
}
export interface HubRecord {
  type: 'hub';
  line: number;
  id: string;
  accountId: string;
  name: string;
  suspended: boolean;
}
export interface FieldRecord {
  type: 'workspaceField';
  line: number;
  hubId: string;
  key: string;
  label: string;
  archived: boolean;
}
export interface WorkspaceRecord {
  type: 'workspace';
  line: number;
  id: string;
  hubId: string;
  name: string;
  timezone: string;
  fields: Record<string, FieldValue>;
}
export interface PlaybookRecord {
  type: 'playbook';
  line: number;
  id: string;
  hubId: string;
  name: string;
  solutions: Solution[];
  variants: Record<string, string[]>;
  questions: Question[];
}
export interface OptInRecord {
  type: 'optIn';
  line: number;
  id: string;
  playbookId: string;
  workspaceId: string;
  status: OptInStatus;
  optedInAt: string;
  updatedAt: string;
  budgetCents: number | null;
  budgetType: BudgetType | null;
  variant: Record<string, string>;
  responses: { question: string; answer: string }[];
  /** The playbook's hub. */
  hubId?: string;
}
export interface AdAccountRecord {
  type: 'adAccount';
  line: number;
  id: string;
  hubId: string;
  platform: AdPlatform;
  name: string;
  syncState: AdAccountSyncState;
  lastSyncedAt: string | null;
}
export interface SpendRecord {
  type: 'spend';
  line: number;
  adAccountId: string;
  workspaceId: string | null;
  date: string;
  spendCents: number;
  hubId?: string;
}
export interface UserRecord {
  type: 'user';
  line: number;
  id: string;
  email: string;
  password: string;
  firstname: string;
  lastname: string;
  hubId: string;
  role: Role;
  workspaceId: string | null;
  staff: boolean;
  /** The line gave the id (a user's natural key is the email: a generated id is not compared). */
  idGiven: boolean;
  /** The hub's account. */
  accountId?: string;
}
/** A line that belongs to a workspace; its hub is the workspace's. */
interface InWorkspace {
  line: number;
  workspaceId: string;
  hubId?: string;
}
export interface ChannelRecord extends InWorkspace {
  type: 'channel';
  id: string;
  platform: SocialPlatform;
  name: string;
  handle: string | null;
  connected: boolean;
}
export interface MediaRecord extends InWorkspace {
  type: 'media';
  id: string;
  contentType: MediaContentType;
  filename: string;
  byteSize: number;
  width: number;
  height: number;
  durationMs: number | null;
  sha256: Buffer;
  createdAt: string | null;
}
export interface PostRecord extends InWorkspace {
  type: 'post';
  id: string;
  text: string;
  status: (typeof IMPORT_POST_STATUSES)[number];
  channelIds: string[];
  mediaIds: string[];
  scheduledAt: string | null;
  publishedAt: string | null;
  error: string | null;
  externalIds: Record<string, string>;
  createdAt: string | null;
}
export interface OrganicRecord extends InWorkspace {
  type: 'organicMetrics';
  date: string;
  platform: SocialPlatform;
  posts: number;
  impressions: number;
  reach: number;
  likes: number;
  comments: number;
  shares: number;
  saves: number;
}
export interface PaidRecord extends InWorkspace {
  type: 'paidMetrics';
  date: string;
  platform: AdPlatform;
  campaignId: string;
  campaignName: string;
  spendCents: number;
  impressions: number;
  clicks: number;
  results: number;
}
export interface ReviewDayRecord extends InWorkspace {
  type: 'reviewDay';
  date: string;
  newReviews: RatingCounts;
  responded: number;
}
export interface HubCpmRecord {
  type: 'hubCpm';
  line: number;
  hubId: string;
  platform: SocialPlatform;
  cpmCents: number;
}

export type ImportRecord =
  | AccountRecord
  | HubRecord
  | FieldRecord
  | WorkspaceRecord
  | PlaybookRecord
  | OptInRecord
  | AdAccountRecord
  | SpendRecord
  | UserRecord
  | ChannelRecord
  | MediaRecord
  | PostRecord
  | OrganicRecord
  | PaidRecord
  | ReviewDayRecord
  | HubCpmRecord;
export type RecordOf<T extends ImportType> = Extract<ImportRecord, { type: T }>;

/** What is left of a line whose fields failed: enough to register its id or field key. */
export interface Broken {
  type: 'broken';
  line: number;
  kind?: Kind;
  id?: string;
  hubId?: string;
  key?: string;
}

/** For the `default` of a switch over record types: the compiler names a type without a case. */
export function unhandled(record: never): never {
  throw new Error(`no case for the record ${JSON.stringify(record)}`);
}
