// CPU per source row of the Meta wire alone: the real client (this process) reading the same
// backfill as bench/sync.ts (90 days in 32-day report runs per account) from the sandbox (its own
// process, as in bench/sync.ts), with no engine and no database. Prints nanoseconds of CPU per row
// on each side, user and system, after a warm-up pass. Not part of npm test.
//
//   node bench/meta-wire.ts            ACCOUNTS=2 AD_SETS=100 node bench/meta-wire.ts
//   SANDBOX_PROF=/tmp/prof node --cpu-prof bench/meta-wire.ts   (profiles both sides)
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { createMetaClient } from '../src/integrations/meta/client.ts';
import { SPEND_BACKFILL_DAYS } from '../src/policy.ts';

const ACCOUNTS = Number(process.env.ACCOUNTS ?? 2);
const AD_SETS = Number(process.env.AD_SETS ?? 100);
const profile = process.env.SANDBOX_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.SANDBOX_PROF}`] : [];
const sandbox = spawn(
  process.execPath,
  // The accounts bench/sync.ts syncs.
  [
    ...profile,
    path.join(import.meta.dirname, 'sandbox-process.ts'),
    JSON.stringify({ platform: 'meta', first: 0, count: ACCOUNTS, adSets: AD_SETS, workspaces: 50 }),
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
try {
  const [line] = (await once(createInterface({ input: sandbox.stdout! }), 'line')) as [string];
  const { url, credentials } = JSON.parse(line) as { url: string; credentials: { secret: string; externalIds: string[] }[] };
  const token = credentials[0]!.secret;
  const accounts = credentials[0]!.externalIds.map((id) => ({ id }));
  /** The sandbox's user and system CPU so far, in microseconds (/proc ticks are 10 ms). */
  const sandboxCpu = () => {
    const fields = readFileSync(`/proc/${sandbox.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return { user: Number(fields[11]) * 10_000, system: Number(fields[12]) * 10_000 };
  };
  const meta = createMetaClient({ graphUrl: url });
  const addDays = (date: string, days: number) => new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
  const today = new Date().toISOString().slice(0, 10);

  async function readAll(): Promise<number> {
    let rows = 0;
    for (const a of accounts) {
      const account = await meta.describeAccount({ secret: token }, { externalId: a.id, accessVia: null });
      for (let since = addDays(today, -SPEND_BACKFILL_DAYS - 1); since <= today; since = addDays(since, 32)) {
        const until = addDays(since, 31) < today ? addDays(since, 31) : today;
        for await (const batch of meta.readSpend({ secret: token }, account, { since, until })) rows += batch.length;
      }
    }
    return rows;
  }

  await readAll();
  const client0 = process.cpuUsage();
  const sandbox0 = sandboxCpu();
  const started = performance.now();
  const rows = await readAll();
  const seconds = (performance.now() - started) / 1000;
  const client = process.cpuUsage(client0);
  const sandbox1 = sandboxCpu();
  const ns = (us: number) => Math.round((us * 1000) / rows).toLocaleString('en-US');
  console.log(
    `${rows.toLocaleString('en-US')} rows in ${seconds.toFixed(1)} s (${Math.round(rows / seconds).toLocaleString('en-US')} rows/s)`,
  );
  console.log(`client  CPU per row: ${ns(client.user)} ns user + ${ns(client.system)} ns system`);
  console.log(`sandbox CPU per row: ${ns(sandbox1.user - sandbox0.user)} ns user + ${ns(sandbox1.system - sandbox0.system)} ns system`);
} finally {
  sandbox.kill('SIGTERM');
}
