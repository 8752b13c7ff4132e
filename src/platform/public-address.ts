import { isIPv4, isIPv6 } from 'node:net';

// Which IP addresses the server may connect to on a user's behalf (fetching a URL an agent gave
// us): only public unicast internet addresses. Everything else — loopback, private, link-local,
// shared (CGNAT), multicast, documentation, benchmarking and reserved ranges, for IPv4 and IPv6,
// and IPv4 addresses embedded in IPv6 (mapped, compatible, NAT64, 6to4, Teredo) — is refused,
// so a URL cannot reach the server itself, its database, the cloud metadata service or the LAN.

type Range = [first: number, bits: number, reason: string];

// IANA IPv4 Special-Purpose Address Registry, plus multicast and the reserved class E.
const IPV4_RANGES: Range[] = [
  [ipv4('0.0.0.0'), 8, 'a "this network" address'],
  [ipv4('10.0.0.0'), 8, 'a private address'],
  [ipv4('100.64.0.0'), 10, 'a shared (carrier-grade NAT) address'],
  [ipv4('127.0.0.0'), 8, 'a loopback address'],
  [ipv4('169.254.0.0'), 16, 'a link-local address (cloud metadata lives here)'],
  [ipv4('172.16.0.0'), 12, 'a private address'],
  [ipv4('192.0.0.0'), 24, 'an IETF protocol assignment'],
  [ipv4('192.0.2.0'), 24, 'a documentation address'],
  [ipv4('192.31.196.0'), 24, 'a special-purpose (AS112) address'],
  [ipv4('192.52.193.0'), 24, 'a special-purpose (AMT) address'],
  [ipv4('192.88.99.0'), 24, 'a deprecated 6to4 relay address'],
  [ipv4('192.168.0.0'), 16, 'a private address'],
  [ipv4('192.175.48.0'), 24, 'a special-purpose (AS112) address'],
  [ipv4('198.18.0.0'), 15, 'a benchmarking address'],
  [ipv4('198.51.100.0'), 24, 'a documentation address'],
  [ipv4('203.0.113.0'), 24, 'a documentation address'],
  [ipv4('224.0.0.0'), 4, 'a multicast address'],
  [ipv4('240.0.0.0'), 4, 'a reserved address'],
];

/** Dotted-quad IPv4 to an unsigned 32-bit integer (the caller checked the syntax). */
function ipv4(text: string): number {
  return text.split('.').reduce((n, octet) => n * 256 + Number(octet), 0) >>> 0;
}

function inRange(value: number, first: number, bits: number): boolean {
  if (bits === 0) return true;
  const mask = (0xffffffff << (32 - bits)) >>> 0;
  return (value & mask) >>> 0 === (first & mask) >>> 0;
}

function ipv4Reason(value: number): string | undefined {
  for (const [first, bits, reason] of IPV4_RANGES) if (inRange(value, first, bits)) return reason;
  return undefined;
}

/** The eight 16-bit groups of an IPv6 address (the caller checked the syntax; no zone). */
function ipv6Groups(text: string): number[] {
  let s = text.toLowerCase();
  if (s.includes('.')) {
    const at = s.lastIndexOf(':');
    const v4 = ipv4(s.slice(at + 1));
    s = `${s.slice(0, at + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const [head, tail] = s.includes('::') ? (s.split('::') as [string, string]) : [s, undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : Array.from({ length: 8 - left.length - right.length }, () => '0');
  return [...left, ...zeros, ...right].map((g) => parseInt(g, 16));
}

const embeddedIpv4 = (groups: number[], at: number) => ((groups[at]! << 16) | groups[at + 1]!) >>> 0;
const formatIpv4 = (n: number) => [n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff].join('.');

function ipv6Reason(groups: number[]): string | undefined {
  const [g0, g1, g2, g3, g4, g5, , g7] = groups as [number, number, number, number, number, number, number, number];
  const zeroUpTo = (n: number) => groups.slice(0, n).every((g) => g === 0);
  if (zeroUpTo(8)) return 'the unspecified address';
  if (zeroUpTo(7) && g7 === 1) return 'a loopback address';
  if (zeroUpTo(5) && g5 === 0xffff) {
    const v4 = embeddedIpv4(groups, 6);
    const inner = ipv4Reason(v4);
    return inner ? `an IPv4-mapped address of ${formatIpv4(v4)}, ${inner}` : undefined;
  }
  if (zeroUpTo(6)) return 'a deprecated IPv4-compatible address';
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) {
    const v4 = embeddedIpv4(groups, 6);
    const inner = ipv4Reason(v4);
    return inner ? `a NAT64 address of ${formatIpv4(v4)}, ${inner}` : undefined;
  }
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 1) return 'a local-use NAT64 address';
  if (g0 === 0x100 && g1 === 0 && g2 === 0 && g3 === 0) return 'a discard-only address';
  if ((g0 & 0xfe00) === 0xfc00) return 'a unique local (private) address';
  if ((g0 & 0xffc0) === 0xfe80) return 'a link-local address';
  if ((g0 & 0xffc0) === 0xfec0) return 'a deprecated site-local address';
  if ((g0 & 0xff00) === 0xff00) return 'a multicast address';
  // Everything below is inside or outside global unicast (2000::/3).
  if ((g0 & 0xe000) !== 0x2000) return 'a reserved address (not global unicast)';
  if (g0 === 0x2001 && g1 === 0x0db8) return 'a documentation address';
  if (g0 === 0x2001 && g1 < 0x0200) return g1 === 0 ? 'a Teredo tunnel address' : 'an IETF protocol assignment';
  if (g0 === 0x2002) return 'a deprecated 6to4 address';
  if (g0 === 0x3fff && g1 < 0x1000) return 'a documentation address';
  return undefined;
}

/**
 * Why the server must not connect to `address`, in words ("a loopback address"); undefined when
 * it is a public unicast internet address. Anything that is not a plain IP address is refused.
 */
export function nonPublicReason(address: string): string | undefined {
  if (isIPv4(address)) return ipv4Reason(ipv4(address));
  if (address.includes('%')) return 'a scoped (link-local) address';
  if (isIPv6(address)) return ipv6Reason(ipv6Groups(address));
  return 'not an IP address';
}

export const isPublicAddress = (address: string): boolean => nonPublicReason(address) === undefined;
