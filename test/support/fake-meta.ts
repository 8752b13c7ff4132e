import { randomBytes } from 'node:crypto';
import {
  PlatformError,
  type AccountRef,
  type AdPlatformClient,
  type LocalDayRange,
  type PlatformAdAccount,
  type PlatformCredential,
  type PlatformSpendRow,
} from '../../src/integrations/ad-platform.ts';

// A fake Meta for the surfaces' tests (web admin, CLI): what the sync engine and the Connect pages
// ask of a platform client, in process: accounts a token can read, hourly ad-set spend, Meta's
// refusals in Meta's words, and the OAuth steps (a code per approval, exchanged once). The wire
// format itself is the Meta client's and sandbox's to test (src/integrations/meta/).

export interface FakeAccount extends PlatformAdAccount {
  rows: PlatformSpendRow[];
}

/** Meta's words for an expired token (error 190, subcode 463). */
export const EXPIRED_WORDS = 'Error validating access token: Session has expired on Friday, 27-Nov-26 08:00:00 PST.';

export class FakeMeta implements AdPlatformClient {
  readonly platform = 'meta' as const;
  readonly #accounts = new Map<string, FakeAccount>();
  readonly #tokens = new Map<string, { accounts: Set<string>; expired: boolean; expiresAt: Date | null }>();
  readonly #codes = new Map<string, string[]>();
  readonly #failures = new Map<string, PlatformError>();
  /** Every token a call was made with, for tests that check which token the engine used. */
  readonly usedTokens: string[] = [];

  addAccount(a: Partial<FakeAccount> & { externalId: string }): FakeAccount {
    const account: FakeAccount = {
      name: `Ads ${a.externalId}`,
      currency: 'USD',
      timeZone: 'UTC',
      active: true,
      status: '1',
      accessVia: null,
      rows: [],
      ...a,
    };
    this.#accounts.set(a.externalId, account);
    return account;
  }

  issueToken(accounts: string[], expiresAt: Date | null = null): string {
    const token = `EAAfake${randomBytes(24).toString('base64url').replace(/[-_]/g, 'x')}`;
    this.#tokens.set(token, { accounts: new Set(accounts), expired: false, expiresAt });
    return token;
  }

  expire(token: string): void {
    this.#tokens.get(token)!.expired = true;
  }

  /** The next reads of the account's spend fail so, until `fail(id, undefined)`. */
  fail(accountId: string, error: PlatformError | undefined): void {
    if (error) this.#failures.set(accountId, error);
    else this.#failures.delete(accountId);
  }

  #check(credential: PlatformCredential, accountId?: string): { accounts: Set<string> } {
    this.usedTokens.push(credential.secret);
    const token = this.#tokens.get(credential.secret);
    if (!token || token.expired)
      throw new PlatformError('needs_reconnect', 'Meta refused the access token (190)', {
        platformMessage: token ? EXPIRED_WORDS : 'Invalid OAuth access token - Cannot parse access token',
        platformCode: token ? '190/463' : '190',
      });
    if (accountId !== undefined && (!token.accounts.has(accountId) || !this.#accounts.has(accountId))) {
      throw new PlatformError('missing_permission', 'Meta refused access to the ad account (200)', {
        platformMessage: `(#200) Ad account owner has NOT grant ads_management or ads_read permission`,
        platformCode: '200',
      });
    }
    return token;
  }

  async describeAccount(credential: PlatformCredential, { externalId }: AccountRef): Promise<PlatformAdAccount> {
    this.#check(credential, externalId);
    const { rows: _rows, ...account } = this.#accounts.get(externalId)!;
    return account;
  }

  async listAccounts(credential: PlatformCredential): Promise<PlatformAdAccount[]> {
    const token = this.#check(credential);
    return [...token.accounts].flatMap((id) => {
      const a = this.#accounts.get(id);
      if (!a) return [];
      const { rows: _rows, ...account } = a;
      return [account];
    });
  }

  async *readSpend(credential: PlatformCredential, account: PlatformAdAccount, range: LocalDayRange): AsyncIterable<PlatformSpendRow[]> {
    this.#check(credential, account.externalId);
    const failure = this.#failures.get(account.externalId);
    if (failure) throw failure;
    const rows = this.#accounts.get(account.externalId)!.rows.filter((r) => r.date >= range.since && r.date <= range.until);
    // In pages, as a platform sends them.
    for (let i = 0; i < rows.length; i += 500) yield rows.slice(i, i + 500);
  }

  // ── OAuth (MetaOAuth of src/integrations/meta/client.ts) ──────────────────────────────────

  authorizeUrl(p: { dialogUrl: string; appId: string; redirectUri: string; state: string; scopes: string[] }): string {
    const url = new URL(`${p.dialogUrl.replace(/\/$/, '')}/v26.0/dialog/oauth`);
    url.search = new URLSearchParams({
      client_id: p.appId,
      redirect_uri: p.redirectUri,
      state: p.state,
      scope: p.scopes.join(','),
    }).toString();
    return url.href;
  }

  /** What Meta's dialog does when the person clicks Continue: a code for these accounts. */
  approve(accounts: string[]): string {
    const code = randomBytes(16).toString('hex');
    this.#codes.set(code, accounts);
    return code;
  }

  async exchangeCode(p: {
    appId: string;
    appSecret: string;
    redirectUri: string;
    code: string;
  }): Promise<{ accessToken: string; expiresAt: Date | null }> {
    const accounts = this.#codes.get(p.code);
    this.#codes.delete(p.code);
    if (!accounts)
      throw new PlatformError('invalid_request', 'Meta refused the code (100)', {
        platformMessage: 'This authorization code has been used.',
        platformCode: '100/36009',
      });
    return { accessToken: this.issueToken(accounts, new Date(Date.now() + 3_600_000)), expiresAt: new Date(Date.now() + 3_600_000) };
  }

  async exchangeForLongLived(p: {
    appId: string;
    appSecret: string;
    accessToken: string;
  }): Promise<{ accessToken: string; expiresAt: Date | null }> {
    const token = this.#check({ secret: p.accessToken });
    const expiresAt = new Date(Date.now() + 60 * 86_400_000);
    return { accessToken: this.issueToken([...token.accounts], expiresAt), expiresAt };
  }
}

/** Hourly spend rows of one ad set over account-local days: `micros` each hour. */
export function hourlyRows(o: {
  days: string[];
  campaignId: string;
  campaignName: string;
  adSetId: string;
  adSetName: string;
  micros: bigint;
  hours?: number[];
}): PlatformSpendRow[] {
  const hours = o.hours ?? Array.from({ length: 24 }, (_, h) => h);
  return o.days.flatMap((date) =>
    hours.map((hour) => ({
      date,
      hour,
      campaignId: o.campaignId,
      campaignName: o.campaignName,
      adSetId: o.adSetId,
      adSetName: o.adSetName,
      spendMicros: o.micros,
    })),
  );
}

/** The UTC day `n` days from `now` (negative: before). */
export const utcDayFrom = (now: Date, n: number) => new Date(now.getTime() + n * 86_400_000).toISOString().slice(0, 10);
