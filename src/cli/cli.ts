import { open } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.ts';
import { isDatabaseUnavailable } from '../db/database.ts';
import { openDatabase } from '../db/open.ts';
import { EmbeddedDatabaseError } from '../db/embedded.ts';
import {
  createEmbedKeyFromPublicKey,
  createKey,
  listKeys,
  revokeKey,
  rollKey,
  type KeySummary,
} from '../domain/api-keys/api-key.service.ts';
import { KEY_SCOPES, keyState, type KeyScope } from '../domain/api-keys/api-key.ts';
import { seedDemo } from '../domain/demo/demo.service.ts';
import { byteLines, IMPORT_TYPES, importNdjson, type ImportCounts, type ImportResult } from '../domain/import/import.service.ts';
import { addUserToHub, createAccount, createHub, createUser, getHub, setHubSuspended } from '../domain/tenancy/tenancy.service.ts';
import { PLANS, ROLES } from '../domain/tenancy/tenancy.ts';
import { DomainError } from '../platform/errors.ts';
import { VERSION } from '../platform/version.ts';
import { KEY_LIFETIME_DAYS, KEY_ROLL_GRACE_DEFAULT_MS, KEY_ROLL_GRACE_MS } from '../policy.ts';
import { createClient } from '../domain/oauth/clients.service.ts';
import { adSyncDepsFor } from '../app.ts';
import { adAccountCommands } from './ad-accounts.ts';
import { backupCommands } from './backup.ts';
import { accountsList, hubsList, usersList, usersResetPassword, workspacesCreate, workspacesList } from './directory.ts';
import {
  choice,
  plural,
  readAll,
  required,
  table,
  UsageError,
  type AdSyncFactory,
  type CliIo,
  type Command,
  type Values,
} from './command.ts';

export type { CliIo, Command } from './command.ts';

// The `hubops` operator CLI (docs/cli.md). Every command validates its arguments before touching
// the database (bad usage → exit 2 without starting anything), then opens the configured
// database, migrated, and runs. With --json, stdout carries exactly one JSON document; all
// diagnostics go to stderr. Exit 0 success, 1 refused, 2 bad usage.

const processIo: CliIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  stdin: process.stdin,
};

/** The sentence after "Created … key": when it expires, if ever. */
const expiryLine = (expiresAt: string | null): string => (expiresAt ? ` It expires at ${expiresAt}.` : '');

/** A key's state for `keys list`: a rolled key names its replacement and when it stops working. */
function keyStateText(k: KeySummary, now: Date): string {
  const state = keyState(k, now);
  if (state === 'revoked') return `revoked ${k.revokedAt}`;
  if (state === 'expired') return k.replacedBy ? `rolled to ${k.replacedBy}, ended ${k.expiresAt}` : `expired ${k.expiresAt}`;
  if (state === 'rolled') return `rolled to ${k.replacedBy}, valid until ${k.expiresAt}`;
  return 'active';
}

/** What each option means, for `hubops COMMAND --help` and docs/cli.md: one meaning in every command, unless a command's optionHelp says otherwise. */
export const OPTION_HELP: Record<string, string> = {
  'dry-run':
    'check the file and work out what it would change, write nothing: per kind of line how many would be inserted, updated or left unchanged',
  add: "add the file's spend to the spend stored for the same ad account, workspace and date, instead of replacing it",
  name: 'the name to show (1–200 characters, kept exactly as given)',
  plan: 'the plan: standard (default) or partner',
  'api-access': "allow the account's users to authorise OAuth clients for the main API",
  account: 'the id of the account the hub belongs to',
  hub: 'the id of the hub',
  email: "the user's email address (compared in lower case)",
  password: 'at least 8 characters; - reads it from stdin, keeping it out of shell history and ps',
  firstname: "the user's first name",
  lastname: "the user's last name",
  role: 'hub_admin (the whole hub) or member (one workspace: give --workspace)',
  workspace: "the id of a workspace in the hub: a member's only workspace, a hub admin's first one",
  staff: "mark the user as hubops staff (may use the main API whatever their account's plan)",
  scope: 'read (default: the Hub API) or embed (signs embed tokens)',
  'expires-in-days': 'the key stops working this many days after creation (default: never)',
  'grace-hours': `how long the old secret keeps working after a roll, in hours: ${KEY_ROLL_GRACE_MS.map((ms) => `${ms / 3_600_000}${ms === 0 ? ' (stops at once)' : ''}${ms === KEY_ROLL_GRACE_DEFAULT_MS ? ' (default, as in the web admin)' : ''}`).join(', ')}`,
  'public-key': 'for --scope embed: your own Ed25519 public key (PEM or base64url); hubops keeps only it',
  'redirect-uri': 'an allowed redirect URI (repeat for several)',
  public: 'a public client (PKCE, no secret), e.g. a desktop or mobile app',
  platform: 'the ad platform: meta (Google Ads and ChatGPT Ads come next)',
  token:
    "the platform's access token (Meta: a Business Manager system-user token with ads_read); - reads it from stdin, keeping it out of shell history and ps",
  wait: 'run the sync in this process and return when it has ended; exit 1 unless every account synced completely',
  campaign: "the platform's campaign id (from the Unattributed spend list of the web admin, or the platform)",
  'ad-set': "the platform's ad set id",
  none: 'no default workspace: spend that no mapping or [ws:…] token claims stays unattributed',
  currency: 'the ISO 4217 code of three letters, e.g. EUR',
  force: 'replace what is already there',
  id: 'its id, e.g. your own store number (letters, digits, _ and -, up to 64; default: a new ws_… id)',
  timezone: 'its IANA time zone, e.g. America/Denver (default UTC)',
};

/** An option's explanation for one command. */
export const optionHelpOf = (command: Command, name: string): string => command.optionHelp?.[name] ?? OPTION_HELP[name] ?? '';

/**
 * The ad-sync dependencies as the server builds them: tokens sealed under the server's secrets key
 * (HUBOPS_SECRETS_KEY, or the key file under DATA_DIR), the Meta client at META_GRAPH_URL.
 */
const serverAdSync: AdSyncFactory = (config, db) => adSyncDepsFor(config, db);

const COMMANDS: Command[] = [
  {
    name: 'migrate',
    args: '',
    summary: 'apply pending database migrations (start-up does this too)',
    json: '`{"applied":[names]}`',
    options: {},
    positionals: [],
    // Opening the database migrates it; this command reports what that applied.
    prepare:
      async () =>
      async ({ applied }) => ({
        json: { applied },
        human: applied.length
          ? `Applied ${plural(applied.length, 'migration')}: ${applied.join(', ')}.`
          : 'The database is up to date; no migration was pending.',
      }),
  },
  {
    name: 'demo seed',
    args: '',
    summary: 'add the demo data set (idempotent: a second run changes nothing)',
    json: '`{"created":bool,"accountId","hubIds","workspaceIds","playbookIds","adAccountIds","userIds","adminEmail","adminPassword","memberEmail","memberPassword"}`',
    options: {},
    positionals: [],
    prepare:
      async () =>
      async ({ db }) => {
        const seed = await seedDemo(db);
        return {
          json: seed,
          human: [
            seed.created ? 'Demo data seeded.' : 'Demo data already present; nothing changed.',
            `  account     ${seed.accountId}`,
            `  hubs        ${seed.hubIds.join(', ')}`,
            `  hub admin   ${seed.adminEmail} / ${seed.adminPassword}  (hub ${seed.hubIds[0]})`,
            `  member      ${seed.memberEmail} / ${seed.memberPassword}`,
            `Create a Hub API key with: hubops keys create --hub ${seed.hubIds[0]} --name "My tool"`,
          ].join('\n'),
        };
      },
  },
  {
    name: 'import',
    args: 'FILE [--add] [--dry-run]',
    summary:
      'load an NDJSON file (- reads stdin), all-or-nothing; the same file again changes nothing (--add: its spend adds to stored spend; --dry-run: say what it would change, write nothing)',
    json: '`{"imported":{type:count}}`, every type listed; the format and what a re-run does: [import-format.md](import-format.md). With `--dry-run` `{"dryRun":true,"lines":{type:count},"written":{type:count},"unchanged":{type:count},"spend":{"new","changed","unchanged"}}`: per type the lines that would be written (inserted; figures such as metrics, review days and CPM: inserted or replaced) or are stored so already; `spend` per ad account, workspace and date',
    options: { add: { type: 'boolean' }, 'dry-run': { type: 'boolean' } },
    positionals: ['FILE'],
    prepare: async (values, [file], io) => {
      // Open before the database starts, so a mistyped path fails at once.
      let input: NodeJS.ReadableStream = io.stdin;
      if (file !== '-') {
        const handle = await open(file!).catch((error: NodeJS.ErrnoException) => {
          throw new DomainError('invalid', `cannot read ${file}: ${error.code === 'ENOENT' ? 'no such file' : error.message}`);
        });
        // Bytes, not text: a line that is not UTF-8 is refused by number, never silently replaced.
        input = handle.createReadStream();
      }
      return async ({ db }) => {
        const dryRun = values['dry-run'] === true;
        const result = await importNdjson(db, byteLines(input as AsyncIterable<Uint8Array>), {
          spend: values.add === true ? 'add' : 'replace',
          dryRun,
        });
        if (dryRun) return dryRunOutput(result, values.add === true);
        const parts = IMPORT_TYPES.filter((t) => result.imported[t] > 0).map((t) => `${result.imported[t]} ${t}`);
        const { spend } = result;
        // What a re-run did is said, not left for the user to find in a report.
        const effect =
          spend.new + spend.changed + spend.unchanged === 0
            ? ''
            : `\nSpend per ad account, workspace and date: ${spend.new} new, ${spend.changed} ${values.add === true ? 'added to' : 'replaced'}, ${spend.unchanged} unchanged.`;
        // Lines already stored exactly so (spend has its own line above, per key).
        const same = IMPORT_TYPES.filter((t) => t !== 'spend' && result.unchanged[t] > 0).map((t) => `${result.unchanged[t]} ${t}`);
        const unchanged = same.length === 0 ? '' : `\nUnchanged (already stored so, not written): ${same.join(', ')}.`;
        return {
          json: { imported: result.imported },
          human: parts.length ? `Imported ${parts.join(', ')}.${effect}${unchanged}` : 'Imported nothing: the file has no lines.',
        };
      };
    },
  },
  {
    name: 'accounts create',
    args: '--name N [--plan standard|partner] [--api-access]',
    summary: 'create an account (an organisation owning hubs)',
    json: '`{"id"}`',
    options: { name: { type: 'string' }, plan: { type: 'string' }, 'api-access': { type: 'boolean' } },
    positionals: [],
    prepare: async (values) => {
      const input = {
        name: required(values, 'name'),
        plan: choice(values, 'plan', PLANS, 'standard'),
        apiAccess: values['api-access'] === true,
      };
      return async ({ db }) => {
        const account = await createAccount(db, input);
        return {
          json: { id: account.id },
          human: `Created account ${account.id} ${JSON.stringify(account.name)} (plan ${account.plan}, API access ${account.apiAccess ? 'on' : 'off'}).`,
        };
      };
    },
  },
  accountsList,
  {
    name: 'hubs create',
    args: '--account A --name N',
    summary: 'create a hub (a brand) in an account',
    json: '`{"id"}`',
    options: { account: { type: 'string' }, name: { type: 'string' } },
    positionals: [],
    prepare: async (values) => {
      const input = { accountId: required(values, 'account'), name: required(values, 'name') };
      return async ({ db }) => {
        const hub = await createHub(db, input);
        return { json: { id: hub.id }, human: `Created hub ${hub.id} ${JSON.stringify(hub.name)} in account ${hub.accountId}.` };
      };
    },
  },
  hubsList,
  ...(['suspend', 'resume'] as const).map(
    (action): Command => ({
      name: `hubs ${action}`,
      args: 'HUB',
      summary: action === 'suspend' ? "suspend a hub's access (its Hub API keys get 403)" : "restore a suspended hub's access",
      json: '`{"id","suspended"}`',
      options: {},
      positionals: ['HUB'],
      prepare:
        async (_values, [hubId]) =>
        async ({ db }) => {
          const hub = await setHubSuspended(db, hubId!, action === 'suspend');
          return {
            json: hub,
            human: hub.suspended
              ? `Hub ${hub.id} suspended: its Hub API keys now get 403 hub_access_suspended.`
              : `Hub ${hub.id} access restored.`,
          };
        },
    }),
  ),
  workspacesList,
  workspacesCreate,
  {
    name: 'users create',
    args: '--email E --password P --firstname F --lastname L --hub H --role hub_admin|member [--workspace W] [--staff]',
    summary: 'create a user with a role in a hub (--password - reads it from stdin; an existing user: users add-to-hub)',
    json: '`{"id"}`',
    options: {
      email: { type: 'string' },
      password: { type: 'string' },
      firstname: { type: 'string' },
      lastname: { type: 'string' },
      hub: { type: 'string' },
      role: { type: 'string' },
      workspace: { type: 'string' },
      staff: { type: 'boolean' },
    },
    positionals: [],
    prepare: async (values, _positionals, io) => {
      const input = {
        email: required(values, 'email'),
        password: required(values, 'password'),
        firstname: required(values, 'firstname'),
        lastname: required(values, 'lastname'),
        hubId: required(values, 'hub'),
        role: choice(values, 'role', ROLES),
        workspaceId: typeof values.workspace === 'string' ? values.workspace : undefined,
        staff: values.staff === true,
      };
      // A password on the command line lands in shell history and `ps`; stdin keeps it out.
      if (input.password === '-') input.password = (await readAll(io.stdin)).replace(/\r?\n$/, '');
      return async ({ db }) => {
        const user = await createUser(db, input).catch((error: unknown) => {
          if (error instanceof DomainError && error.kind === 'conflict') {
            throw new DomainError(
              'conflict',
              `${error.message}; to give them a role in hub ${input.hubId}: hubops users add-to-hub --email ${input.email.trim().toLowerCase()} --hub ${input.hubId} --role ${input.role}`,
            );
          }
          throw error;
        });
        const where = user.workspaceId ? `, workspace ${user.workspaceId}` : '';
        return {
          json: { id: user.id },
          human: `Created user ${user.id} ${user.email} (${user.role} in hub ${user.hubId}${where}${user.staff ? ', staff' : ''}).`,
        };
      };
    },
  },
  {
    name: 'users add-to-hub',
    args: '--email E --hub H --role hub_admin|member [--workspace W]',
    summary: 'give an existing user a role in another hub of their account',
    json: '`{"userId","email","hubId","role","workspaceId"}`',
    options: { email: { type: 'string' }, hub: { type: 'string' }, role: { type: 'string' }, workspace: { type: 'string' } },
    positionals: [],
    prepare: async (values) => {
      const input = {
        email: required(values, 'email'),
        hubId: required(values, 'hub'),
        role: choice(values, 'role', ROLES),
        workspaceId: typeof values.workspace === 'string' ? values.workspace : undefined,
      };
      return async ({ db }) => {
        const membership = await addUserToHub(db, input);
        const where = membership.workspaceId ? `, workspace ${membership.workspaceId}` : '';
        return {
          json: membership,
          human: `Added ${membership.email} (${membership.userId}) to hub ${membership.hubId} as ${membership.role}${where}.`,
        };
      };
    },
  },
  usersList,
  usersResetPassword,
  {
    name: 'keys create',
    json: '`{"id","key","name","scope","hubId","expiresAt"}`: the only time the key is shown (for `embed`: the Ed25519 private key, `hubops_esk_…`); with `--public-key` `{"id","name","scope","hubId","start","expiresAt"}`',
    args: `--hub H --name N [--scope read|embed] [--expires-in-days ${KEY_LIFETIME_DAYS.join('|')}] [--public-key PEM|BASE64URL]`,
    summary:
      'create a Hub API key, printed once (hubops keeps a hash; for an embed key pair only the public key); without --expires-in-days it never expires',
    options: {
      hub: { type: 'string' },
      name: { type: 'string' },
      scope: { type: 'string' },
      'expires-in-days': { type: 'string' },
      'public-key': { type: 'string' },
    },
    positionals: [],
    prepare: async (values) => {
      const lifetime = values['expires-in-days'] === undefined ? null : choice(values, 'expires-in-days', KEY_LIFETIME_DAYS.map(String));
      const input = {
        hubId: required(values, 'hub'),
        name: required(values, 'name'),
        scope: choice<KeyScope>(values, 'scope', KEY_SCOPES, 'read'),
        expiresInDays: lifetime === null ? null : Number(lifetime),
      };
      const publicKey = values['public-key'];
      if (publicKey !== undefined && (typeof publicKey !== 'string' || values.scope !== 'embed'))
        throw new UsageError('--public-key goes with --scope embed');
      return async ({ db }) => {
        if (typeof publicKey === 'string') {
          const key = await createEmbedKeyFromPublicKey(db, { ...input, publicKey });
          return {
            json: { id: key.id, name: key.name, scope: key.scope, hubId: key.hubId, start: key.start, expiresAt: key.expiresAt },
            human: `Created embed key ${key.id} ${JSON.stringify(key.name)} for hub ${key.hubId} from your public key: sign embed tokens with your private key, kid ${key.id}.${expiryLine(key.expiresAt)}`,
          };
        }
        const key = await createKey(db, input);
        return {
          json: { id: key.id, key: key.key, name: key.name, scope: key.scope, hubId: key.hubId, expiresAt: key.expiresAt },
          human: [
            `Created ${key.scope} key ${key.id} ${JSON.stringify(key.name)} for hub ${key.hubId}.${expiryLine(key.expiresAt)}`,
            key.scope === 'embed'
              ? `This Ed25519 private key signs embed tokens (kid ${key.id}); hubops keeps only its public key. Shown only now; store it in a secret manager:`
              : 'The key is shown only now; store it in a secret manager:',
            `  ${key.key}`,
          ].join('\n'),
        };
      };
    },
  },
  {
    name: 'keys list',
    json: '`[{"id","name","scope","start","requestCount","notModifiedCount","lastUsedAt","createdAt","revokedAt","legacyEmbed","expiresAt","replacedBy","state"}]`; `notModifiedCount`: of `requestCount`, the Hub API requests answered 304 Not Modified (the tool already had the data; not counted against the rate limit), the UNCHANGED (304) column; `legacyEmbed`: an embed key made before key pairs (replace it)',
    args: '--hub H',
    summary: "list a hub's keys with usage (never the secret)",
    options: { hub: { type: 'string' } },
    positionals: [],
    prepare: async (values) => {
      const hubId = required(values, 'hub');
      return async ({ db }) => {
        await getHub(db, hubId);
        const keys = await listKeys(db, hubId);
        const now = new Date();
        const rows = keys.map((k) => [
          k.id,
          k.name,
          k.legacyEmbed ? 'embed (legacy: replace)' : k.scope,
          `${k.start}…`,
          String(k.requestCount),
          String(k.notModifiedCount),
          k.lastUsedAt ?? '-',
          k.createdAt,
          k.expiresAt ?? 'never',
          keyStateText(k, now),
        ]);
        return {
          json: keys.map((k) => ({
            id: k.id,
            name: k.name,
            scope: k.scope,
            start: k.start,
            requestCount: k.requestCount,
            notModifiedCount: k.notModifiedCount,
            lastUsedAt: k.lastUsedAt,
            createdAt: k.createdAt,
            revokedAt: k.revokedAt,
            legacyEmbed: k.legacyEmbed,
            expiresAt: k.expiresAt,
            replacedBy: k.replacedBy,
            state: keyState(k, now),
          })),
          human: keys.length
            ? table(['ID', 'NAME', 'SCOPE', 'START', 'REQUESTS', 'UNCHANGED (304)', 'LAST USED', 'CREATED', 'EXPIRES', 'STATE'], rows)
            : `Hub ${hubId} has no keys.`,
        };
      };
    },
  },
  {
    name: 'keys roll',
    args: `KEY_ID [--grace-hours ${KEY_ROLL_GRACE_MS.map((ms) => ms / 3_600_000).join('|')}]`,
    summary:
      'give a read key a new secret with the same name, scope and lifetime, printed once; the old secret keeps working for the grace period, then stops (an embed key is not rolled: create a new one)',
    json: '`{"id","key","name","scope","hubId","expiresAt","replaces":{"id","expiresAt"}}`: the only time the new key is shown',
    options: { 'grace-hours': { type: 'string' } },
    positionals: ['KEY_ID'],
    prepare: async (values, [keyId]) => {
      const graceHours = choice(
        values,
        'grace-hours',
        KEY_ROLL_GRACE_MS.map((ms) => String(ms / 3_600_000)),
        String(KEY_ROLL_GRACE_DEFAULT_MS / 3_600_000),
      );
      return async ({ db }) => {
        const key = await rollKey(db, { keyId: keyId!, graceMs: Number(graceHours) * 3_600_000, now: new Date() });
        return {
          json: {
            id: key.id,
            key: key.key,
            name: key.name,
            scope: key.scope,
            hubId: key.hubId,
            expiresAt: key.expiresAt,
            replaces: key.replaces,
          },
          human: [
            `Rolled ${key.replaces.id}: its old secret works until ${key.replaces.expiresAt}. New ${key.scope} key ${key.id} ${JSON.stringify(key.name)} for hub ${key.hubId}.${expiryLine(key.expiresAt)}`,
            'The key is shown only now; store it in a secret manager:',
            `  ${key.key}`,
          ].join('\n'),
        };
      };
    },
  },
  {
    name: 'keys revoke',
    args: 'KEY_ID',
    summary:
      'revoke a key (takes effect on the next request, on every instance), and the old secrets it replaced by a roll that still work; revoking a rolled key ends only its old secret',
    json: '`{"id","revokedAt"}` (revoking again keeps the first time)',
    options: {},
    positionals: ['KEY_ID'],
    prepare:
      async (_values, [keyId]) =>
      async ({ db }) => {
        const { predecessors, ...revoked } = await revokeKey(db, keyId!);
        const ended = predecessors.length
          ? ` The old secret${predecessors.length > 1 ? 's' : ''} it replaced (${predecessors.join(', ')}), still in the grace period, ended with it.`
          : '';
        return { json: revoked, human: `Key ${revoked.id} revoked at ${revoked.revokedAt}.${ended}` };
      },
  },
  {
    name: 'clients create',
    args: '--name N --redirect-uri U [--redirect-uri U2 …] [--public]',
    summary: "pre-provision an OAuth client (a confidential client's secret is printed once; only its hash is kept)",
    json: '`{"client_id","client_secret"}` (no `client_secret` for `--public`)',
    options: { name: { type: 'string' }, 'redirect-uri': { type: 'string', multiple: true }, public: { type: 'boolean' } },
    positionals: [],
    prepare: async (values) => {
      const name = required(values, 'name');
      const redirectUris = (values['redirect-uri'] as string[] | undefined) ?? [];
      if (redirectUris.length === 0) throw new UsageError('missing required option --redirect-uri');
      const isPublic = values.public === true;
      return async ({ db }) => {
        const client = await createClient(db, { name, redirectUris, public: isPublic });
        return {
          json: client,
          human: [
            `Created ${isPublic ? 'public' : 'confidential'} OAuth client ${JSON.stringify(name)}.`,
            `  client_id:     ${client.client_id}`,
            ...(client.client_secret
              ? [`  client_secret: ${client.client_secret}`, 'The secret is shown only now; store it in a secret manager.']
              : []),
          ].join('\n'),
        };
      };
    },
  },
  ...adAccountCommands(serverAdSync),
  ...backupCommands,
];

/** `import --dry-run`: what a real run would write, per type, and nothing written. */
function dryRunOutput(result: ImportResult, add: boolean): { json: unknown; human: string } {
  const written = Object.fromEntries(IMPORT_TYPES.map((t) => [t, result.imported[t] - result.unchanged[t]])) as ImportCounts;
  const rows = IMPORT_TYPES.filter((t) => t !== 'spend' && result.imported[t] > 0).map((t) => [
    t,
    String(result.imported[t]),
    String(written[t]),
    String(result.unchanged[t]),
  ]);
  const { spend } = result;
  const lines = ['Dry run: nothing was written. A real run would:'];
  if (rows.length) lines.push(table(['TYPE', 'LINES', 'WRITE', 'UNCHANGED'], rows).replace(/^/gm, '  '));
  if (result.imported.spend > 0)
    lines.push(
      `  spend (${result.imported.spend} lines), per ad account, workspace and date: ${spend.new} new, ${spend.changed} ${add ? 'added to' : 'replaced'}, ${spend.unchanged} unchanged`,
    );
  if (rows.length === 0 && result.imported.spend === 0) lines.push('  nothing: the file has no lines.');
  return {
    json: { dryRun: true, lines: result.imported, written, unchanged: result.unchanged, spend },
    human: lines.join('\n'),
  };
}

const usageOf = (command: Command) => `usage: hubops ${command.name}${command.args ? ` ${command.args}` : ''} [--json]`;

/** `hubops COMMAND --help`: its usage, what it does, its options. */
function commandHelp(command: Command): string {
  const names = Object.keys(command.options).map((name) => `--${name}`);
  const width = Math.max(6, ...names.map((n) => n.length));
  const options = Object.keys(command.options).map((name) => `  ${`--${name}`.padEnd(width)}  ${optionHelpOf(command, name)}`);
  return [
    usageOf(command),
    `  ${command.summary}`,
    '',
    'Options:',
    ...options,
    `  ${'--json'.padEnd(width)}  print exactly one JSON document on stdout`,
    '',
  ].join('\n');
}

/** The command table, for docs/cli.md (src/cli/docs.ts): the CLI documents what it runs. */
export function commandTable(): readonly Command[] {
  return COMMANDS;
}

function help(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length + (c.positionals.length ? c.args.length + 1 : 0)));
  const lines = COMMANDS.map((c) => {
    const head = c.positionals.length ? `${c.name} ${c.args}` : c.name;
    const flags = c.positionals.length || !c.args ? '' : `\n      ${c.args}`;
    return `  ${head.padEnd(width)}  ${c.summary}${flags}`;
  });
  return [
    'hubops: operator CLI for hubops',
    '',
    'usage: hubops COMMAND [options] [--json]',
    '',
    'Commands:',
    ...lines,
    '',
    'Options for every command:',
    '  --json         print exactly one JSON document on stdout (diagnostics go to stderr)',
    '  -h, --help     show help (for one command: hubops COMMAND --help)',
    '  -V, --version  print the version (hubops X.Y.Z)',
    '',
    'Configuration: DATABASE_URL (unset: the embedded PostgreSQL under DATA_DIR, default ./data), LOG_LEVEL.',
    'Exit status: 0 success, 1 refused operation (reason on stderr), 2 bad usage.',
    '',
  ].join('\n');
}

/** Command groups (`keys`, `hubs`, …) and their subcommands. */
const GROUPS = new Map<string, string[]>();
for (const name of COMMANDS.map((c) => c.name)) {
  const [group, sub] = name.split(' ') as [string, string | undefined];
  if (sub) GROUPS.set(group, [...(GROUPS.get(group) ?? []), sub]);
}
const GLOBAL_FLAGS = new Set(['--json', '--help', '-h']);

/** Runs one CLI invocation; returns the exit status. */
export async function runCli(argv: string[], io: CliIo = processIo): Promise<number> {
  const debug = ['debug', 'trace'].includes(io.env.LOG_LEVEL?.trim() ?? '');
  let command: Command | undefined;
  try {
    // Global flags may come before the command (`hubops --json keys list …`).
    const leading = argv.findIndex((arg) => !GLOBAL_FLAGS.has(arg));
    const start = leading === -1 ? argv.length : leading;
    const words = argv.slice(start, start + (GROUPS.has(argv[start] ?? '') ? 2 : 1)).filter((w) => !w.startsWith('-'));
    const name = words.join(' ');
    const rest = [...argv.slice(0, start), ...argv.slice(start + words.length)];
    const wantsHelp = rest.includes('--help') || rest.includes('-h');
    if (!name && (argv[start] === '--version' || argv[start] === '-V') && argv.every((arg, i) => i === start || arg === '--json')) {
      io.stdout(argv.includes('--json') ? `${JSON.stringify({ version: VERSION })}\n` : `hubops ${VERSION}\n`);
      return 0;
    }
    if (!name || (GROUPS.has(name) && wantsHelp)) {
      if (wantsHelp) {
        io.stdout(help());
        return 0;
      }
      throw new UsageError(argv[start] ? `unknown option ${argv[start]}` : 'missing command');
    }
    if (GROUPS.has(name)) throw new UsageError(`missing subcommand: hubops ${name} ${GROUPS.get(name)!.join('|')}`);
    command = COMMANDS.find((c) => c.name === name);
    if (!command) throw new UsageError(`unknown command "${name}"`);

    let parsed;
    try {
      parsed = parseArgs({
        args: rest,
        options: { ...command.options, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
        strict: true,
        allowPositionals: true,
      });
    } catch (error) {
      // Node's messages go on with advice; the first sentence is the reason.
      const reason = (error as Error).message.split(/\.(\s|$)/)[0]!;
      throw new UsageError(reason.charAt(0).toLowerCase() + reason.slice(1));
    }
    const values = parsed.values as Values;
    if (values.help) {
      io.stdout(commandHelp(command));
      return 0;
    }
    const positionals = parsed.positionals;
    if (positionals.length < command.positionals.length)
      throw new UsageError(`missing ${command.positionals.slice(positionals.length).join(' ')}`);
    if (positionals.length > command.positionals.length)
      throw new UsageError(`unexpected argument ${JSON.stringify(positionals[command.positionals.length])}`);
    const work = await command.prepare(values, positionals, io);

    const config = loadConfig(io.env);
    if ('standalone' in work) {
      const output = await work.standalone(config);
      io.stdout(values.json ? `${JSON.stringify(output.json)}\n` : `${output.human}\n`);
      return 0;
    }
    const database = await openDatabase(config, {
      // The embedded server's chatter never reaches stdout; on stderr only when debugging.
      log: debug ? (line) => io.stderr(`${line}\n`) : () => {},
      poolSize: 4,
      applicationName: 'hubops-cli',
    });
    try {
      const output = await work(database);
      io.stdout(values.json ? `${JSON.stringify(output.json)}\n` : `${output.human}\n`);
      return 0;
    } finally {
      await database.close();
    }
  } catch (error) {
    if (error instanceof UsageError) {
      const usage = command ? usageOf(command) : "run 'hubops --help' for the commands";
      io.stderr(`hubops: ${error.message}\n${usage}\n`);
      return 2;
    }
    if (error instanceof ConfigError) {
      io.stderr(`hubops: configuration error: ${error.message}\n`);
      return 2;
    }
    if (error instanceof DomainError || error instanceof EmbeddedDatabaseError) {
      for (const line of error.message.split('\n')) io.stderr(`hubops: ${line}\n`);
      return 1;
    }
    if (debug) io.stderr(`${(error as Error).stack ?? String(error)}\n`);
    const message = String((error as Error).message ?? error).split('\n')[0];
    io.stderr(isDatabaseUnavailable(error) ? `hubops: cannot reach the database: ${message}\n` : `hubops: unexpected error: ${message}\n`);
    return 1;
  }
}
