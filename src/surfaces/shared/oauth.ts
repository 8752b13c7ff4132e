import type { Config } from '../../config.ts';

// What the OAuth authorization server (surfaces/oauth) and the surfaces that accept its tokens
// (the main API and the main MCP server) must agree on.

/** The one scope tokens carry: full access to the hub on the user's behalf. */
export const SCOPE = 'service:full';

/** Paths of the authorization server's endpoints under {base_url}. */
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

/**
 * The absolute URL of one of the authorization server's endpoints. Its path already holds
 * BASE_URL's path, so it is resolved against the origin (never by cutting segments off BASE_URL).
 */
export function oauthUrl(config: Config, endpoint: keyof ReturnType<typeof oauthRoutes>): string {
  return new URL(oauthRoutes(config)[endpoint], config.baseUrl).href;
}

/**
 * Where the authorization server's RFC 8414 metadata is: the well-known segment between the
 * issuer's (SITE_URL's) host and its path (§3.1), so an issuer under a path has it at
 * /.well-known/oauth-authorization-server/{path}, never at {path}/.well-known/….
 */
export function authorizationServerMetadataUrl(config: Config): string {
  const issuer = new URL(config.siteUrl);
  return `${issuer.origin}${AUTHORIZATION_SERVER_METADATA}${issuer.pathname.replace(/\/$/, '')}`;
}
export const AUTHORIZATION_SERVER_METADATA = '/.well-known/oauth-authorization-server';

/**
 * Word that tokens were revoked, for caches of token verdicts to empty themselves. While not
 * `reliable` (not listening), no verdict may be cached.
 */
export interface RevocationSignal {
  readonly reliable: boolean;
  onRevocation(listener: () => void): void;
}
