// POST /media and the MCP add_media tool through the whole app (real OAuth token, HTTP on a real
// port, the real MCP SDK client): numbers a crafted file claims are range-checked before they
// reach a column; only a body the multipart parser cannot read is a 400, in our words; the
// database going away mid-upload is a 503 and anything else a 500 logged with its stack — never
// a 400 quoting PostgreSQL or an internal address.
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { sql } from 'kysely';
import { createUser } from '../../src/domain/tenancy/tenancy.service.ts';
import { startApp, type TestApp } from '../support/app.ts';
import * as fx from '../support/world.ts';
import { callError, callOk, newClient, transport } from '../support/mcp-client.ts';
import { movie, png } from '../support/media-files.ts';
import { api, authorize, exchangeCode, REDIRECT, registerClient } from '../support/oauth-flow.ts';
import { captureLog } from '../support/log.ts';
import { RawConnection } from '../support/raw-http.ts';

const USER = { email: 'pat@acme.test', password: 'pat password 12' };
// What no response body may ever contain: PostgreSQL's words, addresses, the parser's words.
const LEAKS = /out of range|integer|ECONN|127\.0\.0\.1|postgres|busboy|Unexpected end|terminated early|secret internals|at \S+\.ts/i;

const { logger, lines } = captureLog('info');
let live: TestApp;
let token: string;
let mcp: Client;

before(async () => {
  live = await startApp({ listen: true, logger, throughProxy: true });
  await fx.account(live.db, 'acc_1');
  await fx.hub(live.db, 'h1', 'acc_1');
  await fx.workspace(live.db, 'h1', 'w1');
  await createUser(live.db, { ...USER, firstname: 'Pat', lastname: 'Poe', hubId: 'h1', role: 'member', workspaceId: 'w1' });
  const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
  token = (await exchangeCode(live, client, await authorize(live, client, { ...USER, redirectUri: REDIRECT }), REDIRECT)).access_token;
  const mcpUrl = new URL(`${live.baseUrl}/mcp`);
  const mcpToken = (
    await exchangeCode(live, client, await authorize(live, client, { ...USER, redirectUri: REDIRECT, resource: mcpUrl.href }), REDIRECT)
  ).access_token;
  mcp = newClient();
  await mcp.connect(transport(mcpUrl, { token: mcpToken }));
});
after(async () => {
  await mcp?.close();
  await live?.close();
});

const upload = (bytes: Buffer, name = 'clip.mp4') => {
  const form = new FormData();
  form.append('file', new Blob([bytes]), name);
  return api(live, '/media', token, { method: 'POST', body: form });
};
const rows = async () => (await sql<{ n: number }>`SELECT count(*)::int AS n FROM media_assets`.execute(live.db.kysely)).rows[0]!.n;
const stagedFiles = async () => {
  const staging = path.join(live.config.dataDir, 'media', '.staging');
  const dirs = await readdir(staging);
  return (await Promise.all(dirs.map((d) => readdir(path.join(staging, d))))).flat();
};

test('an MP4 whose duration is "unknown" (all bits set) is stored with durationMs null, over REST and MCP', async () => {
  // The fuzzer's file: a 32-bit duration of 0xFFFFFFFF at timescale 1, i.e. 4,294,967,295,000 ms.
  const crafted = movie({ width: 640, height: 360, durationMs: 0, timescale: 1, durationUnits: 0xffffffffn });
  const rest = await upload(crafted);
  assert.equal(rest.status, 201, JSON.stringify(rest.body));
  assert.deepEqual([rest.body.kind, rest.body.width, rest.body.height, rest.body.durationMs], ['video', 640, 360, null]);
  const v1 = movie({ width: 640, height: 360, durationMs: 0, version1: true, durationUnits: 2n ** 64n - 1n });
  const tool = await callOk(mcp, 'add_media', { base64: v1.toString('base64'), filename: 'v1.mp4' });
  assert.deepEqual([tool.kind, tool.durationMs], ['video', null]);
});

test('numbers no real file has are a 400 naming the file, in our words; nothing is stored', async () => {
  const before = await rows();
  const longest = movie({ width: 8, height: 8, durationMs: 0, timescale: 1, durationUnits: 0xfffffffen });
  const huge64 = movie({ width: 8, height: 8, durationMs: 0, version1: true, timescale: 1000, durationUnits: 2n ** 63n });
  const wide = png(1, 1);
  wide.writeUInt32BE(2 ** 31 - 1, 16); // IHDR width
  const cases: [string, Buffer, RegExp][] = [
    [
      'a 32-bit duration of 136 years',
      longest,
      /is not a valid MP4 video \(its header gives a duration of 4,294,967,294 seconds; videos are accepted up to 24 hours \(86,400 seconds\)\)/,
    ],
    ['a 64-bit duration', huge64, /duration of [\d,]+ seconds; videos are accepted up to 24 hours/],
    ['a PNG 2,147,483,647 pixels wide', wide, /dimensions are 2147483647×1 \(each side must be 1 to 65,535 pixels\)/],
  ];
  for (const [what, bytes, message] of cases) {
    const rest = await upload(bytes, 'crafted.bin');
    assert.equal(rest.status, 400, `${what}: ${JSON.stringify(rest.body)}`);
    assert.equal(rest.body.error, 'invalid_request');
    assert.equal(rest.body.issues[0].field, 'file');
    assert.match(rest.body.issues[0].message, message, what);
    assert.doesNotMatch(JSON.stringify(rest.body), LEAKS, what);
    const text = await callError(mcp, 'add_media', { base64: bytes.toString('base64') });
    assert.match(text, message, `MCP: ${what}`);
    assert.doesNotMatch(text, LEAKS, `MCP: ${what}`);
  }
  assert.equal(await rows(), before);
  assert.deepEqual(await stagedFiles(), []);
});

test('only a body the parser cannot read is a 400, and it says so in our words', async () => {
  const cut = await api(live, '/media', token, {
    method: 'POST',
    headers: { 'content-type': 'multipart/form-data; boundary=XYZ' },
    body: `--XYZ\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n${'x'.repeat(100)}`,
  });
  assert.equal(cut.status, 400);
  assert.deepEqual(cut.body.issues, [
    {
      field: 'body',
      message: 'is not valid multipart/form-data: it is cut short or malformed (check the boundary, and that the whole body was sent)',
    },
  ]);
  const noBoundary = await api(live, '/media', token, {
    method: 'POST',
    headers: { 'content-type': 'multipart/form-data' },
    body: 'hello',
  });
  assert.deepEqual([noBoundary.status, noBoundary.body.issues?.[0]?.field], [400, 'body']);
  const twoFiles = new FormData();
  twoFiles.append('file', new Blob([png(2, 2)]), 'a.png');
  twoFiles.append('other', new Blob([png(2, 2)]), 'b.png');
  const many = await api(live, '/media', token, { method: 'POST', body: twoFiles });
  assert.equal(many.status, 400, JSON.stringify(many.body));
  assert.match(many.body.issues[0].message, /more parts than an upload takes/);
  for (const body of [cut.body, noBoundary.body, many.body]) assert.doesNotMatch(JSON.stringify(body), LEAKS);
});

test('a failure of ours is a 500 internal_error with a request id, logged with its stack, not sent', async () => {
  await sql`CREATE FUNCTION media_boom() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'secret internals of %', NEW.id USING ERRCODE = 'XX000'; END $$`.execute(live.db.kysely);
  await sql`CREATE TRIGGER media_boom BEFORE INSERT ON media_assets FOR EACH ROW EXECUTE FUNCTION media_boom()`.execute(live.db.kysely);
  try {
    const response = await upload(png(3, 3), 'a.png');
    assert.equal(response.status, 500);
    assert.deepEqual(Object.keys(response.body).sort(), ['error', 'message', 'requestId']);
    assert.equal(response.body.error, 'internal_error');
    assert.doesNotMatch(JSON.stringify(response.body), LEAKS);
    const logged = lines.find((l) => l.level === 50 && l.reqId === response.body.requestId);
    assert.ok(logged, 'the failure is logged under the request id');
    assert.match(logged.err.stack, /secret internals of med_/);
  } finally {
    await sql`DROP TRIGGER media_boom ON media_assets`.execute(live.db.kysely);
    await sql`DROP FUNCTION media_boom()`.execute(live.db.kysely);
  }
  assert.deepEqual(await stagedFiles(), []);
});

test('the database going away mid-upload is a 503, not a 400 quoting the connection error', async () => {
  const before = await rows();
  let send!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({ start: (controller) => void (send = controller) });
  const boundary = 'cut-the-database';
  const responding = fetch(`${live.baseUrl}/media`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
    body,
    duplex: 'half',
  } as RequestInit);
  send.enqueue(
    Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`),
      png(4, 4),
      Buffer.alloc(64 * 1024),
    ]),
  );
  // Signed in and staging: the database is still needed to record the asset. Then it goes.
  for (const deadline = Date.now() + 10_000; (await stagedFiles()).length === 0; ) {
    assert.ok(Date.now() < deadline, 'the upload reached staging');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await live.proxy!.cut();
  send.enqueue(Buffer.from(`\r\n--${boundary}--\r\n`));
  send.close();
  const response = await responding;
  const text = await response.text();
  await live.proxy!.restore();
  assert.equal(response.status, 503, text);
  assert.equal(response.headers.get('retry-after'), '5');
  assert.equal(JSON.parse(text).error, 'service_unavailable');
  assert.doesNotMatch(text, LEAKS);
  assert.equal(await rows(), before);
  assert.deepEqual(await stagedFiles(), []);
});

test("every answer POST /media gives is documented in the main API's OpenAPI, with its headers", async () => {
  const document = (await (await fetch(`${live.baseUrl}/openapi.json`)).json()) as {
    paths: Record<string, Record<string, { responses: Record<string, { headers?: Record<string, unknown>; content?: unknown }> }>>;
  };
  const documented = document.paths['/media']!.post!.responses;
  const answers: [string, number][] = [];
  const png2 = png(2, 2);
  answers.push(['a new asset', (await upload(png2, 'a.png')).status]);
  answers.push(['no token', (await api(live, '/media', 'not-a-token', { method: 'POST', body: new FormData() })).status]);
  answers.push([
    'a body cut short',
    (await api(live, '/media', token, { method: 'POST', headers: { 'content-type': 'multipart/form-data; boundary=X' }, body: '--X\r\n' }))
      .status,
  ]);
  answers.push(['a text file', (await upload(Buffer.from('just text, not an image'), 'notes.txt')).status]);
  const keyed = (bytes: Buffer) => {
    const form = new FormData();
    form.append('file', new Blob([bytes]), 'k.png');
    return api(live, '/media', token, { method: 'POST', body: form, headers: { 'idempotency-key': 'openapi-media-1' } });
  };
  await keyed(png2);
  answers.push(['an Idempotency-Key reused with another file', (await keyed(png(3, 3))).status]);
  assert.deepEqual(
    answers.map(([what, status]) => [what, status]),
    [
      ['a new asset', 201],
      ['no token', 401],
      ['a body cut short', 400],
      ['a text file', 415],
      ['an Idempotency-Key reused with another file', 422],
    ],
  );
  for (const [what, status] of answers) assert.ok(documented[String(status)], `${what}: ${status} is documented`);
  for (const status of ['403', '404', '413', '429']) assert.ok(documented[status], `${status} is documented`);
  assert.ok(documented['201']!.headers?.RateLimit, 'the 201 names its RateLimit headers');
  assert.ok(documented['429']!.headers?.['Retry-After']);
  assert.ok(document.paths['/posts']!.post!.responses['422'], 'POST /posts documents its Idempotency-Key reuse too');
});

test('a client hanging up mid-upload is logged as the client going away, not as the database; nothing is stored', async () => {
  const before = await rows();
  const port = Number(new URL(live.baseUrl).port);
  const boundary = 'hang-up';
  const head = [
    'POST /media HTTP/1.1',
    'Host: 127.0.0.1',
    `Authorization: Bearer ${token}`,
    `Content-Type: multipart/form-data; boundary=${boundary}`,
    `Content-Length: ${10 * 1024 * 1024}`,
    '',
    '',
  ].join('\r\n');
  const part = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`;
  // Gone while its bytes are being staged, and gone right after its headers (while it is authenticated).
  const hangUps: [string, (connection: RawConnection) => Promise<void>][] = [
    [
      'mid-file',
      async (connection) => {
        connection.write(head + part);
        connection.write(Buffer.concat([png(4, 4), Buffer.alloc(256 * 1024)]));
        for (const deadline = Date.now() + 10_000; (await stagedFiles()).length === 0; ) {
          assert.ok(Date.now() < deadline, 'the upload reached staging');
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      },
    ],
    ['after the headers', async (connection) => connection.write(head)],
  ];
  for (let round = 0; round < 3; round += 1) {
    for (const [when, send] of hangUps) {
      const logged = lines.length;
      const connection = await RawConnection.open(port);
      await send(connection);
      connection.destroy();
      await waitForLine(logged, (l) => l.msg === 'client closed the connection before the request was complete' && l.url === '/media');
      const said = lines.slice(logged).map((l) => `${l.level} ${l.msg}`);
      assert.ok(!said.some((s) => /database unavailable|request failed/.test(s)), `${when}: ${said.join('; ')}`);
      assert.ok(!lines.slice(logged).some((l) => l.level >= 40), `${when}: nothing above info: ${said.join('; ')}`);
    }
  }
  assert.equal(await rows(), before);
  for (const deadline = Date.now() + 10_000; (await stagedFiles()).length > 0; ) {
    assert.ok(Date.now() < deadline, 'the staged bytes are removed');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
});

async function waitForLine(from: number, match: (line: Record<string, any>) => boolean): Promise<Record<string, any>> {
  for (const deadline = Date.now() + 10_000; ; ) {
    const found = lines.slice(from).find(match);
    if (found) return found;
    assert.ok(
      Date.now() < deadline,
      `no such line; logged: ${lines
        .slice(from)
        .map((l) => `${l.level} ${l.msg}`)
        .join('; ')}`,
    );
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
