// The Meta sandbox in a process of its own, for bench/sync.ts: the benchmark measures hubops's
// side of a sync, so the fake platform must not share its CPU. Argument: JSON {accounts, adSets,
// workspaces}. Prints one JSON line (url, token) and serves until killed.
import { startMetaSandbox } from '../src/integrations/meta/sandbox.ts';
import { benchAccounts } from './sync-accounts.ts';

const shape = JSON.parse(process.argv[2] ?? '{}') as { accounts: number; adSets: number; workspaces: number };
const sandbox = await startMetaSandbox({
  seed: {
    seed: 7,
    historyDays: 120,
    accounts: benchAccounts(shape.accounts, shape.adSets, shape.workspaces).map((a) => ({
      ...a,
      name: `Bench account ${a.id}`,
      currency: 'USD',
      account_status: 1,
    })),
  },
});
const token = sandbox.issueToken({ systemUser: true });
process.stdout.write(`${JSON.stringify({ url: sandbox.url, token })}\n`);
process.on('SIGTERM', () => void sandbox.close().then(() => process.exit(0)));
