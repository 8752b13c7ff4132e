import { readFile } from 'node:fs/promises';

// Telling whether the process that left something behind (a staging directory, a database
// server) still runs, even after its pid was reused: a process is marked `<pid>-<start>`, its
// start time read from /proc, or `t<ms>` where there is no /proc.

/** A process's start time in clock ticks since boot (Linux `/proc/<pid>/stat` field 22). */
async function processStart(pid: number): Promise<string | undefined> {
  try {
    const fields = await readFile(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count from its closing one.
    return fields.slice(fields.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

export function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const startedAt = `t${Date.now() - Math.round(process.uptime() * 1000)}`;

/** This process's mark, `<pid>-<start>`. */
export async function ownProcessMark(): Promise<string> {
  return `${process.pid}-${(await processStart(process.pid)) ?? startedAt}`;
}

const PROCESS_MARK = /^(\d+)-(\w+)$/;

/** Whether the process of a mark still runs: true, false, or undefined (cannot tell). */
export async function processRunning(mark: string): Promise<boolean | undefined> {
  const match = PROCESS_MARK.exec(mark);
  if (!match) return undefined;
  const pid = Number(match[1]);
  const start = match[2]!;
  // Where /proc exists the start time is exact; elsewhere (`t<ms>`) the pid alone decides.
  if (start.startsWith('t')) return pidExists(pid);
  const actual = await processStart(pid);
  if (actual !== undefined) return actual === start;
  // No /proc entry: gone, unless the pid exists but is hidden from us (hidepid) — then unknown.
  return pidExists(pid) ? undefined : false;
}
