// The ad accounts of bench/sync.ts, built the same way by the benchmark and by the sandbox process
// it starts (the list is too long for a command line).
const ZONES = ['America/Los_Angeles', 'America/New_York', 'Europe/Berlin', 'Australia/Sydney'];

export function benchAccounts(accounts: number, adSets: number, workspaces: number) {
  return Array.from({ length: accounts }, (_, a) => ({
    id: `act_${100_000 + a}`,
    timezone_name: ZONES[a % ZONES.length]!,
    adSets: Array.from({ length: adSets }, (_, s) => ({
      id: `${200_000 + a * 1_000 + s}`,
      // Most ad sets name a workspace; every tenth matches none (unattributed spend).
      name: s % 10 === 9 ? `Ad set ${s}` : `Ad set ${s} [ws:ws_bench_${s % workspaces}]`,
      campaignId: `${300_000 + a * 100 + Math.floor(s / 10)}`,
      campaignName: `Campaign ${Math.floor(s / 10)}`,
    })),
  }));
}
