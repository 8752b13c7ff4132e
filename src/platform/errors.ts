/** One bad field of a refused input, and what is wrong with it. */
export interface Issue {
  field: string;
  message: string;
}

/**
 * What kind of refusal a DomainError is. Each surface maps a kind to its own answer in one place
 * (REST: a status code and error body; MCP: a tool error; the web admin: a page; the CLI: exit 1).
 */
export type RefusalKind =
  | 'invalid' // the input breaks a rule (names the fields in issues when it can)
  | 'not_found' // no such record in the caller's reach ("not yours" looks the same)
  | 'conflict' // the record already exists (duplicate name, email, …)
  | 'rejected' // understood but refused in this state (an idempotency key reused for another request)
  | 'forbidden' // the caller may not do this (a workspace-bound token asking for hub-wide figures)
  | 'too_large' // the content is over its size limit
  | 'unsupported_type'; // the content is of a type not accepted

/** A refused operation in the domain (duplicate name, unknown hub, bad field, …). Carries no HTTP. */
export class DomainError<I extends { field?: string; message: string } = Issue> extends Error {
  readonly kind: RefusalKind;
  /** The machine-readable code clients see; undefined: the surface's default code for the kind. */
  readonly code: string | undefined;
  readonly issues: I[] | undefined;

  constructor(kind: RefusalKind, message: string, options: { code?: string; issues?: I[] } = {}) {
    super(message);
    this.kind = kind;
    this.code = options.code;
    this.issues = options.issues;
  }
}

/** Refuses input for the fields named, its message listing each (`field: message; …`). */
export const refuseFields = (kind: RefusalKind, issues: Issue[], code?: string): DomainError =>
  new DomainError(kind, issues.map((i) => `${i.field}: ${i.message}`).join('; '), { issues, ...(code === undefined ? {} : { code }) });

/** Refuses input, naming every bad field. */
export const invalid = (issues: Issue[]): DomainError => refuseFields('invalid', issues);

export const notFound = (message: string): DomainError => new DomainError('not_found', message);
