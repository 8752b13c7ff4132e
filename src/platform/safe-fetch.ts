import { lookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { isIP } from 'node:net';
import { nonPublicReason } from './public-address.ts';

// Fetches a URL given by a user (an agent's "add this image from a URL") without letting it reach
// anything but the public internet (SSRF protection):
// - http: and https: only, no credentials in the URL;
// - the host name is resolved here, every address it resolves to is checked, and the connection
//   goes to the checked address (the socket's lookup is pinned to it), so a second DNS answer
//   cannot swap in a private address (DNS rebinding);
// - redirects are followed by hand, at most `maxRedirects`, each target checked the same way;
// - the body is streamed and cut off as soon as it passes `maxBytes`; one deadline covers DNS,
//   connecting, redirects and the whole body.
// Node's http client ignores proxy environment variables, so nothing routes around the checks.

export class UrlRefused extends Error {}
export class UrlFetchFailed extends Error {}
export class UrlTooLarge extends Error {
  readonly maxBytes: number;
  constructor(maxBytes: number, message: string) {
    super(message);
    this.maxBytes = maxBytes;
  }
}

export interface SafeFetchOptions {
  maxBytes: number;
  /** For everything: DNS, connection, redirects and the body. */
  timeoutMs: number;
  maxRedirects?: number;
  /** Why an address must not be connected to (undefined: allowed). Default: public internet only. */
  refuseAddress?: (address: string) => string | undefined;
  /** Resolves a host name to its addresses. Default: the system resolver (getaddrinfo, /etc/hosts). */
  resolve?: (hostname: string) => Promise<{ address: string; family: number }[]>;
  /** Request headers, over the defaults (a media fetcher's user-agent and accept). */
  headers?: Record<string, string>;
  /** The certificate authorities https trusts instead of Node's (tests' self-signed servers). */
  ca?: string;
}

export interface FetchedUrl {
  /** The URL the body came from, after redirects. */
  url: string;
  /** A 2xx status. */
  status: number;
  headers: http.IncomingHttpHeaders;
  contentType: string | undefined;
  /** The bytes, streamed; iterating past `maxBytes` or the deadline throws. Always iterate or return() it. */
  body: AsyncIterable<Buffer>;
  /** Drops the connection (idempotent): call it when done, whether or not the body was read. */
  close(): void;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const systemResolve = (hostname: string) => lookup(hostname, { all: true, verbatim: true });

interface Target {
  url: URL;
  address: string;
  family: number;
}

async function checkTarget(url: URL, options: SafeFetchOptions, signal: AbortSignal): Promise<Target> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UrlRefused(`only http and https URLs can be fetched, not ${url.protocol}`);
  if (url.username || url.password) throw new UrlRefused('URLs with credentials (user:password@) are not fetched');
  const hostname = url.hostname.replace(/^\[|\]$/g, '');
  const refuse = options.refuseAddress ?? nonPublicReason;
  let addresses: { address: string; family: number }[];
  if (isIP(hostname)) {
    addresses = [{ address: hostname, family: isIP(hostname) }];
  } else {
    const resolving = (options.resolve ?? systemResolve)(hostname);
    const aborted = new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
    try {
      addresses = await Promise.race([resolving, aborted]);
    } catch (error) {
      if (signal.aborted) throw error;
      throw new UrlFetchFailed(`the host ${hostname} could not be resolved`);
    }
    resolving.catch(() => {});
    if (addresses.length === 0) throw new UrlFetchFailed(`the host ${hostname} could not be resolved`);
  }
  for (const { address } of addresses) {
    const reason = refuse(address);
    if (reason !== undefined) {
      const what = address === hostname ? address : `${hostname} resolves to ${address}, which`;
      throw new UrlRefused(`${what} is ${reason}; only addresses on the public internet can be fetched`);
    }
  }
  return { url, address: addresses[0]!.address, family: addresses[0]!.family };
}

function request(target: Target, options: SafeFetchOptions, signal: AbortSignal): Promise<http.IncomingMessage> {
  const pinned: LookupFunction = (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all)
      (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [
        { address: target.address, family: target.family },
      ]);
    else callback(null, target.address, target.family);
  };
  const client = target.url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(
      target.url,
      {
        method: 'GET',
        agent: false,
        lookup: pinned,
        signal,
        ...(options.ca === undefined ? {} : { ca: options.ca }),
        headers: {
          'user-agent': 'hubops-media-fetch/1.0',
          accept: 'image/*, video/*;q=0.9, */*;q=0.1',
          ...options.headers,
          'accept-encoding': 'identity',
        },
      },
      resolve,
    );
    req.on('error', reject);
    req.end();
  });
}

function explain(error: unknown, signal: AbortSignal, timeoutMs: number): Error {
  if (error instanceof UrlRefused || error instanceof UrlFetchFailed || error instanceof UrlTooLarge) return error;
  if (signal.aborted) return new UrlFetchFailed(`the download did not finish within ${timeoutMs / 1000} s`);
  const code = (error as { code?: string }).code;
  return new UrlFetchFailed(`the server could not be reached${code ? ` (${code})` : ''}`);
}

/** GETs `url` under the rules above; throws UrlRefused, UrlFetchFailed or UrlTooLarge. */
export async function safeFetch(input: string, options: SafeFetchOptions): Promise<FetchedUrl> {
  const maxRedirects = options.maxRedirects ?? 3;
  const signal = AbortSignal.timeout(options.timeoutMs);
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw new UrlRefused('is not a valid absolute URL');
  }
  let response: http.IncomingMessage;
  try {
    for (let redirects = 0; ; redirects++) {
      const target = await checkTarget(url, options, signal);
      response = await request(target, options, signal);
      const status = response.statusCode ?? 0;
      if (!REDIRECTS.has(status)) break;
      response.destroy();
      const location = response.headers.location;
      if (!location) throw new UrlFetchFailed(`the server answered ${status} without a Location`);
      if (redirects >= maxRedirects)
        throw new UrlRefused(
          maxRedirects === 0
            ? `the server answered ${status} (a redirect), and redirects are not followed here`
            : `more than ${maxRedirects} redirects`,
        );
      url = new URL(location, url);
    }
  } catch (error) {
    throw explain(error, signal, options.timeoutMs);
  }
  const status = response.statusCode ?? 0;
  if (status < 200 || status >= 300) {
    response.destroy();
    throw new UrlFetchFailed(`the server answered HTTP ${status}`);
  }
  const declared = Number(response.headers['content-length']);
  const tooLarge = () => new UrlTooLarge(options.maxBytes, `is larger than ${options.maxBytes} bytes`);
  if (Number.isFinite(declared) && declared > options.maxBytes) {
    response.destroy();
    throw tooLarge();
  }
  const source = response;
  async function* body(): AsyncGenerator<Buffer> {
    let size = 0;
    try {
      for await (const chunk of source as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > options.maxBytes) throw tooLarge();
        yield chunk;
      }
    } catch (error) {
      throw explain(error, signal, options.timeoutMs);
    } finally {
      source.destroy();
    }
  }
  return {
    url: url.toString(),
    status,
    headers: response.headers,
    contentType: response.headers['content-type'],
    body: body(),
    close: () => source.destroy(),
  };
}
