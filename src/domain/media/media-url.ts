import { createHmac } from 'node:crypto';
import { sameSecret } from '../../platform/constant-time.ts';

// Signed, expiring public URLs of media bytes: Instagram and Meta fetch a post's media from a URL,
// with no session of ours. The URL names the media id and an expiry, and carries an HMAC-SHA256 of
// both under a key every instance derives alike from the server secrets; it reveals nothing else
// (no filename, no hub, no workspace), and an invalid, altered or expired one is a plain 404.

/** The path of the public media route under BASE_URL's path. */
export const MEDIA_PUBLIC_PATH = '/media-public';
const ID = /^[A-Za-z0-9_-]{1,100}$/;
const EXP = /^[0-9]{1,12}$/;
const SIG = /^[A-Za-z0-9_-]{43}$/;

export class MediaUrlSigner {
  readonly #key: Buffer;
  readonly #base: string;
  readonly #ttlMs: number;

  /** `key`: 32 bytes derived from the server secrets; `baseUrl`: BASE_URL; `ttlMs`: each URL's lifetime. */
  constructor(key: Buffer, baseUrl: string, ttlMs: number) {
    this.#key = key;
    this.#base = baseUrl.replace(/\/$/, '');
    this.#ttlMs = ttlMs;
  }

  #mac(mediaId: string, exp: string): string {
    return createHmac('sha256', this.#key).update(`media-public v1\n${mediaId}\n${exp}`).digest('base64url');
  }

  /** The media's public URL, valid for the signer's lifetime from `now`. */
  url(mediaId: string, now: Date): string {
    const exp = String(Math.ceil((now.getTime() + this.#ttlMs) / 1000));
    return `${this.#base}${MEDIA_PUBLIC_PATH}/${encodeURIComponent(mediaId)}?exp=${exp}&sig=${this.#mac(mediaId, exp)}`;
  }

  /** Whether the id, expiry and signature were made by this key and have not expired at `now`. */
  verify(mediaId: unknown, exp: unknown, sig: unknown, now: Date): boolean {
    if (typeof mediaId !== 'string' || typeof exp !== 'string' || typeof sig !== 'string') return false;
    if (!ID.test(mediaId) || !EXP.test(exp) || !SIG.test(sig)) return false;
    // Compared whatever the expiry, so the answer's timing does not tell an expired URL from a forged one.
    const signed = sameSecret(this.#mac(mediaId, exp), sig);
    return signed && Number(exp) * 1000 > now.getTime();
  }
}

/** The signer's key, from the server secrets' first cookie key (as the cursor key is), under its own label. */
export const mediaUrlKey = (serverKey: string): Buffer => createHmac('sha256', serverKey).update('media-public url v1').digest();
