// The SSRF guard's address rules (src/alerts/addresses.ts), without a network: every
// spelling of a non-public address the issue names is refused, public ones pass.
import { describe, expect, it } from 'vitest';
import { forbiddenAddressReason, forbiddenHostReason } from '../../src/alerts/addresses.js';
import { parseIPv4, parseIPv6 } from '../../src/ip-ranges.js';

/** Non-public addresses in the forms the issue lists, with what they are. */
export const FORBIDDEN_ADDRESSES: [string, RegExp][] = [
  ['127.0.0.1', /loopback/],
  ['127.1', /loopback/],
  ['2130706433', /loopback/], // decimal
  ['017700000001', /loopback/], // octal
  ['0177.0.0.1', /loopback/],
  ['0x7f000001', /loopback/], // hex
  ['0x7f.0.0.1', /loopback/],
  ['10.1.2.3', /private/],
  ['172.16.0.1', /private/],
  ['172.31.255.255', /private/],
  ['192.168.1.1', /private/],
  ['169.254.169.254', /link-local/],
  ['0.0.0.0', /unspecified/],
  ['0', /unspecified/],
  ['100.64.0.1', /shared/],
  ['224.0.0.1', /multicast/],
  ['255.255.255.255', /reserved/],
  ['::1', /loopback/],
  ['::', /unspecified/],
  ['0:0:0:0:0:0:0:1', /loopback/],
  ['fe80::1', /link-local/],
  ['fe80::1%eth0', /link-local/],
  ['fc00::1', /unique-local/],
  ['fd12:3456::1', /unique-local/],
  ['::ffff:127.0.0.1', /loopback.*embedded/], // IPv4-mapped
  ['::ffff:7f00:1', /loopback.*embedded/],
  ['::ffff:10.0.0.1', /private.*embedded/],
  ['::ffff:a9fe:a9fe', /link-local.*embedded/],
  ['::127.0.0.1', /loopback.*embedded/], // IPv4-compatible
  ['64:ff9b::10.0.0.1', /private.*embedded/],
  ['2002:c0a8:101::', /private.*embedded/],
  ['ff02::1', /multicast/],
];

export const PUBLIC_ADDRESSES = [
  '8.8.8.8',
  '93.184.216.34',
  '172.32.0.1',
  '1.1.1.1',
  '2606:4700:4700::1111',
  '2001:4860:4860::8888',
  '::ffff:8.8.8.8',
];

describe('alert webhook address rules', () => {
  it.each(FORBIDDEN_ADDRESSES)('refuses %s', (address, reason) => {
    expect(forbiddenAddressReason(address)).toMatch(reason);
  });

  it.each(PUBLIC_ADDRESSES)('accepts the public address %s', (address) => {
    expect(forbiddenAddressReason(address)).toBeNull();
  });

  it('parses the IPv4 forms inet_aton accepts and nothing else', () => {
    expect(parseIPv4('1.2.3.4')).toBe(0x01020304);
    expect(parseIPv4('1.2.772')).toBe(0x01020304);
    expect(parseIPv4('0x01.0x02.0x03.0x04')).toBe(0x01020304);
    expect(parseIPv4('16909060')).toBe(0x01020304);
    for (const bad of ['256.1.1.1', '1.2.3.4.5', '1..2', 'a.b.c.d', '08.1.1.1', '4294967296', '', 'example.com'])
      expect(parseIPv4(bad)).toBeNull();
  });

  it('parses IPv6 with :: anywhere and a trailing IPv4 part', () => {
    expect(parseIPv6('1:2:3:4:5:6:7:8')).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(parseIPv6('1::8')).toEqual([1, 0, 0, 0, 0, 0, 0, 8]);
    expect(parseIPv6('::ffff:1.2.3.4')).toEqual([0, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304]);
    expect(parseIPv6('1:2:3:4:5:6:1.2.3.4')).toEqual([1, 2, 3, 4, 5, 6, 0x0102, 0x0304]);
    expect(parseIPv6('[::1]')).toEqual([0, 0, 0, 0, 0, 0, 0, 1]);
    for (const bad of ['1:2:3', '1::2::3', '1:2:3:4:5:6:7:8:9', 'g::1', '::1.2.3', 'example.com'])
      expect(parseIPv6(bad)).toBeNull();
  });

  it('judges URL hosts: localhost names and bracketed literals without DNS', () => {
    expect(forbiddenHostReason('localhost')).toMatch(/loopback/);
    expect(forbiddenHostReason('api.localhost')).toMatch(/loopback/);
    expect(forbiddenHostReason('[::1]')).toMatch(/loopback/);
    expect(forbiddenHostReason('[::ffff:7f00:1]')).toMatch(/loopback/);
    expect(forbiddenHostReason('example.com')).toBeNull();
    expect(forbiddenHostReason('93.184.216.34')).toBeNull();
  });
});
