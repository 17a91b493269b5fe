// Address ranges (`10.0.0.0/8`, `::1`, `192.168.1.7`) for the TRUSTED_PROXIES setting:
// parsed once from the setting, then matched against a request's peer address. Every
// address is held as eight 16-bit groups, IPv4 as IPv4-mapped IPv6 (`::ffff:a.b.c.d`),
// so an IPv4 peer of a dual-stack socket matches an IPv4 range. Web APIs only: both
// editions use it. The parsers (parseIPv4, parseIPv6) also serve the webhook SSRF guard
// (src/alerts/addresses.ts).

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
  for (const entry of list
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '')) {
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

/**
 * An IPv4 address as an unsigned 32-bit number, accepting what inet_aton (and so many
 * HTTP clients) accepts: 1 to 4 parts, each decimal, octal (leading 0) or hex (0x),
 * the last part filling the remaining bytes (`127.1`, `2130706433`, `0x7f.0.0.1`,
 * `0177.0.0.1`). Null when it is not such an address.
 */
export function parseIPv4(text: string): number | null {
  if (text === '' || text.length > 64) return null;
  const parts = text.replace(/\.$/, '').split('.');
  if (parts.length < 1 || parts.length > 4) return null;
  const values: number[] = [];
  for (const part of parts) {
    let value: number;
    if (/^0x[0-9a-f]*$/i.test(part)) value = part.length === 2 ? 0 : parseInt(part.slice(2), 16);
    else if (/^0[0-7]+$/.test(part)) value = parseInt(part.slice(1), 8);
    else if (/^(0|[1-9][0-9]*)$/.test(part)) value = Number(part);
    else return null;
    if (!Number.isFinite(value)) return null;
    values.push(value);
  }
  const last = values.pop()!;
  for (const v of values) if (v > 255) return null;
  const lastMax = 2 ** (8 * (4 - values.length)) - 1;
  if (last > lastMax) return null;
  let n = 0;
  values.forEach((v, i) => {
    n += v * 2 ** (8 * (3 - i));
  });
  return n + last;
}

/** An IPv6 address as eight 16-bit groups (zone id dropped), or null. */
export function parseIPv6(text: string): number[] | null {
  let s = text;
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1);
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  if (!s.includes(':') || s.length > 64) return null;
  // A trailing dotted IPv4 part fills the last two groups.
  let tail: number[] = [];
  const lastColon = s.lastIndexOf(':');
  const lastPart = s.slice(lastColon + 1);
  if (lastPart.includes('.')) {
    if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(lastPart)) return null;
    const octets = lastPart.split('.').map(Number);
    if (octets.some((o) => o > 255)) return null;
    tail = [octets[0] * 256 + octets[1], octets[2] * 256 + octets[3]];
    s = s.slice(0, lastColon + 1);
    if (!s.endsWith('::')) s = s.slice(0, -1);
    if (s === '') return null;
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const head = groups(halves[0]);
  const rest = halves.length === 2 ? groups(halves[1]) : [];
  const all = [...head, ...rest];
  if (all.some((g) => !/^[0-9a-f]{1,4}$/i.test(g))) return null;
  const want = 8 - tail.length;
  let out: number[];
  if (halves.length === 2) {
    if (all.length > want - 1) return null;
    out = [
      ...head.map((g) => parseInt(g, 16)),
      ...Array(want - all.length).fill(0),
      ...rest.map((g) => parseInt(g, 16)),
    ];
  } else {
    if (all.length !== want) return null;
    out = all.map((g) => parseInt(g, 16));
  }
  return [...out, ...tail];
}
