import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, test } from 'node:test';
import { ClientAddresses, parseTrustedProxies, type ForwardedHeader } from '../../src/platform/client-address.ts';

// The client's address behind reverse proxies (TRUST_PROXY): which hop of X-Forwarded-For or
// Forwarded is believed, and that nothing a client writes itself gets past a trusted proxy.

const request = (socket: string, headers: Record<string, string> = {}) =>
  ({ socket: { remoteAddress: socket }, headers }) as unknown as IncomingMessage;

const resolve = (trust: string, header: ForwardedHeader = 'x-forwarded-for') => new ClientAddresses(parseTrustedProxies(trust), header);

describe('client address', () => {
  test('off by default: the socket address, whatever the headers say', () => {
    for (const trust of ['', 'off', '  ']) {
      const addresses = resolve(trust);
      assert.equal(addresses.of(request('127.0.0.1', { 'x-forwarded-for': '203.0.113.7' })), '127.0.0.1');
      assert.equal(addresses.of(request('::ffff:198.51.100.2', { forwarded: 'for=203.0.113.7' })), '::ffff:198.51.100.2');
    }
  });

  test('hops: the address the nearest untrusted hop was seen from; a client-written entry stays to its left', () => {
    const one = resolve('1');
    assert.equal(one.of(request('127.0.0.1', { 'x-forwarded-for': '203.0.113.7' })), '203.0.113.7');
    // The client wrote 6.6.6.6 itself; the proxy appended what it saw.
    assert.equal(one.of(request('127.0.0.1', { 'x-forwarded-for': '6.6.6.6, 203.0.113.7' })), '203.0.113.7');
    assert.equal(one.of(request('127.0.0.1')), '127.0.0.1', 'no header: the proxy is all there is to know');
    const two = resolve('2');
    assert.equal(two.of(request('10.0.0.5', { 'x-forwarded-for': '6.6.6.6, 203.0.113.7, 10.0.0.9' })), '203.0.113.7');
    assert.equal(two.of(request('10.0.0.5', { 'x-forwarded-for': '203.0.113.7' })), '203.0.113.7', 'fewer entries than hops');
  });

  test('addresses and ranges: trusted hops are skipped, the first untrusted one is the client', () => {
    const proxies = resolve('127.0.0.1, 10.0.0.0/8');
    assert.equal(proxies.of(request('127.0.0.1', { 'x-forwarded-for': '6.6.6.6, 203.0.113.7, 10.1.2.3' })), '203.0.113.7');
    // Not from a trusted proxy: its header is the client's own words.
    assert.equal(proxies.of(request('198.51.100.2', { 'x-forwarded-for': '6.6.6.6' })), '198.51.100.2');
    // Every hop trusted: the leftmost is as far as anyone can see.
    assert.equal(proxies.of(request('127.0.0.1', { 'x-forwarded-for': '10.9.9.9' })), '10.9.9.9');
    const named = resolve('loopback,private');
    assert.equal(named.of(request('::1', { 'x-forwarded-for': '192.168.1.4, 172.20.0.3' })), '192.168.1.4');
    assert.equal(named.of(request('::ffff:127.0.0.1', { 'x-forwarded-for': '2001:db8::7' })), '2001:db8::7');
  });

  test('entries with ports, brackets or garbage: ports dropped, and the walk stops at what is no address', () => {
    const one = resolve('1');
    assert.equal(one.of(request('127.0.0.1', { 'x-forwarded-for': '203.0.113.7:5123' })), '203.0.113.7');
    assert.equal(one.of(request('127.0.0.1', { 'x-forwarded-for': '[2001:DB8::7]:443' })), '2001:db8::7');
    assert.equal(one.of(request('127.0.0.1', { 'x-forwarded-for': 'nonsense' })), '127.0.0.1');
    assert.equal(one.of(request('127.0.0.1', { 'x-forwarded-for': '203.0.113.7,' })), '127.0.0.1');
  });

  test('Forwarded (RFC 7239): for= of each element, quoted IPv6 with a port, unknown and obfuscated names', () => {
    const one = resolve('1', 'forwarded');
    assert.equal(one.of(request('127.0.0.1', { forwarded: 'for=6.6.6.6, for=203.0.113.7;proto=https;by=10.0.0.1' })), '203.0.113.7');
    assert.equal(one.of(request('127.0.0.1', { forwarded: 'proto=https;for="[2001:db8:cafe::17]:4711"' })), '2001:db8:cafe::17');
    assert.equal(one.of(request('127.0.0.1', { forwarded: 'for=unknown' })), '127.0.0.1');
    assert.equal(one.of(request('127.0.0.1', { forwarded: 'for=_hidden;by="a,b"' })), '127.0.0.1');
    // The other header is not read: a client's X-Forwarded-For is just a header here.
    assert.equal(one.of(request('127.0.0.1', { 'x-forwarded-for': '6.6.6.6', forwarded: 'for=203.0.113.7' })), '203.0.113.7');
    assert.equal(resolve('1').of(request('127.0.0.1', { forwarded: 'for=203.0.113.7' })), '127.0.0.1');
  });

  test('TRUST_PROXY text: hops from 1 to 10, addresses, CIDR ranges, loopback, private; anything else says what is wrong', () => {
    assert.deepEqual(parseTrustedProxies('2'), { hops: 2 });
    assert.deepEqual(parseTrustedProxies('10.0.0.0/8, ::1'), { addresses: ['10.0.0.0/8', '::1'] });
    for (const [text, problem] of [
      ['0', /from 1 to 10/],
      ['11', /from 1 to 10/],
      ['10.0.0.0/33', /"10.0.0.0\/33" is not/],
      ['proxy.internal', /"proxy.internal" is not/],
      ['10.0.0.1,', /"" is not/],
      ['::1/129', /is not/],
    ] as const)
      assert.throws(() => parseTrustedProxies(text), problem, text);
  });
});
