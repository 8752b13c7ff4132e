import type { IncomingHttpHeaders } from 'node:http';
import { EMBED_SECRET_PREFIX, KEY_PREFIX } from '../../domain/api-keys/api-key.ts';

// What a refused request sent in place of the credential its surface takes, so the refusal can
// say what arrived and what to send instead. Called only on the failure path (never on an
// accepted request), and never quotes the secret: only what kind of thing it is. Messages stay
// ASCII, as RFC 6750 requires of a WWW-Authenticate error_description.

export type ReceivedCredential =
  | 'none'
  /** `Authorization: Basic …` */
  | 'basic'
  /** An `X-API-Key` header (and no Authorization). */
  | 'x-api-key'
  /** A bearer token that is a Hub API key (hubops_…). */
  | 'hub-key'
  /** A bearer token that is an embed key pair's private key (hubops_esk_…). */
  | 'embed-secret'
  /** A bearer token shaped like an OAuth access token: opaque (43 base64url characters) or a JWT. */
  | 'oauth-token'
  /** Any other bearer token. */
  | 'other-bearer'
  /** Another Authorization scheme (Digest, Token, a bare value…). */
  | 'other-scheme';

const OPAQUE_TOKEN = /^[A-Za-z0-9_-]{43}$/;
const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

export function receivedCredential(headers: IncomingHttpHeaders): ReceivedCredential {
  const authorization = headers.authorization?.trim();
  if (!authorization) return headers['x-api-key'] !== undefined ? 'x-api-key' : 'none';
  const [scheme = '', token = ''] = authorization.split(/[ ]+/, 2);
  if (/^basic$/i.test(scheme)) return 'basic';
  if (!/^bearer$/i.test(scheme)) return 'other-scheme';
  if (token.startsWith(EMBED_SECRET_PREFIX)) return 'embed-secret';
  if (token.startsWith(KEY_PREFIX)) return 'hub-key';
  if (OPAQUE_TOKEN.test(token) || JWT.test(token)) return 'oauth-token';
  return 'other-bearer';
}

const HUB_KEY_HOW = 'send a Hub API key as `Authorization: Bearer <HUB_API_KEY>` (create one in the web admin, Manage Hub > API)';

/**
 * The Hub API's refusal of a request without a usable Hub API key, in words about what arrived;
 * undefined when nothing is better said than the general refusal (a mistyped or unknown key).
 */
export function hubApiReceivedMessage(headers: IncomingHttpHeaders): string | undefined {
  switch (receivedCredential(headers)) {
    case 'none':
      return 'Missing API key: send `Authorization: Bearer <HUB_API_KEY>`.';
    case 'basic':
      return `This request carries HTTP Basic credentials; the Hub API takes no user name or password: ${HUB_KEY_HOW}.`;
    case 'x-api-key':
      return `The key arrived in an X-API-Key header, which the Hub API does not read: ${HUB_KEY_HOW}.`;
    case 'other-scheme':
      return `The Authorization header is not a Bearer credential: ${HUB_KEY_HOW}.`;
    case 'embed-secret':
      return `This is an embed key's private key (hubops_esk_...): it signs embed tokens on your server and is never sent to hubops. For the Hub API, ${HUB_KEY_HOW}.`;
    case 'oauth-token':
      return `This looks like an OAuth access token, which is for the main API and its MCP server (/mcp); the Hub API takes a Hub API key (hubops_...): ${HUB_KEY_HOW}.`;
    default:
      return undefined;
  }
}

/**
 * The main API's (REST and MCP) refusal of a request that carries something other than an OAuth
 * access token; undefined for a bearer token that may be one (it is then checked).
 */
export function oauthSurfaceReceivedMessage(headers: IncomingHttpHeaders): string | undefined {
  const how =
    'the main API takes an OAuth access token: `Authorization: Bearer <ACCESS_TOKEN>`, obtained by the OAuth flow (docs/main-api.md)';
  switch (receivedCredential(headers)) {
    case 'hub-key':
      return `This is a Hub API key (hubops_...); ${how}. A Hub API key works only on the Hub API (/v1/hub).`;
    case 'embed-secret':
      return `This is an embed key's private key (hubops_esk_...), which is never sent to hubops; ${how}.`;
    case 'basic':
      return `This request carries HTTP Basic credentials; ${how}.`;
    case 'x-api-key':
      return `An X-API-Key header is not read here; ${how}. A Hub API key works only on the Hub API (/v1/hub).`;
    default:
      return undefined;
  }
}
