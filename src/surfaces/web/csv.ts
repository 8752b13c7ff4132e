// The opt-in report as CSV (RFC 4180): one line per Hub API opt-in row, nested fields flattened
// into the columns documented in docs/web-admin.md. Values that a spreadsheet would
// read as a formula (leading = + - @ tab or carriage return) get a leading apostrophe.
import type { OptInRow } from '../../domain/opt-ins/opt-in.ts';

const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

/** Neutralises spreadsheet formulas: `=1+1` → `'=1+1`. */
export function neutraliseFormula(value: string): string {
  return FORMULA_START.test(value) ? `'${value}` : value;
}

/** One CSV field: formula-neutralised, then quoted when it holds a comma, quote or line break. */
export function csvField(value: string): string {
  const safe = neutraliseFormula(value);
  return NEEDS_QUOTES.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export function csvLine(values: string[]): string {
  return `${values.map(csvField).join(',')}\r\n`;
}

/** The report's columns; `fieldKeys` are the hub's non-archived custom field keys. */
export function optInCsvHeader(fieldKeys: string[]): string[] {
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
    'budget_type',
    'variant',
    'responses',
  ];
}

const scalar = (v: string | number | boolean | undefined): string => (v === undefined ? '' : String(v));

export function optInCsvValues(row: OptInRow, fieldKeys: string[]): string[] {
  return [
    row.id,
    row.playbook.id,
    row.playbook.name,
    row.playbook.solutions.join('|'),
    row.workspace.id,
    row.workspace.name,
    ...fieldKeys.map((k) => scalar(row.workspace.fields[k])),
    row.status,
    row.optedInAt,
    row.updatedAt,
    row.budgetCents === null ? '' : String(row.budgetCents),
    row.budgetType ?? '',
    JSON.stringify(row.variant),
    JSON.stringify(row.responses),
  ];
}
