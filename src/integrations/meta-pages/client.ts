// The wire client for organic publishing on Meta: a user's Facebook Pages (with the Page tokens
// derived from the user token), Page posts (feed, photos, multi-photo, video), Instagram content
// publishing (containers, their status, media_publish, the publishing limit), the lookup of a
// publication for reconciliation, and post / media insights. It speaks Meta's documented wire
// format through the shared Graph transport (../meta/graph.ts: the same version, base URL, error
// model, throttle rules and answer checks as the ads client), so it talks to graph.facebook.com and
// to the loopback sandbox (./sandbox.ts) alike.
//
// Exactly once: no Meta publishing call takes an idempotency key. A publishing request (Page feed /
// photos / videos, Instagram media_publish) that was written but got no usable answer throws
// DeliveryUnconfirmed, never a retryable error; the publisher reconciles it with find(). A failure
// before the connection opened (DNS, refused) is PlatformError('unreachable'): nothing was sent. The
// publisher sends again after an `unreachable` or a `platform_error`, so neither is thrown where a
// publication may have been made: they come from an earlier step (the limit read, containers,
// unpublished photos) or are Meta's own error answer, which it documents as temporary ("wait and
// retry the operation", codes 1 and 2, is_transient).
import { META_GRAPH_API_VERSION } from '../../policy.ts';
import { DeliveryUnconfirmed, LookupAmbiguous, PlatformError, PublishNotReady } from '../ad-platform.ts';
import { createGraphTransport, isObject, type GraphSession, type Json } from '../meta/graph.ts';
import { FACEBOOK_POST_RULES, INSTAGRAM_POST_RULES } from './rules.ts';

export interface MetaPagesClientOptions {
  /** META_GRAPH_URL: https://graph.facebook.com, or the sandbox. */
  graphUrl: string;
  apiVersion?: string;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Per request, from sending it to the last byte of the answer (default 60 s). */
  timeoutMs?: number;
  maxBodyBytes?: number;
  /** Instagram container polls: first wait, cap of the doubling wait, and the total before giving up. */
  containerPoll?: { firstMs: number; maxDelayMs: number; totalMs: number };
  /** Throttle time one call may wait out before PlatformThrottled (default 2 min). */
  throttleWaitMaxMs?: number;
  /**
   * The error for a publication written but unanswered: the publisher's DeliveryUnconfirmed
   * (src/domain/posts/connector.ts), which integrations cannot import; default ad-platform.ts's.
   */
  unconfirmed?: (message: string) => Error;
}

/** A publication as the network knows it (the Connector's Publication). */
export interface Publication {
  externalId: string;
  url?: string;
}

/** A Facebook Page the user manages, with its Page token and the Instagram account linked to it. */
export interface MetaPage {
  id: string;
  name: string;
  /** The Page access token (derived from the user token; a long-lived user token gives one that does not expire). Never logged. */
  accessToken: string;
  instagram: { id: string; username: string } | null;
}

export interface MetaMedia {
  kind: 'image' | 'video';
  /** A public URL Meta fetches the bytes from (the signed media URL under BASE_URL). */
  url: string;
  /** The sniffed type (image/jpeg, video/mp4, …), when known: Instagram takes JPEG images only. */
  contentType?: string;
}

/** A publication's lifetime figures, as far as the network reports them; null: not reported. */
export interface MetaInsights {
  /** Page post: post_media_view; Instagram: views (both replace the deprecated impressions). */
  impressions: number | null;
  /** Page post: post_total_media_view_unique; Instagram: reach. */
  reach: number | null;
  likes: number | null;
  comments: number | null;
  shares: number | null;
  saves: number | null;
  clicks: number | null;
  /** Instagram: total_interactions; Page post: reactions + comments + shares. */
  engagements: number | null;
}

export interface MetaPagesClient {
  listPages(userToken: string, signal?: AbortSignal): Promise<MetaPage[]>;
  /**
   * Publishes on the Page. Once `signal` is aborted no request is sent (one in flight is
   * abandoned): the caller has given the publication up and will look it up instead.
   */
  publishPage(pageToken: string, pageId: string, post: { text: string; media: MetaMedia[] }, signal?: AbortSignal): Promise<Publication>;
  /**
   * Publishes on the Instagram account; `signal` as for publishPage (no media_publish after it).
   * Given up while the post's container is still IN_PROGRESS, it throws PublishNotReady naming the
   * container; given that back as `prepared`, it waits for the same container, not a new one.
   */
  publishInstagram(
    pageToken: string,
    igUserId: string,
    post: { caption: string; media: MetaMedia[] },
    signal?: AbortSignal,
    prepared?: string,
  ): Promise<Publication>;
  /**
   * The Page's post with exactly this message created at or after `since`, or null. With an empty
   * message (an image alone) every post without one is a candidate: the only one is it, several
   * throw LookupAmbiguous.
   */
  findPagePost(pageToken: string, pageId: string, text: string, since: Date, signal?: AbortSignal): Promise<Publication | null>;
  /** The account's media with exactly this caption posted at or after `since`, or null; an empty caption as findPagePost. */
  findInstagramMedia(pageToken: string, igUserId: string, caption: string, since: Date, signal?: AbortSignal): Promise<Publication | null>;
  pagePostInsights(pageToken: string, postId: string, signal?: AbortSignal): Promise<MetaInsights>;
  instagramMediaInsights(pageToken: string, mediaId: string, signal?: AbortSignal): Promise<MetaInsights>;
}

/**
 * The publishing limit when content_publishing_limit's answer has no `config`. Meta's pages
 * disagree: the IG User Content Publishing Limit reference says `quota_total` is "currently 50"
 * (its example answers `"config": {"quota_total": 50, "quota_duration": 86400}`), the Content
 * Publishing guide "100 API-published posts within a 24-hour moving period". The lower is taken;
 * the answer's own quota_total, when present, is the one believed.
 */
export const INSTAGRAM_DEFAULT_QUOTA = 50;
/** Pages of a lookup read before giving up (100 posts each): a reconciliation looks at recent posts only. */
const FIND_MAX_PAGES = 5;
const FIND_PAGE_SIZE = 100;
const PAGES_PAGE_SIZE = 100;
const DEFAULT_POLL = { firstMs: 1_000, maxDelayMs: 15_000, totalMs: 5 * 60_000 };

const NUMERIC_ID = /^\d{1,32}$/;
/** Page post ids: `{page-id}_{post-id}`. */
const POST_ID = /^\d{1,32}_\d{1,32}$/;
const TOKEN = /^[\x21-\x7e]{1,4096}$/;

/** Instagram container status_code values (IG Container reference). */
type ContainerStatus = 'EXPIRED' | 'ERROR' | 'FINISHED' | 'IN_PROGRESS' | 'PUBLISHED';
const CONTAINER_STATUSES = new Set<string>(['EXPIRED', 'ERROR', 'FINISHED', 'IN_PROGRESS', 'PUBLISHED']);
/** What an attempt given up while its container was processing leaves for the next: the container and when it was made. */
const PREPARED_CONTAINER = /^ig-container:(\d{1,32}):(\d{1,15})$/;

export function createMetaPagesClient(options: MetaPagesClientOptions): MetaPagesClient {
  const t = createGraphTransport({
    graphUrl: options.graphUrl,
    apiVersion: options.apiVersion ?? META_GRAPH_API_VERSION,
    ...(options.sleep ? { sleep: options.sleep } : {}),
    timeoutMs: options.timeoutMs ?? 60_000,
    maxBodyBytes: options.maxBodyBytes ?? 4 * 1024 * 1024,
    ...(options.throttleWaitMaxMs !== undefined ? { throttleWaitMaxMs: options.throttleWaitMaxMs } : {}),
  });
  const poll = options.containerPoll ?? DEFAULT_POLL;
  const now = () => Date.now();

  const tokenSession = (token: string, signal?: AbortSignal): GraphSession => {
    if (typeof token !== 'string' || !TOKEN.test(token))
      throw new PlatformError('needs_reconnect', 'The Meta token of this channel is missing or malformed: connect it again');
    return t.session(token, [token], signal);
  };
  const checkId = (id: string, what: string) => {
    if (typeof id !== 'string' || !NUMERIC_ID.test(id)) throw new PlatformError('invalid_request', `${what} is not a Meta id (digits)`);
  };
  /** A publishing request: written but unanswered, it may have published. */
  const publishing = {
    unanswered: (message: string) =>
      (options.unconfirmed ?? ((m: string) => new DeliveryUnconfirmed(m)))(
        `${message}: the post may have been published; it is looked up before anything is sent again`,
      ),
  };
  const idOf = (answer: Json, key: string, what: string, pattern: RegExp = NUMERIC_ID): string => {
    const id = answer[key];
    if (typeof id !== 'string' || !pattern.test(id)) throw new PlatformError('bad_answer', `Meta's answer to ${what} has no valid ${key}`);
    return id;
  };
  /** The id of a publishing answer: missing or malformed, the post may still exist (unconfirmed, not failed). */
  const publishedId = (answer: Json, key: string, what: string, pattern: RegExp): string => {
    try {
      return idOf(answer, key, what, pattern);
    } catch (error) {
      throw publishing.unanswered((error as Error).message);
    }
  };

  async function permalink(s: GraphSession, id: string, field: 'permalink_url' | 'permalink'): Promise<string | undefined> {
    // After the publication: its address is a nicety, and a failure to read it must not turn a
    // published post into a failed one.
    try {
      const answer = await t.graph(s, `the address of ${id}`, 'GET', id, { fields: field });
      const url = answer[field];
      return typeof url === 'string' && /^https?:\/\//.test(url) && url.length <= 2000 ? url : undefined;
    } catch {
      return undefined;
    }
  }

  async function publishPage(
    pageToken: string,
    pageId: string,
    post: { text: string; media: MetaMedia[] },
    signal?: AbortSignal,
  ): Promise<Publication> {
    checkId(pageId, 'The Page id');
    const s = tokenSession(pageToken, signal);
    const { text, media } = post;
    // Refused before anything is sent: what Facebook refuses (./rules.ts).
    const broken = FACEBOOK_POST_RULES.broken(post)[0];
    if (broken) throw new PlatformError('rejected', broken.message);
    const videos = media.filter((m) => m.kind === 'video');
    const what = `the post to Page ${pageId}`;
    let postId: string;
    if (media.length === 0) {
      // Pages API › Posts: POST /{page-id}/feed with message → {"id": "{page-id}_{post-id}"}.
      postId = publishedId(await t.graph(s, what, 'POST', `${pageId}/feed`, { message: text }, publishing), 'id', what, POST_ID);
    } else if (videos.length === 1) {
      // Video API › Publishing: POST /{page-id}/videos with file_url → {"id": "{video-id}"}; the
      // video's post is found by the reconciliation lookup like any other.
      const id = publishedId(
        await t.graph(s, what, 'POST', `${pageId}/videos`, { file_url: videos[0]!.url, description: text }, publishing),
        'id',
        what,
        NUMERIC_ID,
      );
      return { externalId: id, url: `https://www.facebook.com/${pageId}/videos/${id}` };
    } else if (media.length === 1) {
      // Pages API › Posts › Publish a photo: POST /{page-id}/photos with url and message →
      // {"id": "{photo-id}", "post_id": "{page-id}_{post-id}"}.
      postId = publishedId(
        await t.graph(s, what, 'POST', `${pageId}/photos`, { url: media[0]!.url, message: text }, publishing),
        'post_id',
        what,
        POST_ID,
      );
    } else {
      // Multi-photo post: each photo uploaded with published=false (not a publication: an error
      // there is an ordinary failure), then one feed post with attached_media[i]={"media_fbid": …}.
      const attached: Record<string, string> = {};
      for (const [i, m] of media.entries()) {
        const photo = await t.graph(s, `photo ${i + 1} of ${what}`, 'POST', `${pageId}/photos`, { url: m.url, published: 'false' });
        attached[`attached_media[${i}]`] = JSON.stringify({ media_fbid: idOf(photo, 'id', `photo ${i + 1} of ${what}`) });
      }
      postId = publishedId(
        await t.graph(s, what, 'POST', `${pageId}/feed`, { message: text, ...attached }, publishing),
        'id',
        what,
        POST_ID,
      );
    }
    const url = await permalink(s, postId, 'permalink_url');
    return url ? { externalId: postId, url } : { externalId: postId };
  }

  /** Refuses what Instagram documents it refuses (./rules.ts), before anything is sent. */
  function checkInstagram(post: { caption: string; media: MetaMedia[] }): void {
    const broken = INSTAGRAM_POST_RULES.broken({ text: post.caption, media: post.media })[0];
    if (broken) throw new PlatformError('rejected', broken.message);
  }

  /** IG User › Content Publishing Limit: refuses when the rolling 24 h quota is used up. */
  async function checkQuota(s: GraphSession, igUserId: string): Promise<void> {
    const what = `the publishing limit of Instagram account ${igUserId}`;
    const answer = await t.graph(s, what, 'GET', `${igUserId}/content_publishing_limit`, { fields: 'quota_usage,config' });
    const row = Array.isArray(answer.data) ? answer.data[0] : undefined;
    if (!isObject(row) || typeof row.quota_usage !== 'number' || !Number.isSafeInteger(row.quota_usage) || row.quota_usage < 0)
      throw new PlatformError('bad_answer', `Meta's answer to ${what} has no valid quota_usage`);
    const config = isObject(row.config) ? row.config : undefined;
    const total =
      typeof config?.quota_total === 'number' && Number.isSafeInteger(config.quota_total) && config.quota_total > 0
        ? config.quota_total
        : INSTAGRAM_DEFAULT_QUOTA;
    if (row.quota_usage >= total) {
      throw new PlatformError(
        'limit_reached',
        `Instagram account ${igUserId} has published ${row.quota_usage} posts through the API in the last 24 hours, its limit (${total}): try again later`,
        { platformMessage: `quota_usage ${row.quota_usage} of ${total}`, platformCode: 'content_publishing_limit' },
      );
    }
  }

  /**
   * Polls a container until FINISHED (IG Container › status_code), on a bounded doubling schedule;
   * `waited`: how long earlier attempts waited for it already (they count towards the bound).
   */
  async function waitForContainer(s: GraphSession, containerId: string, what: string, waitedBefore = 0): Promise<void> {
    for (let waited = waitedBefore, next = 0; ; next = next === 0 ? poll.firstMs : Math.min(next * 2, poll.maxDelayMs)) {
      if (next > 0) {
        if (waited >= poll.totalMs)
          throw new PlatformError('platform_error', `Instagram was still processing ${what} after ${Math.round(poll.totalMs / 1000)} s`);
        await t.sleep(next, s.signal);
        waited += next;
      }
      const answer = await t.graph(s, `the status of ${what}`, 'GET', containerId, { fields: 'status_code,status' });
      const code = answer.status_code;
      if (typeof code !== 'string' || !CONTAINER_STATUSES.has(code))
        throw new PlatformError('bad_answer', `Meta's answer about ${what} has no known status_code`);
      const status = typeof answer.status === 'string' ? answer.status.slice(0, 500) : code;
      switch (code as ContainerStatus) {
        case 'FINISHED':
          return;
        case 'IN_PROGRESS':
          continue;
        case 'ERROR':
          // "The container failed to complete the publishing process": the media was refused.
          throw new PlatformError('rejected', `Instagram could not process ${what}`, { platformMessage: status, platformCode: 'ERROR' });
        case 'EXPIRED':
          throw new PlatformError('platform_error', `Instagram's container for ${what} expired before it was published`, {
            platformMessage: status,
            platformCode: 'EXPIRED',
          });
        case 'PUBLISHED':
          throw new PlatformError('bad_answer', `Instagram says ${what} is already published`);
      }
    }
  }

  async function publishInstagram(
    pageToken: string,
    igUserId: string,
    post: { caption: string; media: MetaMedia[] },
    signal?: AbortSignal,
    prepared?: string,
  ): Promise<Publication> {
    checkId(igUserId, 'The Instagram account id');
    checkInstagram(post);
    const s = tokenSession(pageToken, signal);
    await checkQuota(s, igUserId);
    const what = `the post to Instagram account ${igUserId}`;
    const container = async (params: Record<string, string>, label: string) =>
      idOf(await t.graph(s, label, 'POST', `${igUserId}/media`, params), 'id', label);
    /**
     * Waits for the post's own container (the one media_publish takes). A video can take minutes
     * ("we recommend querying a container's status once per minute, for no more than 5 minutes":
     * IG User Media › Reels), longer than the publisher's deadline for one call: given up while it
     * processes, nothing was published, and the next attempt goes on waiting for this container.
     */
    const waitForPost = async (id: string, madeAt: number) => {
      try {
        await waitForContainer(s, id, what, Math.max(0, now() - madeAt));
      } catch (error) {
        // Only within the 5 minutes: past them (polls that keep hanging or being throttled) the
        // attempt ends as any timed-out one (looked up; sent again with a new container as a
        // counted retry), so a container is never waited for forever.
        if (signal?.aborted && now() - madeAt < poll.totalMs)
          throw new PublishNotReady(
            `Instagram is still processing ${what}; it is published once ready`,
            `ig-container:${id}:${madeAt}`,
            poll.maxDelayMs,
          );
        throw error;
      }
    };
    let creationId: string;
    const resumed = prepared === undefined ? null : PREPARED_CONTAINER.exec(prepared);
    if (resumed) {
      creationId = resumed[1]!;
      await waitForPost(creationId, Number(resumed[2]));
    } else if (post.media.length === 1) {
      const m = post.media[0]!;
      // IG User › Media: an image with image_url; a video is published as a reel (media_type=REELS).
      creationId = await container(
        m.kind === 'image' ? { image_url: m.url, caption: post.caption } : { media_type: 'REELS', video_url: m.url, caption: post.caption },
        `the container of ${what}`,
      );
      await waitForPost(creationId, now());
    } else {
      // Carousel: one container per item with is_carousel_item=true, each FINISHED, then the
      // CAROUSEL container naming them as children.
      const children: string[] = [];
      for (const [i, m] of post.media.entries()) {
        const label = `item ${i + 1} of ${what}`;
        const id = await container(
          m.kind === 'image'
            ? { image_url: m.url, is_carousel_item: 'true' }
            : { media_type: 'VIDEO', video_url: m.url, is_carousel_item: 'true' },
          `the container of ${label}`,
        );
        await waitForContainer(s, id, label);
        children.push(id);
      }
      creationId = await container(
        { media_type: 'CAROUSEL', children: children.join(','), caption: post.caption },
        `the carousel container of ${what}`,
      );
      await waitForPost(creationId, now());
    }
    // IG User › Media Publish: POST /{ig-user-id}/media_publish creation_id → {"id": "{ig-media-id}"}.
    let answer: Json;
    try {
      answer = await t.graph(s, what, 'POST', `${igUserId}/media_publish`, { creation_id: creationId }, publishing);
    } catch (error) {
      // Error 9 / 2207042: "reached the maximum number of posts allowed" (the limit, counted at publish).
      if (error instanceof PlatformError && /^(9|4)\/2207042$/.test(error.platformCode ?? ''))
        throw new PlatformError('limit_reached', `Instagram account ${igUserId} reached its publishing limit`, {
          platformMessage: error.platformMessage ?? '',
          platformCode: error.platformCode ?? '',
        });
      throw error;
    }
    const mediaId = publishedId(answer, 'id', what, NUMERIC_ID);
    const url = await permalink(s, mediaId, 'permalink');
    return url ? { externalId: mediaId, url } : { externalId: mediaId };
  }

  /**
   * Walks a newest-first list from `since`, bounded, for the item whose text is exactly `text`.
   *
   * A post with text is matched by it (the first, newest, such item). A post without text (an
   * image or a video alone) has nothing of its own to match: the media URL we gave is not kept
   * (Meta serves its own copies from its CDN), and the documented fields of Page posts and IG
   * media (attachments, media_type, children) say only what kind of media an item holds, which
   * any other image-only post of the account shares. So every item without text in the window is
   * a candidate: none is null, exactly one is the publication, and more than one is
   * LookupAmbiguous (cannot tell), never a guess that could mark an unsent post published.
   */
  async function findIn(
    s: GraphSession,
    what: string,
    path: string,
    params: Record<string, string>,
    item: (value: unknown) => { id: string; at: number; text: string | undefined; url: string | undefined },
    text: string,
    since: Date,
  ): Promise<Publication | null> {
    // From `since` as given: the caller (the publisher) has already moved it back by the clock skew
    // it allows (RECONCILE_SKEW_MS). Meta's times are whole seconds, so is the bound.
    const from = Math.floor(since.getTime() / 1000) * 1000;
    const untexted = text === '';
    let candidate: Publication | null = null;
    const found = (it: { id: string; url: string | undefined }): Publication =>
      it.url ? { externalId: it.id, url: it.url } : { externalId: it.id };
    for await (const data of t.pages(
      s,
      what,
      path,
      { ...params, since: String(Math.floor(from / 1000)), limit: String(FIND_PAGE_SIZE) },
      FIND_MAX_PAGES,
    )) {
      let older = false;
      for (const value of data) {
        const it = item(value);
        if (it.at < from) {
          older = true;
          continue;
        }
        if (it.text !== text) continue;
        if (!untexted) return found(it);
        if (candidate)
          throw new LookupAmbiguous(
            `${what} has more than one post without text since ${new Date(from).toISOString()} (${candidate.externalId}, ${it.id}): which is this one cannot be told`,
          );
        candidate = found(it);
      }
      // Lists come newest first: once a page reaches before `since`, nothing later can match.
      if (older) return candidate;
    }
    return candidate;
  }

  const timeOf = (value: unknown, what: string): number => {
    const ms = typeof value === 'string' ? Date.parse(value.replace(/([+-]\d{2})(\d{2})$/, '$1:$2')) : NaN;
    if (!Number.isFinite(ms)) throw new PlatformError('bad_answer', `Meta's answer to ${what} has an item without a valid time`);
    return ms;
  };

  function findPagePost(pageToken: string, pageId: string, text: string, since: Date, signal?: AbortSignal): Promise<Publication | null> {
    checkId(pageId, 'The Page id');
    const s = tokenSession(pageToken, signal);
    const what = `the recent posts of Page ${pageId}`;
    // Pages API › Posts: GET /{page-id}/posts (the Page's own posts, newest first) with since.
    return findIn(
      s,
      what,
      `${pageId}/posts`,
      { fields: 'id,message,created_time,permalink_url' },
      (value) => {
        if (!isObject(value) || typeof value.id !== 'string' || !POST_ID.test(value.id))
          throw new PlatformError('bad_answer', `Meta's answer to ${what} has a post without a valid id`);
        return {
          id: value.id,
          at: timeOf(value.created_time, what),
          // A post without a message (a photo alone) has no message field: it matches an empty text.
          text: value.message === undefined ? '' : typeof value.message === 'string' ? value.message : undefined,
          url: typeof value.permalink_url === 'string' ? value.permalink_url : undefined,
        };
      },
      text,
      since,
    );
  }

  function findInstagramMedia(
    pageToken: string,
    igUserId: string,
    caption: string,
    since: Date,
    signal?: AbortSignal,
  ): Promise<Publication | null> {
    checkId(igUserId, 'The Instagram account id');
    const s = tokenSession(pageToken, signal);
    const what = `the recent media of Instagram account ${igUserId}`;
    // IG User › Media: GET /{ig-user-id}/media (newest first; since/until are supported).
    return findIn(
      s,
      what,
      `${igUserId}/media`,
      { fields: 'id,caption,timestamp,permalink' },
      (value) => {
        if (!isObject(value) || typeof value.id !== 'string' || !NUMERIC_ID.test(value.id))
          throw new PlatformError('bad_answer', `Meta's answer to ${what} has media without a valid id`);
        return {
          id: value.id,
          at: timeOf(value.timestamp, what),
          text: value.caption === undefined ? '' : typeof value.caption === 'string' ? value.caption : undefined,
          url: typeof value.permalink === 'string' ? value.permalink : undefined,
        };
      },
      caption,
      since,
    );
  }

  /** {"data": [{"name": …, "period": "lifetime", "values": [{"value": n | {…}}]} | {"total_value": {"value": n}}]} → name → value. */
  function metricValues(answer: Json, what: string): Map<string, number> {
    if (!Array.isArray(answer.data)) throw new PlatformError('bad_answer', `Meta's answer to ${what} has no data list`);
    const out = new Map<string, number>();
    for (const row of answer.data) {
      if (!isObject(row) || typeof row.name !== 'string')
        throw new PlatformError('bad_answer', `Meta's answer to ${what} has a metric without a name`);
      const first = Array.isArray(row.values) ? row.values[0] : undefined;
      const raw = isObject(first) ? first.value : isObject(row.total_value) ? row.total_value.value : undefined;
      // A breakdown (post_reactions_by_type_total: {"like": 3, "love": 1}) counts as its sum.
      const value = isObject(raw) ? Object.values(raw).reduce<number>((sum, v) => sum + (typeof v === 'number' ? v : NaN), 0) : raw;
      if (raw === undefined) continue;
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
        throw new PlatformError('bad_answer', `Meta's answer to ${what} has a metric ${row.name.slice(0, 64)} that is not a count`);
      out.set(row.name, value);
    }
    return out;
  }

  const count = (value: unknown): number | null => (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null);

  async function pagePostInsights(pageToken: string, postId: string, signal?: AbortSignal): Promise<MetaInsights> {
    if (typeof postId !== 'string' || !POST_ID.test(postId))
      throw new PlatformError('invalid_request', 'A Page post id is {page-id}_{post-id}');
    const s = tokenSession(pageToken, signal);
    const what = `the insights of Page post ${postId}`;
    // Page Post Insights (Graph API › Insights): post_impressions* were deprecated on 2025-11-15 in
    // favour of the "views" metrics (developers.facebook.com/blog/post/2025/08/15/page-insights-api-updates),
    // post_impressions_unique on 2025-06-15 for post_total_media_view_unique (Pages API › Deprecated
    // Page Insights Metrics), post_engaged_users on 2024-03-14.
    const metrics = metricValues(
      await t.graph(s, what, 'GET', `${postId}/insights`, {
        metric: 'post_media_view,post_total_media_view_unique,post_clicks,post_reactions_by_type_total',
      }),
      what,
    );
    // Comments and shares are fields of the post, not Insights metrics.
    const fields = await t.graph(s, `the comments and shares of Page post ${postId}`, 'GET', postId, {
      fields: 'shares,comments.limit(0).summary(true)',
    });
    const shares = isObject(fields.shares) ? count(fields.shares.count) : fields.shares === undefined ? 0 : null;
    const comments = isObject(fields.comments) && isObject(fields.comments.summary) ? count(fields.comments.summary.total_count) : null;
    const likes = metrics.get('post_reactions_by_type_total') ?? null;
    return {
      impressions: metrics.get('post_media_view') ?? null,
      reach: metrics.get('post_total_media_view_unique') ?? null,
      likes,
      comments,
      shares,
      saves: null,
      clicks: metrics.get('post_clicks') ?? null,
      engagements: likes === null && comments === null && shares === null ? null : (likes ?? 0) + (comments ?? 0) + (shares ?? 0),
    };
  }

  async function instagramMediaInsights(pageToken: string, mediaId: string, signal?: AbortSignal): Promise<MetaInsights> {
    checkId(mediaId, 'The Instagram media id');
    const s = tokenSession(pageToken, signal);
    const what = `the insights of Instagram media ${mediaId}`;
    // Instagram Media Insights: impressions was deprecated for all versions on 2025-04-21 (views
    // replaces it); reach, likes, comments, shares, saved and total_interactions are current.
    // Unavailable data comes back as an empty list, not 0.
    const metrics = metricValues(
      await t.graph(s, what, 'GET', `${mediaId}/insights`, { metric: 'views,reach,likes,comments,shares,saved,total_interactions' }),
      what,
    );
    return {
      impressions: metrics.get('views') ?? null,
      reach: metrics.get('reach') ?? null,
      likes: metrics.get('likes') ?? null,
      comments: metrics.get('comments') ?? null,
      shares: metrics.get('shares') ?? null,
      saves: metrics.get('saved') ?? null,
      clicks: null,
      engagements: metrics.get('total_interactions') ?? null,
    };
  }

  async function listPages(userToken: string, signal?: AbortSignal): Promise<MetaPage[]> {
    const s = tokenSession(userToken, signal);
    const what = "the user's Facebook Pages";
    const pages: MetaPage[] = [];
    // Pages API › Get Started: GET /me/accounts gives each Page the user can act on with its Page
    // access token; instagram_business_account names the Instagram professional account linked to it.
    for await (const data of t.pages(s, what, 'me/accounts', {
      fields: 'id,name,access_token,instagram_business_account{id,username}',
      limit: String(PAGES_PAGE_SIZE),
    })) {
      for (const value of data) {
        const bad = (field: string) => new PlatformError('bad_answer', `Meta's answer to ${what} has a Page with no valid ${field}`);
        if (!isObject(value)) throw bad('object');
        const { id, name, access_token: token, instagram_business_account: ig } = value;
        if (typeof id !== 'string' || !NUMERIC_ID.test(id)) throw bad('id');
        if (typeof name !== 'string' || name.length > 500) throw bad('name');
        if (typeof token !== 'string' || !TOKEN.test(token)) throw bad('access_token');
        let instagram: MetaPage['instagram'] = null;
        if (ig !== undefined && ig !== null) {
          if (!isObject(ig) || typeof ig.id !== 'string' || !NUMERIC_ID.test(ig.id)) throw bad('instagram_business_account');
          instagram = { id: ig.id, username: typeof ig.username === 'string' ? ig.username.slice(0, 100) : ig.id };
        }
        s.secrets.push(token);
        pages.push({ id, name, accessToken: token, instagram });
      }
    }
    return pages;
  }

  return {
    listPages,
    publishPage,
    publishInstagram,
    findPagePost,
    findInstagramMedia,
    pagePostInsights,
    instagramMediaInsights,
  };
}
