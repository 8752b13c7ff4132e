// Reads NDJSON lines (or objects shaped like them) into records, with an issue per bad line or field.

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

/** Reads NDJSON text (a whole string, or its lines from a stream). Blank lines count, so line numbers match an editor's. */
export async function readNdjson(input: string | Iterable<string> | AsyncIterable<string>): Promise<LineReader> {
  const reader = new LineReader();
  let line = 0;
  for await (const text of typeof input === 'string' ? input.split('\n') : input) {
    line += 1;
    reader.readText(line === 1 ? text.replace(/^\uFEFF/, '') : text, line);
  }
  return reader;
}

/** Reads objects shaped like NDJSON lines: object i is line i + 1. */
export function readObjects(objects: Iterable<unknown>): LineReader {
  const reader = new LineReader();
  let line = 0;
  for (const value of objects) reader.readValue(value, ++line);
  return reader;
}
