// Reads a `user` line: a person with a password and a role in one hub.

import { emailProblem, normaliseEmail, passwordProblem, ROLES } from '../../tenancy/tenancy.ts';
import type { FieldReader } from '../field-reader.ts';
import type { UserRecord } from '../records.ts';

export function readUser(r: FieldReader): UserRecord {
  const id = r.id('user');
  const email = normaliseEmail(r.text('email'));
  const emailIssue = typeof r.raw('email') === 'string' ? emailProblem(email) : undefined;
  if (emailIssue) r.fail('email', emailIssue);
  const password = r.text('password', { secret: true });
  const passwordIssue = typeof r.raw('password') === 'string' ? passwordProblem(password) : undefined;
  if (passwordIssue) r.fail('password', passwordIssue);
  return {
    type: 'user',
    line: r.line,
    id,
    email,
    password,
    firstname: r.name('firstname', 100),
    lastname: r.name('lastname', 100),
    hubId: r.ref('hubId'),
    role: r.oneOf('role', ROLES),
    workspaceId: r.refOrNull('workspaceId', true),
    staff: r.bool('staff', false),
    idGiven: r.raw('id') !== undefined,
  };
}
