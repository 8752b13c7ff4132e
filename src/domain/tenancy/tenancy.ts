import { DomainError } from '../../platform/errors.ts';
import { HIDDEN_FORMAT_MESSAGE, hasHiddenFormatCharacter } from '../../platform/text.ts';

// Accounts own hubs; users belong to an account and hold a role in a hub (a membership row).
// The rules below are shared with the NDJSON import, so both refuse exactly the same input.
// The *Problem functions return the reason without the subject ("must be …"), so callers can
// put it after a flag name or an import field path.

export const PLANS = ['standard', 'partner'] as const;
export type Plan = (typeof PLANS)[number];
export const ROLES = ['hub_admin', 'member'] as const;
export type Role = (typeof ROLES)[number];
const PASSWORD_MIN_LENGTH = 8;
// scrypt accepts any length; the cap only stops a megabyte "password" from being hashed.
const PASSWORD_MAX_LENGTH = 1024;
const EMAIL_PATTERN = /^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/;

/**
 * Names are kept exactly as given (trailing spaces included) but must show something, and show
 * what they hold: no invisible formatting characters (platform/text.ts).
 */
export function nameProblem(name: string, max = 200): string | undefined {
  if (name.length < 1 || name.length > max) return `must be 1 to ${max} characters`;
  if (name.trim() === '') return 'must not be blank';
  if (hasHiddenFormatCharacter(name)) return HIDDEN_FORMAT_MESSAGE;
  return undefined;
}

export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** For an address already passed through normaliseEmail. */
export function emailProblem(email: string): string | undefined {
  if (email.length > 254 || !EMAIL_PATTERN.test(email)) return 'must be an email address like name@example.com';
  return undefined;
}

export function passwordProblem(password: string): string | undefined {
  const length = [...password].length;
  if (length < PASSWORD_MIN_LENGTH) return `must be at least ${PASSWORD_MIN_LENGTH} characters`;
  if (length > PASSWORD_MAX_LENGTH) return `must be at most ${PASSWORD_MAX_LENGTH} characters`;
  return undefined;
}

/** Refuses (invalid) with the subject and its problem, if there is one. */
export function check(subject: string, problem: string | undefined): void {
  if (problem) throw new DomainError('invalid', `${subject} ${problem}`);
}
