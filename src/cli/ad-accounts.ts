// `hubops ad-accounts …`: connect an ad account with a token (system user; `-` reads it from
// stdin), list the hub's accounts with their state, sync (and wait for the outcome), map a campaign
// or ad set to a workspace, set an account's default workspace or the hub's reporting currency, disconnect. The rules are the ad-sync service's; these commands ask it,
// with the same dependencies the server's sync loop uses.
import { loadConfig } from '../config.ts';
import type { Db } from '../db/database.ts';
import {
  connectAdAccounts,
  connectApiKeyAccount,
  PLATFORM_NAMES,
  disconnectAdAccount,
  listAdAccounts,
  mapToWorkspace,
  requestSync,
  setDefaultWorkspace,
  setReportingCurrency,
  syncNow,
  type AdAccountView,
  type AdSyncDeps,
  type SyncOutcome,
} from '../domain/ad-sync/ad-account.service.ts';
import { AD_PLATFORMS } from '../domain/spend/spend.ts';
import { getHub } from '../domain/tenancy/tenancy.service.ts';
import { DomainError } from '../platform/errors.ts';
import { SPEND_BACKFILL_DAYS } from '../policy.ts';
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
  type Output,
  type Values,
} from './command.ts';

const ACCOUNT_HELP =
  "the ad account: hubops's id (aa_…, from ad-accounts list) or the platform's (act_… on Meta, 123-456-7890 on Google Ads)";

/** Every connected account of the hub, or the one --account names (by hubops's id or the platform's). */
async function accountsOf(deps: AdSyncDeps, hubId: string, account: string | undefined): Promise<AdAccountView[]> {
  await getHub(deps.db, hubId);
  const all = await listAdAccounts(deps, hubId);
  if (account === undefined) return all.filter((a) => a.status !== 'disconnected');
  // Google Ads shows customer ids with dashes (123-456-7890); they are stored without.
  const platformId = /^\d{3}-\d{3}-\d{4}$/.test(account) ? account.replaceAll('-', '') : account;
  const found =
    all.find((a) => a.id === account) ??
    all.find((a) => a.externalId === platformId && a.status !== 'disconnected') ??
    all.find((a) => a.externalId === platformId);
  if (!found) throw new DomainError('not_found', `hub ${hubId} has no ad account ${account} (see: hubops ad-accounts list --hub ${hubId})`);
  return [found];
}

const optional = (values: Values, name: string): string | undefined => {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
};

/** An account as `list --json` and `connect --json` print it: the service's view, instants in ISO 8601. */
const accountJson = (a: AdAccountView) => ({
  id: a.id,
  platform: a.platform,
  externalId: a.externalId,
  name: a.name,
  currency: a.currency,
  timeZone: a.timeZone,
  connectionKind: a.connectionKind,
  status: a.status,
  statusText: a.statusText,
  lastCompleteSyncAt: a.lastCompleteSyncAt?.toISOString() ?? null,
  completeThrough: a.completeThrough,
  failureKind: a.failureKind,
  failureMessage: a.failureMessage,
  retryAt: a.retryAt?.toISOString() ?? null,
  tokenExpiresAt: a.tokenExpiresAt?.toISOString() ?? null,
  tokenExpiresSoon: a.tokenExpiresSoon,
  defaultWorkspaceId: a.defaultWorkspaceId,
});

/** One account's sync outcome in a line a person reads. */
function outcomeLine(a: AdAccountView, o: SyncOutcome): string {
  const who = `${a.externalId} ${JSON.stringify(a.name)}`;
  switch (o.status) {
    case 'done':
      return `${who}: synced${o.completeThrough ? `, complete through ${o.completeThrough}` : ''}.`;
    case 'rescheduled':
      return `${who}: not finished: the platform asked us to wait; rescheduled until ${o.until.toISOString()} (${o.message}).`;
    case 'retrying':
      return `${who}: failed (${o.failureKind}): ${o.message}; it is retried at ${o.retryAt.toISOString()}.`;
    case 'failed':
      return `${who}: failed (${o.failureKind}): ${o.message}.`;
    case 'skipped':
      return `${who}: not synced: ${o.message}.`;
  }
}

const outcomeJson = (a: AdAccountView, o: SyncOutcome) => ({
  id: a.id,
  externalId: a.externalId,
  status: o.status,
  ...(o.status === 'done' ? { completeThrough: o.completeThrough, syncedAt: o.syncedAt.toISOString() } : { message: o.message }),
  ...(o.status === 'retrying' || o.status === 'failed' ? { failureKind: o.failureKind } : {}),
  ...(o.status === 'retrying' ? { retryAt: o.retryAt.toISOString() } : o.status === 'rescheduled' ? { until: o.until.toISOString() } : {}),
});

export function adAccountCommands(serverDeps: AdSyncFactory): Command[] {
  /** The command's work with the ad-sync dependencies of the configuration it runs under. */
  const withDeps =
    (io: CliIo, work: (deps: AdSyncDeps) => Promise<Output>) =>
    async ({ db }: { db: Db }) =>
      work(await (io.adSync ?? serverDeps)(loadConfig(io.env), db));
  return [
    {
      name: 'ad-accounts connect',
      args: '--hub H --platform meta|google_ads|chatgpt_ads [--account ID …] --token TOKEN|- [--name LABEL]',
      summary: `connect ad accounts with a platform credential (- reads it from stdin), kept sealed: a Meta system-user token, a Google Ads refresh token issued to GOOGLE_OAUTH_CLIENT_ID, or a ChatGPT Ads API key; each account then syncs by itself, the first run backfilling ${SPEND_BACKFILL_DAYS} days`,
      json: '`[{"id","platform","externalId","name","currency","timeZone","status","statusText",…}]`: the connected accounts, as `ad-accounts list` prints them',
      options: {
        hub: { type: 'string' },
        platform: { type: 'string' },
        account: { type: 'string', multiple: true },
        token: { type: 'string' },
        name: { type: 'string' },
      },
      optionHelp: {
        account:
          "the platform's ad account id (Meta: act_ and digits; Google Ads: the customer id, 123-456-7890); repeat for several accounts the token can read. Required for Meta and Google Ads; for ChatGPT Ads the key names its one account (if given, it must be that one)",
        token: "Meta: a system-user token; Google Ads: a refresh token; ChatGPT Ads: the ad account's API key. - reads it from stdin",
        name: 'a name for this connection, e.g. the system user (default: "<Platform> (CLI)")',
      },
      positionals: [],
      prepare: async (values, _positionals, io) => {
        const hubId = required(values, 'hub');
        const platform = choice(values, 'platform', AD_PLATFORMS);
        const accounts = (values.account as string[] | undefined) ?? [];
        if (accounts.length === 0 && platform !== 'chatgpt_ads') throw new UsageError('missing required option --account');
        if (accounts.length > 1 && platform === 'chatgpt_ads')
          throw new UsageError('a ChatGPT Ads API key reads one ad account: give one --account, or none');
        let token = required(values, 'token');
        // A token on the command line lands in shell history and `ps`; stdin keeps it out.
        if (token === '-') token = (await readAll(io.stdin)).replace(/\r?\n$/, '');
        if (token.trim() === '') throw new UsageError('--token is empty (with -, stdin was empty)');
        const label = optional(values, 'name') ?? (platform === 'meta' ? 'Meta system user (CLI)' : `${PLATFORM_NAMES[platform]} (CLI)`);
        return withDeps(io, async (deps) => {
          await getHub(deps.db, hubId);
          const connected =
            platform === 'chatgpt_ads'
              ? [await connectApiKeyAccount(deps, hubId, { platform, apiKey: token, label, expectedId: accounts[0] })]
              : await connectAdAccounts(deps, hubId, {
                  platform,
                  kind: platform === 'meta' ? 'system_user' : 'oauth',
                  accessToken: token,
                  tokenExpiresAt: null,
                  externalIds: accounts,
                  label,
                });
          return {
            json: connected.map(accountJson),
            human: [
              `Connected ${plural(connected.length, 'ad account')} to hub ${hubId}:`,
              ...connected.map((a) => `  ${a.id}  ${a.externalId}  ${JSON.stringify(a.name)}  ${a.currency}, ${a.timeZone}`),
              `The token is stored sealed and is not shown again. The first sync backfills ${SPEND_BACKFILL_DAYS} days; follow it with: hubops ad-accounts list --hub ${hubId}`,
            ].join('\n'),
          };
        });
      },
    },
    {
      name: 'ad-accounts list',
      args: '--hub H',
      summary:
        "list a hub's ad accounts with their state in words (connected, syncing, needs reconnect…), complete-through day, last complete sync, last error, token expiry",
      json: '`[{"id","platform","externalId","name","currency","timeZone","connectionKind","status","statusText","lastCompleteSyncAt","completeThrough","failureKind","failureMessage","retryAt","tokenExpiresAt","tokenExpiresSoon","defaultWorkspaceId"}]`; `status` is one of connected, syncing, rescheduled, retrying, needs_reconnect, missing_permission, failed, never_synced, disconnected',
      options: { hub: { type: 'string' } },
      positionals: [],
      prepare: async (values, _positionals, io) => {
        const hubId = required(values, 'hub');
        return withDeps(io, async (deps) => {
          await getHub(deps.db, hubId);
          const accounts = await listAdAccounts(deps, hubId);
          const rows = accounts.map((a) => [
            a.id,
            a.externalId,
            a.name,
            a.status,
            a.completeThrough ?? '-',
            a.lastCompleteSyncAt?.toISOString() ?? '-',
            a.tokenExpiresAt ? `${a.tokenExpiresAt.toISOString().slice(0, 10)}${a.tokenExpiresSoon ? ' (soon)' : ''}` : '-',
            a.statusText,
          ]);
          return {
            json: accounts.map(accountJson),
            human: accounts.length
              ? table(
                  ['ID', 'EXTERNAL ID', 'NAME', 'STATUS', 'COMPLETE THROUGH', 'LAST COMPLETE SYNC', 'TOKEN EXPIRES', 'WHAT IT MEANS'],
                  rows,
                )
              : `Hub ${hubId} has no ad accounts. Connect one with: hubops ad-accounts connect --hub ${hubId} --platform meta|google_ads|chatgpt_ads [--account …] --token -`,
          };
        });
      },
    },
    {
      name: 'ad-accounts sync',
      args: '--hub H [--account A] [--wait]',
      summary:
        "sync the hub's connected ad accounts (or one) now: without --wait a running server picks the request up; with --wait the sync runs here and the command exits 1 unless every account synced completely",
      json: 'without `--wait` `{"requested":[ids]}`; with `--wait` `{"accounts":[{"id","externalId","status":"done","completeThrough","syncedAt"}]}` (any other outcome exits 1, each account\'s reason on stderr)',
      options: { hub: { type: 'string' }, account: { type: 'string' }, wait: { type: 'boolean' } },
      optionHelp: { account: ACCOUNT_HELP },
      positionals: [],
      prepare: async (values, _positionals, io) => {
        const hubId = required(values, 'hub');
        const account = optional(values, 'account');
        const wait = values.wait === true;
        return withDeps(io, async (deps) => {
          const accounts = await accountsOf(deps, hubId, account);
          if (accounts.some((a) => a.status === 'disconnected'))
            throw new DomainError('rejected', `ad account ${account} is disconnected: connect it again to sync it`);
          if (accounts.length === 0) throw new DomainError('rejected', `hub ${hubId} has no connected ad account to sync`);
          if (!wait) {
            for (const a of accounts) await requestSync(deps, hubId, a.id);
            return {
              json: { requested: accounts.map((a) => a.id) },
              human: `Sync requested for ${plural(accounts.length, 'ad account')}; a running hubops server starts it within a minute (or run this again with --wait).`,
            };
          }
          // One at a time: each account's sync is independent, and the platform limits per token.
          const outcomes: [AdAccountView, SyncOutcome][] = [];
          for (const a of accounts) outcomes.push([a, await syncNow(deps, hubId, a.id)]);
          const notDone = outcomes.filter(([, o]) => o.status !== 'done');
          if (notDone.length > 0) {
            throw new DomainError(
              'rejected',
              [
                `${plural(notDone.length, 'ad account')} of ${outcomes.length} did not sync completely:`,
                ...notDone.map(([a, o]) => outcomeLine(a, o)),
              ].join('\n'),
            );
          }
          return {
            json: { accounts: outcomes.map(([a, o]) => outcomeJson(a, o)) },
            human: outcomes.map(([a, o]) => outcomeLine(a, o)).join('\n'),
          };
        });
      },
    },
    {
      name: 'ad-accounts map',
      args: '--hub H --account A (--campaign ID | --ad-set ID) --workspace W',
      summary:
        "assign a campaign's or an ad set's spend to a workspace (first rule of attribution): past spend moves at once, nothing is fetched again",
      json: '`{"adAccountId","level":"campaign"|"ad_set","externalId","workspaceId"}`',
      options: {
        hub: { type: 'string' },
        account: { type: 'string' },
        campaign: { type: 'string' },
        'ad-set': { type: 'string' },
        workspace: { type: 'string' },
      },
      optionHelp: { account: ACCOUNT_HELP, workspace: 'the id of the workspace of the hub that gets the spend' },
      positionals: [],
      prepare: async (values, _positionals, io) => {
        const hubId = required(values, 'hub');
        const account = required(values, 'account');
        const workspaceId = required(values, 'workspace');
        const campaign = optional(values, 'campaign');
        const adSet = optional(values, 'ad-set');
        if ((campaign === undefined) === (adSet === undefined)) throw new UsageError('give exactly one of --campaign and --ad-set');
        const level = campaign !== undefined ? 'campaign' : 'ad_set';
        const externalId = (campaign ?? adSet)!;
        return withDeps(io, async (deps) => {
          const [a] = await accountsOf(deps, hubId, account);
          await mapToWorkspace(deps, hubId, { adAccountId: a!.id, level, externalId, workspaceId });
          return {
            json: { adAccountId: a!.id, level, externalId, workspaceId },
            human: `Mapped ${level === 'campaign' ? 'campaign' : 'ad set'} ${externalId} of ${a!.externalId} to workspace ${workspaceId}: its spend, past and future, counts there now.`,
          };
        });
      },
    },
    {
      name: 'ad-accounts set-default-workspace',
      args: '--hub H --account A (--workspace W | --none)',
      summary:
        'give a connected ad account a default workspace (third rule of attribution: spend no mapping or [ws:…] token claims counts there), or none; past spend moves at once',
      json: '`{"id","externalId","defaultWorkspaceId"}` (null with --none)',
      options: { hub: { type: 'string' }, account: { type: 'string' }, workspace: { type: 'string' }, none: { type: 'boolean' } },
      optionHelp: { account: ACCOUNT_HELP, workspace: 'the id of the workspace of the hub that gets the spend no other rule claims' },
      positionals: [],
      prepare: async (values, _positionals, io) => {
        const hubId = required(values, 'hub');
        const account = required(values, 'account');
        const workspace = optional(values, 'workspace');
        if ((workspace === undefined) === (values.none !== true)) throw new UsageError('give exactly one of --workspace and --none');
        const workspaceId = workspace ?? null;
        return withDeps(io, async (deps) => {
          const [a] = await accountsOf(deps, hubId, account);
          await setDefaultWorkspace(deps, hubId, a!.id, workspaceId);
          return {
            json: { id: a!.id, externalId: a!.externalId, defaultWorkspaceId: workspaceId },
            human:
              workspaceId === null
                ? `${a!.externalId} ${JSON.stringify(a!.name)} has no default workspace now: its spend that no mapping or [ws:…] token claims is unattributed.`
                : `${a!.externalId} ${JSON.stringify(a!.name)} now counts its spend that no mapping or [ws:…] token claims in workspace ${workspaceId}, past spend included.`,
          };
        });
      },
    },
    {
      name: 'ad-accounts set-currency',
      args: '--hub H --currency CODE',
      summary:
        "set the hub's reporting currency (ISO 4217, default USD): ad accounts in another currency are refused at connect, so it is refused while a connected account reports in another one",
      json: '`{"hubId","reportingCurrency"}`',
      options: { hub: { type: 'string' }, currency: { type: 'string' } },
      positionals: [],
      prepare: async (values, _positionals, io) => {
        const hubId = required(values, 'hub');
        const currency = required(values, 'currency');
        return withDeps(io, async (deps) => {
          await getHub(deps.db, hubId);
          const code = await setReportingCurrency(deps, hubId, currency);
          return {
            json: { hubId, reportingCurrency: code },
            human: `Hub ${hubId} reports spend in ${code}; ad accounts connected from now on must report in ${code}.`,
          };
        });
      },
    },
    {
      name: 'ad-accounts disconnect',
      args: '--hub H --account A',
      summary:
        'stop syncing an ad account and erase its token; its past figures stay in the reports, and it no longer counts toward freshness',
      json: '`{"id","externalId","disconnected":true}`',
      options: { hub: { type: 'string' }, account: { type: 'string' } },
      optionHelp: { account: ACCOUNT_HELP },
      positionals: [],
      prepare: async (values, _positionals, io) => {
        const hubId = required(values, 'hub');
        const account = required(values, 'account');
        return withDeps(io, async (deps) => {
          const [a] = await accountsOf(deps, hubId, account);
          await disconnectAdAccount(deps, hubId, a!.id);
          return {
            json: { id: a!.id, externalId: a!.externalId, disconnected: true },
            human: `Disconnected ${a!.externalId} ${JSON.stringify(a!.name)} (${a!.id}): it no longer syncs and its token is erased. Its past figures stay in the reports; it no longer counts toward freshness.`,
          };
        });
      },
    },
  ];
}
