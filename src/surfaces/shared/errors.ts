import { DomainError, type Issue, type RefusalKind } from '../../platform/errors.ts';

/** An HTTP error answer: a status, the body `{error, message, issues?}` and any headers. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly issues: Issue[] | undefined;
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    code: string,
    message: string,
    options: { issues?: Issue[] | undefined; headers?: Record<string, string> } = {},
  ) {
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

/** Each kind of domain refusal as HTTP: its status, and the error code when the domain names none. */
const HTTP_REFUSALS: Record<RefusalKind, { status: number; code: string }> = {
  invalid: { status: 400, code: 'invalid_request' },
  forbidden: { status: 403, code: 'forbidden' },
  not_found: { status: 404, code: 'not_found' },
  conflict: { status: 409, code: 'conflict' },
  too_large: { status: 413, code: 'payload_too_large' },
  unsupported_type: { status: 415, code: 'unsupported_media_type' },
  rejected: { status: 422, code: 'rejected' },
};

/**
 * The HTTP answer to a refusal: an ApiError as it is, a DomainError by its kind (its own code
 * when it has one). Undefined for anything else (a bug, the database down): not a refusal.
 * REST answers with it, and the MCP tools word their errors from it.
 */
export function refusalOf(error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return error;
  if (!(error instanceof DomainError)) return undefined;
  const { status, code } = HTTP_REFUSALS[error.kind];
  // Only the field and message of each issue are the client's (an import issue also has its line).
  const issues = error.issues?.map((issue) => ({ field: issue.field ?? '(input)', message: issue.message }));
  return new ApiError(status, error.code ?? code, error.message, issues ? { issues } : {});
}

/**
 * Fastify's own refusals (unreadable body, bad URL, …) as our errors, in our words: its codes and
 * messages never reach a client. Undefined when `error` is not one of them.
 */
export function fromFrameworkError(
  error: { code?: unknown; statusCode?: unknown; name?: unknown },
  bodyLimit: number,
): ApiError | undefined {
  const refuse = (message: string) => new ApiError(400, 'invalid_request', message);
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(413, 'payload_too_large', `The request body is larger than ${bodyLimit} bytes.`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError(
        415,
        'unsupported_media_type',
        'This endpoint does not accept that Content-Type; send application/json (or what the endpoint documents).',
      );
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
  if (status !== undefined && status >= 400 && status < 500)
    return new ApiError(status, 'invalid_request', 'The request could not be read.');
  return undefined;
}
