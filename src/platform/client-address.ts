// The client's address: the socket's, or behind trusted reverse proxies the address the nearest
// untrusted hop was seen from, read from X-Forwarded-For or Forwarded (RFC 7239). Every limit
// keyed on a client address and every request log line use it (TRUST_PROXY, docs/operations.md
// "Behind a reverse proxy").
import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The client's address: the socket's, or behind TRUST_PROXY the forwarded one. Every limit
     * keyed on an address and every log line use it; `request.ip` is the socket's alone.
     */
    readonly clientAddress: string;
  }
}

/** TRUST_PROXY: how many proxies stand in front of the server, or which addresses are proxies. */
export type TrustedProxies = { hops: number } | { addresses: string[] };

/** TRUST_PROXY_HEADER: the header the trusted proxies append the client's address to. */
export type ForwardedHeader = 'x-forwarded-for' | 'forwarded';
export const FORWARDED_HEADERS: readonly ForwardedHeader[] = ['x-forwarded-for', 'forwarded'];

export const MAX_PROXY_HOPS = 10;

/** Names for ranges an operator would otherwise spell out. */
const NAMED_RANGES: Record<string, string[]> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  private: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

/**
 * Parses TRUST_PROXY: empty or `off` (no proxy: the socket's address), a number of hops, or a
 * comma-separated list of addresses and CIDR ranges (and `loopback`, `private`). Throws an Error
 * whose message says what is wrong with the text.
 */
export function parseTrustedProxies(text: string): TrustedProxies | undefined {
  const value = text.trim();
  if (value === '' || value === 'off') return undefined;
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (hops < 1 || hops > MAX_PROXY_HOPS) throw new Error(`a number of proxy hops must be from 1 to ${MAX_PROXY_HOPS}, got ${hops}`);
    return { hops };
  }
  const addresses = value.split(',').map((entry) => entry.trim());
  for (const entry of addresses) {
    if (entry in NAMED_RANGES) continue;
    const [address, prefix, extra] = entry.split('/');
    const family = isIP(address ?? '');
    const bits = family === 4 ? 32 : 128;
    if (family === 0 || extra !== undefined || (prefix !== undefined && (!/^\d{1,3}$/.test(prefix) || Number(prefix) > bits)))
      throw new Error(`${JSON.stringify(entry.slice(0, 60))} is not an IP address, a CIDR range (10.0.0.0/8), loopback or private`);
  }
  return { addresses };
}

/** An address as written in a header entry, without port, brackets or IPv4-mapped prefix; undefined if it is none. */
function normalise(text: string): string | undefined {
  let value = text.trim();
  if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1);
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(value);
  if (bracketed) value = bracketed[1]!;
  else if (/^[\d.]+:\d+$/.test(value)) value = value.slice(0, value.lastIndexOf(':'));
  if (isIP(value) === 0) return undefined;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(value);
  return mapped ? mapped[1]! : value.toLowerCase();
}

/** The `for=` of each element of a Forwarded header, nearest last (RFC 7239 §4, §5.2). */
function forwardedFor(value: string): string[] {
  const result: string[] = [];
  // Elements are comma-separated, pairs semicolon-separated; quoted strings may hold either.
  for (const element of value.match(/(?:[^,"]|"(?:[^"\\]|\\.)*")+/g) ?? []) {
    let found = '';
    for (const pair of element.match(/(?:[^;"]|"(?:[^"\\]|\\.)*")+/g) ?? []) {
      const eq = pair.indexOf('=');
      if (eq > 0 && pair.slice(0, eq).trim().toLowerCase() === 'for') found = pair.slice(eq + 1).trim();
    }
    // An element without for= (or with `unknown`, an obfuscated name) says nothing usable: kept
    // as an entry that is no address, so the walk stops there rather than skipping a hop.
    result.push(found);
  }
  return result;
}

export class ClientAddresses {
  readonly #trust: TrustedProxies | undefined;
  readonly #header: ForwardedHeader;
  readonly #trusted: BlockList | undefined;

  constructor(trust: TrustedProxies | undefined, header: ForwardedHeader = 'x-forwarded-for') {
    this.#trust = trust;
    this.#header = header;
    if (trust && 'addresses' in trust) {
      const list = new BlockList();
      for (const entry of trust.addresses.flatMap((e) => NAMED_RANGES[e] ?? [e])) {
        const [address, prefix] = entry.split('/') as [string, string | undefined];
        const family = isIP(address) === 4 ? 'ipv4' : 'ipv6';
        if (prefix === undefined) list.addAddress(address, family);
        else list.addSubnet(address, Number(prefix), family);
      }
      this.#trusted = list;
    }
  }

  /** The client's address for a request arriving on `request`'s socket with its headers. */
  of(request: IncomingMessage): string {
    const socketAddress = request.socket?.remoteAddress ?? '';
    if (!this.#trust) return socketAddress;
    const value = request.headers[this.#header];
    const text = Array.isArray(value) ? value.join(',') : (value ?? '');
    const entries = text.trim() === '' ? [] : this.#header === 'forwarded' ? forwardedFor(text) : text.split(',');
    // The chain as the nearest proxy saw it: the addresses it was told, then the one it came from.
    const chain = [...entries, socketAddress];
    let index = chain.length - 1;
    let address = normalise(socketAddress) ?? socketAddress;
    // Step left past each trusted hop, never past an entry that is no address.
    for (let hop = 0; index > 0 && this.#trusts(address, hop); hop++) {
      const next = normalise(chain[index - 1]!);
      if (next === undefined) break;
      index--;
      address = next;
    }
    return address;
  }

  #trusts(address: string, hop: number): boolean {
    const trust = this.#trust!;
    if ('hops' in trust) return hop < trust.hops;
    return this.#trusted!.check(address, isIP(address) === 4 ? 'ipv4' : 'ipv6');
  }
}

/** The client address of a raw request, for code outside Fastify's request (oidc-provider's Koa context). */
export type ClientAddressOf = (request: IncomingMessage) => string;

/** Gives every request its `clientAddress` under the configured trust; returns the same rule for raw requests. */
export function decorateClientAddress(
  fastify: FastifyInstance,
  config: { trustProxy: TrustedProxies | undefined; trustProxyHeader: ForwardedHeader },
): ClientAddressOf {
  const addresses = new ClientAddresses(config.trustProxy, config.trustProxyHeader);
  fastify.decorateRequest('clientAddress', {
    getter(this: FastifyRequest) {
      return addresses.of(this.raw);
    },
  });
  return (request) => addresses.of(request);
}
