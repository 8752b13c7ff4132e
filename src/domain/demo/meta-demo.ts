// The demo's Meta: the sandbox's accounts for the demo hub (ad sets named with [ws:…] tokens, so
// most spend lands on locations and a little stays unattributed), and their connection. The
// sandbox's tokens live as long as its process, so each start of the demo connects the accounts
// again with a fresh token (same account rows: their synced days stay); an account the admin
// disconnected stays disconnected.
import type { SandboxSeed } from '../../integrations/meta/sandbox.ts';
import { connectAdAccounts, listAdAccounts, type AdSyncDeps } from '../ad-sync/ad-account.service.ts';
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

const DEMO_META_ACCOUNTS = DEMO_META_SEED.accounts!.map((a) => a.id);

/**
 * Connects the demo hub's sandbox accounts with `token` (a system-user token of the sandbox): all
 * of them on the demo's first start, afterwards those still connected. Returns the ids connected.
 */
export async function connectDemoMeta(deps: AdSyncDeps, token: string, firstStart: boolean): Promise<string[]> {
  const current = await listAdAccounts(deps, DEMO_HUB_ID);
  const wanted = firstStart
    ? DEMO_META_ACCOUNTS
    : current.filter((a) => a.status !== 'disconnected' && DEMO_META_ACCOUNTS.includes(a.externalId)).map((a) => a.externalId);
  if (wanted.length === 0) return [];
  const connected = await connectAdAccounts(deps, DEMO_HUB_ID, {
    platform: 'meta',
    kind: 'system_user',
    accessToken: token,
    tokenExpiresAt: null,
    externalIds: wanted,
    label: 'Demo system user (Meta sandbox)',
  });
  return connected.map((a) => a.id);
}
