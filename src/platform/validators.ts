import { createHash } from 'node:crypto';
import { VERSION } from './version.ts';

// HTTP validators (RFC 9110 §8.8, §13): what a response's ETag and Last-Modified are, and when a
// conditional GET is answered 304 Not Modified.

/** What a response is current as of: its strong entity tag (quoted) and, where one exists, its last change. */
export interface Validator {
  readonly etag: string;
  readonly lastModified?: Date;
}

/** What a conditional request asks: If-None-Match's tags (or `*`), else If-Modified-Since. */
export interface Conditions {
  readonly noneMatch?: readonly string[] | '*';
  readonly modifiedSince?: Date;
}

/**
 * A strong entity tag naming a representation by what it is derived from: `parts` (a hub, a
 * version counter, a day…) hashed with the server's version, so a release that changes a
 * response's format changes every tag. 22 base64url characters (132 bits).
 */
export function entityTag(...parts: readonly (string | number | bigint | boolean | null | undefined)[]): string {
  const hash = createHash('sha256').update(VERSION);
  // Each part with its type and length: no two different lists of parts hash the same text.
  for (const part of parts) {
    const text = String(part);
    hash.update(`${typeof part}:${text.length}:${text}`);
  }
  return `"${hash.digest('base64url').slice(0, 22)}"`;
}

/** The entity tag of a body's bytes (in parts): for responses that have no cheaper validator. */
export function entityTagOfBody(parts: readonly (string | Buffer)[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return `"${hash.digest('base64url').slice(0, 22)}"`;
}

/**
 * The suffix a compressed representation's tag carries (`"abc-br"`): a strong tag names exact
 * bytes, so each content coding has its own (RFC 9110 §8.8.3.3). Comparison ignores it.
 */
export const CODING_SUFFIXES = ['br', 'gzip', 'zstd'] as const;
export type ContentCoding = (typeof CODING_SUFFIXES)[number];

/** A tag with the coding's suffix: `"abc"` + br → `"abc-br"`. */
export function tagForCoding(etag: string, coding: ContentCoding): string {
  return `${etag.slice(0, -1)}-${coding}"`;
}

// entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE, etagc = %x21 / %x23-7E / obs-text (RFC 9110 §8.8.3).
const ENTITY_TAG = /^(?:W\/)?"[\x21\x23-\x7e\x80-\xff]*"$/;
// IMF-fixdate, the one form servers send: `Sun, 06 Nov 1994 08:49:37 GMT`.
const IMF_FIXDATE =
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), (0[1-9]|[12][0-9]|3[01]) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} ([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9] GMT$/;

/**
 * The conditions of a GET, or undefined when it has none. A malformed header is ignored, as if it
 * were absent (never a 400): a list with any element that is not an entity tag, a date not in
 * IMF-fixdate form, not a real day, or later than `now`. If-Modified-Since counts only without
 * If-None-Match, even a malformed one (RFC 9110 §13.1.3).
 */
export function conditionsOf(headers: Record<string, string | string[] | undefined>, now: Date): Conditions | undefined {
  if (headers['if-none-match'] !== undefined) {
    const noneMatch = parseNoneMatch(headers['if-none-match']);
    return noneMatch === undefined ? undefined : { noneMatch };
  }
  const modifiedSince = parseHttpDate(headers['if-modified-since'], now);
  return modifiedSince === undefined ? undefined : { modifiedSince };
}

function parseNoneMatch(header: string | string[] | undefined): readonly string[] | '*' | undefined {
  const text = Array.isArray(header) ? header.join(',') : header;
  if (text === undefined) return undefined;
  const trimmed = text.trim();
  if (trimmed === '*') return '*';
  const tags = trimmed
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  if (tags.length === 0 || !tags.every((t) => ENTITY_TAG.test(t))) return undefined;
  return tags;
}

function parseHttpDate(header: string | string[] | undefined, now: Date): Date | undefined {
  if (typeof header !== 'string' || !IMF_FIXDATE.test(header.trim())) return undefined;
  const date = new Date(header.trim());
  // Date.parse rolls 31 Feb over to March: a real day prints back as it was written.
  if (Number.isNaN(date.getTime()) || date.toUTCString() !== header.trim() || date.getTime() > now.getTime()) return undefined;
  return date;
}

/** The tags that name `etag`'s representation: itself, and each content coding of it. */
function namesOf(etag: string): string[] {
  return [etag, ...CODING_SUFFIXES.map((coding) => tagForCoding(etag, coding))];
}

/**
 * The tag the client holds that matches `validator`, when the request is answered 304: the
 * If-None-Match tag that names the same representation (weak comparison: `W/` and the coding's
 * suffix aside; RFC 9110 §13.1.2), `*`, or — without If-None-Match — a Last-Modified no later than
 * If-Modified-Since (to the second). Undefined when the full response is due.
 */
export function matchingTag(conditions: Conditions, validator: Validator): string | undefined {
  if (conditions.noneMatch === '*') return validator.etag;
  if (conditions.noneMatch) {
    const names = namesOf(validator.etag);
    return conditions.noneMatch.map((tag) => (tag.startsWith('W/') ? tag.slice(2) : tag)).find((tag) => names.includes(tag));
  }
  if (conditions.modifiedSince && validator.lastModified) {
    const lastModifiedSecond = Math.floor(validator.lastModified.getTime() / 1000) * 1000;
    if (lastModifiedSecond <= conditions.modifiedSince.getTime()) return validator.etag;
  }
  return undefined;
}

/** The response headers that carry a validator (on the 200 and on its 304). */
export function validatorHeaders(validator: Validator, etag = validator.etag): Record<string, string> {
  return validator.lastModified ? { etag, 'last-modified': validator.lastModified.toUTCString() } : { etag };
}
