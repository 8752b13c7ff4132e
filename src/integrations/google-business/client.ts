// The Google Business Profile wire client: the locations a Google login manages, a location's
// local posts (create, list) and its reviews, over Google's documented REST APIs:
// - My Business Account Management API v1: GET /v1/accounts (accounts[], nextPageToken);
// - My Business Business Information API v1: GET /v1/{accounts/*}/locations?readMask=… (locations[]
//   named `locations/{id}`, nextPageToken);
// - Google My Business API v4: POST/GET /v4/{accounts/*/locations/*}/localPosts and
//   GET /v4/{accounts/*/locations/*}/reviews (pageSize ≤ 50, orderBy `updateTime desc`).
// In production the three live on three hosts (mybusinessaccountmanagement.googleapis.com,
// mybusinessbusinessinformation.googleapis.com, mybusiness.googleapis.com); GOOGLE_BUSINESS_URL
// points all three at one origin, the sandbox's. Transport, OAuth and the refresh-token rules are
// the Google Ads client's (../google/transport.ts).
import { PlatformError, type PlatformFailureKind } from '../ad-platform.ts';
import {
  createGoogleTransport,
  googleAuthorizeUrl,
  isObject,
  type Json,
  MAX_QUOTA_WAIT_MS,
  NoAnswer,
  SHORT_QUOTA_WAIT_MS,
  type Session,
  TOKEN_TEXT,
  UnreadAnswer,
} from '../google/transport.ts';
import { RETRY_INFO_TYPE, durationMs } from '../google-ads/wire.ts';

/** The one scope of the Business Profile APIs (OAuth 2.0 Scopes for Google APIs › My Business). */
export const GOOGLE_BUSINESS_SCOPES = ['https://www.googleapis.com/auth/business.manage'];

const HOSTS = {
  accounts: 'https://mybusinessaccountmanagement.googleapis.com',
  information: 'https://mybusinessbusinessinformation.googleapis.com',
  v4: 'https://mybusiness.googleapis.com',
};
const ERROR_INFO_TYPE = 'type.googleapis.com/google.rpc.ErrorInfo';
const QUOTA_FAILURE_TYPE = 'type.googleapis.com/google.rpc.QuotaFailure';
/** A read or a post: much less than a Google Ads stream. */
const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024;
/** Pages of one listing believed at most (50 reviews a page: 100,000 reviews). */
const MAX_PAGES = 2_000;
/** Pages of a location's posts looked through when reconciling (100 posts a page). */
const MAX_FIND_PAGES = 20;
/** `accounts/{id}/locations/{id}`: what every v4 call is addressed to. */
export const LOCATION_NAME = /^accounts\/\d{1,30}\/locations\/\d{1,30}$/;

export interface GoogleBusinessClientOptions {
  /** One origin for the three APIs (the sandbox's); unset: Google's three hosts. */
  businessUrl?: string;
  oauthUrl?: string;
  clientId: string;
  clientSecret: string;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  now?: () => Date;
  timeoutMs?: number;
  maxBodyBytes?: number;
}

export interface BusinessLocation {
  /** `accounts/{a}/locations/{l}`. */
  name: string;
  title: string;
  /** One line of the storefront address, when it has one. */
  address: string | null;
}

export type LocalPostState = 'LIVE' | 'PROCESSING' | 'REJECTED' | 'LOCAL_POST_STATE_UNSPECIFIED';

export interface LocalPost {
  /** `accounts/{a}/locations/{l}/localPosts/{id}`. */
  name: string;
  summary: string;
  state: LocalPostState;
  createTime: string;
  searchUrl: string | null;
}

export type StarRating = 1 | 2 | 3 | 4 | 5;

export interface BusinessReview {
  reviewId: string;
  starRating: StarRating;
  createTime: string;
  updateTime: string;
  /** When the business replied (null: unanswered). */
  repliedAt: string | null;
}

export interface ReviewPage {
  reviews: BusinessReview[];
  averageRating: number | null;
  totalReviewCount: number;
  nextPageToken: string | null;
}

export interface NewLocalPost {
  summary: string;
  /** Public URLs Google fetches the photos from. */
  photoUrls: string[];
}

const STARS: Record<string, StarRating> = { ONE: 1, TWO: 2, THREE: 3, FOUR: 4, FIVE: 5 };
const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

export type GoogleBusinessClient = ReturnType<typeof createGoogleBusinessClient>;

export function createGoogleBusinessClient(options: GoogleBusinessClientOptions) {
  const one = options.businessUrl?.replace(/\/+$/, '');
  const base = { accounts: one ?? HOSTS.accounts, information: one ?? HOSTS.information, v4: one ?? HOSTS.v4 };
  const transport = createGoogleTransport({
    platform: 'google_business',
    oauthUrl: options.oauthUrl,
    clientId: options.clientId,
    clientSecret: options.clientSecret,
    sleep: options.sleep,
    now: options.now,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
  });
  const { scrub, send, parseJson, statusOnly, retryAfterMs, waitOrThrottle, accessToken } = transport;
  const who = 'Google Business Profile';

  function session(refreshToken: string, signal?: AbortSignal): Session {
    if (typeof refreshToken !== 'string' || !TOKEN_TEXT.test(refreshToken))
      throw new PlatformError('needs_reconnect', 'The stored Google refresh token is not a token; connect Google Business Profile again');
    return transport.session(refreshToken, signal);
  }

  /**
   * A temporary failure answered to a request that creates something does not say that nothing
   * was created: google.rpc.Code documents that DEADLINE_EXCEEDED "may be returned even if the
   * operation has completed successfully" and that after UNAVAILABLE "it is not always safe to
   * retry non-idempotent operations", and a 5xx page from a front end says nothing of what the
   * API did. So it is NoAnswer (looked up, never sent again blindly), with Google's words.
   */
  const undecided = (error: PlatformError, creates: boolean): PlatformError =>
    creates && error.kind === 'platform_error'
      ? new NoAnswer(`${error.message}: the post may have been made`, {
          ...(error.platformMessage === undefined ? {} : { platformMessage: error.platformMessage }),
          ...(error.platformCode === undefined ? {} : { platformCode: error.platformCode }),
        })
      : error;

  /**
   * A 2xx answered to a request that creates something says it was done ("200 OK: the request
   * succeeded", whatever its body): when the body cannot be read (cut off mid-way, not JSON, not
   * the created thing) the thing exists all the same, and only a lookup can say which it is. So
   * it is NoAnswer, never a failure that would leave a made post recorded as not made.
   */
  const doneUnread = (why: string, status?: number): NoAnswer =>
    new NoAnswer(`${why}${status === undefined ? '' : ` (HTTP ${status})`}: the post was made, but the answer does not say which it is`);
  const succeeded = (status: number) => status >= 200 && status < 300;

  /**
   * One call under the token and quota rules: the answer's JSON object, or PlatformError /
   * PlatformThrottled. `creates`: the request makes something (a local post), so a temporary
   * failure in its answer, or a success whose body cannot be read, is NoAnswer.
   */
  async function call(s: Session, what: string, method: 'GET' | 'POST', url: URL, body?: unknown, creates = false): Promise<Json> {
    let fresh = false;
    for (;;) {
      const token = await accessToken(s, fresh);
      const headers: Record<string, string> = { authorization: `Bearer ${token}` };
      if (body !== undefined) headers['content-type'] = 'application/json';
      let answer;
      try {
        answer = await send(s, who, what, method, url, headers, body === undefined ? undefined : JSON.stringify(body));
      } catch (error) {
        // The status came and the body broke off: a success, or a server error, may hide a made post.
        if (creates && error instanceof UnreadAnswer && (succeeded(error.status) || error.status >= 500))
          throw succeeded(error.status)
            ? doneUnread(error.message, error.status)
            : new NoAnswer(`${error.message} (HTTP ${error.status}): the post may have been made`);
        throw error;
      }
      const json = parseJson(answer);
      if (isObject(json) && isObject(json.error)) {
        const failure = readFailure(json.error, answer.status, what, s);
        if ('waitMs' in failure) {
          await waitOrThrottle(s, failure.waitMs, failure.message, failure.platformMessage);
          continue;
        }
        // An access token from memory Google no longer takes: one new one, then the verdict stands.
        if (failure.kind === 'needs_reconnect' && !fresh) {
          fresh = true;
          continue;
        }
        throw undecided(failure, creates);
      }
      if (answer.status === 429) {
        const ms = Math.min(retryAfterMs(answer.retryAfter) ?? SHORT_QUOTA_WAIT_MS, MAX_QUOTA_WAIT_MS);
        await waitOrThrottle(s, ms, `${who} asks to slow down for ${what}`, undefined);
        continue;
      }
      if (creates && succeeded(answer.status) && !isObject(json))
        throw doneUnread(
          `${who} answered ${what} with ${json === undefined ? 'a body that is not JSON' : 'JSON that is not an object'}`,
          answer.status,
        );
      if (answer.status < 200 || answer.status >= 300 || json === undefined) {
        const error = statusOnly(answer, who, what, 'needs_reconnect');
        if (error.kind === 'needs_reconnect' && !fresh) {
          fresh = true;
          continue;
        }
        throw undecided(error, creates);
      }
      if (!isObject(json)) throw new PlatformError('bad_answer', `${who}'s answer to ${what} is not a JSON object`);
      return json;
    }
  }

  /**
   * A google.rpc.Status: a failure kind, or a wait. The Business Profile APIs are gated: a project
   * Google has not approved has a quota of 0 requests per minute, so every call answers 429
   * RESOURCE_EXHAUSTED with the limit's value 0 ("Quota exceeded … limit … of service
   * mybusiness…"; Business Profile APIs › Prerequisites: "If you see a quota of 0 QPM, your project
   * isn't approved"). No wait mends that: it is `not_approved`, not a throttle.
   */
  function readFailure(
    value: Json,
    httpStatus: number,
    what: string,
    s: Session,
  ): PlatformError | { waitMs: number; message: string; platformMessage: string | undefined } {
    const message = typeof value.message === 'string' ? scrub(value.message.slice(0, 2000), s) : undefined;
    const status = typeof value.status === 'string' ? value.status.slice(0, 64) : `HTTP ${httpStatus}`;
    const details = Array.isArray(value.details) ? value.details.filter(isObject) : [];
    const words = { platformMessage: message, platformCode: status };
    const says = `Google Business Profile refused ${what}`;
    if (status === 'RESOURCE_EXHAUSTED' || httpStatus === 429) {
      const zeroQuota =
        details.some((d) => d['@type'] === ERROR_INFO_TYPE && isObject(d.metadata) && String(d.metadata.quota_limit_value ?? '') === '0') ||
        details.some((d) => d['@type'] === QUOTA_FAILURE_TYPE && /limit '?0'?\b/.test(JSON.stringify(d))) ||
        /\blimit of 0\b|quota limit 0\b/i.test(message ?? '');
      if (zeroQuota)
        return new PlatformError(
          'not_approved',
          `${says}: API access not yet approved (the project's quota is 0); request access to the Business Profile APIs from Google`,
          words,
        );
      const asked = details.filter((d) => d['@type'] === RETRY_INFO_TYPE).map((d) => durationMs(d.retryDelay) ?? -1);
      const ms = Math.max(...asked, -1);
      return {
        waitMs: ms >= 0 ? Math.min(Math.max(ms, 1000), MAX_QUOTA_WAIT_MS) : SHORT_QUOTA_WAIT_MS,
        message: `Google Business Profile's quota is exhausted for ${what}`,
        platformMessage: message,
      };
    }
    let kind: PlatformFailureKind;
    if (status === 'UNAUTHENTICATED' || httpStatus === 401) kind = 'needs_reconnect';
    else if (status === 'PERMISSION_DENIED' || httpStatus === 403) kind = 'missing_permission';
    else if (['INTERNAL', 'UNAVAILABLE', 'DEADLINE_EXCEEDED', 'UNKNOWN', 'ABORTED'].includes(status) || httpStatus >= 500)
      kind = 'platform_error';
    else kind = 'invalid_request';
    return new PlatformError(kind, `${says} (${status})`, words);
  }

  /** Every page of a listing: `read` takes one page's JSON and returns its next token. */
  async function eachPage(s: Session, what: string, url: (pageToken: string | null) => URL, read: (json: Json) => unknown) {
    let pageToken: string | null = null;
    for (let page = 0; page < MAX_PAGES; page++) {
      const json = await call(s, what, 'GET', url(pageToken));
      read(json);
      const next = json.nextPageToken;
      if (next === undefined || next === '') return;
      if (typeof next !== 'string' || next.length > 4096)
        throw new PlatformError('bad_answer', `${who}'s answer to ${what} has a nextPageToken that is not a token`);
      pageToken = next;
    }
    throw new PlatformError('bad_answer', `${who} answered ${what} with more than ${MAX_PAGES} pages`);
  }

  const paged = (href: string, params: Record<string, string>) => (pageToken: string | null) => {
    const url = new URL(href);
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    if (pageToken) url.searchParams.set('pageToken', pageToken);
    return url;
  };

  return {
    authorizeUrl: (p: { accountsUrl: string; clientId: string; redirectUri: string; state: string }) =>
      googleAuthorizeUrl({ ...p, scopes: GOOGLE_BUSINESS_SCOPES }),

    exchangeCode: transport.exchangeCode,

    /** Every location of every account the login manages. */
    async listLocations(refreshToken: string, signal?: AbortSignal): Promise<BusinessLocation[]> {
      const s = session(refreshToken, signal);
      const accounts: string[] = [];
      await eachPage(s, 'the accounts', paged(`${base.accounts}/v1/accounts`, { pageSize: '20' }), (json) => {
        const list = json.accounts ?? [];
        if (!Array.isArray(list)) throw new PlatformError('bad_answer', `${who}'s answer to the accounts has no accounts list`);
        for (const a of list) {
          if (!isObject(a) || typeof a.name !== 'string' || !/^accounts\/\d{1,30}$/.test(a.name))
            throw new PlatformError('bad_answer', `${who}'s answer to the accounts has an account without a valid name`);
          accounts.push(a.name);
        }
      });
      const locations: BusinessLocation[] = [];
      for (const account of accounts) {
        const what = `the locations of ${account}`;
        await eachPage(
          s,
          what,
          paged(`${base.information}/v1/${account}/locations`, { readMask: 'name,title,storefrontAddress', pageSize: '100' }),
          (json) => {
            const list = json.locations ?? [];
            if (!Array.isArray(list)) throw new PlatformError('bad_answer', `${who}'s answer to ${what} has no locations list`);
            for (const l of list) {
              // Business Information names a location `locations/{id}`; v4 addresses it under its account.
              if (!isObject(l) || typeof l.name !== 'string' || !/^locations\/\d{1,30}$/.test(l.name) || typeof l.title !== 'string')
                throw new PlatformError('bad_answer', `${who}'s answer to ${what} has a location without a valid name and title`);
              const address =
                isObject(l.storefrontAddress) && Array.isArray(l.storefrontAddress.addressLines)
                  ? [...l.storefrontAddress.addressLines, l.storefrontAddress.locality].filter((x) => typeof x === 'string' && x).join(', ')
                  : '';
              locations.push({ name: `${account}/${l.name}`, title: l.title.slice(0, 200), address: address.slice(0, 300) || null });
            }
          },
        );
      }
      return locations;
    },

    /**
     * accounts.locations.localPosts.create: a STANDARD post (topicType is required). The answer is
     * the LocalPost; its `state` says whether Google took it (a 200 with REJECTED is a refusal). A
     * create sent whole without an answer, answered with a temporary failure, or answered 200 with
     * a body that is cut off or not the post, is NoAnswer.
     */
    async createLocalPost(refreshToken: string, location: string, post: NewLocalPost, signal?: AbortSignal): Promise<LocalPost> {
      const s = session(refreshToken, signal);
      const what = `the new post on ${location}`;
      const json = await call(
        s,
        what,
        'POST',
        new URL(`${base.v4}/v4/${location}/localPosts`),
        {
          languageCode: 'en',
          topicType: 'STANDARD',
          summary: post.summary,
          ...(post.photoUrls.length ? { media: post.photoUrls.map((sourceUrl) => ({ mediaFormat: 'PHOTO', sourceUrl })) } : {}),
        },
        true,
      );
      try {
        return parseLocalPost(json, what, location);
      } catch (error) {
        // `call` returned, so Google answered 2xx: the post exists, whatever the body says of it.
        if (error instanceof PlatformError) throw doneUnread(error.message);
        throw error;
      }
    },

    /** The first of the location's local posts that `match` takes (accounts.locations.localPosts.list). */
    async findLocalPost(
      refreshToken: string,
      location: string,
      match: (post: LocalPost) => boolean,
      signal?: AbortSignal,
    ): Promise<LocalPost | null> {
      const s = session(refreshToken, signal);
      const what = `the posts of ${location}`;
      let found: LocalPost | null = null;
      let pageToken: string | null = null;
      // The list's order is not documented: every page is looked at, up to a bound.
      for (let page = 0; page < MAX_FIND_PAGES && !found; page++) {
        const json = await call(s, what, 'GET', paged(`${base.v4}/v4/${location}/localPosts`, { pageSize: '100' })(pageToken));
        const list = json.localPosts ?? [];
        if (!Array.isArray(list)) throw new PlatformError('bad_answer', `${who}'s answer to ${what} has no localPosts list`);
        for (const item of list) {
          const post = parseLocalPost(item, what, location);
          if (match(post)) {
            found = post;
            break;
          }
        }
        const next = json.nextPageToken;
        if (typeof next !== 'string' || next === '') break;
        pageToken = next;
      }
      return found;
    },

    /** accounts.locations.reviews.list: one page, newest update first. */
    async reviewPage(refreshToken: string, location: string, pageToken: string | null, signal?: AbortSignal): Promise<ReviewPage> {
      const s = session(refreshToken, signal);
      const what = `the reviews of ${location}`;
      const json = await call(
        s,
        what,
        'GET',
        paged(`${base.v4}/v4/${location}/reviews`, { pageSize: '50', orderBy: 'updateTime desc' })(pageToken),
      );
      const list = json.reviews ?? [];
      if (!Array.isArray(list) || list.length > 50)
        throw new PlatformError('bad_answer', `${who}'s answer to ${what} has no valid reviews list`);
      const reviews = list.map((r) => parseReview(r, what));
      const total = json.totalReviewCount ?? 0;
      const average = json.averageRating;
      if (typeof total !== 'number' || !Number.isSafeInteger(total) || total < 0)
        throw new PlatformError('bad_answer', `${who}'s answer to ${what} has no valid totalReviewCount`);
      if (average !== undefined && (typeof average !== 'number' || average < 0 || average > 5))
        throw new PlatformError('bad_answer', `${who}'s answer to ${what} has no valid averageRating`);
      const next = json.nextPageToken;
      if (next !== undefined && (typeof next !== 'string' || next.length > 4096))
        throw new PlatformError('bad_answer', `${who}'s answer to ${what} has a nextPageToken that is not a token`);
      return { reviews, averageRating: average ?? null, totalReviewCount: total, nextPageToken: next || null };
    },
  };

  function parseLocalPost(value: unknown, what: string, location: string): LocalPost {
    if (
      !isObject(value) ||
      typeof value.name !== 'string' ||
      !value.name.startsWith(`${location}/localPosts/`) ||
      value.name.length > 300 ||
      (value.createTime !== undefined && (typeof value.createTime !== 'string' || !TIME.test(value.createTime)))
    )
      throw new PlatformError('bad_answer', `${who}'s answer to ${what} has a post without a valid name or createTime`);
    const state = value.state ?? 'LOCAL_POST_STATE_UNSPECIFIED';
    if (!['LIVE', 'PROCESSING', 'REJECTED', 'LOCAL_POST_STATE_UNSPECIFIED'].includes(state as string))
      throw new PlatformError('bad_answer', `${who}'s answer to ${what} has a post in an unknown state`);
    return {
      name: value.name,
      summary: typeof value.summary === 'string' ? value.summary : '',
      state: state as LocalPostState,
      createTime: (value.createTime as string | undefined) ?? new Date(0).toISOString(),
      searchUrl: typeof value.searchUrl === 'string' && /^https:\/\//.test(value.searchUrl) ? value.searchUrl.slice(0, 2000) : null,
    };
  }

  function parseReview(value: unknown, what: string): BusinessReview {
    const bad = () => new PlatformError('bad_answer', `${who}'s answer to ${what} has a review without a valid id, rating or times`);
    if (!isObject(value) || typeof value.reviewId !== 'string' || value.reviewId === '' || value.reviewId.length > 300) throw bad();
    const stars = STARS[String(value.starRating)];
    if (stars === undefined) throw bad();
    if (typeof value.createTime !== 'string' || !TIME.test(value.createTime)) throw bad();
    if (typeof value.updateTime !== 'string' || !TIME.test(value.updateTime)) throw bad();
    const reply = value.reviewReply;
    if (
      reply !== undefined &&
      (!isObject(reply) || (reply.updateTime !== undefined && (typeof reply.updateTime !== 'string' || !TIME.test(reply.updateTime))))
    )
      throw bad();
    return {
      reviewId: value.reviewId,
      starRating: stars,
      createTime: value.createTime,
      updateTime: value.updateTime,
      repliedAt: isObject(reply) ? ((reply.updateTime as string | undefined) ?? value.updateTime) : null,
    };
  }
}
