// One platform's sandbox in a process of its own, for bench/sync.ts: the benchmark measures
// hubops's side of a sync, so the fake platform must not share its CPU. Argument: JSON {platform,
// first, count, adSets, workspaces}. Prints one JSON line (url, the credentials that read the
// accounts, and the OAuth client where the platform has one) and serves until killed.
import { startGoogleAdsSandbox } from '../src/integrations/google-ads/sandbox.ts';
import { startMetaSandbox } from '../src/integrations/meta/sandbox.ts';
import { startOpenAIAdsSandbox } from '../src/integrations/openai-ads/sandbox.ts';
import { benchAccounts, type BenchPlatform } from './sync-accounts.ts';

const shape = JSON.parse(process.argv[2] ?? '{}') as {
  platform: BenchPlatform;
  first: number;
  count: number;
  adSets: number;
  workspaces: number;
};
const accounts = benchAccounts(shape.platform, shape.first, shape.count, shape.adSets, shape.workspaces);
const ids = accounts.map((a) => a.id);
const common = { seed: 7, historyDays: 120 };

let ready: { url: string; credentials: { secret: string; externalIds: string[] }[]; clientId?: string; clientSecret?: string };
let close: () => Promise<void>;
if (shape.platform === 'meta') {
  const sandbox = await startMetaSandbox({
    seed: {
      ...common,
      accounts: accounts.map((a) => ({
        id: a.id,
        name: a.name,
        currency: 'USD',
        timezone_name: a.zone,
        account_status: 1,
        adSets: a.adSets,
      })),
    },
  });
  ready = { url: sandbox.url, credentials: [{ secret: sandbox.issueToken({ systemUser: true }), externalIds: ids }] };
  close = () => sandbox.close();
} else if (shape.platform === 'google_ads') {
  const sandbox = await startGoogleAdsSandbox({
    ...common,
    customers: accounts.map((a) => ({ id: a.id, name: a.name, currency: 'USD', timeZone: a.zone, adGroups: a.adSets })),
  });
  ready = {
    url: sandbox.url,
    clientId: sandbox.clientId,
    clientSecret: sandbox.clientSecret,
    credentials: [{ secret: sandbox.issueRefreshToken(), externalIds: ids }],
  };
  close = () => sandbox.close();
} else {
  const sandbox = await startOpenAIAdsSandbox({
    ...common,
    accounts: accounts.map((a) => ({ id: a.id, name: a.name, currency_code: 'USD', timezone: a.zone, adGroups: a.adSets })),
  });
  // One API key per ad account: the platform has no other kind.
  ready = { url: sandbox.url, credentials: ids.map((id) => ({ secret: sandbox.issueKey({ accountId: id }), externalIds: [id] })) };
  close = () => sandbox.close();
}
process.stdout.write(`${JSON.stringify(ready)}\n`);
process.on('SIGTERM', () => void close().then(() => process.exit(0)));
