// `npm run bench:main-api`: what the OAuth token check costs on the main API. Requests/s for
// GET /workspaces with a real access token, side by side in the same run with the same route and
// operation mounted without authentication. Against the machine's PostgreSQL (DATABASE_URL, or
// postgres://postgres@127.0.0.1:5432/postgres), in a database of its own. Not part of npm test.
//
// Both sides run without a rate limiter (the plan limits would otherwise stop a load test after
// 60–300 requests): the figure is the cost of the token check itself.
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import * as oauth from 'oauth4webapi';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { connect } from '../src/db/database.ts';
import { migrate } from '../src/db/migrate.ts';
import { openDiskMediaStore } from '../src/domain/media/media-store.ts';
import { createUser } from '../src/domain/tenancy/tenancy.service.ts';
import { systemClock } from '../src/platform/clock.ts';
import { CursorKey } from '../src/platform/cursor.ts';
import { UnlimitedRateLimiter } from './unlimited-limiter.ts';
import type { Caller } from '../src/domain/caller.ts';
import type { MainContext } from '../src/surfaces/main-api/context.ts';
import { mainOperations } from '../src/surfaces/main-api/operations.ts';
import { mountRest } from '../src/surfaces/rest.ts';
import { InputValidator } from '../src/surfaces/shared/inputs.ts';
import { freePort } from '../src/platform/net.ts';
import type { TestApp } from '../test/support/app.ts';
import { authorize, exchangeCode, registerClient } from '../test/support/oauth-flow.ts';
import { scratchDatabase } from './scratch-database.ts';

const DATABASE = 'hubops_bench_main';
const WORKSPACES = 500;
const CONNECTIONS = 10;
const SECONDS = 10;
const ROUNDS = 2;

const scratch = await scratchDatabase(DATABASE);
const db = connect(scratch.url, { max: 20 });
await migrate(db.pool);

await db.kysely.insertInto('accounts').values({ id: 'acc_bench', name: 'Bench', plan: 'partner', api_access: true }).execute();
await db.kysely.insertInto('hubs').values({ id: 'hub_bench', account_id: 'acc_bench', name: 'Bench Hub' }).execute();
await db.kysely
  .insertInto('workspaces')
  .values(
    Array.from({ length: WORKSPACES }, (_, i) => ({ id: `ws_${String(i).padStart(4, '0')}`, hub_id: 'hub_bench', name: `Location ${i}` })),
  )
  .execute();
const user = await createUser(db, {
  email: 'bench@hubops.dev',
  password: 'bench password 1',
  firstname: 'Bench',
  lastname: 'Mark',
  hubId: 'hub_bench',
  role: 'hub_admin',
});

const unlimited = new UnlimitedRateLimiter();

// Side A: the real app, token checked on every request.
const portA = await freePort();
const config = loadConfig({
  DATABASE_URL: scratch.url,
  LOG_LEVEL: 'silent',
  BASE_URL: `http://127.0.0.1:${portA}`,
  PORT: String(portA),
  DATA_DIR: await mkdtemp(path.join(tmpdir(), 'hubops-bench-')),
});
const app = await buildApp({ config, db, limiter: unlimited, logger: false, publisher: false });
await app.fastify.listen({ port: portA, host: '127.0.0.1' });
const issuer = new URL(config.siteUrl);
const as = await oauth.processDiscoveryResponse(
  issuer,
  await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', [oauth.allowInsecureRequests]: true }),
);
const live = { baseUrl: config.baseUrl, as } as TestApp;
const redirectUri = 'http://127.0.0.1:9/callback';
const client = await registerClient(live, { confidential: false, redirectUri, name: 'Bench' });
const flow = await authorize(live, client, { email: 'bench@hubops.dev', password: 'bench password 1', redirectUri });
const { access_token: token } = await exchangeCode(live, client, flow, redirectUri);

// Side B: the same operations and REST mounting, with a fixed caller instead of a token.
const benchCaller: Caller = {
  user: { id: user.id, email: user.email, firstname: 'Bench', lastname: 'Mark', isStaff: false },
  account: { id: 'acc_bench', plan: 'partner' },
  hub: { id: 'hub_bench', name: 'Bench Hub' },
  workspace: null,
  role: 'hub_admin',
  clientId: client.client.client_id,
};
const bare = Fastify({ logger: false });
const media = await openDiskMediaStore(await mkdtemp(path.join(tmpdir(), 'hubops-bench-media-')));
mountRest<MainContext>(bare, mainOperations, {
  inputs: new InputValidator(new CursorKey(randomBytes(32))),
  admitted: (_request, _reply, _op, _options, work) => work({ db, clock: systemClock, media, caller: benchCaller }),
});
const portB = await freePort();
await bare.listen({ port: portB, host: '127.0.0.1' });

async function run(url: string, headers: Record<string, string>): Promise<{ rps: number; p50: number; p99: number; non2xx: number }> {
  const result = await autocannon({ url, connections: CONNECTIONS, duration: SECONDS, headers });
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx };
}

const route = '/workspaces?limit=100';
await run(`http://127.0.0.1:${portA}${route}`, { authorization: `Bearer ${token}` }); // warm-up
const withToken: Awaited<ReturnType<typeof run>>[] = [];
const withoutAuth: Awaited<ReturnType<typeof run>>[] = [];
for (let round = 0; round < ROUNDS; round++) {
  withToken.push(await run(`http://127.0.0.1:${portA}${route}`, { authorization: `Bearer ${token}` }));
  withoutAuth.push(await run(`http://127.0.0.1:${portB}${route}`, {}));
}
const best = (runs: typeof withToken) => runs.reduce((a, b) => (b.rps > a.rps ? b : a));
const a = best(withToken);
const b = best(withoutAuth);
const overhead = 1 - a.rps / b.rps;
console.log(
  `\nGET ${route} — ${CONNECTIONS} connections, ${SECONDS} s × ${ROUNDS} rounds, best round each (${WORKSPACES} workspaces in the hub)\n`,
);
console.log('| variant | req/s | p50 ms | p99 ms | non-2xx |');
console.log('|---|---:|---:|---:|---:|');
console.log(`| with access token (real app) | ${a.rps.toFixed(0)} | ${a.p50} | ${a.p99} | ${a.non2xx} |`);
console.log(`| same route, no auth | ${b.rps.toFixed(0)} | ${b.p50} | ${b.p99} | ${b.non2xx} |`);
console.log(`\ntoken check cost: ${(overhead * 100).toFixed(1)}% of throughput (target < 15%) — ${overhead < 0.15 ? 'PASS' : 'FAIL'}\n`);

await app.close();
await bare.close();
await db.close();
await scratch.drop();
