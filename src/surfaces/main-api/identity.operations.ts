import { Type } from 'typebox';
import { scopeOf } from '../../domain/scope.ts';
import { findHubs, findWorkspaces } from '../../domain/workspaces/workspace.service.ts';
import { idCursor, toIdPage } from '../../domain/keyset.ts';
import { notFound } from '../../platform/errors.ts';
import { defineOperation } from '../operation.ts';
import { SCOPE } from '../shared/oauth.ts';
import { cursorFormat, limitOf, NEXT_CURSOR_SHORT, NOT_OUR_CURSOR, Page, pageParameters } from '../shared/paging.ts';
import type { MainContext } from './context.ts';

// Who am I, and where: whoami, workspaces, hubs.

const workspaceCursor = cursorFormat('workspace-cursor', idCursor('workspaces'), NOT_OUR_CURSOR);
const hubCursor = cursorFormat('hub-cursor', idCursor('hubs'), NOT_OUR_CURSOR);
const Id = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' });

const Named = Type.Object({ _id: Type.String(), name: Type.String() });
const Workspace = Type.Object({
  _id: Type.String({ description: 'Workspace (location) id.' }),
  hubId: Type.String(),
  name: Type.String(),
  timezone: Type.String({ description: 'IANA time zone; posts publish in it.' }),
  fields: Type.Object(
    {},
    {
      additionalProperties: Type.Union([Type.String(), Type.Number(), Type.Boolean()]),
      description: "The hub's custom fields (archived ones omitted).",
    },
  ),
  createdAt: Type.String({ format: 'date-time' }),
});
const Hub = Type.Object({
  _id: Type.String(),
  name: Type.String(),
  suspended: Type.Boolean(),
  createdAt: Type.String({ format: 'date-time' }),
});

export const identityOperations = [
  defineOperation({
    name: 'whoami',
    effect: 'read',
    rest: { path: '/whoami' },
    title: 'Who am I',
    description:
      'The signed-in user, the hub and workspace this token acts in (workspace is null when a hub admin acts across the whole hub), the granted scope and the OAuth client. Use it to confirm a token works.',
    input: Type.Object({}),
    output: Type.Object({
      user: Type.Object({ _id: Type.String(), email: Type.String(), firstname: Type.String(), lastname: Type.String() }),
      workspace: Type.Union([Named, Type.Null()]),
      hub: Named,
      scope: Type.String(),
      clientId: Type.String(),
    }),
    handler: async (ctx: MainContext) => {
      const { user, hub, workspace, clientId } = ctx.caller;
      return {
        user: { _id: user.id, email: user.email, firstname: user.firstname, lastname: user.lastname },
        workspace: workspace ? { _id: workspace.id, name: workspace.name } : null,
        hub: { _id: hub.id, name: hub.name },
        scope: SCOPE,
        clientId,
      };
    },
  }),
  defineOperation({
    name: 'list_workspaces',
    effect: 'read',
    rest: { path: '/workspaces' },
    title: 'List workspaces',
    description: "The workspaces (locations) of the caller's hub, by id. A token bound to one workspace sees only that one.",
    input: Type.Object(pageParameters('Records', workspaceCursor, { filtered: false })),
    output: Page(Workspace, NEXT_CURSOR_SHORT),
    handler: async (ctx: MainContext, input) => {
      const limit = limitOf(input);
      const rows = await findWorkspaces(ctx.db, scopeOf(ctx.caller), { afterId: input.cursor.after, limit });
      return toIdPage(input.cursor, rows, limit, (w) => w._id);
    },
  }),
  defineOperation({
    name: 'get_workspace',
    effect: 'read',
    rest: { path: '/workspaces/:id' },
    title: 'Get a workspace',
    description: 'One workspace of the caller’s hub. 404 when it does not exist or is outside what the token may see.',
    input: Type.Object({ id: Id }, { required: ['id'] }),
    output: Workspace,
    handler: async (ctx: MainContext, input) => {
      const [workspace] = await findWorkspaces(ctx.db, scopeOf(ctx.caller), { id: input.id, limit: 1 });
      if (!workspace) throw notFound(`No workspace ${input.id}.`);
      return workspace;
    },
  }),
  defineOperation({
    name: 'list_hubs',
    effect: 'read',
    rest: { path: '/hubs' },
    title: 'List hubs',
    description: "All hubs (brands) of the caller's account, by id. The token acts in one of them (see whoami).",
    input: Type.Object(pageParameters('Records', hubCursor, { filtered: false })),
    output: Page(Hub, NEXT_CURSOR_SHORT),
    handler: async (ctx: MainContext, input) => {
      const limit = limitOf(input);
      return toIdPage(
        input.cursor,
        await findHubs(ctx.db, ctx.caller.account.id, { afterId: input.cursor.after, limit }),
        limit,
        (h) => h._id,
      );
    },
  }),
];
