import { randomBytes } from 'node:crypto';
import Provider, { errors, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import { clientSecretMatches } from '../../domain/oauth/secrets.ts';
import { PostgresAdapter } from './adapter.ts';
import { errorPage, pageHeaders } from './pages.ts';
import type { RevocationFeed } from './revocations.ts';
import type { AuthorizationServerSecrets } from './server-secrets.ts';

// The OAuth 2.1 authorization server: oidc-provider configured down to what the reference
// allows (contract §5). It does the protocol — PKCE, code and refresh grants, rotation and reuse
// detection, registration, revocation, resource indicators; we supply storage, accounts, pages.

export const SCOPE = 'service:full';
export const ACCESS_TOKEN_TTL = 60 * 60;
export const AUTHORIZATION_CODE_TTL = 60;
export const REFRESH_TOKEN_TTL = 30 * 24 * 60 * 60;

/** Paths of the provider's endpoints under {base_url}. */
export function oauthRoutes(config: Config) {
  const base = new URL(config.baseUrl).pathname.replace(/\/$/, '');
  return {
    authorization: `${base}/oauth/authorize`,
    token: `${base}/oauth/token`,
    registration: `${base}/oauth/register`,
    revocation: `${base}/oauth/revoke`,
    jwks: `${base}/oauth/jwks`,
    interaction: `${base}/oauth/interaction`,
  };
}

/** The protected resources tokens can be issued for (RFC 8707): the REST API and the MCP server. */
export function resources(config: Config): string[] {
  return [config.baseUrl, `${config.baseUrl}/mcp`];
}

export function createAuthorizationServer(config: Config, db: Db, secrets: AuthorizationServerSecrets, revocations?: RevocationFeed): Provider {
  const routes = oauthRoutes(config);
  const secure = config.baseUrl.startsWith('https:');
  const knownResources = new Set(resources(config));

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
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true, initialAccessToken: false },
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
          return { scope: SCOPE, audience: resourceIndicator, accessTokenTTL: ACCESS_TOKEN_TTL, accessTokenFormat: 'opaque' };
        },
      },
    },
    ttl: {
      AccessToken: ACCESS_TOKEN_TTL,
      AuthorizationCode: AUTHORIZATION_CODE_TTL,
      RefreshToken: REFRESH_TOKEN_TTL,
      Grant: REFRESH_TOKEN_TTL,
      Session: 14 * 24 * 60 * 60,
      Interaction: 60 * 60,
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
      const nonce = randomBytes(16).toString('base64url');
      ctx.set(pageHeaders(nonce));
      ctx.body = errorPage(String(out.error), String(out.error_description ?? ''), nonce);
    },
    discovery: { service_documentation: `${config.baseUrl}/openapi.json` },
  };

  const provider = new Provider(config.siteUrl, configuration);
  if (secure) provider.proxy = true;

  // Client secrets are stored hashed (see adapter.ts), so compare the hash of what was presented.
  // oidc-provider still does all of client authentication; only the comparison is ours.
  (provider.Client.prototype as unknown as { compareClientSecret(actual: string): Promise<boolean> }).compareClientSecret = async function (
    this: { clientSecret?: string },
    actual: string,
  ) {
    return clientSecretMatches(this.clientSecret, actual);
  };

  // RFC 8414 metadata states exactly what we support (oidc-provider lists OpenID extras too).
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.oidc?.route === 'discovery' && ctx.body && typeof ctx.body === 'object') {
      const body = ctx.body as Record<string, unknown>;
      for (const key of Object.keys(body)) {
        if (/^(claims|claim_types|subject_types|id_token_|request_object_|request_parameter|request_uri_parameter|require_request_uri|userinfo_|claims_parameter)/.test(key)) delete body[key];
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
