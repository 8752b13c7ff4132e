// `hubops accounts list`, `hubs list`, `users list`, `workspaces list|create` and
// `users reset-password`: what an operator needs to find ids and fix access without SQL. The rules
// are the tenancy and workspace services'; lists print a table, or with --json one array.
import { allWorkspaces } from '../domain/workspaces/workspace.service.ts';
import {
  createWorkspace,
  generatePassword,
  getHub,
  listAccounts,
  listHubs,
  listUsers,
  resetPassword,
} from '../domain/tenancy/tenancy.service.ts';
import { readAll, required, table, UsageError, type Command } from './command.ts';

const date = (at: Date | string) => (typeof at === 'string' ? at : at.toISOString()).slice(0, 10);
const orNone = (rows: string[][], header: string[], none: string) => (rows.length === 0 ? none : table(header, rows));

export const accountsList: Command = {
  name: 'accounts list',
  args: '',
  summary: 'list the accounts with their plan, API access and number of hubs',
  json: '`[{"id","name","plan","apiAccess","hubs","createdAt"}]`, by id',
  options: {},
  positionals: [],
  prepare:
    async () =>
    async ({ db }) => {
      const accounts = await listAccounts(db);
      return {
        json: accounts.map((a) => ({ ...a, createdAt: a.createdAt.toISOString() })),
        human: orNone(
          accounts.map((a) => [a.id, a.name, a.plan, a.apiAccess ? 'on' : 'off', String(a.hubs), date(a.createdAt)]),
          ['ID', 'NAME', 'PLAN', 'API', 'HUBS', 'CREATED'],
          'No accounts yet: hubops accounts create --name N',
        ),
      };
    },
};

export const hubsList: Command = {
  name: 'hubs list',
  args: '[--account A]',
  summary: 'list the hubs (of every account, or of one) with their number of workspaces and whether they are suspended',
  json: '`[{"id","accountId","name","suspended","workspaces","createdAt"}]`, by id',
  options: { account: { type: 'string' } },
  optionHelp: { account: 'only the hubs of this account' },
  positionals: [],
  prepare: async (values) => {
    const accountId = typeof values.account === 'string' ? values.account : undefined;
    return async ({ db }) => {
      const hubs = await listHubs(db, accountId);
      return {
        json: hubs.map((h) => ({ ...h, createdAt: h.createdAt.toISOString() })),
        human: orNone(
          hubs.map((h) => [h.id, h.accountId, h.name, String(h.workspaces), h.suspended ? 'suspended' : 'active', date(h.createdAt)]),
          ['ID', 'ACCOUNT', 'NAME', 'WORKSPACES', 'ACCESS', 'CREATED'],
          accountId ? `Account ${accountId} has no hubs yet.` : 'No hubs yet: hubops hubs create --account A --name N',
        ),
      };
    };
  },
};

export const usersList: Command = {
  name: 'users list',
  args: '[--hub H]',
  summary: 'list the users (of every hub, or with a role in one) with their roles; never a password',
  json: '`[{"id","accountId","email","firstname","lastname","staff","createdAt","memberships":[{"hubId","role","workspaceId"}]}]`, by id',
  options: { hub: { type: 'string' } },
  optionHelp: { hub: 'only the users with a role in this hub' },
  positionals: [],
  prepare: async (values) => {
    const hubId = typeof values.hub === 'string' ? values.hub : undefined;
    return async ({ db }) => {
      const users = await listUsers(db, { hubId });
      const roles = (u: (typeof users)[number]) =>
        u.memberships.map((m) => `${m.role} of ${m.hubId}${m.workspaceId ? ` (${m.workspaceId})` : ''}`).join(', ');
      return {
        json: users.map((u) => ({ ...u, createdAt: u.createdAt.toISOString() })),
        human: orNone(
          users.map((u) => [u.id, u.email, `${u.firstname} ${u.lastname}`, roles(u) || '(no hub)', u.staff ? 'staff' : '']),
          ['ID', 'EMAIL', 'NAME', 'ROLES', 'STAFF'],
          hubId ? `No user has a role in hub ${hubId}.` : 'No users yet: hubops users create …',
        ),
      };
    };
  },
};

export const workspacesList: Command = {
  name: 'workspaces list',
  args: '--hub H',
  summary: "list a hub's workspaces (locations) with their time zone and field values",
  json: '`[{"id","hubId","name","timezone","fields","createdAt"}]`, by id; `fields`: the values of the hub\'s fields that are not archived',
  options: { hub: { type: 'string' } },
  positionals: [],
  prepare: async (values) => {
    const hubId = required(values, 'hub');
    return async ({ db }) => {
      await getHub(db, hubId);
      const workspaces = await allWorkspaces(db, hubId);
      return {
        json: workspaces.map(({ _id, ...w }) => ({ id: _id, ...w })),
        human: orNone(
          workspaces.map((w) => [w._id, w.name, w.timezone, String(Object.keys(w.fields).length), date(w.createdAt)]),
          ['ID', 'NAME', 'TIMEZONE', 'FIELDS', 'CREATED'],
          `Hub ${hubId} has no workspaces yet: hubops workspaces create --hub ${hubId} --name N`,
        ),
      };
    };
  },
};

export const workspacesCreate: Command = {
  name: 'workspaces create',
  args: '--hub H --name N [--id ID] [--timezone ZONE]',
  summary: 'create a workspace (a location) in a hub; field values and many at once: hubops import',
  json: '`{"id","hubId","name","timezone"}`',
  options: { hub: { type: 'string' }, name: { type: 'string' }, id: { type: 'string' }, timezone: { type: 'string' } },
  positionals: [],
  prepare: async (values) => {
    const input = {
      hubId: required(values, 'hub'),
      name: required(values, 'name'),
      id: typeof values.id === 'string' ? values.id : undefined,
      timezone: typeof values.timezone === 'string' ? values.timezone : undefined,
    };
    return async ({ db }) => {
      const workspace = await createWorkspace(db, input);
      return {
        json: workspace,
        human: `Created workspace ${workspace.id} ${JSON.stringify(workspace.name)} in hub ${workspace.hubId} (time zone ${workspace.timezone}).`,
      };
    };
  },
};

export const usersResetPassword: Command = {
  name: 'users reset-password',
  args: '--email E [--password -]',
  summary:
    'give a user a new password, generated and printed once (or read from stdin with --password -), and end their web admin sessions',
  json: '`{"id","email","password","sessionsEnded"}`; `password` only when generated, the only time it is shown',
  options: { email: { type: 'string' }, password: { type: 'string' } },
  optionHelp: {
    password:
      '- reads the new password (at least 8 characters) from stdin; without it hubops generates one. Never on the command line, where shell history and ps keep it',
  },
  positionals: [],
  prepare: async (values, _positionals, io) => {
    const email = required(values, 'email');
    if (values.password !== undefined && values.password !== '-')
      throw new UsageError(
        '--password takes only - (the password on stdin), never the password itself: shell history and ps would keep it',
      );
    const generated = values.password === undefined;
    const password = generated ? generatePassword() : (await readAll(io.stdin)).replace(/\r?\n$/, '');
    return async ({ db }) => {
      const user = await resetPassword(db, { email, password });
      const sessions = user.sessionsEnded === 1 ? '1 web admin session' : `${user.sessionsEnded} web admin sessions`;
      return {
        json: { id: user.id, email: user.email, ...(generated ? { password } : {}), sessionsEnded: user.sessionsEnded },
        human: [
          `Password of ${user.email} (${user.id}) reset; ${sessions} ended.`,
          ...(generated ? [`  new password: ${password}`, 'It is shown only now; hand it over securely (hubops keeps only a hash).'] : []),
        ].join('\n'),
      };
    };
  },
};
