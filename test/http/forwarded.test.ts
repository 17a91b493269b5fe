// X-Forwarded-Host and X-Forwarded-Proto (with PUBLIC_URL unset) are believed only from
// a peer TRUSTED_PROXIES names, on SQLite and PostgreSQL over the real server: from any
// other client they do not change DSNs, the dashboard's origin check or its cookie's
// Secure flag; from a trusted proxy they do. X-Forwarded-For names the client for the
// rate limits only behind a trusted proxy.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { clientAddressOf } from '../../src/http/forwarded.js';
import { inAddressRanges, parseAddressRanges } from '../../src/ip-ranges.js';
import { Client } from '../dashboard/fixture.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';

const KEY = 'forwarded-test-key-0123456789abcdef';
const dsnKey = (dsn: string) => new URL(dsn).username;

describe('TRUSTED_PROXIES', () => {
  it('parses addresses and CIDR ranges of both families, loopback by default, none on request', () => {
    const ranges = parseAddressRanges('10.0.0.0/8, 192.168.1.7,2001:db8::/32');
    expect(inAddressRanges('10.200.3.4', ranges)).toBe(true);
    expect(inAddressRanges('::ffff:10.1.1.1', ranges)).toBe(true);
    expect(inAddressRanges('11.0.0.1', ranges)).toBe(false);
    expect(inAddressRanges('192.168.1.7', ranges)).toBe(true);
    expect(inAddressRanges('192.168.1.8', ranges)).toBe(false);
    expect(inAddressRanges('2001:db8:ffff::1', ranges)).toBe(true);
    expect(inAddressRanges('2001:db9::1', ranges)).toBe(false);
    expect(inAddressRanges('not an address', ranges)).toBe(false);
    const loopback = loadConfig({}).trustedProxies;
    expect(['127.0.0.1', '127.9.9.9', '::1', '::ffff:127.0.0.1'].every((a) => inAddressRanges(a, loopback))).toBe(true);
    expect(inAddressRanges('10.0.0.1', loopback)).toBe(false);
    expect(loadConfig({ TRUSTED_PROXIES: 'none' }).trustedProxies).toEqual([]);
    expect(() => loadConfig({ TRUSTED_PROXIES: '10.0.0.0/33' })).toThrow(/TRUSTED_PROXIES/);
    expect(() => loadConfig({ TRUSTED_PROXIES: 'proxy.local' })).toThrow(/TRUSTED_PROXIES/);
  });

  it('takes the client address from X-Forwarded-For only behind a trusted proxy, skipping trusted hops', () => {
    const deps = (peer: string) => ({
      config: loadConfig({ TRUSTED_PROXIES: '10.0.0.0/8' }),
      clientAddress: () => peer,
    });
    const request = new Request('http://x/', { headers: { 'x-forwarded-for': '6.6.6.6, 203.0.113.9, 10.0.0.2' } });
    expect(clientAddressOf(deps('10.0.0.1'), request, {})).toBe('203.0.113.9');
    expect(clientAddressOf(deps('198.51.100.4'), request, {})).toBe('198.51.100.4');
    expect(clientAddressOf(deps('10.0.0.1'), new Request('http://x/'), {})).toBe('10.0.0.1');
  });
});

describe.each(dialects)('forwarding headers over HTTP (%s)', (dialect) => {
  // The test client connects from 127.0.0.1: a proxy in the first server, a stranger in the second.
  let trusted: TestServer;
  let untrusted: TestServer;
  beforeAll(async () => {
    trusted = await startTestServer(dialect, { env: { API_KEYS: KEY, TRUSTED_PROXIES: '127.0.0.1/32' } });
    untrusted = await startTestServer(dialect, { env: { API_KEYS: KEY, TRUSTED_PROXIES: '10.0.0.0/8' } });
    for (const t of [trusted, untrusted])
      expect((await t.api('/api/projects', { method: 'POST', json: { slug: 'app' } })).status).toBe(201);
  });
  afterAll(async () => {
    await trusted?.close();
    await untrusted?.close();
  });

  const forged = { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' };

  it('DSNs follow them from a trusted proxy only', async () => {
    const viaProxy = (await (await trusted.api('/api/projects/app', { headers: forged })).json()) as {
      dsn: string;
      id: number;
    };
    expect(viaProxy.dsn).toBe(`https://${dsnKey(viaProxy.dsn)}@evil.example/${viaProxy.id}`);
    const direct = (await (await untrusted.api('/api/projects/app', { headers: forged })).json()) as {
      dsn: string;
      id: number;
    };
    expect(direct.dsn).toBe(`http://${dsnKey(direct.dsn)}@${new URL(untrusted.url).host}/${direct.id}`);
    const options = (await (
      await untrusted.api('/api/0/organizations/o/chunk-upload/', { headers: forged })
    ).json()) as { url: string };
    expect(new URL(options.url).origin).toBe(new URL(untrusted.url).origin);
  });

  it('the sign-in origin check and the Secure cookie follow them from a trusted proxy only', async () => {
    // A cross-site post claiming to come from the forged origin.
    const evilOrigin = { ...forged, origin: 'https://evil.example' };
    expect((await new Client(untrusted.url).post('/login', { key: KEY, next: '/' }, evilOrigin)).status).toBe(403);
    expect((await new Client(trusted.url).post('/login', { key: KEY, next: '/' }, evilOrigin)).status).toBe(303);
    // https claimed by the client itself: the session cookie is not marked Secure.
    const plain = await new Client(untrusted.url).post(
      '/login',
      { key: KEY, next: '/' },
      { 'x-forwarded-proto': 'https' },
    );
    expect(plain.status).toBe(303);
    expect(plain.headers.getSetCookie().find((l) => l.startsWith('faultline_session='))).not.toMatch(/; Secure/i);
    const secure = await new Client(trusted.url).post(
      '/login',
      { key: KEY, next: '/' },
      { 'x-forwarded-proto': 'https', origin: `https://${new URL(trusted.url).host}` },
    );
    expect(secure.headers.getSetCookie().find((l) => l.startsWith('faultline_session='))).toMatch(/; Secure/i);
  });

  it('a request with a body still arrives whole after its forwarding headers are removed', async () => {
    const res = await untrusted.api('/api/projects', {
      method: 'POST',
      json: { slug: 'second', name: 'Second' },
      headers: forged,
    });
    expect(res.status).toBe(201);
    const body = (await res.json()) as { name: string; dsn: string };
    expect(body.name).toBe('Second');
    expect(new URL(body.dsn).host).toBe(new URL(untrusted.url).host);
  });
});
