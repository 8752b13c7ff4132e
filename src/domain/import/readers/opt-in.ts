// Reads an `optIn` line: a workspace taking part in a playbook, with its budget and answers.

import { BUDGET_TYPES } from '../../opt-ins/budget-types.ts';
import { OPT_IN_STATUSES } from '../../opt-ins/opt-in.ts';
import { isObject, shown, type FieldReader } from '../field-reader.ts';
import type { OptInRecord } from '../records.ts';

type Response = OptInRecord['responses'][number];

function isResponse(item: unknown): item is Response {
  return isObject(item) && typeof item.question === 'string' && typeof item.answer === 'string' && Object.keys(item).length === 2;
}

function readResponses(r: FieldReader): Response[] {
  const raw = r.raw('responses');
  const responses: Response[] = [];
  if (raw !== undefined && !Array.isArray(raw)) {
    r.fail('responses', `must be an array of {"question","answer"} objects; got ${shown(raw)}`);
  } else if (raw) {
    raw.forEach((item: unknown, i) => {
      if (isResponse(item)) responses.push({ question: item.question, answer: item.answer });
      else r.fail(`responses[${i}]`, `must be {"question": string, "answer": string}; got ${shown(item)}`);
    });
  }
  return responses;
}

export function readOptIn(r: FieldReader): OptInRecord {
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
  const responses = readResponses(r);
  return {
    type: 'optIn',
    line: r.line,
    id,
    playbookId,
    workspaceId,
    status,
    optedInAt,
    updatedAt,
    budgetCents,
    budgetType,
    variant,
    responses,
  };
}
