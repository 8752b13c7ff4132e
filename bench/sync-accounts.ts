// The ad accounts of bench/sync.ts, built the same way by the benchmark and by the sandbox process
// it starts (the list is too long for a command line): per platform, in that platform's sandbox
// shape, ad sets (ad groups) named with [ws:…] tokens for most, every tenth matching none.
export type BenchPlatform = 'meta' | 'google_ads' | 'chatgpt_ads';

const ZONES = ['America/Los_Angeles', 'America/New_York', 'Europe/Berlin', 'Australia/Sydney'];

/** The platform's external id of bench account `a` (distinct across platforms, as `a` is). */
export const benchAccountId = (platform: BenchPlatform, a: number): string =>
  platform === 'meta' ? `act_${100_000 + a}` : platform === 'google_ads' ? `${8_000_000_000 + a}` : `adacct_bench_${a}`;

/** Accounts `first` … `first + count − 1`: id, name, zone and ad sets, for a sandbox to take in its own field names. */
export function benchAccounts(platform: BenchPlatform, first: number, count: number, adSets: number, workspaces: number) {
  return Array.from({ length: count }, (_, i) => {
    const a = first + i;
    const id = benchAccountId(platform, a);
    return {
      id,
      name: `Bench account ${id}`,
      zone: ZONES[a % ZONES.length]!,
      adSets: Array.from({ length: adSets }, (_, s) => ({
        id: `${200_000 + a * 1_000 + s}`,
        name: s % 10 === 9 ? `Ad set ${s}` : `Ad set ${s} [ws:ws_bench_${s % workspaces}]`,
        campaignId: `${300_000 + a * 100 + Math.floor(s / 10)}`,
        campaignName: `Campaign ${Math.floor(s / 10)}`,
      })),
    };
  });
}
