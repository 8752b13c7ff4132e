// CSV (RFC 4180) for every surface that exports: the web admin's opt-ins download and the Hub
// API's opt-ins and spend CSVs write the same cells, columns and flattening, documented in
// docs/spreadsheets.md. One cell encoder: text is formula-neutralised (OWASP's rule: a leading
// = + - @ tab or carriage return gets an apostrophe), then quoted when it holds a comma, a quote
// or a line break; numbers we format ourselves are written as they are.
import type { OptInRow } from '../../domain/opt-ins/opt-in.ts';

const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

/** The byte-order mark Excel needs to read a CSV opened by double-click as UTF-8 (`?bom=true`). */
export const UTF8_BOM = '\uFEFF';

/** `text/csv` with its charset and the header-row parameter of RFC 4180 §3. */
export const CSV_CONTENT_TYPE = 'text/csv; charset=utf-8; header=present';

/** A number we formatted (a decimal amount): written as it is, never neutralised, even when negative. */
export class CsvNumber {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/** A cell: text (neutralised, quoted as needed), a number or boolean (as is), or empty. */
export type CsvCell = string | number | boolean | CsvNumber | null | undefined;

/** Neutralises spreadsheet formulas: `=1+1` → `'=1+1`. */
export function neutraliseFormula(value: string): string {
  return FORMULA_START.test(value) ? `'${value}` : value;
}

/** One text field: formula-neutralised, then quoted when it holds a comma, quote or line break. */
export function csvField(value: string): string {
  const safe = neutraliseFormula(value);
  return NEEDS_QUOTES.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

function cell(value: CsvCell): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return csvField(value);
  if (value instanceof CsvNumber) return value.text;
  return String(value);
}

/** One record, CRLF-terminated. */
export function csvLine(values: readonly CsvCell[]): string {
  let line = '';
  for (let i = 0; i < values.length; i++) line += i === 0 ? cell(values[i]) : `,${cell(values[i])}`;
  return `${line}\r\n`;
}

/** Integer cents as a decimal amount with two places (12345 → 123.45, -5 → -0.05), exact for any safe integer. */
export function decimalAmount(cents: number): CsvNumber {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  return new CsvNumber(`${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`);
}

/** Line breaks inside a flattened key or value become spaces: one pair per line of the cell. */
const oneLine = (text: string) => text.replace(/\r\n|[\r\n]/g, ' ');

/** `variant` as `dimension: option` lines, by dimension (byte order). */
export function flattenVariant(variant: Record<string, string>): string {
  return Object.keys(variant)
    .sort()
    .map((k) => `${oneLine(k)}: ${oneLine(variant[k]!)}`)
    .join('\n');
}

/** `responses` as `question: answer` lines, in the stored order. */
export function flattenResponses(responses: readonly { question: string; answer: string }[]): string {
  return responses.map((r) => `${oneLine(r.question)}: ${oneLine(r.answer)}`).join('\n');
}

/** The opt-ins CSV's columns; `fieldKeys` are the hub's non-archived custom field keys. */
export function optInCsvHeader(fieldKeys: readonly string[]): string[] {
  return [
    'id',
    'playbook_id',
    'playbook_name',
    'playbook_solutions',
    'workspace_id',
    'workspace_name',
    ...fieldKeys.map((k) => `field_${k}`),
    'status',
    'opted_in_at',
    'updated_at',
    'budget_cents',
    'budget_amount',
    'budget_type',
    'variant',
    'responses',
  ];
}

/** One opt-in's cells, in optInCsvHeader's order. */
export function optInCsvValues(row: OptInRow, fieldKeys: readonly string[]): CsvCell[] {
  return [
    row.id,
    row.playbook.id,
    row.playbook.name,
    row.playbook.solutions.join('|'),
    row.workspace.id,
    row.workspace.name,
    ...fieldKeys.map((k) => row.workspace.fields[k]),
    row.status,
    row.optedInAt,
    row.updatedAt,
    row.budgetCents,
    row.budgetCents === null ? null : decimalAmount(row.budgetCents),
    row.budgetType,
    flattenVariant(row.variant),
    flattenResponses(row.responses),
  ];
}
