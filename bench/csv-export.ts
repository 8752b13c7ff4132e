// `npm run bench:csv`: the opt-in CSV export of the big bench hub (1,000,000 opt-ins in
// hubops_bench, built or reused by bench/dataset.ts), measured through HTTP: the web admin's with
// a real session, then the Hub API's /v1/hub/playbook-opt-ins.csv with a read key (identity, then
// gzip as a spreadsheet's fetch asks for it): time to first byte, total time, size, rows, and the
// server's RSS. The server is
// the real entry (src/main.ts) started with `npm start`'s Node flags (START_FLAGS). Not part of
// npm test.
import http from 'node:http';
import zlib from 'node:zlib';
import { createKey } from '../src/domain/api-keys/api-key.service.ts';
import { connect } from '../src/db/database.ts';
import { createUser } from '../src/domain/tenancy/tenancy.service.ts';
import { BIG_HUB, DEFAULT_SPEC, ensureDataset } from './dataset.ts';
import { START_FLAGS, startServer, type RunningServer } from './server.ts';

const serverUrl = process.env.DATABASE_URL?.trim() || 'postgres://postgres@127.0.0.1:5432/postgres';
const say = (line: string) => process.stderr.write(`${line}\n`);
const EMAIL = 'csv-bench@hubops.dev';
let hubKey = '';
const PASSWORD = 'csv bench password';

const dataset = await ensureDataset(serverUrl, DEFAULT_SPEC, { fresh: false, log: say });
say(dataset.reused ? 'hubops_bench: reusing the data set' : `hubops_bench: built in ${dataset.buildSeconds.toFixed(1)} s`);

// A hub admin of the big hub to sign in as (recreated each run).
{
  const db = connect(dataset.url, { max: 1, applicationName: 'hubops-bench-csv' });
  try {
    const { rows } = await db.pool.query<{ id: string }>('SELECT id FROM users WHERE email = $1', [EMAIL]);
    for (const { id } of rows) {
      await db.pool.query('DELETE FROM web_sessions WHERE user_id = $1', [id]);
      await db.pool.query('DELETE FROM memberships WHERE user_id = $1', [id]);
      await db.pool.query('DELETE FROM users WHERE id = $1', [id]);
    }
    await createUser(db, { email: EMAIL, password: PASSWORD, firstname: 'CSV', lastname: 'Bench', hubId: BIG_HUB, role: 'hub_admin' });
    hubKey = (await createKey(db, { hubId: BIG_HUB, name: 'csv bench', scope: 'read' })).key;
    const count = await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM opt_ins WHERE hub_id = $1', [BIG_HUB]);
    say(`${BIG_HUB}: ${Number(count.rows[0]!.n).toLocaleString('en-US')} opt-ins`);
  } finally {
    await db.close();
  }
}

const server: RunningServer = await startServer({ databaseUrl: dataset.url });
say(`server: ${server.entry} (pid ${server.pid}) with ${START_FLAGS.join(' ') || 'no flags'}`);

function request(
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${server.baseUrl}${path}`, { method: options.method ?? 'GET', headers: options.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}
const cookieOf = (headers: http.IncomingHttpHeaders, name: string) =>
  (headers['set-cookie'] ?? []).map((c) => c.split(';')[0]!).find((c) => c.startsWith(`${name}=`));

try {
  // Sign in like a browser: the sign-in cookie and CSRF token, then the form.
  const form = await request('/app/sign-in');
  const pre = cookieOf(form.headers, 'hubops_signin')!;
  const csrf = /name="csrf" value="([^"]+)"/.exec(form.text)![1]!;
  const signIn = await request('/app/sign-in', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: pre },
    body: new URLSearchParams({ csrf, next: '/app', email: EMAIL, password: PASSWORD }).toString(),
  });
  const session = cookieOf(signIn.headers, 'hubops_app');
  if (signIn.status !== 303 || !session) throw new Error(`sign-in failed: ${signIn.status}`);

  const mb = (n: number) => `${n.toFixed(0)} MB`;
  const line = (label: string, value: string, target = '') => say(`${label.padEnd(38)} ${value.padStart(14)}  ${target}`);

  /** One export read to the end: records counted as they arrive (line feeds outside quotes), RSS sampled every 50 ms. */
  async function measure(label: string, path: string, headers: Record<string, string>): Promise<void> {
    const before = await server.memory();
    let sampledPeak = before.currentMB;
    const sampler = setInterval(
      () =>
        void server.memory().then(
          (m) => {
            sampledPeak = Math.max(sampledPeak, m.currentMB);
          },
          () => {},
        ),
      50,
    );
    const t0 = performance.now();
    let firstByte = 0;
    let firstRow = 0;
    let wireBytes = 0;
    let bytes = 0;
    let records = 0;
    let inQuotes = false;
    const count = (chunk: Buffer) => {
      bytes += chunk.length;
      for (let i = 0; i < chunk.length; i++) {
        const c = chunk[i];
        if (c === 0x22) inQuotes = !inQuotes;
        else if (c === 0x0a && !inQuotes && ++records === 2) firstRow = performance.now() - t0;
      }
    };
    const { status, encoding } = await new Promise<{ status: number; encoding: string }>((resolve, reject) => {
      const req = http.request(`${server.baseUrl}${path}`, { headers }, (res) => {
        const encoding = String(res.headers['content-encoding'] ?? 'identity');
        res.on('data', (chunk: Buffer) => {
          if (!firstByte) firstByte = performance.now() - t0;
          wireBytes += chunk.length;
        });
        const body = encoding === 'gzip' ? res.pipe(zlib.createGunzip()) : res;
        if (body !== res) res.on('error', reject);
        body.on('data', count);
        body.on('end', () => resolve({ status: res.statusCode ?? 0, encoding }));
        body.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    });
    const total = performance.now() - t0;
    clearInterval(sampler);
    const after = await server.memory();
    if (status !== 200) throw new Error(`${label}: answered ${status}`);
    say('');
    say(`${label}: GET ${path} (${new Date().toISOString()})`);
    line('rows (excluding the header)', (records - 1).toLocaleString('en-US'));
    line('size', `${(bytes / 1e6).toFixed(1)} MB`);
    if (encoding !== 'identity') line(`on the wire (${encoding})`, `${(wireBytes / 1e6).toFixed(1)} MB`);
    line('time to first byte', `${firstByte.toFixed(0)} ms`, `target < 1000 ms ${firstByte < 1000 ? '✓' : '✗'}`);
    line('time to the first data row', `${firstRow.toFixed(0)} ms`, `target < 1000 ms ${firstRow < 1000 ? '✓' : '✗'}`);
    line('total time', `${(total / 1000).toFixed(1)} s`);
    line('throughput', `${Math.round((records - 1) / (total / 1000)).toLocaleString('en-US')} rows/s`);
    line('server RSS before the export', mb(before.currentMB));
    line('server RSS peak sampled during it', mb(sampledPeak), `target < 300 MB ${sampledPeak < 300 ? '✓' : '✗'}`);
    line('server RSS peak (VmHWM, whole life)', mb(after.peakMB), `target < 300 MB ${after.peakMB < 300 ? '✓' : '✗'}`);
  }

  const only = process.env.BENCH_CSV_ONLY; // `web` or `hub`: one of the two
  if (only !== 'hub') await measure('web admin CSV', `/app/hubs/${BIG_HUB}/opt-ins.csv`, { cookie: session });
  if (only !== 'web') {
    const auth = { authorization: `Bearer ${hubKey}` };
    await measure('Hub API CSV', '/v1/hub/playbook-opt-ins.csv', auth);
    await measure('Hub API CSV, gzip', '/v1/hub/playbook-opt-ins.csv', { ...auth, 'accept-encoding': 'gzip' });
    // What a spreadsheet's refresh costs when nothing changed: the validator alone.
    const etag = String((await request('/v1/hub/playbook-opt-ins.csv', { method: 'HEAD', headers: auth })).headers.etag);
    const t0 = performance.now();
    const again = await request('/v1/hub/playbook-opt-ins.csv', { headers: { ...auth, 'if-none-match': etag } });
    say('');
    line('Hub API CSV revalidation (304)', `${(performance.now() - t0).toFixed(0)} ms`, `status ${again.status}`);
  }
} finally {
  await server.stop();
}
