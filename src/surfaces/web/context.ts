// What every part of the web admin is given: its dependencies, its paths, and the ways it answers
// with a page (each response with a fresh nonce and the headers made for it).
import type { GoogleBusinessSetup } from '../../domain/channels/google-business.service.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import type { AdSyncDeps } from '../../domain/ad-sync/ad-account.service.ts';
import type { ListedPage } from '../../domain/organic/meta-connect.service.ts';
import type { RevocationFeed } from '../../db/revocation-feed.ts';
import { PERIODS } from '../../domain/periods.ts';
import { spendByWorkspace } from '../../domain/spend/spend.service.ts';
import type { Membership, SessionUser } from '../../domain/web-sessions/web-session.service.ts';
import type { GoogleOAuth } from '../../integrations/google-ads/client.ts';
import type { MetaOAuth } from '../../integrations/meta/client.ts';
import type { Clock } from '../../platform/clock.ts';
import type { RateLimiter } from '../../platform/rate-limit.ts';
import { sendPage } from '../shared/html.ts';
import type { ReportCaches } from '../shared/report-caches.ts';
import { embedRefusalView } from './views/embed.ts';
import { appHeaders, embedDocument, embedHeaders, messagePage, type Shell } from './views/layout.ts';
import type { SpendReport } from './views/reports.ts';

export interface WebDeps {
  config: Config;
  db: Db;
  clock: Clock;
  limiter: RateLimiter;
  caches: ReportCaches;
  /** Told when Connected apps revokes a grant, so this instance's token verdicts go at once. */
  revocations?: Pick<RevocationFeed, 'revoked'>;
  /** The spend sync's services (Manage Hub → Ad accounts); without them that page says it is not available. */
  adSync?: AdSyncDeps;
  /** Meta's OAuth steps (the Meta client); Connect Meta by OAuth shows only with it and META_APP_ID/SECRET. */
  metaOAuth?: MetaOAuth;
  /** Google's OAuth steps (the Google Ads client, built only with GOOGLE_OAUTH_CLIENT_ID/SECRET): "Connect Google Ads". */
  googleOAuth?: GoogleOAuth;
  /** The user's Facebook Pages (the Meta Pages client): "Connect Facebook Pages / Instagram" shows only with it and metaOAuth. */
  metaPages?: { listPages(userToken: string): Promise<ListedPage[]> };
  /** Business Profile (set up with Google OAuth): Manage Hub → Business Profile connects locations. */
  googleBusiness?: GoogleBusinessSetup;
}

export interface WebPaths {
  /** The base URL's path, e.g. "" or "/api". */
  base: string;
  /** The web admin's root: {base}/app. */
  app: string;
  hub(hubId: string): string;
}

export function webPaths(config: Config): WebPaths {
  const base = new URL(config.baseUrl).pathname.replace(/\/$/, '');
  const app = `${base}/app`;
  return { base, app, hub: (hubId) => `${app}/hubs/${encodeURIComponent(hubId)}` };
}

/** The hub's spend report for every period: the spend dashboard's, and the spend embed's. */
export const spendReports = async (deps: WebDeps, hubId: string): Promise<SpendReport[]> =>
  Promise.all(PERIODS.map(async (p) => (await spendByWorkspace(deps.db, hubId, p, deps.clock, deps.caches.spend)).value() as SpendReport));

/** A signed-in request to a hub's page: the session, its user, their membership of the hub. */
export interface HubCtx {
  sessionId: string;
  user: SessionUser;
  hub: Membership;
  csrf: string;
}

/** Who is signed in, and the checks of hub pages (session.ts keeps them). */
export interface Sessions {
  /** The signed-in user, or undefined once answered with a redirect to sign-in (GET) or a 401. */
  signedIn(request: FastifyRequest, reply: FastifyReply): Promise<{ sessionId: string; user: SessionUser } | undefined>;
  /** Signed in, a member of the hub and, for admin pages, its hub admin; otherwise answered here. */
  hubCtx(request: FastifyRequest, reply: FastifyReply, hubId: string, adminOnly: boolean): Promise<HubCtx | undefined>;
  /**
   * Signed in, for a page of the user's own (not a hub's): the header shows their first hub they
   * administer, else their first hub. A user of no hub is answered here.
   */
  userCtx(request: FastifyRequest, reply: FastifyReply): Promise<HubCtx | undefined>;
  /** Whether a posted form carries the session's CSRF token. */
  csrfOk(ctx: { sessionId: string }, body: Form): boolean;
  shellOf(ctx: HubCtx, active: Shell['active']): Shell;
}

/** What each route module of the web admin is given. */
export interface Web {
  deps: WebDeps;
  paths: WebPaths;
  sessions: Sessions;
}

export type Query = Record<string, string | undefined>;
export type Form = Record<string, string | undefined>;

/** A query or form value given once (a repeated one is an array: not accepted). */
export const one = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

export interface Link {
  href: string;
  text: string;
}

/** An /app page: no framing, scripts only from our origin, nothing cached. */
export const appPage = (reply: FastifyReply, status: number, render: (nonce: string) => string): FastifyReply =>
  sendPage(reply, status, appHeaders, render);

/** What a form posted without its session's CSRF token is told. */
export const FORM_EXPIRED = 'That form expired. Reload the page and try again.';

/** An /app page that only says why the request was not done. */
export const refuse = (reply: FastifyReply, status: number, title: string, message: string, link?: Link): FastifyReply =>
  appPage(reply, status, (nonce) => messagePage(title, message, nonce, link));

/** An /embed page: frameable by any site, no script. */
export const embedPage = (reply: FastifyReply, status: number, title: string, body: string): FastifyReply =>
  sendPage(reply, status, embedHeaders, (nonce) => embedDocument(title, body, nonce));

/** Whatever is wrong with an embed request, the embedding site gets this page. */
export const embedRefusal = (reply: FastifyReply, reason: string): FastifyReply =>
  embedPage(reply, 401, 'Not authorised', embedRefusalView(reason));
