// Every request captured from real SDKs (test/fixtures/sdk-captures) goes
// through the request-side ingest path: decode, envelope / store body, normalise,
// sessions. Also checks the fixture reader other ingest tests reuse.
import { describe, expect, it } from 'vitest';
import { decodeContent } from '../../src/ingest/decode.js';
import { MAX_BODY_BYTES } from '../../src/limits.js';
import { decodeStoreBody, parseEnvelope } from '../../src/ingest/envelope.js';
import { normalizeEvent } from '../../src/ingest/normalize.js';
import { parseTimestamp } from '../../src/protocol-values.js';
import { parseSessionAggregates, parseSessionUpdate } from '../../src/ingest/sessions.js';
import type { SessionAggregate, SessionUpdate } from '../../src/ingest/types.js';
import { fixtureNames, readFixture, readRequests, replayHeaders, wireBody } from './fixtures.js';
import { nodeIngestRuntime } from '../../src/editions/node/runtime.js';
import { withDetail, type DetailedEvent } from './detail.js';

const { decompress, md5Hex } = nodeIngestRuntime;

const RECEIVED = Date.UTC(2026, 10, 21, 14, 0, 0);
const CLIENT_IP = '198.51.100.4';
const same = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b));

interface Processed {
  events: DetailedEvent[];
  sessions: SessionUpdate[];
  aggregates: SessionAggregate[];
  types: string[];
  malformed: number;
}

/** What the pipeline does with an envelope body, minus the database. */
function processEnvelope(body: Uint8Array): Processed {
  const env = parseEnvelope(body);
  const sentAt = parseTimestamp(env.headers.sent_at);
  const envelopeEventId = typeof env.headers.event_id === 'string' ? env.headers.event_id : null;
  const out: Processed = {
    events: [],
    sessions: [],
    aggregates: [],
    types: env.items.map((i) => i.type),
    malformed: env.malformed,
  };
  for (const item of env.items) {
    if (item.type === 'event')
      out.events.push(
        withDetail(
          normalizeEvent(item.payload, { receivedAt: RECEIVED, sentAt, envelopeEventId, clientIp: CLIENT_IP, md5Hex }),
        ),
      );
    else if (item.type === 'session') out.sessions.push(parseSessionUpdate(item.payload, { receivedAt: RECEIVED }));
    else if (item.type === 'sessions')
      out.aggregates.push(...parseSessionAggregates(item.payload, { receivedAt: RECEIVED }));
  }
  return out;
}

function processStore(body: Uint8Array): DetailedEvent {
  return withDetail(
    normalizeEvent(decodeStoreBody(body, decompress), {
      receivedAt: RECEIVED,
      sentAt: null,
      envelopeEventId: null,
      clientIp: CLIENT_IP,
      md5Hex,
    }),
  );
}

const envelopeFile = (name: string) => processEnvelope(readFixture(name));
const gunzip = (b: Uint8Array) => decodeContent(b, 'gzip', MAX_BODY_BYTES, decompress);

describe('fixture reader', () => {
  it('reads every request of every capture file', () => {
    const counts = Object.fromEntries(
      fixtureNames()
        .filter((n) => n.endsWith('.txt'))
        .map((n) => [n, readRequests(n).length]),
    );
    expect(counts).toEqual({
      'node-crash-event-envelope.txt': 1,
      'node-event-envelope.txt': 1,
      'node-gzip-event-envelope.txt': 1,
      'node-message-envelope.txt': 1,
      'node-session-aggregates-envelope.txt': 2,
      'node-sessions-envelope.txt': 4,
      'python-sentry-sdk-1.9.10-requests.txt': 5,
      'sentry-cli-3.8.0-requests.txt': 2,
    });
  });

  it('returns method, path, lowercased headers and the body', () => {
    const [store] = readRequests('python-sentry-sdk-1.9.10-requests.txt');
    expect(store.method).toBe('POST');
    expect(store.path).toBe('/api/1/store/');
    expect(store.headers['x-sentry-auth']).toBe(
      'Sentry sentry_key=publickey, sentry_version=7, sentry_client=sentry.python/1.9.10',
    );
    expect(store.headers['content-encoding']).toBe('gzip');
    expect(same(store.body, readFixture('python-store-event.json'))).toBe(true);

    const [, get] = readRequests('sentry-cli-3.8.0-requests.txt');
    expect([get.method, get.path, get.body.byteLength]).toEqual(['GET', '/api/0/organizations/org/chunk-upload/', 0]);
    expect(get.headers.authorization).toBe('Bearer sntrys_dummy');
  });

  it('gives the same body bytes as the standalone fixture files', () => {
    const pairs: Array<[Uint8Array, Uint8Array]> = [
      [readRequests('node-event-envelope.txt')[0].body, readFixture('node-event.envelope')],
      [readRequests('node-message-envelope.txt')[0].body, readFixture('node-message.envelope')],
      [readRequests('node-gzip-event-envelope.txt')[0].body, gunzip(readFixture('node-gzip-event.envelope.gz'))],
      [readRequests('node-session-aggregates-envelope.txt')[1].body, readFixture('node-session-aggregates.envelope')],
      [readRequests('node-sessions-envelope.txt')[0].body, readFixture('node-session-update.envelope')],
      [readRequests('node-sessions-envelope.txt')[1].body, readFixture('node-session-exited.envelope')],
      [readRequests('node-sessions-envelope.txt')[2].body, readFixture('node-session-crashed.envelope')],
      [readRequests('python-sentry-sdk-1.9.10-requests.txt')[2].body, readFixture('python-session.envelope')],
      [
        readRequests('python-sentry-sdk-1.9.10-requests.txt')[4].body,
        readFixture('python-session-aggregates.envelope'),
      ],
      [readRequests('sentry-cli-3.8.0-requests.txt')[0].body, readFixture('sentry-cli-event.envelope')],
    ];
    for (const [a, b] of pairs) expect(same(a, b)).toBe(true);
  });

  it('re-encodes the wire body by Content-Encoding and leaves framing headers out of replays', () => {
    const [store] = readRequests('python-sentry-sdk-1.9.10-requests.txt');
    const wire = wireBody(store);
    expect(wire[0]).toBe(0x1f); // gzip magic
    expect(same(decodeContent(wire, store.headers['content-encoding'], MAX_BODY_BYTES, decompress), store.body)).toBe(
      true,
    );
    expect(Object.keys(replayHeaders(store)).map((k) => k.toLowerCase())).not.toContain('content-length');
    expect(replayHeaders(store)['X-Sentry-Auth']).toBe(store.headers['x-sentry-auth']);
    const [node] = readRequests('node-event-envelope.txt');
    expect(wireBody(node)).toBe(node.body);
  });
});

describe('every captured request goes through the request-side ingest path', () => {
  const requests = fixtureNames()
    .filter((n) => n.endsWith('.txt'))
    .flatMap((n) => readRequests(n))
    .filter((r) => r.method === 'POST');

  it.each(requests.map((r) => [`${r.file}#${r.index} ${r.path.split('?')[0]}`, r] as const))('%s', (_name, req) => {
    const body = decodeContent(wireBody(req), req.headers['content-encoding'] ?? null, MAX_BODY_BYTES, decompress);
    if (req.path.includes('/store/')) {
      const e = processStore(body);
      expect(e.eventId).toMatch(/^[0-9a-f]{32}$/);
      expect(e.fingerprint).toMatch(/^[0-9a-f]{32}$/);
      return;
    }
    expect(req.path).toContain('/envelope/');
    const p = processEnvelope(body);
    expect(p.malformed).toBe(0);
    expect(p.types.length).toBeGreaterThan(0);
    expect(p.events.length + p.sessions.length + p.aggregates.length).toBeGreaterThan(0);
    for (const e of p.events) expect(e.fingerprint).toMatch(/^[0-9a-f]{32}$/);
  });

  it.each(fixtureNames().filter((n) => !n.endsWith('.txt')))('standalone %s', (name) => {
    if (name.endsWith('.json')) {
      expect(processStore(readFixture(name)).title).not.toBe('');
      return;
    }
    const bytes = name.endsWith('.gz') ? gunzip(readFixture(name)) : readFixture(name);
    expect(name).toMatch(/\.envelope(\.gz)?$/);
    const p = processEnvelope(bytes);
    expect(p.malformed).toBe(0);
    expect(p.events.length + p.sessions.length + p.aggregates.length).toBeGreaterThan(0);
  });
});

describe('what the fixtures normalise to', () => {
  it('@sentry/node captureException (handled TypeError)', () => {
    const p = envelopeFile('node-event.envelope');
    expect(p.types).toEqual(['event']);
    const e = p.events[0];
    expect(e).toMatchObject({
      eventId: '53581e2b976e4b7c89e8cf789073fd8e',
      timestamp: 1795268721257,
      level: 'error',
      platform: 'node',
      release: 'app@1.0.0',
      dist: '',
      environment: 'test',
      osName: 'Debian',
      osVersion: '12.11',
      title: 'TypeError: depcheck boom: cannot read foo of undefined',
      message: 'depcheck boom: cannot read foo of undefined',
      errorType: 'TypeError',
      location: 'app-a.mjs:9',
      isCrash: false,
      sdkName: 'sentry.javascript.node',
      tags: {},
      userKey: null,
      screen: '',
    });
    expect(e.detail.fingerprint_input).toEqual(['stack', 'node', 'TypeError', 'app-a|?', 'app-a|boom']);
    expect(e.detail.exceptions[0].frames).toHaveLength(5);
    expect(e.detail.server_name).toBe('vm');
    expect(same(e.raw, readFixture('node-event.envelope').subarray(-e.raw.byteLength))).toBe(true);
  });

  it('@sentry/node unhandled crash: crash flag, same issue as the handled error thrown by the same code', () => {
    const crash = processEnvelope(readRequests('node-crash-event-envelope.txt')[0].body).events[0];
    const handled = envelopeFile('node-event.envelope').events[0];
    expect(crash.isCrash).toBe(true);
    expect(crash.level).toBe('error');
    expect(crash.location).toBe('app-a.mjs:9');
    expect(crash.fingerprint).toBe(handled.fingerprint);
  });

  it('@sentry/node captureMessage: warning, grouped and titled by the message (synthetic exception)', () => {
    const e = envelopeFile('node-message.envelope').events[0];
    expect(e).toMatchObject({
      level: 'warning',
      title: 'depcheck hello message',
      message: 'depcheck hello message',
      errorType: '',
      location: 'app-a.mjs:14',
      isCrash: false,
    });
    expect(e.detail.fingerprint_input).toEqual(['message', 'node', 'depcheck hello message']);
    expect(e.detail.exceptions).toHaveLength(1);
  });

  it('@sentry/node gzip-compressed large event', () => {
    const wire = readFixture('node-gzip-event.envelope.gz');
    expect(wire.byteLength).toBeLessThan(2000);
    const e = processEnvelope(decodeContent(wire, 'gzip', MAX_BODY_BYTES, decompress)).events[0];
    expect(e).toMatchObject({
      eventId: '38b5c49c6fa942b28a168bba07439042',
      level: 'info',
      title: 'depcheck big message',
    });
    expect((e.detail.extra as { blob: string }).blob).toHaveLength(40 * 1024);
  });

  it('@sentry/node request-mode error: transaction, request, user ip, breadcrumbs; SDK frames not grouped', () => {
    const p = processEnvelope(readRequests('node-session-aggregates-envelope.txt')[0].body);
    const e = p.events[0];
    expect(e).toMatchObject({
      screen: 'GET /err',
      userIp: '127.0.0.1',
      userKey: 'ip:127.0.0.1',
      title: 'Error: request failed in handler',
      location: 'app-b.mjs:13',
    });
    expect(e.detail.breadcrumbs).toHaveLength(2);
    expect(e.detail.request).toMatchObject({ method: 'GET', url: 'http://127.0.0.1:41759/err' });
    expect(e.detail.fingerprint_input).toEqual(['stack', 'node', 'Error', 'app-b|Server.?']);
  });

  it('@sentry/node session updates', () => {
    expect(envelopeFile('node-session-update.envelope').sessions).toEqual([
      {
        sid: '4af27ccd1f45498badd9665548295a0a',
        did: null,
        init: true,
        started: Date.parse('2026-11-21T13:45:21.248Z'),
        timestamp: Date.parse('2026-11-21T13:45:21.268Z'),
        status: 'ok',
        errors: 1,
        release: 'app@1.0.0',
        environment: 'test',
        anr: false,
      },
    ]);
    expect(envelopeFile('node-session-exited.envelope').sessions[0]).toMatchObject({
      sid: '4af27ccd1f45498badd9665548295a0a',
      init: false,
      status: 'exited',
      errors: 1,
    });
    expect(envelopeFile('node-session-crashed.envelope').sessions[0]).toMatchObject({
      sid: '97cccf799f684d559e4e4284bfd02343',
      init: true,
      status: 'crashed',
      did: 'u1',
    });
  });

  it('@sentry/node server-mode session aggregates', () => {
    expect(envelopeFile('node-session-aggregates.envelope').aggregates).toEqual([
      {
        started: Date.parse('2026-11-21T13:45:00.000Z'),
        release: 'app@1.0.0',
        environment: 'test',
        exited: 3,
        errored: 1,
        abnormal: 0,
        crashed: 0,
        unhandled: 0,
      },
    ]);
  });

  it('Python SDK 1.9.10 store events: exception and message; the same error from two call sites is one issue', () => {
    const reqs = readRequests('python-sentry-sdk-1.9.10-requests.txt');
    const first = processStore(reqs[0].body);
    const message = processStore(reqs[1].body);
    const again = processStore(reqs[3].body);
    expect(first).toMatchObject({
      eventId: '26a87f0b45ed4525a368f432cd36db9c',
      timestamp: Date.UTC(2026, 10, 21, 13, 45, 43, 311),
      platform: 'python',
      title: 'ValueError: py depcheck boom',
      errorType: 'ValueError',
      location: 'app-py.py:7',
      sdkName: 'sentry.python',
    });
    expect(first.detail.fingerprint_input).toEqual([
      'stack',
      'python',
      'ValueError',
      '__main__|<module>',
      '__main__|boom',
    ]);
    expect(again.detail.exceptions[0].frames[0].lineno).not.toBe(first.detail.exceptions[0].frames[0].lineno);
    expect(again.fingerprint).toBe(first.fingerprint);
    expect(again.eventId).not.toBe(first.eventId);
    expect(message).toMatchObject({ level: 'warning', title: 'py depcheck hello', errorType: '', location: '' });
  });

  it('Python SDK sessions: dashed sid, `length` items, trailing newline', () => {
    expect(envelopeFile('python-session.envelope').sessions[0]).toMatchObject({
      sid: 'ada695d4373b4c5ea6794d51cd6b0e99',
      status: 'exited',
      init: true,
      errors: 1,
    });
    expect(envelopeFile('python-session-aggregates.envelope').aggregates).toEqual([
      {
        started: Date.parse('2026-11-21T13:45:00Z'),
        release: 'app@1.0.0',
        environment: 'test',
        exited: 2,
        errored: 1,
        abnormal: 0,
        crashed: 0,
        unhandled: 0,
      },
    ]);
  });

  it('sentry-cli send-event: logentry message, {{auto}} ip, dashed envelope event_id', () => {
    const e = envelopeFile('sentry-cli-event.envelope').events[0];
    expect(e).toMatchObject({
      eventId: 'd0c6685d581146fd9d4f16664397d9fa',
      platform: 'native',
      message: 'cli hello',
      title: 'cli hello',
      environment: 'production',
      userUsername: 'root',
      userIp: CLIENT_IP,
      userKey: 'username:root',
      osName: 'Linux',
    });
  });
});
