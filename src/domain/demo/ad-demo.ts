// The demo's ad platforms: the sandboxes' accounts for the demo hub (ad sets and ad groups named
// with [ws:…] tokens, so most spend lands on locations and a little stays unattributed), and their
// connections: two Meta accounts, one Google Ads account (reached through a manager account, as an
// agency's are) and one ChatGPT Ads account. The sandboxes' credentials live as long as their
// process, so each start of the demo connects the accounts again with fresh ones (same account
// rows: their synced days stay); an account the admin disconnected stays disconnected.
import type { Config } from '../../config.ts';
import type { AdPlatform } from '../../db/schema.ts';
import { startGoogleAdsSandbox, type SandboxCustomerInput } from '../../integrations/google-ads/sandbox.ts';
import { startMetaPagesSandbox } from '../../integrations/meta-pages/sandbox.ts';
import type { SandboxSeed } from '../../integrations/meta/sandbox.ts';
import { startGoogleBusinessSandbox } from '../../integrations/google-business/sandbox.ts';
import { connectBusinessLocations, type GoogleBusinessDeps } from '../channels/google-business.service.ts';
import { startOpenAIAdsSandbox, type OpenAIAdsSandboxAccount } from '../../integrations/openai-ads/sandbox.ts';
import { connectAdAccounts, listAdAccounts, type AdSyncDeps, type ConnectionKind } from '../ad-sync/ad-account.service.ts';
import { DEMO_HUB_ID } from './seed.ts';

const ws = (n: number) => `ws_demo_brewline_${String(n).padStart(2, '0')}`;

/** The demo hub's Meta accounts in the sandbox. */
export const DEMO_META_SEED: SandboxSeed = {
  historyDays: 100,
  accounts: [
    {
      id: 'act_100001',
      name: 'Brewline Coffee West (Meta sandbox)',
      currency: 'USD',
      timezone_name: 'America/Los_Angeles',
      adSets: [
        ...[1, 2, 3, 4, 5, 6].map((n) => ({
          id: `1000010${n}`,
          name: `Store ${n} locals [ws:${ws(n)}]`,
          campaignId: '1000019',
          campaignName: 'Pumpkin Spice launch',
        })),
        { id: '10000107', name: 'Regional prospecting', campaignId: '1000018', campaignName: 'Always-on awareness' },
      ],
    },
    {
      id: 'act_100002',
      name: 'Brewline Coffee East (Meta sandbox)',
      currency: 'USD',
      timezone_name: 'America/New_York',
      adSets: [
        ...[13, 14, 15, 16].map((n) => ({
          id: `100002${n}`,
          name: `Store ${n} drive-thru [ws:${ws(n)}]`,
          campaignId: '1000029',
          campaignName: 'Drive-thru mornings',
        })),
        { id: '10000299', name: 'Closed store test [ws:ws_demo_brewline_99]', campaignId: '1000028', campaignName: 'Tests' },
      ],
    },
  ],
};

/** The demo hub's Google Ads account, a client of an agency's manager account (login-customer-id). */
export const DEMO_GOOGLE_MANAGER = '7000000001';
export const DEMO_GOOGLE_CUSTOMERS: SandboxCustomerInput[] = [
  {
    id: DEMO_GOOGLE_MANAGER,
    name: 'Summit Agency (Google Ads sandbox manager)',
    currency: 'USD',
    timeZone: 'America/Denver',
    manager: true,
    adGroups: [],
  },
  {
    id: '7000000101',
    name: 'Brewline Search (Google Ads sandbox)',
    currency: 'USD',
    timeZone: 'America/Chicago',
    direct: false,
    managerId: DEMO_GOOGLE_MANAGER,
    adGroups: [
      ...[17, 18, 19, 20, 21].map((n) => ({
        id: `70001010${n}`,
        name: `Near me ${n} [ws:${ws(n)}]`,
        campaignId: '700010191',
        campaignName: 'Search: coffee near me',
      })),
      { id: '7000101099', name: 'Brand terms', campaignId: '700010192', campaignName: 'Search: brand' },
    ],
    // No ad groups: its cost is read per campaign, attributed by the token in its name.
    campaigns: [{ id: '700010193', name: 'Performance Max: holiday gifts [ws:ws_demo_brewline_22]', channelType: 'PERFORMANCE_MAX' }],
  },
];

/** The demo hub's ChatGPT Ads account. */
export const DEMO_CHATGPT_ACCOUNTS: (Partial<OpenAIAdsSandboxAccount> & { id: string })[] = [
  {
    id: 'adacct_brewline_ask_ai',
    name: 'Brewline Ask-AI (ChatGPT Ads sandbox)',
    currency_code: 'USD',
    timezone: 'America/Phoenix',
    adGroups: [
      ...[6, 7, 8].map((n) => ({
        id: `adgrp_brewline_${n}`,
        name: `Coffee finder ${n} [ws:${ws(n)}]`,
        campaignId: 'cmp_brewline_ask_ai',
        campaignName: 'Ask-AI Coffee Finder',
      })),
      { id: 'adgrp_brewline_general', name: 'General questions', campaignId: 'cmp_brewline_ask_ai', campaignName: 'Ask-AI Coffee Finder' },
    ],
  },
];

/** One platform's demo connection: the accounts and the sandbox credential that reads them. */
export interface DemoConnection {
  platform: AdPlatform;
  kind: ConnectionKind;
  credential: string;
  externalIds: string[];
  label: string;
}

export const demoMetaConnection = (token: string): DemoConnection => ({
  platform: 'meta',
  kind: 'system_user',
  credential: token,
  externalIds: DEMO_META_SEED.accounts!.map((a) => a.id),
  label: 'Demo system user (Meta sandbox)',
});
export const demoGoogleConnection = (refreshToken: string): DemoConnection => ({
  platform: 'google_ads',
  kind: 'oauth',
  credential: refreshToken,
  externalIds: DEMO_GOOGLE_CUSTOMERS.filter((c) => !c.manager).map((c) => c.id),
  label: 'Demo agency login (Google Ads sandbox)',
});
export const demoChatGptConnection = (apiKey: string): DemoConnection => ({
  platform: 'chatgpt_ads',
  kind: 'api_key',
  credential: apiKey,
  externalIds: DEMO_CHATGPT_ACCOUNTS.map((a) => a.id),
  label: 'Demo API key (ChatGPT Ads sandbox)',
});

/**
 * Connects the demo hub's sandbox accounts of one platform with the sandbox's credential: all of
 * them on the demo's first start, afterwards those still connected. Returns the ids connected.
 */
export async function connectDemoAccounts(deps: AdSyncDeps, connection: DemoConnection, firstStart: boolean): Promise<string[]> {
  const current = await listAdAccounts(deps, DEMO_HUB_ID);
  const wanted = firstStart
    ? connection.externalIds
    : current
        .filter((a) => a.platform === connection.platform && a.status !== 'disconnected' && connection.externalIds.includes(a.externalId))
        .map((a) => a.externalId);
  if (wanted.length === 0) return [];
  const connected = await connectAdAccounts(deps, DEMO_HUB_ID, {
    platform: connection.platform,
    kind: connection.kind,
    accessToken: connection.credential,
    tokenExpiresAt: null,
    externalIds: wanted,
    label: connection.label,
  });
  return connected.map((a) => a.id);
}

/** The demo hub's Business Profile locations, each the channel of a store. */
export const DEMO_BUSINESS_LOCATIONS = [1, 2, 3].map((n) => ({
  name: `accounts/4200/locations/42000${n}`,
  title: `Brewline Store ${n} (Business Profile sandbox)`,
  reviews: 60 + 20 * n,
  workspaceId: ws(n),
}));

/**
 * Connects the demo's Business Profile locations with a fresh sandbox refresh token (on each start:
 * the sandbox's tokens live as long as its process); their reviews then sync by themselves.
 */
export async function connectDemoLocations(deps: GoogleBusinessDeps, refreshToken: string): Promise<void> {
  await connectBusinessLocations(deps, DEMO_HUB_ID, {
    refreshToken,
    mappings: DEMO_BUSINESS_LOCATIONS.map((l) => ({ location: l.name, workspaceId: l.workspaceId })),
  });
}

/** The demo's running sandboxes: where they are, the configuration pointed at them, the connections they issue. */
export interface DemoSandboxes {
  /** `config` with each running sandbox's platform settings pointed at it. */
  configure(config: Config): Config;
  /** A fresh credential per platform for the demo hub's accounts. */
  connections(): DemoConnection[];
  /** A fresh refresh token of the Business Profile sandbox, when it runs. */
  businessProfileToken(): string | undefined;
  /** Banner lines: label and address. */
  banner: [string, string][];
  close(): Promise<void>;
}

/**
 * Starts the sandboxes the configuration asks for (config.metaSandbox, googleAdsSandbox,
 * openaiAdsSandbox: the demo without a real platform of its own), on loopback. One that fails to
 * start closes those started before.
 */
export async function startDemoSandboxes(config: Config): Promise<DemoSandboxes | undefined> {
  const started: { close(): Promise<void> }[] = [];
  try {
    // One Meta for the demo: ad accounts and the Pages / Instagram publishing routes on one server.
    const meta = config.metaSandbox ? await startMetaPagesSandbox({ host: '127.0.0.1', seed: DEMO_META_SEED }) : undefined;
    if (meta) started.push(meta);
    const google = config.googleAdsSandbox
      ? await startGoogleAdsSandbox({ host: '127.0.0.1', customers: DEMO_GOOGLE_CUSTOMERS, historyDays: 100 })
      : undefined;
    if (google) started.push(google);
    const chatgpt = config.openaiAdsSandbox
      ? await startOpenAIAdsSandbox({ host: '127.0.0.1', accounts: DEMO_CHATGPT_ACCOUNTS, historyDays: 100 })
      : undefined;
    if (chatgpt) started.push(chatgpt);
    const business = config.googleBusinessSandbox ? await startGoogleBusinessSandbox({ locations: DEMO_BUSINESS_LOCATIONS }) : undefined;
    if (business) started.push(business);
    if (started.length === 0) return undefined;
    const note = "(the demo's ad accounts sync from it; docs/ad-accounts.md)";
    return {
      configure: (c) => ({
        ...c,
        ...(meta ? { metaGraphUrl: meta.url, metaDialogUrl: meta.url, metaAppId: meta.appId, metaAppSecret: meta.appSecret } : {}),
        ...(google
          ? {
              googleAdsUrl: google.url,
              googleOAuthUrl: google.url,
              googleAccountsUrl: google.url,
              googleClientId: google.clientId,
              googleClientSecret: google.clientSecret,
              // A real developer token is never sent to the sandbox.
              googleDeveloperToken: undefined,
            }
          : {}),
        ...(chatgpt ? { openaiAdsUrl: chatgpt.url } : {}),
        ...(business
          ? {
              googleBusinessUrl: business.url,
              googleBusinessOAuth: { url: business.url, clientId: business.clientId, clientSecret: business.clientSecret },
            }
          : {}),
      }),
      businessProfileToken: () => business?.issueRefreshToken(),
      connections: () => [
        ...(meta ? [demoMetaConnection(meta.issueToken({ systemUser: true }))] : []),
        ...(google ? [demoGoogleConnection(google.issueRefreshToken())] : []),
        ...(chatgpt ? [demoChatGptConnection(chatgpt.issueKey({ accountId: DEMO_CHATGPT_ACCOUNTS[0]!.id }))] : []),
      ],
      banner: [
        ...(meta ? [['Meta sandbox', `${meta.url}  ${note}`] as [string, string]] : []),
        ...(google ? [['Google Ads sandbox', `${google.url}  ${note}`] as [string, string]] : []),
        ...(chatgpt ? [['ChatGPT Ads sandbox', `${chatgpt.url}  ${note}`] as [string, string]] : []),
        ...(business
          ? [['Business Profile sandbox', `${business.url}  (the demo's reviews sync from it; docs/channels.md)`] as [string, string]]
          : []),
      ],
      close: async () => {
        await Promise.all(started.map((s) => s.close()));
      },
    };
  } catch (error) {
    await Promise.all(started.map((s) => s.close().catch(() => {})));
    throw error;
  }
}
