// Reads the fields of one import line, recording an issue per bad field.

import { ID_PATTERN, newId } from '../../platform/ids.ts';
import { parseDate, parseTimestamp } from '../../platform/time.ts';
import { nameProblem } from '../tenancy/tenancy.ts';
import { ID_KINDS, type ImportIssue, type ImportType, type Kind } from './records.ts';

/** The largest value of an `integer` column. */
export const INT32_MAX = 2 ** 31 - 1;

/** A value as an issue quotes it: JSON, cut to 40 characters. */
export function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 37)}…` : text;
}

/** `text` with every control, format, surrogate or unassigned code point written as \u{…}. */
const escapeInvisible = (text: string): string =>
  text.replace(/\p{C}/gu, (c) => `\\u{${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}}`);

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Sets `object[key]`; a key named __proto__ becomes an entry, not the object's prototype. */
export function setEntry<T>(object: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Each accessor reads one field and marks it read; a field no accessor read is unknown. */
export class FieldReader {
  readonly line: number;
  readonly type: ImportType;
  readonly #value: Record<string, unknown>;
  readonly #issues: ImportIssue[];
  readonly #read = new Set<string>(['type']);
  ok = true;

  constructor(line: number, type: ImportType, value: Record<string, unknown>, issues: ImportIssue[]) {
    this.line = line;
    this.type = type;
    this.#value = value;
    this.#issues = issues;
  }

  /** Records an issue; the field is escaped (a key from the line may hold any character, and the CLI prints it to a terminal). */
  fail(field: string, message: string): void {
    this.#issues.push({ line: this.line, field: `${this.type}.${escapeInvisible(field)}`, message });
    this.ok = false;
  }

  /** The raw value, undefined when absent. */
  raw(field: string): unknown {
    this.#read.add(field);
    return Object.hasOwn(this.#value, field) ? this.#value[field] : undefined;
  }

  /** True when the field is absent or null. */
  isNull(field: string): boolean {
    const value = this.raw(field);
    return value === undefined || value === null;
  }

  #required(field: string): unknown {
    const value = this.raw(field);
    if (value === undefined) this.fail(field, 'is required');
    return value;
  }

  /** The line's own id; a new one when the line has none. */
  id(kind: Kind): string {
    const value = this.raw('id');
    if (value === undefined) return newId(ID_KINDS[kind].idPrefix);
    return this.#idText('id', value);
  }

  #idText(field: string, value: unknown): string {
    if (typeof value === 'string' && ID_PATTERN.test(value)) return value;
    this.fail(field, `must be an id matching ${ID_PATTERN.source}, got ${shown(value)}`);
    return '';
  }

  ref(field: string): string {
    const value = this.#required(field);
    return value === undefined ? '' : this.#idText(field, value);
  }

  /** A reference that may be null; `optional` makes a missing field mean null too. */
  refOrNull(field: string, optional: boolean): string | null {
    const value = optional ? this.raw(field) : this.#required(field);
    if (value === undefined || value === null) return null;
    return this.#idText(field, value);
  }

  name(field: string, max = 200): string {
    const value = this.#required(field);
    if (value === undefined) return '';
    if (typeof value !== 'string') {
      this.fail(field, `must be a string, got ${shown(value)}`);
      return '';
    }
    const problem = nameProblem(value, max);
    if (problem) this.fail(field, problem);
    return value;
  }

  /** A string field; a `secret` one is never quoted back in an issue. */
  text(field: string, options: { secret?: boolean } = {}): string {
    const value = this.#required(field);
    if (value === undefined) return '';
    if (typeof value !== 'string') {
      this.fail(
        field,
        options.secret ? `must be a string, got ${value === null ? 'null' : typeof value}` : `must be a string, got ${shown(value)}`,
      );
      return '';
    }
    return value;
  }

  /** One of `values`; `fallback` (when given) applies to a missing field. */
  oneOf<T extends string>(field: string, values: readonly T[], fallback?: T): T {
    const value = fallback === undefined ? this.#required(field) : this.raw(field);
    if (value === undefined) return fallback ?? values[0]!;
    if (typeof value === 'string' && (values as readonly string[]).includes(value)) return value as T;
    this.fail(field, `must be one of ${values.join(', ')}; got ${shown(value)}`);
    return values[0]!;
  }

  /** Like oneOf, but null (or a missing field) is allowed and means null. */
  oneOfOrNull<T extends string>(field: string, values: readonly T[]): T | null {
    return this.isNull(field) ? null : this.oneOf(field, values);
  }

  bool(field: string, fallback: boolean): boolean {
    const value = this.raw(field);
    if (value === undefined) return fallback;
    if (typeof value === 'boolean') return value;
    this.fail(field, `must be true or false, got ${shown(value)}`);
    return fallback;
  }

  /** An ISO 8601 timestamp, normalised to UTC with milliseconds (`…T10:00:00.000Z`). */
  timestamp(field: string): string {
    const value = this.#required(field);
    if (value === undefined) return '';
    const parsed = typeof value === 'string' ? parseTimestamp(value) : undefined;
    if (parsed) return parsed.toISOString();
    this.fail(field, `must be an ISO 8601 timestamp with Z or an offset, like 2026-11-01T10:00:00Z; got ${shown(value)}`);
    return '';
  }

  timestampOrNull(field: string): string | null {
    return this.isNull(field) ? null : this.timestamp(field);
  }

  date(field: string): string {
    const value = this.#required(field);
    if (value === undefined) return '';
    if (typeof value === 'string' && parseDate(value)) return value;
    this.fail(field, `must be a real date YYYY-MM-DD; got ${shown(value)}`);
    return '';
  }

  /** Whole cents from 0 to `max` (the column's range: a value beyond it is refused here, not by PostgreSQL). */
  cents(field: string, max = Number.MAX_SAFE_INTEGER): number {
    return this.#wholeNumber(field, max, ' of cents');
  }

  /** A whole number from 0 to `max` (a metric count; `max` is the column's range where it is narrower). */
  count(field: string, max = Number.MAX_SAFE_INTEGER): number {
    return this.#wholeNumber(field, max, '');
  }

  #wholeNumber(field: string, max: number, unit: string): number {
    const value = this.#required(field);
    if (value === undefined) return 0;
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= max) return value;
    this.fail(
      field,
      max === Number.MAX_SAFE_INTEGER
        ? `must be a whole number${unit}, 0 or more; got ${shown(value)}`
        : `must be a whole number${unit} from 0 to ${max}; got ${shown(value)}`,
    );
    return 0;
  }

  /** A whole number from 1 to `max`. */
  positive(field: string, max = INT32_MAX): number {
    const value = this.#required(field);
    if (value === undefined) return 1;
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 1 && value <= max) return value;
    this.fail(field, `must be a whole number from 1 to ${max}; got ${shown(value)}`);
    return 1;
  }

  /** An array of distinct ids, at most `max` (missing: empty). */
  idList(field: string, max: number): string[] {
    const value = this.raw(field);
    if (value === undefined) return [];
    if (
      !Array.isArray(value) ||
      value.length > max ||
      !value.every((v) => typeof v === 'string' && ID_PATTERN.test(v)) ||
      new Set(value).size !== value.length
    ) {
      this.fail(field, `must be an array of up to ${max} distinct ids; got ${shown(value)}`);
      return [];
    }
    return value as string[];
  }

  /** A string of at most `max` characters (missing: `fallback`). */
  textUpTo(field: string, max: number, fallback?: string): string {
    const value = fallback === undefined ? this.#required(field) : this.raw(field);
    if (value === undefined) return fallback ?? '';
    if (typeof value === 'string' && value.length <= max) return value;
    this.fail(field, `must be a string of at most ${max.toLocaleString('en-US')} characters; got ${shown(value)}`);
    return '';
  }

  centsOrNull(field: string): number | null {
    return this.isNull(field) ? null : this.cents(field);
  }

  /** An object of string values, e.g. an opt-in's variant. */
  stringMap(field: string): Record<string, string> {
    const value = this.raw(field);
    if (value === undefined) return {};
    if (!isObject(value)) {
      this.fail(field, `must be an object of strings, got ${shown(value)}`);
      return {};
    }
    for (const [key, entry] of Object.entries(value)) {
      if (typeof entry !== 'string') this.fail(`${field}.${key}`, `must be a string, got ${shown(entry)}`);
    }
    return value as Record<string, string>;
  }

  /** Records an issue for each field of the line that no accessor read. */
  unknownFields(): void {
    for (const key of Object.keys(this.#value)) {
      if (!this.#read.has(key)) this.fail(key, `is not a field of ${this.type} lines`);
    }
  }
}
