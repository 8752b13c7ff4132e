// The floor under issue 26's "authenticated 304 ≤ 0.25 ms of server CPU": what a 304 costs a
// server on this machine before any hubops code runs. Four minimal servers, each a child process
// started with `npm start`'s Node flags, answer every request 304 with an ETag:
//
//   node          node:http alone
//   node + pg     node:http, after one prepared single-row read (the hub's summary version) on the bench data set
//   fastify       Fastify with no hooks, plugins or logger
//   fastify + pg  Fastify, after the same read
//
// and a client sends each one sequential keep-alive requests (2,000 to warm up, then --requests),
// reading the server's CPU from /proc/<pid>/task/*/schedstat (every thread, kernel time
// included) around the measured requests. hubops' own 304 (npm run bench, section 6) pays these
// and, besides, the key's verdict, the limits, the usage count and its headers.
//
//   node bench/floor-304.ts [--requests 3000] [--rounds 2]
//
// Needs the bench data set (npm run bench builds it) for the "+ pg" servers.
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import Fastify from 'fastify';
import pg from 'pg';
import { preciseCpu } from './cpu.ts';
import { BIG_HUB, benchDatabaseUrl } from './dataset.ts';
import { BENCH_SERVER_URL } from './scratch-database.ts';
import { NODE, START_FLAGS } from './server.ts';

const MODES = ['node', 'node + pg', 'fastify', 'fastify + pg'] as const;
type Mode = (typeof MODES)[number];

const { values: args } = parseArgs({
  options: {
    serve: { type: 'string' },
    requests: { type: 'string', default: '3000' },
    rounds: { type: 'string', default: '2' },
  },
});

const HEADERS = { etag: '"floor"', 'cache-control': 'private, no-cache, must-revalidate' };

/** The child: one of the minimal servers; prints its port. */
async function serve(mode: Mode): Promise<void> {
  const pool = mode.endsWith('+ pg') ? new pg.Pool({ connectionString: benchDatabaseUrl(BENCH_SERVER_URL), max: 2 }) : undefined;
  const read = {
    name: 'floor-summary-version',
    text: 'SELECT h.opt_in_summary_version::text AS version FROM hubs h WHERE h.id = $1',
    values: [BIG_HUB],
  };
  const work = async () => {
    if (pool) await pool.query(read);
  };
  if (mode.startsWith('node')) {
    const server = http.createServer((_request, response) => {
      void work().then(() => {
        response.writeHead(304, HEADERS);
        response.end();
      });
    });
    server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as AddressInfo).port}\n`));
    return;
  }
  const app = Fastify({ logger: false });
  app.get('/', async (_request, reply) => {
    await work();
    return reply.code(304).headers(HEADERS).send();
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  process.stdout.write(`${(app.server.address() as AddressInfo).port}\n`);
}

/** The server's CPU in ms, every thread (schedstat: the kernel must keep it). */
async function serverCpuMs(pid: number): Promise<number> {
  const seconds = await preciseCpu(pid);
  if (seconds === undefined) throw new Error('no /proc/<pid>/task/*/schedstat on this machine');
  return seconds * 1000;
}

/** Server CPU ms per 304 of one fresh server of `mode`. */
async function measure(mode: Mode, requests: number): Promise<number> {
  const child = spawn(NODE, [...START_FLAGS, import.meta.filename, '--serve', mode], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout!.once('data', (data: Buffer) => resolve(Number(data.toString().trim())));
      child.once('exit', (code) => reject(new Error(`${mode} server exited (${code})`)));
    });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const get = () =>
      new Promise<void>((resolve, reject) => {
        http
          .get(
            { host: '127.0.0.1', port, path: '/', agent, headers: { authorization: 'Bearer x', 'if-none-match': '"floor"' } },
            (response) => {
              if (response.statusCode !== 304) reject(new Error(`${mode}: ${response.statusCode}`));
              response.resume().on('end', () => resolve());
            },
          )
          .on('error', reject);
      });
    for (let i = 0; i < 2000; i++) await get();
    const before = await serverCpuMs(child.pid!);
    for (let i = 0; i < requests; i++) await get();
    const perRequest = ((await serverCpuMs(child.pid!)) - before) / requests;
    agent.destroy();
    return perRequest;
  } finally {
    child.kill();
  }
}

if (args.serve !== undefined) {
  if (!MODES.includes(args.serve as Mode)) throw new Error(`--serve must be one of ${MODES.join(', ')}`);
  await serve(args.serve as Mode);
} else {
  const requests = Number(args.requests);
  const results = new Map<Mode, number[]>(MODES.map((m) => [m, []]));
  // Rounds interleave the modes, so that other work on the machine hits each alike; the best is kept.
  for (let round = 0; round < Number(args.rounds); round++) {
    for (const mode of MODES) results.get(mode)!.push(await measure(mode, requests));
  }
  process.stdout.write(`server CPU per 304, ${requests} sequential keep-alive requests, best of ${args.rounds} rounds\n`);
  for (const [mode, runs] of results) {
    process.stdout.write(`${mode.padEnd(14)} ${Math.min(...runs).toFixed(3)} ms   (${runs.map((r) => r.toFixed(3)).join(', ')})\n`);
  }
}
