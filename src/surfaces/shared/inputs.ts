import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { Type, type Static, type TObject, type TSchema, type TUnsafe } from 'typebox';
import { ListCursor, type CursorKind } from '../../domain/keyset.ts';
import type { CursorKey } from '../../platform/cursor.ts';
import type { Issue } from '../../platform/errors.ts';
import { FORBIDDEN_CHARACTER_MESSAGE, findForbiddenText } from '../../platform/text.ts';
import { invalidRequest } from './errors.ts';
import { checkedFormatOf } from './formats.ts';

// Validation of every operation's input (REST and MCP alike), one per app: its own ajv, given the
// server-only string checks (shared/formats.ts) as formats as the schemas that use them are
// compiled, the cursors of every list among them, checked with the app's cursor key. Two apps in
// one process never share a key or a format. Published schemas never name these formats: the
// validator compiles a copy of each schema with the checks put back.

/** A list's `cursor` parameter: its format's name, the list's cursors, and the refusal of anything else. */
export interface CursorFormat<P> {
  readonly name: string;
  readonly kind: CursorKind<P>;
  readonly message: string;
}

/** Where a cursor parameter's schema keeps its format (a symbol: JSON, so OpenAPI and MCP, never sees it). */
const CURSOR_FORMAT = Symbol('cursor format');

/**
 * The schema of a list's `cursor` parameter (`schema`: the optional text it is published as). Its
 * input is a ListCursor, never text: validation checks the cursor with the app's key, once, as the
 * format `format.name`, and gives the first page's when none was sent.
 */
export function cursorParameter<P>(format: CursorFormat<P>, schema: TSchema): TUnsafe<ListCursor<P>> {
  return Object.defineProperty(Type.Unsafe<ListCursor<P>>(schema), CURSOR_FORMAT, { value: format });
}

const cursorFormatOf = (schema: unknown): CursorFormat<unknown> | undefined =>
  typeof schema === 'object' && schema !== null ? (schema as { [CURSOR_FORMAT]?: CursorFormat<unknown> })[CURSOR_FORMAT] : undefined;

interface Compiled {
  validate: ValidateFunction;
  /** The schema's cursor parameters: the property, its format, and its first page's cursor (immutable, so one serves every request). */
  cursors: { property: string; format: CursorFormat<unknown>; first: ListCursor<unknown> }[];
}

export class InputValidator {
  readonly #key: CursorKey;
  // No type coercion: JSON bodies and tool arguments must carry the declared types ("text": 16 is
  // refused, not turned into "16"). Query-string text is converted beforehand, strictly, by
  // `fromQueryText`.
  readonly #ajv = new Ajv({ coerceTypes: false, allErrors: true, useDefaults: true, strict: false, removeAdditional: false });
  readonly #compiled = new WeakMap<TSchema, Compiled>();
  /** The formats ajv has been given, by name, with what declared each: added as the schemas that use them are compiled. */
  readonly #formats = new Map<string, object>();
  /** The cursors the running validation read, by format name: each is verified once, by its format check. */
  readonly #read = new Map<string, ListCursor<unknown>>();

  /** `cursorKey`: the key this app's cursors are signed with. */
  constructor(cursorKey: CursorKey) {
    this.#key = cursorKey;
  }

  /** Gives ajv the format `name` declared by `source` (once); two declarations of one name are a programming error. */
  #addFormat(name: string, source: object, check: (text: string) => boolean): void {
    const known = this.#formats.get(name);
    if (known !== undefined) {
      if (known !== source) throw new Error(`two string formats are named ${name}`);
      return;
    }
    this.#formats.set(name, source);
    this.#ajv.addFormat(name, { type: 'string', validate: check });
  }

  /**
   * The schema as this validator checks it: a checked string (shared/formats.ts) or a cursor
   * parameter also names its check as its `format`, so that one pass names every bad field.
   */
  #withChecks(schema: unknown): unknown {
    if (Array.isArray(schema)) return schema.map((item) => this.#withChecks(item));
    if (typeof schema !== 'object' || schema === null) return schema;
    const copy: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(schema)) copy[key] = this.#withChecks(value);
    const checked = checkedFormatOf(schema);
    if (checked) {
      this.#addFormat(checked.name, checked, checked.check);
      copy.format = checked.name;
    }
    const cursor = cursorFormatOf(schema);
    if (cursor) {
      this.#addFormat(cursor.name, cursor, (text) => {
        const read = ListCursor.read(cursor.kind, this.#key, text);
        if (read) this.#read.set(cursor.name, read);
        return read !== undefined;
      });
      copy.format = cursor.name;
    }
    return copy;
  }

  #compile(schema: TObject): Compiled {
    let compiled = this.#compiled.get(schema);
    if (compiled) return compiled;
    const cursors: Compiled['cursors'] = [];
    for (const [property, propertySchema] of Object.entries(schema.properties as Record<string, TSchema>)) {
      const format = cursorFormatOf(propertySchema);
      if (format) cursors.push({ property, format, first: ListCursor.first(format.kind, this.#key) });
    }
    compiled = { validate: this.#ajv.compile(this.#withChecks(schema) as TSchema), cursors };
    this.#compiled.set(schema, compiled);
    return compiled;
  }

  /**
   * Validates `input` (defaults filled in, cursors read, in place); throws 400 invalid_request
   * naming every bad field. First the one rule for inbound text, on every surface: no string or
   * key with NUL, other controls, lone surrogates or noncharacters ever reaches a handler (or
   * PostgreSQL).
   */
  validate<S extends TObject>(schema: S, input: unknown): Static<S> {
    const forbidden = findForbiddenText(input);
    if (forbidden !== undefined) throw invalidRequest([{ field: forbidden, message: FORBIDDEN_CHARACTER_MESSAGE }]);
    const { validate, cursors } = this.#compile(schema);
    const value = (input ?? {}) as Record<string, unknown>;
    // Map.clear reallocates even an empty map: most requests read no cursor.
    if (this.#read.size > 0) this.#read.clear();
    if (validate(value)) {
      for (const { property, format, first } of cursors) value[property] = this.#read.get(format.name) ?? first;
      return value as Static<S>;
    }
    const issues = new Map<string, Issue>();
    for (const error of validate.errors ?? []) {
      const field = fieldOf(error);
      if (issues.has(field)) continue;
      const top = field.split('.')[0]!;
      const fieldSchema = (schema.properties as Record<string, Record<string, unknown>>)[top];
      const message =
        error.keyword === 'required' ? 'is required' : this.#expectation(fieldSchema, error.message ?? 'is invalid', value[top]);
      issues.set(field, { field, message });
    }
    throw invalidRequest([...issues.values()]);
  }

  /** A sentence about what the field accepts, from its schema. */
  #expectation(schema: Record<string, unknown> | undefined, fallback: string, given: unknown): string {
    if (!schema) return fallback;
    const format = checkedFormatOf(schema);
    if (format) return (typeof given === 'string' ? format.explain?.(given) : undefined) ?? format.message;
    const cursor = cursorFormatOf(schema);
    if (cursor) return cursor.message;
    if (Array.isArray(schema.enum)) return `must be one of: ${schema.enum.join(', ')}`;
    if (schema.type === 'integer') {
      const range = schema.minimum !== undefined && schema.maximum !== undefined ? ` from ${schema.minimum} to ${schema.maximum}` : '';
      return `must be an integer${range}`;
    }
    if (schema.type === 'string' && typeof schema.maxLength === 'number')
      return `must be a string of at most ${schema.maxLength} characters`;
    return fallback;
  }
}

function fieldOf(error: ErrorObject): string {
  const path = error.instancePath.replace(/^\//, '').replaceAll('/', '.');
  if (error.keyword === 'required') return [path, (error.params as { missingProperty: string }).missingProperty].filter(Boolean).join('.');
  return path || '(input)';
}
