// The Graph API transport shared by Meta's wire clients (the ads client ./client.ts and the Pages /
// Instagram publishing client ../meta-pages/client.ts): one HTTP exchange with its checks (no
// redirect, JSON only, a body cap after decompression, a deadline), the throttle rules with the
// usage headers, the error model (Graph API › Handling Errors) and cursor paging. Credentials travel
// in the Authorization header and are masked out of every message.
import http from 'node:http';
import https from 'node:https';
import { agentFor, collectBody, deadline } from '../wire-http.ts';
import { setTimeout as delay } from 'node:timers/promises';
import { META_GRAPH_API_VERSION, SPEND_THROTTLE_WAIT_MAX_MS } from '../../policy.ts';
import { PlatformError, PlatformThrottled } from '../ad-platform.ts';
import type { GraphErrorBody } from './wire.ts';
import { traceOutbound } from '../../platform/tracing.ts';

export interface GraphTransportOptions {
  /** https://graph.facebook.com in production (META_GRAPH_URL), the sandbox's url in tests and the demo. */
  graphUrl: string;
  apiVersion?: string;
  /** Waits out throttles and polls; tests inject one that does not really wait. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Per request, from sending it to the last byte of the answer. */
  timeoutMs: number;
  /** An answer larger than this is refused (bad_answer) as soon as it passes the cap. */
  maxBodyBytes: number;
  /** Throttle waits one session may spend in all before PlatformThrottled (default SPEND_THROTTLE_WAIT_MAX_MS). */
  throttleWaitMaxMs?: number;
}

/** Per request: what happens when it was written but no usable answer came back. */
export interface RequestOptions {
  /**
   * For a request that may have changed something on Meta's side (a publication): the error to
   * throw instead of 'bad_answer' when the request was written (the connection was open) but the
   * answer timed out, was cut off, or was not a Graph answer at all (HTML, a redirect, too large).
   */
  unanswered?: (message: string) => Error;
}

/** No real read has this many pages; an answer that does is looping. */
const MAX_PAGES = 50_000;
/** A throttle answer without a usable usage header is waited out this long. */
const DEFAULT_THROTTLE_WAIT_MS = 60_000;

export type Json = Record<string, unknown>;
export const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Throttling codes: 4 (app), 17 (user), 32 (Page), 613 (ad account; also Pages' "calls within one hour"), 80000–80014 (Business Use Case, 80000 = ads_insights, 80004 = ads_management). Graph API › Rate Limiting; Marketing API › Rate Limiting; Pages API › Rate Limiting. */
const isThrottle = (code: number) => code === 4 || code === 17 || code === 32 || code === 613 || (code >= 80000 && code <= 80014);

/** One caller's sequence of requests: its credential, its abort signal and the throttle time it has spent. */
export interface GraphSession {
  token: string | undefined;
  /** Texts that must never appear in an error (the token, an app secret, an OAuth code). */
  secrets: string[];
  signal: AbortSignal | undefined;
  waitedMs: number;
  /** A wait the platform asked for (usage header) before the next request. */
  pendingWaitMs: number;
}

interface Answer {
  status: number;
  body: unknown;
  /** How long the usage headers say to stay away, or undefined when they say nothing. */
  regainMs: number | undefined;
}

export interface GraphTransport {
  session(token: string | undefined, secrets: string[], signal?: AbortSignal): GraphSession;
  /** A Graph request under the throttle rules; returns the answer's JSON object or throws PlatformError / PlatformThrottled. */
  graph(
    session: GraphSession,
    what: string,
    method: 'GET' | 'POST',
    path: string,
    params: Record<string, string>,
    request?: RequestOptions,
  ): Promise<Json>;
  /** Follows a paged edge (Graph API › Pagination: continue while `paging.next` is present, with `paging.cursors.after`). */
  pages(s: GraphSession, what: string, path: string, params: Record<string, string>, maxPages?: number): AsyncGenerator<unknown[]>;
  /** The text with the session's secrets masked. */
  scrub(text: string, session: GraphSession): string;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export function createGraphTransport(options: GraphTransportOptions): GraphTransport {
  const base = options.graphUrl.replace(/\/+$/, '');
  const version = options.apiVersion ?? META_GRAPH_API_VERSION;
  const sleep =
    options.sleep ??
    (async (ms: number, signal?: AbortSignal) => {
      // A cancelled wait ends with the caller's own reason, as a cancelled request does.
      await delay(ms, undefined, signal ? { signal } : {}).catch((error: unknown) => {
        throw signal?.aborted ? signal.reason : error;
      });
    });
  const { timeoutMs, maxBodyBytes } = options;
  const throttleWaitMaxMs = options.throttleWaitMaxMs ?? SPEND_THROTTLE_WAIT_MAX_MS;

  const scrub = (text: string, session: GraphSession) =>
    session.secrets.reduce((out, secret) => (secret.length >= 4 ? out.split(secret).join('[redacted]') : out), text);

  /** One HTTP exchange: the answer's status, its parsed JSON body and its usage headers. */
  async function exchange(
    session: GraphSession,
    what: string,
    method: 'GET' | 'POST',
    path: string,
    params: Record<string, string>,
    options: RequestOptions = {},
  ): Promise<Answer> {
    session.signal?.throwIfAborted();
    const url = new URL(`${base}/${version}/${path}`);
    const form = new URLSearchParams(params);
    if (method === 'GET') url.search = form.toString();
    // What fetch asks for by default: Graph compresses large answers.
    const headers: Record<string, string> = { accept: 'application/json', 'accept-encoding': 'gzip, deflate, br' };
    // The header, not the access_token parameter the SDKs use, for every call that can take one. The
    // token exchanges (tokenExchange) are the exception: Meta documents /oauth/access_token as a GET
    // with client_secret and the code or token in the query, so they travel there; our own logs and
    // errors never carry this URL (failures name `what`, and the secrets are masked out of messages).
    if (session.token !== undefined) headers.authorization = `Bearer ${session.token}`;
    const body = method === 'POST' ? form.toString() : undefined;
    if (body !== undefined) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const due = deadline(timeoutMs, session.signal);
    const { signal } = due;
    // node:http rather than fetch: a page is read as plain Buffer chunks, without fetch's web-stream
    // machinery per chunk, which was most of the client's time per row in bench:sync. Redirects are
    // not followed by node:http at all.
    let answered = false;
    // Once the connection is open the request is on its way: from then on, a missing answer may
    // hide a change made on Meta's side.
    let written = false;
    let unanswered: Error | undefined;
    const noAnswer = (message: string): Error =>
      written && options.unanswered ? (unanswered = options.unanswered(message)) : new PlatformError('bad_answer', message);
    const answer = await traceOutbound(
      'meta',
      method,
      url,
      () =>
        new Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }>((resolve, reject) => {
          let settled = false;
          const settle = (error: unknown, value?: { status: number; headers: http.IncomingHttpHeaders; text: string }) => {
            if (settled) return;
            settled = true;
            if (error === undefined) return resolve(value!);
            request.destroy();
            reject(error);
          };
          const request = (url.protocol === 'https:' ? https : http).request(
            url,
            { method, headers, signal, agent: agentFor(url) },
            (response) => {
              answered = true;
              const status = response.statusCode ?? 0;
              if (status >= 300 && status < 400)
                return settle(noAnswer(`Meta answered ${what} with a redirect (HTTP ${status}); the Graph API never redirects`));
              // Graph answers application/json; older versions said text/javascript for the same JSON.
              const type = (response.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
              if (type !== 'application/json' && type !== 'text/javascript')
                return settle(noAnswer(`Meta answered ${what} with ${type || 'no content type'} (HTTP ${status}), not JSON`));
              const tooLarge = () => noAnswer(`Meta's answer to ${what} is larger than ${maxBodyBytes} bytes`);
              collectBody(response, {
                maxBodyBytes,
                signal,
                tooLarge,
                unknownEncoding: () => noAnswer(`Meta answered ${what} in an unknown content encoding`),
                settle: (error, body) => settle(error, body && { status, headers: response.headers, text: body.text }),
              });
            },
          );
          request.on('socket', (socket) => {
            if (socket.connecting) socket.once('connect', () => (written = true));
            else written = true;
          });
          request.on('error', (error) => settle(error));
          request.end(body);
        }),
    )
      .catch((error: unknown) => {
        if (error instanceof PlatformError || (error !== undefined && error === unanswered)) throw error;
        if (session.signal?.aborted) throw session.signal.reason;
        if (!answered && written && options.unanswered) {
          throw options.unanswered(
            due.timedOut() ? `Meta did not answer ${what} within ${timeoutMs / 1000} s` : `The connection to Meta broke during ${what}`,
          );
        }
        if (!answered) {
          if (due.timedOut()) throw new PlatformError('unreachable', `Meta did not answer ${what} within ${timeoutMs / 1000} s`);
          const code = (error as { code?: unknown }).code;
          throw new PlatformError('unreachable', `Meta could not be reached for ${what}${typeof code === 'string' ? ` (${code})` : ''}`);
        }
        if (due.timedOut()) throw noAnswer(`Meta's answer to ${what} did not finish within ${timeoutMs / 1000} s`);
        throw noAnswer(`Meta's answer to ${what} was cut off`);
      })
      .finally(() => due.done());
    let json: unknown;
    try {
      json = JSON.parse(answer.text);
    } catch {
      throw noAnswer(`Meta's answer to ${what} is not valid JSON (HTTP ${answer.status}, ${Buffer.byteLength(answer.text)} bytes)`);
    }
    const usage = answer.headers['x-business-use-case-usage'];
    return { status: answer.status, body: json, regainMs: regainMs(typeof usage === 'string' ? usage : undefined) };
  }

  /** A Graph request under the throttle rules; returns the answer's JSON object or throws PlatformError / PlatformThrottled. */
  async function graph(
    session: GraphSession,
    what: string,
    method: 'GET' | 'POST',
    path: string,
    params: Record<string, string>,
    request: RequestOptions = {},
  ): Promise<Json> {
    let throttleMessage: string | undefined;
    for (;;) {
      if (session.pendingWaitMs > 0) {
        const ms = session.pendingWaitMs;
        if (session.waitedMs + ms > throttleWaitMaxMs) {
          throw new PlatformThrottled(ms, `Meta is throttling ${what}: try again in ${Math.ceil(ms / 1000)} s`, throttleMessage);
        }
        session.waitedMs += ms;
        session.pendingWaitMs = 0;
        await sleep(ms, session.signal);
      }
      const answer = await exchange(session, what, method, path, params, request);
      if (isObject(answer.body) && 'error' in answer.body) {
        let error: GraphErrorBody;
        try {
          error = graphError(answer.body.error, what);
        } catch (unreadable) {
          // A 2xx says the request was done, whatever its body holds: a publication it made is
          // unconfirmed (looked up), not a failure that would leave it recorded as not made.
          if (request.unanswered && answer.status >= 200 && answer.status < 300)
            throw request.unanswered(`${(unreadable as Error).message} (HTTP ${answer.status})`);
          throw unreadable;
        }
        if (isThrottle(error.code)) {
          session.pendingWaitMs = answer.regainMs || DEFAULT_THROTTLE_WAIT_MS;
          throttleMessage = platformWords(error, session);
          continue;
        }
        throw classify(error, answer.status, what, session);
      }
      const noAnswer = (message: string) => (request.unanswered ? request.unanswered(message) : new PlatformError('bad_answer', message));
      if (answer.status < 200 || answer.status >= 300)
        throw noAnswer(`Meta answered ${what} with HTTP ${answer.status} and no Graph error`);
      if (!isObject(answer.body)) throw noAnswer(`Meta's answer to ${what} is not a JSON object`);
      // A usage header may announce a throttle on a successful answer: the next request waits first.
      if (answer.regainMs) session.pendingWaitMs = answer.regainMs;
      return answer.body;
    }
  }

  const platformWords = (error: GraphErrorBody, session: GraphSession) => scrub(error.error_user_msg || error.message, session);

  function classify(error: GraphErrorBody, status: number, what: string, session: GraphSession): PlatformError {
    const details = {
      platformMessage: platformWords(error, session),
      platformCode: error.error_subcode === undefined ? String(error.code) : `${error.code}/${error.error_subcode}`,
    };
    const says = `Meta refused ${what}`;
    // Graph API › Handling Errors: 190 and 102 are a token that expired or was invalidated; 10 and
    // 200–299 a missing permission; 1 and 2 (or is_transient) a temporary problem on Meta's side.
    if (error.code === 190 || error.code === 102)
      return new PlatformError('needs_reconnect', `${says}: the access token is no longer valid (${details.platformCode})`, details);
    if (error.code === 10 || (error.code >= 200 && error.code <= 299))
      return new PlatformError(
        'missing_permission',
        `${says}: the token lacks a permission or access to the account (${details.platformCode})`,
        details,
      );
    if (error.is_transient || error.code === 1 || error.code === 2 || error.code === -2 || status >= 500)
      return new PlatformError('platform_error', `${says} with a temporary error (${details.platformCode})`, details);
    return new PlatformError('invalid_request', `${says} (${details.platformCode})`, details);
  }

  const session = (token: string | undefined, secrets: string[], signal?: AbortSignal): GraphSession => ({
    token,
    secrets,
    signal,
    waitedMs: 0,
    pendingWaitMs: 0,
  });

  /** Follows a paged edge (Graph API › Pagination: continue while `paging.next` is present, with `paging.cursors.after`). */
  async function* pages(
    s: GraphSession,
    what: string,
    path: string,
    params: Record<string, string>,
    maxPages = MAX_PAGES,
  ): AsyncGenerator<unknown[]> {
    let after: string | undefined;
    for (let count = 1; ; count++) {
      if (count > maxPages) throw new PlatformError('bad_answer', `Meta's answer to ${what} goes on for more than ${maxPages} pages`);
      const page = await graph(s, what, 'GET', path, after === undefined ? params : { ...params, after });
      if (!Array.isArray(page.data)) throw new PlatformError('bad_answer', `Meta's answer to ${what} has no data list`);
      yield page.data;
      const next = nextCursor(page.paging, what);
      if (next === undefined) return;
      if (next === after) throw new PlatformError('bad_answer', `Meta's answer to ${what} points to the same page again`);
      after = next;
    }
  }

  return { session, graph, pages, scrub, sleep };
}

/** Milliseconds X-Business-Use-Case-Usage asks us to wait (Graph API › Rate Limiting › Business Use Case Rate Limits), or undefined. */
function regainMs(header: string | undefined): number | undefined {
  let ms: number | undefined;
  const consider = (minutes: unknown) => {
    if (typeof minutes === 'number' && Number.isFinite(minutes) && minutes >= 0)
      ms = Math.max(ms ?? 0, Math.min(minutes * 60_000, 24 * 3_600_000));
  };
  // {"<business id>": [{"type": "ads_insights", "call_count": 28, …, "estimated_time_to_regain_access": 0}]}, in minutes.
  const buc = parseHeader(header);
  if (isObject(buc)) {
    for (const entries of Object.values(buc)) {
      if (Array.isArray(entries)) for (const entry of entries) if (isObject(entry)) consider(entry.estimated_time_to_regain_access);
    }
  }
  // X-App-Usage has percentages but no time; X-Ad-Account-Usage is for Ads API v3.3 and older
  // (Graph API › Rate Limiting › Headers), so neither can say how long to wait.
  return ms;
}

function parseHeader(value: string | undefined): unknown {
  if (value === undefined || value.length > 65_536) return undefined;
  try {
    return JSON.parse(value);
  } catch {
    return undefined;
  }
}

export function graphError(value: unknown, what: string): GraphErrorBody {
  if (!isObject(value) || typeof value.code !== 'number' || !Number.isSafeInteger(value.code) || typeof value.message !== 'string') {
    throw new PlatformError('bad_answer', `Meta answered ${what} with an error that has no code or message`);
  }
  const text = (key: string) => (typeof value[key] === 'string' && value[key] !== '' ? (value[key] as string).slice(0, 2000) : undefined);
  const subcode = value.error_subcode;
  return {
    message: value.message.slice(0, 2000),
    type: text('type') ?? '',
    code: value.code,
    ...(typeof subcode === 'number' && Number.isSafeInteger(subcode) ? { error_subcode: subcode } : {}),
    ...(value.is_transient === true ? { is_transient: true } : {}),
    ...(text('error_user_msg') === undefined ? {} : { error_user_msg: text('error_user_msg')! }),
  };
}

function nextCursor(paging: unknown, what: string): string | undefined {
  if (paging === undefined) return undefined;
  if (!isObject(paging)) throw new PlatformError('bad_answer', `Meta's answer to ${what} has a paging that is not an object`);
  // "next: … If not included, this is the last page of data" — a short page does not mean the end.
  if (paging.next === undefined) return undefined;
  const after = isObject(paging.cursors) ? paging.cursors.after : undefined;
  if (typeof paging.next !== 'string' || typeof after !== 'string' || after === '' || after.length > 2048) {
    throw new PlatformError('bad_answer', `Meta's answer to ${what} has a next page without a cursor`);
  }
  return after;
}
