import { Type } from 'typebox';
import { scopeOf } from '../../domain/scope.ts';
import { findHubs, findWorkspaces } from '../../domain/workspaces/workspace.repository.ts';
import { decodeCursor, isValidCursor, pageOf } from '../../platform/cursor.ts';
import { notFound } from '../../platform/errors.ts';
import { defineFormat, defineOperation } from '../operation.ts';
import { SCOPE } from '../shared/oauth.ts';
import type { MainContext } from './context.ts';

// Who am I, and where: whoami, workspaces, hubs.

defineFormat('workspace-cursor', (text) => isValidCursor(text, 'workspaces', 1), 'is not a cursor issued by this API; pass nextCursor from the previous page unchanged');
defineFormat('hub-cursor', (text) => isValidCursor(text, 'hubs', 1), 'is not a cursor issued by this API; pass nextCursor from the previous page unchanged');

export const Limit = Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100, description: 'Records per page, 1 to 500.' }));
const Cursor = (format: string) => Type.Optional(Type.String({ format, maxLength: 1000, description: 'The nextCursor of the previous page, unchanged.' }));
const NextCursor = Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null on the last page.' });
const Id = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' });

const Named = Type.Object({ _id: Type.String(), name: Type.String() });
const Workspace = Type.Object({
  _id: Type.String({ description: 'Workspace (location) id.' }),
  hubId: Type.String(),
  name: Type.String(),
  timezone: Type.String({ description: 'IANA time zone; posts publish in it.' }),
  fields: Type.Object({}, { additionalProperties: Type.Union([Type.String(), Type.Number(), Type.Boolean()]), description: "The hub's custom fields (archived ones omitted)." }),
  createdAt: Type.String({ format: 'date-time' }),
});
const Hub = Type.Object({ _id: Type.String(), name: Type.String(), suspended: Type.Boolean(), createdAt: Type.String({ format: 'date-time' }) });

export const identityOperations = [
  defineOperation({
    name: 'whoami',
    method: 'GET',
    path: '/whoami',
    title: 'Who am I',
    description: 'The signed-in user, the hub and workspace this token acts in (workspace is null when a hub admin acts across the whole hub), the granted scope and the OAuth client. Use it to confirm a token works.',
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
    method: 'GET',
    path: '/workspaces',
    title: 'List workspaces',
    description: "The workspaces (locations) of the caller's hub, by id. A token bound to one workspace sees only that one.",
    input: Type.Object({ limit: Limit, cursor: Cursor('workspace-cursor') }),
    output: Type.Object({ data: Type.Array(Workspace), nextCursor: NextCursor }),
    handler: async (ctx: MainContext, input) => {
      const limit = input.limit ?? 100;
      const afterId = input.cursor === undefined ? undefined : decodeCursor(input.cursor, 'workspaces', 1)[0];
      const rows = await findWorkspaces(ctx.db, scopeOf(ctx.caller), { afterId, limit });
      return pageOf(rows, limit, 'workspaces', (w) => [w._id]);
    },
  }),
  defineOperation({
    name: 'get_workspace',
    method: 'GET',
    path: '/workspaces/:id',
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
    method: 'GET',
    path: '/hubs',
    title: 'List hubs',
    description: "All hubs (brands) of the caller's account, by id. The token acts in one of them (see whoami).",
    input: Type.Object({ limit: Limit, cursor: Cursor('hub-cursor') }),
    output: Type.Object({ data: Type.Array(Hub), nextCursor: NextCursor }),
    handler: async (ctx: MainContext, input) => {
      const limit = input.limit ?? 100;
      const afterId = input.cursor === undefined ? undefined : decodeCursor(input.cursor, 'hubs', 1)[0];
      return pageOf(await findHubs(ctx.db, ctx.caller.account.id, { afterId, limit }), limit, 'hubs', (h) => [h._id]);
    },
  }),
];
