// add_media's URL fetching, without the public internet: the address filter over many
// addresses (IPv4, IPv6, IPv4 embedded in IPv6), and safeFetch against local servers with the
// filter narrowed to "127.0.0.1 only" — redirects re-checked, DNS answers pinned, size limits
// while streaming, timeouts — and what it streams stored through the media service.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { FixedClock } from '../../src/platform/clock.ts';
import { isPublicAddress, nonPublicReason } from '../../src/platform/public-address.ts';
import { safeFetch, UrlFetchFailed, UrlRefused, UrlTooLarge, type SafeFetchOptions } from '../../src/platform/safe-fetch.ts';
import { caller, principal, tempMediaStore, upload, user } from '../support/content-world.ts';
import { createTestDb } from '../support/db.ts';
import * as fx from '../support/world.ts';
import { png } from '../support/media-files.ts';

describe('public address filter', () => {
  const refused: [string, RegExp][] = [
    ['0.0.0.0', /this network/],
    ['0.1.2.3', /this network/],
    ['10.0.0.1', /private/],
    ['10.255.255.255', /private/],
    ['100.64.0.1', /carrier-grade NAT/],
    ['100.127.255.255', /carrier-grade NAT/],
    ['127.0.0.1', /loopback/],
    ['127.255.255.254', /loopback/],
    ['169.254.169.254', /link-local/],
    ['169.254.0.1', /link-local/],
    ['172.16.0.1', /private/],
    ['172.31.255.255', /private/],
    ['192.0.0.8', /IETF/],
    ['192.0.2.1', /documentation/],
    ['192.88.99.1', /6to4/],
    ['192.168.0.1', /private/],
    ['192.168.255.255', /private/],
    ['198.18.0.1', /benchmarking/],
    ['198.19.255.255', /benchmarking/],
    ['198.51.100.7', /documentation/],
    ['203.0.113.9', /documentation/],
    ['224.0.0.1', /multicast/],
    ['239.255.255.250', /multicast/],
    ['240.0.0.1', /reserved/],
    ['255.255.255.255', /reserved/],
    ['::', /unspecified/],
    ['::1', /loopback/],
    ['0:0:0:0:0:0:0:1', /loopback/],
    ['::ffff:127.0.0.1', /IPv4-mapped address of 127\.0\.0\.1, a loopback/],
    ['::ffff:7f00:1', /IPv4-mapped .*loopback/],
    ['::FFFF:10.0.0.1', /IPv4-mapped .*private/],
    ['::ffff:169.254.169.254', /IPv4-mapped .*link-local/],
    ['::ffff:a9fe:a9fe', /IPv4-mapped .*link-local/],
    ['::ffff:192.168.1.1', /private/],
    ['::127.0.0.1', /IPv4-compatible/],
    ['::a00:1', /IPv4-compatible/],
    ['::ffff:0:127.0.0.1', /reserved/],
    ['64:ff9b::127.0.0.1', /NAT64 address of 127\.0\.0\.1/],
    ['64:ff9b::a9fe:a9fe', /NAT64 .*link-local/],
    ['64:ff9b:1::1', /local-use NAT64/],
    ['100::1', /discard/],
    ['fc00::1', /unique local/],
    ['fd12:3456:789a::1', /unique local/],
    ['fe80::1', /link-local/],
    ['febf:ffff::1', /link-local/],
    ['fe80::1%eth0', /scoped/],
    ['fec0::1', /site-local/],
    ['ff02::1', /multicast/],
    ['ff05::1:3', /multicast/],
    ['2001:db8::1', /documentation/],
    ['2001:db8:ffff::1', /documentation/],
    ['2001::1', /Teredo/],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', /Teredo/],
    ['2001:10::1', /IETF/],
    ['2001:1ff::1', /IETF/],
    ['2002:7f00:1::1', /6to4/],
    ['3fff::1', /documentation/],
    ['5f00::1', /not global unicast/],
    ['4000::1', /not global unicast/],
    ['e000::1', /not global unicast/],
    ['1::1', /not global unicast/],
    ['localhost', /not an IP/],
    ['example.com', /not an IP/],
    ['', /not an IP/],
    ['1.2.3', /not an IP/],
    ['01.2.3.4', /not an IP/],
    ['1.2.3.256', /not an IP/],
  ];
  const allowed = [
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '11.0.0.1',
    '100.63.255.255',
    '100.128.0.0',
    '126.255.255.255',
    '128.0.0.1',
    '169.253.255.255',
    '169.255.0.1',
    '172.15.255.255',
    '172.32.0.1',
    '192.0.1.1',
    '192.167.255.255',
    '192.169.0.1',
    '198.17.255.255',
    '198.20.0.1',
    '223.255.255.255',
    '2606:4700:4700::1111',
    '2001:4860:4860::8888',
    '2a00:1450:4001:82a::200e',
    '2001:200::1',
    '2c0f:fb50:4003::1',
    '::ffff:8.8.8.8',
    '::ffff:808:808',
    '64:ff9b::808:808',
    '3fff:1000::1',
  ];

  for (const [address, reason] of refused) {
    test(`refuses ${address || '(empty)'}`, () => {
      const why = nonPublicReason(address);
      assert.ok(why, `${address} should be refused`);
      assert.match(why, reason);
      assert.equal(isPublicAddress(address), false);
    });
  }
  test(`allows ${allowed.length} public addresses`, () => {
    for (const address of allowed) assert.equal(nonPublicReason(address), undefined, address);
  });
});

describe('safeFetch', () => {
  let server: Server;
  let origin: string;
  let port: number;
  const hits: string[] = [];
  const image = png(9, 4);
  // Local tests: only 127.0.0.1 may be reached (production: public addresses only).
  const only127: SafeFetchOptions = {
    maxBytes: 1_000_000,
    timeoutMs: 2_000,
    refuseAddress: (a) => (a === '127.0.0.1' ? undefined : `not 127.0.0.1 (${a})`),
  };

  before(async () => {
    server = createServer((request, response) => {
      hits.push(`${request.headers.host} ${request.url}`);
      const url = new URL(request.url!, 'http://x');
      const hop = /^\/hop\/(\d+)$/.exec(url.pathname);
      if (hop) {
        const n = Number(hop[1]);
        response.writeHead(n === 0 ? 200 : 302, n === 0 ? { 'content-type': 'image/png' } : { location: `/hop/${n - 1}` });
        return response.end(n === 0 ? image : undefined);
      }
      switch (url.pathname) {
        case '/img.png':
          response.writeHead(200, { 'content-type': 'image/png', 'content-length': image.length });
          return response.end(image);
        case '/to-other-address':
          response.writeHead(307, { location: `http://127.0.0.2:${port}/img.png` });
          return response.end();
        case '/to-file':
          response.writeHead(301, { location: 'file:///etc/passwd' });
          return response.end();
        case '/chunked': {
          response.writeHead(200, { 'content-type': 'application/octet-stream' });
          let sent = 0;
          const timer = setInterval(() => {
            response.write(Buffer.alloc(1000, 1));
            if (++sent === 5) {
              clearInterval(timer);
              response.end();
            }
          }, 5);
          response.on('close', () => clearInterval(timer));
          return;
        }
        case '/declared-large':
          response.writeHead(200, { 'content-length': '5000000' });
          return response.end();
        case '/stall-body':
          response.writeHead(200, { 'content-type': 'image/png' });
          response.write(image.subarray(0, 20));
          return; // never ends
        case '/stall-headers':
          return; // never answers
        default:
          response.writeHead(404);
          return response.end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    origin = `http://127.0.0.1:${port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const read = async (body: AsyncIterable<Buffer>) => {
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(chunk);
    return Buffer.concat(chunks);
  };

  test('the default rule refuses a loopback URL before connecting', async () => {
    const before = hits.length;
    await assert.rejects(
      safeFetch(`${origin}/img.png`, { maxBytes: 1000, timeoutMs: 1000 }),
      (error: Error) => error instanceof UrlRefused && /127\.0\.0\.1 is a loopback address/.test(error.message),
    );
    await assert.rejects(
      safeFetch(`http://[::ffff:127.0.0.1]:${port}/img.png`, { maxBytes: 1000, timeoutMs: 1000 }),
      (error: Error) => error instanceof UrlRefused && /IPv4-mapped/.test(error.message),
    );
    await assert.rejects(
      safeFetch(`http://0x7f.1:${port}/img.png`, { maxBytes: 1000, timeoutMs: 1000 }),
      (error: Error) => error instanceof UrlRefused && /127\.0\.0\.1 is a loopback/.test(error.message),
      'the URL parser normalises 0x7f.1',
    );
    await assert.rejects(safeFetch(`http://2130706433:${port}/img.png`, { maxBytes: 1000, timeoutMs: 1000 }), UrlRefused);
    assert.equal(hits.length, before, 'no request reached the server');
  });

  test('a host name is checked on every address it resolves to, and the connection goes to the checked address', async () => {
    const resolveTo =
      (...addresses: string[]) =>
      async () =>
        addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    await assert.rejects(
      safeFetch('http://media.example.test/a.png', { maxBytes: 10, timeoutMs: 1000, resolve: resolveTo('10.0.0.5') }),
      (error: Error) =>
        error instanceof UrlRefused &&
        error.message ===
          'media.example.test resolves to 10.0.0.5, which is a private address; only addresses on the public internet can be fetched',
    );
    await assert.rejects(
      safeFetch('http://media.example.test/a.png', { maxBytes: 10, timeoutMs: 1000, resolve: resolveTo('8.8.8.8', 'fd00::1') }),
      (error: Error) => error instanceof UrlRefused && /fd00::1/.test(error.message),
      'one private answer among public ones is enough to refuse',
    );
    // cdn.invalid has no DNS at all: the request can only have reached 127.0.0.1 through the pinned lookup.
    const fetched = await safeFetch(`http://cdn.invalid:${port}/img.png`, { ...only127, resolve: resolveTo('127.0.0.1') });
    assert.deepEqual(await read(fetched.body), image);
    assert.equal(hits.at(-1), `cdn.invalid:${port} /img.png`, 'the Host header keeps the name');
  });

  test('fetches, following at most 3 redirects, each target re-checked', async () => {
    const direct = await safeFetch(`${origin}/img.png`, only127);
    assert.equal(direct.contentType, 'image/png');
    assert.deepEqual(await read(direct.body), image);
    const three = await safeFetch(`${origin}/hop/3`, only127);
    assert.equal(three.url, `${origin}/hop/0`);
    assert.deepEqual(await read(three.body), image);
    await assert.rejects(
      safeFetch(`${origin}/hop/4`, only127),
      (error: Error) => error instanceof UrlRefused && /more than 3 redirects/.test(error.message),
    );
    const before = hits.length;
    await assert.rejects(
      safeFetch(`${origin}/to-other-address`, only127),
      (error: Error) => error instanceof UrlRefused && /127\.0\.0\.2/.test(error.message),
    );
    assert.equal(hits.length, before + 1, 'the redirect target was never contacted');
    await assert.rejects(
      safeFetch(`${origin}/to-file`, only127),
      (error: Error) => error instanceof UrlRefused && /only http and https/.test(error.message),
    );
  });

  test('refuses other schemes, credentials and nonsense', async () => {
    for (const [url, message] of [
      ['ftp://127.0.0.1/x', /only http and https/],
      [`http://user:pw@127.0.0.1:${port}/img.png`, /credentials/],
      ['not a url', /valid absolute URL/],
    ] as const) {
      await assert.rejects(safeFetch(url, only127), (error: Error) => error instanceof UrlRefused && message.test(error.message), url);
    }
  });

  test('cuts a body off as soon as it passes the limit, declared or streamed', async () => {
    await assert.rejects(
      safeFetch(`${origin}/declared-large`, only127),
      (error: Error) => error instanceof UrlTooLarge && error.maxBytes === 1_000_000,
    );
    const streamed = await safeFetch(`${origin}/chunked`, { ...only127, maxBytes: 2500 });
    await assert.rejects(read(streamed.body), UrlTooLarge);
    assert.equal((await read((await safeFetch(`${origin}/chunked`, { ...only127, maxBytes: 5000 })).body)).length, 5000);
  });

  test('one deadline covers the answer and the whole body; HTTP errors are failures', async () => {
    await assert.rejects(
      safeFetch(`${origin}/stall-headers`, { ...only127, timeoutMs: 300 }),
      (error: Error) => error instanceof UrlFetchFailed && /within 0\.3 s/.test(error.message),
    );
    const stalled = await safeFetch(`${origin}/stall-body`, { ...only127, timeoutMs: 300 });
    await assert.rejects(read(stalled.body), (error: Error) => error instanceof UrlFetchFailed && /within 0\.3 s/.test(error.message));
    await assert.rejects(
      safeFetch(`${origin}/missing`, only127),
      (error: Error) => error instanceof UrlFetchFailed && /HTTP 404/.test(error.message),
    );
    await assert.rejects(
      safeFetch('http://127.0.0.1:1/x', only127),
      (error: Error) => error instanceof UrlFetchFailed && /could not be reached/.test(error.message),
    );
  });

  test('what it streams is stored by the media service like an upload (as add_media does)', async () => {
    const db = await createTestDb();
    const media = await tempMediaStore();
    try {
      await fx.account(db);
      await fx.hub(db, 'h1');
      await fx.workspace(db, 'h1', 'w1');
      await user(db, 'usr_1');
      const ctx = caller(db, new FixedClock('2026-11-21T12:00:00Z'), media.store, principal('h1', 'w1', 'usr_1'));
      const fetched = await safeFetch(`${origin}/hop/1`, only127);
      const asset = await upload(ctx, fetched.body, { filename: 'hop', declaredType: fetched.contentType });
      assert.deepEqual([asset.kind, asset.width, asset.height, asset.byteSize, asset.workspaceId], ['image', 9, 4, image.length, 'w1']);
      const notMedia = await safeFetch(`${origin}/chunked`, only127);
      await assert.rejects(upload(ctx, notMedia.body, {}), /not a supported image or video/);
      notMedia.close();
      assert.equal((await media.files()).length, 1, 'only the image was stored');
    } finally {
      await db.drop();
      await media.remove();
    }
  });
});
