import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { readFile, stat } from 'node:fs/promises';
import { connect } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { MediaRejected, bufferSource, inspectMedia } from '../../src/domain/media/media-info.ts';
import { IMAGE_MAX_BYTES } from '../../src/policy.ts';
import { cleanFilename } from '../../src/domain/media/media.ts';
import { addMediaFromBuffer } from '../../src/domain/media/media.service.ts';
import { FixedClock } from '../../src/platform/clock.ts';
import { registerMediaUpload } from '../../src/surfaces/main-api/media-upload.ts';
import { refusalOf, type ApiError } from '../../src/surfaces/shared/errors.ts';
import { call, caller, principal, seedTwoHubs, tempMediaStore, upload, type TempMediaStore } from '../support/content-world.ts';
import { createTestDb, type TestDb } from '../support/db.ts';
import { WEBP_ALPHA_1X1, WEBP_LOSSY_1X1, gif, jpeg, movie, png, webpLossless } from '../support/media-files.ts';

// Uploads with real files built by the test: the type comes from the bytes, dimensions and
// durations from the headers, limits hold while streaming, and nothing refused or failed leaves a
// file or a row behind.

const NOW = '2026-11-21T12:00:00.000Z';
let db: TestDb;
let media: TempMediaStore;
const clock = new FixedClock(NOW);
const member = (key?: string) => caller(db, clock, media.store, principal('hub_a', 'ws_a1', 'usr_a1'), key);
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const rowCount = async () =>
  Number(
    (
      await db.kysely
        .selectFrom('media_assets')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

/** Bytes as a stream of chunks, as a request body arrives. */
async function* chunks(bytes: Buffer, size = 64 * 1024): AsyncGenerator<Buffer> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

/** The answer REST gives to a refused call. */
async function refusal(promise: Promise<unknown>): Promise<ApiError> {
  try {
    await promise;
  } catch (error) {
    const refused = refusalOf(error);
    assert.ok(refused, String(error));
    return refused;
  }
  assert.fail('expected a refusal');
}

before(async () => {
  db = await createTestDb();
  media = await tempMediaStore();
  await seedTwoHubs(db);
});
after(async () => {
  await db.drop();
  await media.remove();
});

describe('inspection from the bytes', () => {
  const cases: [string, Buffer, Record<string, unknown>][] = [
    ['PNG', png(33, 17), { contentType: 'image/png', width: 33, height: 17, durationMs: null }],
    ['JPEG', jpeg(40, 30), { contentType: 'image/jpeg', width: 40, height: 30 }],
    [
      'JPEG with 150 KB of EXIF-like segments before its frame',
      jpeg(640, 480, 150_000),
      { contentType: 'image/jpeg', width: 640, height: 480 },
    ],
    ['GIF', gif(5, 3), { contentType: 'image/gif', width: 5, height: 3 }],
    ['WebP lossless (VP8L)', webpLossless(300, 200), { contentType: 'image/webp', width: 300, height: 200 }],
    ['WebP lossy (VP8)', WEBP_LOSSY_1X1, { contentType: 'image/webp', width: 1, height: 1 }],
    ['WebP extended (VP8X)', WEBP_ALPHA_1X1, { contentType: 'image/webp', width: 1, height: 1 }],
    [
      'MP4 with an audio track first',
      movie({ width: 1920, height: 1080, durationMs: 12_345, audioFirst: true }),
      { contentType: 'video/mp4', kind: 'video', width: 1920, height: 1080, durationMs: 12_345 },
    ],
    [
      'MP4 with moov at the end, 64-bit boxes',
      movie({ width: 640, height: 360, durationMs: 90_000, version1: true, moovAtEnd: true, timescale: 90_000 }),
      { contentType: 'video/mp4', width: 640, height: 360, durationMs: 90_000 },
    ],
    [
      'MP4 of exactly 24 hours, the longest accepted',
      movie({ width: 8, height: 8, durationMs: 0, timescale: 1, durationUnits: 86_400n }),
      { durationMs: 86_400_000 },
    ],
    [
      'MP4 whose duration is unknown (all bits set, 64-bit)',
      movie({ width: 8, height: 8, durationMs: 0, version1: true, durationUnits: 2n ** 64n - 1n }),
      { durationMs: null },
    ],
    ['PNG 65,535 pixels wide, the widest accepted', png(65_535, 1), { width: 65_535, height: 1 }],
    [
      'MOV shot upright (rotated a quarter turn)',
      movie({ brand: 'qt  ', width: 1920, height: 1080, durationMs: 5_000, rotated: true }),
      { contentType: 'video/quicktime', width: 1080, height: 1920, durationMs: 5_000 },
    ],
  ];
  for (const [name, bytes, expected] of cases) {
    test(name, async () => {
      const info = await inspectMedia(bufferSource(bytes));
      for (const [key, value] of Object.entries(expected)) assert.equal(info[key as keyof typeof info], value, key);
    });
  }

  test('refused: other formats, truncated or inconsistent headers, a movie without a picture', async () => {
    const bad: [string, Buffer, RegExp][] = [
      ['HTML', Buffer.from('<!doctype html><html><body>hi</body></html>'), /is not a JPEG, PNG, WebP or GIF image or an MP4 or MOV video/],
      ['HEIC', movie({ brand: 'heic', width: 10, height: 10, durationMs: 1 }), /is not a JPEG/],
      ['PNG cut short', png(10, 10).subarray(0, 20), /not a valid PNG image \(the file ends too early\)/],
      [
        'PNG of 0×5',
        (() => {
          const b = png(1, 5);
          b.writeUInt32BE(0, 16);
          return b;
        })(),
        /dimensions are 0×5/,
      ],
      ['JPEG without a frame', Buffer.from([0xff, 0xd8, 0xff, 0xda, 0, 2, 0xff, 0xd9]), /no frame header/],
      [
        'MP4 with sound only',
        (() => {
          const b = movie({ width: 0, height: 0, durationMs: 10 });
          return b;
        })(),
        /no video track/,
      ],
      ['PNG 65,536 pixels wide', png(65_536, 1), /dimensions are 65536×1 \(each side must be 1 to 65,535 pixels\)/],
      [
        'WebP canvas of 16,777,216 pixels a side',
        (() => {
          const b = Buffer.from(WEBP_ALPHA_1X1);
          b.writeUIntLE(0xffffff, 24, 3);
          return b;
        })(),
        /dimensions are 16777216×1 /,
      ],
      [
        'MP4 one second over 24 hours',
        movie({ width: 8, height: 8, durationMs: 0, timescale: 1, durationUnits: 86_401n }),
        /duration of 86,401 seconds; videos are accepted up to 24 hours \(86,400 seconds\)/,
      ],
      ['MP4 whose box overruns the file', movie({ width: 8, height: 8, durationMs: 10 }).subarray(0, 100), /overruns|ends too early/],
    ];
    for (const [name, bytes, message] of bad) {
      await assert.rejects(inspectMedia(bufferSource(bytes)), (e: Error) => e instanceof MediaRejected && message.test(e.message), name);
    }
  });

  test('file names keep their stem and get an extension that matches the content', () => {
    assert.equal(cleanFilename('holiday.mp4', 'image/png'), 'holiday.png');
    assert.equal(cleanFilename('C:\\Users\\me\\photo.JPEG', 'image/jpeg'), 'photo.JPEG');
    assert.equal(cleanFilename('../../etc/passwd', 'image/gif'), 'passwd.gif');
    assert.equal(cleanFilename('report.v2', 'video/mp4'), 'report.v2.mp4');
    assert.equal(cleanFilename(undefined, 'video/quicktime'), 'upload.mov');
    assert.equal(cleanFilename(`${'a'.repeat(300)}.png`, 'image/png').length, 255);
  });
});

describe('uploads', () => {
  test('a PNG is stored whole under its key and recorded with what the bytes say', async () => {
    const bytes = png(64, 48);
    const asset = await upload(member(), chunks(bytes, 100), { filename: 'logo.png', declaredType: 'image/png' });
    assert.deepEqual(
      { ...asset, _id: undefined },
      {
        _id: undefined,
        workspaceId: 'ws_a1',
        kind: 'image',
        contentType: 'image/png',
        filename: 'logo.png',
        byteSize: bytes.length,
        width: 64,
        height: 48,
        durationMs: null,
        sha256: sha256(bytes),
        createdBy: 'usr_a1',
        createdAt: NOW,
      },
    );
    const key = `hub_a/ws_a1/${asset._id}.png`;
    assert.ok((await media.files()).includes(key));
    assert.deepEqual(await readFile(path.join(media.root, key)), bytes);
    assert.deepEqual(await call('get_media', member(), { id: asset._id }), asset);
  });

  test('a PNG named .mp4 and declared video/mp4 is stored as the PNG it is', async () => {
    const asset = await upload(member(), chunks(png(3, 3)), { filename: 'clip.mp4', declaredType: 'video/mp4' });
    assert.equal(asset.contentType, 'image/png');
    assert.equal(asset.filename, 'clip.png');
  });

  test('videos: MP4 and MOV with their duration, from memory too (the MCP path)', async () => {
    const mp4 = await upload(
      member(),
      chunks(movie({ width: 1280, height: 720, durationMs: 15_000, moovAtEnd: true, mdatBytes: 300_000 })),
      { filename: 'reel.mp4' },
    );
    assert.deepEqual([mp4.kind, mp4.contentType, mp4.width, mp4.height, mp4.durationMs], ['video', 'video/mp4', 1280, 720, 15_000]);
    const mov = await addMediaFromBuffer(
      member(),
      principal('hub_a', 'ws_a1', 'usr_a1'),
      movie({ brand: 'qt  ', width: 1920, height: 1080, durationMs: 2_500 }),
      { filename: 'take.mov', declaredType: 'application/octet-stream' },
    );
    assert.deepEqual([mov.contentType, mov.durationMs], ['video/quicktime', 2_500]);
  });

  test('refused before anything is stored: HTML claiming image/png, oversize, empty, broken', async () => {
    const before = { files: await media.files(), rows: await rowCount() };
    const html = await refusal(
      upload(member(), chunks(Buffer.from('<html><script>alert(1)</script></html>'.padEnd(2_000, ' '))), {
        filename: 'cat.png',
        declaredType: 'image/png',
      }),
    );
    assert.deepEqual([html.status, html.code, html.issues?.[0]?.field], [415, 'unsupported_media_type', 'file']);
    assert.match(html.message, /declared image\/png/);

    // Exactly the limit passes; one byte more is refused while streaming.
    const atLimit = Buffer.concat([png(2, 2), Buffer.alloc(IMAGE_MAX_BYTES - png(2, 2).length)]);
    const accepted = await upload(member(), chunks(atLimit, 1024 * 1024), { filename: 'big.png' });
    assert.equal(accepted.byteSize, IMAGE_MAX_BYTES);
    await media.store.remove(`hub_a/ws_a1/${accepted._id}.png`);
    await db.kysely.deleteFrom('media_assets').where('id', '=', accepted._id).execute();
    const tooBig = await refusal(
      upload(member(), chunks(Buffer.concat([atLimit, Buffer.from([0])]), 1024 * 1024), { filename: 'big.png' }),
    );
    assert.deepEqual([tooBig.status, tooBig.code], [413, 'payload_too_large']);
    assert.match(tooBig.issues![0]!.message, /larger than 10 MB, the limit for images/);

    assert.equal((await refusal(upload(member(), [], { filename: 'empty.png' }))).issues?.[0]?.message, 'is empty');
    const cut = await refusal(upload(member(), chunks(jpeg(100, 100).subarray(0, 30)), { filename: 'cut.jpg' }));
    assert.deepEqual([cut.status, cut.issues?.[0]?.field], [400, 'file']);

    assert.deepEqual({ files: await media.files(), rows: await rowCount() }, before, 'no file (staging included) and no row left behind');
  });

  test('a body that breaks off mid-upload, or a row that cannot be written, leaves nothing', async () => {
    const before = { files: await media.files(), rows: await rowCount() };
    async function* breaksOff() {
      yield png(10, 10);
      throw new Error('client went away');
    }
    await assert.rejects(upload(member(), breaksOff(), { filename: 'x.png' }), /client went away/);
    // A user that does not exist: the row fails its foreign key after the file was committed.
    const ghost = caller(db, clock, media.store, principal('hub_a', 'ws_a1', 'usr_ghost'));
    await assert.rejects(upload(ghost, chunks(png(4, 4)), { filename: 'ghost.png' }), /foreign key/);
    assert.deepEqual({ files: await media.files(), rows: await rowCount() }, before);
  });

  test('tenancy: only the workspace and its hub admin see an asset; admins name the workspace', async () => {
    const asset = await upload(member(), chunks(gif(2, 2)), { filename: 'dot.gif' });
    const admin = caller(db, clock, media.store, principal('hub_a', null, 'usr_admin'));
    assert.equal((await call('get_media', admin, { id: asset._id }))._id, asset._id);
    for (const other of [principal('hub_a', 'ws_a2', 'usr_a2'), principal('hub_b', 'ws_b1', 'usr_b')]) {
      assert.equal((await refusal(call('get_media', caller(db, clock, media.store, other), { id: asset._id }))).status, 404);
      const page = await call('list_media', caller(db, clock, media.store, other), {});
      assert.ok(page.data.every((m: { _id: string }) => m._id !== asset._id));
    }
    assert.equal((await refusal(upload(admin, chunks(gif(2, 2)), {}))).issues?.[0]?.field, 'workspaceId');
    const forA2 = await upload(admin, chunks(gif(2, 2)), { workspaceId: 'ws_a2' });
    assert.equal(forA2.workspaceId, 'ws_a2');
    assert.equal((await refusal(upload(member(), chunks(gif(2, 2)), { workspaceId: 'ws_a2' }))).issues?.[0]?.field, 'workspaceId');
  });

  test('list_media pages oldest first and filters by kind', async () => {
    const all: { _id: string; kind: string }[] = [];
    let cursor: string | undefined;
    do {
      const page = await call('list_media', member(), { limit: 2, ...(cursor ? { cursor } : {}) });
      all.push(...page.data);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    assert.equal(
      all.length,
      await db.kysely
        .selectFrom('media_assets')
        .select('id')
        .where('workspace_id', '=', 'ws_a1')
        .execute()
        .then((r) => r.length),
    );
    const videos = await call('list_media', member(), { kind: 'video' });
    assert.ok(videos.data.length >= 2 && videos.data.every((m: { kind: string }) => m.kind === 'video'));
  });

  test('Idempotency-Key: the same bytes replay; other bytes under the key are refused', async () => {
    const bytes = png(7, 7);
    const first = await upload(member('up-1'), chunks(bytes), { filename: 'a.png' });
    const files = await media.files();
    const again = member('up-1');
    assert.deepEqual(await upload(again, chunks(bytes), { filename: 'a.png' }), first);
    assert.equal(again.headers['Idempotent-Replayed'], 'true');
    assert.equal((await refusal(upload(member('up-1'), chunks(png(8, 8)), { filename: 'a.png' }))).code, 'idempotency_key_reused');
    assert.deepEqual(await media.files(), files, 'neither the replay nor the refusal stored a file');
  });
});

describe('POST /media (multipart)', () => {
  let app: FastifyInstance;
  before(async () => {
    app = Fastify();
    app.setErrorHandler((error: Error & { statusCode?: number }, _request, reply) => {
      const refused = refusalOf(error);
      if (refused) return reply.code(refused.status).send(refused.body());
      return reply.code(error.statusCode ?? 500).send({ error: 'other', message: error.message });
    });
    await registerMediaUpload(app, { resolveContext: async () => caller(db, clock, media.store, principal('hub_a', null, 'usr_admin')) });
    await app.ready();
  });
  after(() => app.close());

  const BOUNDARY = 'hubops-test-boundary';
  function form(parts: { name: string; value: string | Buffer; filename?: string; type?: string }[]): Buffer {
    return Buffer.concat([
      ...parts.flatMap((p) => [
        Buffer.from(
          `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${p.name}"${p.filename ? `; filename="${p.filename}"` : ''}\r\n${p.type ? `Content-Type: ${p.type}\r\n` : ''}\r\n`,
        ),
        Buffer.from(p.value),
        Buffer.from('\r\n'),
      ]),
      Buffer.from(`--${BOUNDARY}--\r\n`),
    ]);
  }
  const post = (payload: Buffer, headers: Record<string, string> = {}) =>
    app.inject({
      method: 'POST',
      url: '/media',
      payload,
      headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, ...headers },
    });

  test('a workspaceId field and a file part: 201 with the asset; the key replays', async () => {
    const payload = form([
      { name: 'workspaceId', value: 'ws_a1' },
      { name: 'file', value: webpLossless(120, 80), filename: 'banner.jpg', type: 'image/jpeg' },
    ]);
    const response = await post(payload, { 'idempotency-key': 'route-1' });
    assert.equal(response.statusCode, 201, response.body);
    const asset = response.json();
    assert.deepEqual(
      [asset.contentType, asset.filename, asset.width, asset.height, asset.workspaceId],
      ['image/webp', 'banner.webp', 120, 80, 'ws_a1'],
    );
    const replay = await post(payload, { 'idempotency-key': 'route-1' });
    assert.deepEqual([replay.statusCode, replay.headers['idempotent-replayed'], replay.json()._id], [201, 'true', asset._id]);
  });

  test('the workspace may come in the query string; no file part is a 400; JSON is a 415', async () => {
    const ok = await app.inject({
      method: 'POST',
      url: '/media?workspaceId=ws_a2',
      payload: form([{ name: 'file', value: png(2, 2), filename: 'a.png' }]),
      headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
    });
    assert.equal(ok.json().workspaceId, 'ws_a2');
    const missing = await post(form([{ name: 'workspaceId', value: 'ws_a1' }]));
    assert.deepEqual(
      [missing.statusCode, missing.json().issues],
      [400, [{ field: 'file', message: 'is required: send the media as a multipart part named "file"' }]],
    );
    const json = await app.inject({ method: 'POST', url: '/media', payload: { file: 'x' } });
    assert.equal(json.statusCode, 415);
  });

  test('a client that disconnects mid-body: its staging file is deleted at once, nothing is stored', async () => {
    const before = { files: await media.files(), rows: await rowCount() };
    const address = await app.listen({ port: 0, host: '127.0.0.1' });
    const head = Buffer.from(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="workspaceId"\r\n\r\nws_a1\r\n` +
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.png"\r\nContent-Type: image/png\r\n\r\n`,
    );
    const socket = connect(Number(new URL(address).port), '127.0.0.1');
    await once(socket, 'connect');
    socket.write(
      `POST /media HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${8 * 1024 * 1024}\r\n\r\n`,
    );
    socket.write(Buffer.concat([head, png(2, 2), Buffer.alloc(3 * 1024 * 1024)]));
    const staged = async () => {
      const files = (await media.files()).filter((f) => f.startsWith('.staging/'));
      return Promise.all(files.map(async (f) => (await stat(path.join(media.root, f)).catch(() => ({ size: 0 }))).size));
    };
    for (let deadline = Date.now() + 10_000; !(await staged()).some((size) => size >= 2 * 1024 * 1024); ) {
      assert.ok(Date.now() < deadline, 'the upload reached staging');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    socket.destroy();
    for (let deadline = Date.now() + 1_000; (await staged()).length > 0; ) {
      assert.ok(Date.now() < deadline, 'the staging file was deleted within a second of the disconnect');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.deepEqual({ files: await media.files(), rows: await rowCount() }, before);
  });

  test('an oversize image is refused with 413 and leaves no file', async () => {
    const files = await media.files();
    const big = Buffer.concat([png(2, 2), Buffer.alloc(IMAGE_MAX_BYTES)]);
    const response = await post(
      form([
        { name: 'workspaceId', value: 'ws_a1' },
        { name: 'file', value: big, filename: 'big.png', type: 'image/png' },
      ]),
    );
    assert.deepEqual([response.statusCode, response.json().error], [413, 'payload_too_large']);
    assert.deepEqual(await media.files(), files);
  });
});
