// Manage Hub → API: the hub's keys, Create key (one key per rendered form, shown once) and revoke.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { listKeys, revokeKey } from '../../../domain/api-keys/api-key.repository.ts';
import { isKeyScope, KEY_NAME_MAX_LENGTH, keyNameProblem, type KeyScope } from '../../../domain/api-keys/api-key.ts';
import { createKeyOnce, issueFormToken, revealKeyOnce } from '../../../domain/web-sessions/web-session.service.ts';
import { DomainError } from '../../../platform/errors.ts';
import { appPage, FORM_EXPIRED, one, refuse, type Form, type Query, type Web } from '../context.ts';
import type { HubCtx } from '../session.ts';
import { apiTabView, revokeKeyView, type ApiTabState, type KeyFormErrors } from '../views/keys.ts';
import { shell } from '../views/layout.ts';

/** The Create key form's scope once both fields are right, or what is wrong in the page's words. */
function checkKeyForm(name: string, scope: string): { ok: true; scope: KeyScope } | { ok: false; errors: KeyFormErrors } {
  const errors: KeyFormErrors = {};
  const nameProblem = keyNameProblem(name);
  if (nameProblem === 'blank') errors.name = 'Give the key a name, e.g. the tool that will use it.';
  if (nameProblem === 'too_long') errors.name = `The name must be at most ${KEY_NAME_MAX_LENGTH} characters.`;
  if (!isKeyScope(scope)) errors.scope = 'Choose read or embed.';
  return errors.name || !isKeyScope(scope) ? { ok: false, errors } : { ok: true, scope };
}

export function keyRoutes(app: FastifyInstance, { deps, paths, sessions }: Web): void {
  const apiTabUrl = (hubId: string) => `${paths.hub(hubId)}/settings/api`;
  const backToApiTab = (hubId: string) => ({ href: apiTabUrl(hubId), text: 'Back to the API tab' });
  const formExpired = (reply: FastifyReply, hubId: string) =>
    refuse(reply, 400, 'Form expired', FORM_EXPIRED, backToApiTab(hubId));
  const noSuchKey = (reply: FastifyReply, hubId: string) => refuse(reply, 404, 'No such key', 'This hub has no such key.', backToApiTab(hubId));
  const apiTab = async (reply: FastifyReply, status: number, ctx: HubCtx, state: ApiTabState) => {
    const keys = await listKeys(deps.db, ctx.hub.hubId);
    const body = apiTabView({ baseUrl: deps.config.baseUrl, hubUrl: paths.hub(ctx.hub.hubId), csrf: ctx.csrf, keys }, state);
    return appPage(reply, status, (n) => shell(sessions.shellOf(ctx, 'manage'), 'Manage Hub · API', body, n));
  };

  app.get<{ Params: { hubId: string }; Querystring: Query }>(`${paths.app}/hubs/:hubId/settings/api`, async (request, reply) => {
    const ctx = await sessions.hubCtx(request, reply, request.params.hubId, true);
    if (!ctx) return reply;
    const createdToken = one(request.query.created);
    const created = createdToken ? await revealKeyOnce(deps.db, ctx.sessionId, createdToken, ctx.hub.hubId) : undefined;
    const revoked = one(request.query.revoked);
    const formToken = await issueFormToken(deps.db, ctx.sessionId, ctx.hub.hubId, deps.clock.now());
    return apiTab(reply, 200, ctx, { formToken, created, notice: revoked ? 'The key was revoked. Requests with it are refused from now on.' : undefined });
  });

  app.post<{ Params: { hubId: string }; Body: Form }>(`${paths.app}/hubs/:hubId/settings/api/keys`, async (request, reply) => {
    const ctx = await sessions.hubCtx(request, reply, request.params.hubId, true);
    if (!ctx) return reply;
    const body = request.body ?? {};
    if (!sessions.csrfOk(ctx, body)) return formExpired(reply, ctx.hub.hubId);
    const formToken = String(body.form_token ?? '');
    const name = String(body.name ?? '');
    const scope = String(body.scope ?? 'read');
    const checked = checkKeyForm(name, scope);
    if (!checked.ok) return apiTab(reply, 400, ctx, { formToken, name, scope, errors: checked.errors });
    const now = deps.clock.now();
    const outcome = await createKeyOnce(deps.db, { sessionId: ctx.sessionId, formToken, hubId: ctx.hub.hubId, name, scope: checked.scope, now });
    if (outcome.kind === 'expired') {
      const fresh = await issueFormToken(deps.db, ctx.sessionId, ctx.hub.hubId, now);
      return apiTab(reply, 400, ctx, { formToken: fresh, name: name.trim(), scope, notice: 'That form had expired, so no key was created. Check the details and click Create key again.' });
    }
    // Created, or already created by the first of a double submit: both land on the page that shows it once.
    return reply.code(303).header('cache-control', 'no-store').redirect(`${apiTabUrl(ctx.hub.hubId)}?created=${encodeURIComponent(formToken)}`, 303);
  });

  app.get<{ Params: { hubId: string; keyId: string } }>(`${paths.app}/hubs/:hubId/settings/api/keys/:keyId/revoke`, async (request, reply) => {
    const ctx = await sessions.hubCtx(request, reply, request.params.hubId, true);
    if (!ctx) return reply;
    const key = (await listKeys(deps.db, ctx.hub.hubId)).find((k) => k.id === request.params.keyId);
    if (!key) return noSuchKey(reply, ctx.hub.hubId);
    const body = revokeKeyView({ apiTabUrl: apiTabUrl(ctx.hub.hubId), csrf: ctx.csrf, key });
    return appPage(reply, 200, (n) => shell(sessions.shellOf(ctx, 'manage'), 'Revoke key', body, n));
  });

  app.post<{ Params: { hubId: string; keyId: string }; Body: Form }>(`${paths.app}/hubs/:hubId/settings/api/keys/:keyId/revoke`, async (request, reply) => {
    const ctx = await sessions.hubCtx(request, reply, request.params.hubId, true);
    if (!ctx) return reply;
    if (!sessions.csrfOk(ctx, request.body ?? {})) return formExpired(reply, ctx.hub.hubId);
    try {
      await revokeKey(deps.db, request.params.keyId, ctx.hub.hubId);
    } catch (error) {
      // Only the refusal is "no such key": a database error is the 503 page (the error handler).
      if (error instanceof DomainError && error.kind === 'not_found') return noSuchKey(reply, ctx.hub.hubId);
      throw error;
    }
    return reply.code(303).redirect(`${apiTabUrl(ctx.hub.hubId)}?revoked=${encodeURIComponent(request.params.keyId)}`, 303);
  });
}
