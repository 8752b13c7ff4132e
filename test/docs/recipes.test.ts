// The recipes of docs/spreadsheets.md, run as pasted against a freshly started demo: the code
// block after each `<!-- recipe: NAME -->` is what a user pastes into another product, so the
// test plays that product's side and lets the recipe make its real HTTP requests to the demo.
// - apps-script: the script in a VM with Apps Script's services (UrlFetchApp makes the request
//   with curl, synchronously as Apps Script does; Utilities.parseCsv is a strict RFC 4180 parser;
//   the sheet checks setValues' dimensions as Sheets does); run, run again (304), trigger installed.
// - power-query: the M query's Base, RelativePath, Query and Headers read out and requested as
//   Web.Contents would; the columns its typing step names must be in the CSV.
// - airtable: the automation script in a VM with Airtable's base and table API (50 records per
//   write) and the real fetch; run twice: everything created, then everything updated.
// The shell parts (the curl equivalents, the cursor loop) run in test/docs/examples.test.ts.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import vm from 'node:vm';
import { after, before, test } from 'node:test';
import { startDemo, type Demo } from '../support/demo.ts';
import { parseCsv } from '../support/csv-parse.ts';
import { ROOT } from '../process/support.ts';

const PAGE = 'docs/spreadsheets.md';
/** How the recipes name the server: `$BASE`, which the served docs fill in and a user replaces. */
const DOCS_ORIGIN = '$BASE';
const KEY_PLACEHOLDER = 'hubops_…';

const missingCurl = (() => {
  try {
    execFileSync('sh', ['-c', 'command -v curl'], { stdio: 'ignore' });
    return false;
  } catch {
    return true;
  }
})();

let demo: Demo | undefined;
let origin: string;
let work: string;

before(async () => {
  if (missingCurl) return;
  demo = await startDemo('hubops-recipes-');
  origin = `http://localhost:${demo.server.port}`;
  work = await mkdtemp(path.join(tmpdir(), 'hubops-recipes-'));
});

after(async () => {
  await demo?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

/** The recipes of the page by name: the fenced block right after each marker. */
async function recipes(): Promise<Map<string, { lang: string; code: string }>> {
  const lines = (await readFile(path.join(ROOT, PAGE), 'utf8')).split('\n');
  const found = new Map<string, { lang: string; code: string }>();
  for (let i = 0; i < lines.length; i++) {
    const marker = /^<!-- recipe: ([a-z-]+) -->$/.exec(lines[i]!.trim());
    if (!marker) continue;
    const open = /^```(\S+)$/.exec(lines[i + 1] ?? '');
    assert.ok(open, `${PAGE}:${i + 1}: the recipe marker is not followed by a code fence`);
    const end = lines.indexOf('```', i + 2);
    found.set(marker[1]!, { lang: open[1]!, code: lines.slice(i + 2, end).join('\n') });
  }
  return found;
}

/** What a user changes before pasting: the server's address and the key. */
const filled = (code: string) => code.replaceAll(DOCS_ORIGIN, origin).replaceAll(KEY_PLACEHOLDER, demo!.key);

/** A GET with curl, synchronously (Apps Script's UrlFetchApp blocks): status, headers, body. */
function curlSync(url: string, headers: Record<string, string>): { status: number; headers: Record<string, string>; body: string } {
  const head = path.join(work, 'head');
  const body = path.join(work, 'body');
  const args = ['-sS', '-o', body, '-D', head, url];
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}: ${value}`);
  execFileSync('curl', args);
  const lines = readFileSync(head, 'utf8').split('\r\n');
  const status = Number(lines[0]!.split(' ')[1]);
  const out: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const at = line.indexOf(':');
    if (at > 0) out[line.slice(0, at)] = line.slice(at + 1).trim();
  }
  return { status, headers: out, body: readFileSync(body, 'utf8') };
}

test('the page has the recipes this test runs', { skip: missingCurl ? 'curl is not installed' : false }, async () => {
  assert.deepEqual([...(await recipes()).keys()].sort(), ['airtable', 'apps-script', 'power-query']);
});

test('Google Sheets: the Apps Script fills both sheets, revalidates with a 304, installs a 15-minute trigger', {
  skip: missingCurl ? 'curl is not installed' : false,
}, async () => {
  const { lang, code } = (await recipes()).get('apps-script')!;
  assert.equal(lang, 'javascript');
  const properties = new Map<string, string>([['HUB_API_KEY', demo!.key]]);
  const sheets = new Map<string, { values: string[][] }>();
  const statuses: number[] = [];
  const triggers: { handler: string; minutes: number }[] = [];
  const context = vm.createContext({
    console,
    Map,
    PropertiesService: {
      getScriptProperties: () => ({
        getProperty: (name: string) => properties.get(name) ?? null,
        setProperty: (name: string, value: string) => properties.set(name, String(value)),
      }),
    },
    UrlFetchApp: {
      fetch(url: string, options: { headers?: Record<string, string>; muteHttpExceptions?: boolean }) {
        const r = curlSync(url, options.headers ?? {});
        statuses.push(r.status);
        if (r.status >= 400 && !options.muteHttpExceptions) throw new Error(`Request failed: ${r.status}`);
        return {
          getResponseCode: () => r.status,
          getContentText: (charset?: string) => {
            assert.ok(charset === undefined || charset === 'UTF-8');
            return r.body;
          },
          getHeaders: () => r.headers,
        };
      },
    },
    Utilities: { parseCsv: (text: string) => parseCsv(text) },
    SpreadsheetApp: {
      getActiveSpreadsheet: () => ({
        getSheetByName: (name: string) => (sheets.has(name) ? sheetOf(name) : null),
        insertSheet: (name: string) => {
          sheets.set(name, { values: [] });
          return sheetOf(name);
        },
      }),
    },
    ScriptApp: {
      getProjectTriggers: () => triggers.slice(),
      deleteTrigger: (trigger: { handler: string }) => triggers.splice(triggers.indexOf(trigger as never), 1),
      newTrigger: (handler: string) => ({
        timeBased: () => ({
          everyMinutes: (minutes: number) => {
            assert.ok([1, 5, 10, 15, 30].includes(minutes), `everyMinutes(${minutes}) is not one Apps Script accepts`);
            return { create: () => triggers.push({ handler, minutes }) };
          },
        }),
      }),
    },
  });
  function sheetOf(name: string) {
    const sheet = sheets.get(name)!;
    return {
      clearContents: () => {
        sheet.values = [];
      },
      getRange: (row: number, column: number, rows: number, columns: number) => ({
        setValues(values: string[][]) {
          // Sheets refuses values whose dimensions differ from the range's.
          assert.equal(values.length, rows, 'setValues: rows');
          for (const v of values) assert.equal(v.length, columns, 'setValues: columns');
          assert.deepEqual([row, column], [1, 1]);
          sheet.values = values.map((v) => v.slice());
        },
      }),
    };
  }
  vm.runInContext(filled(code), context);
  vm.runInContext('refreshHubops()', context);
  assert.deepEqual(statuses, [200, 200]);

  const direct = curlSync(`${origin}/v1/hub/playbook-opt-ins.csv`, { Authorization: `Bearer ${demo!.key}` });
  const expected = parseCsv(direct.body);
  const optIns = sheets.get('Opt-ins')!.values;
  assert.deepEqual(optIns[0], expected[0]);
  assert.equal(optIns.length, expected.length);
  assert.ok(optIns.length > 10, 'the demo hub has opt-ins');
  assert.deepEqual(new Set(optIns.slice(1).map((r) => r[0])), new Set(expected.slice(1).map((r) => r[0])));
  const spend = sheets.get('Spend')!.values;
  assert.equal(spend[0]![0], 'period');
  assert.equal(spend.at(-1)![8], '(unattributed)');

  // The trigger's next run: nothing changed, so both answers are 304 and the sheets stay.
  vm.runInContext('refreshHubops()', context);
  assert.deepEqual(statuses.slice(2), [304, 304]);
  assert.equal(sheets.get('Opt-ins')!.values.length, expected.length);

  vm.runInContext('installTrigger(); installTrigger()', context);
  assert.deepEqual(triggers, [{ handler: 'refreshHubops', minutes: 15 }]);
});

test('Excel / Power BI: the Power Query request answers a UTF-8 CSV with the columns the query types', {
  skip: missingCurl ? 'curl is not installed' : false,
}, async () => {
  const { lang, code } = (await recipes()).get('power-query')!;
  assert.equal(lang, 'powerquery');
  const m = filled(code);
  const text = (name: string) => new RegExp(`${name} = "([^"]*)"`).exec(m)?.[1];
  const base = text('Base');
  const relativePath = text('RelativePath');
  const key = text('Key');
  const since = text('Since');
  assert.ok(base && relativePath && key && since !== undefined, 'Base, RelativePath, Key and Since are literals');
  assert.match(m, /Query = if Since = "" then \[\] else \[since = Since\]/);
  assert.match(m, /Headers = \[Authorization = "Bearer " & Key\]/);
  assert.match(m, /Encoding = 65001/);
  // Web.Contents joins the base and the relative path with one slash.
  const url = `${base}/${relativePath}${since ? `?since=${encodeURIComponent(since)}` : ''}`;
  const r = curlSync(url, { Authorization: `Bearer ${key}` });
  assert.equal(r.status, 200, r.body);
  assert.match(r.headers['content-type'] ?? '', /^text\/csv; charset=utf-8/);
  assert.ok(!r.body.startsWith('\uFEFF'), 'no BOM: Csv.Document reads UTF-8 as told');
  const [header] = parseCsv(r.body);
  for (const [, column] of m.matchAll(/\{"([a-z_]+)", [A-Za-z0-9.]+\}/g)) assert.ok(header!.includes(column!), `the query types ${column}`);
});

test('Airtable: the automation script upserts every opt-in through the cursor, 50 records per write', {
  skip: missingCurl ? 'curl is not installed' : false,
}, async () => {
  const { lang, code } = (await recipes()).get('airtable')!;
  assert.equal(lang, 'javascript');
  const FIELDS = ['Opt-in id', 'Playbook', 'Workspace', 'Status', 'Opted in at', 'Updated at', 'Budget'];
  const records = new Map<string, Record<string, unknown>>();
  const logs: string[] = [];
  let next = 0;
  const checkFields = (fields: Record<string, unknown>) => {
    for (const name of Object.keys(fields)) assert.ok(FIELDS.includes(name), `no field ${name} in the table the recipe describes`);
  };
  const table = {
    async selectRecordsAsync({ fields }: { fields: string[] }) {
      for (const f of fields) assert.ok(FIELDS.includes(f));
      return {
        records: [...records].map(([id, values]) => ({ id, getCellValueAsString: (f: string) => String(values[f] ?? '') })),
      };
    },
    async createRecordsAsync(batch: { fields: Record<string, unknown> }[]) {
      assert.ok(batch.length >= 1 && batch.length <= 50, `createRecordsAsync with ${batch.length} records`);
      for (const { fields } of batch) {
        checkFields(fields);
        records.set(`rec${next++}`, fields);
      }
    },
    async updateRecordsAsync(batch: { id: string; fields: Record<string, unknown> }[]) {
      assert.ok(batch.length >= 1 && batch.length <= 50, `updateRecordsAsync with ${batch.length} records`);
      for (const { id, fields } of batch) {
        checkFields(fields);
        assert.ok(records.has(id));
        records.set(id, { ...records.get(id), ...fields });
      }
    },
  };
  const context = vm.createContext({
    fetch,
    Map,
    encodeURIComponent,
    console: { log: (line: string) => logs.push(line) },
    base: {
      getTable: (name: string) => {
        assert.equal(name, 'Opt-ins');
        return table;
      },
    },
  });
  const run = () => vm.runInContext(`(async () => {\n${filled(code)}\n})()`, context) as Promise<void>;
  await run();
  const direct = curlSync(`${origin}/v1/hub/playbook-opt-ins.csv`, { Authorization: `Bearer ${demo!.key}` });
  const ids = parseCsv(direct.body)
    .slice(1)
    .map((r) => r[0]);
  assert.ok(ids.length > 10);
  assert.deepEqual(new Set([...records.values()].map((r) => r['Opt-in id'])), new Set(ids));
  assert.equal(records.size, ids.length);
  assert.deepEqual(logs, [`${ids.length} created, 0 updated`]);
  await run();
  assert.equal(records.size, ids.length);
  assert.deepEqual(logs.at(-1), `0 created, ${ids.length} updated`);
});
