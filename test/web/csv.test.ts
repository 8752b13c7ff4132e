import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  CsvNumber,
  csvField,
  csvLine,
  decimalAmount,
  neutraliseFormula,
  optInCsvHeader,
  optInCsvValues,
} from '../../src/surfaces/shared/csv.ts';
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
    'budget_amount',
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
    7,
    'questions_only',
    '2026-11-01T00:00:00.000Z',
    '2026-11-02T00:00:00.000Z',
    null,
    null,
    null,
    'audience: Families',
    'Why?: Because, reasons',
  ]);
  const [parsed] = parseCsv(csvLine(values));
  assert.equal(parsed![5], "'=cmd");
  assert.equal(parsed![2], 'Spring, "big" ');
  assert.equal(parsed![7], '7');
  assert.equal(parsed![11], '');
});

test('money: cents as a decimal amount, exact, never neutralised', () => {
  assert.equal(decimalAmount(0).text, '0.00');
  assert.equal(decimalAmount(5).text, '0.05');
  assert.equal(decimalAmount(50000).text, '500.00');
  assert.equal(decimalAmount(123456789012345).text, '1234567890123.45');
  assert.equal(decimalAmount(-1505).text, '-15.05');
  // A negative amount we formatted is a number, not a formula: no apostrophe.
  assert.equal(csvLine([decimalAmount(-1505), -3, '-3']), "-15.05,-3,'-3\r\n");
  assert.ok(decimalAmount(1) instanceof CsvNumber);
  fc.assert(
    fc.property(fc.integer({ min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }), (cents) => {
      const text = decimalAmount(cents).text;
      assert.match(text, /^-?\d+\.\d{2}$/);
      assert.equal(BigInt(text.replace('.', '')), BigInt(cents));
    }),
  );
});

test('variant and responses flatten to one `key: value` line per entry', () => {
  const [values] = [
    optInCsvValues(
      {
        id: 'oi_2',
        playbook: { id: 'pb', name: 'P', solutions: ['meta'] },
        workspace: { id: 'ws', name: 'W', fields: {} },
        status: 'active',
        optedInAt: '2026-11-01T00:00:00.000Z',
        updatedAt: '2026-11-01T00:00:00.000Z',
        budgetCents: 1999,
        budgetType: 'daily',
        variant: { copy: 'B', audience: 'Line\nbreak' },
        responses: [
          { question: 'Hours?', answer: '9-5' },
          { question: '=Q', answer: '@A' },
        ],
      },
      [],
    ),
  ];
  assert.deepEqual(values.slice(-5), [1999, decimalAmount(1999), 'daily', 'audience: Line break\ncopy: B', 'Hours?: 9-5\n=Q: @A']);
  const [parsed] = parseCsv(csvLine(values));
  assert.equal(parsed!.at(-4), '19.99');
  assert.equal(parsed!.at(-1), 'Hours?: 9-5\n=Q: @A');
});
