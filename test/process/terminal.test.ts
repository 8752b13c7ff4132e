// What `node src/main.ts` writes to a stdout that is not a terminal (a pipe, as under systemd or
// docker): the banner, then JSON log lines, exactly one per request except passing health checks.
// The banner names each URL once; a later start names the demo hub a key can be created for.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { VERSION } from '../../src/platform/version.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import { httpRequest } from '../support/http.ts';
import * as fx from '../support/world.ts';
import { demoKey, hubopsEnv, killStarted, NODE, ROOT, startServer, waitUntil, type Running } from './support.ts';

let db: TestDb;
let empty: TestDb;

before(async () => {
  db = await createTestDb();
  // Data of its own, no demo: the server seeds nothing and has no demo hub to name.
  empty = await createTestDb();
  await fx.account(empty, 'acc_own');
});
after(async () => {
  killStarted();
  await db.drop();
  await empty.drop();
});

const start = (database: TestDb, extra: NodeJS.ProcessEnv = {}): Promise<Running> =>
  startServer(NODE, [path.join(ROOT, 'src/main.ts')], hubopsEnv({ url: database.url }, { LOG_LEVEL: 'info', ...extra }));

async function stop(server: Running): Promise<void> {
  server.child.kill('SIGTERM');
  const [code] = await server.exited;
  assert.equal(code, 0, server.output());
}

/** The banner's `label  URL` lines. */
function bannerUrls(output: string): [string, string][] {
  const banner = output.slice(output.indexOf('hubops is running'));
  return [...banner.matchAll(/^ {2}(\S+(?: \S+)*?) {2,}(https?:\/\/\S+)/gm)].map((m) => [m[1]!, m[2]!]);
}

const jsonLines = (output: string) =>
  output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

test('piped stdout: the banner names each URL once, then one JSON line per request and none for passing health checks', {
  timeout: 120_000,
}, async () => {
  const server = await start(db);
  const output = server.output();
  assert.match(output, new RegExp(`hubops is running at http://localhost:${server.port} \\(version ${VERSION.replace(/\./g, '\\.')}\\)`));
  const urls = bannerUrls(output);
  assert.deepEqual(
    urls.map(([label]) => label),
    [
      'Web admin',
      'Docs',
      'Hub API',
      'Hub API OpenAPI',
      'Hub MCP',
      'Main API',
      'Main API OpenAPI',
      'MCP (OAuth)',
      'OAuth metadata',
      'Meta sandbox',
      'Google Ads sandbox',
      'ChatGPT Ads sandbox',
      'Business Profile sandbox',
    ],
  );
  assert.equal(new Set(urls.map(([, url]) => url)).size, urls.length, 'no URL twice');
  const { key } = demoKey(output);

  const before = jsonLines(server.output()).length;
  const ids: string[] = [];
  for (const [url, headers] of [
    ['/healthz', {}],
    ['/readyz', {}],
    ['/v1/hub/opt-in-summary', { authorization: `Bearer ${key}` }],
    ['/v1/hub/playbook-opt-ins?limit=1', { authorization: `Bearer ${key}` }],
    ['/embed/nope?token=SECRET-TOKEN', {}],
  ] as const) {
    const response = await httpRequest(`${server.base}${url}`, { headers });
    if (!url.endsWith('z')) ids.push(String(response.headers['x-request-id']));
  }
  await waitUntil(() => jsonLines(server.output()).filter((l) => l.msg === 'request').length >= 3, 'three request lines');
  await stop(server);
  const logged = jsonLines(server.output()).slice(before);
  const requests = logged.filter((l) => l.msg === 'request');
  assert.deepEqual(
    requests.map((l) => [l.reqId, l.method, l.url]),
    [
      [ids[0], 'GET', '/v1/hub/opt-in-summary'],
      [ids[1], 'GET', '/v1/hub/playbook-opt-ins?limit=1'],
      [ids[2], 'GET', '/embed/nope?token=[redacted]'],
    ],
  );
  assert.deepEqual(
    requests.map((l) => l.statusCode),
    [200, 200, 404],
  );
  assert.ok(requests.every((l) => typeof l.responseTime === 'number'));
  assert.ok(!logged.some((l) => /healthz|readyz/.test(String(l.url))), 'health checks are not logged');
  assert.ok(!server.output().includes('SECRET-TOKEN'));
  assert.equal(server.output().split(key).length, 3, 'the key is in the banner only (its line and the curl example), never in a log line');
});

test("a later start names the demo hub's id in the key example; without the demo, how to get a hub id", { timeout: 120_000 }, async () => {
  const again = await start(db);
  assert.doesNotMatch(again.output(), /Demo data seeded|<HUB_ID>/);
  assert.match(
    again.output(),
    /Create a Hub API key for the demo hub Brewline Coffee with:\n {2}npm run --silent hubops -- keys create --hub hub_demo_brewline --name "My tool"\n/,
  );
  await stop(again);

  const none = await start(empty);
  assert.match(
    none.output(),
    /Create a Hub API key for one of your hubs \(ids from: hubs create, or demo seed for the demo data\) with:\n {2}npm run --silent hubops -- keys create --hub <HUB_ID> --name "My tool"\n/,
  );
  await stop(none);
});
