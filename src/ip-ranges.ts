// Address ranges (`10.0.0.0/8`, `::1`, `192.168.1.7`) for the TRUSTED_PROXIES setting:
// parsed once from the setting, then matched against a request's peer address. Every
// address is held as eight 16-bit groups, IPv4 as IPv4-mapped IPv6 (`::ffff:a.b.c.d`),
// so an IPv4 peer of a dual-stack socket matches an IPv4 range. Web APIs only: both
// editions use it.
import { parseIPv4, parseIPv6 } from './alerts/addresses.js';

export interface AddressRange {
  /** The range's first address, eight 16-bit groups. */
  groups: number[];
  /** Leading bits that must match (0..128). */
  bits: number;
}

/** The range a TRUSTED_PROXIES value of `loopback` (and an unset one) stands for. */
export const LOOPBACK_RANGES = 'loopback';

/** An address as eight groups (IPv4 mapped into IPv6), or null when it is none. */
export function addressGroups(text: string): number[] | null {
  const address = text.trim();
  // Only dotted quads: a range's IPv4 address is written out in full.
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(address)) {
    const n = parseIPv4(address);
    return n === null ? null : [0, 0, 0, 0, 0, 0xffff, Math.floor(n / 65536), n % 65536];
  }
  return parseIPv6(address);
}

/** One range: an address with an optional `/bits` (IPv4 0..32, IPv6 0..128); null when malformed. */
export function parseAddressRange(text: string): AddressRange | null {
  const [address, prefix, extra] = text.trim().split('/');
  if (extra !== undefined) return null;
  const groups = addressGroups(address);
  if (!groups) return null;
  const v4 = !address.includes(':');
  const max = v4 ? 32 : 128;
  let bits = max;
  if (prefix !== undefined) {
    if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > max) return null;
    bits = Number(prefix);
  }
  return { groups, bits: v4 ? 96 + bits : bits };
}

/**
 * The ranges of a comma-separated list; `loopback` stands for 127.0.0.0/8 and ::1,
 * `none` for no range at all. Throws an Error naming the first entry that is not a range.
 */
export function parseAddressRanges(list: string): AddressRange[] {
  const out: AddressRange[] = [];
  for (const entry of list.split(',').map((e) => e.trim()).filter((e) => e !== '')) {
    if (entry.toLowerCase() === 'none') continue;
    if (entry.toLowerCase() === LOOPBACK_RANGES) {
      out.push(parseAddressRange('127.0.0.0/8')!, parseAddressRange('::1')!);
      continue;
    }
    const range = parseAddressRange(entry);
    if (!range) throw new Error(`${JSON.stringify(entry)} is not an IP address or CIDR range`);
    out.push(range);
  }
  return out;
}

/** Whether `address` (as a socket or CF-Connecting-IP reports it) lies in one of `ranges`. */
export function inAddressRanges(address: string | null | undefined, ranges: readonly AddressRange[]): boolean {
  if (!address || ranges.length === 0) return false;
  const groups = addressGroups(address);
  if (!groups) return false;
  return ranges.some((r) => {
    for (let i = 0, left = r.bits; left > 0; i++, left -= 16) {
      const mask = left >= 16 ? 0xffff : (0xffff << (16 - left)) & 0xffff;
      if ((groups[i] & mask) !== (r.groups[i] & mask)) return false;
    }
    return true;
  });
}
