// `npm run bench:compression`: which compression level per coding. Builds the Hub API's real
// bodies on a generated hub (10,000 workspaces with custom fields, 40 playbooks, 100,000 opt-ins,
// spend for every workspace) through the real app — a 500-row /playbook-opt-ins page, the
// 10,000-workspace /spend-by-workspace report, the Hub API's OpenAPI document — and prints, per
// coding and level, the compressed size, the ratio and the CPU time per body (one thread, zlib's
// synchronous functions, median of RUNS). Then the full pull (500-row pages following the cursor,
// over HTTP, the app's levels from src/policy.ts) per Accept-Encoding: rows/s and bytes on the wire.
// The machine's load shifts rows/s: compare a coding with the identity pull of the same run.
// Not part of npm test.
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { connect } from '../src/db/database.ts';
import { migrate } from '../src/db/migrate.ts';
import { createKey } from '../src/domain/api-keys/api-key.service.ts';
import { freePort } from '../src/platform/net.ts';
import { BROTLI_LEVEL, GZIP_LEVEL, ZSTD_LEVEL } from '../src/policy.ts';
import { OFFERED_CODINGS } from '../src/surfaces/shared/compression.ts';
import { UnlimitedRateLimiter } from './unlimited-limiter.ts';
import { scratchDatabase } from './scratch-database.ts';

const DATABASE = 'hubops_bench_compression';
const HUB = 'hub_cmp';
const WORKSPACES = 10_000;
const PLAYBOOKS = 40;
const OPT_INS = 100_000;
const RUNS = 15;
const PULL_ROUNDS = 4;
const LEVELS = { gzip: [1, 4, 6], br: [1, 4, 5, 6], zstd: [1, 3] } as const;
const say = (line: string) => process.stdout.write(`${line}\n`);

const scratch = await scratchDatabase(DATABASE);
const db = connect(scratch.url, { max: 10, readTimeoutMs: 0 });
const dataDir = await mkdtemp(path.join(tmpdir(), 'hubops-bench-compression-'));

try {
  await migrate(db.pool);
  await generate();
  const { key } = await createKey(db, { hubId: HUB, name: 'compression bench', scope: 'read' });
  const port = await freePort();
  const config = loadConfig({
    DATABASE_URL: scratch.url,
    LOG_LEVEL: 'silent',
    BASE_URL: `http://127.0.0.1:${port}`,
    PORT: String(port),
    DATA_DIR: dataDir,
  });
  const app = await buildApp({ config, db, limiter: new UnlimitedRateLimiter(), logger: false, publisher: false });
  await app.fastify.listen({ port, host: '127.0.0.1' });
  try {
    const get = async (url: string) => {
      const response = await app.fastify.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key}` } });
      if (response.statusCode !== 200) throw new Error(`${url}: ${response.statusCode} ${response.body.slice(0, 200)}`);
      return response.rawPayload;
    };
    const bodies = {
      'opt-ins page (500 rows)': await get('/v1/hub/playbook-opt-ins?limit=500'),
      'spend report (10,000 workspaces)': await get('/v1/hub/spend-by-workspace?period=last_30_days'),
      'Hub API OpenAPI document': await get('/v1/hub/openapi.json'),
    };
    say(
      `zstd in this Node (${process.version}): ${OFFERED_CODINGS.includes('zstd') ? 'yes' : 'no'}; ${RUNS} runs per cell, median CPU ms (one thread)\n`,
    );
    say('| body | identity bytes | coding | level | compressed bytes | ratio | CPU ms |');
    say('| --- | ---: | --- | ---: | ---: | ---: | ---: |');
    for (const [name, body] of Object.entries(bodies)) {
      for (const [coding, levels] of Object.entries(LEVELS)) {
        if (!OFFERED_CODINGS.includes(coding as 'gzip')) continue;
        for (const level of levels) {
          const { bytes, ms } = measure(body, coding as keyof typeof LEVELS, level);
          say(
            `| ${name} | ${body.length.toLocaleString('en-US')} | ${coding} | ${level} | ${bytes.toLocaleString('en-US')} | ${(body.length / bytes).toFixed(1)} | ${ms.toFixed(2)} |`,
          );
        }
      }
    }

    say(
      `\nFull pull of ${OPT_INS.toLocaleString('en-US')} opt-ins over HTTP, 500-row pages (levels: gzip ${GZIP_LEVEL}, br ${BROTLI_LEVEL}, zstd ${ZSTD_LEVEL}); best of ${PULL_ROUNDS}, the codings interleaved in each round\n`,
    );
    const codings = ['identity', ...OFFERED_CODINGS];
    const best = new Map(codings.map((coding) => [coding, { rowsPerSecond: 0, wire: 0 }]));
    for (let round = 0; round < PULL_ROUNDS; round++) {
      for (const coding of codings) {
        const pull = await fullPull(`http://127.0.0.1:${port}`, key, coding);
        if (pull.rows !== OPT_INS) throw new Error(`pulled ${pull.rows} rows, expected ${OPT_INS}`);
        if (pull.rowsPerSecond > best.get(coding)!.rowsPerSecond) best.set(coding, pull);
      }
    }
    say('| Accept-Encoding | rows/s | vs identity | bytes on the wire | smaller than identity |');
    say('| --- | ---: | ---: | ---: | ---: |');
    const identity = best.get('identity')!;
    for (const [coding, pull] of best) {
      say(
        `| ${coding} | ${Math.round(pull.rowsPerSecond).toLocaleString('en-US')} | ${Math.round((100 * pull.rowsPerSecond) / identity.rowsPerSecond)} % | ${pull.wire.toLocaleString('en-US')} | ${(identity.wire / pull.wire).toFixed(1)}× |`,
      );
    }
  } finally {
    await app.close();
  }
} finally {
  await db.close();
  await scratch.drop();
  await rm(dataDir, { recursive: true, force: true });
}

function compressSync(body: Buffer, coding: keyof typeof LEVELS, level: number): Buffer {
  if (coding === 'gzip') return zlib.gzipSync(body, { level });
  if (coding === 'br') {
    return zlib.brotliCompressSync(body, {
      params: {
        [zlib.constants.BROTLI_PARAM_QUALITY]: level,
        [zlib.constants.BROTLI_PARAM_MODE]: zlib.constants.BROTLI_MODE_TEXT,
        [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length,
      },
    });
  }
  return zlib.zstdCompressSync(body, { params: { [zlib.constants.ZSTD_c_compressionLevel]: level }, pledgedSrcSize: body.length });
}

function measure(body: Buffer, coding: keyof typeof LEVELS, level: number): { bytes: number; ms: number } {
  compressSync(body, coding, level);
  const times: number[] = [];
  let bytes = 0;
  for (let run = 0; run < RUNS; run++) {
    const started = process.cpuUsage();
    bytes = compressSync(body, coding, level).length;
    const used = process.cpuUsage(started);
    times.push((used.user + used.system) / 1000);
  }
  times.sort((a, b) => a - b);
  return { bytes, ms: times[Math.floor(times.length / 2)]! };
}

/** Every page of the opt-in list, following nextCursor; the bytes as they came over the socket. */
async function fullPull(baseUrl: string, key: string, coding: string): Promise<{ rows: number; wire: number; rowsPerSecond: number }> {
  const started = performance.now();
  let rows = 0;
  let wire = 0;
  let cursor: string | null = null;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    do {
      const url = `${baseUrl}/v1/hub/playbook-opt-ins?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const { encoding, body } = await fetchRaw(
        url,
        { authorization: `Bearer ${key}`, ...(coding === 'identity' ? {} : { 'accept-encoding': coding }) },
        agent,
      );
      wire += body.length;
      const page = JSON.parse(decode(body, encoding).toString('utf8')) as { data: unknown[]; nextCursor: string | null };
      rows += page.data.length;
      cursor = page.nextCursor;
    } while (cursor);
  } finally {
    agent.destroy();
  }
  return { rows, wire, rowsPerSecond: rows / ((performance.now() - started) / 1000) };
}

function fetchRaw(
  url: string,
  headers: Record<string, string>,
  agent: http.Agent,
): Promise<{ encoding: string | undefined; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers, agent }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () => {
          if (response.statusCode !== 200) return reject(new Error(`${url}: ${response.statusCode}`));
          resolve({ encoding: response.headers['content-encoding'], body: Buffer.concat(chunks) });
        });
      })
      .on('error', reject);
  });
}

function decode(body: Buffer, encoding: string | undefined): Buffer {
  if (encoding === 'gzip') return zlib.gunzipSync(body);
  if (encoding === 'br') return zlib.brotliDecompressSync(body);
  if (encoding === 'zstd') return zlib.zstdDecompressSync(body);
  return body;
}

/** The hub, set-based (INSERT … SELECT generate_series), shaped like bench/dataset.ts's big hub. */
async function generate(): Promise<void> {
  const q = (text: string) => db.pool.query(text);
  await q(`INSERT INTO accounts (id, name, plan, api_access) VALUES ('acc_cmp', 'Compression bench', 'partner', true)`);
  await q(`INSERT INTO hubs (id, account_id, name) VALUES ('${HUB}', 'acc_cmp', 'Compression Hub')`);
  await q(
    `INSERT INTO workspace_fields (hub_id, key, label, archived) VALUES ('${HUB}', 'region', 'Region', false), ('${HUB}', 'store_code', 'Store code', false), ('${HUB}', 'manager', 'Manager', false)`,
  );
  await q(`INSERT INTO workspaces (id, hub_id, name, fields)
    SELECT 'ws_' || lpad(i::text, 5, '0'), '${HUB}', 'Location ' || i || ' ' || (ARRAY['Downtown','Uptown','Mall','Airport','Station'])[1 + i % 5],
           jsonb_build_object('region', (ARRAY['North','South','East','West','Central'])[1 + i % 5], 'store_code', 1000 + i, 'manager', 'Manager ' || (i % 997))
      FROM generate_series(1, ${WORKSPACES}) AS i`);
  await q(`INSERT INTO playbooks (id, hub_id, name, solutions)
    SELECT 'pb_' || lpad(i::text, 3, '0'), '${HUB}', 'Playbook ' || i || ' — ' || (ARRAY['Spring sale','Summer launch','Back to school','Holiday'])[1 + i % 4],
           CASE WHEN i % 2 = 0 THEN ARRAY['meta','google_ads'] ELSE ARRAY['meta'] END
      FROM generate_series(1, ${PLAYBOOKS}) AS i`);
  await q(`INSERT INTO opt_ins (id, hub_id, playbook_id, workspace_id, status, opted_in_at, updated_at, budget_cents, budget_type, variant, responses)
    SELECT 'oi_' || lpad(i::text, 7, '0'), '${HUB}', 'pb_' || lpad((1 + i % ${PLAYBOOKS})::text, 3, '0'), 'ws_' || lpad((1 + (i * 7919) % ${WORKSPACES})::text, 5, '0'),
           (ARRAY['active','completed','cancelled','paused','questions_only','in_review'])[1 + i % 6],
           date_trunc('milliseconds', now() - interval '730 days' * random()), date_trunc('milliseconds', now() - interval '30 days' * random()),
           CASE WHEN i % 6 = 4 THEN NULL ELSE (50 + i % 4950) * 100 END,
           CASE WHEN i % 6 = 4 THEN NULL WHEN i % 10 < 7 THEN 'lifetime' ELSE 'daily' END,
           CASE WHEN i % 3 = 0 THEN '{}'::jsonb ELSE jsonb_build_object('audience', (ARRAY['Families','Seniors','Students','Professionals'])[1 + i % 4], 'creative', CASE WHEN i % 2 = 0 THEN 'A' ELSE 'B' END) END,
           CASE WHEN i % 2 = 0 THEN jsonb_build_array(jsonb_build_object('question', 'Store hours?', 'answer', (ARRAY['9-5','8-8','10-6','24/7'])[1 + i % 4]),
                                                      jsonb_build_object('question', 'Promo code to feature?', 'answer', 'SAVE' || (i % 50)))
                ELSE '[]'::jsonb END
      FROM generate_series(1, ${OPT_INS}) AS i`);
  await q(`INSERT INTO ad_accounts (id, hub_id, platform, name, sync_state, last_synced_at)
    SELECT 'ads_' || i, '${HUB}', 'meta', 'Ads ' || i, 'idle', now() - interval '1 hour' FROM generate_series(1, 10) AS i`);
  await q(`INSERT INTO spend (hub_id, ad_account_id, workspace_id, date, spend_cents)
    SELECT '${HUB}', 'ads_' || (1 + w % 10), 'ws_' || lpad(w::text, 5, '0'), (now() at time zone 'utc')::date - d, 100 + (w * 31 + d * 17) % 90000
      FROM generate_series(1, ${WORKSPACES}) AS w, generate_series(0, 44, 3) AS d`);
  await q('ANALYZE');
}
