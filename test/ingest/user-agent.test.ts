// Contexts derived from the User-Agent header of an event (Sentry's rules): only the
// kinds the event lacks, the OS in `os` for JavaScript and in `client_os` otherwise,
// a device only when the header names one.
import { describe, expect, it } from 'vitest';
import { normalizeEvent } from '../../src/ingest/normalize.js';
import { eventDetailFromRaw } from '../../src/ingest/normalize.js';
import { userAgentOf, withUserAgentContexts } from '../../src/ingest/user-agent.js';
import { createHash } from 'node:crypto';

const IPHONE =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1';
const DESKTOP =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
const md5Hex = (s: string) => createHash('md5').update(s).digest('hex');
const norm = (ev: object) =>
  normalizeEvent(new TextEncoder().encode(JSON.stringify(ev)), {
    receivedAt: Date.now(),
    sentAt: null,
    envelopeEventId: null,
    clientIp: null,
    md5Hex,
  });

describe('User-Agent contexts', () => {
  it('finds the header in an object or a list of pairs, in any case', () => {
    expect(userAgentOf({ headers: { 'user-agent': 'a' } })).toBe('a');
    expect(userAgentOf({ headers: [['User-Agent', 'b']] })).toBe('b');
    expect(userAgentOf({ headers: { Accept: 'x' } })).toBeNull();
    expect(userAgentOf(null)).toBeNull();
  });

  it('gives a JavaScript event browser, os and device, and fills the os_version and device_model columns', () => {
    const e = norm({
      platform: 'javascript',
      message: 'm',
      request: { url: 'https://x/', headers: { 'User-Agent': IPHONE } },
    });
    expect([e.osName, e.osVersion, e.deviceModel]).toEqual(['iOS', '17.5', 'iPhone']);
    const detail = eventDetailFromRaw(e.raw, null);
    expect(detail.contexts).toMatchObject({
      browser: { type: 'browser', name: 'Mobile Safari', version: '17.5' },
      os: { type: 'os', name: 'iOS', version: '17.5' },
      device: { type: 'device', family: 'iPhone', model: 'iPhone', brand: 'Apple' },
    });
  });

  it('adds no device for a desktop browser, and keeps the contexts an event sent', () => {
    const contexts = withUserAgentContexts(
      { browser: { name: 'Own', version: '1' } },
      { headers: { 'User-Agent': DESKTOP } },
      'javascript',
    );
    expect(contexts).toEqual({
      browser: { name: 'Own', version: '1' },
      os: { type: 'os', name: 'Windows', version: '10' },
    });
  });

  it("puts a server event's client OS in client_os, leaving the server's os alone", () => {
    const e = norm({
      platform: 'node',
      message: 'm',
      contexts: { os: { name: 'Linux', version: '6.1' } },
      request: { headers: { 'User-Agent': DESKTOP } },
    });
    expect([e.osName, e.osVersion]).toEqual(['Linux', '6.1']);
    const detail = eventDetailFromRaw(e.raw, null);
    expect(detail.contexts).toMatchObject({
      os: { name: 'Linux' },
      client_os: { name: 'Windows' },
      browser: { name: 'Chrome' },
    });
  });

  it('changes nothing without a User-Agent', () => {
    const contexts = {};
    expect(withUserAgentContexts(contexts, { headers: {} }, 'javascript')).toBe(contexts);
  });
});
