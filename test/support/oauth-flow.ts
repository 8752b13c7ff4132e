import { sql } from 'kysely';
import * as oauth from 'oauth4webapi';
import type { TestApp } from './app.ts';
import { REVOCATION_CHANNEL } from '../../src/db/revocation-feed.ts';

// Drives the OAuth 2.1 flow the way a real client and a real user would: oauth4webapi for the
// client side, plain HTTP with a cookie jar for the browser (sign-in form, consent form).

const insecure = { [oauth.allowInsecureRequests]: true };

/**
 * The server the flow runs against: a listening startApp, or a server process (its BASE_URL and
 * its authorization server metadata from discovery).
 */
export type OAuthServer = Pick<TestApp, 'as' | 'baseUrl'>;

/** A client's redirect URI where nothing listens: the tests read the code from the redirect itself. */
export const REDIRECT = 'http://127.0.0.1:9/callback';

/** A browser's cookie jar, good enough for one origin. */
export class Browser {
  readonly cookies = new Map<string, string>();
  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.cookies.size) headers.set('cookie', [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const response = await fetch(url, { ...init, headers, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      if (/expires=Thu, 01 Jan 1970/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return response;
  }
}

export interface RegisteredClient {
  client: oauth.Client;
  clientAuth: oauth.ClientAuth;
  secret?: string;
}

export async function registerClient(
  live: OAuthServer,
  options: { confidential: boolean; redirectUri: string; name?: string },
): Promise<RegisteredClient> {
  const response = await oauth.dynamicClientRegistrationRequest(
    live.as,
    {
      client_name: options.name ?? 'Test Client',
      redirect_uris: [options.redirectUri],
      token_endpoint_auth_method: options.confidential ? 'client_secret_post' : 'none',
    },
    insecure,
  );
  const client = await oauth.processDynamicClientRegistrationResponse(response);
  const secret = client.client_secret as string | undefined;
  return { client, clientAuth: options.confidential ? oauth.ClientSecretPost(secret!) : oauth.None(), secret };
}

export interface AuthorizeOptions {
  email: string;
  password: string;
  decision?: 'allow' | 'deny';
  redirectUri: string;
  hub?: string;
  workspace?: string;
  resource?: string;
  /** Override the PKCE method / challenge to test refusals. */
  challengeMethod?: string;
  /** `consent` asks the user again although the session's grant already covers the request. */
  prompt?: string;
  /** `form_post`: the code comes back in an HTML form that posts itself to the redirect URI. */
  responseMode?: string;
  /** The scope parameter; `null` leaves it out. Default `service:full`. */
  scope?: string | null;
  browser?: Browser;
}

/** Follows redirects within the server, returning the final response (the one that leaves it). */
async function follow(browser: Browser, baseUrl: string, response: Response): Promise<Response> {
  let current = response;
  for (let i = 0; i < 10 && current.status >= 300 && current.status < 400; i++) {
    const location = new URL(current.headers.get('location')!, baseUrl);
    if (location.origin !== new URL(baseUrl).origin) return current;
    current = await browser.fetch(location.toString());
  }
  return current;
}

function formOf(html: string): { action: string; fields: Record<string, string> } {
  const action = /<form method="post" action="([^"]+)"/.exec(html)?.[1];
  if (!action) throw new Error(`no form in page: ${html.slice(0, 500)}`);
  const fields: Record<string, string> = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[m[1]!] = m[2]!.replace(/&amp;/g, '&');
  return { action: action.replace(/&amp;/g, '&'), fields };
}

export interface AuthorizeResult {
  /** Where the server finally sent the browser (the client's redirect URI), or the last page. */
  response: Response;
  callback?: URL;
  codeVerifier: string;
  state: string;
  pages: string[];
}

/** Runs authorize → sign-in → consent like a user in a browser. */
export async function authorize(live: OAuthServer, registered: RegisteredClient, o: AuthorizeOptions): Promise<AuthorizeResult> {
  const codeVerifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(live.as.authorization_endpoint!);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', registered.client.client_id);
  url.searchParams.set('redirect_uri', o.redirectUri);
  if (o.scope !== null) url.searchParams.set('scope', o.scope ?? 'service:full');
  if (o.prompt) url.searchParams.set('prompt', o.prompt);
  if (o.responseMode) url.searchParams.set('response_mode', o.responseMode);
  url.searchParams.set('state', state);
  url.searchParams.set(
    'code_challenge',
    o.challengeMethod === 'plain' ? codeVerifier : await oauth.calculatePKCECodeChallenge(codeVerifier),
  );
  url.searchParams.set('code_challenge_method', o.challengeMethod ?? 'S256');
  if (o.resource) url.searchParams.set('resource', o.resource);
  return { ...(await completeAuthorization(live, url, o)), codeVerifier, state };
}

/**
 * Opens a fresh authorization request (S256, scope service:full) in `browser` and returns the URL
 * of its sign-in page (the interaction), for tests of the sign-in form itself.
 */
export async function openSignIn(live: OAuthServer, registered: RegisteredClient, browser: Browser, redirectUri: string): Promise<string> {
  const url = new URL(live.as.authorization_endpoint!);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: registered.client.client_id,
    redirect_uri: redirectUri,
    scope: 'service:full',
    code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
    code_challenge_method: 'S256',
  }).toString();
  const start = await browser.fetch(url.toString());
  return new URL(start.headers.get('location')!, live.baseUrl).toString();
}

export type SignInOptions = Pick<AuthorizeOptions, 'email' | 'password' | 'decision' | 'redirectUri' | 'hub' | 'workspace' | 'browser'>;

/**
 * Plays the user for an authorization URL a client built (oauth4webapi, or the MCP SDK's
 * `redirectToAuthorization`): opens it, signs in, answers consent, and stops at the redirect that
 * leaves the server (to the client's redirect URI, whose query then holds `code` or `error`).
 */
export async function completeAuthorization(
  live: OAuthServer,
  authorizationUrl: URL | string,
  o: SignInOptions,
): Promise<Omit<AuthorizeResult, 'codeVerifier' | 'state'>> {
  const browser = o.browser ?? new Browser();
  const pages: string[] = [];
  let response = await follow(browser, live.baseUrl, await browser.fetch(authorizationUrl.toString()));
  for (let step = 0; step < 4 && response.status !== 303 && response.headers.get('content-type')?.includes('text/html'); step++) {
    const html = await response.text();
    pages.push(html);
    if (!html.includes('<form')) break;
    const form = formOf(html);
    if (form.action.startsWith(o.redirectUri)) break; // form_post's page: it leaves the server
    const body = new URLSearchParams(form.fields);
    if (html.includes('name="password"')) {
      body.set('email', o.email);
      body.set('password', o.password);
    } else {
      body.set('decision', html.includes('value="allow"') ? (o.decision ?? 'allow') : 'deny');
      // As a browser does, a hub select left alone submits its first option.
      const firstHub = /<select id="hub" name="hub"><option value="([^"]*)"/.exec(html)?.[1];
      if (o.hub) body.set('hub', o.hub);
      else if (firstHub !== undefined) body.set('hub', firstHub.replaceAll('&amp;', '&'));
      if (o.workspace !== undefined) body.set('workspace', o.workspace);
    }
    const posted = await browser.fetch(new URL(form.action, live.baseUrl).toString(), {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    response = await follow(browser, live.baseUrl, posted);
  }
  const location = response.headers.get('location');
  const callback = location?.startsWith(o.redirectUri) ? new URL(location) : undefined;
  return { response, callback, pages };
}

export async function exchangeCode(live: OAuthServer, registered: RegisteredClient, result: AuthorizeResult, redirectUri: string) {
  const params = oauth.validateAuthResponse(live.as, registered.client, result.callback!, result.state);
  const response = await oauth.authorizationCodeGrantRequest(
    live.as,
    registered.client,
    registered.clientAuth,
    params,
    redirectUri,
    result.codeVerifier,
    insecure,
  );
  return oauth.processAuthorizationCodeResponse(live.as, registered.client, response);
}

export async function refresh(live: OAuthServer, registered: RegisteredClient, refreshToken: string) {
  const response = await oauth.refreshTokenGrantRequest(live.as, registered.client, registered.clientAuth, refreshToken, insecure);
  return oauth.processRefreshTokenResponse(live.as, registered.client, response);
}

export async function revoke(live: OAuthServer, registered: RegisteredClient, token: string): Promise<void> {
  const response = await oauth.revocationRequest(live.as, registered.client, registered.clientAuth, token, insecure);
  await oauth.processRevocationResponse(response);
}

/** Calls the main API with a bearer token. */
export async function api(
  live: OAuthServer,
  path: string,
  token: string | undefined,
  init: RequestInit = {},
): Promise<{ status: number; headers: Headers; body: any }> {
  const headers = new Headers(init.headers);
  if (token) headers.set('authorization', `Bearer ${token}`);
  const response = await fetch(`${live.baseUrl}${path}`, { ...init, headers });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // keep text
  }
  return { status: response.status, headers: response.headers, body };
}

/**
 * Expires every access token in the database now, and sends the revocation NOTIFY so the app's
 * cache of token verdicts is emptied (as when another instance revokes): a real expiry needs no
 * nudge, since a cached verdict never outlives the token's `exp`, but one edited in does.
 */
export async function expireAccessTokens(live: TestApp): Promise<void> {
  await sql`UPDATE oauth_artifacts SET expires_at = now() - interval '1 second',
              payload = jsonb_set(payload, '{exp}', to_jsonb(extract(epoch from now())::int - 1))
            WHERE model = 'AccessToken'`.execute(live.db.kysely);
  await sql`SELECT pg_notify(${REVOCATION_CHANNEL}, '')`.execute(live.db.kysely);
}

export { insecure, oauth };

/** A client that is its metadata document's URL (no registration): public, PKCE only. */
export function documentClient(clientId: string): RegisteredClient {
  return { client: { client_id: clientId, token_endpoint_auth_method: 'none' }, clientAuth: oauth.None() };
}
