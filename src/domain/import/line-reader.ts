// Reads NDJSON lines (or objects shaped like them) into records, with an issue per bad line or field.

import { FORBIDDEN_CHARACTER_MESSAGE, findForbiddenText } from '../../platform/text.ts';
import { FieldReader, isObject, shown } from './field-reader.ts';
import { READERS } from './readers/index.ts';
import { IMPORT_TYPES, isKind, type Broken, type ImportIssue, type ImportRecord, type ImportType, type Kind } from './records.ts';

/**
 * The lines read so far. A line that fails still registers its id (as a Broken item), so one bad
 * line yields one issue rather than a "does not exist" on every line that refers to it.
 */
export class LineReader {
  readonly items: (ImportRecord | Broken)[] = [];
  readonly issues: ImportIssue[] = [];
  /** First line that defines each id, per kind: tells a forward reference from a missing one. */
  readonly firstDefined = new Map<Kind, Map<string, number>>();

  /** One line of NDJSON as bytes: refused unless it is UTF-8 (decoding would replace what it cannot read). */
  readBytes(bytes: Uint8Array, line: number): void {
    let text: string;
    try {
      text = UTF8.decode(bytes);
    } catch {
      this.#lineFails({ line, message: 'not valid UTF-8 text' });
      return;
    }
    this.readText(line === 1 ? text.replace(/^\uFEFF/, '') : text, line);
  }

  /** One line of NDJSON text; a blank line is skipped. */
  readText(text: string, line: number): void {
    if (text.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      // Only where it broke: V8's message quotes the text around it, which may be a password.
      const position = /at position (\d+)/.exec((error as Error).message)?.[1];
      this.#lineFails({
        line,
        message: `not valid JSON (${position === undefined ? 'syntax error' : `at column ${Number(position) + 1}`})`,
      });
      return;
    }
    this.readValue(value, line);
  }

  /** One parsed line. */
  readValue(value: unknown, line: number): void {
    if (!isObject(value)) {
      this.#lineFails({ line, message: `must be a JSON object with a "type", got ${shown(value)}` });
      return;
    }
    const type = value.type;
    if (typeof type !== 'string' || !(IMPORT_TYPES as readonly string[]).includes(type)) {
      this.#lineFails({ line, field: 'type', message: `must be one of ${IMPORT_TYPES.join(', ')}; got ${shown(type)}` });
      return;
    }
    const reader = new FieldReader(line, type as ImportType, value, this.issues);
    const record: ImportRecord = READERS[type as ImportType](reader);
    reader.unknownFields();
    // The rule every surface applies to inbound text (NUL, other controls, lone surrogates,
    // noncharacters), by line and field, before PostgreSQL refuses or silently replaces them.
    const forbidden = findForbiddenText(value);
    if (forbidden !== undefined) reader.fail(forbidden, FORBIDDEN_CHARACTER_MESSAGE);
    const kind = isKind(record.type) ? record.type : undefined;
    const id = 'id' in record && record.id ? record.id : undefined;
    if (kind && id) {
      const lines = this.firstDefined.get(kind) ?? new Map<string, number>();
      this.firstDefined.set(kind, lines);
      if (!lines.has(id)) lines.set(id, line);
    }
    if (reader.ok) {
      this.items.push(record);
    } else {
      const broken: Broken = { type: 'broken', line, kind };
      if (id) broken.id = id;
      if (record.type === 'workspaceField' && record.hubId && record.key) Object.assign(broken, { hubId: record.hubId, key: record.key });
      this.items.push(broken);
    }
  }

  #lineFails(issue: ImportIssue): void {
    this.issues.push(issue);
    this.items.push({ type: 'broken', line: issue.line });
  }
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads NDJSON: a whole string, its lines, or the lines of a file as bytes (`byteLines`), each
 * then checked to be UTF-8. Blank lines count, so line numbers match an editor's.
 */
export async function readNdjson(input: string | Iterable<string> | AsyncIterable<string | Uint8Array>): Promise<LineReader> {
  const reader = new LineReader();
  let line = 0;
  for await (const text of typeof input === 'string' ? input.split('\n') : input) {
    line += 1;
    if (typeof text !== 'string') reader.readBytes(text, line);
    else reader.readText(line === 1 ? text.replace(/^\uFEFF/, '') : text, line);
  }
  return reader;
}

/** The lines of a byte stream (split at LF; a CR before it is dropped), undecoded: readNdjson decodes each. */
export async function* byteLines(input: AsyncIterable<Uint8Array | string>): AsyncGenerator<Uint8Array> {
  let pending = Buffer.alloc(0);
  for await (const chunk of input) {
    const data = Buffer.concat([pending, typeof chunk === 'string' ? Buffer.from(chunk) : chunk]);
    let start = 0;
    for (let end = data.indexOf(0x0a); end !== -1; end = data.indexOf(0x0a, start)) {
      yield withoutCr(data.subarray(start, end));
      start = end + 1;
    }
    pending = data.subarray(start);
  }
  if (pending.length > 0) yield withoutCr(pending);
}

const withoutCr = (line: Buffer): Buffer => (line.at(-1) === 0x0d ? line.subarray(0, -1) : line);

/** Reads objects shaped like NDJSON lines: object i is line i + 1. */
export function readObjects(objects: Iterable<unknown>): LineReader {
  const reader = new LineReader();
  let line = 0;
  for (const value of objects) reader.readValue(value, ++line);
  return reader;
}
