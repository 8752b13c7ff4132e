import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startApp, readKey, type TestApp } from '../support/app.ts';
import * as fx from '../support/world.ts';

// The opt-in page's JSON is written by PostgreSQL (each row but its playbook and workspace) and
// spliced by the server: its bytes must be what JSON.stringify makes of the same values — ids and
// texts escaped alike, timestamps cut (not rounded) to milliseconds, numbers and nulls as JSON.

let t: TestApp;
let key: string;

// Ids and texts that need escaping, and timestamps with microseconds that rounding would move.
const awkwardIds = ['oi_"quoted"', 'oi_back\\slash', 'oi_ctl\u0001\u001f\t\n', 'oi_uni\u00e9\u2028\u{1f600}', 'oi_plain/slash'];

before(async () => {
  t = await startApp({ now: '2026-11-21T12:00:00.000Z' });
  await fx.account(t.db, 'acc');
  await fx.hub(t.db, 'hub_json', 'acc');
  await fx.workspace(t.db, 'hub_json', 'ws_1', { region: 'Nord "Est"', tier: 2, vip: true });
  await fx.playbook(t.db, 'hub_json', 'pb_1', 'Spring \\ sale ', ['meta', 'google_ads']);
  await fx.optIns(
    t.db,
    awkwardIds.map((id, i) => ({
      id,
      hubId: 'hub_json',
      playbookId: 'pb_1',
      workspaceId: 'ws_1',
      status: i % 2 === 0 ? 'active' : 'questions_only',
      optedInAt: `2026-03-0${i + 1}T05:06:07.${['999999', '000500', '123456', '999500', '000001'][i]}Z`,
      updatedAt: `2026-04-0${i + 1}T23:59:59.${['999999', '001999', '500000', '000000', '999001'][i]}Z`,
      budgetCents: i % 2 === 0 ? 9_007_199_254_740 + i : null,
      budgetType: i % 2 === 0 ? (i === 2 ? 'daily' : 'lifetime') : null,
      variant: (i === 0 ? {} : { 'au"dience': 'Stu\\dents \u00e9 \u0007', creative: 'A/B' }) as Record<string, string>,
      responses: i === 3 ? [] : [{ question: 'Why?\n', answer: '"Because" \u{1f600}' }],
    })),
  );
  key = await readKey(t.db, 'hub_json');
});
after(async () => {
  await t.close();
});

/** The page's JSON as the server's serialiser would write it from the stored values (JSON.stringify, jsonb's own text). */
async function expectedPage(limit: number): Promise<string[]> {
  const { rows } = await t.db.pool.query<{
    id: string;
    status: string;
    opted: string;
    updated: string;
    budget_cents: string | null;
    budget_type: string | null;
    variant: string;
    responses: string;
  }>(
    `SELECT id, status, to_char(opted_in_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS opted,
            to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS updated,
            budget_cents::text, budget_type, variant::text, responses::text
       FROM opt_ins WHERE hub_id = 'hub_json' ORDER BY updated_at, id LIMIT $1`,
    [limit],
  );
  const playbook = JSON.stringify({ id: 'pb_1', name: 'Spring \\ sale ', solutions: ['meta', 'google_ads'] });
  // The workspace's fields are jsonb text (PostgreSQL's spacing), as the catalog keeps them.
  const { rows: ws } = await t.db.pool.query<{ fields: string }>(`SELECT fields::text FROM workspaces WHERE id = 'ws_1'`);
  const workspace = `{"id":"ws_1","name":"Workspace ws_1","fields":${ws[0]!.fields}}`;
  const ms = (text: string) => `${text.slice(0, 23)}Z`;
  return rows.map(
    (r) =>
      `{"id":${JSON.stringify(r.id)},"playbook":${playbook},"workspace":${workspace},"status":${JSON.stringify(r.status)},` +
      `"optedInAt":"${ms(r.opted)}","updatedAt":"${ms(r.updated)}","budgetCents":${r.budget_cents ?? 'null'},` +
      `"budgetType":${r.budget_type === null ? 'null' : JSON.stringify(r.budget_type)},"variant":${r.variant},"responses":${r.responses}}`,
  );
}

test('a page is, byte for byte, the JSON of its rows: escapes, milliseconds cut, numbers and nulls', async () => {
  const response = await t.app.fastify.inject({
    method: 'GET',
    url: '/v1/hub/playbook-opt-ins?limit=10',
    headers: { authorization: `Bearer ${key}` },
  });
  assert.equal(response.statusCode, 200);
  const rows = await expectedPage(10);
  assert.equal(rows.length, awkwardIds.length);
  assert.equal(response.body, `{"data":[${rows.join(',')}],"nextCursor":null}`);
  // And it is JSON whose values are the stored ones.
  const data = (response.json() as { data: { id: string; updatedAt: string; optedInAt: string }[] }).data;
  assert.deepEqual(data.map((r) => r.id).sort(), [...awkwardIds].sort());
  const first = data.find((r) => r.id === awkwardIds[0])!;
  assert.equal(first.optedInAt, '2026-03-01T05:06:07.999Z');
  assert.equal(first.updatedAt, '2026-04-01T23:59:59.999Z');
});

test('paging through awkward ids: every row once, the cursor keeps the microseconds', async () => {
  const expected = await expectedPage(10);
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const path: string = `/v1/hub/playbook-opt-ins?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const response = await t.app.fastify.inject({ method: 'GET', url: path, headers: { authorization: `Bearer ${key}` } });
    assert.equal(response.statusCode, 200);
    const body = response.body;
    const page = JSON.parse(body) as { data: unknown[]; nextCursor: string | null };
    // Each page's text is its rows' expected text.
    const from = seen.length;
    assert.equal(
      body,
      `{"data":[${expected.slice(from, from + page.data.length).join(',')}],"nextCursor":${JSON.stringify(page.nextCursor)}}`,
    );
    for (const row of page.data) seen.push((row as { id: string }).id);
    // The same page asked again with its ETag: 304.
    const again = await t.app.fastify.inject({
      method: 'GET',
      url: path,
      headers: { authorization: `Bearer ${key}`, 'if-none-match': response.headers.etag as string },
    });
    assert.equal(again.statusCode, 304);
    cursor = page.nextCursor;
  } while (cursor !== null);
  assert.equal(seen.length, awkwardIds.length);
  assert.equal(new Set(seen).size, awkwardIds.length);
});
