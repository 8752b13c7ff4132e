// The Meta sandbox in a process of its own, for bench/sync.ts: the benchmark measures hubops's
// side of a sync, so the fake platform must not share its CPU. Prints one JSON line (url, token,
// accounts) and serves until killed.
import { startMetaSandbox } from '../src/integrations/meta/sandbox.ts';

const spec = JSON.parse(process.argv[2] ?? '{}') as { accounts: { id: string; timezone_name: string; adSets: { id: string; name: string; campaignId: string; campaignName: string }[] }[] };
const sandbox = await startMetaSandbox({
  seed: { seed: 7, historyDays: 120, accounts: spec.accounts.map((a) => ({ ...a, name: `Bench account ${a.id}`, currency: 'USD', account_status: 1 })) },
});
const token = sandbox.issueToken({ systemUser: true });
process.stdout.write(`${JSON.stringify({ url: sandbox.url, token })}\n`);
process.on('SIGTERM', () => void sandbox.close().then(() => process.exit(0)));
