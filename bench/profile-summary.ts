// Summarises a V8 CPU profile (node --cpu-prof; `BENCH_SERVER_FLAGS="--cpu-prof --cpu-prof-dir=DIR"
// npm run bench` writes one per server process): the functions with the most self time, and the
// time by where the code lives (the app's src/, pg, Fastify, Node's internals, GC, idle).
//
//   node bench/profile-summary.ts DIR/CPU.….cpuprofile [--top 25] [--last S]
//
// `--last S`: only the profile's last S seconds (leaves out the start-up and warm-up before a load).
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const { values: args, positionals } = parseArgs({
  options: { top: { type: 'string', default: '25' }, last: { type: 'string' } },
  allowPositionals: true,
});
const file = positionals[0];
if (!file) throw new Error('usage: node bench/profile-summary.ts FILE.cpuprofile [--top N]');
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const selfUs = new Map<number, number>();
const fromUs = args.last === undefined ? -Infinity : profile.endTime - Number(args.last) * 1e6;
let at = profile.startTime;
for (let i = 0; i < profile.samples.length; i++) {
  at += profile.timeDeltas[i] ?? 0;
  if (at < fromUs) continue;
  const id = profile.samples[i]!;
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i + 1] ?? 0));
}

const shortUrl = (url: string) =>
  url
    .replace(/^file:\/\/.*?\/node_modules\//, '')
    .replace(/^file:\/\/.*?\/(src|bench)\//, '$1/')
    .replace(/^node:/, 'node:');
function area(frame: ProfileNode['callFrame']): string {
  const { url, functionName } = frame;
  if (functionName === '(garbage collector)') return 'GC';
  if (functionName === '(idle)') return 'idle';
  if (functionName === '(program)') return '(program: native, not attributed)';
  if (url.includes('/src/')) return 'app (src/)';
  if (url.includes('/node_modules/pg') || url.includes('/node_modules/pg-protocol')) return 'pg, pg-protocol';
  if (
    url.includes('/node_modules/fastify') ||
    url.includes('/node_modules/@fastify') ||
    url.includes('find-my-way') ||
    url.includes('light-my-request')
  )
    return 'fastify';
  if (url.includes('/node_modules/')) return 'other npm packages';
  if (url.startsWith('node:') || url === '') return 'node internals and natives';
  return 'other';
}

const functions = new Map<string, number>();
const areas = new Map<string, number>();
let total = 0;
let idle = 0;
for (const [id, us] of selfUs) {
  const frame = byId.get(id)!.callFrame;
  const name = `${frame.functionName || '(anonymous)'} ${shortUrl(frame.url)}${frame.url ? `:${frame.lineNumber + 1}` : ''}`;
  functions.set(name, (functions.get(name) ?? 0) + us);
  const a = area(frame);
  areas.set(a, (areas.get(a) ?? 0) + us);
  total += us;
  if (a === 'idle') idle += us;
}
const busy = total - idle;
const pct = (us: number) => `${((us / busy) * 100).toFixed(1).padStart(5)} %`;
const msText = (us: number) => `${(us / 1000).toFixed(0).padStart(7)} ms`;
const out: string[] = [
  `${file}: ${(total / 1e6).toFixed(1)} s profiled, ${(busy / 1e6).toFixed(1)} s busy (shares below are of busy time)`,
  '',
  'by area:',
  ...[...areas]
    .filter(([a]) => a !== 'idle')
    .sort((a, b) => b[1] - a[1])
    .map(([a, us]) => `  ${pct(us)} ${msText(us)}  ${a}`),
  '',
  `top ${args.top} functions by self time:`,
  ...[...functions]
    .filter(([name]) => !name.startsWith('(idle)'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, Number(args.top))
    .map(([name, us]) => `  ${pct(us)} ${msText(us)}  ${name}`),
];
process.stdout.write(`${out.join('\n')}\n`);
