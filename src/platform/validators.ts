import { createHash } from 'node:crypto';
import { VERSION } from './version.ts';

// HTTP validators (RFC 9110 §8.8, §13): what a response's ETag and Last-Modified are, and when a
// conditional GET is answered 304 Not Modified.

/** What a response is current as of: its strong entity tag (quoted) and, where one exists, its last change. */
export interface Validator {
  readonly etag: string;
  readonly lastModified?: Date;
}

/**
 * What a conditional request asks (RFC 9110 §13.1): If-Match's tags (or `*`), else
 * If-Unmodified-Since; If-None-Match's tags (or `*`), else If-Modified-Since.
 */
export interface Conditions {
  readonly match?: readonly string[] | '*';
  readonly unmodifiedSince?: Date;
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
 * The suffix of a representation's tag for the content coding its request negotiated (`"abc-br"`):
 * a strong tag names exact bytes, so each coding has its own (RFC 9110 §8.8.3.3), and a request is
 * answered with the tag of the representation its Accept-Encoding selects (even a body too small
 * to be worth compressing), so a 304 can say the tag its 200 would carry before that is built.
 */
export const CODING_SUFFIXES = ['br', 'gzip', 'zstd'] as const;
export type ContentCoding = (typeof CODING_SUFFIXES)[number];

/** A tag with the coding's suffix: `"abc"` + br → `"abc-br"`. */
export function tagForCoding(etag: string, coding: ContentCoding): string {
  return `${etag.slice(0, -1)}-${coding}"`;
}

/** The tag of the representation a request selects: the validator's, suffixed for its negotiated coding (none: identity). */
export function representationTag(validator: Validator, coding: ContentCoding | undefined): string {
  return coding ? tagForCoding(validator.etag, coding) : validator.etag;
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
 * If-None-Match, even a malformed one, and If-Unmodified-Since only without If-Match (RFC 9110
 * §13.1.3, §13.1.4).
 */
export function conditionsOf(headers: Record<string, string | string[] | undefined>, now: Date): Conditions | undefined {
  const match = parseTagList(headers['if-match']);
  const unmodifiedSince = headers['if-match'] === undefined ? parseHttpDate(headers['if-unmodified-since'], now) : undefined;
  const noneMatch = parseTagList(headers['if-none-match']);
  const modifiedSince = headers['if-none-match'] === undefined ? parseHttpDate(headers['if-modified-since'], now) : undefined;
  const conditions = Object.fromEntries(
    Object.entries({ match, unmodifiedSince, noneMatch, modifiedSince }).filter(([, value]) => value !== undefined),
  ) as Conditions;
  return Object.keys(conditions).length > 0 ? conditions : undefined;
}

/** If-Match's or If-None-Match's list: `*`, or entity tags; undefined when absent or malformed. */
function parseTagList(header: string | string[] | undefined): readonly string[] | '*' | undefined {
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

/** What a GET's conditions decide, in RFC 9110 §13.2.2's order. */
export type Verdict = 'full' | 'not-modified' | 'precondition-failed';

/**
 * Evaluates a GET's conditions against the representation its request selects (`tag`, see
 * representationTag): If-Match by strong comparison (a weak tag never matches), else
 * If-Unmodified-Since against Last-Modified — either false is 412; then If-None-Match by weak
 * comparison (`W/` aside, the tag exactly: another coding's tag names another representation),
 * else If-Modified-Since to the second — either false is 304 (RFC 9110 §13.1, §13.2.2).
 */
export function evaluateConditions(conditions: Conditions, validator: Validator, tag: string): Verdict {
  const lastModifiedSecond = validator.lastModified && Math.floor(validator.lastModified.getTime() / 1000) * 1000;
  if (conditions.match) {
    if (conditions.match !== '*' && !conditions.match.includes(tag)) return 'precondition-failed';
  } else if (conditions.unmodifiedSince && lastModifiedSecond !== undefined && lastModifiedSecond > conditions.unmodifiedSince.getTime()) {
    return 'precondition-failed';
  }
  if (conditions.noneMatch) {
    const held = conditions.noneMatch === '*' || conditions.noneMatch.some((t) => (t.startsWith('W/') ? t.slice(2) : t) === tag);
    return held ? 'not-modified' : 'full';
  }
  if (conditions.modifiedSince && lastModifiedSecond !== undefined && lastModifiedSecond <= conditions.modifiedSince.getTime())
    return 'not-modified';
  return 'full';
}

/** The response headers that carry a validator (on the 200 and on its 304), with the tag of the representation sent. */
export function validatorHeaders(validator: Validator, etag: string): Record<string, string> {
  return validator.lastModified ? { etag, 'last-modified': validator.lastModified.toUTCString() } : { etag };
}
