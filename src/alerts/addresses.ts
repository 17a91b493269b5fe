// Which addresses a webhook may reach: the SSRF guard's rules, pure so they are
// tested without a network. A host is refused when it is, or resolves to, a
// loopback, link-local, private, unique-local, unspecified (and similar
// non-public: shared, multicast, reserved) address, in any spelling: IPv4 in
// dotted, decimal, octal or hex form (and their shortened a.b / a.b.c forms),
// IPv6 including IPv4-mapped, IPv4-compatible, NAT64 and 6to4 addresses that
// embed one. Resolution itself is the edition's (AlertRuntime.resolveHost). The
// parsers of every spelling are src/ip-ranges.ts's.
import { parseIPv4, parseIPv6 } from '../ip-ranges.js';

/** Why an address is refused, or null when it is public. */
export function forbiddenAddressReason(address: string): string | null {
  const v4 = parseIPv4(address);
  if (v4 !== null) return ipv4Reason(v4);
  const v6 = parseIPv6(address);
  if (v6 !== null) return ipv6Reason(v6);
  return null;
}

/** A host name that names this machine without DNS (RFC 6761 `localhost`). */
export function isLocalhostName(host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost');
}

/** The host of a URL as an address when it is one (IPv6 without brackets), else null. */
export function literalAddress(hostname: string): string | null {
  const h = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  if (parseIPv4(h) !== null || parseIPv6(h) !== null) return h;
  return null;
}

/**
 * The host's own problem, before any DNS: a forbidden literal address or a localhost
 * name. Null when only resolution can tell (a name), or when the literal is public.
 */
export function forbiddenHostReason(hostname: string): string | null {
  if (isLocalhostName(hostname)) return 'a loopback address (localhost)';
  const literal = literalAddress(hostname);
  return literal === null ? null : forbiddenAddressReason(literal);
}

// ---------------------------------------------------------------------------
// IPv4
// ---------------------------------------------------------------------------

function inV4(n: number, base: string, bits: number): boolean {
  const b = parseIPv4(base)!;
  const size = 2 ** (32 - bits);
  return Math.floor(n / size) === Math.floor(b / size);
}

const V4_RANGES: [string, number, string][] = [
  ['0.0.0.0', 8, 'an unspecified address (0.0.0.0/8)'],
  ['127.0.0.0', 8, 'a loopback address'],
  ['10.0.0.0', 8, 'a private address'],
  ['172.16.0.0', 12, 'a private address'],
  ['192.168.0.0', 16, 'a private address'],
  ['169.254.0.0', 16, 'a link-local address'],
  ['100.64.0.0', 10, 'a shared (carrier-grade NAT) address'],
  ['192.0.0.0', 24, 'an IETF protocol address'],
  ['198.18.0.0', 15, 'a benchmarking address'],
  ['224.0.0.0', 4, 'a multicast address'],
  ['240.0.0.0', 4, 'a reserved address'],
];

function ipv4Reason(n: number): string | null {
  for (const [base, bits, reason] of V4_RANGES) if (inV4(n, base, bits)) return reason;
  return null;
}

// ---------------------------------------------------------------------------
// IPv6
// ---------------------------------------------------------------------------

function embeddedV4(g: number[], from: number): number {
  return g[from] * 65536 + g[from + 1];
}

function ipv6Reason(g: number[]): string | null {
  const zeroUpTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (g.every((x) => x === 0)) return 'an unspecified address (::)';
  if (zeroUpTo(7) && g[7] === 1) return 'a loopback address (::1)';
  // ::ffff:a.b.c.d (IPv4-mapped) and ::a.b.c.d (IPv4-compatible) reach the IPv4 address.
  if (zeroUpTo(5) && g[5] === 0xffff) return mapped(ipv4Reason(embeddedV4(g, 6)));
  if (zeroUpTo(6)) return mapped(ipv4Reason(embeddedV4(g, 6)));
  // 64:ff9b::/96 (NAT64) and 2002::/16 (6to4) carry an IPv4 address too.
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0))
    return mapped(ipv4Reason(embeddedV4(g, 6)));
  if (g[0] === 0x2002) return mapped(ipv4Reason(embeddedV4(g, 1)));
  if ((g[0] & 0xffc0) === 0xfe80) return 'a link-local address (fe80::/10)';
  if ((g[0] & 0xffc0) === 0xfec0) return 'a site-local address (fec0::/10)';
  if ((g[0] & 0xfe00) === 0xfc00) return 'a unique-local address (fc00::/7)';
  if ((g[0] & 0xff00) === 0xff00) return 'a multicast address (ff00::/8)';
  return null;
}

function mapped(reason: string | null): string | null {
  return reason === null ? null : `${reason} (embedded in an IPv6 address)`;
}
