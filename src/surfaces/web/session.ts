// Who is signed in to the web admin: the session cookie, the CSRF tokens derived from it, the
// member and admin checks of hub pages, and the sign-in and sign-out routes.
import { createHmac, randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createSession, endSession, sessionUser } from '../../domain/web-sessions/web-session.service.ts';
import { sameSecret } from '../../platform/constant-time.ts';
import { redactQuery } from '../../platform/logger.ts';
import { submitSignInForm } from '../shared/sign-in-form.ts';
import { appPage, FORM_EXPIRED, one, refuse, type Form, type Query, type Sessions, type WebDeps, type WebPaths } from './context.ts';
import { signInPage } from './views/layout.ts';

const SESSION_COOKIE = 'hubops_app';
/** Before sign-in: a random value the sign-in form's CSRF token is derived from. */
const SIGNIN_COOKIE = 'hubops_signin';

function cookies(request: FastifyRequest): Map<string, string> {
  const jar = new Map<string, string>();
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    try {
      jar.set(part.slice(0, eq).trim(), decodeURIComponent(part.slice(eq + 1).trim()));
    } catch {
      // A cookie with a broken %-escape (ours never have one) is ignored, not a 500.
    }
  }
  return jar;
}

const hmac = (secret: string, label: string) => createHmac('sha256', secret).update(label).digest('base64url');
const csrfOf = (sessionId: string) => hmac(sessionId, 'hubops-web-csrf');
const signInCsrfOf = (preSession: string) => hmac(preSession, 'hubops-web-signin');

export function webSessions(deps: WebDeps, paths: WebPaths): Sessions {
  const signedIn: Sessions['signedIn'] = async (request, reply) => {
    const sessionId = cookies(request).get(SESSION_COOKIE);
    const user = sessionId ? await sessionUser(deps.db, sessionId, deps.clock.now()) : undefined;
    if (sessionId && user) return { sessionId, user };
    if (request.method === 'GET') {
      // Without a query that carries a secret (the Meta callback's code and state, a pending handle):
      // `next` is logged inside the sign-in URL, where masking cannot see it; the code is single-use anyway.
      const url = redactQuery(request.url) === request.url ? request.url : request.url.split('?')[0]!;
      const next = url.startsWith(`${paths.app}/`) ? url : paths.app;
      await reply
        .code(303)
        .header('cache-control', 'no-store')
        .redirect(`${paths.app}/sign-in?next=${encodeURIComponent(next)}`, 303);
    } else {
      await refuse(reply, 401, 'Signed out', 'Your session has ended. Sign in again.', { href: `${paths.app}/sign-in`, text: 'Sign in' });
    }
    return undefined;
  };
  return {
    signedIn,
    async hubCtx(request, reply, hubId, adminOnly) {
      const who = await signedIn(request, reply);
      if (!who) return undefined;
      const hub = who.user.memberships.find((m) => m.hubId === hubId);
      if (!hub) {
        await refuse(reply, 403, 'No access to this hub', 'You are not a member of this hub.', {
          href: paths.app,
          text: 'Back to your hub',
        });
        return undefined;
      }
      if (adminOnly && hub.role !== 'hub_admin') {
        await refuse(
          reply,
          403,
          'Hub admins only',
          "Only the hub's administrators can open this page. Ask one of them if you need access.",
          { href: paths.hub(hubId), text: 'Back to the hub' },
        );
        return undefined;
      }
      return { sessionId: who.sessionId, user: who.user, hub, csrf: csrfOf(who.sessionId) };
    },
    async userCtx(request, reply) {
      const who = await signedIn(request, reply);
      if (!who) return undefined;
      const hub = who.user.memberships.find((m) => m.role === 'hub_admin') ?? who.user.memberships[0];
      if (!hub) {
        await refuse(reply, 403, 'No hub yet', 'Your account is not a member of any hub. Ask a hub administrator to add you.');
        return undefined;
      }
      return { sessionId: who.sessionId, user: who.user, hub, csrf: csrfOf(who.sessionId) };
    },
    csrfOk: (ctx, body) => sameSecret(csrfOf(ctx.sessionId), body.csrf),
    shellOf: (ctx, active) => ({ base: paths.base, user: ctx.user, hub: ctx.hub, csrf: ctx.csrf, active }),
  };
}

export function sessionRoutes(app: FastifyInstance, deps: WebDeps, paths: WebPaths): void {
  const secure = deps.config.baseUrl.startsWith('https:');
  const cookieAttrs = `Path=${paths.app}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
  const action = `${paths.app}/sign-in`;
  /** Only our own pages: no other origin, no protocol-relative or backslash tricks. */
  const safeNext = (next: unknown) =>
    typeof next === 'string' && next.startsWith(`${paths.app}/`) && !next.startsWith('//') && !/[\\\r\n]/.test(next) ? next : paths.app;
  const newPreSession = (reply: FastifyReply) => {
    const preSession = randomBytes(24).toString('base64url');
    reply.header('set-cookie', `${SIGNIN_COOKIE}=${preSession}; ${cookieAttrs}; Max-Age=3600`);
    return preSession;
  };

  app.get<{ Querystring: Query }>(action, async (request, reply) => {
    let preSession = cookies(request).get(SIGNIN_COOKIE);
    if (!preSession || preSession.length < 20) preSession = newPreSession(reply);
    return appPage(reply, 200, (n) => signInPage({ action, csrf: signInCsrfOf(preSession), next: safeNext(one(request.query.next)) }, n));
  });

  app.post<{ Body: Form }>(action, async (request, reply) => {
    const preSession = cookies(request).get(SIGNIN_COOKIE);
    const next = safeNext(request.body?.next);
    const result = await submitSignInForm(deps, request, preSession ? signInCsrfOf(preSession) : undefined);
    if (!result.ok) {
      // An expired form gets a fresh pre-session, so the form shown again can be sent.
      const csrf = signInCsrfOf(result.expired || !preSession ? newPreSession(reply) : preSession);
      return appPage(reply, result.status, (n) =>
        signInPage({ action, csrf, next, email: result.email, error: result.error, fieldErrors: result.fieldErrors }, n),
      );
    }
    const sessionId = await createSession(deps.db, result.user.id, deps.clock.now());
    reply.header('set-cookie', [`${SESSION_COOKIE}=${sessionId}; ${cookieAttrs}`, `${SIGNIN_COOKIE}=; ${cookieAttrs}; Max-Age=0`]);
    return reply.code(303).header('cache-control', 'no-store').redirect(next, 303);
  });

  app.post<{ Body: Form }>(`${paths.app}/sign-out`, async (request, reply) => {
    const sessionId = cookies(request).get(SESSION_COOKIE);
    if (sessionId) {
      if (!sameSecret(csrfOf(sessionId), request.body?.csrf)) return refuse(reply, 400, 'Form expired', FORM_EXPIRED);
      await endSession(deps.db, sessionId);
    }
    reply.header('set-cookie', `${SESSION_COOKIE}=; ${cookieAttrs}; Max-Age=0`);
    return reply.code(303).redirect(`${paths.app}/sign-in`, 303);
  });
}
