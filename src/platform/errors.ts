/** An error that becomes an HTTP response `{error, message, issues?}` (contract §4, §5). */
export interface Issue {
  field: string;
  message: string;
}

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly issues: Issue[] | undefined;
  readonly headers: Record<string, string>;

  constructor(status: number, code: string, message: string, options: { issues?: Issue[]; headers?: Record<string, string> } = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.issues = options.issues;
    this.headers = options.headers ?? {};
  }

  body(): { error: string; message: string; issues?: Issue[] } {
    return this.issues ? { error: this.code, message: this.message, issues: this.issues } : { error: this.code, message: this.message };
  }
}

export const invalidRequest = (issues: Issue[]): ApiError =>
  new ApiError(400, 'invalid_request', issues.map((i) => `${i.field}: ${i.message}`).join('; '), { issues });

/** A refused operation in the domain (duplicate name, unknown hub, …): the CLI exits 1 with it. */
export class DomainError extends Error {}
