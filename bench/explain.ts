// `npm run bench -- --explain`: EXPLAIN (ANALYZE, BUFFERS) of the exact statements behind each
// endpoint. Rather than copying the SQL here (it would drift), the domain functions run as they
// do in the server, on a connection with auto_explain loaded and its output sent to the client
// as NOTICEs. Needs a superuser (LOAD), which the machine's default postgres user is.
import { connect } from '../src/db/database.ts';
import { HubCatalogCache } from '../src/domain/opt-ins/hub-catalog.ts';
import { findOptInPage } from '../src/domain/opt-ins/opt-in.repository.ts';
import { cachedOptInSummary, OptInSummaryCache } from '../src/domain/opt-ins/opt-in.service.ts';
import { parseSince } from '../src/domain/opt-ins/opt-in.ts';
import { SpendReportCache, spendByWorkspace } from '../src/domain/spend/spend.service.ts';
import { systemClock } from '../src/platform/clock.ts';

export async function explainQueries(databaseUrl: string, hubId: string, since: string, write: (text: string) => void): Promise<void> {
  // One connection whose session loads auto_explain (session_preload_libraries, given in the
  // startup packet) and sends each statement's plan back to us as a NOTICE.
  const url = new URL(databaseUrl);
  url.searchParams.set(
    'options',
    [
      'session_preload_libraries=auto_explain',
      'auto_explain.log_min_duration=0',
      'auto_explain.log_analyze=on',
      'auto_explain.log_buffers=on',
      'auto_explain.log_level=notice',
      'client_min_messages=notice',
    ]
      .map((setting) => `-c ${setting}`)
      .join(' '),
  );
  const db = connect(url.toString(), { max: 1, applicationName: 'hubops-bench-explain' });
  const plans: string[] = [];
  db.pool.on('connect', (client) => client.on('notice', (notice) => plans.push(notice.message ?? '')));
  const show = async (title: string, run: () => Promise<unknown>) => {
    plans.length = 0;
    await run();
    write(`\n── ${title} ${'─'.repeat(Math.max(0, 90 - title.length))}\n`);
    for (const plan of plans) write(`${plan}\n`);
  };
  try {
    await db.pool.query('SELECT 1'); // opens the connection before the first measured statement
    // The first page also reads the hub's catalog (its workspaces and playbooks), once.
    const catalogs = new HubCatalogCache();
    await show('/playbook-opt-ins?limit=500 (first page, with the catalog read)', () => findOptInPage(db, catalogs, { hubId, limit: 500 }));
    // The cursor of the row in the middle of the hub's change history.
    const {
      rows: [middle],
    } = await db.pool.query<{ updated_at: string; id: string }>(
      `SELECT to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS updated_at, id
         FROM opt_ins WHERE hub_id = $1 ORDER BY updated_at, id
        OFFSET (SELECT count(*) / 2 FROM opt_ins WHERE hub_id = $1) LIMIT 1`,
      [hubId],
    );
    await show('/playbook-opt-ins?limit=500 (a page in the middle: cursor)', () =>
      findOptInPage(db, catalogs, { hubId, limit: 500, after: { at: middle!.updated_at, id: middle!.id } }),
    );
    await show(`/playbook-opt-ins?limit=100&since=${since}`, () =>
      findOptInPage(db, catalogs, { hubId, since: parseSince(since), limit: 100 }),
    );
    await show('/opt-in-summary (the version, then the figures)', () =>
      cachedOptInSummary(db, hubId, systemClock, new OptInSummaryCache()),
    );
    await show('/spend-by-workspace?period=last_30_days (cache miss: state + sums)', () =>
      spendByWorkspace(db, hubId, 'last_30_days', systemClock, new SpendReportCache()),
    );
  } finally {
    await db.close();
  }
}
