// Signed embed tokens (docs/web-admin.md, "Signed embeds"). An embed key is an Ed25519 key pair: the
// customer keeps the private key, hubops stores only the public key, so no database read is
// enough to sign. A token is a compact JWS (RFC 7515, alg EdDSA per RFC 8037):
//   base64url(JSON {alg: "EdDSA", kid}) + "." + base64url(JSON {hub, view, exp}) + "." + base64url(Ed25519 signature)
// Embed keys made before key pairs (no public key) still verify their legacy tokens until revoked:
//   base64url(JSON {hub, view, exp, kid}) + "." + base64url(HMAC-SHA256(payload part, SHA-256(key)))
import { createHmac, createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import type { EmbedKeyRecord } from '../../domain/api-keys/api-key.service.ts';
import { EMBED_SECRET_PREFIX } from '../../domain/api-keys/api-key.ts';
import { sameSecret } from '../../platform/constant-time.ts';
import { hasForbiddenCharacter } from '../../platform/text.ts';
import { EMBED_CLOCK_SKEW_S, EMBED_TOKEN_MAX_LIFETIME_S } from '../../policy.ts';

const EMBED_VIEWS = ['spend', 'opt-in-summary'] as const;
export type EmbedView = (typeof EMBED_VIEWS)[number];

export interface EmbedPayload {
  hub: string;
  view: EmbedView;
  /** Expiry, Unix time in seconds. */
  exp: number;
  /** The embed key's id (as listed on the API tab). */
  kid: string;
}

export type EmbedVerdict = { ok: true; payload: EmbedPayload } | { ok: false; reason: string };

/** What a hub admin's server does with the private key shown at creation (also used by tests). */
export function signEmbedToken(payload: EmbedPayload, embedKey: string): string {
  const key = createPrivateKey({ key: Buffer.from(embedKey.slice(EMBED_SECRET_PREFIX.length), 'base64url'), format: 'der', type: 'pkcs8' });
  const { kid, ...claims } = payload;
  const input = `${b64json({ alg: 'EdDSA', kid })}.${b64json(claims)}`;
  return `${input}.${sign(null, Buffer.from(input), key).toString('base64url')}`;
}

const b64json = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const BASE64URL = /^[A-Za-z0-9_-]+$/;
// Ids are short ASCII (platform/ids.ts): anything else cannot name a key or hub, so it is refused
// before any database read (a NUL would otherwise reach PostgreSQL and fail there).
const ID = /^[A-Za-z0-9_-]{1,100}$/;

interface ParsedToken {
  form: 'jws' | 'legacy';
  /** The bytes the signature covers. */
  signed: string;
  signature: Buffer;
  payload: EmbedPayload;
}

/** A JSON object from a base64url part, or undefined for anything hostile. */
function jsonPart(part: string): Record<string, unknown> | undefined {
  const json = Buffer.from(part, 'base64url').toString('utf8');
  if (hasForbiddenCharacter(json)) return undefined;
  try {
    const value: unknown = JSON.parse(json);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Parses without trusting: the signature is checked by verifyEmbedToken once the key is known.
 * Anything hostile (forbidden characters, bad base64url, non-JSON, wrong alg, odd shapes) is
 * undefined, which the embed routes answer with their ordinary 401 page.
 */
function parseEmbedToken(token: string): ParsedToken | undefined {
  if (token.length > 2048) return undefined;
  const parts = token.split('.');
  if (parts.length < 2 || parts.length > 3 || !parts.every((p) => BASE64URL.test(p))) return undefined;
  const [first, second, third] = parts as [string, string, string | undefined];
  let claims: Record<string, unknown> | undefined;
  let kid: unknown;
  if (third === undefined) {
    claims = jsonPart(first);
    kid = claims?.kid;
  } else {
    const header = jsonPart(first);
    if (header?.alg !== 'EdDSA' || header.crit !== undefined) return undefined;
    kid = header.kid;
    claims = jsonPart(second);
  }
  if (!claims) return undefined;
  const { hub, view, exp } = claims;
  // JSON escapes (\u0000, a lone \ud800) only appear once parsed, hence the id rule on top.
  if (typeof hub !== 'string' || typeof kid !== 'string' || !ID.test(hub) || !ID.test(kid)) return undefined;
  if (typeof exp !== 'number' || !Number.isFinite(exp) || !EMBED_VIEWS.includes(view as EmbedView)) return undefined;
  return {
    form: third === undefined ? 'legacy' : 'jws',
    signed: third === undefined ? first : `${first}.${second}`,
    signature: Buffer.from(third ?? second, 'base64url'),
    payload: { hub, view: view as EmbedView, exp, kid },
  };
}

function signatureMatches(token: ParsedToken, key: EmbedKeyRecord | undefined): boolean {
  if (token.form === 'jws') {
    if (!key?.publicKey || token.signature.length !== 64) return false;
    const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: key.publicKey.toString('base64url') }, format: 'jwk' });
    return verify(null, Buffer.from(token.signed), publicKey, token.signature);
  }
  // Legacy HMAC tokens only for keys without a key pair; computed even for an unknown key.
  const expected = createHmac('sha256', (!key?.publicKey && key?.keyHash) || Buffer.alloc(32))
    .update(token.signed)
    .digest();
  return sameSecret(expected, token.signature) && !!key && !key.publicKey && !!key.keyHash;
}

/**
 * Verifies a token for `view`: shape, then the signature against the key it names, then the
 * key's scope, revocation and hub, then the expiry. Every refusal is a reason for a 401 page.
 */
export async function verifyEmbedToken(
  token: string,
  view: EmbedView,
  now: Date,
  findKey: (keyId: string) => Promise<EmbedKeyRecord | undefined>,
): Promise<EmbedVerdict> {
  const parsed = parseEmbedToken(token);
  if (!parsed) return { ok: false, reason: 'The embed token is malformed.' };
  const key = await findKey(parsed.payload.kid);
  if (!key || !signatureMatches(parsed, key)) return { ok: false, reason: "The embed token's signature does not match any embed key." };
  if (key.scope !== 'embed') return { ok: false, reason: 'The token was signed with a read key; only embed keys sign embedded views.' };
  if (key.revoked) return { ok: false, reason: 'The embed key that signed this token has been revoked.' };
  if (key.expiresAt && key.expiresAt <= now)
    return { ok: false, reason: `The embed key that signed this token expired at ${key.expiresAt.toISOString()}.` };
  if (key.hubId !== parsed.payload.hub) return { ok: false, reason: 'The token names a hub its key does not belong to.' };
  if (key.hubSuspended) return { ok: false, reason: "This hub's access is suspended." };
  if (parsed.payload.view !== view) return { ok: false, reason: `The token is for the ${parsed.payload.view} view, not ${view}.` };
  const nowS = now.getTime() / 1000;
  if (parsed.payload.exp <= nowS) return { ok: false, reason: 'The embed token has expired; the embedding site must sign a new one.' };
  if (parsed.payload.exp > nowS + EMBED_TOKEN_MAX_LIFETIME_S + EMBED_CLOCK_SKEW_S)
    return { ok: false, reason: `The embed token lives longer than the ${EMBED_TOKEN_MAX_LIFETIME_S / 3600}-hour maximum.` };
  return { ok: true, payload: parsed.payload };
}
