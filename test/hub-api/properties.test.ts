import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { OPT_IN_STATUSES } from '../../src/domain/opt-ins/opt-in.ts';
import { addDays, utcDate } from '../../src/domain/periods.ts';
import { startApp, readKey, type TestApp } from '../support/app.ts';
import * as fx from '../support/world.ts';

// Invariants over random data: keyset paging never loses or reorders rows even while rows change
// between page requests; the summary agrees with the rows (consistency rule 7); spend totals add up.

let t: TestApp;
let hubCount = 0;

before(async () => {
  t = await startApp({ now: '2026-11-21T12:00:00.000Z' });
  await fx.account(t.db, 'acc');
});
after(async () => {
  await t.close();
});

interface Row {
  id: string;
  status: string;
  optedInAt: string;
  updatedAt: string;
  workspace: { id: string };
}

/** A fresh hub with `workspaces` workspaces and two playbooks; returns its id and a read key. */
async function freshHub(workspaces: number): Promise<{ hubId: string; key: string; workspaceIds: string[]; playbookIds: string[] }> {
  const hubId = `hub${++hubCount}`;
  await fx.hub(t.db, hubId, 'acc');
  const workspaceIds: string[] = [];
  for (let i = 0; i < workspaces; i++) workspaceIds.push(await fx.workspace(t.db, hubId, `${hubId}-w${i}`));
  const playbookIds = [await fx.playbook(t.db, hubId, `${hubId}-p0`), await fx.playbook(t.db, hubId, `${hubId}-p1`, 'Trailing ')];
  return { hubId, key: await readKey(t.db, hubId), workspaceIds, playbookIds };
}

async function pullAll(key: string, query = '', limit = 500): Promise<Row[]> {
  const rows: Row[] = [];
  let cursor: string | null = null;
  do {
    const r = await t.hubGet(`/playbook-opt-ins?limit=${limit}${query}${cursor ? `&cursor=${cursor}` : ''}`, key);
    assert.equal(r.status, 200);
    rows.push(...r.body.data);
    cursor = r.body.nextCursor;
  } while (cursor);
  return rows;
}

const position = (row: Row) => [row.updatedAt, row.id] as const;
const before_ = (a: Row, b: Row) => position(a)[0] < position(b)[0] || (position(a)[0] === position(b)[0] && a.id < b.id);

// Timestamps in the past (the update trigger stamps changed rows with the real current time).
const pastInstant = fc
  .integer({ min: Date.parse('2025-01-01T00:00:00Z'), max: Date.parse('2026-06-01T00:00:00Z') })
  .map((ms) => new Date(ms).toISOString());
const idChars = fc.constantFrom(...'ABCXYZabcxyz019_-');

test('paging with random limits and rows updated between pages returns every row, in order', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.uniqueArray(
        fc.record({
          id: fc.string({ unit: idChars, minLength: 1, maxLength: 6 }),
          updatedAt: pastInstant,
          status: fc.constantFrom(...OPT_IN_STATUSES),
        }),
        { selector: (r) => r.id, maxLength: 40 },
      ),
      fc.integer({ min: 1, max: 12 }),
      fc.array(fc.nat(), { maxLength: 30 }),
      async (specs, limit, updatePicks) => {
        const { hubId, key, workspaceIds, playbookIds } = await freshHub(2);
        await fx.optIns(
          t.db,
          specs.map((s, i) => ({
            id: `${hubId}.${s.id}`,
            hubId,
            playbookId: playbookIds[i % 2]!,
            workspaceId: workspaceIds[i % 2]!,
            status: s.status,
            optedInAt: '2024-12-01T00:00:00Z',
            updatedAt: s.updatedAt,
          })),
        );
        const merged = new Map<string, Row>();
        let previousLast: Row | undefined;
        let cursor: string | null = null;
        const picks = [...updatePicks];
        let pages = 0;
        do {
          const r = await t.hubGet(`/playbook-opt-ins?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`, key);
          assert.equal(r.status, 200);
          const data = r.body.data as Row[];
          assert.ok(data.length <= limit);
          for (let i = 1; i < data.length; i++) assert.ok(before_(data[i - 1]!, data[i]!), 'ordered by (updatedAt, id) within a page');
          if (previousLast && data[0]) assert.ok(before_(previousLast, data[0]), 'pages continue after the cursor');
          previousLast = data[data.length - 1] ?? previousLast;
          for (const row of data) merged.set(row.id, row);
          cursor = r.body.nextCursor;
          // Between pages, change a few rows (status flips): they must show up again later.
          if (cursor && specs.length > 0 && picks.length > 0) {
            const victim = `${hubId}.${specs[picks.shift()! % specs.length]!.id}`;
            await t.db.kysely
              .updateTable('opt_ins')
              .set({ status: 'paused' })
              .where('id', '=', victim)
              .where('status', '!=', 'paused')
              .execute();
          }
          assert.ok(++pages <= specs.length + updatePicks.length + 2, 'paging terminates');
        } while (cursor);
        const truth = await t.db.kysely.selectFrom('opt_ins').select(['id', 'status', 'updated_at']).where('hub_id', '=', hubId).execute();
        assert.deepEqual(
          [...merged.values()].map((r) => [r.id, r.status, r.updatedAt]).sort(),
          truth.map((r) => [r.id, r.status, r.updated_at.toISOString()]).sort(),
          'merging the pages by id equals the hub’s opt-ins',
        );
      },
    ),
    { numRuns: 25 },
  );
});

test('every row embeds its workspace and playbook as they are now, whatever changed since the last page', async () => {
  // The server keeps each hub's workspaces and playbooks ready-made (HubCatalogCache); this is
  // what proves that no change to them (names, field values, archived fields, solutions, new
  // ones) is ever served stale. The truth is read from the tables and built here independently.
  const truth = async (hubId: string) => {
    const archived = new Set(
      (
        await t.db.kysely.selectFrom('workspace_fields').select('key').where('hub_id', '=', hubId).where('archived', '=', true).execute()
      ).map((f) => f.key),
    );
    const workspaces = await t.db.kysely.selectFrom('workspaces').select(['id', 'name', 'fields']).where('hub_id', '=', hubId).execute();
    const playbooks = await t.db.kysely.selectFrom('playbooks').select(['id', 'name', 'solutions']).where('hub_id', '=', hubId).execute();
    return {
      workspaces: new Map(
        workspaces.map((w) => [
          w.id,
          {
            id: w.id,
            name: w.name,
            fields: Object.fromEntries(Object.entries(w.fields as Record<string, unknown>).filter(([k]) => !archived.has(k))),
          },
        ]),
      ),
      playbooks: new Map(playbooks.map((p) => [p.id, { id: p.id, name: p.name, solutions: p.solutions }])),
    };
  };
  const text = fc.string({ unit: fc.constantFrom(...'ab Zé"\\ '), minLength: 1, maxLength: 8 });
  const change = fc.oneof(
    fc.record({ op: fc.constant('rename workspace' as const), pick: fc.nat(), name: text }),
    fc.record({
      op: fc.constant('set field' as const),
      pick: fc.nat(),
      key: fc.constantFrom('region', 'tier'),
      value: fc.oneof(text, fc.integer(), fc.boolean()),
    }),
    fc.record({ op: fc.constant('archive field' as const), key: fc.constantFrom('region', 'tier'), archived: fc.boolean() }),
    fc.record({ op: fc.constant('rename playbook' as const), pick: fc.nat(), name: text }),
    fc.record({
      op: fc.constant('solutions' as const),
      pick: fc.nat(),
      solutions: fc.subarray(['meta', 'google_ads', 'chatgpt_ads', 'organic_social'], { minLength: 1 }),
    }),
    fc.record({ op: fc.constant('new workspace and playbook' as const) }),
  );
  await fc.assert(
    fc.asyncProperty(fc.array(change, { minLength: 1, maxLength: 8 }), fc.integer({ min: 4, max: 9 }), async (changes, limit) => {
      const { hubId, key, workspaceIds, playbookIds } = await freshHub(3);
      await fx.field(t.db, hubId, 'region');
      await fx.field(t.db, hubId, 'tier');
      // Opt-ins pairing the newest workspace with each playbook and the newest playbook with each
      // workspace, so every workspace and playbook appears in some row.
      const addOptIns = () =>
        fx.optIns(
          t.db,
          [
            ...playbookIds.map((playbookId, i) => ({
              playbookId,
              workspaceId: workspaceIds.at(-1)!,
              id: `${hubId}-o${workspaceIds.length}-p${i}`,
            })),
            ...workspaceIds
              .slice(0, -1)
              .map((workspaceId, i) => ({ playbookId: playbookIds.at(-1)!, workspaceId, id: `${hubId}-o${workspaceIds.length}-w${i}` })),
          ].map((o) => ({ ...o, hubId, optedInAt: '2026-11-01T00:00:00Z' })),
        );
      await addOptIns();
      const check = async () => {
        const expected = await truth(hubId);
        const rows = (await pullAll(key, '', limit)) as unknown as { workspace: { id: string }; playbook: { id: string } }[];
        for (const row of rows) {
          assert.deepEqual(row.workspace, expected.workspaces.get(row.workspace.id));
          assert.deepEqual(row.playbook, expected.playbooks.get(row.playbook.id));
        }
      };
      await check(); // the server now holds the hub's catalog
      for (const c of changes) {
        const pick = (ids: string[]) => ids['pick' in c ? c.pick % ids.length : 0]!;
        if (c.op === 'rename workspace')
          await t.db.kysely.updateTable('workspaces').set({ name: c.name }).where('id', '=', pick(workspaceIds)).execute();
        if (c.op === 'set field')
          await t.db.pool.query('UPDATE workspaces SET fields = fields || jsonb_build_object($2::text, $3::jsonb) WHERE id = $1', [
            pick(workspaceIds),
            c.key,
            JSON.stringify(c.value),
          ]);
        if (c.op === 'archive field')
          await t.db.kysely
            .updateTable('workspace_fields')
            .set({ archived: c.archived })
            .where('hub_id', '=', hubId)
            .where('key', '=', c.key)
            .execute();
        if (c.op === 'rename playbook')
          await t.db.kysely.updateTable('playbooks').set({ name: c.name }).where('id', '=', pick(playbookIds)).execute();
        if (c.op === 'solutions')
          await t.db.kysely.updateTable('playbooks').set({ solutions: c.solutions }).where('id', '=', pick(playbookIds)).execute();
        if (c.op === 'new workspace and playbook') {
          workspaceIds.push(await fx.workspace(t.db, hubId, `${hubId}-w${workspaceIds.length}`, { region: 'New' }));
          playbookIds.push(await fx.playbook(t.db, hubId, `${hubId}-p${playbookIds.length}`));
          await addOptIns();
        }
        await check();
      }
    }),
    { numRuns: 25 },
  );
});

test('since is inclusive: exactly the rows with updatedAt >= since', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(pastInstant, { minLength: 1, maxLength: 25 }), fc.nat(), async (instants, pick) => {
      const { hubId, key, workspaceIds, playbookIds } = await freshHub(1);
      await fx.optIns(
        t.db,
        instants.map((at, i) => ({
          id: `${hubId}-o${i}`,
          hubId,
          playbookId: playbookIds[0]!,
          workspaceId: workspaceIds[0]!,
          optedInAt: '2024-12-01T00:00:00Z',
          updatedAt: at,
        })),
      );
      const since = instants[pick % instants.length]!;
      const rows = await pullAll(key, `&since=${since}`);
      const expected = instants
        .map((at, i) => [`${hubId}-o${i}`, at] as const)
        .filter(([, at]) => at >= since)
        .map(([id]) => id)
        .sort();
      assert.deepEqual(rows.map((r) => r.id).sort(), expected);
    }),
    { numRuns: 20 },
  );
});

test('consistency rule 7: the summary agrees with the rows, at any instant including around midnight', async () => {
  const nearMidnight = fc
    .tuple(fc.integer({ min: 0, max: 400 }), fc.constantFrom(0, 1, 999, 86_399_000, 86_399_999))
    .map(([day, ms]) => new Date(Date.parse('2026-01-01T00:00:00Z') + day * 86_400_000 + ms));
  await fc.assert(
    fc.asyncProperty(
      nearMidnight,
      fc.array(
        fc.record({ minutesAgo: fc.integer({ min: -60, max: 45 * 24 * 60 }), status: fc.constantFrom(...OPT_IN_STATUSES), ws: fc.nat(4) }),
        { maxLength: 40 },
      ),
      async (now, specs) => {
        t.clock.set(now);
        const { hubId, key, workspaceIds, playbookIds } = await freshHub(5);
        await fx.optIns(
          t.db,
          specs.map((s, i) => {
            const at = new Date(now.getTime() - s.minutesAgo * 60_000).toISOString();
            return {
              id: `${hubId}-o${i}`,
              hubId,
              playbookId: playbookIds[0]!,
              workspaceId: workspaceIds[s.ws]!,
              status: s.status,
              optedInAt: at,
              updatedAt: at,
            };
          }),
        );
        const summary = await t.hubGet('/opt-in-summary', key);
        assert.equal(summary.status, 200);
        const rows = await pullAll(key);
        assert.equal(summary.body.activeOptIns, rows.filter((r) => r.status === 'active').length);
        const today = utcDate(now);
        for (const p of summary.body.periods) {
          for (const range of [p, p.prior]) {
            const inRange = rows.filter(
              (r) => utcDate(new Date(r.optedInAt)) >= range.startDate && utcDate(new Date(r.optedInAt)) <= range.endDate,
            );
            assert.equal(range.optIns, inRange.length, `${p.period} ${range.startDate}..${range.endDate}`);
            assert.equal(range.workspaces, new Set(inRange.map((r) => r.workspace.id)).size);
          }
        }
        const last7 = summary.body.periods.find((p: { period: string }) => p.period === 'last_7_days');
        assert.deepEqual([last7.startDate, last7.endDate], [addDays(today, -6), today]);
      },
    ),
    { numRuns: 25 },
  );
  t.clock.set('2026-11-21T12:00:00.000Z');
});

test('the summary counts kept by triggers equal a recount after any inserts, updates and deletes', async () => {
  const recount = async (hubId: string) => {
    const { rows } = await t.db.pool.query(
      `SELECT 'day' AS kind, (opted_in_at AT TIME ZONE 'UTC')::date::text AS k, count(*)::int AS n FROM opt_ins WHERE hub_id = $1 GROUP BY 1, 2
       UNION ALL SELECT 'status', status, count(*)::int FROM opt_ins WHERE hub_id = $1 GROUP BY 1, 2`,
      [hubId],
    );
    return rows.map((r) => `${r.kind} ${r.k} ${r.n}`).sort();
  };
  const kept = async (hubId: string) => {
    const { rows } = await t.db.pool.query(
      `SELECT 'day' AS kind, day::text AS k, opt_ins AS n FROM opt_in_day_counts WHERE hub_id = $1 AND opt_ins <> 0
       UNION ALL SELECT 'status', status, opt_ins FROM opt_in_status_counts WHERE hub_id = $1 AND opt_ins <> 0`,
      [hubId],
    );
    return rows.map((r) => `${r.kind} ${r.k} ${r.n}`).sort();
  };
  const day = fc.integer({ min: 0, max: 5 }).map((d) => new Date(Date.parse('2026-11-15T23:59:59.500Z') + d * 43_200_000).toISOString());
  const change = fc.oneof(
    fc.record({ op: fc.constant('status' as const), pick: fc.nat(), status: fc.constantFrom(...OPT_IN_STATUSES) }),
    fc.record({ op: fc.constant('move' as const), pick: fc.nat(), at: day }),
    fc.record({ op: fc.constant('delete' as const), pick: fc.nat() }),
    fc.record({ op: fc.constant('all' as const), status: fc.constantFrom(...OPT_IN_STATUSES) }),
  );
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.record({ at: day, status: fc.constantFrom(...OPT_IN_STATUSES) }), { minLength: 1, maxLength: 12 }),
      fc.array(change, { maxLength: 8 }),
      async (specs, changes) => {
        const { hubId, workspaceIds, playbookIds } = await freshHub(2);
        const ids = specs.map((_, i) => `${hubId}-o${i}`);
        await fx.optIns(
          t.db,
          specs.map((s, i) => ({
            id: ids[i]!,
            hubId,
            playbookId: playbookIds[0]!,
            workspaceId: workspaceIds[i % 2]!,
            status: s.status,
            optedInAt: s.at,
            updatedAt: s.at,
          })),
        );
        for (const c of changes) {
          const id = 'pick' in c ? ids[c.pick % ids.length]! : '';
          if (c.op === 'status') await t.db.pool.query('UPDATE opt_ins SET status = $2 WHERE id = $1', [id, c.status]);
          if (c.op === 'move') await t.db.pool.query('UPDATE opt_ins SET opted_in_at = $2 WHERE id = $1', [id, c.at]);
          if (c.op === 'delete') await t.db.pool.query('DELETE FROM opt_ins WHERE id = $1', [id]);
          if (c.op === 'all') await t.db.pool.query('UPDATE opt_ins SET status = $2 WHERE hub_id = $1', [hubId, c.status]);
        }
        assert.deepEqual(await kept(hubId), await recount(hubId));
      },
    ),
    { numRuns: 30 },
  );
});

test('spend totals add up: totals = Σ workspaces + unattributed, for the current and prior ranges, after any changes', async () => {
  // The report reads running totals kept by triggers in 64-day blocks (migration 009); random
  // days around block boundaries, then updates, date moves and deletes, are checked against a
  // recount of the spend rows themselves.
  const change = fc.oneof(
    fc.record({ op: fc.constant('cents' as const), pick: fc.nat(), cents: fc.integer({ min: 0, max: 1_000_000 }) }),
    fc.record({ op: fc.constant('move' as const), pick: fc.nat(), days: fc.integer({ min: -40, max: 40 }) }),
    fc.record({ op: fc.constant('delete' as const), pick: fc.nat() }),
    fc.record({ op: fc.constant('all' as const), factor: fc.integer({ min: 0, max: 3 }) }),
  );
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 0, max: 130 }),
      fc.array(
        fc.record({
          ws: fc.integer({ min: -1, max: 5 }),
          daysAgo: fc.integer({ min: -1, max: 65 }),
          cents: fc.integer({ min: 0, max: 1_000_000 }),
          account: fc.nat(1),
        }),
        { maxLength: 60 },
      ),
      fc.array(change, { maxLength: 6 }),
      fc.constantFrom('today', 'yesterday', 'last_7_days', 'last_30_days'),
      async (dayOffset, lines, changes, period) => {
        const now = new Date(Date.parse('2026-09-01T12:00:00.000Z') + dayOffset * 86_400_000);
        t.clock.set(now);
        const { hubId, key, workspaceIds } = await freshHub(6);
        const accounts = [
          await fx.adAccount(t.db, hubId, `${hubId}-a0`, 'idle', now.toISOString()),
          await fx.adAccount(t.db, hubId, `${hubId}-a1`, 'idle', new Date(now.getTime() - 3_600_000).toISOString()),
        ];
        await fx.spend(
          t.db,
          lines.map((l) => ({
            hubId,
            adAccountId: accounts[l.account]!,
            workspaceId: l.ws < 0 ? null : workspaceIds[l.ws]!,
            date: addDays(utcDate(now), -l.daysAgo),
            cents: l.cents,
          })),
        );
        const { rows: written } = await t.db.pool.query<{ ctid: string }>('SELECT ctid::text FROM spend WHERE hub_id = $1 ORDER BY ctid', [
          hubId,
        ]);
        for (const c of changes) {
          const row = written.length ? written['pick' in c ? c.pick % written.length : 0]!.ctid : '(0,0)';
          // A move may collide with another line of the same account and workspace: skip it then.
          if (c.op === 'cents')
            await t.db.pool.query('UPDATE spend SET spend_cents = $3 WHERE hub_id = $1 AND ctid = $2::tid', [hubId, row, c.cents]);
          if (c.op === 'move')
            await t.db.pool.query(
              'UPDATE spend s SET date = s.date + $3::int WHERE hub_id = $1 AND ctid = $2::tid AND NOT EXISTS (SELECT 1 FROM spend o WHERE o.ad_account_id = s.ad_account_id AND o.workspace_id IS NOT DISTINCT FROM s.workspace_id AND o.date = s.date + $3::int)',
              [hubId, row, c.days],
            );
          if (c.op === 'delete') await t.db.pool.query('DELETE FROM spend WHERE hub_id = $1 AND ctid = $2::tid', [hubId, row]);
          if (c.op === 'all') await t.db.pool.query('UPDATE spend SET spend_cents = spend_cents * $2 WHERE hub_id = $1', [hubId, c.factor]);
          // Row positions move on update: read them again.
          written.splice(
            0,
            written.length,
            ...(await t.db.pool.query<{ ctid: string }>('SELECT ctid::text FROM spend WHERE hub_id = $1 ORDER BY ctid', [hubId])).rows,
          );
        }
        const { rows } = await t.db.pool.query<{ workspace_id: string | null; date: string; cents: string }>(
          'SELECT workspace_id, date, spend_cents AS cents FROM spend WHERE hub_id = $1',
          [hubId],
        );
        const r = await t.hubGet(`/spend-by-workspace?period=${period}`, key);
        assert.equal(r.status, 200);
        const { current, prior, totals, workspaces } = r.body;
        const sum = (range: { startDate: string; endDate: string }, ws: string | null) =>
          rows
            .filter((x) => x.workspace_id === ws && x.date >= range.startDate && x.date <= range.endDate)
            .reduce((s, x) => s + Number(x.cents), 0);
        assert.equal(workspaces.length, workspaceIds.length, 'every workspace is listed');
        for (const w of workspaces) {
          assert.equal(w.spendCents, sum(current, w.id));
          assert.equal(w.priorSpendCents, sum(prior, w.id));
        }
        for (let i = 1; i < workspaces.length; i++) {
          const [a, b] = [workspaces[i - 1], workspaces[i]];
          assert.ok(a.spendCents > b.spendCents || (a.spendCents === b.spendCents && a.id < b.id), 'ordered by spendCents desc, then id');
        }
        assert.equal(totals.unattributedSpendCents, sum(current, null));
        assert.equal(totals.priorUnattributedSpendCents, sum(prior, null));
        assert.equal(
          totals.spendCents,
          workspaces.reduce((s: number, w: { spendCents: number }) => s + w.spendCents, 0) + totals.unattributedSpendCents,
        );
        assert.equal(
          totals.priorSpendCents,
          workspaces.reduce((s: number, w: { priorSpendCents: number }) => s + w.priorSpendCents, 0) + totals.priorUnattributedSpendCents,
        );
        assert.equal(r.body.asOf, new Date(now.getTime() - 3_600_000).toISOString(), 'asOf is the oldest completed sync');
      },
    ),
    { numRuns: 40 },
  );
  t.clock.set('2026-11-21T12:00:00.000Z');
});
