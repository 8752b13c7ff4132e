// A small in-test ad platform (AdPlatformClient) for the sync engine's tests and its crash child
// process: accounts with hourly rows held in memory, token checks, and scripted failures,
// throttles and pauses. Not a test file itself. The Meta wire format has its own sandbox and tests.
import {
  PlatformError,
  PlatformThrottled,
  type AccountRef,
  type AdPlatformClient,
  type LocalDayRange,
  type PlatformAdAccount,
  type PlatformCredential,
  type PlatformSpendRow,
} from '../../src/integrations/ad-platform.ts';

export interface FakeAccount extends PlatformAdAccount {
  rows: PlatformSpendRow[];
}

export type Scripted = { error: Error; afterBatches?: number };

export class FakePlatform implements AdPlatformClient {
  readonly platform = 'meta' as const;
  readonly accounts = new Map<string, FakeAccount>();
  /** Tokens that can read every account. */
  readonly tokens = new Set<string>();
  /** Errors thrown by the next readSpend calls, in order (after `afterBatches` batches). */
  readonly script: Scripted[] = [];
  /** Every readSpend asked, in order. */
  readonly reads: { externalId: string; range: LocalDayRange }[] = [];
  /** Every token the fake was given (a test checks none reached a log). */
  readonly seenTokens = new Set<string>();
  /** Rows per batch. */
  batchSize = 50;
  /** Awaited before each batch: a test pauses or slows a read here. */
  beforeBatch: (externalId: string) => Promise<void> = async () => {};
  #inFlight = new Map<string, number>();
  /** The most concurrent reads of one account seen. */
  maxConcurrent = 0;

  #check(credential: PlatformCredential): void {
    this.seenTokens.add(credential.secret);
    if (!this.tokens.has(credential.secret)) {
      throw new PlatformError('needs_reconnect', 'the access token was rejected', {
        platformMessage: 'Error validating access token: Session has expired.',
        platformCode: '190/463',
      });
    }
  }

  #account(externalId: string): FakeAccount {
    const account = this.accounts.get(externalId);
    if (!account)
      throw new PlatformError('missing_permission', 'no access to the ad account', {
        platformMessage: `Ad account ${externalId} is not accessible with this token.`,
        platformCode: '200',
      });
    return account;
  }

  async describeAccount(credential: PlatformCredential, { externalId }: AccountRef): Promise<PlatformAdAccount> {
    this.#check(credential);
    const { rows: _rows, ...account } = this.#account(externalId);
    return account;
  }

  async listAccounts(credential: PlatformCredential): Promise<PlatformAdAccount[]> {
    this.#check(credential);
    return [...this.accounts.values()].map(({ rows: _rows, ...a }) => a);
  }

  async *readSpend(credential: PlatformCredential, account: PlatformAdAccount, range: LocalDayRange): AsyncIterable<PlatformSpendRow[]> {
    this.#check(credential);
    this.reads.push({ externalId: account.externalId, range });
    const n = (this.#inFlight.get(account.externalId) ?? 0) + 1;
    this.#inFlight.set(account.externalId, n);
    this.maxConcurrent = Math.max(this.maxConcurrent, n);
    try {
      const scripted = this.script.shift();
      const rows = this.#account(account.externalId).rows.filter((r) => r.date >= range.since && r.date <= range.until);
      const batches: PlatformSpendRow[][] = [];
      for (let i = 0; i < rows.length; i += this.batchSize) batches.push(rows.slice(i, i + this.batchSize));
      const failAt = scripted ? Math.min(scripted.afterBatches ?? 0, batches.length) : -1;
      for (let b = 0; b <= batches.length; b++) {
        if (b === failAt) throw scripted!.error;
        if (b === batches.length) break;
        await this.beforeBatch(account.externalId);
        yield batches[b]!.map((r) => ({ ...r }));
      }
    } finally {
      this.#inFlight.set(account.externalId, this.#inFlight.get(account.externalId)! - 1);
    }
  }

  add(account: Partial<FakeAccount> & { externalId: string }): FakeAccount {
    const full: FakeAccount = {
      name: `Account ${account.externalId}`,
      currency: 'USD',
      timeZone: 'America/Los_Angeles',
      active: true,
      status: '1',
      accessVia: null,
      rows: [],
      ...account,
    };
    this.accounts.set(full.externalId, full);
    return full;
  }
}

export const throttled = (ms: number) =>
  new PlatformThrottled(ms, `throttled for ${ms} ms`, 'There have been too many calls from this ad-account. Wait a bit and try again.');
export const failure = (kind: PlatformError['kind'], words: string, code = '1') =>
  new PlatformError(kind, `the platform failed (${kind})`, { platformMessage: words, platformCode: code });

/** Days from `since` to `until`, YYYY-MM-DD. */
export function days(since: string, until: string): string[] {
  const out: string[] = [];
  for (let t = Date.parse(`${since}T00:00:00Z`); t <= Date.parse(`${until}T00:00:00Z`); t += 86_400_000)
    out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}

/**
 * Deterministic hourly rows: every local hour of every day, for each ad set, some micros that are
 * not whole cents (so rounding matters). The spring-forward hour (2026-03-08 02:00 in Los Angeles) is absent.
 */
export function hourlyRows(
  since: string,
  until: string,
  adSets: { campaignId: string; campaignName: string; adSetId: string; adSetName: string }[],
  seed = 1,
): PlatformSpendRow[] {
  const rows: PlatformSpendRow[] = [];
  for (const date of days(since, until)) {
    for (let hour = 0; hour < 24; hour++) {
      if (date === '2026-03-08' && hour === 2) continue;
      adSets.forEach((s, i) => {
        const day = Number(date.slice(8, 10));
        rows.push({ date, hour, ...s, spendMicros: BigInt(((day * 7919 + hour * 104_729 + i * 13 + seed * 31) % 2_000_000) + 1_234) });
      });
    }
  }
  return rows;
}

export const CRASH_TOKEN = 'EAAGcrashTESTtoken42';
export const CRASH_NOW = '2026-11-20T18:00:00Z';
export const CRASH_AD_SETS = ['a', 'b', 'c'].map((w) => ({
  campaignId: `c_${w}`,
  campaignName: `Campaign ${w}`,
  adSetId: `s_${w}`,
  adSetName: `Set [ws:ws_crash_${w}]`,
}));

/** The platform the crash test and its child process both see: one UTC account, 120 days of hourly rows. */
export function crashPlatform(): FakePlatform {
  const platform = new FakePlatform();
  platform.tokens.add(CRASH_TOKEN);
  platform.add({
    externalId: 'act_4242',
    timeZone: 'UTC',
    rows: hourlyRows('2026-07-20', '2026-11-19', CRASH_AD_SETS).concat(
      hourlyRows('2026-11-20', '2026-11-20', CRASH_AD_SETS).filter((r) => r.hour! < 18),
    ),
  });
  return platform;
}
