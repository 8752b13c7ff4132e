import type { LoggerOptions } from 'pino';

// Secrets never reach a log line: credentials in headers and any field that carries one.
const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-api-key"]',
  'res.headers["set-cookie"]',
  '*.authorization',
  '*.password',
  '*.key',
  '*.token',
  '*.access_token',
  '*.refresh_token',
  '*.client_secret',
  '*.code_verifier',
];

// Query parameters that carry a credential: embed tokens, OAuth codes, the web app's one-time
// form token (`created`, which reveals a new key once), and anything a client wrongly puts in a
// URL. Request URLs are logged, so their values are masked first.
const SECRET_QUERY = /([?&](?:token|access_token|refresh_token|code|code_verifier|client_secret|key|api_key|password|created)=)[^&#]*/gi;

export function redactQuery(url: string): string {
  return url.replace(SECRET_QUERY, '$1[redacted]');
}

export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    serializers: {
      // Fastify's request line, with credentials in the query string masked.
      req: (request: { method: string; url: string; ip?: string; id?: string }) => ({
        id: request.id,
        method: request.method,
        url: redactQuery(request.url),
        remoteAddress: request.ip,
      }),
    },
  };
}
