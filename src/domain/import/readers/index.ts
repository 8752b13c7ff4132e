// The reader of each record type: the one place a new type's reader is registered.

import type { FieldReader } from '../field-reader.ts';
import type { ImportType, RecordOf } from '../records.ts';
import { readAccount } from './account.ts';
import { readAdAccount } from './ad-account.ts';
import { readChannel } from './channel.ts';
import { readHubCpm } from './hub-cpm.ts';
import { readHub } from './hub.ts';
import { readMedia } from './media.ts';
import { readOptIn } from './opt-in.ts';
import { readOrganicMetrics } from './organic-metrics.ts';
import { readPaidMetrics } from './paid-metrics.ts';
import { readPlaybook } from './playbook.ts';
import { readPost } from './post.ts';
import { readReviewDay } from './review-day.ts';
import { readSpend } from './spend.ts';
import { readUser } from './user.ts';
import { readWorkspaceField } from './workspace-field.ts';
import { readWorkspace } from './workspace.ts';

export const READERS: { [T in ImportType]: (r: FieldReader) => RecordOf<T> } = {
  account: readAccount,
  hub: readHub,
  workspaceField: readWorkspaceField,
  workspace: readWorkspace,
  playbook: readPlaybook,
  optIn: readOptIn,
  adAccount: readAdAccount,
  spend: readSpend,
  user: readUser,
  channel: readChannel,
  media: readMedia,
  post: readPost,
  organicMetrics: readOrganicMetrics,
  paidMetrics: readPaidMetrics,
  reviewDay: readReviewDay,
  hubCpm: readHubCpm,
};
