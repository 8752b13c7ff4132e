import { AsyncLocalStorage } from 'node:async_hooks';
import { createHmac } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import Provider, { errors, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import type { Config } from '../../config.ts';
import { isDatabaseUnavailable, type Db } from '../../db/database.ts';
import { redirectUriProblem } from '../../domain/oauth/clients.service.ts';
import { clientSecretMatches } from '../../domain/oauth/secrets.ts';
import type { ClientAddressOf } from '../../platform/client-address.ts';
import type { Clock } from '../../platform/clock.ts';
import type { RateLimiter, RateWindow } from '../../platform/rate-limit.ts';
import { FORBIDDEN_CHARACTER_MESSAGE, findForbiddenText, HIDDEN_FORMAT_MESSAGE, hasHiddenFormatCharacter } from '../../platform/text.ts';
import {
  ACCESS_TOKEN_TTL_S,
  AUTHORIZATION_CODE_TTL_S,
  CLIENT_AUTH_FAILURE_LIMIT,
  DATABASE_RETRY_AFTER_S,
  OAUTH_INTERACTION_TTL_S,
  OAUTH_SESSION_TTL_S,
  REFRESH_TOKEN_TTL_S,
  REGISTRATION_LIMIT,
  type RatePolicy,
} from '../../policy.ts';
import { newNonce } from '../shared/html.ts';
import { oauthRoutes, SCOPE } from '../shared/oauth.ts';
import { PostgresAdapter } from './adapter.ts';
import {
  CLIENT_METADATA_CACHE_S,
  CLIENT_METADATA_FETCH_LIMIT,
  CLIENT_METADATA_HOST_FETCH_LIMIT,
  CLIENT_METADATA_MAX_BYTES,
  checkDocument,
  explainUrlClientIds,
  isUrlClientId,
  metadataDocumentFetch,
  type ClientMetadataTrust,
} from './client-metadata-document.ts';
import { errorPage, pageHeaders, PROVIDER_PAGE_POLICY, providerPageHeaders } from './pages.ts';
import type { RevocationFeed } from '../../db/revocation-feed.ts';
import type { AuthorizationServerSecrets } from './server-secrets.ts';

// The OAuth 2.1 authorization server: oidc-provider configured down to what hubops allows (one
// scope, opaque access tokens). It does the protocol — PKCE, code and refresh grants, rotation
// and reuse detection, registration, client metadata documents, revocation, resource indicators;
// we supply storage, accounts, pages.

/** The protected resources tokens can be issued for (RFC 8707): the REST API and the MCP server. */
export function resources(config: Config): string[] {
  return [config.baseUrl, `${config.baseUrl}/mcp`];
}

/**
 * oidc-provider builds every absolute URL it hands out (discovery's endpoints, registration's
 * registration_client_uri, the resume URL after sign-in) from the request's Koa `protocol` and
 * `host`: the Host header, or X-Forwarded-Host/-Proto with `proxy` on. A client-chosen Host would
 * send other clients' authorizations elsewhere, and a proxy that does not pass the public host
 * (nginx's default) would send them to an internal address. Every request is seen as addressed to
 * BASE_URL's origin instead, so those URLs come from BASE_URL alone; Secure cookies then need no
 * proxy header either. (Koa's request: https://github.com/koajs/koa/blob/master/docs/api/request.md)
 */
function seeRequestsAtBaseUrl(provider: Provider, baseUrl: string): void {
  const { protocol, host } = new URL(baseUrl);
  const scheme = protocol.slice(0, -1);
  Object.defineProperties(provider.request, {
    protocol: { get: () => scheme, configurable: true },
    host: { get: () => host, configurable: true },
  });
}

/** A 429 in the shape of an OAuth error; oidc-provider's error handlers render it as such. */
export class TooManyRequests extends errors.OIDCProviderError {
  readonly retryAfter: number;
  constructor(description: string, retryAfter: number) {
    super(429, 'rate_limited');
    this.retryAfter = retryAfter;
    Object.assign(this, { error_description: description });
  }
}

/** The client address of a client lookup made outside oidc-provider's own requests. */
const lookupAddress = new AsyncLocalStorage<string>();

/**
 * Looks a client up for a page of ours (sign-in, consent): a metadata document out of the cache
 * is fetched again, and that fetch is counted against `address` like any other.
 */
export function lookupClient(provider: Provider, clientId: string, address: string): ReturnType<Provider['Client']['find']> {
  return lookupAddress.run(address, () => provider.Client.find(clientId));
}

export interface AuthorizationServerOptions {
  revocations?: RevocationFeed;
  limiter: RateLimiter;
  clock: Clock;
  log: FastifyBaseLogger;
  /** Test-only trust for client metadata documents (see ClientMetadataTrust); never from configuration. */
  cimdTrust?: ClientMetadataTrust;
  /** The client's address of a request (TRUST_PROXY), for the limits kept per address. */
  clientAddress: ClientAddressOf;
}

export function createAuthorizationServer(
  config: Config,
  db: Db,
  secrets: AuthorizationServerSecrets,
  options: AuthorizationServerOptions,
): Provider {
  const { revocations, limiter, clock, log, cimdTrust, clientAddress } = options;
  const routes = oauthRoutes(config);
  const secure = config.baseUrl.startsWith('https:');
  const knownResources = new Set(resources(config));

  /** These limits protect accounts and outbound fetches: never fail open (without Redis the limiter counts per instance). */
  const chargeAll = (windows: RateWindow[]) => limiter.hitAll(windows, clock.now().getTime());
  const charge = (key: string, { limit, windowMs }: RatePolicy) => chargeAll([{ key, limit, windowMs }]);

  const configuration: Configuration = {
    adapter: (model: string) => new PostgresAdapter(model, db, revocations),
    jwks: secrets.jwks as Configuration['jwks'],
    cookies: {
      keys: secrets.cookieKeys,
      long: { httpOnly: true, sameSite: 'lax', secure, signed: true },
      short: { httpOnly: true, sameSite: 'lax', secure, signed: true },
    },
    routes: {
      authorization: routes.authorization,
      token: routes.token,
      registration: routes.registration,
      revocation: routes.revocation,
      jwks: routes.jwks,
    },
    scopes: [SCOPE],
    // Checked after client, redirect URI and PKCE, so a bad scope goes back to the client as
    // invalid_scope (RFC 6749 §4.1.2.1) before any page. No scope means the only one there is.
    extraParams: {
      scope: async (ctx: KoaContextWithOIDC, value: string | undefined) => {
        if (value === undefined) {
          ctx.oidc.params!.scope = SCOPE;
          return;
        }
        const unknown = value.split(' ').filter((scope) => scope !== SCOPE);
        if (unknown.length > 0)
          throw new errors.InvalidScope(`unsupported scope ${unknown.join(' ')}; the only scope is ${SCOPE}`, unknown.join(' '));
      },
    },
    // Registration (RFC 7591) and client metadata documents accept only what can be stored and the
    // MCP authorization spec's redirect URIs: https, or http to a loopback address (private-use
    // schemes for native apps). Runs once per client, since client_name is the one extra property.
    extraClientMetadata: {
      properties: ['client_name'],
      validator: (ctx: KoaContextWithOIDC | undefined, key: string, _value: unknown, metadata: Record<string, unknown>) => {
        const document = typeof metadata.client_id === 'string' && isUrlClientId(metadata.client_id);
        if (key !== 'client_name' || (ctx?.oidc?.route !== 'registration' && !document)) return;
        if (document) checkDocument(metadata);
        const field = findForbiddenText(metadata);
        if (field) throw new errors.InvalidClientMetadata(`${field} ${FORBIDDEN_CHARACTER_MESSAGE}`);
        // The consent page shows it: it must read as what it is.
        if (typeof metadata.client_name === 'string' && hasHiddenFormatCharacter(metadata.client_name))
          throw new errors.InvalidClientMetadata(`client_name ${HIDDEN_FORMAT_MESSAGE}`);
        for (const uri of Array.isArray(metadata.redirect_uris) ? metadata.redirect_uris : []) {
          const problem = typeof uri === 'string' ? redirectUriProblem(uri) : undefined;
          if (problem) throw new errors.InvalidClientMetadata(`redirect_uris: ${problem}`);
        }
      },
    },
    claims: {},
    responseTypes: ['code'],
    clientAuthMethods: ['client_secret_post', 'none'],
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
      // We issue no ID tokens, but clients carry the setting: match the one key type we hold.
      id_token_signed_response_alg: 'ES256',
    },
    // OAuth 2.1: PKCE for every client (oidc-provider only accepts S256), exact redirect URIs.
    pkce: { required: () => true },
    allowOmittingSingleRegisteredRedirectUri: false,
    // Client metadata documents come through the SSRF-safe fetch; nothing else is fetched (no
    // jwks_uri or sector_identifier_uri: no client authenticates with keys, no pairwise subjects).
    fetch: metadataDocumentFetch(cimdTrust, log),
    fetchResponseBodyLimits: { 'client_id metadata document': CLIENT_METADATA_MAX_BYTES },
    features: {
      devInteractions: { enabled: false },
      // Kept for clients that predate metadata documents (MCP 2026-07-28 deprecates it).
      registration: { enabled: true, initialAccessToken: false },
      clientIdMetadataDocument: {
        enabled: true,
        ack: 'draft-02',
        cacheDuration: { ...CLIENT_METADATA_CACHE_S },
        // Only cache misses fetch; each takes a unit of the address's window and of its window for
        // the URL's host (see CLIENT_METADATA_FETCH_LIMIT). The address is the client's (never
        // Koa's ctx.ip); outside oidc-provider's requests (sign-in and consent pages) the page's, via lookupClient.
        allowFetch: async (ctx: KoaContextWithOIDC | undefined, clientId: string) => {
          const address = (ctx ? clientAddress(ctx.req) : lookupAddress.getStore()) ?? '';
          const windows = [
            { key: `oauth-client-metadata:${address}`, policy: CLIENT_METADATA_FETCH_LIMIT },
            { key: `oauth-client-metadata-host:${address}:${new URL(clientId).hostname}`, policy: CLIENT_METADATA_HOST_FETCH_LIMIT },
          ];
          const attempt = await chargeAll(windows.map(({ key, policy }) => ({ key, limit: policy.limit, windowMs: policy.windowMs })));
          if (!attempt.allowed) {
            const full = attempt.decisions.findIndex((decision) => !decision.allowed);
            const retryAfter = attempt.decisions[full]!.resetSeconds;
            ctx?.set('retry-after', String(retryAfter));
            throw new TooManyRequests(
              `too many client metadata document fetches from this address${full === 1 ? ' for this host' : ''}; retry in ${retryAfter} s`,
              retryAfter,
            );
          }
          return true;
        },
      },
      revocation: { enabled: true },
      introspection: { enabled: false },
      userinfo: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      pushedAuthorizationRequests: { enabled: false },
      dPoP: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => config.baseUrl,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: KoaContextWithOIDC, resourceIndicator: string) => {
          if (!knownResources.has(resourceIndicator)) throw new errors.InvalidTarget(`unknown resource ${resourceIndicator}`);
          return { scope: SCOPE, audience: resourceIndicator, accessTokenTTL: ACCESS_TOKEN_TTL_S, accessTokenFormat: 'opaque' };
        },
      },
    },
    ttl: {
      AccessToken: ACCESS_TOKEN_TTL_S,
      AuthorizationCode: AUTHORIZATION_CODE_TTL_S,
      RefreshToken: REFRESH_TOKEN_TTL_S,
      Grant: REFRESH_TOKEN_TTL_S,
      Session: OAUTH_SESSION_TTL_S,
      Interaction: OAUTH_INTERACTION_TTL_S,
    },
    // Refresh tokens without offline_access (there is one scope), rotated on every use; reuse of
    // a rotated one revokes the grant (oidc-provider's reuse detection).
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    // Tokens outlive the browser session that approved them.
    expiresWithSession: async () => false,
    findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
    interactions: { url: async (_ctx, interaction) => `${routes.interaction}/${interaction.uid}` },
    renderError: async (ctx, out) => {
      const nonce = newNonce();
      ctx.set(pageHeaders(nonce));
      ctx.body = errorPage(String(out.error), String(out.error_description ?? ''), nonce);
    },
    discovery: { service_documentation: `${config.baseUrl}/openapi.json` },
  };

  const provider = new Provider(config.siteUrl, configuration);
  seeRequestsAtBaseUrl(provider, config.baseUrl);
  explainUrlClientIds(provider.Client, () => Provider.ctx);
  nameRotatedTokens(provider, createHmac('sha256', secrets.cookieKeys[0]!).update('refresh rotation v1').digest());

  // Client secrets are stored hashed (see adapter.ts), so compare the hash of what was presented.
  // oidc-provider still does all of client authentication; only the comparison is ours. Each
  // attempt takes a unit of the failure window of this client *from this address* and a match
  // gives it back, so only failures count; once the window is full every attempt from that
  // address is refused (429), the right secret too. Per address, because a client id is public:
  // failures sent from elsewhere must not lock the client's own servers out.
  (provider.Client.prototype as unknown as { compareClientSecret(actual: string): Promise<boolean> }).compareClientSecret = async function (
    this: { clientId: string; clientSecret?: string },
    actual: string,
  ) {
    const attempt = await charge(
      `oauth-client-auth-fail:${this.clientId}:${Provider.ctx ? clientAddress(Provider.ctx.req) : ''}`,
      CLIENT_AUTH_FAILURE_LIMIT,
    );
    if (!attempt.allowed) {
      const retryAfter = attempt.decisions[0]!.resetSeconds;
      Provider.ctx?.set('retry-after', String(retryAfter));
      throw new TooManyRequests(`too many failed authentications for this client; retry in ${retryAfter} s`, retryAfter);
    }
    const matches = clientSecretMatches(this.clientSecret, actual);
    if (matches) await limiter.refund(attempt);
    return matches;
  };

  // Every server error is logged (with its stack; never a request body, where secrets travel).
  provider.on('server_error', (ctx: KoaContextWithOIDC, error: Error) => {
    ctx.state.serverError = error;
    const where = { route: ctx.oidc?.route, method: ctx.method, path: ctx.path };
    if (isDatabaseUnavailable(error)) log.warn({ err: error, ...where }, 'authorization server: database unavailable');
    else log.error({ err: error, ...where }, 'authorization server error');
  });

  // Outermost: a database outage is a 503 with Retry-After (an OAuth error body, or the error
  // page for a browser), whether oidc-provider's handlers caught it or it escaped them.
  provider.use(async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      ctx.state.serverError = error;
      if (!isDatabaseUnavailable(error)) log.error({ err: error, method: ctx.method, path: ctx.path }, 'authorization server error');
      ctx.status = 500;
      ctx.body = { error: 'server_error', error_description: 'Something went wrong on our side.' };
    }
    if (ctx.status === 500 && isDatabaseUnavailable(ctx.state.serverError)) {
      ctx.status = 503;
      ctx.set('retry-after', String(DATABASE_RETRY_AFTER_S));
      const description = 'The service is temporarily unavailable; retry shortly.';
      if (ctx.response.is('html')) {
        const nonce = newNonce();
        ctx.set(pageHeaders(nonce));
        ctx.body = errorPage('temporarily_unavailable', description, nonce);
      } else {
        ctx.body = { error: 'temporarily_unavailable', error_description: description };
      }
    }
  });

  // A refresh token presented by a client other than its own is a stolen token: the grant it
  // belongs to is revoked (oidc-provider only refuses it), as a reuse after the leeway is.
  provider.use(async (ctx, next) => {
    await next();
    const presented =
      ctx.oidc?.route === 'token' && ctx.oidc.params?.grant_type === 'refresh_token' ? ctx.oidc.params.refresh_token : undefined;
    if (typeof presented !== 'string' || ctx.status !== 400 || (ctx.body as { error?: string } | undefined)?.error !== 'invalid_grant')
      return;
    const token = await provider.RefreshToken.find(presented, { ignoreExpiration: true });
    if (!token || !ctx.oidc!.client || token.clientId === ctx.oidc!.client.clientId) return;
    await (await provider.Grant.find(token.grantId!))?.destroy();
    log.warn({ clientId: ctx.oidc!.client.clientId }, 'a refresh token was presented by another client: its grant is revoked');
  });

  // The one HTML oidc-provider renders itself, form_post's page (it carries the authorization
  // code), gets our pages' security headers; see PROVIDER_PAGE_POLICY. Other answers keep none of it.
  provider.use(async (ctx, next) => {
    ctx.set('content-security-policy', PROVIDER_PAGE_POLICY);
    await next();
    const policy = ctx.response.get('content-security-policy');
    if (!policy.includes("form-action 'none'")) return; // replaced: a page of ours (pageHeaders)
    if (!ctx.response.is('html')) ctx.remove('content-security-policy');
    else {
      const redirectUri = ctx.oidc?.params?.redirect_uri;
      ctx.set(providerPageHeaders(policy, typeof redirectUri === 'string' ? redirectUri : undefined));
    }
  });

  // Registrations per client address (RFC 7591 is open to anyone): the client's address under
  // TRUST_PROXY, never Koa's ctx.ip, which would believe any X-Forwarded-For and give each made-up
  // address a fresh window.
  provider.use(async (ctx, next) => {
    if (ctx.method === 'POST' && ctx.path === routes.registration) {
      const attempt = await charge(`oauth-register:${clientAddress(ctx.req)}`, REGISTRATION_LIMIT);
      if (!attempt.allowed) {
        const retryAfter = attempt.decisions[0]!.resetSeconds;
        ctx.status = 429;
        ctx.set('retry-after', String(retryAfter));
        ctx.set('cache-control', 'no-store');
        ctx.body = {
          error: 'rate_limited',
          error_description: `too many client registrations from this address; retry in ${retryAfter} s`,
        };
        return;
      }
    }
    await next();
  });

  // The client read endpoint (RFC 7592) never shows a secret (or its stored hash) after creation.
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.oidc?.route === 'client' && ctx.body && typeof ctx.body === 'object')
      delete (ctx.body as Record<string, unknown>).client_secret;
  });

  // RFC 8414 metadata states exactly what we support (oidc-provider lists OpenID extras too).
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.oidc?.route === 'discovery' && ctx.body && typeof ctx.body === 'object') {
      const body = ctx.body as Record<string, unknown>;
      for (const key of Object.keys(body)) {
        if (
          /^(claims|claim_types|subject_types|id_token_|request_object_|request_parameter|request_uri_parameter|require_request_uri|userinfo_|claims_parameter)/.test(
            key,
          )
        )
          delete body[key];
      }
      Object.assign(body, {
        scopes_supported: [SCOPE],
        response_types_supported: ['code'],
        grant_types_supported: ['authorization_code', 'refresh_token'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['client_secret_post', 'none'],
        revocation_endpoint_auth_methods_supported: ['client_secret_post', 'none'],
      });
    }
  });
  return provider;
}

/**
 * Names the tokens a refresh issues after the refresh token it rotated: an HMAC of that token
 * under the server's key, as long and as random to anyone without both as oidc-provider's own ids.
 * A refresh repeated within REFRESH_TOKEN_REUSE_LEEWAY_S (adapter.ts, consume) thus issues the
 * same refresh and access token again, not a second family. Other tokens keep random ids.
 */
function nameRotatedTokens(provider: Provider, key: Buffer): void {
  const rotatedFrom = () =>
    (Provider.ctx?.oidc?.entities as { RotatedRefreshToken?: { jti?: string } } | undefined)?.RotatedRefreshToken?.jti;
  for (const [model, purpose] of [
    [provider.RefreshToken, 'refresh token'],
    [provider.AccessToken, 'access token'],
  ] as const) {
    const prototype = model.prototype as unknown as { generateTokenId(): string };
    const randomId = prototype.generateTokenId;
    prototype.generateTokenId = function (this: unknown) {
      const id = randomId.call(this); // also settles the token's format
      const rotated = rotatedFrom();
      return rotated ? createHmac('sha256', key).update(`${purpose}:${rotated}`).digest('base64url') : id;
    };
  }
}
