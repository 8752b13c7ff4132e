// `hubops backup` of a running demo and `hubops restore` into a new DATA_DIR, as an operator would:
// the restored server answers the same Hub API keys with the same figures, refreshes an OAuth
// refresh token issued before the backup (its signing key is a sealed server secret), and the ad
// platform tokens sealed under the backed-up key file still open. Every table has its rows.
import assert from 'node:assert/strict';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, test } from 'node:test';
import pg from 'pg';
import { runCli } from '../../src/cli/cli.ts';
import { startEmbedded } from '../../src/db/embedded.ts';
import { Sealer, secretsKey } from '../../src/platform/sealing.ts';
import { httpRequest } from '../support/http.ts';
import { authorize, exchangeCode, oauth, refresh, registerClient } from '../support/oauth-flow.ts';
import type { TestApp } from '../support/app.ts';
import { dataDir as newDataDir, demoKey, hubopsEnv, killGroup, killStarted, NODE, startServer } from './support.ts';

const dirs: string[] = [];
after(async () => {
  killStarted();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io = { stdout: (t: string) => (stdout += t), stderr: (t: string) => (stderr += t), env, stdin: Readable.from([]) };
  const code = await runCli(args, io);
  return { code, stdout, stderr };
}

/** Enough of a TestApp for the OAuth helpers: the server's address and its discovered metadata. */
async function oauthTarget(base: string): Promise<TestApp> {
  const issuer = new URL(base);
  const as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { [oauth.allowInsecureRequests]: true, algorithm: 'oauth2' }),
  );
  return { baseUrl: base, as } as unknown as TestApp;
}

const hubGet = async (base: string, key: string, route: string) => {
  const response = await httpRequest(`${base}/v1/hub${route}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: response.status, body: response.text };
};

async function tableCounts(dataDir: string): Promise<Record<string, number>> {
  const database = await startEmbedded(dataDir);
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    const tables = await client.query<{ name: string }>(
      `SELECT relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE nspname = 'public' AND relkind = 'r'`,
    );
    const counts: Record<string, number> = {};
    for (const { name } of tables.rows) {
      const n = Number((await client.query(`SELECT count(*) AS n FROM "${name}"`)).rows[0].n);
      if (n > 0) counts[name] = n;
    }
    return counts;
  } finally {
    await client.end();
    await database.stop();
  }
}

test('a running demo backed up and restored into a new DATA_DIR keeps every row, key, token and sealed value', {
  timeout: 240_000,
  skip: process.env.DATABASE_URL ? 'the embedded database is what is backed up here: runs in the pass without DATABASE_URL' : false,
}, async () => {
  const source = await newDataDir('hubops-backup-src-', { initialised: true });
  const work = await newDataDir('hubops-backup-', { initialised: false });
  dirs.push(source, work);
  const envA = hubopsEnv({ dataDir: source });
  const a = await startServer(NODE, ['src/main.ts'], envA);
  const { key: demo } = demoKey(a.output());

  // A key made while the server runs, an OAuth grant with a refresh token, a Hub API answer to compare.
  const created = await cli(['keys', 'create', '--hub', 'hub_demo_brewline', '--name', 'Backup check', '--json'], envA);
  assert.equal(created.code, 0, created.stderr);
  const cliKey = (JSON.parse(created.stdout) as { key: string }).key;
  const targetA = await oauthTarget(`http://localhost:${a.port}`);
  const redirectUri = 'http://127.0.0.1:9/callback';
  const client = await registerClient(targetA, { confidential: true, redirectUri });
  const granted = await authorize(targetA, client, { email: 'admin@demo.hubops.dev', password: 'hubops-demo', redirectUri });
  const tokens = await exchangeCode(targetA, client, granted, redirectUri);
  assert.ok(tokens.refresh_token, 'the grant gave a refresh token');
  const summaryBefore = await hubGet(a.base, demo, '/opt-in-summary');
  assert.equal(summaryBefore.status, 200, summaryBefore.body);

  // Backed up while it runs (the CLI shares its postmaster).
  const file = path.join(work, 'hubops.backup');
  const backup = await cli(['backup', file, '--json'], envA);
  assert.equal(backup.code, 0, backup.stderr);
  const backedUp = JSON.parse(backup.stdout) as { rows: Record<string, number>; secretsKey: boolean };
  assert.equal(backedUp.secretsKey, true, 'the key file is in the backup');
  assert.ok(
    (backedUp.rows.opt_ins ?? 0) > 0 && (backedUp.rows.api_keys ?? 0) >= 2 && (backedUp.rows.oauth_artifacts ?? 0) > 0,
    backup.stdout,
  );
  const summaryAtBackup = await hubGet(a.base, demo, '/opt-in-summary');
  killGroup(a.child, 'SIGTERM');
  assert.deepEqual((await a.exited)[0], 0, a.output());

  // A restore refuses a DATA_DIR that holds something, and a damaged file.
  const refused = await cli(['restore', file], envA);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /is not empty: restore into a new directory, or give --force/);
  const damagedFile = path.join(work, 'damaged.backup');
  const bytes = await readFile(file);
  await import('node:fs/promises').then((fs) => fs.writeFile(damagedFile, bytes.subarray(0, bytes.length - 40)));
  const damaged = await cli(['restore', damagedFile], hubopsEnv({ dataDir: path.join(work, 'never') }));
  assert.equal(damaged.code, 1, damaged.stdout);
  assert.match(damaged.stderr, /damaged|incomplete|not a hubops backup/);

  const target = path.join(work, 'restored');
  const envB = hubopsEnv({ dataDir: target });
  const restored = await cli(['restore', file, '--json'], envB);
  assert.equal(restored.code, 0, restored.stderr);
  assert.deepEqual((JSON.parse(restored.stdout) as { rows: unknown }).rows, backedUp.rows);
  // Counted in the restored database itself, not taken from the restore's word.
  assert.deepEqual(await tableCounts(target), backedUp.rows);
  assert.equal(await readFile(path.join(target, 'secrets.key'), 'utf8'), await readFile(path.join(source, 'secrets.key'), 'utf8'));

  // At the same address: the OAuth issuer and the tokens' audience are BASE_URL's.
  const b = await startServer(NODE, ['src/main.ts'], envB, a.port);
  try {
    assert.doesNotMatch(b.output(), /Demo Hub API key/, 'the restored demo is not seeded again');
    assert.deepEqual(await hubGet(b.base, demo, '/opt-in-summary'), summaryAtBackup);
    assert.equal((await hubGet(b.base, cliKey, '/opt-in-summary')).status, 200);
    assert.equal((await hubGet(b.base, 'hubops_wrong', '/opt-in-summary')).status, 401);
    // The refresh token issued before the backup refreshes on the restored server.
    const refreshed = await refresh(await oauthTarget(`http://localhost:${b.port}`), client, tokens.refresh_token!);
    assert.ok(refreshed.access_token);
    const me = await httpRequest(`${b.base}/whoami`, { headers: { authorization: `Bearer ${refreshed.access_token}` } });
    assert.equal(me.status, 200, me.text);

    // Ad platform tokens sealed under the key file open with the restored one.
    const key = secretsKey(Buffer.from((await readFile(path.join(target, 'secrets.key'), 'utf8')).trim(), 'base64url'));
    const database = await startEmbedded(target);
    const db = new pg.Client({ connectionString: database.url });
    await db.connect();
    try {
      const sealed = await db.query<{ id: string; token_sealed: Buffer }>('SELECT id, token_sealed FROM ad_connections');
      assert.ok(sealed.rows.length > 0, 'the demo has sealed ad platform tokens');
      for (const row of sealed.rows) assert.ok(new Sealer([key]).open(row.token_sealed, row.id).length > 0);
    } finally {
      await db.end();
      await database.stop();
    }
  } finally {
    killGroup(b.child, 'SIGTERM');
    await b.exited;
  }
});
