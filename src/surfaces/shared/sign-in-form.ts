// The one sign-in form handler, for the OAuth sign-in and the web admin's: the form's CSRF token,
// its fields, then the domain's signIn (shared failure limits) and what to tell the person. Each
// surface renders the answer in its own page.
import type { FastifyRequest } from 'fastify';
import type { Db } from '../../db/database.ts';
import { signIn } from '../../domain/oauth/sign-in.ts';
import { normaliseEmail } from '../../domain/tenancy/tenancy.ts';
import type { Clock } from '../../platform/clock.ts';
import { sameSecret } from '../../platform/constant-time.ts';
import type { RateLimiter } from '../../platform/rate-limit.ts';

interface SignInFieldErrors {
  email?: string;
  password?: string;
}

/** Signed in, or the form to show again: with its status, the email as typed and what went wrong. */
type SignInFormResult =
  | { ok: true; user: { id: string; email: string } }
  | { ok: false; status: 400 | 401 | 429; email: string; expired: boolean; error?: string; fieldErrors?: SignInFieldErrors };

/**
 * Handles a posted sign-in form whose CSRF token must equal `expectedCsrf` (undefined: the form
 * cannot be genuine). A database outage is thrown, for the surface's unavailable page.
 */
export async function submitSignInForm(
  deps: { db: Db; limiter: RateLimiter; clock: Clock },
  request: FastifyRequest,
  expectedCsrf: string | undefined,
): Promise<SignInFormResult> {
  const body = (request.body ?? {}) as Record<string, unknown>;
  const email = normaliseEmail(String(body.email ?? '')).slice(0, 320);
  const password = String(body.password ?? '').slice(0, 1024);
  const again = (
    status: 400 | 401 | 429,
    problem: { error?: string; fieldErrors?: SignInFieldErrors },
    expired = false,
  ): SignInFormResult => ({ ok: false, status, email, expired, ...problem });
  if (expectedCsrf === undefined || !sameSecret(expectedCsrf, body.csrf))
    return again(400, { error: 'Your sign-in form expired. Please try again.' }, true);
  const fieldErrors: SignInFieldErrors = {};
  if (!email) fieldErrors.email = 'Enter the email address you sign in with.';
  else if (!/^[^\s@]+@[^\s@]+$/.test(email)) fieldErrors.email = 'Enter an email address like name@example.com.';
  if (!password) fieldErrors.password = 'Enter your password.';
  if (fieldErrors.email || fieldErrors.password) return again(400, { fieldErrors });
  const outcome = await signIn(
    { db: deps.db, limiter: deps.limiter, nowMs: deps.clock.now().getTime() },
    { email, password, address: request.clientAddress },
  );
  if (outcome.ok) return outcome;
  if (outcome.reason === 'throttled') return again(429, { error: 'Too many failed sign-in attempts. Wait 15 minutes and try again.' });
  return again(401, { error: 'That email and password do not match an account.' });
}
