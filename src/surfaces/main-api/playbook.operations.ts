import { Type } from 'typebox';
import { QUESTION_TYPES } from '../../domain/playbooks/playbook.ts';
import { idCursor, toIdPage } from '../../domain/keyset.ts';
import { SOLUTIONS } from '../../domain/opt-ins/opt-in.ts';
import { findPlaybooks } from '../../domain/playbooks/playbook.service.ts';
import { defineOperation } from '../operation.ts';
import { cursorFormat, limitOf, Page, pageParameters } from '../shared/paging.ts';
import type { MainContext } from './context.ts';

// The hub's playbooks (Paid): the catalogue workspaces opt into. Hub-level records, so every
// token of the hub sees them, workspace-bound or not; the opt-ins themselves are per workspace.

const playbookCursor = cursorFormat('playbooks-cursor', idCursor('playbooks'));

const PlaybookSchema = Type.Object({
  _id: Type.String({ description: 'Playbook id (the playbook.id of opt-in rows); group and filter by it, never by name.' }),
  name: Type.String({ description: 'Display name exactly as stored: not unique, may carry trailing spaces.' }),
  solutions: Type.Array(Type.Enum([...SOLUTIONS]), {
    description: 'Ad solutions the playbook runs on; usually one, several for a multi-platform playbook.',
  }),
  variants: Type.Object(
    {},
    {
      additionalProperties: Type.Array(Type.String()),
      description:
        'Variant dimensions and their options, e.g. {"audience": ["Families", "Seniors"]}; an opt-in picks one option per dimension. `{}` when the playbook has none.',
    },
  ),
  questions: Type.Array(
    Type.Object({
      question: Type.String(),
      type: Type.Enum([...QUESTION_TYPES]),
      required: Type.Boolean(),
      options: Type.Optional(Type.Array(Type.String(), { description: 'The choices of a single_select or multi_select question.' })),
    }),
    { description: 'Questions a workspace answers when it opts in (the responses of opt-in rows).' },
  ),
  createdAt: Type.String({ format: 'date-time' }),
});

export const playbookOperations = [
  defineOperation({
    name: 'list_playbooks',
    effect: 'read',
    rest: { path: '/playbooks' },
    title: 'List playbooks',
    description: [
      "The playbooks of the caller's hub — the paid campaigns (Meta, Google Ads, ChatGPT ads, organic social) that workspaces opt into — with their solutions, variant options and opt-in questions, by _id.",
      'Every token of the hub sees them, including one bound to a workspace. Page with `cursor` until `nextCursor` is null.',
    ].join(' '),
    input: Type.Object({
      solution: Type.Optional(Type.Enum([...SOLUTIONS], { description: 'Only playbooks that run on this solution.' })),
      ...pageParameters('Playbooks', playbookCursor),
    }),
    output: Page(PlaybookSchema),
    handler: async (ctx: MainContext, input) => {
      const limit = limitOf(input);
      const rows = await findPlaybooks(ctx.db, ctx.caller.hub.id, { afterId: input.cursor.after, limit, solution: input.solution });
      return toIdPage(input.cursor, rows, limit, (p) => p._id);
    },
  }),
];
