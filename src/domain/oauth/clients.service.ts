// Pre-provisioned OAuth clients and the redirect URIs every client may register: the rules, over
// the SQL of clients.repository.ts.
import { randomBytes } from 'node:crypto';
import type { Db } from '../../db/database.ts';
import { DomainError } from '../../platform/errors.ts';
import { insertClient } from './clients.repository.ts';
import { hashClientSecret } from './secrets.ts';

export interface ProvisionedClient {
  client_id: string;
  client_secret?: string;
}

const PRIVATE_USE_SCHEME = /^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/;

/** Whether a redirect URI uses an app's private-use scheme (RFC 8252 §7.1), so its client is native. */
function isPrivateUseRedirect(uri: string): boolean {
  return PRIVATE_USE_SCHEME.test(URL.parse(uri)?.protocol ?? '');
}

/** A redirect URI we accept: absolute, no fragment, https — or http only to a loopback address. */
export function redirectUriProblem(uri: string): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `redirect URI ${JSON.stringify(uri)} is not an absolute URL`;
  }
  if (url.hash) return `redirect URI ${uri} must not have a fragment`;
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback) && !PRIVATE_USE_SCHEME.test(url.protocol)) {
    return `redirect URI ${uri} must use https (http only for localhost, or an app's private-use scheme like com.example.app:)`;
  }
  return undefined;
}

/**
 * A pre-provisioned OAuth client (`hubops clients create`), stored like a dynamically
 * registered one: the secret, for a confidential client, only as its hash; shown once.
 */
export async function createClient(db: Db, input: { name: string; redirectUris: string[]; public: boolean }): Promise<ProvisionedClient> {
  const name = input.name.trim();
  if (name.length < 1 || name.length > 200) throw new DomainError('invalid', 'client name must be 1 to 200 characters');
  if (input.redirectUris.length === 0) throw new DomainError('invalid', 'at least one --redirect-uri is required');
  for (const uri of input.redirectUris) {
    const problem = redirectUriProblem(uri);
    if (problem) throw new DomainError('invalid', problem);
  }
  const clientId = randomBytes(24).toString('base64url');
  const secret = input.public ? undefined : randomBytes(48).toString('base64url');
  const metadata = {
    client_id: clientId,
    client_name: name,
    client_id_issued_at: Math.floor(Date.now() / 1000),
    redirect_uris: input.redirectUris,
    // oidc-provider takes private-use schemes only from native clients.
    application_type: input.redirectUris.some(isPrivateUseRedirect) ? 'native' : 'web',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: input.public ? 'none' : 'client_secret_post',
    id_token_signed_response_alg: 'ES256',
    ...(secret ? { client_secret: hashClientSecret(secret), client_secret_expires_at: 0 } : {}),
  };
  await insertClient(db, clientId, metadata);
  return secret ? { client_id: clientId, client_secret: secret } : { client_id: clientId };
}
