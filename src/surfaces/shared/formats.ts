import { Type, type TString, type TStringOptions } from 'typebox';

// Strings whose validity only the server can judge (a real calendar day, a cursor this API
// issued). Published schemas say them in standard JSON Schema 2020-12 — a `pattern` or a standard
// `format` that every accepted value matches — so that a strict validator (an MCP client's, a
// code generator's) compiles every one. The check itself rides on the schema under a symbol,
// which JSON leaves out: the app's InputValidator (inputs.ts) validates with it and names its
// message in refusals. A cursor's check needs the app's key, so a cursor parameter carries its
// list's CursorFormat instead (inputs.ts, cursorParameter).

/** A string format the server checks, and how published schemas state it. */
export interface CheckedFormat {
  /** Its name in the server's validator (never published). */
  readonly name: string;
  readonly check: (text: string) => boolean;
  /** The refusal of a value that fails the check: "`field` must …". */
  readonly message: string;
  /** A better refusal for this particular value, when one can say what went wrong (a + read as a space). */
  readonly explain?: (text: string) => string | undefined;
  /** What published schemas say instead: a superset of the values `check` accepts. */
  readonly published: { readonly pattern: string } | { readonly format: 'date' };
}

const CHECKED = Symbol.for('hubops.checkedFormat');

/** A string schema checked by `format`: published as its pattern or standard format, then `options`. */
export function checkedString(format: CheckedFormat, options: TStringOptions = {}): TString {
  return Object.assign(Type.String({ ...format.published, ...options }), { [CHECKED]: format });
}

/** The checked format of a schema made by checkedString, if it is one. */
export function checkedFormatOf(schema: unknown): CheckedFormat | undefined {
  return typeof schema === 'object' && schema !== null ? (schema as { [CHECKED]?: CheckedFormat })[CHECKED] : undefined;
}
