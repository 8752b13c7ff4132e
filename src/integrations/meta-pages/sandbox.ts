// A sandbox of Meta's organic publishing on loopback, served by the same server as the Meta ads
// sandbox (../meta/sandbox.ts, as a plugin): one Meta for the demo and the tests, one OAuth dialog,
// one set of user tokens. It answers in Meta's documented wire format: /me/accounts with Page tokens
// and paging, Page feed / photos (published and unpublished) / videos, the Page's posts, Instagram
// containers with their status_code (IN_PROGRESS, FINISHED, ERROR, EXPIRED), media_publish, the
// publishing limit, the media list, post and media insights, throttling with usage headers and Graph
// error bodies. Scenario control (in JS, and POST /__sandbox/scenario): expire a token, reject the
// next post, hang a call (with or without publishing), throttle, set the next container's outcome,
// use up the quota, hostile answers. It counts publications per Page / Instagram account, which is
// what the exactly-once tests count.
import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import { META_GRAPH_API_VERSION } from '../../policy.ts';
import { GraphFailure, startMetaSandbox, type MetaSandbox, type MetaSandboxPlugin } from '../meta/sandbox.ts';
import { hashText, mix } from '../sandbox-kit.ts';

export interface SandboxPage {
  id: string;
  name: string;
  /** The Instagram professional account linked to the Page, if any. */
  instagram: { id: string; username: string } | null;
}

/** One publication as the network shows it. */
export interface SandboxPublication {
  id: string;
  /** The Page id or Instagram account id it went to. */
  channelId: string;
  text: string;
  media: string[];
  /** The URLs Meta was given to fetch the media from (photo `url`, video `file_url`, `image_url` / `video_url`), in order. */
  mediaUrls: string[];
  createdAt: Date;
  permalink: string;
}

export type ContainerOutcome = 'FINISHED' | 'ERROR' | 'EXPIRED' | 'IN_PROGRESS';
const MALFORMED = ['html', 'wrong_types', 'truncated', 'dropped', 'bad_error', 'redirect', 'huge', 'slow'] as const;
export type PagesMalformed = (typeof MALFORMED)[number];

export interface MetaPagesSandbox {
  pages(): SandboxPage[];
  addPage(page: SandboxPage): void;
  /** The Page token /me/accounts hands out for this Page (it also works for the linked Instagram account). */
  pageToken(pageId: string): string;
  /** Publications made on a Page or Instagram account (published posts only), oldest first. */
  publications(channelId: string): SandboxPublication[];
  /** Publications per Page / Instagram account. */
  counts(): Record<string, number>;
  scenario: {
    /** The token (a Page token or a user token) answers 190/463 from now on. */
    expireToken(token: string): void;
    /** The next publishing call on the channel is refused with this message (code 100, error_user_msg). */
    rejectNext(channelId: string, message?: string): void;
    /** The next publishing call on the channel never answers; with `publish` the post is made first. */
    hang(channelId: string, o?: { publish?: boolean }): void;
    /** Calls on the channel answer code 32 (Page) or 4 (app) with usage headers for `ms` from now. */
    throttle(channelId: string, ms: number): void;
    /** The next containers of the Instagram account end so (IN_PROGRESS: never finish). */
    containers(igUserId: string, outcomes: ContainerOutcome[]): void;
    /** The next container of the Instagram account answers IN_PROGRESS to its first `polls` polls (a reel that takes long). */
    slowContainer(igUserId: string, polls: number): void;
    /** The account's publishing quota: used so far (in the rolling 24 h) and total. */
    quota(igUserId: string, usage: number, total?: number): void;
    /** The next `times` calls on the channel answer this Graph error. */
    fail(channelId: string, body: { code: number; message: string; error_subcode?: number; error_user_msg?: string }, times?: number): void;
    /**
     * The next call on the channel gets a hostile answer; with `publishing`, the next publishing
     * call (a Page post, media_publish), made first, as Meta would before its answer broke.
     */
    malformed(channelId: string, kind: PagesMalformed, o?: { publishing?: boolean }): void;
    reset(): void;
  };
}

interface PageState extends SandboxPage {
  token: string;
  posts: SandboxPublication[];
  photos: Map<string, { url: string; published: boolean }>;
}

interface IgState {
  id: string;
  pageId: string;
  media: SandboxPublication[];
  containers: Map<string, Container>;
  quotaUsage: number;
  quotaTotal: number;
}

interface Container {
  id: string;
  outcome: ContainerOutcome;
  polls: number;
  /** Polls answered IN_PROGRESS before the outcome (videos: 2). */
  processing: number;
  caption: string;
  media: string[];
  children: string[];
  carouselItem: boolean;
  published: boolean;
}

const PAGE_TOKEN_PREFIX = 'EAAsandboxPage';
const DEFAULT_PAGE_SIZE = 25;
const fail = (code: number, message: string, extra: Record<string, unknown> = {}, status = 400) =>
  new GraphFailure(status, { code, message, type: code === 190 ? 'OAuthException' : 'GraphMethodException', ...extra });
const iso = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, '+0000');

export function createMetaPagesSandbox(o: { now?: () => Date; pageSize?: number; pages?: SandboxPage[] } = {}): MetaPagesSandbox & {
  plugin: MetaSandboxPlugin;
} {
  const now = () => (o.now ? o.now() : new Date());
  const pageSize = Math.min(o.pageSize ?? 100, 100);
  const pages = new Map<string, PageState>();
  const igs = new Map<string, IgState>();
  const expired = new Set<string>();
  const rejections = new Map<string, string[]>();
  const hangs = new Map<string, { publish: boolean }[]>();
  const throttles = new Map<string, number>();
  const outcomes = new Map<string, ContainerOutcome[]>();
  const slow = new Map<string, number[]>();
  const failures = new Map<string, { body: { code: number; message: string }; times: number }[]>();
  const malformed = new Map<string, PagesMalformed[]>();
  const malformedPublishing = new Map<string, PagesMalformed[]>();
  const containerOwner = new Map<string, string>();
  // Lookups by token and by publication id, so a call costs the same on 1 Page or 1,000 (the bench).
  const pageByToken = new Map<string, PageState>();
  const postById = new Map<string, { post: SandboxPublication; page: PageState }>();
  const mediaById = new Map<string, { media: SandboxPublication; ig: IgState }>();
  let counter = 0;
  const nextId = () => String(7_000_000_000 + ++counter);

  function addPage(p: SandboxPage): void {
    if (!/^\d{1,32}$/.test(p.id) || (p.instagram && !/^\d{1,32}$/.test(p.instagram.id)))
      throw new Error('sandbox Page and IG ids are digits');
    const state: PageState = { ...p, token: `${PAGE_TOKEN_PREFIX}${randomBytes(18).toString('base64url')}`, posts: [], photos: new Map() };
    const replaced = pages.get(p.id);
    if (replaced) pageByToken.delete(replaced.token);
    pages.set(p.id, state);
    pageByToken.set(state.token, state);
    if (p.instagram)
      igs.set(p.instagram.id, { id: p.instagram.id, pageId: p.id, media: [], containers: new Map(), quotaUsage: 0, quotaTotal: 50 });
  }
  for (const p of o.pages ?? [
    { id: '1000000001', name: 'Harbour Café (sandbox)', instagram: { id: '17841400000000001', username: 'harbourcafe' } },
    { id: '1000000002', name: 'Hillside Bakery (sandbox)', instagram: null },
  ])
    addPage(p);

  const pageOfToken = (token: string) => pageByToken.get(token);

  /** The Page token must be this channel's (a Page's, or the Page's linked to the IG account). */
  function checkPageToken(token: string, channelId: string): void {
    const page = pageOfToken(token);
    if (!page) throw fail(190, 'Invalid OAuth access token - Cannot parse access token');
    if (expired.has(token))
      throw fail(190, 'Error validating access token: Session has expired.', {
        error_subcode: 463,
        error_user_title: 'Session expired',
        error_user_msg: 'Your Facebook session has expired. Connect the Page again.',
      });
    const pageId = igs.get(channelId)?.pageId ?? channelId;
    if (page.id !== pageId) throw fail(200, '(#200) The Page token does not have access to this object', {}, 403);
  }

  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    const bytes = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', 'content-length': bytes.length, ...headers });
    res.end(bytes);
  };

  /** The usage headers of an unthrottled answer, by channel: the same every time. */
  const calm = new Map<string, Record<string, string>>();
  const usage = (channelId: string, regainMinutes = 0): Record<string, string> => {
    if (regainMinutes) return usageHeaders(channelId, regainMinutes);
    let headers = calm.get(channelId);
    if (!headers) calm.set(channelId, (headers = usageHeaders(channelId, 0)));
    return headers;
  };
  const usageHeaders = (channelId: string, regainMinutes: number): Record<string, string> => ({
    'x-app-usage': JSON.stringify({ call_count: regainMinutes ? 100 : 5, total_cputime: 3, total_time: 4 }),
    'x-business-use-case-usage': JSON.stringify({
      [igs.get(channelId)?.pageId ?? channelId]: [
        {
          type: 'pages',
          call_count: regainMinutes ? 100 : 5,
          total_cputime: 3,
          total_time: 4,
          estimated_time_to_regain_access: regainMinutes,
        },
      ],
    }),
  });

  function sendFailure(res: http.ServerResponse, f: GraphFailure, headers: Record<string, string> = {}): void {
    send(res, f.status, { error: { type: 'OAuthException', fbtrace_id: randomBytes(8).toString('base64url'), ...f.body } }, headers);
  }

  function sendMalformed(res: http.ServerResponse, kind: PagesMalformed): void {
    switch (kind) {
      case 'html':
        return void send(res, 200, '<!DOCTYPE html><html><body>Sorry, something went wrong.</body></html>', {
          'content-type': 'text/html; charset=utf-8',
        });
      case 'wrong_types':
        return void send(res, 200, { id: 12345, post_id: 67, data: [{ id: 1, status_code: 7, quota_usage: '3' }] });
      case 'truncated':
        return void send(res, 200, '{"id":"1000000001_7');
      case 'dropped': {
        // A 200 whose connection drops mid-body: the headers promise more than ever comes.
        const half = Buffer.from('{"id":"1000000001_7');
        res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8', 'content-length': half.length * 2 });
        return void res.write(half, () => res.destroy());
      }
      case 'bad_error':
        // JSON with an `error` that is not a Graph error (no code, no message), in a 200.
        return void send(res, 200, { error: 'Something went wrong' });
      case 'redirect':
        res.writeHead(302, { location: 'https://www.facebook.com/login.php', 'content-length': 0 });
        return void res.end();
      case 'huge': {
        res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
        const chunk = Buffer.from(`"${'x'.repeat(65_000)}",`);
        let sent = 0;
        const pump = () => {
          while (!res.destroyed && sent < 64 * 1024 * 1024) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end(']}');
        };
        res.write('{"data":[');
        return pump();
      }
      case 'slow': {
        res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
        res.write('{"id":');
        const timer = setTimeout(() => res.end('"1"}'), 120_000);
        timer.unref();
        res.once('close', () => clearTimeout(timer));
        return;
      }
    }
  }

  /** Scenario answers for a call on the channel: true when one was sent. A publishing call may also hang or be rejected. */
  function scenarioAnswer(res: http.ServerResponse, channelId: string, publishing: boolean, publish: () => void): boolean {
    const until = throttles.get(channelId);
    if (until !== undefined && until > now().getTime()) {
      const minutes = Math.ceil((until - now().getTime()) / 60_000);
      sendFailure(
        res,
        fail(32, 'Page request limit reached', {
          error_subcode: 2446079,
          is_transient: true,
          error_user_msg: 'There have been too many calls to this Page. Wait a bit and try again.',
        }),
        usage(channelId, minutes),
      );
      return true;
    }
    const queue = failures.get(channelId);
    if (queue?.length) {
      const next = queue[0]!;
      if (--next.times <= 0) queue.shift();
      sendFailure(res, new GraphFailure(next.body.code === 1 || next.body.code === 2 ? 500 : 400, next.body), usage(channelId));
      return true;
    }
    const kind = malformed.get(channelId)?.shift();
    if (kind) {
      if (publishing && kind !== 'redirect' && kind !== 'html') publish();
      sendMalformed(res, kind);
      return true;
    }
    if (!publishing) return false;
    const publishingKind = malformedPublishing.get(channelId)?.shift();
    if (publishingKind) {
      if (publishingKind !== 'redirect' && publishingKind !== 'html') publish();
      sendMalformed(res, publishingKind);
      return true;
    }
    const rejection = rejections.get(channelId)?.shift();
    if (rejection !== undefined) {
      sendFailure(
        res,
        fail(100, 'Invalid parameter', { error_subcode: 1363047, error_user_title: 'Post refused', error_user_msg: rejection }),
        usage(channelId),
      );
      return true;
    }
    const hang = hangs.get(channelId)?.shift();
    if (hang) {
      if (hang.publish) publish();
      // The request was received; no answer ever comes (the client's deadline ends it).
      res.once('close', () => undefined);
      return true;
    }
    return false;
  }

  const paged = (res: http.ServerResponse, baseUrl: string, route: string, params: URLSearchParams, items: unknown[], headers = {}) => {
    // `pageSize` caps what a call may ask for (Meta answers at most 100 per page of these edges).
    const limit = Math.min(Math.max(Number.parseInt(params.get('limit') ?? '', 10) || DEFAULT_PAGE_SIZE, 1), pageSize);
    const afterText = params.get('after');
    const start = afterText === null ? 0 : Number(Buffer.from(afterText, 'base64').toString()) + 1;
    if (!Number.isSafeInteger(start) || start < 0) throw fail(100, '(#100) The after cursor is not valid');
    const page = items.slice(start, start + limit);
    const cursor = (n: number) => Buffer.from(String(n)).toString('base64');
    const body: Record<string, unknown> = { data: page };
    if (page.length > 0) {
      const paging: Record<string, unknown> = { cursors: { before: cursor(start), after: cursor(start + page.length - 1) } };
      if (start + limit < items.length) {
        const next = new URLSearchParams(params);
        next.set('after', cursor(start + page.length - 1));
        next.delete('access_token');
        paging.next = `${baseUrl}/${META_GRAPH_API_VERSION}/${route}?${next}`;
      }
      body.paging = paging;
    }
    send(res, 200, body, headers);
  };

  const since = (params: URLSearchParams) => {
    const text = params.get('since');
    const n = text === null ? 0 : Number(text);
    if (!Number.isFinite(n)) throw fail(100, '(#100) since must be a unix time');
    return n * 1000;
  };

  const figure = (key: string, name: string, spread: number) => mix(hashText(`${key}/${name}`)) % spread;
  const PAGE_METRICS = new Set(['post_media_view', 'post_total_media_view_unique', 'post_clicks', 'post_reactions_by_type_total']);
  const DEPRECATED_PAGE_METRICS = new Set(['post_impressions', 'post_impressions_unique', 'post_engaged_users']);
  const IG_METRICS = new Set(['views', 'reach', 'likes', 'comments', 'shares', 'saved', 'total_interactions']);
  /** Figures grow with the post's age (to a week), so a later read of the schedule sees more. */
  const grown = (createdAt: Date, base: number) =>
    Math.floor((base * Math.min(1, 0.2 + (now().getTime() - createdAt.getTime()) / (7 * 86_400_000))) | 0);

  function insightsRow(name: string, value: unknown, id: string) {
    return { name, period: 'lifetime', values: [{ value }], title: name, description: name, id: `${id}/insights/${name}/lifetime` };
  }

  const findPost = (id: string) => postById.get(id);
  const findMedia = (id: string) => mediaById.get(id);

  const plugin: MetaSandboxPlugin = {
    async handle({ method, route, params, token, res, baseUrl, checkUserToken }) {
      if (route === 'me/accounts' && method === 'GET') {
        checkUserToken(token);
        const fields = (params.get('fields') ?? 'id,name').split(/,(?![^{]*\})/);
        const items = [...pages.values()].map((p) => {
          const out: Record<string, unknown> = {};
          for (const f of fields) {
            if (f === 'id') out.id = p.id;
            else if (f === 'name') out.name = p.name;
            else if (f === 'access_token') out.access_token = p.token;
            else if (f.startsWith('instagram_business_account')) {
              if (p.instagram) out.instagram_business_account = { id: p.instagram.id, username: p.instagram.username };
            } else if (f === 'category') out.category = 'Restaurant';
            else throw fail(100, `(#100) Tried accessing nonexisting field (${f.slice(0, 64)}) on node type (Page)`);
          }
          return out;
        });
        paged(res, baseUrl, route, params, items);
        return true;
      }
      const m = /^(\d{1,32}(?:_\d{1,32})?)(?:\/([a-z_]+))?$/.exec(route);
      if (!m) return false;
      const [, node, edge] = m as unknown as [string, string, string | undefined];
      const page = pages.get(node);
      const ig = igs.get(node);
      const post = node.includes('_') ? findPost(node) : undefined;
      const media = !page && !ig && !post ? findMedia(node) : undefined;
      const containerIg = !page && !ig && !post && !media ? containerOwner.get(node) : undefined;
      const channelId = page?.id ?? ig?.id ?? post?.page.id ?? media?.ig.id ?? containerIg;
      if (channelId === undefined) return false;
      checkPageToken(token, channelId);
      const publishingCall =
        method === 'POST' &&
        ((page && (edge === 'feed' || edge === 'videos' || (edge === 'photos' && params.get('published') !== 'false'))) ||
          (ig && edge === 'media_publish'));
      let made: SandboxPublication | undefined;
      const publish = () => {
        made ??= publishNow();
      };
      const publishNow = (): SandboxPublication | undefined => {
        if (page) return publishOnPage(page, edge!, params);
        if (ig) return publishOnIg(ig, params);
        return undefined;
      };
      if (scenarioAnswer(res, channelId, Boolean(publishingCall), publish)) return true;

      // --- Pages
      if (page && method === 'POST' && (edge === 'feed' || edge === 'photos' || edge === 'videos')) {
        if (edge === 'photos' && params.get('published') === 'false') {
          const url = params.get('url');
          if (!url) throw fail(100, '(#100) url or source is required');
          const id = nextId();
          page.photos.set(id, { url, published: false });
          send(res, 200, { id }, usage(channelId));
          return true;
        }
        made = publishNow();
        if (!made) throw fail(100, '(#100) Invalid parameter');
        const answer =
          edge === 'photos'
            ? { id: made.media[0] ?? nextId(), post_id: made.id }
            : edge === 'videos'
              ? { id: made.id.split('_')[1] }
              : { id: made.id };
        send(res, 200, answer, usage(channelId));
        return true;
      }
      if (page && method === 'GET' && (edge === 'posts' || edge === 'published_posts' || edge === 'feed')) {
        const from = since(params);
        const items = [...page.posts]
          .reverse()
          .filter((p) => p.createdAt.getTime() >= from)
          .map((p) => ({ id: p.id, ...(p.text ? { message: p.text } : {}), created_time: iso(p.createdAt), permalink_url: p.permalink }));
        paged(res, baseUrl, route, params, items, usage(channelId));
        return true;
      }
      if (post && method === 'GET' && edge === undefined) {
        const fields = params.get('fields') ?? 'id';
        const out: Record<string, unknown> = { id: post.post.id };
        if (fields.includes('permalink_url')) out.permalink_url = post.post.permalink;
        if (fields.includes('message') && post.post.text) out.message = post.post.text;
        if (fields.includes('created_time')) out.created_time = iso(post.post.createdAt);
        if (fields.includes('shares')) {
          const n = grown(post.post.createdAt, figure(post.post.id, 'shares', 20));
          if (n > 0) out.shares = { count: n };
        }
        if (fields.includes('comments'))
          out.comments = {
            data: [],
            summary: { order: 'ranked', total_count: grown(post.post.createdAt, figure(post.post.id, 'comments', 40)), can_comment: true },
          };
        send(res, 200, out, usage(channelId));
        return true;
      }
      if (post && method === 'GET' && edge === 'insights') {
        const metrics = (params.get('metric') ?? '').split(',').filter(Boolean);
        if (metrics.length === 0)
          throw fail(3001, 'No metric was specified to be fetched. Please specify one or more metrics to be fetched and try again.', {
            error_subcode: 1504028,
          });
        const bad = metrics.find((name) => DEPRECATED_PAGE_METRICS.has(name) || !PAGE_METRICS.has(name));
        if (bad) throw fail(100, '(#100) The value must be a valid insights metric', { error_subcode: 33 });
        const at = post.post.createdAt;
        const views = grown(at, 200 + figure(post.post.id, 'views', 5000));
        const data = metrics.map((name) =>
          insightsRow(
            name,
            name === 'post_media_view'
              ? views
              : name === 'post_total_media_view_unique'
                ? Math.floor(views * 0.7)
                : name === 'post_clicks'
                  ? Math.floor(views * 0.03)
                  : { like: Math.floor(views * 0.05), love: Math.floor(views * 0.01) },
            post.post.id,
          ),
        );
        send(res, 200, { data, paging: {} }, usage(channelId));
        return true;
      }

      // --- Instagram
      if (ig && method === 'POST' && edge === 'media') {
        const id = nextId();
        const mediaType = params.get('media_type');
        const carouselItem = params.get('is_carousel_item') === 'true';
        let urls: string[] = [];
        let children: string[] = [];
        if (mediaType === 'CAROUSEL') {
          children = (params.get('children') ?? '').split(',').filter(Boolean);
          if (children.length < 2 || children.length > 10) throw fail(100, '(#100) A carousel has 2 to 10 children');
          for (const c of children) {
            const child = ig.containers.get(c);
            if (!child?.carouselItem || child.outcome !== 'FINISHED' || child.polls < child.processing)
              throw fail(100, '(#100) The children must be finished carousel item containers', { error_subcode: 2207028 });
            urls.push(...child.media);
          }
        } else if (mediaType === 'REELS' || mediaType === 'VIDEO') {
          const url = params.get('video_url');
          if (!url) throw fail(100, '(#100) The parameter video_url is required');
          urls = [url];
        } else if (mediaType === null || mediaType === 'IMAGE') {
          const url = params.get('image_url');
          if (!url) throw fail(100, '(#100) The parameter image_url is required');
          urls = [url];
        } else throw fail(100, `(#100) media_type ${mediaType.slice(0, 20)} is not supported`);
        const caption = params.get('caption') ?? '';
        if (caption.length > 2200) throw fail(100, '(#100) The caption is too long', { error_subcode: 2207010 });
        const video = mediaType === 'REELS' || mediaType === 'VIDEO';
        const outcome = outcomes.get(ig.id)?.shift() ?? 'FINISHED';
        ig.containers.set(id, {
          id,
          outcome,
          polls: 0,
          processing: slow.get(ig.id)?.shift() ?? (video ? 2 : 0),
          caption,
          media: urls,
          children,
          carouselItem,
          published: false,
        });
        containerOwner.set(id, ig.id);
        send(res, 200, { id }, usage(channelId));
        return true;
      }
      if (containerIg && method === 'GET' && edge === undefined) {
        const c = igs.get(containerIg)!.containers.get(node)!;
        c.polls++;
        const code = c.published ? 'PUBLISHED' : c.outcome === 'IN_PROGRESS' || c.polls <= c.processing ? 'IN_PROGRESS' : c.outcome;
        const status =
          code === 'ERROR'
            ? 'Error: Media upload has failed with error code 2207026 (the video format is not supported)'
            : code === 'EXPIRED'
              ? 'Expired: the container was not published within 24 hours'
              : code === 'IN_PROGRESS'
                ? 'In Progress'
                : code === 'FINISHED'
                  ? 'Finished'
                  : 'Published';
        send(res, 200, { status_code: code, status, id: c.id }, usage(channelId));
        return true;
      }
      if (ig && method === 'GET' && edge === 'content_publishing_limit') {
        const recent = ig.media.filter((x) => x.createdAt.getTime() > now().getTime() - 86_400_000).length;
        send(
          res,
          200,
          { data: [{ quota_usage: ig.quotaUsage + recent, config: { quota_total: ig.quotaTotal, quota_duration: 86400 } }] },
          usage(channelId),
        );
        return true;
      }
      if (ig && method === 'POST' && edge === 'media_publish') {
        made = publishNow();
        if (!made) return true; // publishOnIg answered the error
        send(res, 200, { id: made.id }, usage(channelId));
        return true;
      }
      if (ig && method === 'GET' && edge === 'media') {
        const from = since(params);
        const items = [...ig.media]
          .reverse()
          .filter((x) => x.createdAt.getTime() >= from)
          .map((x) => ({ id: x.id, ...(x.text ? { caption: x.text } : {}), timestamp: iso(x.createdAt), permalink: x.permalink }));
        paged(res, baseUrl, route, params, items, usage(channelId));
        return true;
      }
      if (media && method === 'GET' && edge === undefined) {
        send(res, 200, { id: media.media.id, permalink: media.media.permalink, caption: media.media.text }, usage(channelId));
        return true;
      }
      if (media && method === 'GET' && edge === 'insights') {
        const metrics = (params.get('metric') ?? '').split(',').filter(Boolean);
        const bad = metrics.find((name) => !IG_METRICS.has(name));
        if (bad)
          throw fail(100, `(#100) metric[0] must be one of the following values: ${[...IG_METRICS].join(', ')}`, {
            error_subcode: 2108006,
          });
        const at = media.media.createdAt;
        const views = grown(at, 300 + figure(media.media.id, 'views', 4000));
        const value = (name: string) =>
          name === 'views'
            ? views
            : name === 'reach'
              ? Math.floor(views * 0.6)
              : name === 'likes'
                ? Math.floor(views * 0.08)
                : name === 'comments'
                  ? Math.floor(views * 0.01)
                  : name === 'shares'
                    ? Math.floor(views * 0.005)
                    : name === 'saved'
                      ? Math.floor(views * 0.004)
                      : Math.floor(views * 0.08) + Math.floor(views * 0.01) + Math.floor(views * 0.005) + Math.floor(views * 0.004);
        send(res, 200, { data: metrics.map((name) => insightsRow(name, value(name), media.media.id)) }, usage(channelId));
        return true;
      }
      throw fail(100, `(#100) Unsupported ${method.slice(0, 8)} request.`, { error_subcode: 33 });

      function publishOnPage(p: PageState, e: string, q: URLSearchParams): SandboxPublication | undefined {
        const text = q.get('message') ?? q.get('description') ?? '';
        const photos: string[] = [];
        const mediaUrls: string[] = [];
        if (e === 'photos') {
          const url = q.get('url');
          if (!url) throw fail(100, '(#100) url or source is required');
          const photoId = nextId();
          p.photos.set(photoId, { url, published: true });
          photos.push(photoId);
          mediaUrls.push(url);
        } else if (e === 'videos') {
          const url = q.get('file_url');
          if (!url) throw fail(100, '(#100) file_url or source is required');
          mediaUrls.push(url);
        } else {
          for (let i = 0; q.has(`attached_media[${i}]`); i++) {
            let fbid: unknown;
            try {
              fbid = (JSON.parse(q.get(`attached_media[${i}]`)!) as { media_fbid?: unknown }).media_fbid;
            } catch {
              fbid = undefined;
            }
            if (typeof fbid !== 'string' || !p.photos.has(fbid))
              throw fail(100, '(#100) attached_media must name unpublished photos of this Page');
            photos.push(fbid);
            mediaUrls.push(p.photos.get(fbid)!.url);
          }
          if (!text && photos.length === 0) throw fail(100, '(#100) Either message or attached_media is required');
        }
        const postNumber = nextId();
        const made: SandboxPublication = {
          id: `${p.id}_${postNumber}`,
          channelId: p.id,
          text,
          media: photos,
          mediaUrls,
          createdAt: now(),
          permalink: `https://www.facebook.com/${p.id}/posts/${postNumber}`,
        };
        p.posts.push(made);
        postById.set(made.id, { post: made, page: p });
        return made;
      }

      function publishOnIg(account: IgState, q: URLSearchParams): SandboxPublication | undefined {
        const c = account.containers.get(q.get('creation_id') ?? '');
        if (!c || c.carouselItem) throw fail(100, '(#100) The creation_id is not a container of this account', { error_subcode: 2207027 });
        const recent = account.media.filter((x) => x.createdAt.getTime() > now().getTime() - 86_400_000).length;
        if (account.quotaUsage + recent >= account.quotaTotal)
          throw fail(9, 'Application request limit reached', {
            error_subcode: 2207042,
            error_user_title: 'Publishing limit reached',
            error_user_msg: 'You reached the maximum number of posts that is allowed to be published by Content Publish API.',
          });
        if (c.published) throw fail(9007, 'The media has already been published', { error_subcode: 2207027 });
        if (c.outcome !== 'FINISHED' || c.polls <= c.processing)
          throw fail(9007, 'Media ID is not available', {
            error_subcode: 2207027,
            error_user_msg: 'The media is not ready for publishing, please wait for a moment',
          });
        c.published = true;
        const id = String(18_000_000_000_000_000n + BigInt(++counter));
        const made: SandboxPublication = {
          id,
          channelId: account.id,
          text: c.caption,
          media: c.media,
          mediaUrls: [...c.media],
          createdAt: now(),
          permalink: `https://www.instagram.com/p/sandbox${id.slice(-8)}/`,
        };
        account.media.push(made);
        mediaById.set(made.id, { media: made, ig: account });
        return made;
      }
    },

    scenario(command) {
      const text = (key: string) => (typeof command[key] === 'string' ? (command[key] as string) : '');
      switch (command.action) {
        case 'pages.expireToken':
          scenario.expireToken(text('token'));
          return { ok: true };
        case 'pages.rejectNext':
          scenario.rejectNext(text('channelId'), text('message') || undefined);
          return { ok: true };
        case 'pages.hang':
          scenario.hang(text('channelId'), { publish: command.publish === true });
          return { ok: true };
        case 'pages.throttle':
          scenario.throttle(text('channelId'), Number(command.ms));
          return { ok: true };
        case 'pages.containers':
          scenario.containers(text('channelId'), (Array.isArray(command.outcomes) ? command.outcomes : []) as ContainerOutcome[]);
          return { ok: true };
        case 'pages.slow_container':
          scenario.slowContainer(text('channelId'), Number(command.polls));
          return { ok: true };
        case 'pages.quota':
          scenario.quota(text('channelId'), Number(command.usage), typeof command.total === 'number' ? command.total : undefined);
          return { ok: true };
        case 'pages.fail':
          scenario.fail(
            text('channelId'),
            command.body as { code: number; message: string },
            typeof command.times === 'number' ? command.times : 1,
          );
          return { ok: true };
        case 'pages.malformed':
          scenario.malformed(text('channelId'), text('kind') as PagesMalformed, { publishing: command.publishing === true });
          return { ok: true };
        case 'pages.counts':
          return sandbox.counts();
        case 'pages.pageToken':
          return { token: sandbox.pageToken(text('pageId')) };
        default:
          return undefined;
      }
    },

    reset() {
      scenario.reset();
    },
  };

  const known = (channelId: string) => {
    if (!pages.has(channelId) && !igs.has(channelId)) throw new Error(`no sandbox Page or Instagram account ${channelId}`);
  };
  const scenario: MetaPagesSandbox['scenario'] = {
    expireToken: (token) => void expired.add(token),
    rejectNext: (channelId, message = 'This post goes against our Community Standards.') => {
      known(channelId);
      rejections.set(channelId, [...(rejections.get(channelId) ?? []), message]);
    },
    hang: (channelId, h = {}) => {
      known(channelId);
      hangs.set(channelId, [...(hangs.get(channelId) ?? []), { publish: h.publish ?? true }]);
    },
    throttle: (channelId, ms) => {
      known(channelId);
      if (!(ms >= 0)) throw new Error('throttle takes ms ≥ 0');
      throttles.set(channelId, now().getTime() + ms);
    },
    containers: (igUserId, list) => {
      if (!igs.has(igUserId)) throw new Error(`no sandbox Instagram account ${igUserId}`);
      for (const x of list)
        if (!['FINISHED', 'ERROR', 'EXPIRED', 'IN_PROGRESS'].includes(x)) throw new Error(`unknown container outcome ${x}`);
      outcomes.set(igUserId, [...(outcomes.get(igUserId) ?? []), ...list]);
    },
    slowContainer: (igUserId, polls) => {
      if (!igs.has(igUserId) || !Number.isSafeInteger(polls) || polls < 0)
        throw new Error('slowContainer takes a sandbox Instagram account and a number of polls ≥ 0');
      slow.set(igUserId, [...(slow.get(igUserId) ?? []), polls]);
    },
    quota: (igUserId, used, total) => {
      const ig = igs.get(igUserId);
      if (!ig || !(used >= 0)) throw new Error('quota takes a sandbox Instagram account and a usage ≥ 0');
      ig.quotaUsage = used;
      if (total !== undefined) ig.quotaTotal = total;
    },
    fail: (channelId, body, times = 1) => {
      known(channelId);
      if (!Number.isSafeInteger(body?.code)) throw new Error('a failure needs a numeric code');
      failures.set(channelId, [...(failures.get(channelId) ?? []), { body, times }]);
    },
    malformed: (channelId, kind, o = {}) => {
      known(channelId);
      if (!MALFORMED.includes(kind)) throw new Error(`malformed answers are ${MALFORMED.join(', ')}`);
      const queue = o.publishing ? malformedPublishing : malformed;
      queue.set(channelId, [...(queue.get(channelId) ?? []), kind]);
    },
    reset: () => {
      for (const map of [expired, rejections, hangs, throttles, outcomes, slow, failures, malformed, malformedPublishing]) map.clear();
      for (const ig of igs.values()) {
        ig.quotaUsage = 0;
        ig.quotaTotal = 50;
      }
    },
  };

  const sandbox: MetaPagesSandbox & { plugin: MetaSandboxPlugin } = {
    plugin,
    pages: () => [...pages.values()].map(({ id, name, instagram }) => ({ id, name, instagram: instagram && { ...instagram } })),
    addPage,
    pageToken: (pageId) => {
      const page = pages.get(pageId) ?? pages.get(igs.get(pageId)?.pageId ?? '');
      if (!page) throw new Error(`no sandbox Page ${pageId}`);
      return page.token;
    },
    publications: (channelId) =>
      [...(pages.get(channelId)?.posts ?? igs.get(channelId)?.media ?? [])].map((p) => ({
        ...p,
        media: [...p.media],
        mediaUrls: [...p.mediaUrls],
      })),
    counts: () => {
      const out: Record<string, number> = {};
      for (const p of pages.values()) out[p.id] = p.posts.length;
      for (const ig of igs.values()) out[ig.id] = ig.media.length;
      return out;
    },
    scenario,
  };
  return sandbox;
}

/** The Meta sandbox (ads and organic publishing on one server) with its Pages side. */
export async function startMetaPagesSandbox(
  o: Parameters<typeof startMetaSandbox>[0] & { pages?: SandboxPage[] } = {},
): Promise<MetaSandbox & { organic: MetaPagesSandbox }> {
  const organic = createMetaPagesSandbox({
    ...(o.now ? { now: o.now } : {}),
    ...(o.pages ? { pages: o.pages } : {}),
    ...(o.pageSize ? { pageSize: o.pageSize } : {}),
  });
  const meta = await startMetaSandbox({ ...o, plugins: [...(o.plugins ?? []), organic.plugin] });
  return Object.assign(meta, { organic });
}
