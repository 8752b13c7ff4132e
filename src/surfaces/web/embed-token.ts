// Signed embed tokens (README, "Signed embeds"):
//   token = base64url(JSON {hub, view, exp, kid}) + "." + base64url(HMAC-SHA256(payload part, K))
// where K = SHA-256(embed key) as 32 raw bytes. The server stores only that hash of each key, so
// it can verify without ever holding the key; the signer computes the same hash from the key.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { hasForbiddenCharacter } from '../../platform/text.ts';

export const EMBED_VIEWS = ['spend', 'opt-in-summary'] as const;
export type EmbedView = (typeof EMBED_VIEWS)[number];
/** Tokens may live at most one hour; a minute of clock skew is tolerated. */
export const EMBED_MAX_LIFETIME_S = 3600;
const SKEW_S = 60;

export interface EmbedPayload {
  hub: string;
  view: EmbedView;
  /** Expiry, Unix time in seconds. */
  exp: number;
  /** The embed key's id (as listed on the API tab). */
  kid: string;
}

export interface EmbedKeyRecord {
  id: string;
  hubId: string;
  scope: 'read' | 'embed';
  revoked: boolean;
  hubSuspended: boolean;
  /** SHA-256 of the key (what api_keys.key_hash holds). */
  keyHash: Buffer;
}

export type EmbedVerdict = { ok: true; payload: EmbedPayload } | { ok: false; reason: string };

/** What a hub admin's server does (also used by tests). */
export function signEmbedToken(payload: EmbedPayload, embedKey: string): string {
  const part = Buffer.from(JSON.stringify(payload)).toString('base64url');
  const secret = createHash('sha256').update(embedKey).digest();
  return `${part}.${createHmac('sha256', secret).update(part).digest('base64url')}`;
}

const BASE64URL = /^[A-Za-z0-9_-]+$/;
// Ids are short ASCII (platform/ids.ts): anything else cannot name a key or hub, so it is refused
// before any database read (a NUL would otherwise reach PostgreSQL and fail there).
const ID = /^[A-Za-z0-9_-]{1,100}$/;

/**
 * Parses without trusting: the signature is checked by verifyEmbedToken once the key is known.
 * Anything hostile (forbidden characters, bad base64url, non-JSON, odd shapes) is undefined,
 * which the embed routes answer with their ordinary 401 page.
 */
export function parseEmbedToken(token: string): { part: string; signature: Buffer; payload: EmbedPayload } | undefined {
  if (token.length > 2048) return undefined;
  const [part, sig, extra] = token.split('.');
  if (!part || !sig || extra !== undefined || !BASE64URL.test(part) || !BASE64URL.test(sig)) return undefined;
  const json = Buffer.from(part, 'base64url').toString('utf8');
  if (hasForbiddenCharacter(json)) return undefined;
  let payload: unknown;
  try {
    payload = JSON.parse(json);
  } catch {
    return undefined;
  }
  const p = payload as Partial<EmbedPayload> | null;
  if (!p || typeof p !== 'object' || typeof p.hub !== 'string' || typeof p.kid !== 'string' || typeof p.exp !== 'number' || !Number.isFinite(p.exp)) return undefined;
  // JSON escapes (\u0000, lone \ud800) only appear once parsed, hence the second check.
  if (!ID.test(p.hub) || !ID.test(p.kid)) return undefined;
  if (!EMBED_VIEWS.includes(p.view as EmbedView)) return undefined;
  return { part, signature: Buffer.from(sig, 'base64url'), payload: { hub: p.hub, view: p.view as EmbedView, exp: p.exp, kid: p.kid } };
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
  const expected = createHmac('sha256', key?.keyHash ?? Buffer.alloc(32)).update(parsed.part).digest();
  const signed = parsed.signature.length === expected.length && timingSafeEqual(parsed.signature, expected);
  if (!key || !signed) return { ok: false, reason: 'The embed token\'s signature does not match any embed key.' };
  if (key.scope !== 'embed') return { ok: false, reason: 'The token was signed with a read key; only embed keys sign embedded views.' };
  if (key.revoked) return { ok: false, reason: 'The embed key that signed this token has been revoked.' };
  if (key.hubId !== parsed.payload.hub) return { ok: false, reason: 'The token names a hub its key does not belong to.' };
  if (key.hubSuspended) return { ok: false, reason: 'This hub\'s access is suspended.' };
  if (parsed.payload.view !== view) return { ok: false, reason: `The token is for the ${parsed.payload.view} view, not ${view}.` };
  const nowS = now.getTime() / 1000;
  if (parsed.payload.exp <= nowS) return { ok: false, reason: 'The embed token has expired; the embedding site must sign a new one.' };
  if (parsed.payload.exp > nowS + EMBED_MAX_LIFETIME_S + SKEW_S) return { ok: false, reason: 'The embed token lives longer than the 1-hour maximum.' };
  return { ok: true, payload: parsed.payload };
}
