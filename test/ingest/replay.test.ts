// Replays of every request captured from real clients (test/fixtures/
// sdk-captures): @sentry/node envelopes (chunked, gzip), the Python SDK's legacy
// /store/ events and length-framed session envelopes with X-Sentry-Auth, and
// sentry-cli send-event. The .txt captures are replayed with the key and project
// id rewritten and their times moved to ten minutes ago (item lengths recomputed);
// the separate body files are replayed byte for byte. What was stored is compared
// with what the bodies carry, read by a small framing reader written here.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProjectRow } from '../../src/store/schema.js';
import { fixtureNames, readFixture, readRequests, replayHeaders, wireBody, type CapturedRequest } from './fixtures.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { eventsOf, issuesOf, makeProject, sessionsOf, sessionTotals } from './helpers.js';

const FIXTURE_KEY = 'publickey';
/** A moment after every capture in the fixtures. */
const CAPTURED_BEFORE = Date.parse('2026-11-21T13:47:00Z');
const MINUTE = 60_000;

/** Splits an envelope into its header line and items (payload bytes, header object). */
function frames(body: Uint8Array): {
  header: Buffer;
  items: Array<{ header: Record<string, unknown>; payload: Buffer }>;
  trailingNewline: boolean;
} {
  const buf = Buffer.from(body);
  let nl = buf.indexOf(0x0a);
  const header = nl < 0 ? buf : buf.subarray(0, nl);
  const items: Array<{ header: Record<string, unknown>; payload: Buffer }> = [];
  let pos = nl < 0 ? buf.length : nl + 1;
  let trailingNewline = false;
  while (pos < buf.length) {
    nl = buf.indexOf(0x0a, pos);
    if (nl === pos) {
      trailingNewline = true;
      pos++;
      continue;
    }
    const itemHeader = JSON.parse(buf.toString('utf8', pos, nl < 0 ? buf.length : nl)) as Record<string, unknown>;
    const start = nl + 1;
    let end: number;
    if (typeof itemHeader.length === 'number') end = start + itemHeader.length;
    else {
      end = buf.indexOf(0x0a, start);
      if (end < 0) end = buf.length;
    }
    items.push({ header: itemHeader, payload: buf.subarray(start, end) });
    trailingNewline = end < buf.length;
    pos = end + 1;
  }
  return { header, items, trailingNewline };
}

/** Moves every time in a JSON text by `shift` ms (RFC 3339 strings and epoch-second numbers). */
function shiftTimes(text: string, shift: number): string {
  return text
    .replace(/"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)(?:Z|\+00:00)"/g, (_m, t: string) =>
      JSON.stringify(new Date(Date.parse(t + 'Z') + shift).toISOString()),
    )
    .replace(
      /"(timestamp|start_timestamp|sent_at)":(\d{9,10}(?:\.\d+)?)/g,
      (_m, k: string, n: string) => `"${k}":${(Number(n) * 1000 + shift) / 1000}`,
    );
}

function rewriteText(text: string, key: string, shift: number): string {
  return shiftTimes(text.replaceAll(FIXTURE_KEY, key), shift);
}

const isEnvelope = (req: CapturedRequest) =>
  /\/envelope\/?(\?|$)/.test(req.path) || req.headers['content-type'] === 'application/x-sentry-envelope';

/** The body with key and times rewritten; envelope item lengths are recomputed. */
function rewriteBody(req: CapturedRequest, key: string, shift: number): Uint8Array {
  if (!isEnvelope(req)) return Buffer.from(rewriteText(Buffer.from(req.body).toString('utf8'), key, shift));
  const env = frames(req.body);
  const parts: Buffer[] = [Buffer.from(rewriteText(env.header.toString('utf8'), key, shift))];
  for (const item of env.items) {
    const payload = Buffer.from(rewriteText(item.payload.toString('utf8'), key, shift));
    const header = typeof item.header.length === 'number' ? { ...item.header, length: payload.length } : item.header;
    parts.push(Buffer.from('\n' + JSON.stringify(header) + '\n'), payload);
  }
  if (env.trailingNewline) parts.push(Buffer.from('\n'));
  return Buffer.concat(parts);
}

const dashless = (id: string) => id.replaceAll('-', '').toLowerCase();

/** What a request body carries: event ids, session updates (sid → last status, errors), aggregate counts. */
interface Carried {
  eventIds: string[];
  sessions: Map<string, { status: string; errors: number; init: boolean }>;
  aggregates: { total: number; crashed: number; errored: number };
}

function emptyCarried(): Carried {
  return { eventIds: [], sessions: new Map(), aggregates: { total: 0, crashed: 0, errored: 0 } };
}

function collect(into: Carried, body: Uint8Array, envelope: boolean) {
  if (!envelope) {
    into.eventIds.push(dashless(JSON.parse(Buffer.from(body).toString('utf8')).event_id));
    return;
  }
  const env = frames(body);
  const envHeader = JSON.parse(env.header.toString('utf8')) as { event_id?: string };
  for (const item of env.items) {
    const p = JSON.parse(item.payload.toString('utf8'));
    if (item.header.type === 'event') into.eventIds.push(dashless(p.event_id ?? envHeader.event_id));
    if (item.header.type === 'session') {
      const sid = dashless(p.sid);
      const prev = into.sessions.get(sid);
      into.sessions.set(sid, {
        status: p.status,
        errors: p.errors ?? 0,
        init: (prev?.init ?? false) || p.init === true,
      });
    }
    if (item.header.type === 'sessions') {
      for (const b of p.aggregates) {
        const n = (k: string) => Number(b[k] ?? 0);
        into.aggregates.total += n('exited') + n('errored') + n('abnormal') + n('crashed') + n('unhandled');
        into.aggregates.crashed += n('crashed') + n('unhandled');
        into.aggregates.errored += n('errored') + n('abnormal');
      }
    }
  }
}

/** Release-health totals by docs/ingest-normalisation.md "Release health", from what the bodies carried. */
function expectedTotals(c: Carried) {
  const started = [...c.sessions.values()].filter((s) => s.init);
  return {
    total: started.length + c.aggregates.total,
    // `unhandled` (browser SDKs) counts as crashed.
    crashed: started.filter((s) => s.status === 'crashed' || s.status === 'unhandled').length + c.aggregates.crashed,
    errored:
      started.filter(
        (s) =>
          s.status === 'errored' ||
          s.status === 'abnormal' ||
          (s.errors > 0 && s.status !== 'crashed' && s.status !== 'unhandled'),
      ).length + c.aggregates.errored,
  };
}

const CAPTURES = fixtureNames().filter((n) => n.endsWith('.txt'));

async function replay(t: TestServer, project: ProjectRow, req: CapturedRequest, shift: number): Promise<Response> {
  const url = new URL(
    req.path.replace(/^\/api\/1\//, `/api/${project.id}/`).replaceAll(FIXTURE_KEY, project.dsn_key),
    t.url,
  );
  const headers = replayHeaders(req);
  for (const [k, v] of Object.entries(headers)) headers[k] = v.replaceAll(FIXTURE_KEY, project.dsn_key);
  const body = wireBody({ ...req, body: rewriteBody(req, project.dsn_key, shift) });
  if ((req.headers['transfer-encoding'] ?? '').includes('chunked')) {
    // As the Node SDK sends it: chunked, no Content-Length.
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < body.length; i += 1024) controller.enqueue(body.subarray(i, i + 1024));
        controller.close();
      },
    });
    return fetch(url, { method: req.method, headers, body: stream, duplex: 'half' } as RequestInit);
  }
  return fetch(url, { method: req.method, headers, body: body as BodyInit });
}

describe.each(dialects)('replayed SDK captures on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect, { clock: { now: () => Date.now() } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('has captures to replay', () => {
    expect(CAPTURES.length).toBeGreaterThanOrEqual(8);
  });

  it.each(CAPTURES)('%s: every ingest request answers 200 and is stored as sent', async (file) => {
    const project = await makeProject(t);
    const shift = Math.floor((Date.now() - 10 * MINUTE - CAPTURED_BEFORE) / MINUTE) * MINUTE;
    const requests = readRequests(file);
    const ingest = requests.filter((r) => /^\/api\/1\/(envelope|store)\//.test(r.path));
    // sentry-cli's capture ends with an upload request (GET chunk-upload), not ingest.
    expect(requests.filter((r) => !ingest.includes(r)).every((r) => r.path.startsWith('/api/0/'))).toBe(true);
    expect(ingest.length).toBeGreaterThan(0);

    const carried = emptyCarried();
    for (const req of ingest) {
      const res = await replay(t, project, req, shift);
      const before = carried.eventIds.length;
      collect(carried, req.body, isEnvelope(req));
      expect(res.status, `${file} #${req.index}`).toBe(200);
      const body = await res.json();
      expect(body, `${file} #${req.index}`).toEqual(
        carried.eventIds.length > before ? { id: carried.eventIds[before] } : {},
      );
    }

    const events = await eventsOf(t, project);
    expect(events.map((e) => e.event_id).sort()).toEqual([...carried.eventIds].sort());
    for (const e of events) {
      // Moved to ten minutes ago, not clamped to the receive time.
      expect(Number(e.timestamp)).toBeLessThan(Date.now() - 5 * MINUTE);
      expect(Number(e.timestamp)).toBeGreaterThan(Date.now() - 20 * MINUTE);
      expect(e.release).toBe('app@1.0.0');
    }
    const sessions = await sessionsOf(t, project);
    expect(new Map(sessions.map((s) => [s.sid, s.status]))).toEqual(
      new Map([...carried.sessions].map(([sid, s]) => [sid, s.status])),
    );
    expect(await sessionTotals(t, project)).toEqual(expectedTotals(carried));
  });

  it('stores the details the captures carry: crash flag, message level, legacy store exception, {{auto}} ip', async () => {
    const project = await makeProject(t);
    const shift = Math.floor((Date.now() - 10 * MINUTE - CAPTURED_BEFORE) / MINUTE) * MINUTE;
    for (const file of [
      'node-crash-event-envelope.txt',
      'node-message-envelope.txt',
      'python-sentry-sdk-1.9.10-requests.txt',
      'sentry-cli-3.8.0-requests.txt',
    ]) {
      for (const req of readRequests(file).filter((r) => r.method === 'POST')) {
        expect((await replay(t, project, req, shift)).status).toBe(200);
      }
    }
    const events = new Map((await eventsOf(t, project)).map((e) => [e.event_id, e]));
    const crash = events.get('fab69b265b174762b2d913999f7c9b96')!;
    expect(crash.is_crash).toBe(1);
    const message = events.get('60753f19ab9e4fee938b1c1b14c371a2')!;
    expect(message.level).toBe('warning');
    expect(message.is_crash).toBe(0);
    const python = events.get('26a87f0b45ed4525a368f432cd36db9c')!;
    expect(python.error_type).toBe('ValueError');
    expect(python.platform).toBe('python');
    expect(python.sdk_name).toBe('sentry.python');
    const cli = events.get('d0c6685d581146fd9d4f16664397d9fa')!;
    expect(cli.message).toBe('cli hello');
    expect(cli.user_ip).toBe('127.0.0.1');
    expect(cli.user_username).toBe('root');
    const titles = (await issuesOf(t, project)).map((i) => i.title);
    expect(titles).toContain('ValueError: py depcheck boom');
  });
});

/** The body files, replayed byte for byte, in the order their SDKs sent them. */
const BODY_FILES: Array<{ file: string; endpoint: 'envelope' | 'store'; headers?: Record<string, string> }> = [
  { file: 'node-event.envelope', endpoint: 'envelope' },
  { file: 'node-message.envelope', endpoint: 'envelope' },
  { file: 'node-gzip-event.envelope.gz', endpoint: 'envelope', headers: { 'Content-Encoding': 'gzip' } },
  { file: 'sentry-cli-event.envelope', endpoint: 'envelope' },
  { file: 'python-store-event.json', endpoint: 'store', headers: { 'Content-Type': 'application/json' } },
  { file: 'node-session-update.envelope', endpoint: 'envelope' },
  { file: 'node-session-exited.envelope', endpoint: 'envelope' },
  { file: 'node-session-crashed.envelope', endpoint: 'envelope' },
  { file: 'node-session-aggregates.envelope', endpoint: 'envelope' },
  {
    file: 'python-session.envelope',
    endpoint: 'envelope',
    headers: { 'Content-Type': 'application/x-sentry-envelope' },
  },
  {
    file: 'python-session-aggregates.envelope',
    endpoint: 'envelope',
    headers: { 'Content-Type': 'application/x-sentry-envelope' },
  },
];

describe.each(dialects)('capture bodies replayed byte for byte on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect, { clock: { now: () => Date.now() } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('covers every body file in the captures', () => {
    const bodies = fixtureNames().filter((n) => !n.endsWith('.txt'));
    expect(BODY_FILES.map((b) => b.file).sort()).toEqual(bodies);
  });

  it('accepts each and stores what they carry', async () => {
    const project = await makeProject(t);
    const carried = emptyCarried();
    for (const { file, endpoint, headers } of BODY_FILES) {
      const bytes = readFixture(file);
      const res = await fetch(`${t.url}/api/${project.id}/${endpoint}/`, {
        method: 'POST',
        headers: { 'X-Sentry-Auth': `Sentry sentry_key=${project.dsn_key}, sentry_version=7`, ...headers },
        body: bytes as BodyInit,
      });
      expect(res.status, file).toBe(200);
      const decoded = file.endsWith('.gz') ? (await import('node:zlib')).gunzipSync(bytes) : bytes;
      collect(carried, decoded, endpoint === 'envelope');
    }
    expect((await eventsOf(t, project)).map((e) => e.event_id).sort()).toEqual([...carried.eventIds].sort());
    const sessions = await sessionsOf(t, project);
    expect(new Map(sessions.map((s) => [s.sid, s.status]))).toEqual(
      new Map([...carried.sessions].map(([sid, s]) => [sid, s.status])),
    );
    expect(await sessionTotals(t, project)).toEqual(expectedTotals(carried));
  });
});
