// CPU time of the three parties in a run (PostgreSQL backends of the bench database, the
// server, the benchmark process with its load generator), and of the whole machine, from /proc.
// On a 2-core machine they all share the same cores, so "who burns how much per request"
// explains the throughput figures better than the figures alone, and "how much did everything
// else burn meanwhile" says whether a figure can be trusted (other work on the machine — a test
// suite, say — takes cores from the benchmark). Works only when PostgreSQL runs on this machine;
// otherwise it reports nothing.
import { readdir, readFile } from 'node:fs/promises';
import pg from 'pg';

const TICKS_PER_SECOND = 100; // USER_HZ, 100 on every Linux we run on

interface ProcStat {
  pid: number;
  comm: string;
  ppid: number;
  /** utime + stime, seconds. */
  own: number;
}

async function readStat(pid: number): Promise<ProcStat | undefined> {
  try {
    const text = await readFile(`/proc/${pid}/stat`, 'utf8');
    // The command name is in parentheses and may itself contain spaces or parentheses.
    const close = text.lastIndexOf(')');
    const comm = text.slice(text.indexOf('(') + 1, close);
    const f = text
      .slice(close + 2)
      .split(' ')
      .map(Number);
    // f[0] is field 3 (state); field n is f[n - 3].
    return { pid, comm, ppid: f[1]!, own: (f[11]! + f[12]!) / TICKS_PER_SECOND };
  } catch {
    return undefined; // exited meanwhile, or not ours to read
  }
}

export interface CpuTimes {
  /**
   * PostgreSQL backends connected to the bench database, by pid, compared pid by pid: a backend
   * that exits between two samples (an idle pooled connection closing) must not lower the total.
   */
  postgres: Map<number, number>;
  server: number;
  /** This process: the load generator (autocannon) or the bare pg loops. */
  bench: number;
  /** Busy time of every CPU of the machine. */
  machine: number;
}

async function machineBusy(): Promise<number> {
  const [, ...fields] = (await readFile('/proc/stat', 'utf8')).split('\n', 1)[0]!.trim().split(/\s+/);
  const [user, nice, system, , , irq, softirq, steal] = fields.map(Number);
  return (user! + nice! + system! + irq! + softirq! + steal!) / TICKS_PER_SECOND;
}

async function cmdline(pid: number): Promise<string> {
  return readFile(`/proc/${pid}/cmdline`, 'utf8').then(
    (text) => text.replaceAll('\0', ' '),
    () => '',
  );
}

/**
 * A process's CPU time in seconds at nanosecond resolution: the run time of each of its threads
 * (its main thread, the libuv pool compressing and hashing, the GC) from /proc/<pid>/task/<tid>/schedstat.
 * The server's per-request figures are fractions of a millisecond, below /proc/<pid>/stat's 10 ms
 * ticks. Undefined where the kernel does not keep schedstat.
 */
export async function preciseCpu(pid: number): Promise<number | undefined> {
  try {
    const tasks = await readdir(`/proc/${pid}/task`);
    const times = await Promise.all(
      tasks.map((t) =>
        readFile(`/proc/${pid}/task/${t}/schedstat`, 'utf8').then(
          (text) => Number(text.split(' ')[0]),
          () => 0,
        ),
      ),
    );
    return times.reduce((sum, ns) => sum + ns, 0) / 1e9;
  } catch {
    return undefined;
  }
}

export type CpuProbe = (serverPid?: number) => Promise<CpuTimes>;

/**
 * A probe for the PostgreSQL behind `databaseUrl`, or undefined when it is not on this machine.
 * Backends only count while alive: take the second sample before closing a pool.
 */
export async function cpuProbe(databaseUrl: string): Promise<CpuProbe | undefined> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const backendPid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const backend = await readStat(backendPid);
    if (!backend?.comm.startsWith('postgres')) return undefined;
    const postmaster = await readStat(backend.ppid);
    if (!postmaster?.comm.startsWith('postgres')) return undefined;
    const postmasterPid = postmaster.pid;
    // A backend's process title: "postgres: [cluster: ]user database host(port) state".
    const database = new URL(databaseUrl).pathname.slice(1);
    const ours = new RegExp(`^postgres: (?:\\S+: )?\\S+ ${database.replace(/\W/g, '\\$&')} `);
    return async (serverPid) => {
      const pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name)).map(Number);
      const stats = (await Promise.all(pids.map(readStat))).filter((s): s is ProcStat => s !== undefined);
      const postgres = new Map<number, number>();
      let server = 0;
      for (const s of stats) {
        if (s.pid === serverPid) server += (await preciseCpu(s.pid)) ?? s.own;
        else if (s.ppid === postmasterPid && ours.test(await cmdline(s.pid))) postgres.set(s.pid, s.own);
      }
      const self = process.cpuUsage();
      return { postgres, server, bench: (self.user + self.system) / 1e6, machine: await machineBusy() };
    };
  } finally {
    await client.end();
  }
}

interface Parties {
  postgres: number;
  server: number;
  bench: number;
}

export interface CpuShare {
  /** Cores used on average during the run. */
  cores: Parties;
  /** CPU milliseconds per completed request. */
  msPerRequest: Parties;
  /**
   * Cores everything else on the machine used meanwhile: noise, ideally ~0. It includes
   * PostgreSQL's background processes and parallel query workers (short-lived, not attributable),
   * so it is only meaningful for work that runs no parallel query.
   */
  otherCores: number;
}

/** CPU seconds between two samples, pid by pid (a process new in `after` counts from zero). */
function grown(before: Map<number, number>, after: Map<number, number>): number {
  let sum = 0;
  for (const [pid, cpu] of after) sum += cpu - (before.get(pid) ?? 0);
  return sum;
}

export function cpuShare(before: CpuTimes, after: CpuTimes, seconds: number, requests: number): CpuShare {
  const used: Parties = {
    postgres: grown(before.postgres, after.postgres),
    server: after.server - before.server,
    bench: after.bench - before.bench,
  };
  const per = (f: (k: keyof Parties) => number): Parties => ({ postgres: f('postgres'), server: f('server'), bench: f('bench') });
  return {
    cores: per((k) => used[k] / seconds),
    msPerRequest: per((k) => (used[k] * 1000) / Math.max(1, requests)),
    otherCores: Math.max(0, after.machine - before.machine - used.postgres - used.server - used.bench) / seconds,
  };
}
