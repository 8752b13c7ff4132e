import { isIP } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { errors } from 'oidc-provider';
import { nonPublicReason } from '../../platform/public-address.ts';
import { safeFetch, UrlTooLarge } from '../../platform/safe-fetch.ts';
import type { RatePolicy } from '../../policy.ts';

// Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document, the MCP 2025-11-25
// authorization spec's preferred registration): a client whose client_id is an https URL is
// described by the JSON document at that URL. oidc-provider does the protocol part (fetch on
// first use, client_id must equal the URL, no shared-secret auth, an in-memory cache of at most
// 100 documents per instance, each kept within `cacheDuration` unless evicted sooner to make
// room); here are our rules: the URL's shape, the fetch (through the same SSRF-safe
// fetch as add_media, no redirects, small, quick, JSON only), the document's contents, and error
// descriptions that say what is wrong. Nothing is stored: the document is the registration.

/** Largest document accepted (oidc-provider's default; real ones are a few hundred bytes). */
export const CLIENT_METADATA_MAX_BYTES = 5 * 1024;
/** For the whole fetch: DNS, connection, TLS and body. */
export const CLIENT_METADATA_TIMEOUT_MS = 3_000;
/** Cache-Control max-age / Expires are honoured within these bounds (seconds). */
export const CLIENT_METADATA_CACHE_S = Object.freeze({ min: 60, max: 86_400 });
/**
 * Document fetches (cache misses), each an outbound request, per client address (the socket's,
 * or the forwarded one under TRUST_PROXY) and per host of the client_id URL from that address.
 * Hosts are free to make up, so the address window bounds the total; it is generous because
 * behind a proxy without TRUST_PROXY every client shares one address, and one caller's made-up
 * hosts should not block the rest.
 */
export const CLIENT_METADATA_FETCH_LIMIT: RatePolicy = Object.freeze({
  policy: 'client-metadata-fetches',
  limit: 300,
  windowMs: 10 * 60_000,
});
export const CLIENT_METADATA_HOST_FETCH_LIMIT: RatePolicy = Object.freeze({
  policy: 'client-metadata-fetches-per-host',
  limit: 30,
  windowMs: 10 * 60_000,
});

/**
 * Test-only: trust this CA and allow loopback addresses, so tests can serve a document from a
 * local HTTPS server. Passed in code to buildApp, never read from the environment or a file.
 */
export interface ClientMetadataTrust {
  ca: string;
  allowLoopback: true;
}

/** A client_id meant as a URL. Ids we issue are base64url and never hold a colon. */
export function isUrlClientId(id: string): boolean {
  return /^[a-z][a-z0-9+.-]*:/i.test(id);
}

/** What is wrong with a client_id URL under the draft's rules (§3), or undefined. */
export function clientIdUrlProblem(id: string): string | undefined {
  const url = URL.parse(id);
  if (!url) return 'is not a valid URL';
  if (url.protocol !== 'https:') return 'must be an https URL';
  if ([...id].some((c) => c <= ' ' || c === '\\' || c === '\x7f')) return 'must not contain spaces, control characters or backslashes';
  if (url.username || url.password || /^https:\/\/[^/?#]*@/i.test(id)) return 'must not contain a user name or password';
  if (id.includes('#')) return 'must not have a fragment';
  const path = /^https:\/\/[^/?#]*([^?#]*)/i.exec(id)![1]!;
  if (path.split('/').some((segment) => ['.', '..'].includes(segment.replace(/%2e/gi, '.'))))
    return 'must not contain . or .. path segments';
  if (path === '' || path === '/') return 'must have a path, like https://app.example/oauth/client.json';
  return undefined;
}

const LOOPBACK = /^(127\.|::1$|::ffff:127\.)/;

/**
 * Why a fetch failed at the network or HTTP level (no answer, TLS, timeout, a status other than
 * 200). Callers are not signed in and can name any public host and port, so they get this one
 * message, not the reason (which would make us a port scanner); the reason goes to the log.
 */
export class DocumentUnreachable extends Error {
  constructor() {
    super('the client metadata document could not be fetched');
  }
}

/** oidc-provider's `fetch` (it passes `redirect: 'manual'` and its own timeout; ours apply instead). */
export function metadataDocumentFetch(
  trust: ClientMetadataTrust | undefined,
  log: Pick<FastifyBaseLogger, 'info'>,
): (input: string | URL | Request) => Promise<Response> {
  return async (input) => {
    const url = new URL(input instanceof Request ? input.url : input);
    const unreachable = (reason: unknown) => {
      log.info(
        { clientId: url.href, reason: reason instanceof Error ? reason.message : String(reason) },
        'client metadata document could not be fetched',
      );
      return new DocumentUnreachable();
    };
    const explain = (error: unknown) =>
      error instanceof UrlTooLarge ? new Error(`the document is larger than ${CLIENT_METADATA_MAX_BYTES} bytes`) : unreachable(error);
    let nonPublic = false;
    const refuseAddress = (address: string) => {
      const reason = trust?.allowLoopback && LOOPBACK.test(address) ? undefined : nonPublicReason(address);
      if (reason) nonPublic = true;
      return reason;
    };
    let fetched;
    try {
      fetched = await safeFetch(url.href, {
        maxBytes: CLIENT_METADATA_MAX_BYTES,
        timeoutMs: CLIENT_METADATA_TIMEOUT_MS,
        maxRedirects: 0,
        refuseAddress,
        headers: { accept: 'application/json', 'user-agent': 'hubops-oauth/1.0' },
        ...(trust ? { ca: trust.ca } : {}),
      });
    } catch (error) {
      // Say which rule, not where a name resolves to: the requester is not signed in.
      if (nonPublic && !isIP(url.hostname.replace(/^\[|\]$/g, '')))
        throw new Error(`${url.hostname} is not on the public internet; only public addresses are fetched`);
      if (nonPublic) throw error; // an address literal: the message names only what the caller sent
      throw explain(error);
    }
    // safeFetch refused every status outside 2xx; a document is served with exactly 200.
    if (fetched.status !== 200) {
      fetched.close();
      throw unreachable(`the server answered HTTP ${fetched.status}; a client metadata document is served with 200`);
    }
    const type = fetched.contentType?.split(';')[0]?.trim().toLowerCase();
    if (type !== 'application/json' && !/^application\/[^/\s]+\+json$/.test(type ?? '')) {
      fetched.close();
      throw new Error(`it is served as ${type || 'no content type'}, not application/json`);
    }
    const headers = new Headers({ 'content-type': type! });
    for (const name of ['cache-control', 'expires'] as const) {
      const value = fetched.headers[name];
      if (typeof value === 'string') headers.set(name, value);
    }
    const body = fetched.body;
    async function* explained(): AsyncGenerator<Buffer> {
      try {
        yield* body;
      } catch (error) {
        throw explain(error);
      }
    }
    return new Response(ReadableStream.from(explained()), { status: 200, headers });
  };
}

/**
 * Checks a document's contents beyond oidc-provider's (extraClientMetadata.validator, which may
 * amend): a name to show at consent, and `none` when it names no authentication method. A
 * client_secret_post seen here is our registration default, since oidc-provider refuses a
 * document that states it.
 */
export function checkDocument(metadata: Record<string, unknown>): void {
  if (typeof metadata.client_name !== 'string' || metadata.client_name.trim() === '') {
    throw new errors.InvalidClientMetadata('client_name is required: the consent page shows it');
  }
  if (metadata.token_endpoint_auth_method === 'client_secret_post') metadata.token_endpoint_auth_method = 'none';
}

const DOCUMENT_ERRORS = [errors.InvalidClient, errors.InvalidClientMetadata, errors.InvalidRedirectUri];

/**
 * Makes every refusal of a URL client_id an `invalid_client` whose description says why: a URL
 * of the wrong shape (oidc-provider would just not find the client) or the fetch's own reason
 * (oidc-provider keeps it in `error_detail`, which it never shows). A refusal is remembered for
 * the rest of its request, whose error handler looks the client up again: one fetch, not two.
 */
export function explainUrlClientIds(Client: { find(id: string): Promise<unknown> }, currentRequest: () => object | undefined): void {
  const find = Client.find.bind(Client);
  const refused = new WeakMap<object, { id: string; error: Error }>();
  Client.find = async (id: string) => {
    if (typeof id !== 'string' || !isUrlClientId(id)) return find(id);
    const problem = clientIdUrlProblem(id);
    if (problem) throw new errors.InvalidClient(`the client_id ${problem}`);
    const request = currentRequest();
    const earlier = request && refused.get(request);
    if (earlier?.id === id) throw earlier.error;
    try {
      return await find(id);
    } catch (error) {
      if (!DOCUMENT_ERRORS.some((type) => error instanceof type)) throw error;
      const {
        error_description: description,
        error_detail: detail,
        cause,
      } = error as { error_description?: string; error_detail?: string; cause?: unknown };
      const why = cause instanceof SyntaxError ? 'the document is not valid JSON' : detail;
      const what = description?.startsWith('client_id metadata document')
        ? description
        : `client_id metadata document is invalid: ${description}`;
      const refusal = new errors.InvalidClient(cause instanceof DocumentUnreachable ? cause.message : why ? `${what}: ${why}` : what);
      if (request) refused.set(request, { id, error: refusal });
      throw refusal;
    }
  };
}
