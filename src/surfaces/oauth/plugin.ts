import { createHmac } from 'node:crypto';
import formbody from '@fastify/formbody';
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import { errors, type default as Provider } from 'oidc-provider';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import { consentOptions, saveGrantContext } from '../../domain/oauth/identity.service.ts';
import type { Clock } from '../../platform/clock.ts';
import { sameSecret } from '../../platform/constant-time.ts';
import type { RateLimiter } from '../../platform/rate-limit.ts';
import { sendPage } from '../shared/html.ts';
import { AUTHORIZATION_SERVER_METADATA, authorizationServerMetadataUrl, oauthRoutes } from '../shared/oauth.ts';
import { loopbackAliasRefusal } from '../shared/loopback-alias.ts';
import { submitSignInForm } from '../shared/sign-in-form.ts';
import { lookupClient, TooManyRequests } from './provider.ts';
import { consentPage, errorPage, pageHeaders, refusalPage, signInPage, type ClientLabel } from './pages.ts';

export interface OAuthDeps {
  config: Config;
  db: Db;
  provider: Provider;
  limiter: RateLimiter;
  clock: Clock;
  /** Signs per-interaction CSRF tokens (the server's shared cookie key). */
  csrfKey: string;
}

type Form = Record<string, string | undefined>;

const HTTP_METHODS: HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'];

/** Answers every method `url` does not take with 405 and `Allow`, in OAuth's error shape. */
function refuseOtherMethods(scope: FastifyInstance, url: string, methods: HTTPMethods[]): void {
  const allow = methods.includes('GET') ? [...methods, 'HEAD'] : methods; // Fastify serves HEAD for GET
  scope.route({
    method: HTTP_METHODS.filter((method) => !allow.includes(method)),
    url,
    handler: async (request, reply) =>
      reply
        .code(405)
        .headers({ allow: allow.join(', '), 'cache-control': 'no-store' })
        .send({ error: 'method_not_allowed', error_description: `${request.method} is not allowed here; use ${allow.join(', ')}.` }),
  });
}

export async function oauthPlugin(app: FastifyInstance, deps: OAuthDeps): Promise<void> {
  const routes = oauthRoutes(deps.config);
  // Where the consent page says a grant can be revoked: the web admin's page under BASE_URL.
  const connectedAppsUrl = `${new URL(deps.config.baseUrl).pathname.replace(/\/$/, '')}/app/connected-apps`;
  const providerHandler = deps.provider.callback();

  // Reached by another loopback name than BASE_URL's: discovery would name an issuer the client
  // did not ask, so every OAuth request says which address to use instead.
  app.addHook('onRequest', async (request, reply) => {
    const refusal = loopbackAliasRefusal(deps.config.baseUrl, request.headers.host, 'the OAuth issuer and its endpoints');
    if (refusal)
      return reply.code(421).header('cache-control', 'no-store').send({ error: 'misdirected_request', error_description: refusal });
  });

  // oidc-provider's own endpoints (and RFC 8414 discovery) are handed to it untouched: no body
  // parsing on our side, so it reads the raw request exactly as it expects.
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null));
    const delegate = async (request: FastifyRequest, reply: FastifyReply) => {
      reply.hijack();
      providerHandler(request.raw, reply.raw);
    };
    // Each path takes exactly the methods oidc-provider serves on it (OPTIONS where it answers
    // CORS preflights); any other method is a 405 naming them, in OAuth's error shape.
    const discoveryPath = new URL(authorizationServerMetadataUrl(deps.config)).pathname;
    const endpoints: [string, HTTPMethods[]][] = [
      [routes.authorization, ['GET']],
      [`${routes.authorization}/:uid`, ['GET']], // where an interaction resumes after sign-in and consent
      [routes.token, ['POST', 'OPTIONS']],
      [routes.registration, ['POST']],
      [`${routes.registration}/:clientId`, ['GET']], // RFC 7592 read (no update or delete)
      [routes.revocation, ['POST', 'OPTIONS']],
      [routes.jwks, ['GET', 'OPTIONS']],
      [discoveryPath, ['GET', 'OPTIONS']],
    ];
    // oidc-provider serves its metadata at the well-known path alone: an issuer's path after it
    // (RFC 8414 §3.1) is ours to take off.
    const discovery = async (request: FastifyRequest, reply: FastifyReply) => {
      request.raw.url = `${AUTHORIZATION_SERVER_METADATA}${request.raw.url!.slice(discoveryPath.length)}`;
      return delegate(request, reply);
    };
    for (const [url, methods] of endpoints) {
      scope.route({ method: methods, url, handler: url === discoveryPath ? discovery : delegate });
      refuseOtherMethods(scope, url, methods);
    }
  });

  // Sign-in and consent.
  await app.register(async (scope) => {
    await scope.register(formbody);
    const csrfFor = (uid: string) => createHmac('sha256', deps.csrfKey).update(`csrf:${uid}`).digest('base64url');
    const csrfValid = (uid: string, presented: unknown) => sameSecret(csrfFor(uid), presented);
    const send = (reply: FastifyReply, status: number, render: (nonce: string) => string) => sendPage(reply, status, pageHeaders, render);
    const finish = async (
      request: FastifyRequest,
      reply: FastifyReply,
      result: Parameters<Provider['interactionResult']>[2],
      merge: boolean,
    ) => {
      const redirectTo = await deps.provider.interactionResult(request.raw, reply.raw, result, { mergeWithLastSubmission: merge });
      return reply.code(303).header('cache-control', 'no-store').redirect(redirectTo, 303);
    };
    /**
     * How pages name the client: its name, and for a metadata document the host that serves it
     * (names are self-chosen). A document whose cache expired since the authorization request is
     * fetched again and may now be refused (oidc-provider keeps no client metadata with the
     * interaction): the refusal, for an error page.
     */
    const clientName = async (request: FastifyRequest, clientId: string): Promise<ClientLabel | errors.OIDCProviderError> => {
      let client;
      try {
        client = await lookupClient(deps.provider, clientId, request.clientAddress);
      } catch (error) {
        if (error instanceof errors.OIDCProviderError && error.status < 500) return error;
        throw error;
      }
      const name = (client?.clientName as string | undefined) || clientId;
      return (client as { clientIdMetadataDocument?: boolean } | undefined)?.clientIdMetadataDocument
        ? { name, host: new URL(clientId).host }
        : { name };
    };
    const refuse = (reply: FastifyReply, refusal: errors.OIDCProviderError) => {
      if (refusal instanceof TooManyRequests) reply.header('retry-after', String(refusal.retryAfter));
      const { error, error_description: description } = refusal as { error: string; error_description?: string };
      return send(reply, refusal.status, (nonce) => errorPage(error, description ?? '', nonce));
    };

    refuseOtherMethods(scope, `${routes.interaction}/:uid`, ['GET']);
    refuseOtherMethods(scope, `${routes.interaction}/:uid/login`, ['POST']);
    refuseOtherMethods(scope, `${routes.interaction}/:uid/consent`, ['POST']);
    scope.get<{ Params: { uid: string } }>(`${routes.interaction}/:uid`, async (request, reply) => {
      const details = await deps.provider.interactionDetails(request.raw, reply.raw);
      const uid = details.uid;
      const name = await clientName(request, String(details.params.client_id));
      if (name instanceof errors.OIDCProviderError) return refuse(reply, name);
      if (details.prompt.name === 'login') {
        return send(reply, 200, (nonce) =>
          signInPage({ action: `${routes.interaction}/${uid}/login`, csrf: csrfFor(uid), client: name }, nonce),
        );
      }
      return renderConsent(request, reply, uid, String(details.session?.accountId), String(details.params.client_id), name);
    });

    const renderConsent = async (
      _request: FastifyRequest,
      reply: FastifyReply,
      uid: string,
      userId: string,
      clientId: string,
      name: ClientLabel,
    ) => {
      const options = await consentOptions(deps.db, userId);
      const action = `${routes.interaction}/${uid}/consent`;
      if (!options?.apiAccess || options.hubs.length === 0) {
        return send(reply, 403, (nonce) =>
          refusalPage({ action, csrf: csrfFor(uid), clientName: name.name, userEmail: options?.user.email ?? '' }, nonce),
        );
      }
      return send(reply, 200, (nonce) =>
        consentPage(
          {
            action,
            csrf: csrfFor(uid),
            client: name,
            clientId,
            userEmail: options.user.email,
            choices: options.hubs.map((h) => ({
              hubId: h.hubId,
              hubName: h.hubName,
              workspaces: h.workspaces,
              pinned: h.pinned,
              hubWide: h.role === 'hub_admin',
            })),
            connectedAppsUrl,
          },
          nonce,
        ),
      );
    };

    scope.post<{ Params: { uid: string }; Body: Form }>(`${routes.interaction}/:uid/login`, async (request, reply) => {
      const details = await deps.provider.interactionDetails(request.raw, reply.raw);
      const expectedCsrf = details.prompt.name === 'login' ? csrfFor(details.uid) : undefined;
      const result = await submitSignInForm(deps, request, expectedCsrf);
      if (result.ok) return finish(request, reply, { login: { accountId: result.user.id } }, false);
      const name = await clientName(request, String(details.params.client_id));
      if (name instanceof errors.OIDCProviderError) return refuse(reply, name);
      // This page shows one message: the first field's problem, when it is about a field.
      const error = result.error ?? result.fieldErrors?.email ?? result.fieldErrors?.password;
      return send(reply, result.status, (nonce) =>
        signInPage({ action: request.url, csrf: csrfFor(details.uid), client: name, email: result.email, error }, nonce),
      );
    });

    scope.post<{ Params: { uid: string }; Body: Form }>(`${routes.interaction}/:uid/consent`, async (request, reply) => {
      const details = await deps.provider.interactionDetails(request.raw, reply.raw);
      const body = (request.body ?? {}) as Form;
      if (details.prompt.name !== 'consent' || !csrfValid(details.uid, body.csrf)) {
        // No form to resubmit: the interaction cannot go on from here.
        return send(reply, 400, (nonce) => errorPage('invalid_request', 'This consent form expired. Start again from the app.', nonce));
      }
      const userId = String(details.session?.accountId);
      const clientId = String(details.params.client_id);
      if (body.decision !== 'allow') {
        return finish(request, reply, { error: 'access_denied', error_description: 'The user denied access.' }, false);
      }
      const options = await consentOptions(deps.db, userId);
      if (!options?.apiAccess) {
        return finish(request, reply, { error: 'access_denied', error_description: 'API access is not enabled for this account.' }, false);
      }
      const hub = options.hubs.find((h) => h.hubId === body.hub) ?? (options.hubs.length === 1 ? options.hubs[0] : undefined);
      const workspaceId = hub?.pinned?.id ?? (body.workspace ? body.workspace : null);
      if (!hub || (workspaceId && !hub.pinned && !hub.workspaces.some((w) => w.id === workspaceId))) {
        const name = await clientName(request, clientId);
        if (name instanceof errors.OIDCProviderError) return refuse(reply, name);
        return renderConsent(request, reply, details.uid, userId, clientId, name);
      }
      // Every consent makes a new grant with its own context: tokens issued from an earlier grant
      // keep exactly the hub and workspace chosen then (a context is never rewritten). The new
      // grant holds what the earlier one did for this client plus what the provider says is missing.
      const grant = new deps.provider.Grant({ accountId: userId, clientId });
      const previous = details.grantId ? await deps.provider.Grant.find(details.grantId) : undefined;
      if (previous?.openid?.scope) grant.addOIDCScope(previous.openid.scope);
      for (const [resource, scope] of Object.entries(previous?.resources ?? {})) grant.addResourceScope(resource, scope);
      const missing = details.prompt.details as { missingOIDCScope?: string[]; missingResourceScopes?: Record<string, string[]> };
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
      for (const [resource, scopes] of Object.entries(missing.missingResourceScopes ?? {}))
        grant.addResourceScope(resource, scopes.join(' '));
      const grantId = await grant.save();
      await saveGrantContext(deps.db, { grantId, userId, hubId: hub.hubId, workspaceId });
      return finish(request, reply, { consent: { grantId } }, true);
    });
  });
}
