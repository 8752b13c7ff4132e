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
export class DomainError<I = Issue> extends Error {
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

/** Refuses input, naming every bad field. */
export const invalid = (issues: Issue[]): DomainError =>
  new DomainError('invalid', issues.map((i) => `${i.field}: ${i.message}`).join('; '), { issues });

export const notFound = (message: string): DomainError => new DomainError('not_found', message);

/**
 * Fastify's own refusals (unreadable body, bad URL, …) as our errors, in our words: its codes and
 * messages never reach a client. Undefined when `error` is not one of them.
 */
export function fromFrameworkError(error: { code?: unknown; statusCode?: unknown; name?: unknown }, bodyLimit: number): ApiError | undefined {
  const refuse = (message: string) => new ApiError(400, 'invalid_request', message);
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(413, 'payload_too_large', `The request body is larger than ${bodyLimit} bytes.`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError(415, 'unsupported_media_type', 'This endpoint does not accept that Content-Type; send application/json (or what the endpoint documents).');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return refuse('The body does not match its Content-Length header.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return refuse('The body is empty but its Content-Type is application/json; send a JSON object.');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return refuse('The body is not valid JSON.');
    case 'FST_ERR_BAD_URL':
      return refuse('The URL is not valid: it holds a malformed percent-encoding.');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return refuse('A path segment is longer than 100 characters; no id is that long.');
  }
  const status = typeof error.statusCode === 'number' ? error.statusCode : undefined;
  // The JSON parser's SyntaxError (also a forbidden key such as __proto__).
  if (status === 400 && error.name === 'SyntaxError') return refuse('The body is not valid JSON (keys such as __proto__ are refused).');
  if (status === 413) return new ApiError(413, 'payload_too_large', `The request body is larger than ${bodyLimit} bytes.`);
  if (status !== undefined && status >= 400 && status < 500) return new ApiError(status, 'invalid_request', 'The request could not be read.');
  return undefined;
}
