// Server secrets at rest: the OAuth signing key and the cookie keys are
// encrypted (AES-256-GCM) under a key that is not in the database; a restart with the same key
// reuses them, a wrong key stops the start with one line, plaintext rows from before are sealed.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { sql } from 'kysely';
import { buildApp } from '../../src/app.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { loadServerSecrets, resolveSecretsKeys, secretsKey } from '../../src/surfaces/oauth/server-secrets.ts';
import { startApp } from '../support/app.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import { HUB_ADMIN, seedHubAdmin } from '../support/world.ts';
import { api, authorize, exchangeCode, REDIRECT, registerClient } from '../support/oauth-flow.ts';

const newKey = () => randomBytes(32).toString('base64url');
/** Every column of every row of server_secrets, as text. */
const rowsAsText = async (db: TestDb) =>
  (
    await sql<{ t: string }>`SELECT concat_ws(' ', name, value::text, created_at::text) AS t FROM server_secrets ORDER BY name`.execute(
      db.kysely,
    )
  ).rows
    .map((r) => r.t)
    .join('\n');
const jwksOf = async (app: { fastify: { inject(o: { url: string }): Promise<{ body: string }> } }) =>
  (await app.fastify.inject({ url: '/oauth/jwks' })).body;

test('the table holds no plaintext; a restart with the same key (file under DATA_DIR) reuses the secrets and tokens issued before still verify', async () => {
  const live = await startApp({ listen: true });
  try {
    await seedHubAdmin(live.db);
    const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
    const result = await authorize(live, client, { ...HUB_ADMIN, redirectUri: REDIRECT });
    const tokens = await exchangeCode(live, client, result, REDIRECT);
    assert.equal((await api(live, '/whoami', tokens.access_token)).status, 200);

    // The key file: made on the first start, 0600.
    const keyFile = path.join(live.config.dataDir, 'secrets.key');
    assert.equal((await stat(keyFile)).mode & 0o777, 0o600);
    const plain = await loadServerSecrets(live.db, { keys: (await resolveSecretsKeys(live.config)).keys });
    const d = String(plain.jwks.keys[0]!.d);
    assert.ok(d.length > 20 && plain.cookieKeys[0]!.length > 20);
    const stored = await rowsAsText(live.db);
    for (const secret of [
      d,
      plain.cookieKeys[0]!,
      Buffer.from(d, 'base64url').toString('hex'),
      Buffer.from(d, 'base64url').toString('base64'),
    ]) {
      assert.ok(!stored.includes(secret), 'no secret in any column of server_secrets');
    }
    assert.match(stored, /"enc": "A256GCM"/);
    const jwksBefore = await jwksOf(live.app);

    // Restart: another app on the same database and DATA_DIR.
    await live.app.close();
    const again = await buildApp({ config: live.config, db: live.db, logger: false, publisher: false });
    try {
      assert.equal(await jwksOf(again), jwksBefore);
      const whoami = await again.fastify.inject({ url: '/whoami', headers: { authorization: `Bearer ${tokens.access_token}` } });
      assert.equal(whoami.statusCode, 200, whoami.body);
      assert.equal(await rowsAsText(live.db), stored, 'a start with the right key rewrites nothing');
    } finally {
      await again.close();
    }
  } finally {
    await live.db.drop();
    await rm(live.config.dataDir, { recursive: true, force: true });
  }
});

test('a wrong key stops the server with one clear line, and changes nothing', async () => {
  const db = await createTestDb();
  const dataDir = await mkdtemp(path.join(tmpdir(), 'hubops-secrets-'));
  try {
    const right = newKey();
    const app = await buildApp({
      config: loadConfig({ DATABASE_URL: db.url, DATA_DIR: dataDir, HUBOPS_SECRETS_KEY: right }),
      db,
      logger: false,
      publisher: false,
    });
    await app.close();
    const before = await rowsAsText(db);
    const wrong = newKey();
    const child = spawn(process.execPath, ['src/main.ts'], {
      cwd: new URL('../..', import.meta.url).pathname,
      env: {
        PATH: process.env.PATH,
        DATABASE_URL: db.url,
        DATA_DIR: dataDir,
        HUBOPS_SECRETS_KEY: wrong,
        HUBOPS_DEMO: '0',
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.stdout.resume();
    const code = await new Promise((resolve) => child.on('close', resolve));
    assert.equal(code, 1);
    const lines = stderr.trim().split('\n');
    assert.equal(lines.length, 1, stderr);
    assert.match(
      lines[0]!,
      /^hubops: .*server secret \S+ is encrypted under key [0-9a-f]{16}, but the secrets key is [0-9a-f]{16}: start with the key the database was made with/,
    );
    assert.ok(!stderr.includes(wrong) && !stderr.includes(right), 'no key in the message');
    assert.equal(await rowsAsText(db), before);
  } finally {
    await db.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
});

test('plaintext rows from before are encrypted in place on the first start and keep their values; a key rotates', async () => {
  const db = await createTestDb();
  const dataDir = await mkdtemp(path.join(tmpdir(), 'hubops-secrets-'));
  try {
    // What the server stored before encryption at rest.
    const cookieKeys = [randomBytes(32).toString('base64url')];
    const jwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' });
    const jwks = { keys: [{ ...jwk, kid: 'old-kid', alg: 'ES256', use: 'sig' }] };
    await sql`INSERT INTO server_secrets (name, value) VALUES ('oauth_cookie_keys', ${JSON.stringify(cookieKeys)}), ('oauth_jwks', ${JSON.stringify(jwks)})`.execute(
      db.kysely,
    );

    const first = newKey();
    const app = await buildApp({
      config: loadConfig({ DATABASE_URL: db.url, DATA_DIR: dataDir, HUBOPS_SECRETS_KEY: first }),
      db,
      logger: false,
      publisher: false,
    });
    const served = JSON.parse(await jwksOf(app));
    await app.close();
    assert.deepEqual(
      served.keys.map((k: { kid: string; x: string }) => [k.kid, k.x]),
      [['old-kid', jwk.x]],
    );
    const stored = await rowsAsText(db);
    assert.ok(!stored.includes(String(jwk.d)) && !stored.includes(cookieKeys[0]!), 'sealed in place');
    const firstId = secretsKey(Buffer.from(first, 'base64url')).id;
    assert.equal((stored.match(new RegExp(`"kid": "${firstId}"`, 'g')) ?? []).length, 2);
    assert.deepEqual(await loadServerSecrets(db, { keys: [secretsKey(Buffer.from(first, 'base64url'))] }), { cookieKeys, jwks });

    // Rotation: the new key first, the old one after it; the rows move to the new key.
    const second = newKey();
    const rotated = await buildApp({
      config: loadConfig({ DATABASE_URL: db.url, DATA_DIR: dataDir, HUBOPS_SECRETS_KEY: `${second},${first}` }),
      db,
      logger: false,
      publisher: false,
    });
    await rotated.close();
    assert.deepEqual(await loadServerSecrets(db, { keys: [secretsKey(Buffer.from(second, 'base64url'))] }), { cookieKeys, jwks });
    await assert.rejects(loadServerSecrets(db, { keys: [secretsKey(Buffer.from(first, 'base64url'))] }), ConfigError);
  } finally {
    await db.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
});

test('HUBOPS_SECRETS_KEY that is not 32 bytes of base64url is a one-line configuration error that does not echo it', () => {
  for (const value of ['short', `${newKey()}x`, 'a'.repeat(43).replace(/a$/, '!'), `${newKey()},nope`]) {
    assert.throws(
      () => loadConfig({ HUBOPS_SECRETS_KEY: value }),
      (error: Error) => {
        assert.ok(error instanceof ConfigError);
        assert.match(error.message, /^HUBOPS_SECRETS_KEY must be 32 bytes in base64url/);
        assert.ok(!error.message.includes(value) && !error.message.includes('\n'));
        return true;
      },
    );
  }
  assert.equal(loadConfig({ HUBOPS_SECRETS_KEY: ` ${newKey()} ` }).secretsKeys[0]!.length, 32);
});
