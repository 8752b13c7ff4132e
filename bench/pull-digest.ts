// `npm run bench:digest`: the byte-identity check of the Hub API's opt-in pages. Starts a server
// (this checkout's src/main.ts, or another checkout's with --app-root) on the bench data set
// (bench/dataset.ts, reused or built), pulls every opt-in with limit=500 and some filtered pages,
// keys rotated, and prints a SHA-256 of each series' ETags and body bytes. Two checkouts that
// answer the same bytes print the same digests: run it on the code before a change to the page
// path and after it (the data set must be the same build: same day, same size).
//
//   npm run bench:digest                                   # this checkout
//   npm run bench:digest -- --app-root /tmp/hubops-before  # another checkout (symlink node_modules into it)
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { connect } from '../src/db/database.ts';
import { createKey } from '../src/domain/api-keys/api-key.service.ts';
import { BIG_HUB, DEFAULT_SPEC, ensureDataset } from './dataset.ts';
import { HubClient, KeyRing } from './http.ts';
import { fullPull, HUB } from './scenarios.ts';
import { startServer } from './server.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const { values: args } = parseArgs({
  options: {
    'app-root': { type: 'string', default: ROOT },
    'opt-ins': { type: 'string', default: String(DEFAULT_SPEC.optIns) },
  },
});
const appRoot = path.resolve(args['app-root']);
const entry = path.join(appRoot, 'src', 'main.ts');
if (!existsSync(entry)) throw new Error(`--app-root ${appRoot}: no src/main.ts there`);
const say = (line: string) => process.stderr.write(`${line}\n`);

const serverUrl = process.env.DATABASE_URL?.trim() || 'postgres://postgres@127.0.0.1:5432/postgres';
const dataset = await ensureDataset(serverUrl, { ...DEFAULT_SPEC, optIns: Number(args['opt-ins']) }, { fresh: false, log: say });
// Enough keys for the per-key limit (120 a minute): ETags do not depend on the key.
const keys: string[] = [];
{
  const db = connect(dataset.url, { max: 2, applicationName: 'hubops-bench-keys' });
  try {
    await db.pool.query(`DELETE FROM api_keys WHERE hub_id = $1 AND name LIKE 'bench digest%'`, [BIG_HUB]);
    for (let i = 0; i < 100; i++) keys.push((await createKey(db, { hubId: BIG_HUB, name: `bench digest ${i}` })).key);
  } finally {
    await db.close();
  }
}

const server = await startServer({ databaseUrl: dataset.url, entry });
const client = new HubClient(server.baseUrl, new KeyRing(keys));
try {
  const since = new Date(dataset.anchor.getTime() - 365 * 86_400_000).toISOString();
  const out: string[] = [`app: ${appRoot}`, `data set: ${dataset.anchor.toISOString()}`];

  say('full pull, limit=500 …');
  const pull = await fullPull(client, 500);
  out.push(`full pull limit=500: ${pull.pages} pages, ${pull.rows} rows, ${pull.digest}`);

  // Pages of other shapes: filters, small and odd limits, the last page, an empty one; each
  // also re-polled with its ETag, which must answer 304 (with the same ETag).
  const playbook = (JSON.parse((await client.getOk(`${HUB}/playbook-opt-ins?limit=1`)).body) as { data: { playbook: { id: string } }[] })
    .data[0]!.playbook.id;
  const shapes = [
    `limit=100&since=${since}`,
    'limit=1',
    'limit=37&status=active',
    `limit=250&playbookId=${encodeURIComponent(playbook)}`,
    `limit=500&status=paused&since=${since}`,
    'limit=500&since=2100-01-01',
    'status=questions_only',
  ];
  for (const shape of shapes) {
    const digest = createHash('sha256');
    let cursor: string | null = null;
    let pages = 0;
    do {
      pages++;
      const pagePath: string = `${HUB}/playbook-opt-ins?${shape}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const response = await client.getOk(pagePath);
      const etag = response.headers.etag ?? '(no etag)';
      digest.update(`${etag}\n${response.headers['content-type']}\n`).update(response.body).update('\n');
      const again = await client.get(pagePath, { headers: { 'if-none-match': etag } });
      digest.update(`${again.status} ${again.headers.etag}\n`);
      cursor = (JSON.parse(response.body) as { nextCursor: string | null }).nextCursor;
    } while (cursor !== null && pages < 20);
    out.push(`${shape}: ${pages} page(s), ${digest.digest('hex')}`);
  }
  process.stdout.write(`${out.join('\n')}\n`);
} finally {
  client.close();
  await server.stop();
}
