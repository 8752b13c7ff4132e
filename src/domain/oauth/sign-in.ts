import type { Db } from '../../db/database.ts';
import type { RateLimiter } from '../../platform/rate-limit.ts';
import { hasForbiddenCharacter } from '../../platform/text.ts';
import { SIGN_IN_LIMITS } from '../../policy.ts';
import { normaliseEmail } from '../tenancy/tenancy.ts';
import { checkCredentials } from './identity.service.ts';

export type SignInOutcome = { ok: true; user: { id: string; email: string } } | { ok: false; reason: 'throttled' | 'mismatch' };

/**
 * Checks email and password under the failed-attempt limits shared by every sign-in form (the
 * OAuth sign-in and the web admin count against the same windows). While either window is full
 * even the right password is refused, so guessing cannot continue on another page. These limits
 * never fail open: without Redis the limiter counts per instance (RedisRateLimiter).
 */
export async function signIn(
  deps: { db: Db; limiter: RateLimiter; nowMs: number },
  attempt: { email: string; password: string; address: string },
): Promise<SignInOutcome> {
  const { limiter, nowMs } = deps;
  // Normalised here, not by each form: one window per address however a caller spells it.
  const email = normaliseEmail(attempt.email);
  const emailKey = `signin-fail:${email}`;
  const addressKey = `signin-fail-ip:${attempt.address}`;
  const [emailFailures, addressFailures] = await Promise.all([
    limiter.count(emailKey, SIGN_IN_LIMITS.windowMs, nowMs),
    limiter.count(addressKey, SIGN_IN_LIMITS.windowMs, nowMs),
  ]);
  if (emailFailures >= SIGN_IN_LIMITS.perEmail || addressFailures >= SIGN_IN_LIMITS.perAddress) return { ok: false, reason: 'throttled' };
  // An email no account can have (NUL, lone surrogates…) is a mismatch like any other, never a query.
  const user =
    email && attempt.password && !hasForbiddenCharacter(email) ? await checkCredentials(deps.db, email, attempt.password) : undefined;
  if (user) return { ok: true, user };
  await Promise.all([
    limiter.hit(emailKey, Number.MAX_SAFE_INTEGER, SIGN_IN_LIMITS.windowMs, nowMs),
    limiter.hit(addressKey, Number.MAX_SAFE_INTEGER, SIGN_IN_LIMITS.windowMs, nowMs),
  ]);
  return { ok: false, reason: 'mismatch' };
}
