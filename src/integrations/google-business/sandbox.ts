// A loopback stand-in for Google Business Profile, for tests, the benchmark and the demo. It
// serves what ./client.ts reads, in Google's documented wire format: the consent page and token
// endpoint of Google's OAuth (scope business.manage), Account Management's accounts, Business
// Information's locations, and v4's localPosts (create answers LIVE, or PROCESSING / REJECTED
// when a scenario says so) and reviews (pageSize ≤ 50, updateTime desc, nextPageToken). Reviews
// are generated from a seed, so the same sandbox serves the same reviews. A scenario control (in
// JS, and POST /__sandbox/scenario) expires tokens, rejects posts, hangs a call, cuts off the
// answer to a post it made, throttles (429 RESOURCE_EXHAUSTED with a RetryInfo) and plays an
// unapproved project (429 at quota 0).
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { hashText, mix } from '../sandbox-kit.ts';

export interface SandboxLocation {
  /** `accounts/{a}/locations/{l}`. */
  name: string;
  title: string;
  /** Reviews generated for it (default 40). */
  reviews: number;
}

export interface SandboxReview {
  reviewId: string;
  starRating: 1 | 2 | 3 | 4 | 5;
  createTime: string;
  updateTime: string;
  replied: boolean;
}

export interface SandboxLocalPost {
  name: string;
  summary: string;
  state: 'LIVE' | 'PROCESSING' | 'REJECTED';
  createTime: string;
  photos: number;
  /** The `sourceUrl` of each photo: what Google fetches the photos from. */
  photoUrls: string[];
}

export interface GoogleBusinessSandbox {
  /** Consent page, token endpoint and the three APIs at once: GOOGLE_ACCOUNTS_URL, GOOGLE_OAUTH_URL and GOOGLE_BUSINESS_URL. */
  url: string;
  clientId: string;
  clientSecret: string;
  close(): Promise<void>;
  locations(): SandboxLocation[];
  /** A refresh token of a login that manages every location. */
  issueRefreshToken(): string;
  /** The location's reviews as the sandbox holds them now, newest update first. */
  reviews(location: string): SandboxReview[];
  /** Posts made on the location, oldest first (a repeated create shows as a second post). */
  posts(location: string): SandboxLocalPost[];
  scenario: {
    /** The refresh token answers invalid_grant from now on. */
    expireRefreshToken(token: string): void;
    /** The next `times` creates on the location answer 200 with state REJECTED (default) or PROCESSING. */
    postState(location: string, state: 'REJECTED' | 'PROCESSING', times?: number): void;
    /** The next create on the location is made, then never answered (the connection hangs). */
    hangAfterPost(location: string): void;
    /**
     * The next create on the location is made and answered 200, but the answer is cut off:
     * `dropped`, the connection closes mid-body (the headers promised more); `truncated`, the body
     * ends half-way through the JSON (whole as HTTP goes, but not the post).
     */
    cutAnswerAfterPost(location: string, kind?: 'dropped' | 'truncated'): void;
    /** Every call answers 429 RESOURCE_EXHAUSTED with a retryDelay until `ms` from now. */
    throttle(ms: number): void;
    /** Every call answers 429 with the quota limit 0: the project is not approved. */
    notApproved(on: boolean): void;
    /** A new review, or a reply to one, or a new rating: updateTime moves to now. */
    addReview(location: string, review: { starRating: 1 | 2 | 3 | 4 | 5; replied?: boolean }): string;
    editReview(location: string, reviewId: string, change: { starRating?: 1 | 2 | 3 | 4 | 5; replied?: boolean }): void;
    /** The next call on the location ('accounts' for the account list) answers with hostile bytes. */
    malformed(key: string, kind: 'html' | 'wrong_types' | 'redirect' | 'huge' | 'slow'): void;
    reset(): void;
  };
  /** What was asked, oldest first (method and path). */
  requests: { method: string; path: string }[];
}

const CLIENT_ID = '123456789012-business.apps.googleusercontent.com';
const CLIENT_SECRET = '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456789';
const SCOPE = 'https://www.googleapis.com/auth/business.manage';
const ACCESS_TOKEN_S = 3599;
const DAY_MS = 86_400_000;

class Failure extends Error {
  readonly status: number;
  readonly body: unknown;
  constructor(status: number, body: unknown) {
    super('sandbox failure');
    this.status = status;
    this.body = body;
  }
}

const rpc = (code: number, status: string, message: string, details: unknown[] = []) =>
  new Failure(code, { error: { code, message, status, ...(details.length ? { details } : {}) } });

export async function startGoogleBusinessSandbox(
  o: {
    now?: () => Date;
    seed?: number;
    /** Default: two accounts with the demo's three locations. */
    locations?: { name: string; title: string; reviews?: number }[];
    /** Or this many generated locations (for the benchmark), in accounts of 100. */
    generate?: { locations: number; reviewsPerLocation: number };
  } = {},
): Promise<GoogleBusinessSandbox> {
  const now = () => (o.now ? o.now().getTime() : Date.now());
  const seed = o.seed ?? 1;
  const locations = new Map<string, SandboxLocation>();
  const input =
    o.locations ??
    (o.generate
      ? Array.from({ length: o.generate.locations }, (_, i) => ({
          name: `accounts/${100 + Math.floor(i / 100)}/locations/${1000 + i}`,
          title: `Location ${i + 1}`,
          reviews: o.generate!.reviewsPerLocation,
        }))
      : [
          { name: 'accounts/101/locations/2001', title: 'Brewline Downtown' },
          { name: 'accounts/101/locations/2002', title: 'Brewline Riverside' },
          { name: 'accounts/102/locations/3001', title: 'Brewline Airport' },
        ]);
  for (const l of input) {
    if (!/^accounts\/\d+\/locations\/\d+$/.test(l.name)) throw new Error(`a sandbox location is accounts/{n}/locations/{n}, not ${l.name}`);
    locations.set(l.name, { name: l.name, title: l.title, reviews: l.reviews ?? 40 });
  }

  const startedAt = now();
  /** Reviews changed or added by scenarios, by location and id (the generated ones are computed). */
  const changed = new Map<string, Map<string, SandboxReview>>();
  const posts = new Map<string, SandboxLocalPost[]>();
  const refreshTokens = new Map<string, { expired: boolean }>();
  const accessTokens = new Map<string, { refreshToken: string; expiresAt: number }>();
  const codes = new Map<string, { redirectUri: string; expiresAt: number; refreshToken: boolean }>();
  const postStates = new Map<string, { state: 'REJECTED' | 'PROCESSING'; times: number }>();
  const hangs = new Set<string>();
  const cuts = new Map<string, 'dropped' | 'truncated'>();
  const malformed = new Map<string, string>();
  const hanging = new Set<http.ServerResponse>();
  let throttledUntil = 0;
  let notApproved = false;
  const requests: GoogleBusinessSandbox['requests'] = [];

  function generatedReview(location: string, i: number): SandboxReview {
    const h = mix(hashText(location) ^ mix(i + seed * 7919));
    // Spread over the year before the sandbox started, newest last; a third get a reply a few days later.
    const created = startedAt - (365 * DAY_MS * (i + 1)) / (locations.get(location)!.reviews + 1) - (h % 3_600_000);
    const replied = h % 3 === 0;
    const stars = ([5, 5, 5, 4, 4, 3, 2, 1] as const)[h % 8]!;
    const updated = replied ? Math.min(created + ((h >>> 8) % 5) * DAY_MS + 3_600_000, startedAt - 1000) : created;
    return {
      reviewId: `sbx${(mix(h) >>> 0).toString(36)}${i.toString(36)}`,
      starRating: stars,
      createTime: new Date(Math.floor(created / 1000) * 1000).toISOString(),
      updateTime: new Date(Math.floor(updated / 1000) * 1000).toISOString(),
      replied,
    };
  }

  function reviewsOf(location: string): SandboxReview[] {
    const l = locations.get(location);
    if (!l) return [];
    const byId = new Map<string, SandboxReview>();
    for (let i = 0; i < l.reviews; i++) {
      const r = generatedReview(location, i);
      byId.set(r.reviewId, r);
    }
    for (const [id, r] of changed.get(location) ?? []) byId.set(id, r);
    return [...byId.values()].sort((a, b) =>
      a.updateTime < b.updateTime ? 1 : a.updateTime > b.updateTime ? -1 : a.reviewId < b.reviewId ? -1 : 1,
    );
  }

  const wireStars = ['', 'ONE', 'TWO', 'THREE', 'FOUR', 'FIVE'];
  const wireReview = (location: string, r: SandboxReview) => ({
    name: `${location}/reviews/${r.reviewId}`,
    reviewId: r.reviewId,
    reviewer: { displayName: 'Sandbox reviewer', isAnonymous: false },
    starRating: wireStars[r.starRating],
    comment: 'Generated by the sandbox.',
    createTime: r.createTime,
    updateTime: r.updateTime,
    ...(r.replied ? { reviewReply: { comment: 'Thank you!', updateTime: r.updateTime } } : {}),
  });

  function send(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    const bytes = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', 'content-length': bytes.length, ...headers });
    res.end(bytes);
  }

  async function readBody(req: http.IncomingMessage): Promise<string> {
    let text = '';
    for await (const chunk of req) {
      text += chunk;
      if (text.length > 1_048_576) throw rpc(400, 'INVALID_ARGUMENT', 'Request payload size exceeds the limit.');
    }
    return text;
  }

  function authenticate(req: http.IncomingMessage): void {
    const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    const info = token ? accessTokens.get(token) : undefined;
    if (!info || info.expiresAt <= now() || refreshTokens.get(info.refreshToken)?.expired)
      throw rpc(
        401,
        'UNAUTHENTICATED',
        'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
      );
  }

  function gate(): void {
    if (notApproved)
      throw rpc(
        429,
        'RESOURCE_EXHAUSTED',
        "Quota exceeded for quota metric 'Requests' and limit 'Requests per minute' of service 'mybusinessbusinessinformation.googleapis.com' for consumer 'project_number:123456789012'.",
        [
          {
            '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
            reason: 'RATE_LIMIT_EXCEEDED',
            domain: 'googleapis.com',
            metadata: {
              quota_limit_value: '0',
              quota_metric: 'mybusinessbusinessinformation.googleapis.com/default_requests',
              consumer: 'projects/123456789012',
            },
          },
        ],
      );
    const left = throttledUntil - now();
    if (left > 0)
      throw rpc(429, 'RESOURCE_EXHAUSTED', 'Resource has been exhausted (e.g. check quota).', [
        { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${Math.ceil(left / 1000)}s` },
      ]);
  }

  function hostile(res: http.ServerResponse, kind: string): void {
    if (kind === 'html')
      return void send(res, 502, '<!DOCTYPE html><html><body>Bad Gateway</body></html>', { 'content-type': 'text/html' });
    if (kind === 'wrong_types') return void send(res, 200, { reviews: 'many', accounts: 7, locations: {}, totalReviewCount: '12' });
    if (kind === 'redirect') {
      res.writeHead(302, { location: 'https://accounts.google.com/ServiceLogin', 'content-length': 0 });
      return void res.end();
    }
    if (kind === 'huge') {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(1 << 20, 0x20);
      let sent = 0;
      const pump = () => {
        while (sent < 64 && res.write(chunk)) sent++;
        if (sent < 64) res.once('drain', pump);
        else res.end('{}');
      };
      res.on('error', () => {});
      return pump();
    }
    // slow: the headers, then nothing for longer than any client waits.
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"reviews": [');
    hanging.add(res);
  }

  function consent(method: string, params: URLSearchParams, res: http.ServerResponse): void {
    const page = (status: number, body: string) => {
      const html = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Sign in - Sandbox Google Accounts</title></head><body style="font-family:sans-serif;max-width:32rem;margin:2rem auto;padding:0 1rem">${body}</body></html>`;
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(html) });
      res.end(html);
    };
    if (params.get('client_id') !== CLIENT_ID)
      return page(401, '<h1>Access blocked: authorization error</h1><p>Error 401: invalid_client</p>');
    let target: URL;
    try {
      target = new URL(params.get('redirect_uri') ?? '');
      if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new Error('not http');
    } catch {
      return page(400, "<h1>Access blocked: This app's request is invalid</h1><p>Error 400: redirect_uri_mismatch</p>");
    }
    const scope = params.get('scope') ?? '';
    if (params.get('response_type') !== 'code' || !scope.split(' ').includes(SCOPE))
      return page(400, `<h1>Access blocked: authorization error</h1><p>Error 400: invalid_scope (the sandbox grants ${SCOPE})</p>`);
    const escapeText = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
    if (method === 'GET') {
      const hidden = [...params].map(([k, v]) => `<input type="hidden" name="${escapeText(k)}" value="${escapeText(v)}">`).join('');
      return page(
        200,
        `<h1>Sandbox Google</h1><p>The app wants to <strong>see, edit, create and delete your Google business listings</strong> (${escapeText(scope)}).</p><form method="post">${hidden}<button type="submit" name="decision" value="allow">Continue</button> <button type="submit" name="decision" value="deny">Cancel</button></form>`,
      );
    }
    if (params.get('decision') === 'allow') {
      const code = `4/0business${randomBytes(24).toString('base64url')}`;
      codes.set(code, {
        redirectUri: target.toString(),
        expiresAt: now() + 600_000,
        refreshToken: params.get('access_type') === 'offline',
      });
      target.searchParams.set('code', code);
      target.searchParams.set('scope', scope);
    } else target.searchParams.set('error', 'access_denied');
    target.searchParams.set('state', params.get('state') ?? '');
    res.writeHead(303, { location: target.toString(), 'content-length': 0 });
    res.end();
  }

  function issueAccessToken(refreshToken: string): string {
    const token = `ya29.business${randomBytes(24).toString('base64url')}`;
    accessTokens.set(token, { refreshToken, expiresAt: now() + ACCESS_TOKEN_S * 1000 });
    return token;
  }

  function issueRefreshToken(): string {
    const token = `1//0business${randomBytes(32).toString('base64url')}`;
    refreshTokens.set(token, { expired: false });
    return token;
  }

  function token(params: URLSearchParams, res: http.ServerResponse): void {
    const oauth = (status: number, error: string, description: string) => new Failure(status, { error, error_description: description });
    if (params.get('client_id') !== CLIENT_ID || params.get('client_secret') !== CLIENT_SECRET)
      throw oauth(401, 'invalid_client', 'Unauthorized');
    if (params.get('grant_type') === 'authorization_code') {
      const code = params.get('code') ?? '';
      const issued = codes.get(code);
      if (!issued || issued.expiresAt <= now()) throw oauth(400, 'invalid_grant', 'Malformed auth code.');
      if (params.get('redirect_uri') !== issued.redirectUri) throw oauth(400, 'redirect_uri_mismatch', 'Bad Request');
      codes.delete(code);
      const refreshToken = issueRefreshToken();
      return send(res, 200, {
        access_token: issueAccessToken(refreshToken),
        expires_in: ACCESS_TOKEN_S,
        ...(issued.refreshToken ? { refresh_token: refreshToken } : {}),
        scope: SCOPE,
        token_type: 'Bearer',
      });
    }
    if (params.get('grant_type') === 'refresh_token') {
      const refreshToken = params.get('refresh_token') ?? '';
      const info = refreshTokens.get(refreshToken);
      if (!info || info.expired) throw oauth(400, 'invalid_grant', 'Token has been expired or revoked.');
      return send(res, 200, {
        access_token: issueAccessToken(refreshToken),
        expires_in: ACCESS_TOKEN_S,
        scope: SCOPE,
        token_type: 'Bearer',
      });
    }
    throw oauth(400, 'unsupported_grant_type', 'Invalid grant_type');
  }

  /** A page of `items` from `pageToken` (the offset, opaque to clients). */
  function page<T>(items: T[], url: URL, max: number, fallback: number): { slice: T[]; next: string | undefined } {
    const size = Math.min(Number(url.searchParams.get('pageSize') ?? fallback) || fallback, max);
    const token = url.searchParams.get('pageToken');
    const offset = token ? Number.parseInt(Buffer.from(token, 'base64url').toString(), 10) : 0;
    if (!Number.isSafeInteger(offset) || offset < 0) throw rpc(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.');
    const next = offset + size < items.length ? Buffer.from(String(offset + size)).toString('base64url') : undefined;
    return { slice: items.slice(offset, offset + size), next };
  }

  async function api(req: http.IncomingMessage, res: http.ServerResponse, url: URL, method: string): Promise<void> {
    authenticate(req);
    gate();
    const path = url.pathname;
    if (method === 'GET' && path === '/v1/accounts') {
      const bad = malformed.get('accounts');
      if (bad) {
        malformed.delete('accounts');
        return hostile(res, bad);
      }
      const accounts = [...new Set([...locations.keys()].map((n) => n.split('/locations/')[0]!))].sort();
      const { slice, next } = page(accounts, url, 20, 20);
      return send(res, 200, {
        accounts: slice.map((name) => ({ name, accountName: `Sandbox ${name}`, type: 'LOCATION_GROUP' })),
        ...(next ? { nextPageToken: next } : {}),
      });
    }
    let m = /^\/v1\/(accounts\/\d+)\/locations$/.exec(path);
    if (method === 'GET' && m) {
      if (!url.searchParams.get('readMask'))
        throw rpc(400, 'INVALID_ARGUMENT', "Request contains an invalid argument. 'read_mask' is required.");
      const mine = [...locations.values()].filter((l) => l.name.startsWith(`${m![1]}/`));
      const { slice, next } = page(mine, url, 100, 10);
      return send(res, 200, {
        locations: slice.map((l) => ({
          name: `locations/${l.name.split('/locations/')[1]}`,
          title: l.title,
          storefrontAddress: { addressLines: [`${100 + (hashText(l.name) % 800)} Main Street`], locality: 'Springfield' },
        })),
        ...(next ? { nextPageToken: next } : {}),
      });
    }
    m = /^\/v4\/(accounts\/\d+\/locations\/\d+)\/(localPosts|reviews)$/.exec(path);
    if (!m) throw rpc(404, 'NOT_FOUND', 'Requested entity was not found.');
    const location = m[1]!;
    if (!locations.has(location)) throw rpc(404, 'NOT_FOUND', 'Requested entity was not found.');
    const bad = malformed.get(location);
    if (bad) {
      malformed.delete(location);
      return hostile(res, bad);
    }
    if (m[2] === 'reviews' && method === 'GET') {
      const all = reviewsOf(location);
      const { slice, next } = page(all, url, 50, 50);
      const average = all.length ? Math.round((all.reduce((sum, r) => sum + r.starRating, 0) / all.length) * 10) / 10 : undefined;
      return send(res, 200, {
        ...(slice.length ? { reviews: slice.map((r) => wireReview(location, r)) } : {}),
        ...(average === undefined ? {} : { averageRating: average }),
        totalReviewCount: all.length,
        ...(next ? { nextPageToken: next } : {}),
      });
    }
    if (m[2] === 'localPosts' && method === 'GET') {
      const mine = [...(posts.get(location) ?? [])].reverse();
      const { slice, next } = page(mine, url, 100, 20);
      return send(res, 200, {
        ...(slice.length ? { localPosts: slice.map((p) => wirePost(location, p)) } : {}),
        ...(next ? { nextPageToken: next } : {}),
      });
    }
    if (m[2] === 'localPosts' && method === 'POST') {
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(await readBody(req)) as Record<string, unknown>;
      } catch {
        throw rpc(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received.');
      }
      if (typeof body.topicType !== 'string' || !['STANDARD', 'EVENT', 'OFFER', 'ALERT'].includes(body.topicType))
        throw rpc(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument. topic_type is required.');
      const summary = typeof body.summary === 'string' ? body.summary : '';
      if ([...summary].length > 1500) throw rpc(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument. Summary is too long.');
      const media = Array.isArray(body.media) ? body.media : [];
      for (const item of media)
        if (
          typeof item !== 'object' ||
          item === null ||
          (item as Record<string, unknown>).mediaFormat !== 'PHOTO' ||
          typeof (item as Record<string, unknown>).sourceUrl !== 'string'
        )
          throw rpc(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument. media.source_url is required.');
      const forced = postStates.get(location);
      if (forced && --forced.times <= 0) postStates.delete(location);
      const post: SandboxLocalPost = {
        name: `${location}/localPosts/${(mix(hashText(summary) ^ now()) >>> 0).toString(10)}${(posts.get(location)?.length ?? 0) + 1}`,
        summary,
        state: forced?.state ?? 'LIVE',
        createTime: new Date(now()).toISOString(),
        photos: media.length,
        photoUrls: media.map((item) => (item as { sourceUrl: string }).sourceUrl),
      };
      posts.set(location, [...(posts.get(location) ?? []), post]);
      if (hangs.delete(location)) {
        hanging.add(res);
        return;
      }
      const cut = cuts.get(location);
      if (cut) {
        cuts.delete(location);
        return cutAnswer(res, Buffer.from(JSON.stringify(wirePost(location, post))), cut);
      }
      return send(res, 200, wirePost(location, post));
    }
    throw rpc(404, 'NOT_FOUND', 'Requested entity was not found.');
  }

  /** A 200 with the first half of `body`: then the connection drops, or the answer just ends there. */
  function cutAnswer(res: http.ServerResponse, body: Buffer, kind: 'dropped' | 'truncated'): void {
    const half = body.subarray(0, Math.floor(body.length / 2));
    if (kind === 'truncated') return send(res, 200, half.toString());
    res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8', 'content-length': body.length });
    // Once the half is written out, the connection goes: the client has the status and part of the body.
    res.write(half, () => res.destroy());
  }

  const wirePost = (location: string, p: SandboxLocalPost) => ({
    name: p.name,
    languageCode: 'en',
    summary: p.summary,
    state: p.state,
    topicType: 'STANDARD',
    createTime: p.createTime,
    updateTime: p.createTime,
    ...(p.state === 'LIVE'
      ? { searchUrl: `https://local.google.com/place?id=${hashText(location)}&use=posts&lpsid=${hashText(p.name)}` }
      : {}),
  });

  const scenario: GoogleBusinessSandbox['scenario'] = {
    expireRefreshToken: (t) => {
      const info = refreshTokens.get(t);
      if (info) info.expired = true;
    },
    postState: (location, state, times = 1) => void postStates.set(location, { state, times }),
    hangAfterPost: (location) => void hangs.add(location),
    cutAnswerAfterPost: (location, kind = 'dropped') => void cuts.set(location, kind),
    throttle: (ms) => {
      throttledUntil = now() + ms;
    },
    notApproved: (on) => {
      notApproved = on;
    },
    addReview: (location, review) => {
      const id = `sbxnew${randomBytes(6).toString('hex')}`;
      const at = new Date(Math.floor(now() / 1000) * 1000).toISOString();
      changed.set(
        location,
        (changed.get(location) ?? new Map()).set(id, {
          reviewId: id,
          starRating: review.starRating,
          createTime: at,
          updateTime: at,
          replied: review.replied ?? false,
        }),
      );
      return id;
    },
    editReview: (location, reviewId, change) => {
      const current = reviewsOf(location).find((r) => r.reviewId === reviewId);
      if (!current) throw new Error(`no review ${reviewId} on ${location}`);
      const at = new Date(Math.floor(now() / 1000) * 1000).toISOString();
      changed.set(location, (changed.get(location) ?? new Map()).set(reviewId, { ...current, ...change, updateTime: at }));
    },
    malformed: (key, kind) => void malformed.set(key, kind),
    reset: () => {
      throttledUntil = 0;
      notApproved = false;
      postStates.clear();
      hangs.clear();
      cuts.clear();
      malformed.clear();
      for (const info of refreshTokens.values()) info.expired = false;
    },
  };

  async function scenarioRequest(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    // JSON only: a web page can POST text/plain to loopback without a preflight, never application/json.
    if ((req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase() !== 'application/json')
      return send(res, 415, { error: 'send the command as content-type: application/json' });
    let c: Record<string, unknown>;
    try {
      c = JSON.parse(await readBody(req)) as Record<string, unknown>;
      if (typeof c !== 'object' || c === null || Array.isArray(c)) throw new Error('not an object');
    } catch {
      return send(res, 400, {
        error: 'send a JSON object: {"action": "postState", "location": "accounts/101/locations/2001", "state": "REJECTED"} …',
      });
    }
    const text = (k: string) => (typeof c[k] === 'string' ? (c[k] as string) : '');
    const stars = (k: string) => (typeof c[k] === 'number' && [1, 2, 3, 4, 5].includes(c[k] as number) ? (c[k] as 1) : undefined);
    try {
      switch (c.action) {
        case 'expireRefreshToken':
          scenario.expireRefreshToken(text('refreshToken'));
          break;
        case 'postState':
          scenario.postState(
            text('location'),
            c.state === 'PROCESSING' ? 'PROCESSING' : 'REJECTED',
            typeof c.times === 'number' ? c.times : 1,
          );
          break;
        case 'hangAfterPost':
          scenario.hangAfterPost(text('location'));
          break;
        case 'cutAnswerAfterPost':
          scenario.cutAnswerAfterPost(text('location'), c.kind === 'truncated' ? 'truncated' : 'dropped');
          break;
        case 'throttle':
          scenario.throttle(Number(c.ms) || 60_000);
          break;
        case 'notApproved':
          scenario.notApproved(c.on !== false);
          break;
        case 'addReview':
          return send(res, 200, {
            reviewId: scenario.addReview(text('location'), { starRating: stars('starRating') ?? 5, replied: c.replied === true }),
          });
        case 'reset':
          scenario.reset();
          break;
        default:
          return send(res, 400, {
            error: 'actions: expireRefreshToken, postState, hangAfterPost, cutAnswerAfterPost, throttle, notApproved, addReview, reset',
          });
      }
    } catch (error) {
      return send(res, 400, { error: (error as Error).message });
    }
    send(res, 200, { ok: true });
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://sandbox');
    const method = req.method ?? 'GET';
    requests.push({ method, path: url.pathname });
    if (requests.length > 100_000) requests.splice(0, requests.length - 100_000);
    try {
      if (url.pathname === '/__sandbox/scenario' && method === 'POST') return await scenarioRequest(req, res);
      if (url.pathname === '/o/oauth2/v2/auth')
        return consent(method, method === 'POST' ? new URLSearchParams(await readBody(req)) : url.searchParams, res);
      if (url.pathname === '/token' && method === 'POST') return token(new URLSearchParams(await readBody(req)), res);
      await api(req, res, url, method);
    } catch (error) {
      if (error instanceof Failure) return send(res, error.status, error.body);
      send(res, 500, { error: { code: 500, message: 'Internal error encountered.', status: 'INTERNAL' } });
    }
  }

  const server = http.createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    locations: () => [...locations.values()],
    issueRefreshToken,
    reviews: reviewsOf,
    posts: (location) => (posts.get(location) ?? []).map((p) => ({ ...p, photoUrls: [...p.photoUrls] })),
    scenario,
    requests,
  };
}
