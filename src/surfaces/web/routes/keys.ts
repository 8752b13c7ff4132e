// Manage Hub → API: the hub's keys with their daily requests, Create key (one key per rendered
// form, shown once, with an optional expiry), roll (a new secret shown once; the old one valid
// for the grace period chosen) and revoke.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { keyDailyUsage, listKeys, revokeKey, type KeySummary } from '../../../domain/api-keys/api-key.service.ts';
import {
  isKeyLifetime,
  isKeyScope,
  isRollGrace,
  KEY_NAME_MAX_LENGTH,
  keyNameProblem,
  keyState,
  type KeyScope,
} from '../../../domain/api-keys/api-key.ts';
import { createKeyOnce, issueFormToken, revealKeyOnce, rollKeyOnce } from '../../../domain/web-sessions/web-session.service.ts';
import { DomainError } from '../../../platform/errors.ts';
import { KEY_LIFETIME_DAYS } from '../../../policy.ts';
import { appPage, FORM_EXPIRED, one, refuse, type Form, type Query, type Web } from '../context.ts';
import type { HubCtx } from '../context.ts';
import { apiTabView, revokedNotice, revokeKeyView, rollKeyView, type ApiTabState, type KeyFormErrors } from '../views/keys.ts';
import { when } from '../views/format.ts';
import { shell } from '../views/layout.ts';

type CheckedKeyForm = { ok: true; scope: KeyScope; expiresInDays: number | null } | { ok: false; errors: KeyFormErrors };

/** The Create key form's scope and expiry once every field is right, or what is wrong in the page's words. */
function checkKeyForm(name: string, scope: string, expires: string): CheckedKeyForm {
  const errors: KeyFormErrors = {};
  const nameProblem = keyNameProblem(name);
  if (nameProblem === 'blank') errors.name = 'Give the key a name, e.g. the tool that will use it.';
  if (nameProblem === 'too_long') errors.name = `The name must be at most ${KEY_NAME_MAX_LENGTH} characters.`;
  if (nameProblem === 'hidden_format')
    errors.name = 'The name must not contain invisible formatting characters (such as right-to-left overrides or zero-width spaces).';
  if (!isKeyScope(scope)) errors.scope = 'Choose read or embed.';
  const expiresInDays = expires === 'never' ? null : Number(expires);
  if (expiresInDays !== null && (!/^\d+$/.test(expires) || !isKeyLifetime(expiresInDays))) {
    errors.expires = `Choose never, or ${KEY_LIFETIME_DAYS.join(', ')} days.`;
  }
  return errors.name || errors.expires || !isKeyScope(scope) ? { ok: false, errors } : { ok: true, scope, expiresInDays };
}

const EMBED_ROLL_REFUSAL =
  'An embed key is not rolled: create a new embed key, sign with its private key, then revoke this one (embeds signed with it keep working until you do).';

/** Why a key cannot be rolled at `now`, or undefined when it can. */
function rollRefusal(key: KeySummary, now: Date): string | undefined {
  const state = keyState(key, now);
  if (key.scope === 'embed') return EMBED_ROLL_REFUSAL;
  if (state === 'rolled') return 'This key was already rolled: roll the key that replaced it instead.';
  if (state === 'revoked') return 'This key is revoked: only a working key can be rolled. Create a new key instead.';
  if (state === 'expired') return `This key expired on ${when(key.expiresAt)}: only a working key can be rolled. Create a new key instead.`;
  return undefined;
}

/** The roll form's grace period, sent in whole hours (0, 1 or 24). */
function graceOf(value: string): number | undefined {
  const ms = /^\d{1,2}$/.test(value) ? Number(value) * 3_600_000 : NaN;
  return isRollGrace(ms) ? ms : undefined;
}

export function keyRoutes(app: FastifyInstance, { deps, paths, sessions }: Web): void {
  const apiTabUrl = (hubId: string) => `${paths.hub(hubId)}/settings/api`;
  const backToApiTab = (hubId: string) => ({ href: apiTabUrl(hubId), text: 'Back to the API tab' });
  const formExpired = (reply: FastifyReply, hubId: string) => refuse(reply, 400, 'Form expired', FORM_EXPIRED, backToApiTab(hubId));
  const noSuchKey = (reply: FastifyReply, hubId: string) =>
    refuse(reply, 404, 'No such key', 'This hub has no such key.', backToApiTab(hubId));
  const cannotRoll = (reply: FastifyReply, hubId: string, message: string) =>
    refuse(reply, 409, 'This key cannot be rolled', message, backToApiTab(hubId));
  const apiTab = async (reply: FastifyReply, status: number, ctx: HubCtx, state: ApiTabState) => {
    const now = deps.clock.now();
    const [keys, usage] = await Promise.all([listKeys(deps.db, ctx.hub.hubId), keyDailyUsage(deps.db, ctx.hub.hubId, now)]);
    const body = apiTabView({ baseUrl: deps.config.baseUrl, hubUrl: paths.hub(ctx.hub.hubId), csrf: ctx.csrf, keys, usage, now }, state);
    return appPage(reply, status, (n) => shell(sessions.shellOf(ctx, 'manage'), 'Manage Hub · API', body, n));
  };
  const findKey = async (hubId: string, keyId: string) => (await listKeys(deps.db, hubId)).find((k) => k.id === keyId);

  app.get<{ Params: { hubId: string }; Querystring: Query }>(`${paths.app}/hubs/:hubId/settings/api`, async (request, reply) => {
    const ctx = await sessions.hubCtx(request, reply, request.params.hubId, true);
    if (!ctx) return reply;
    const createdToken = one(request.query.created);
    const created = createdToken ? await revealKeyOnce(deps.db, ctx.sessionId, createdToken, ctx.hub.hubId) : undefined;
    const revoked = one(request.query.revoked);
    const formToken = await issueFormToken(deps.db, ctx.sessionId, ctx.hub.hubId, deps.clock.now());
    return apiTab(reply, 200, ctx, {
      formToken,
      created,
      notice: revoked ? revokedNotice(revoked, await listKeys(deps.db, ctx.hub.hubId)) : undefined,
    });
  });

  app.post<{ Params: { hubId: string }; Body: Form }>(`${paths.app}/hubs/:hubId/settings/api/keys`, async (request, reply) => {
    const ctx = await sessions.hubCtx(request, reply, request.params.hubId, true);
    if (!ctx) return reply;
    const body = request.body ?? {};
    if (!sessions.csrfOk(ctx, body)) return formExpired(reply, ctx.hub.hubId);
    const formToken = String(body.form_token ?? '');
    const name = String(body.name ?? '');
    const scope = String(body.scope ?? 'read');
    const expires = String(body.expires_in_days ?? 'never');
    const checked = checkKeyForm(name, scope, expires);
    if (!checked.ok) return apiTab(reply, 400, ctx, { formToken, name, scope, expires, errors: checked.errors });
    const now = deps.clock.now();
    const outcome = await createKeyOnce(deps.db, {
      sessionId: ctx.sessionId,
      formToken,
      hubId: ctx.hub.hubId,
      name,
      scope: checked.scope,
      expiresInDays: checked.expiresInDays,
      now,
    });
    if (outcome.kind === 'expired') {
      const fresh = await issueFormToken(deps.db, ctx.sessionId, ctx.hub.hubId, now);
      return apiTab(reply, 400, ctx, {
        formToken: fresh,
        name: name.trim(),
        scope,
        expires,
        notice: 'That form had expired, so no key was created. Check the details and click Create key again.',
      });
    }
    // Created, or already created by the first of a double submit: both land on the page that shows it once.
    return reply
      .code(303)
      .header('cache-control', 'no-store')
      .redirect(`${apiTabUrl(ctx.hub.hubId)}?created=${encodeURIComponent(formToken)}`, 303);
  });

  const rollPage = async (reply: FastifyReply, status: number, ctx: HubCtx, keyId: string, notice?: string) => {
    const now = deps.clock.now();
    const key = await findKey(ctx.hub.hubId, keyId);
    if (!key) return noSuchKey(reply, ctx.hub.hubId);
    const refusal = rollRefusal(key, now);
    if (refusal) return cannotRoll(reply, ctx.hub.hubId, refusal);
    const formToken = await issueFormToken(deps.db, ctx.sessionId, ctx.hub.hubId, now);
    const body = rollKeyView({ apiTabUrl: apiTabUrl(ctx.hub.hubId), csrf: ctx.csrf, formToken, key, notice });
    return appPage(reply, status, (n) => shell(sessions.shellOf(ctx, 'manage'), 'Roll key', body, n));
  };

  app.get<{ Params: { hubId: string; keyId: string } }>(
    `${paths.app}/hubs/:hubId/settings/api/keys/:keyId/roll`,
    async (request, reply) => {
      const ctx = await sessions.hubCtx(request, reply, request.params.hubId, true);
      if (!ctx) return reply;
      return rollPage(reply, 200, ctx, request.params.keyId);
    },
  );

  app.post<{ Params: { hubId: string; keyId: string }; Body: Form }>(
    `${paths.app}/hubs/:hubId/settings/api/keys/:keyId/roll`,
    async (request, reply) => {
      const ctx = await sessions.hubCtx(request, reply, request.params.hubId, true);
      if (!ctx) return reply;
      const body = request.body ?? {};
      if (!sessions.csrfOk(ctx, body)) return formExpired(reply, ctx.hub.hubId);
      const graceMs = graceOf(String(body.grace_hours ?? ''));
      if (graceMs === undefined)
        return rollPage(
          reply,
          400,
          ctx,
          request.params.keyId,
          'Choose how long the old key keeps working: not at all, 1 hour or 24 hours.',
        );
      const formToken = String(body.form_token ?? '');
      const now = deps.clock.now();
      let outcome;
      try {
        outcome = await rollKeyOnce(deps.db, {
          sessionId: ctx.sessionId,
          formToken,
          hubId: ctx.hub.hubId,
          keyId: request.params.keyId,
          graceMs,
          now,
        });
      } catch (error) {
        // Only the refusals: a database error is the 503 page (the error handler).
        if (!(error instanceof DomainError) || (error.kind !== 'not_found' && error.kind !== 'conflict')) throw error;
        const key = await findKey(ctx.hub.hubId, request.params.keyId);
        return key ? cannotRoll(reply, ctx.hub.hubId, rollRefusal(key, now) ?? error.message) : noSuchKey(reply, ctx.hub.hubId);
      }
      if (outcome.kind === 'expired')
        return rollPage(
          reply,
          400,
          ctx,
          request.params.keyId,
          'That form had expired, so the key was not rolled. Choose the grace period and click Roll key again.',
        );
      return reply
        .code(303)
        .header('cache-control', 'no-store')
        .redirect(`${apiTabUrl(ctx.hub.hubId)}?created=${encodeURIComponent(formToken)}`, 303);
    },
  );

  app.get<{ Params: { hubId: string; keyId: string } }>(
    `${paths.app}/hubs/:hubId/settings/api/keys/:keyId/revoke`,
    async (request, reply) => {
      const ctx = await sessions.hubCtx(request, reply, request.params.hubId, true);
      if (!ctx) return reply;
      const keys = await listKeys(deps.db, ctx.hub.hubId);
      const key = keys.find((k) => k.id === request.params.keyId);
      if (!key) return noSuchKey(reply, ctx.hub.hubId);
      const body = revokeKeyView({ apiTabUrl: apiTabUrl(ctx.hub.hubId), csrf: ctx.csrf, key, keys, now: deps.clock.now() });
      return appPage(reply, 200, (n) => shell(sessions.shellOf(ctx, 'manage'), 'Revoke key', body, n));
    },
  );

  app.post<{ Params: { hubId: string; keyId: string }; Body: Form }>(
    `${paths.app}/hubs/:hubId/settings/api/keys/:keyId/revoke`,
    async (request, reply) => {
      const ctx = await sessions.hubCtx(request, reply, request.params.hubId, true);
      if (!ctx) return reply;
      if (!sessions.csrfOk(ctx, request.body ?? {})) return formExpired(reply, ctx.hub.hubId);
      try {
        await revokeKey(deps.db, request.params.keyId, { hubId: ctx.hub.hubId, now: deps.clock.now() });
      } catch (error) {
        // Only the refusal is "no such key": a database error is the 503 page (the error handler).
        if (error instanceof DomainError && error.kind === 'not_found') return noSuchKey(reply, ctx.hub.hubId);
        throw error;
      }
      return reply.code(303).redirect(`${apiTabUrl(ctx.hub.hubId)}?revoked=${encodeURIComponent(request.params.keyId)}`, 303);
    },
  );
}
