import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { csvField, csvLine, neutraliseFormula, optInCsvHeader, optInCsvValues } from '../../src/surfaces/web/csv.ts';
import { parseCsv } from '../support/csv-parse.ts';

test('fields with commas, quotes and line breaks are quoted; formulas get an apostrophe', () => {
  assert.equal(csvField('plain'), 'plain');
  assert.equal(csvField('a,b'), '"a,b"');
  assert.equal(csvField('say "hi"'), '"say ""hi"""');
  assert.equal(csvField('two\nlines'), '"two\nlines"');
  assert.equal(csvField('=1+1'), "'=1+1");
  assert.equal(csvField('+1'), "'+1");
  assert.equal(csvField('-1'), "'-1");
  assert.equal(csvField('@SUM(A1)'), "'@SUM(A1)");
  assert.equal(csvField('\tx'), "'\tx");
  assert.equal(csvField('\rx'), `"'\rx"`);
  assert.equal(csvField('=HYPERLINK("x","y")'), `"'=HYPERLINK(""x"",""y"")"`);
  assert.equal(csvField('a=b'), 'a=b');
  assert.equal(csvField(''), '');
});

test('property: parsing the CSV gives back the values, formula-neutralised', () => {
  const value = fc.oneof(
    fc.string(),
    fc.string({ unit: fc.constantFrom('a', ',', '"', '\n', '\r', '=', '+', '-', '@', '\t', ' ', "'", 'é') }),
  );
  fc.assert(
    fc.property(
      fc.array(fc.array(value, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 5 }).filter((rows) => {
        const width = rows[0]!.length;
        return rows.every((r) => r.length === width);
      }),
      (rows) => {
        const text = rows.map(csvLine).join('');
        assert.deepEqual(
          parseCsv(text),
          rows.map((r) => r.map(neutraliseFormula)),
        );
      },
    ),
    { numRuns: 500 },
  );
});

test('an opt-in row flattens into the documented columns', () => {
  const header = optInCsvHeader(['region', 'code']);
  assert.deepEqual(header, [
    'id',
    'playbook_id',
    'playbook_name',
    'playbook_solutions',
    'workspace_id',
    'workspace_name',
    'field_region',
    'field_code',
    'status',
    'opted_in_at',
    'updated_at',
    'budget_cents',
    'budget_type',
    'variant',
    'responses',
  ]);
  const values = optInCsvValues(
    {
      id: 'oi_1',
      playbook: { id: 'pb_1', name: 'Spring, "big" ', solutions: ['meta', 'google_ads'] },
      workspace: { id: 'ws_1', name: '=cmd', fields: { region: 'North', code: 7 } },
      status: 'questions_only',
      optedInAt: '2026-11-01T00:00:00.000Z',
      updatedAt: '2026-11-02T00:00:00.000Z',
      budgetCents: null,
      budgetType: null,
      variant: { audience: 'Families' },
      responses: [{ question: 'Why?', answer: 'Because,\nreasons' }],
    },
    ['region', 'code'],
  );
  assert.deepEqual(values, [
    'oi_1',
    'pb_1',
    'Spring, "big" ',
    'meta|google_ads',
    'ws_1',
    '=cmd',
    'North',
    '7',
    'questions_only',
    '2026-11-01T00:00:00.000Z',
    '2026-11-02T00:00:00.000Z',
    '',
    '',
    '{"audience":"Families"}',
    '[{"question":"Why?","answer":"Because,\\nreasons"}]',
  ]);
  const [parsed] = parseCsv(csvLine(values));
  assert.equal(parsed![5], "'=cmd");
  assert.equal(parsed![2], 'Spring, "big" ');
});
