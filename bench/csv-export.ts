// `npm run bench:csv`: the web admin's opt-in CSV export of the big bench hub (1,000,000 opt-ins
// in hubops_bench, built or reused by bench/dataset.ts), measured through HTTP with a real
// session: time to first byte, total time, size, rows, and the server's peak RSS. The server is
// the real entry (src/main.ts) started with `npm start`'s Node flags (START_FLAGS). Not part of
// npm test.
import http from 'node:http';
import { connect } from '../src/db/database.ts';
import { createUser } from '../src/domain/tenancy/tenancy.service.ts';
import { BIG_HUB, DEFAULT_SPEC, ensureDataset } from './dataset.ts';
import { START_FLAGS, startServer, type RunningServer } from './server.ts';

const serverUrl = process.env.DATABASE_URL?.trim() || 'postgres://postgres@127.0.0.1:5432/postgres';
const say = (line: string) => process.stderr.write(`${line}\n`);
const EMAIL = 'csv-bench@hubops.dev';
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
  let bytes = 0;
  let records = 0;
  let inQuotes = false;
  const status = await new Promise<number>((resolve, reject) => {
    const req = http.request(`${server.baseUrl}/app/hubs/${BIG_HUB}/opt-ins.csv`, { headers: { cookie: session } }, (res) => {
      res.on('data', (chunk: Buffer) => {
        if (!firstByte) firstByte = performance.now() - t0;
        bytes += chunk.length;
        // Count records: line feeds outside quoted fields.
        for (let i = 0; i < chunk.length; i++) {
          const c = chunk[i];
          if (c === 0x22) inQuotes = !inQuotes;
          else if (c === 0x0a && !inQuotes && ++records === 2) firstRow = performance.now() - t0;
        }
      });
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
  const total = performance.now() - t0;
  clearInterval(sampler);
  const after = await server.memory();
  if (status !== 200) throw new Error(`CSV export answered ${status}`);

  const mb = (n: number) => `${n.toFixed(0)} MB`;
  const line = (label: string, value: string, target = '') => say(`${label.padEnd(34)} ${value.padStart(12)}  ${target}`);
  say('');
  say(`CSV export of ${BIG_HUB} (${new Date().toISOString()})`);
  line('rows (excluding the header)', (records - 1).toLocaleString('en-US'));
  line('size', `${(bytes / 1e6).toFixed(1)} MB`);
  line('time to first byte', `${firstByte.toFixed(0)} ms`, `target < 1000 ms ${firstByte < 1000 ? '✓' : '✗'}`);
  line('time to the first data row', `${firstRow.toFixed(0)} ms`, `target < 1000 ms ${firstRow < 1000 ? '✓' : '✗'}`);
  line('total time', `${(total / 1000).toFixed(1)} s`);
  line('throughput', `${Math.round((records - 1) / (total / 1000)).toLocaleString('en-US')} rows/s`);
  line('server RSS before the export', mb(before.currentMB));
  line('server RSS peak (VmHWM, whole life)', mb(after.peakMB), `target < 300 MB ${after.peakMB < 300 ? '✓' : '✗'}`);
  line('server RSS peak sampled during it', mb(sampledPeak));
} finally {
  await server.stop();
}
